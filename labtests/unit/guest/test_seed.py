"""NoCloud seeds: what the host writes is what the Debian guest's seed unit and cloud-init read."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import subprocess
import sys

import pytest

from labtests.conftest import require_program
from sectorlab.guest import seed, sshkeys
from sectorlab.paths import REPO

SEED_SCRIPT = REPO / "images" / "debian12" / "overlay" / "usr" / "local" / "sbin" / "sectorlab-seed"


@pytest.fixture(scope="module")
def guest_seed():
    """The guest-side seed program, loaded as a module (it has no .py suffix), its bytecode kept
    out of the image's overlay: a __pycache__ there would be copied into the image."""
    loader = importlib.machinery.SourceFileLoader("sectorlab_seed_guest", str(SEED_SCRIPT))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    keep, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    try:
        loader.exec_module(module)
    finally:
        sys.dont_write_bytecode = keep
    assert not (SEED_SCRIPT.parent / "__pycache__").exists()
    return module


def _doc():
    login = sshkeys.generate("me@test")
    host = sshkeys.generate("vm1-host")
    return seed.user_data("lab", [login.public_openssh], host, "vm1"), login, host


def test_user_data_is_cloud_config(guest_seed):
    doc, login, host = _doc()
    text = seed.render_user_data(doc)
    assert text.startswith("#cloud-config\n")
    parsed = guest_seed.parse_user_data(text)
    assert parsed == doc
    user = parsed["users"][0]
    assert user["name"] == "lab" and user["ssh_authorized_keys"] == [login.public_openssh]
    assert user["lock_passwd"] is True and parsed["ssh_pwauth"] is False
    assert parsed["ssh_keys"]["ed25519_public"] == host.public_openssh


def test_user_data_without_header_is_refused(guest_seed):
    with pytest.raises(ValueError, match="expected '#cloud-config'"):
        guest_seed.parse_user_data('{"users": []}')


def test_meta_data_json_and_yaml(guest_seed):
    text = seed.render_meta_data("vm1-1234", "vm1")
    assert guest_seed.parse_meta_data(text) == {"instance-id": "vm1-1234", "local-hostname": "vm1"}
    assert guest_seed.parse_meta_data("instance-id: abc\nlocal-hostname: 'h1'\n") == {
        "instance-id": "abc", "local-hostname": "h1"}


def test_build_seed_has_no_host_key():
    doc = seed.user_data("lab", ["ssh-ed25519 AAAA x"], None, "b")
    assert "ssh_keys" not in doc


def test_iso_is_a_nocloud_seed(tmp_path):
    require_program("isoinfo")
    doc, _, _ = _doc()
    iso = seed.write_iso(tmp_path / "seed.iso", "vm1-1", "vm1", doc)
    pvd = subprocess.run(["isoinfo", "-d", "-i", str(iso)], capture_output=True, text=True, check=True).stdout
    assert "Volume id: cidata" in pvd
    listing = subprocess.run(["isoinfo", "-R", "-f", "-i", str(iso)], capture_output=True, text=True,
                             check=True).stdout.split()
    assert sorted(listing) == ["/meta-data", "/user-data"]
    user_data = subprocess.run(["isoinfo", "-R", "-x", "/user-data", "-i", str(iso)], capture_output=True,
                               text=True, check=True).stdout
    assert json.loads(user_data.partition("\n")[2]) == doc


def test_etc_hosts_from_nothing(guest_seed):
    assert guest_seed.hosts_with("", "lab1") == "127.0.0.1\tlocalhost\n127.0.1.1\tlab1\n"


def test_etc_hosts_replaces_old_name(guest_seed):
    text = "127.0.0.1\tlocalhost\n127.0.1.1\told\n::1\tlocalhost ip6-localhost\n"
    want = "127.0.0.1\tlocalhost\n127.0.1.1\tlab1\n::1\tlocalhost ip6-localhost\n"
    assert guest_seed.hosts_with(text, "lab1") == want


def test_set_etc_hosts_creates_missing_file(guest_seed, tmp_path):
    path = tmp_path / "hosts"
    guest_seed.set_etc_hosts("vm1", str(path))
    assert path.read_text() == "127.0.0.1\tlocalhost\n127.0.1.1\tvm1\n"


def test_password_locked_reads_the_shadow_entry(guest_seed, tmp_path):
    shadow = tmp_path / "shadow"
    shadow.write_text("root:*:19000:0:99999:7:::\nlab:!:19000:0:99999:7:::\n"
                      "ops:$y$j9T$abc$def:19000:0:99999:7:::\nlabuser:!$y$x:19000::::::\n")
    assert [guest_seed.password_locked(n, str(shadow)) for n in ("lab", "root", "ops", "labuser", "nobody")] == [
        True, True, False, True, False]


def test_the_user_data_is_checked_against_cloud_init_s_schema():
    """The documents the builds and the labs give cloud-init pass cloud-init's own schema (from
    Debian's cloud-init package, fetched by scripts/bootstrap); broken ones are named."""
    from sectorlab import lab as lab_mod
    if not seed.cloud_init_schema_file().is_file():
        pytest.fail(f"{seed.cloud_init_schema_file()} is missing: run scripts/bootstrap")
    lab_mod.check_seeds(lambda msg: None)
    doc = seed.user_data("lab", ["ssh-ed25519 AAAA test"], None, "vm1")
    assert seed.schema_errors(doc) == []
    broken = {**doc, "write_files": [{"content": "no path"}], "ssh_pwauth": ["yes"]}
    errors = seed.schema_errors(broken)
    assert any(e.startswith("write_files/0:") and "'path' is a required property" in e for e in errors), errors
    assert any(e.startswith("ssh_pwauth:") for e in errors), errors
