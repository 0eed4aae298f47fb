"""Faults from outside the lab, injected into a running lab (`make faults`; CI runs it): a VM's QEMU
killed, a data volume deleted while the lab runs, the lab's state directory lost while its VMs run.
For each, `sectorlab lab status` names what is wrong (exit status 1), and lab-up or lab-down heals
it: lab-up says what it replaces and brings the whole lab up fresh (its disk check fails a disk
that is not blank), lab-down removes what a lost state directory left. Each test leaves the lab up
and whole for the next.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess

import pytest

from sectorlab import lab as lab_mod
from sectorlab import labdef, rmw, virsh
from sectorlab.errors import SectorlabError
from sectorlab.paths import REPO

pytestmark = pytest.mark.faults

LAB = lab_mod.lab_file_from_env()
SECTORLAB = str(REPO / ".venv" / "bin" / "sectorlab")


def _status() -> tuple[int, str]:
    proc = subprocess.run([SECTORLAB, "lab", "status", "--lab", str(LAB)], capture_output=True, text=True,
                          timeout=600)
    return proc.returncode, proc.stdout


def _up() -> list[str]:
    said: list[str] = []
    lab_mod.up(LAB, progress=said.append)
    return said


@pytest.fixture
def data():
    """The lab, up and whole (brought up if it is not), as lab.json has it."""
    name = labdef.load(LAB).name
    try:
        state = lab_mod.read_lab_json(name)
    except SectorlabError:
        state = None
    if state is None or lab_mod.faults(state):
        _up()
        state = lab_mod.read_lab_json(name)
    rc, out = _status()
    assert rc == 0, f"the lab is not whole before the fault:\n{out}"
    return state


def test_a_killed_qemu_is_named_and_the_lab_comes_back_whole(data):
    vm, entry = next(iter(data["vms"].items()))
    os.kill(rmw.qemu_pid(entry["domain"]), signal.SIGKILL)
    assert lab_mod.wait_for(lambda: virsh.run(data["libvirt_uri"], "domstate", entry["domain"],
                                              check=False).strip() != "running", 30)
    rc, out = _status()
    assert rc == 1 and re.search(rf"problem: {vm}: domain {entry['domain']} is [a-z ]+, not running", out), out
    assert "takes the lab down and brings it up fresh" in out
    said = _up()
    assert any("is not whole" in line and entry["domain"] in line for line in said), "\n".join(said)
    assert _status()[0] == 0


def test_a_deleted_volume_is_named_and_the_lab_comes_back_whole(data):
    disk = next(d for d in data["disks"].values() if d.get("volume"))
    os.unlink(disk["volume"])
    rc, out = _status()
    assert rc == 1 and f"problem: {disk['vm']} disk {disk['name']}: volume {disk['volume']} is gone" in out, out
    said = _up()
    assert any("is not whole" in line and disk["volume"] in line for line in said), "\n".join(said)
    assert os.path.exists(disk["volume"]) and _status()[0] == 0


def test_a_lost_state_directory_is_named_and_lab_down_cleans_up(data):
    name = labdef.load(LAB).name
    shutil.rmtree(lab_mod.state_dir(name))
    rc, out = _status()
    domains = [vm["domain"] for vm in data["vms"].values()]
    assert rc == 1 and "is not up (no lab.json: its state directory is gone), but libvirt still has" in out, out
    assert all(f"domain {d}" in out for d in domains) and "removes them" in out, out
    lab_mod.down(LAB, progress=lambda msg: None)
    assert lab_mod.leftovers_of(name, data["libvirt_uri"]) == []
    _up()
    assert _status()[0] == 0
