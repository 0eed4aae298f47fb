"""A lab on a remote libvirt host (`make alone`; CI runs it): `qemu+ssh://` to an OpenSSH
server started on 127.0.0.1 for the test, with its own host key, client key and known_hosts file
(labtests/support/sshd.py). The "remote" host is this machine reached over SSH, which is what lets the test
look behind it; everything sectorlab does goes through SSH as it would to another machine:
Terraform's provider reaches libvirt's socket through a direct-streamlocal channel, virsh through
libvirt's libssh transport (pinned to the same known_hosts file), sectorlab reads the console log
and the listening ports over SSH and reaches the guest through a direct-tcpip channel (its forward
listens on the remote host's 127.0.0.1). The guest image, kernel and initramfs go there by upload:
the test removes them from the shared image pool first, so it needs no other lab up.

What is asserted: a changed or unknown host key of the libvirt host is refused before anything
starts, naming both keys; lab-up uploads the image, takes the cold path saying why a saved state
does not apply, and verifies every disk; the sector-detection scenarios pass on it; lab-status is
clean; lab-down leaves no domain, pool, volume, directory, QEMU process or listener; sshd's own log
shows the three channels.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from labtests.support import sshd as sshd_mod
from labtests.support.lab import project_domains, qemu_guest, qemu_processes
from sectorlab import images
from sectorlab import lab as lab_mod
from sectorlab.guest import host_key_from_line, sshkeys
from sectorlab.host import libvirt
from sectorlab.host import remote as remote_mod
from sectorlab.lab import hostcheck
from sectorlab.paths import REPO

pytestmark = pytest.mark.alone

SECTORLAB = str(REPO / ".venv" / "bin" / "sectorlab")
PYTEST = str(REPO / ".venv" / "bin" / "pytest")
LOCAL = "qemu:///system"
LAB_TOML = """\
[lab]
name = "remote"
libvirt_uri = "{uri}"

[[vm]]
name = "vm1"
guest = "debian12"

[[vm.disk]]
bus = "virtio"
geometry = "sector4k"

[[vm.disk]]
bus = "scsi"
geometry = "sector512e"

