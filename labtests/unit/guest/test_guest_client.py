"""The SSH client's pure parts: quoting, host key parsing, generated keys."""

from __future__ import annotations

import stat

import paramiko
import pytest

from sectorlab import guest
from sectorlab.errors import SectorlabError
from sectorlab.guest import sshkeys


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
        "ask": _ask_for_time,
    })


def _ask_for_time(channel):
    channel.sendall(b"host time?\n")
    answer = channel.makefile("rb").readline().decode().strip()
    return 0, f"host said {answer}\n", ""


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


def test_waits_for_the_console_line_before_connecting(keys, tmp_path):
    """No connection while the console lacks the ready line (each would reach the booting
    guest's sshd later); one, at once, when it appears."""
    server = _server(keys)
    console = tmp_path / "console.log"
    console.write_text("[    3.1] Run /init as init process\n")
    checks = []

    def ready():
        checks.append(len(server.transports))
        if len(checks) == 5:
            console.write_text(console.read_text() + guest.READY_MARKER + "\n")
        return guest.console_says_ready(console)()
    try:
        g = guest.Guest("vm", "127.0.0.1", server.port, "lab", keys["login"].write(tmp_path / "id"),
                        keys["host"].public_openssh)
        said = []
        assert g.wait_until_up(timeout=20, progress=said.append, ready=ready) < 10
        assert checks == [0, 0, 0, 0, 0] and len(server.transports) == 1
        assert g.check_output("nvme version") == "nvme version 2.3"
        g.close()
    finally:
        server.close()
    assert guest.console_says_ready(tmp_path / "absent.log")() is False


def test_host_key_mismatch_fails_at_once(keys, tmp_path):
    server = _server(keys, host="impostor")
    try:
        g = guest.Guest("vm", "127.0.0.1", server.port, "lab", keys["login"].write(tmp_path / "id"),
                        keys["host"].public_openssh)
        with pytest.raises(guest.GuestUnreachable, match="host key is not the one the lab gave it"):
            g.wait_until_up(timeout=60)
    finally:
        server.close()


def test_check_output_answers_when_asked(keys, tmp_path):
    """The answer is made when the question arrives (a clock step must not use a time taken
    before the command started), and a command that does not ask is read as usual."""
    server = _server(keys)
    try:
        g = guest.Guest("vm", "127.0.0.1", server.port, "lab", keys["login"].write(tmp_path / "id"),
                        keys["host"].public_openssh)
        g.wait_until_up(timeout=20)
        asked = []
        assert g.check_output("ask", answer=("host time?", lambda: asked.append(1) or "1700000000.5")) == (
            "host said 1700000000.5")
        assert asked == [1]
        assert g.check_output("nvme version", answer=("host time?", lambda: asked.append(2) or "x")) == (
            "nvme version 2.3")
        assert asked == [1]
        with pytest.raises(guest.GuestCommandError, match="exited 1"):
            g.check_output("false", answer=("host time?", lambda: "x"))
        g.close()
    finally:
        server.close()


def test_guest_probe_steps_to_the_host_time_plus_half_the_round_trip():
    """A round trip of 0.2 s on the probe's clock: the host's answer plus 0.1 s. The clock is the
    test's, not this host's (a real 0.2 s sleep measured 0.54 s beside a CPU hog: make test red)."""
    import io

    from sectorlab.inguest import guestprobe

    now = [100.0]

    class SlowAnswer(io.StringIO):
        def readline(self, *args):
            now[0] += 0.2  # the answer takes 0.2 s to come
            return "1700000000.0\n"
    asked = io.StringIO()
    estimate = guestprobe.host_time_now(asked, SlowAnswer(), clock=lambda: now[0])
    assert asked.getvalue() == guestprobe.CLOCK_QUESTION + "\n"
    assert estimate == pytest.approx(1700000000.1, abs=1e-6)
    with pytest.raises(ValueError, match="no host time"):
        guestprobe.host_time_now(io.StringIO(), io.StringIO(""))


