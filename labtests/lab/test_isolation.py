"""What the lab trusts and what it lets through, checked on the running lab rather than read from
its configuration: the guests' SSH forwards listen on 127.0.0.1 only (the host's sockets), a guest
cannot reach the host's loopback services (user-mode networking with restrict=on), the guest's
sshd takes no password, a guest whose host key is not the pinned one is refused with both keys
named, and the lab's private key is readable by its owner only.
"""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import paramiko
import pytest

from sectorlab.guest import Guest, GuestUnreachable, sshkeys

pytestmark = pytest.mark.lab

LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp


def _listening(port: int) -> list[str]:
    """The local addresses of every listening TCP socket on `port`, IPv4 and IPv6, from /proc."""
    out = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            addr, hexport = fields[1].rsplit(":", 1)
            if fields[3] == LISTEN and int(hexport, 16) == port:
                raw = bytes.fromhex(addr)
                # /proc prints each 32-bit word in host (little-endian) order
                words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
                out.append(socket.inet_ntop(socket.AF_INET if len(raw) == 4 else socket.AF_INET6, words))
    return out


def test_ssh_forwards_listen_on_loopback_only(lab_state):
    for name, vm in lab_state.vms.items():
        seen = _listening(vm.ssh_port)
        assert seen and set(seen) == {"127.0.0.1"}, f"{name}: port {vm.ssh_port} listens on {seen}"


def test_a_guest_cannot_reach_the_hosts_loopback(lab_guests):
    """A service on the host's 127.0.0.1 is what user-mode networking would reach as 10.0.2.2:
    with restrict=on the guest's connection fails at once and the service sees nothing."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        server.settimeout(0.5)
        port = server.getsockname()[1]
        for name, guest in lab_guests.items():
            # a hang is the guest's own timeout (exit 124), not a time taken on this host: an SSH round trip
            # to a TCG guest on a busy host is no measure of how fast the connection failed
            result = guest.run("timeout 10 bash -c", f"exec 3<>/dev/tcp/10.0.2.2/{port}")
            assert result.rc != 0, f"{name}: reached the host's 127.0.0.1:{port} through 10.0.2.2"
            assert result.rc != 124, f"{name}: the connection hung 10 s instead of failing"
            with pytest.raises(socket.timeout):
                server.accept()


def test_the_guests_sshd_takes_no_password(lab_state):
    for name, vm in lab_state.vms.items():
        with socket.create_connection((vm.ssh_host, vm.ssh_port), timeout=15) as sock:
            transport = paramiko.Transport(sock)
            try:
                transport.start_client(timeout=15)
                with pytest.raises(paramiko.BadAuthenticationType) as e:
                    transport.auth_none(vm.user)
                offered = e.value.allowed_types
                assert "password" not in offered and "keyboard-interactive" not in offered, \
                    f"{name}: sshd offers {offered}"
                with pytest.raises(paramiko.SSHException):
                    transport.auth_password(vm.user, vm.user)
            finally:
                transport.close()


def test_a_guest_with_another_host_key_is_refused_naming_both(lab_state):
    name, vm = next(iter(lab_state.vms.items()))
    other = sshkeys.generate("not-the-guest").public_openssh
    guest = Guest(name, vm.ssh_host, vm.ssh_port, vm.user, Path(vm.key_file), other)
    with pytest.raises(GuestUnreachable) as e:
        guest.connect(timeout=15)
    said = str(e.value)
    expected, offered = other.split()[1], vm.host_key.split()[1]
    assert f"does not match: got '{offered}', expected '{expected}'" in said, said


def test_the_lab_key_is_the_owners_only(lab_state):
    for vm in lab_state.vms.values():
        key = Path(vm.key_file)
        mode = stat.S_IMODE(key.stat().st_mode)
        assert mode == 0o600 and key.stat().st_uid == os.getuid(), f"{key}: mode {mode:o}"