[[vm.disk]]
bus = "nvme"
geometry = "sector512n"
"""


def sectorlab(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != lab_mod.PAUSE_ENV}
    return subprocess.run([SECTORLAB, *args], capture_output=True, text=True, timeout=timeout, env=env)


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    with sshd_mod.running(tmp_path_factory.mktemp("sshd")) as server:
        yield server
    remote_mod.close_all()
    libvirt.clear_hosts()


@pytest.fixture(scope="module")
def image_files():
    """The guest's image, kernel and initramfs names, absent from the shared pool while the test
    runs (so lab-up must upload them) and after it (the next local lab-up links the cached files)."""
    others = project_domains(LOCAL)
    if others:
        pytest.fail(f"make alone re-uploads the shared guest image and needs no other lab up; domains "
                    f"{', '.join(others)} exist: take their labs down first (make lab-down LAB=...)")
    record = images.build("debian12")
    names = [lab_mod.volume_name(record, p) for p in (record.image, record.kernel, record.initrd) if p]

    def remove():
        listed = libvirt.get_host(LOCAL).virsh("vol-list", lab_mod.IMAGE_POOL, check=False).split()
        for name in names:
            if name in listed:
                libvirt.get_host(LOCAL).virsh("vol-delete", "--pool", lab_mod.IMAGE_POOL, name)

    remove()
    yield names
    remove()


@pytest.fixture(scope="module")
def lab_file(sshd, image_files, tmp_path_factory):
    path = tmp_path_factory.mktemp("remote-lab") / "remote.toml"
    path.write_text(LAB_TOML.format(uri=sshd.uri()))
    yield path
    sectorlab("lab", "down", "--lab", str(path))


def test_a_changed_or_unknown_host_key_is_refused_before_anything_starts(sshd, tmp_path):
    other = sshkeys.generate("not-the-host")
    other_line = " ".join(other.public_openssh.split()[:2])
    changed = tmp_path / "known_hosts-changed"
    changed.write_text(f"[127.0.0.1]:{sshd.port} {other_line}\n")
    unknown = tmp_path / "known_hosts-unknown"
    unknown.write_text("")
    expected_fp = _fp(sshd.host_key_line)
    for known_hosts, says in ((changed, ["offered host key ssh-ed25519 " + expected_fp,
                                         f"has ssh-ed25519 {_fp(other_line)}", "refused"]),
                              (unknown, [f"[127.0.0.1]:{sshd.port} is not in {unknown}", "ssh-keyscan"])):
        path = tmp_path / f"{known_hosts.name}.toml"
        path.write_text(LAB_TOML.format(uri=sshd.uri(known_hosts)).replace('"remote"', '"remote-badkey"'))
        for verb in ("up", "status", "down"):
            proc = sectorlab("lab", verb, "--lab", str(path), timeout=120)
            out = proc.stdout + proc.stderr
            assert proc.returncode == 2, out
            for text in says:
                assert text in out, out
            assert len([line for line in proc.stderr.splitlines() if line.strip()]) == 1, out
        assert not lab_mod.state_dir("remote-badkey").exists()
        # virsh, given the URI sectorlab gives it, pins the same file (libssh's known_hosts=).
        proc = subprocess.run(["virsh", "-c", remote_mod.virsh_uri(sshd.uri(known_hosts)), "uri"],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode != 0 and "host key" in proc.stderr.lower(), proc.stderr
    listed = libvirt.get_host(LOCAL).virsh("list", "--all", "--name").split()
    assert lab_mod.domain_name("remote-badkey", "vm1") not in listed


def _fp(line: str) -> str:
    return host_key_from_line(line).fingerprint  # paramiko's 'SHA256:...'


def test_the_lab_comes_up_on_the_remote_host(sshd, image_files, lab_file):
    up = sectorlab("lab", "up", "--lab", str(lab_file))
    out = up.stdout + up.stderr
    assert up.returncode == 0, out
    for name in image_files:
        assert f"uploading {name}" in out, out
    assert (f"path: cold (a saved state is kept and restored only on this host's qemu:///system, not on libvirt "
            f"host 127.0.0.1:{sshd.port}; none is saved)") in out, out
    data = lab_mod.read_lab_json("remote")
    vm = data.vm("vm1")
    assert f"waiting for SSH on 127.0.0.1:{vm.ssh_port} (on libvirt host 127.0.0.1:{sshd.port})" in out, out
    summary = next((line for line in out.splitlines() if "up by the cold path" in line), "")
    assert "image upload" in summary, out  # timed as a phase of its own
    # The guest's console log is on the libvirt host, in a directory of its own, read over SSH.
    assert vm.console_log == "/var/log/libvirt/qemu/sectorlab-remote/vm1-console.log"
    assert "sectorlab-ready: ssh" in libvirt.get_host(sshd.uri()).read_text(vm.console_log)
    # The clients went through the SSH server: Terraform's provider to libvirt's socket, sectorlab
    # to the guest's forward, virsh (libssh) and sectorlab running commands there.
    log = sshd.log.read_text()
    assert "direct-streamlocal" in log and "libvirt-sock" in log, log[-3000:]
    assert f"target 127.0.0.1 port {vm.ssh_port}" in log, log[-3000:]
    assert "req exec" in log, log[-3000:]  # virsh's libssh sessions (virt-ssh-helper) and sectorlab's commands
    # The uploaded files are volumes of the remote host's image pool.
    listed = libvirt.get_host(sshd.uri()).virsh("vol-list", lab_mod.IMAGE_POOL).split()
    assert all(name in listed for name in image_files), listed


def test_its_disks_pass_the_sector_detection_scenarios(lab_file):
    env = {**os.environ, "SECTORLAB_LAB_FILE": str(lab_file)}
    proc = subprocess.run([PYTEST, "-q", "-p", "no:cacheprovider", "-m", "lab",
                           "labtests/geometry/test_sector_detection.py"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout.splitlines()[-1], proc.stdout[-2000:]


def test_lab_status_is_clean(sshd, lab_file):
    proc = sectorlab("lab", "status", "--lab", str(lab_file), timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    port = lab_mod.read_lab_json("remote").vm("vm1").ssh_port
    assert f"ssh 127.0.0.1:{port} (on libvirt host 127.0.0.1:{sshd.port})" in proc.stdout, proc.stdout


def test_lab_down_leaves_nothing_there(sshd, lab_file):
    data = lab_mod.read_lab_json("remote")
    port = data.vm("vm1").ssh_port
    down = sectorlab("lab", "down", "--lab", str(lab_file), timeout=600)
    assert down.returncode == 0, down.stdout + down.stderr
    lab = lab_mod.load_lab(lab_file)
    assert lab_mod.leftovers_of("remote", lab.vms[0].libvirt_uri) == []
    # Looked for behind SSH's back, on the machine itself.
    assert lab_mod.leftovers_of("remote", LOCAL) == []
    assert not Path("/var/log/libvirt/qemu/sectorlab-remote").exists()
    assert not Path(lab_mod.pool_dir("remote")).exists()
    assert not lab_mod.state_dir("remote").exists()
    assert not hostcheck.port_in_use(port)
    assert qemu_processes(qemu_guest(lab_mod.domain_name("remote", "vm1"))) == []
