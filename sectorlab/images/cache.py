"""The image cache: the input hash a built image is named by, its build record, the manifest.

A built image lives in the cache outside the repository under a name that carries the hash of
every input that shapes it (templates, vars, provisioning scripts, the guest tools and, for
Debian, the base recipe), so an unchanged recipe is never built twice and a changed one never
reuses a stale image. files_for_hash is that list of inputs: the host side's own Python modules
are not in it, so moving code between them rebuilds no image.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import MISSING, asdict, dataclass, fields
from pathlib import Path

from .. import inputs
from ..errors import SectorlabError, UsageError
from ..paths import REPO, image_cache, manifest_path
from . import labtools, recipe
from .guests import PACKER_DIR, GuestSpec

# A build record is some 600 bytes of JSON.
RECORD_MAX = 64 * inputs.KIB
DEBIAN_BASE_SCRIPT = REPO / "scripts" / "build-debian-base"
REDO_WRITER_DIR = REPO / "redo-writer"
# The DBA's tools every guest gets, standard-library Python run from /usr/local/lib/sectorlab/ (the
# rules engine, rules.py and asmrules.py, as redo-check through redocheck.py; redodisk.py as
# provision-redo-disk, nvmeformat.py as reformat-nvme, both on blockdev.py): installed by
# packer/scripts/common/lab-guest.sh.
GUEST_TOOLS = [REPO / "sectorlab" / "inguest" / name for name in ("rules.py", "asmrules.py", "redocheck.py",
                                                                   "blockdev.py", "redodisk.py", "nvmeformat.py")]


# The device model's code redo-writer links for its model: members (redo-writer/Makefile's MODEL).
DEVICE_MODEL_SOURCES = [REPO / "devicemodel" / "model.c", REPO / "devicemodel" / "model.h"]


def _redo_writer_sources() -> list[Path]:
    return sorted(REDO_WRITER_DIR.glob("*.[ch]")) + [REDO_WRITER_DIR / "Makefile"] + DEVICE_MODEL_SOURCES


def files_for_hash(spec: GuestSpec) -> list[Path]:
    files = sorted(PACKER_DIR.glob("*.pkr.hcl")) + [spec.vars_file]
    files += sorted(p for p in (PACKER_DIR / "files").iterdir() if p.is_file())
    files += [PACKER_DIR / s for s in spec.provision_scripts]
    files += _redo_writer_sources() + GUEST_TOOLS + [labtools.TOOLS_FILE]
    if spec.base_recipe == "mmdebstrap":
        files += _base_files(spec)
    return files


# The provisioning scripts the Debian base build runs in its chroot (scripts/build-debian-base), and
# the one that writes the lab's boot files from it.
BASE_CHROOT_SCRIPTS = [PACKER_DIR / "scripts" / "debian" / "lean-boot.sh",
                       PACKER_DIR / "scripts" / "common" / "databases.sh",
                       PACKER_DIR / "scripts" / "debian" / "bootloader.sh", REPO / "scripts" / "debian-boot-files"]


def _base_files(spec: GuestSpec) -> list[Path]:
    return [DEBIAN_BASE_SCRIPT, REPO / "scripts" / "lib.sh", labtools.TOOLS_FILE] + BASE_CHROOT_SCRIPTS + \
        recipe.load(spec.name).files()


def hash_files(files: list[Path], extra: str = "", root: Path = REPO) -> str:
    """sha256 over (path relative to `root`, exec bit, content) of each file, plus `extra`.

    Paths are relative so that two clones of the repository share one cache.
    """
    h = hashlib.sha256()
    for path in files:
        if not path.exists():
            raise SectorlabError(f"input {path} of the image recipe is missing")
        rel = path.relative_to(root).as_posix()
        h.update(f"{rel}\0{os.access(path, os.X_OK)}\0".encode())
        h.update(path.read_bytes())
        h.update(b"\0")
    h.update(extra.encode())
    return h.hexdigest()


def input_hash(spec: GuestSpec) -> str:
    return hash_files(files_for_hash(spec), extra=f"{spec.base_image_url}\0{spec.base_image_sha256}")


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@dataclass
class ImageRecord:
    guest: str
    image: str
    image_sha256: str
    input_hash: str
    base_url: str
    base_sha256: str
    built_at: str
    build_seconds: float
    accelerator: str
    size_bytes: int
    # For direct kernel boot (scripts/debian-boot-files, beside the image); empty: boot through GRUB.
    kernel: str = ""
    initrd: str = ""
    cmdline: str = ""
    # The line the guest writes to its serial console once sshd listens (guest.READY_MARKER);
    # empty for images built before it did, which are polled over SSH.
    ready_marker: str = ""

    @classmethod
    def load(cls, path: Path) -> ImageRecord:
        """The build record at `path`, read within inputs' bounds and checked field by field: a
        record cut short, edited or replaced by something else is one line saying how to rebuild."""
        advice = "delete it and its image beside it, and 'make image' builds them again"

        def bad(why: str) -> UsageError:
            return UsageError(f"image record {path}: {why}; expected a record 'make image' writes: {advice}")
        try:
            data = inputs.read_json(path, "image record", RECORD_MAX, "a record 'make image' writes")
        except UsageError as e:
            raise UsageError(f"{e}: {advice}") from None
        if not isinstance(data, dict):
            raise bad(f"a JSON {type(data).__name__}, not an object")
        kinds = {"float": ((int, float), "a number"), "int": ((int,), "a whole number"), "str": ((str,), "a string")}
        want = {f.name: kinds[str(f.type)] for f in fields(cls)}
        for name, (kind, said) in want.items():
            if name in data and (isinstance(data[name], bool) or not isinstance(data[name], kind)):
                raise bad(f"{name} = {data[name]!r} is not {said}")
        missing = [f.name for f in fields(cls) if f.name not in data and f.default is MISSING]
        unknown = sorted(set(data) - set(want))
        if missing or unknown:
            raise bad(f"lacks {', '.join(missing)}" if missing else f"has the unknown field {unknown[0]!r}")
        return cls(**data)


def cached_image_path(spec: GuestSpec, key: str) -> Path:
    return image_cache() / f"{spec.name}-{key[:16]}.qcow2"


def find_cached(spec: GuestSpec) -> ImageRecord | None:
    image = cached_image_path(spec, input_hash(spec))
    record = image.with_suffix(".json")
    if image.exists() and record.exists():
        return ImageRecord.load(record)
    return None


def update_manifest(record: ImageRecord) -> None:
    path = manifest_path()
    data = json.loads(path.read_text()) if path.exists() else {}
    data[record.guest] = asdict(record)
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def check_free_space(directory: Path, need_gib: int) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(directory).free / 2**30
    if free < need_gib:
        raise SectorlabError(f"only {free:.1f} GiB free in {directory}, the build needs {need_gib} GiB; free "
                             f"space there or point SECTORLAB_CACHE at a larger disk")
