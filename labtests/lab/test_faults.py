"""Faults from outside the lab, injected into a running lab (`make faults`; CI runs it): a VM's QEMU
killed, a root volume deleted while the lab runs, the lab's state directory lost while its VMs run,
a data disk's device model killed.
For each, `sectorlab lab status` names what is wrong (exit status 1), and lab-up or lab-down heals
it: lab-up says what it replaces and brings the whole lab up fresh (its disk check fails a disk
that is not blank), lab-down removes what a lost state directory left. Also libvirtd stopped and
started again while the lab runs, and a second lab that asks for the first one's SSH port. Each
test leaves the lab up and whole for the next.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from sectorlab import lab as lab_mod
from sectorlab.errors import SectorlabError
from sectorlab.host import libvirt
from sectorlab.lab import modelled
from sectorlab.paths import REPO

pytestmark = pytest.mark.faults

LAB = lab_mod.lab_file_from_env()
SECTORLAB = str(REPO / ".venv" / "bin" / "sectorlab")


def _status() -> tuple[int, str]:
    """`lab status`'s exit status and what it printed (stdout, then stderr)."""
    proc = subprocess.run([SECTORLAB, "lab", "status", "--lab", str(LAB)], capture_output=True, text=True,
                          timeout=600)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.fixture
def lab_guests_fresh():
    """The lab's guests, connected anew (after a fault the session's connections may be gone)."""
    return lambda: lab_mod.guests_from_lab_json(lab_mod.read_lab_json(lab_mod.load_lab(LAB).name))


def _up() -> list[str]:
    said: list[str] = []
    lab_mod.up(LAB, progress=said.append)
    return said


@pytest.fixture
def data():
    """The lab, up and whole (brought up if it is not), as lab.json has it."""
    name = lab_mod.load_lab(LAB).name
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
    vm, entry = next(iter(data.vms.items()))
    os.kill(libvirt.qemu_pid(entry.domain), signal.SIGKILL)
    host = libvirt.get_host(data.libvirt_uri)
    assert lab_mod.wait_for(lambda: host.virsh("domstate", entry.domain, check=False).strip() != "running", 30)
    rc, out = _status()
    assert rc == 1 and re.search(rf"problem: {vm}: domain {entry.domain} is [a-z ]+, not running", out), out
    assert "takes the lab down and brings it up fresh" in out
    said = _up()
    assert any("is not whole" in line and entry.domain in line for line in said), "\n".join(said)
    assert _status()[0] == 0


def test_a_deleted_volume_is_named_and_the_lab_comes_back_whole(data):
    """A VM's root volume deleted under it (the data disks are device models: see the killed-model
    scenario below)."""
    vm, entry = next(iter(data.vms.items()))
    os.unlink(entry.root_volume)
    rc, out = _status()
    assert rc == 1 and f"problem: {vm} root disk: volume {entry.root_volume} is gone" in out, out
    said = _up()
    assert any("is not whole" in line and entry.root_volume in line for line in said), "\n".join(said)
    assert os.path.exists(entry.root_volume) and _status()[0] == 0


def test_a_lost_state_directory_is_named_and_lab_down_cleans_up(data):
    name = lab_mod.load_lab(LAB).name
    shutil.rmtree(lab_mod.state_dir(name))
    rc, out = _status()
    domains = [vm.domain for vm in data.vms.values()]
    assert rc == 1 and "is not up (no lab.json: its state directory is gone), but libvirt still has" in out, out
    assert all(f"domain {d}" in out for d in domains) and "removes them" in out, out
    lab_mod.down(LAB, progress=lambda msg: None)
    assert lab_mod.leftovers_of(name, data.libvirt_uri) == []
    _up()
    assert _status()[0] == 0


