"""The libvirt host as sectorlab reaches it (sectorlab/host/libvirt.py): one object per URI, parsed once
and forgotten on demand; virsh and QEMU's monitor through it; this host's operations. A remote
host's operations over SSH are exercised by labtests/lab/test_remote_host.py (make alone)."""

from __future__ import annotations

import json
import socket
import subprocess

import pytest

from sectorlab.errors import SectorlabError, UsageError
from sectorlab.host import libvirt, remote
from sectorlab.lab import hostcheck


@pytest.fixture
def ssh_uri(tmp_path):
    key, kh = tmp_path / "key", tmp_path / "known_hosts"
    key.write_text("k")
    kh.write_text("")
    return f"qemu+ssh://lab@box.example:2222/system?keyfile={key}&knownhosts={kh}"


@pytest.fixture
def parsed(monkeypatch):
    """The URIs remote.ssh_host (the parser get_host calls) was given, in order."""
    calls = []
    real = remote.ssh_host
    monkeypatch.setattr(remote, "ssh_host", lambda uri: calls.append(uri) or real(uri))
    return calls


def test_one_object_per_uri(ssh_uri):
    here = libvirt.get_host("qemu:///system")
    assert libvirt.get_host("qemu:///system") is here
    assert isinstance(here, libvirt.LocalHost) and not here.remote and here.via is None
    assert libvirt.get_host("qemu:///session") is not here
    there = libvirt.get_host(ssh_uri)
    assert isinstance(there, libvirt.RemoteHost) and there.remote and libvirt.get_host(ssh_uri) is there
    assert (there.uri, there.via, there.label) == (ssh_uri, ssh_uri, "box.example:2222")


def test_a_uri_is_parsed_once(ssh_uri, parsed):
    for _ in range(3):
        libvirt.get_host(ssh_uri)
        libvirt.get_host("qemu:///system")
    assert parsed == [ssh_uri, "qemu:///system"]
    # What virsh is given was worked out then too: libssh, pinned to the URI's known_hosts file.
    assert libvirt.get_host(ssh_uri).virsh_uri == remote.virsh_uri(ssh_uri)
    assert libvirt.get_host(ssh_uri).virsh_uri.startswith("qemu+libssh://")


def test_clearing_forgets_every_host(ssh_uri, parsed):
    before = libvirt.get_host(ssh_uri), libvirt.get_host("qemu:///system")
    libvirt.clear_hosts()
    after = libvirt.get_host(ssh_uri), libvirt.get_host("qemu:///system")
    assert after[0] is not before[0] and after[1] is not before[1]
    assert parsed == [ssh_uri, "qemu:///system"] * 2


def test_a_uri_sectorlab_cannot_reach_is_refused_each_time(parsed):
    for _ in range(2):
        with pytest.raises(UsageError, match="qemu\\+ssh:// only"):
            libvirt.get_host("qemu+tcp://box/system")
    assert parsed == ["qemu+tcp://box/system"] * 2  # nothing kept for it


def test_virsh_is_given_the_hosts_virsh_uri(ssh_uri, monkeypatch):
    ran = []

    def run(argv, **kwargs):
        ran.append(argv)
        return subprocess.CompletedProcess(argv, 1 if "fail" in argv else 0, "out\n", "error: no domain\n")

    monkeypatch.setattr(libvirt.subprocess, "run", run)
    host = libvirt.get_host(ssh_uri)
    assert host.virsh("list", "--all") == "out\n"
    assert ran == [["virsh", "-q", "-c", host.virsh_uri, "list", "--all"]]
    with pytest.raises(SectorlabError, match="^virsh domstate fail: error: no domain$"):
        host.virsh("domstate", "fail")
    assert host.virsh("domstate", "fail", check=False) == "out\n"


def test_qmp_is_one_monitor_command_and_says_qemus_error(monkeypatch):
    sent = []
    replies = [{"return": {"status": "running"}}, {"return": {}},
               {"error": {"class": "GenericError", "desc": "Duplicate ID 'nvme0'"}}]

    def virsh(host, *args, check=True, timeout=300):
        sent.append((host.uri, args[:2], json.loads(args[2])))
        return json.dumps(replies.pop(0))

    monkeypatch.setattr(libvirt.LibvirtHost, "virsh", virsh)
    host = libvirt.get_host("qemu:///system")
    assert host.qmp("dom", "query-status") == {"status": "running"}
    # An argument may have the name of one of qmp's own parameters.
    assert host.qmp("dom", "x-test", domain="other", command="c") == {}
    with pytest.raises(SectorlabError, match="QEMU device_add on dom: Duplicate ID 'nvme0'"):
        host.qmp("dom", "device_add", id="nvme0")
    assert sent == [("qemu:///system", ("qemu-monitor-command", "dom"), {"execute": "query-status"}),
                    ("qemu:///system", ("qemu-monitor-command", "dom"),
                     {"execute": "x-test", "arguments": {"domain": "other", "command": "c"}}),
                    ("qemu:///system", ("qemu-monitor-command", "dom"),
                     {"execute": "device_add", "arguments": {"id": "nvme0"}})]