PANIC_CONSOLE = """[   13.07] sectorlab-seed[103]: sectorlab-seed: user lab: 1 authorized key(s)
[  120.693473] BUG: unable to handle page fault for address: 0000000200000220
[  120.699025] Oops: 0000 [#1] PREEMPT SMP NOPTI
[  120.719633] Kernel panic - not syncing: Fatal exception in interrupt
"""


def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_guest_whose_kernel_panicked_is_reported_as_crashed(tmp_path, keys, monkeypatch):
    """Nothing answers on its port; its console log has a panic: the error says so, with the cause,
    and names a copy of the log that lab-down (which removes the lab's state) leaves."""
    monkeypatch.setenv("SECTORLAB_CACHE", str(tmp_path / "cache"))
    key = keys["login"].write(tmp_path / "id")
    console = tmp_path / "vm-console.log"
    console.write_text(PANIC_CONSOLE)
    g = guest.Guest("vm", "127.0.0.1", _free_port(), "lab", key, keys["host"].public_openssh, console)
    with pytest.raises(guest.GuestCrashed) as e:
        g.connect(timeout=2)
    kept = list((tmp_path / "cache" / "crashes").glob(f"{tmp_path.name}-vm-console-*.log"))
    assert len(kept) == 1 and kept[0].read_text() == PANIC_CONSOLE, kept
    with pytest.raises(guest.GuestCrashed):  # the same crash met again: no second copy
        g.connect(timeout=2)
    assert list((tmp_path / "cache" / "crashes").iterdir()) == kept
    assert str(e.value).endswith(
        "the guest's kernel panicked, says its console: Kernel panic - not syncing: Fatal exception in interrupt "
        f"(BUG: unable to handle page fault for address: 0000000200000220) (all of it in {kept[0]})")
    console.write_text(PANIC_CONSOLE.splitlines()[0] + "\n")  # no panic: unreachable, not crashed
    with pytest.raises(guest.GuestUnreachable) as e:
        g.connect(timeout=2)
    assert not isinstance(e.value, guest.GuestCrashed) and "cannot connect over SSH" in str(e.value)
    assert guest.console_panic(None) is None and guest.console_panic(tmp_path / "missing.log") is None


def test_a_crashed_guest_stops_the_scenarios(pytester):
    """The first scenario that meets a panicked guest fails, and no later one runs."""
    pytester.makeconftest("from labtests.conftest import pytest_runtest_makereport  # noqa: F401\n")
    pytester.makepyfile(test_crash="""
        from sectorlab.guest import GuestCrashed
        def test_first():
            raise GuestCrashed("Guest(lab1): the guest's kernel panicked")
        def test_second():
            pass
    """)
    result = pytester.runpytest_inprocess()
    result.assert_outcomes(failed=1)
    assert "stopping: Guest(lab1): the guest's kernel panicked" in result.stdout.str()


def _acks_then_close(channel):
    """Three lines, apart in time, then the connection goes away without an exit status (a guest
    whose QEMU was killed)."""
    import time
    for i in (1, 2, 3):
        channel.sendall(f"ack {i}\n".encode())
        time.sleep(0.2)
    channel.get_transport().close()
    return None


def test_stream_hands_each_line_over_as_it_arrives_and_survives_the_guest_going_away(keys, tmp_path):
    import time

    from labtests.unit.sshserver import SSHServer
    server = SSHServer(keys["host"], "lab", keys["login"], {"acks": _acks_then_close, "nvme version":
                                                              (0, "nvme version 2.3\n", "")})
    try:
        g = guest.Guest("vm", "127.0.0.1", server.port, "lab", keys["login"].write(tmp_path / "id"),
                        keys["host"].public_openssh)
        g.wait_until_up(timeout=20)
        seen: list[tuple[float, str]] = []
        result = g.stream("acks", on_line=lambda line: seen.append((time.monotonic(), line)))
        assert [line for _, line in seen] == ["ack 1", "ack 2", "ack 3"]
        assert seen[2][0] - seen[0][0] >= 0.3, seen  # taken as they came, not at the end
        assert result.rc == -1 and result.stdout == "ack 1\nack 2\nack 3"
        assert g.stream("nvme version", on_line=lambda line: None).stdout == "nvme version 2.3"
        g.close()
    finally:
        server.close()
