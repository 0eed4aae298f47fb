"""A lab-up interrupted in four of its phases (`make faults`; CI runs it): Ctrl-C (SIGINT to the
whole process group, as a terminal sends it) or `kill` (SIGTERM to sectorlab alone) while Terraform
applies and starts the VM ('start'), while the guest boots to SSH, before the state is saved and
before the NVMe controllers are hot-plugged. Each time lab-up exits non-zero naming the phase it
stopped in; the lab-down that follows leaves no domain, pool, volume directory, QEMU process, SSH
forward, state directory or temporary file; and at the end a lab-up of the same lab works.
Also libvirtd stopped and started again in the midst of a lab-up: while it waits for SSH (the lab-up
completes) and during Terraform's apply (the lab-up stops naming its phase; the next one heals).

The phases before which a run waits for its signal are chosen with $SECTORLAB_PAUSE_BEFORE
(sectorlab/lab/phases/runner.py, pause_point); Terraform's apply and the boot last long enough to be
interrupted in their midst. The lab is a small one of its own (one VM, a virtio disk and an NVMe
disk), brought up cold each time, beside whatever lab `make faults` runs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from labtests.support.lab import qemu_guest, qemu_processes
from sectorlab import lab as lab_mod
from sectorlab.host import libvirt
from sectorlab.lab import hostcheck
from sectorlab.paths import REPO, cache_dir

pytestmark = pytest.mark.faults

SECTORLAB = str(REPO / ".venv" / "bin" / "sectorlab")
LAB_TOML = """\
[lab]
name = "interrupts"

[[vm]]
name = "vm1"
guest = "debian12"

[[vm.disk]]
name = "plain"
bus = "virtio"
geometry = "sector512n"