def _libvirtd(action: str) -> None:
    """Stop libvirtd as a crash or an upgrade would, or start it as scripts/bootstrap does. Its
    QEMU processes run on without it."""
    if Path("/run/systemd/system").is_dir():
        units = ["libvirtd.service", "libvirtd.socket", "libvirtd-ro.socket", "libvirtd-admin.socket"]
        subprocess.run(["systemctl", action, *units], check=True, capture_output=True, timeout=120)
        return
    if action == "stop":
        subprocess.run(["pkill", "-x", "libvirtd"], capture_output=True, timeout=30)
        assert lab_mod.wait_for(lambda: subprocess.run(["pgrep", "-x", "libvirtd"], capture_output=True)
                                .returncode == 1, 30), "libvirtd did not stop within 30 s"
    else:
        proc = subprocess.run([str(REPO / "scripts" / "bootstrap")], capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr


@pytest.mark.hostwide  # every other lab on this host loses libvirtd meanwhile: make faults-hostwide, alone
def test_libvirtd_stopped_and_restarted_while_the_lab_runs(data, lab_guests_fresh):
    uri = data.libvirt_uri
    _libvirtd("stop")
    try:
        rc, out = _status()
        assert rc == 2 and f"libvirt URI {uri} is unreachable" in out and "start libvirtd" in out, out
        assert len([line for line in out.splitlines() if line.startswith("sectorlab")]) == 1, out
        # The guests run on: their QEMU does not need libvirtd.
        for guest in lab_guests_fresh().values():
            assert guest.check_output("echo", "alive") == "alive"
            guest.close()
        # lab-up and lab-down refuse in the same line and touch nothing: without libvirt the
        # domains look absent, and a lab-down would remove the state that still describes them.
        for verb in ("up", "down"):
            proc = subprocess.run([SECTORLAB, "lab", verb, "--lab", str(LAB)], capture_output=True, text=True,
                                  timeout=600)
            assert proc.returncode == 2 and f"libvirt URI {uri} is unreachable" in proc.stderr, (verb, proc.stderr)
        assert (lab_mod.state_dir(lab_mod.load_lab(LAB).name) / "lab.json").exists()
    finally:
        _libvirtd("start")
    # libvirtd finds its running domains again: the lab is whole, and lab-up changes nothing.
    rc, out = _status()
    assert rc == 0, out
    said = _up()
    assert any("converge" in line or "already up" in line for line in said), "\n".join(said)
    assert lab_mod.read_lab_json(lab_mod.load_lab(LAB).name).timing.path == "converge"


def test_a_lab_that_would_take_a_running_labs_port_is_refused_before_anything_starts(data, tmp_path):
    vm, entry = next(iter(data.vms.items()))
    other = tmp_path / "port taken.toml"
    other.write_text(f'[lab]\nname = "port-taken"\n\n[[vm]]\nname = "vm1"\nguest = "debian12"\n'
                     f'ssh_port = {entry.ssh_port}\n\n[[vm.disk]]\nname = "d1"\nbus = "virtio"\n'
                     f'geometry = "sector512n"\n')
    name = lab_mod.load_lab(other).name
    proc = subprocess.run([SECTORLAB, "lab", "up", "--lab", str(other)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == (f"sectorlab: error: vm vm1: ssh_port {entry.ssh_port} on 127.0.0.1 is "
                                   f"already taken (by lab {lab_mod.load_lab(LAB).name}'s VM {vm}); choose another "
                                   f"port or 0 to let lab-up pick one"), proc.stderr
    assert not lab_mod.state_dir(name).exists()
    assert lab_mod.leftovers_of(name, data.libvirt_uri) == []
    assert _status()[0] == 0


def test_a_killed_device_model_fails_the_guests_io_is_named_and_lab_up_heals_it(data):
    """One data disk's daemon killed under the running guest: the guest's next write on it fails with
    EIO at once (nothing hangs), `lab status` names the disk and the model's log, and lab-up brings
    the lab up fresh with a new model."""
    name = lab_mod.load_lab(LAB).name
    disk = next(d for d in data.disks.values() if d.bus == "virtio")
    server = modelled.server(name, disk.name)
    killed = server.pid()
    os.kill(killed, signal.SIGKILL)
    assert lab_mod.wait_for(lambda: server.pid() is None, 10)
    guest = lab_mod.guests_from_lab_json(data)[disk.vm]
    result = guest.run("sudo -n redo-writer run --target", f"/dev/disk/by-id/virtio-{disk.serial}",
                       "--duration", 2, "--sessions", 1, "--blocksize", 4096, "--log-size", 16 << 20,
                       "--force", timeout=120)
    guest.close()
    assert result.rc != 0 and "Input/output error" in result.stderr, (result.rc, result.stderr)
    rc, out = _status()
    assert rc == 1 and f"problem: {disk.vm} disk {disk.name}: its device model does not run (its log: " \
                       f"{server.log})" in out, out
    said = _up()
    assert any("is not whole" in line for line in said), "\n".join(said)
    assert server.pid() not in (None, killed)
    assert _status()[0] == 0
