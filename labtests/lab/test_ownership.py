"""Two labs whose names share a prefix: a command touches only what it owns (sectorlab/lab/ownership.py).

Guards the defect that failed `make test` on a fresh machine: the labs lane's lab-down of lab
`default` destroyed lab `default-db`'s running VM, because clean-up matched domains named
`sectorlab-default-*`. Here lab `own-db` (VM lab1, domain sectorlab-own-db-lab1) runs, and lab `own`
is only a definition whose VM name, `db-lab1`, would give the very same domain name. A lab-down and a
status of lab `own` leave lab own-db running and whole; a lab-up of `own` is refused before anything
starts, naming lab own-db. The same with a bare domain of that kind of name that sectorlab did not
make (the issue's reproduction, no VM booted). Runs in make test's databases lane.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from sectorlab import lab as lab_mod
from sectorlab import labdef
from sectorlab.host import libvirt
from sectorlab.paths import REPO

pytestmark = pytest.mark.ownership

SECTORLAB = str(REPO / ".venv" / "bin" / "sectorlab")
URI = "qemu:///system"
DISK = '[[vm.disk]]\nname = "{name}"\nbus = "virtio"\ngeometry = "sector4k"\nsize_mib = 16\n'


def _lab_file(directory: Path, lab: str, vm: str, disk: str) -> Path:
    path = directory / f"lab {lab}, vm {vm}.toml"  # not {lab}-{vm}: own + db-lab1 and own-db + lab1 meet
    path.write_text(f'[lab]\nname = "{lab}"\n\n[[vm]]\nname = "{vm}"\nmemory_mib = 512\n\n' + DISK.format(name=disk))
    return path


def _sectorlab(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([SECTORLAB, *args], capture_output=True, text=True, timeout=900)


def _domains() -> dict[str, str]:
    """Every domain libvirt has, by name, with its state."""
    host = libvirt.get_host(URI)
    names = host.virsh("list", "--all", "--name").split()
    return {n: host.virsh("domstate", n, check=False).strip() for n in names}


@pytest.fixture
def labs(tmp_path):
    """Lab `own` with VM db-lab1 (never brought up here) and lab `own-db` with VM lab1; their domain
    names are the same. With the caller's LAB_SUFFIX S (appended to every lab's name), lab own-db is
    written `own-S-db`, which the suffix makes `ownS-dbS`, and lab own's VM `dbS-lab1`: the two still
    meet at sectorlab-ownS-dbS-lab1."""
    suffix = os.environ.get(labdef.SUFFIX_ENV, "")
    own = _lab_file(tmp_path, "own", f"db{suffix}-lab1", "a")
    own_db = _lab_file(tmp_path, f"own{suffix}-db", "lab1", "b")
    names = [lab_mod.domain_name(lab_mod.load_lab(p).name, lab_mod.load_lab(p).vms[0].name) for p in (own, own_db)]
    return own, own_db, names


def test_a_bare_domain_named_like_another_labs_is_left_alone(labs, tmp_path):
    own, _, _ = labs
    lab = lab_mod.load_lab(own)
    vm = lab.vms[0].name
    bare = lab_mod.domain_name(lab.name, vm)  # lab own's VM would have this name
    xml = tmp_path / "bare.xml"
    xml.write_text(f"<domain type='qemu'><name>{bare}</name><memory unit='MiB'>64</memory><vcpu>1</vcpu>"
                   f"<os><type arch='x86_64' machine='pc'>hvm</type></os></domain>")
    host = libvirt.get_host(URI)
    host.virsh("define", str(xml))
    uuid = host.virsh("domuuid", bare).strip()
    try:
        other = _lab_file(tmp_path, "own", "lab1", "c")  # lab own with a VM whose domain is another name
        down = _sectorlab("lab", "down", "--lab", str(other))
        assert down.returncode == 0, down.stderr
        assert bare in _domains(), f"lab-down of lab {lab.name} removed the bare domain {bare}:\n{down.stderr}"
        status = _sectorlab("lab", "status", "--lab", str(other))
        assert status.returncode == 1 and bare not in status.stdout + status.stderr, status.stdout + status.stderr
        up = _sectorlab("lab", "up", "--lab", str(own))
        assert up.returncode == 2, up.stderr
        assert (f"VM {vm} would be domain {bare}, but libvirt has domain {bare} (UUID {uuid}), which carries no "
                f"sectorlab identity") in up.stderr, up.stderr
        assert len(up.stderr.strip().splitlines()) == 1, up.stderr
        assert not lab_mod.state_dir(lab.name).exists() and _domains()[bare] == "shut off"
        assert not lab_mod.ownership.id_file(lab.name).exists(), "a refused lab-up made the lab's id"
        validate = _sectorlab("lab", "validate", str(own))
        assert validate.returncode == 2 and f"libvirt has domain {bare}" in validate.stderr, validate.stderr
    finally:
        host.virsh("undefine", uuid, check=False)


def test_a_lab_down_or_status_of_one_lab_leaves_the_other_running_and_whole(labs):
    own, own_db, (name_own, name_own_db) = labs
    if name_own != name_own_db:
        pytest.fail(f"the two labs' domains are {name_own} and {name_own_db}: the test needs one name")
    up = _sectorlab("lab", "up", "--lab", str(own_db))
    try:
        assert up.returncode == 0, up.stderr
        assert _domains()[name_own_db] == "running"
        # The old scheme: lab own's clean-up matched sectorlab-own-*, lab own-db's domain among them.
        down = _sectorlab("lab", "down", "--lab", str(own))
        assert down.returncode == 0, down.stderr
        assert _domains().get(name_own_db) == "running", f"lab-down of lab own took lab own-db's VM:\n{down.stderr}"
        status = _sectorlab("lab", "status", "--lab", str(own))
        assert status.returncode == 1, status.stdout
        assert "libvirt still has" not in status.stdout and name_own_db not in status.stdout, status.stdout
        refused = _sectorlab("lab", "up", "--lab", str(own))
        assert refused.returncode == 2, refused.stderr
        lab_own_db = lab_mod.load_lab(own_db).name
        assert (f"VM {lab_mod.load_lab(own).vms[0].name} would be domain {name_own_db}, but libvirt has domain "
                f"{name_own_db} of lab {lab_own_db} (its VM lab1)") in refused.stderr, refused.stderr
        whole = _sectorlab("lab", "status", "--lab", str(own_db))
        assert whole.returncode == 0, whole.stdout + whole.stderr
    finally:
        gone = _sectorlab("lab", "down", "--lab", str(own_db))
    assert gone.returncode == 0, gone.stderr
    assert lab_mod.leftovers_of(lab_mod.load_lab(own_db).name, URI) == []
    assert name_own_db not in _domains()