[[vm.disk]]
name = "nvme"
bus = "nvme"
geometry = "sector4k"
"""

# (phase, the signal and to whom, the line of lab-up's output after which it is sent, pause there)
CASES = [
    ("start", "SIGINT to the process group", "terraform apply", None),
    ("wait", "SIGTERM to sectorlab", "waiting for SSH", None),
    ("save", "SIGINT to the process group", "paused before its 'save' phase", "save"),
    ("hot-plug", "SIGTERM to sectorlab", "paused before its 'hot-plug' phase", "hot-plug"),
]


@pytest.fixture(scope="module")
def lab_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("interrupts") / "interrupts.toml"
    path.write_text(LAB_TOML)
    lab = lab_mod.load_lab(path)
    subprocess.run([SECTORLAB, "lab", "down", "--lab", str(path)], capture_output=True, timeout=300)
    yield path
    subprocess.run([SECTORLAB, "lab", "down", "--lab", str(path)], capture_output=True, timeout=300)
    assert lab_mod.leftovers_of(lab.name, lab.vms[0].libvirt_uri) == []


def _interrupted_up(lab_file: Path, trigger: str, how: str, pause: str | None) -> tuple[int, str]:
    def signal_it(proc: subprocess.Popen) -> None:
        if how.startswith("SIGINT"):
            os.killpg(proc.pid, signal.SIGINT)
        else:
            os.kill(proc.pid, signal.SIGTERM)
    return _up_and_act(lab_file, trigger, signal_it, pause)


def _up_and_act(lab_file: Path, trigger: str, act, pause: str | None = None) -> tuple[int, str]:
    """A cold lab-up; once it says `trigger` (and a second later, unless paused there), act(process).
    Its exit status and whole output."""
    env = dict(os.environ)
    env.pop(lab_mod.PAUSE_ENV, None)
    if pause:
        env[lab_mod.PAUSE_ENV] = pause
    # A terminal's Ctrl-C reaches every process of the foreground group: sectorlab and Terraform.
    # The test may run under a shell that made SIGINT ignored (a background job): restore it.
    proc = subprocess.Popen([SECTORLAB, "lab", "up", "--cold", "--lab", str(lab_file)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    lines = []
    try:
        deadline = time.monotonic() + 300
        for line in proc.stdout:
            lines.append(line)
            if trigger in line:
                break
            assert time.monotonic() < deadline, "".join(lines)
        else:
            pytest.fail(f"lab-up ended (exit {proc.wait()}) before saying {trigger!r}:\n{''.join(lines)}")
        if not pause:
            # Into the phase: Terraform applying (its apply of this lab took under a second on a
            # fresh clone with the provider cached, so a second's wait found lab-up in 'wait'), the
            # guest booting.
            time.sleep(0.2 if trigger == "terraform apply" else 1.0)
        act(proc)
        lines.extend(proc.stdout)
        return proc.wait(timeout=900), "".join(lines)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _leftovers(name: str, uri: str, port: int | None) -> list[str]:
    """What a lab-down must not leave, looked for on the host."""
    left = lab_mod.leftovers_of(name, uri)
    left += [f"QEMU process {p}" for p in qemu_processes(qemu_guest(lab_mod.domain_name(name, "vm1")))]
    if port and hostcheck.port_in_use(port):
        left.append(f"a listener on 127.0.0.1:{port}")
    if lab_mod.state_dir(name).exists():
        left.append(f"state directory {lab_mod.state_dir(name)}")
    for root in (cache_dir() / "labs", cache_dir() / "saved" / name):
        if root.is_dir():
            left += [f"temporary {p}" for p in root.rglob("*") if p.name.endswith(".tmp")]
    mounts = Path("/proc/mounts").read_text()
    pool = lab_mod.pool_dir(name)
    left += [f"mount {m}" for m in (line.split()[1] for line in mounts.splitlines())
             if m == pool or m.startswith(pool + "/")]
    return left


@pytest.mark.parametrize("phase, how, trigger, pause", CASES, ids=[c[0] for c in CASES])
def test_an_interrupted_lab_up_names_its_phase_and_lab_down_leaves_nothing(lab_file, phase, how, trigger, pause):
    lab = lab_mod.load_lab(lab_file)
    rc, out = _interrupted_up(lab_file, trigger, how, pause)
    assert rc != 0, out
    assert f"lab {lab.name}: lab-up stopped in its '{phase}' phase (interrupted)" in out, out
    saved = cache_dir() / "saved" / lab.name
    assert not [p for p in saved.rglob("*") if p.name.endswith(".tmp")] if saved.is_dir() else True, \
        f"a half-written saved state after an interrupt in '{phase}'"
    _down_leaves_nothing(lab_file)


def _restart_libvirtd(proc: subprocess.Popen) -> None:
    from labtests.lab.test_faults import _libvirtd
    _libvirtd("stop")
    time.sleep(2.0)  # the lab-up meets a libvirt that is gone
    _libvirtd("start")


@pytest.mark.hostwide  # every other lab on this host loses libvirtd meanwhile
def test_libvirtd_restarted_while_lab_up_waits_for_ssh_the_lab_up_completes(lab_file):
    """The boot does not need libvirtd (QEMU runs on); the phases after it ask libvirt again once
    it is back, and the lab comes up whole."""
    lab = lab_mod.load_lab(lab_file)
    rc, out = _up_and_act(lab_file, "waiting for SSH", _restart_libvirtd)
    assert rc == 0, out
    assert f"lab {lab.name} up by the cold path" in out, out
    _status_is_clean(lab_file)
    _down_leaves_nothing(lab_file)


@pytest.mark.hostwide  # every other lab on this host loses libvirtd meanwhile
def test_libvirtd_restarted_during_terraform_apply_the_next_lab_up_heals(lab_file):
    """Terraform's connection to libvirt breaks mid-apply: the lab-up stops naming its phase, and
    the next lab-up takes down what the broken one left and brings the lab up whole."""
    lab = lab_mod.load_lab(lab_file)
    rc, out = _up_and_act(lab_file, "terraform apply", _restart_libvirtd)
    if rc == 0:  # the apply finished before libvirtd went: then the lab must be whole
        assert f"lab {lab.name} up by the cold path" in out, out
    else:
        assert f"lab {lab.name}: lab-up stopped in its 'start' phase" in out, out
        again = subprocess.run([SECTORLAB, "lab", "up", "--lab", str(lab_file)], capture_output=True, text=True,
                               timeout=900)
        assert again.returncode == 0, again.stderr
    _status_is_clean(lab_file)
    _down_leaves_nothing(lab_file)


def _status_is_clean(lab_file: Path) -> None:
    status = subprocess.run([SECTORLAB, "lab", "status", "--lab", str(lab_file)], capture_output=True, text=True,
                            timeout=300)
    assert status.returncode == 0, status.stdout + status.stderr


def _down_leaves_nothing(lab_file: Path) -> None:
    lab = lab_mod.load_lab(lab_file)
    ports_file = lab_mod.state_dir(lab.name) / "ports.json"
    ports = json.loads(ports_file.read_text()) if ports_file.exists() else {}
    down = subprocess.run([SECTORLAB, "lab", "down", "--lab", str(lab_file)], capture_output=True, text=True,
                          timeout=300)
    assert down.returncode == 0, down.stderr
    assert _leftovers(lab.name, lab.vms[0].libvirt_uri, ports.get("vm1")) == [], down.stderr


def test_after_the_interrupts_the_lab_comes_up(lab_file):
    lab = lab_mod.load_lab(lab_file)
    up = subprocess.run([SECTORLAB, "lab", "up", "--lab", str(lab_file)], capture_output=True, text=True,
                        timeout=600)
    assert up.returncode == 0, up.stderr
    status = subprocess.run([SECTORLAB, "lab", "status", "--lab", str(lab_file)], capture_output=True, text=True,
                            timeout=300)
    assert status.returncode == 0, status.stdout + status.stderr
    domain = lab_mod.read_lab_json(lab.name).vm("vm1").domain
    assert libvirt.get_host(lab.vms[0].libvirt_uri).virsh("domstate", domain).strip() == "running"
    assert libvirt.qemu_pid(domain) > 0
