"""The SSH client's pure parts: quoting, host key parsing, generated keys."""

from __future__ import annotations

import stat

import paramiko
import pytest

from sectorlab import guest, sshkeys
from sectorlab.errors import SectorlabError


def test_arguments_are_shell_quoted():
    assert guest.shell_join("ls", ()) == "ls"
    assert guest.shell_join("echo", ("a b", "$HOME", "it's")) == "echo 'a b' '$HOME' 'it'\"'\"'s'"


def test_generated_key_pair_loads_in_paramiko(tmp_path):
    pair = sshkeys.generate("host-x")
    path = pair.write(tmp_path / "id")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    loaded = paramiko.PKey.from_path(path)
    public = guest.host_key_from_line(pair.public_openssh)
    assert loaded.get_base64() == public.get_base64()
    assert pair.public_openssh.startswith("ssh-ed25519 ") and pair.public_openssh.endswith(" host-x")
    assert (tmp_path / "id.pub").read_text().strip() == pair.public_openssh


def test_bad_host_key_line():
    with pytest.raises(SectorlabError, match="unexpected host key line"):
        guest.host_key_from_line("garbage")


def test_unknown_host_key_is_rejected_not_accepted():
    """The client pins the lab's host key; paramiko's RejectPolicy refuses anything else."""
    g = guest.Guest("vm", "127.0.0.1", 2222, "lab", "/nonexistent", sshkeys.generate("h").public_openssh)
    client = paramiko.SSHClient()
    client.get_host_keys().add("[127.0.0.1]:2222", g.host_key.get_name(), g.host_key)
    other = guest.host_key_from_line(sshkeys.generate("other").public_openssh)
    assert client.get_host_keys().check("[127.0.0.1]:2222", g.host_key)
    assert not client.get_host_keys().check("[127.0.0.1]:2222", other)


@pytest.fixture
def keys():
    return {"host": sshkeys.generate("vm-host"), "login": sshkeys.generate("lab"),
            "impostor": sshkeys.generate("impostor-host")}


def _server(keys, host="host"):
    from labtests.unit.sshserver import SSHServer
    return SSHServer(keys[host], "lab", keys["login"], {
        "nvme version": (0, "nvme version 2.3\n", ""),
        "false": (1, "", "failed\n"),
    })


def test_run_returns_status_and_output(keys, tmp_path):
    server = _server(keys)
    try:
        g = guest.Guest("vm", "127.0.0.1", server.port, "lab", keys["login"].write(tmp_path / "id"),
                        keys["host"].public_openssh)
        assert g.wait_until_up(timeout=20) < 20
        result = g.run("nvme", "version")
        assert (result.rc, result.stdout, result.cmd) == (0, "nvme version 2.3\n", "nvme version")
        assert g.check_output("nvme version") == "nvme version 2.3"
        with pytest.raises(guest.GuestCommandError, match=r"vm: 'false' exited 1: failed"):
            g.check_output("false")
        g.close()
    finally:
        server.close()


def test_host_key_mismatch_fails_at_once(keys, tmp_path):
    server = _server(keys, host="impostor")
    try:
        g = guest.Guest("vm", "127.0.0.1", server.port, "lab", keys["login"].write(tmp_path / "id"),
                        keys["host"].public_openssh)
        with pytest.raises(guest.GuestUnreachable, match="host key is not the one the lab gave it"):
            g.wait_until_up(timeout=60)
    finally:
        server.close()