def test_version_is_none_when_libvirt_does_not_answer(monkeypatch):
    def virsh(host, *args, check=True, timeout=300):
        raise SectorlabError("virsh version --daemon: failed to connect to the hypervisor")

    monkeypatch.setattr(libvirt.LibvirtHost, "virsh", virsh)
    assert libvirt.get_host("qemu:///system").version() is None
    monkeypatch.setattr(libvirt.LibvirtHost, "virsh", lambda host, *a, **k: "Compiled against library: 9.0.0\n\n"
                                                                           "Running against daemon: 9.0.0\n")
    assert libvirt.get_host("qemu:///system").version() == "Compiled against library: 9.0.0; Running against " \
                                                           "daemon: 9.0.0"


def test_a_remote_hosts_ports_are_asked_anew(ssh_uri, monkeypatch):
    """The object lives as long as the process; the ports listened on there are asked at each call."""
    ss = {"out": "LISTEN 0 128 127.0.0.1:2201 0.0.0.0:*\nLISTEN 0 128 10.0.0.5:2202 0.0.0.0:*\n"}
    asked = []

    def run(host, command, timeout=120.0, check=True):
        asked.append(command)
        return 0, ss["out"]

    monkeypatch.setattr(libvirt.RemoteHost, "run", run)
    host = libvirt.get_host(ssh_uri)
    assert host.port_in_use(2201) and not host.port_in_use(2202)  # 10.0.0.5 is not where the forwards are
    ss["out"] = "LISTEN 0 128 [::]:2202 [::]:*\n"
    assert not host.port_in_use(2201) and host.port_in_use(2202)
    assert asked == ["ss -Htln"] * 4


def test_this_hosts_operations(tmp_path):
    host = libvirt.get_host("qemu:///system")
    (tmp_path / "f").write_text("x")
    assert host.read_text(str(tmp_path / "f")) == "x" and host.read_text(str(tmp_path / "absent")) is None
    assert host.contains(str(tmp_path / "f"), "x") and not host.contains(str(tmp_path / "absent"), "x")
    assert host.missing([str(tmp_path / "f"), str(tmp_path / "absent")]) == {str(tmp_path / "absent")}
    host.make_dir(str(tmp_path / "a" / "b"))
    (tmp_path / "a" / "b" / "g").write_bytes(bytes(8192))
    free, used = host.space(str(tmp_path / "a"))
    assert free > 0 and used >= 8192
    assert host.space(str(tmp_path / "not" / "yet"))[1] == 0  # through its nearest existing parent
    host.remove_tree(str(tmp_path / "a"))
    assert not (tmp_path / "a").exists()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        assert host.port_in_use(s.getsockname()[1]) and hostcheck.port_in_use(s.getsockname()[1])
    assert host.qemu_uid() > 0
    assert host.memory_bytes() > 0


def test_a_remote_hosts_operations_over_one_ssh_connection(tmp_path):
    """RemoteHost against a local SSH server that answers the shell commands it sends: its host key
    pinned by the URI's known_hosts file, one connection for all of them, and a changed key refused."""
    from labtests.unit.sshserver import SSHServer
    from sectorlab.guest import sshkeys
    host_key, login, impostor = (sshkeys.generate(c) for c in ("libvirt-host", "lab", "impostor"))
    replies = {"id -u libvirt-qemu 2>/dev/null || id -u qemu": (0, "64055\n", ""),
               "ss -Htln": (0, "LISTEN 0 128 127.0.0.1:2201 0.0.0.0:*\n", ""),
               "cat -- /proc/meminfo 2>/dev/null": (0, "MemTotal:  8000 kB\n", ""),
               "mkdir -p -- /srv/x": (1, "", "mkdir: cannot create directory '/srv/x': Permission denied\n")}
    server, other = SSHServer(host_key, "lab", login, replies), SSHServer(impostor, "lab", login, replies)
    key = login.write(tmp_path / "id")
    try:
        kh = tmp_path / "known_hosts"
        kh.write_text("".join(f"[127.0.0.1]:{s.port} {host_key.public_openssh}\n" for s in (server, other)))
        host = libvirt.get_host(f"qemu+ssh://lab@127.0.0.1:{server.port}/system?keyfile={key}&knownhosts={kh}")
        assert host.qemu_uid() == 64055 and host.memory_bytes() == 8000 * 1024
        assert host.port_in_use(2201) and not host.port_in_use(2202)
        with pytest.raises(SectorlabError, match=f"libvirt host 127.0.0.1:{server.port}: 'mkdir -p -- /srv/x' "
                                                 f"exited 1: mkdir: cannot create directory"):
            host.make_dir("/srv/x")
        assert list(remote._CLIENTS) == [host.uri] and len(server.transports) == 1
        impostor_host = libvirt.get_host(f"qemu+ssh://lab@127.0.0.1:{other.port}/system?keyfile={key}&knownhosts={kh}")
        with pytest.raises(SectorlabError, match="offered host key ssh-ed25519 SHA256:.*: refused"):
            impostor_host.qemu_uid()
    finally:
        remote.close_all()
        server.close()
        other.close()
