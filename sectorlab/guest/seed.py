"""NoCloud seed ISOs (volume label cidata): how a guest gets its lab user, login key and host key.

The same ISO serves cloud-init on the Oracle Linux guests and the Debian guest's own small
seed unit (images/debian12/overlay/usr/local/sbin/sectorlab-seed). user-data is written as
'#cloud-config' followed by JSON, which is valid cloud-config YAML and needs no YAML parser.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..errors import SectorlabError
from ..paths import cache_dir
from .sshkeys import KeyPair

ISO_TOOLS = ("genisoimage", "mkisofs", "xorrisofs")


def user_data(user: str, authorized_keys: list[str], host_key: KeyPair | None, hostname: str) -> dict:
    doc: dict = {
        "hostname": hostname,
        "manage_etc_hosts": True,
        "users": [{
            "name": user,
            "shell": "/bin/bash",
            "sudo": "ALL=(ALL) NOPASSWD:ALL",
            "lock_passwd": True,
            "ssh_authorized_keys": list(authorized_keys),
        }],
        "ssh_pwauth": False,
        "disable_root": True,
    }
    if host_key is not None:
        doc["ssh_deletekeys"] = True
        doc["ssh_keys"] = {"ed25519_private": host_key.private_openssh,
                           "ed25519_public": host_key.public_openssh}
    return doc


def render_user_data(doc: dict) -> str:
    return "#cloud-config\n" + json.dumps(doc, indent=2) + "\n"


def render_meta_data(instance_id: str, hostname: str) -> str:
    return json.dumps({"instance-id": instance_id, "local-hostname": hostname}) + "\n"


def write_iso(path: Path, instance_id: str, hostname: str, doc: dict) -> Path:
    tool = next((t for t in ISO_TOOLS if shutil.which(t)), None)
    if tool is None:
        raise SectorlabError(f"no ISO tool found (looked for {', '.join(ISO_TOOLS)}); run scripts/bootstrap")
    with tempfile.TemporaryDirectory(prefix="sectorlab-seed-") as tmp:
        src = Path(tmp)
        (src / "user-data").write_text(render_user_data(doc))
        (src / "meta-data").write_text(render_meta_data(instance_id, hostname))
        path.parent.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run([tool, "-quiet", "-output", str(path), "-volid", "cidata", "-joliet", "-rock",
                               str(src / "user-data"), str(src / "meta-data")],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise SectorlabError(f"{tool} failed to write the seed ISO {path}: {proc.stderr.strip()}")
    return path


def cloud_init_schema_file() -> Path:
    """cloud-init's user-data schema, from Debian's cloud-init package (scripts/bootstrap puts it here)."""
    return cache_dir() / "tools" / "cloud-init" / "schema-cloud-config-v1.json"


def schema_errors(doc: dict, schema_file: Path | None = None) -> list[str]:
    """Where a user-data document breaks cloud-init's schema: one line per error ('path: message'),
    none for a valid one."""
    schema_file = schema_file or cloud_init_schema_file()
    try:  # make check's dependency (the test extra), not the lab's: said in one line when missing
        import jsonschema
    except ImportError as e:
        raise SectorlabError("jsonschema is not installed; run scripts/bootstrap (it installs the project's "
                             "pinned test dependencies)") from e
    try:
        schema = json.loads(schema_file.read_text())
    except (OSError, ValueError) as e:
        raise SectorlabError(f"cloud-init's schema {schema_file}: {e}; run scripts/bootstrap (it fetches it from "
                             f"Debian's cloud-init package)") from e
    validator = jsonschema.validators.validator_for(schema)(schema)
    return [f"{'/'.join(str(p) for p in e.absolute_path) or '(top)'}: {e.message}"
            for e in sorted(validator.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))]
