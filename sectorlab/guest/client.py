"""SSH into a lab guest with paramiko, the pinned host key and the lab's key.

Modelled on pytest-testinfra: one Guest object; run() shell-quotes its arguments and returns a
small result; check_output() raises with the command, status and stderr. Unknown host keys are
never accepted: the guest's host key comes from its seed, so the host knows it in advance.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import shlex
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:  # imported where used: a command that opens no SSH connection does not load it
    import paramiko

from ..errors import SectorlabError
from ..host import libvirt
from ..paths import cache_dir


@dataclass
class CommandResult:
    cmd: str
    rc: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.rc == 0


class GuestCommandError(SectorlabError):
    def __init__(self, guest: str, result: CommandResult):
        self.result = result
        detail = result.stderr.strip() or result.stdout.strip()
        super().__init__(f"{guest}: '{result.cmd}' exited {result.rc}: {detail}")


POLL_BANNER_TIMEOUT = 3.0
# The line a sectorlab image writes to its serial console once sshd listens (the unit
# sectorlab-ready.service, from packer/scripts/common/lab-guest.sh).
READY_MARKER = "sectorlab-ready: ssh"
# The line the in-guest NVMe/TCP targets' unit writes once every namespace is connected
# (packer/files/sectorlab-nvme-tcp).
NVME_TCP_READY_MARKER = "sectorlab-ready: nvme-tcp"
# ... and the line it writes when it fails.
NVME_TCP_FAILED_MARKER = "sectorlab-failed: nvme-tcp"
# With a console to watch, how long to wait for READY_MARKER before polling SSH blindly.
BLIND_POLL_AFTER = 90.0


def read_console(console_log: Path | str | None, via: str | None = None) -> str | None:
    """A guest's console log as text, or None when there is none (yet). With `via` (a remote libvirt
    URI) the log is on that host and is read over SSH."""
    if console_log is None:
        return None
    try:
        return libvirt.get_host(via or "qemu:///system").read_text(str(console_log))
    except SectorlabError:  # the remote host does not answer: no console to read
        return None


def console_says_ready(console_log: Path, marker: str = READY_MARKER, via: str | None = None) -> Callable[[], bool]:
    """A check for wait_until_up: whether the guest's console log has the line `marker` (on a remote
    host, asked with grep there: the log is not fetched at every poll)."""
    where = libvirt.get_host(via or "qemu:///system")

    def ready() -> bool:
        try:
            return where.contains(str(console_log), marker)
        except SectorlabError:
            return False
    return ready


class GuestUnreachable(SectorlabError):
    pass


class GuestCrashed(GuestUnreachable):
    """The guest cannot be reached and its console says why: its kernel panicked."""


PANIC_LINE = "Kernel panic - not syncing"


def console_panic(console_log: Path | None, via: str | None = None) -> str | None:
    """What the guest's console says of a kernel panic (the panic line and the first BUG/Oops line
    before it), or None."""
    lines = (read_console(console_log, via) or "").splitlines()
    at = next((i for i, line in enumerate(lines) if PANIC_LINE in line), None)
    if at is None:
        return None
    cause = next((line for line in lines[:at] if "BUG:" in line or "Oops" in line), "")
    strip = lambda line: line.split("] ", 1)[-1].strip()  # noqa: E731  (the kernel's timestamp)
    return strip(lines[at]) + (f" ({strip(cause)})" if cause else "")


def keep_console(console_log: Path, via: str | None = None) -> Path:
    """A copy of a crashed guest's console log where lab-down does not remove it (the lab's state
    directory goes with the lab): $SECTORLAB_CACHE/crashes/LAB-CONSOLE-TIME.log. The log itself when
    the copy cannot be made."""
    text = read_console(console_log, via)
    if text is None:
        return console_log
    key = (str(console_log), hashlib.sha256(text.encode()).hexdigest())
    if key in _KEPT:  # one copy per crash, however many commands then meet it
        return _KEPT[key]
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    kept = cache_dir() / "crashes" / f"{Path(console_log).parent.name}-{Path(console_log).stem}-{stamp}.log"
    try:
        kept.parent.mkdir(parents=True, exist_ok=True)
        kept.write_text(text)
    except OSError:
        return console_log
    _KEPT[key] = kept
    return kept


_KEPT: dict[tuple[str, str], Path] = {}


def host_key_from_line(line: str) -> paramiko.PKey:
    """Parse an OpenSSH public key line ('ssh-ed25519 AAAA... comment')."""
    import paramiko
    parts = line.split()
    if len(parts) < 2:
        raise SectorlabError(f"unexpected host key line: {line!r} (expected 'TYPE BASE64 [COMMENT]')")
    return paramiko.PKey.from_type_string(parts[0], base64.b64decode(parts[1]))


# paramiko's transport thread logs every failed handshake of a guest that is still booting, after
# the call that caused it has returned; without a handler of its own that lands on stderr through
# logging's last resort. Errors still surface as the exceptions the client raises.
logging.getLogger("paramiko").addHandler(logging.NullHandler())
logging.getLogger("paramiko.transport").setLevel(logging.CRITICAL)


def shell_join(cmd: str, args: tuple) -> str:
    return cmd if not args else cmd + " " + " ".join(shlex.quote(str(a)) for a in args)


class Guest:
    def __init__(self, name: str, host: str, port: int, user: str, key_file: Path, host_key: str,
                 console_log: Path | None = None, via: str | None = None):
        """`via`: the remote libvirt URI whose host the guest's forward listens on (None: this host)."""
        self.name = name
        self.console_log = Path(console_log) if console_log else None
        self.via = via
        self.host = host
        self.port = port
        self.user = user
        self.key_file = Path(key_file)
        self.host_key = host_key_from_line(host_key)
        self._client: paramiko.SSHClient | None = None

    def __repr__(self) -> str:
        return f"Guest({self.name} {self.user}@{self.host}:{self.port}" + \
            (f" on libvirt host {libvirt.get_host(self.via).label})" if self.via else ")")

    @property
    def endpoint(self) -> str:
        """Where the guest's SSH forward listens: this host's 127.0.0.1:port, or a remote libvirt host's."""
        where = f" (on libvirt host {libvirt.get_host(self.via).label})" if self.via else ""
        return f"{self.host}:{self.port}{where}"

    def _new_client(self, timeout: float, banner_timeout: float | None = None) -> paramiko.SSHClient:
        import paramiko
        client = paramiko.SSHClient()
        known = self.host if self.port == 22 else f"[{self.host}]:{self.port}"
        client.get_host_keys().add(known, self.host_key.get_name(), self.host_key)
        client.set_missing_host_key_policy(paramiko.RejectPolicy())
        sock = libvirt.get_host(self.via).channel_to(self.port, timeout) if self.via else None
        client.connect(self.host, port=self.port, username=self.user, sock=sock,
                       pkey=paramiko.PKey.from_path(self.key_file), timeout=timeout,
                       banner_timeout=banner_timeout or timeout,
                       auth_timeout=timeout, allow_agent=False, look_for_keys=False)
        return client

    def connect(self, timeout: float = 15.0) -> None:
        """Connect, retrying once; then fail with the reason."""
        import paramiko
        last: Exception | None = None
        for _ in range(2):
            try:
                self._client = self._new_client(timeout)
                return
            except (OSError, paramiko.SSHException) as e:
                last = e
        raise self._unreachable(f"cannot connect over SSH: {last}")

    def _unreachable(self, why: str) -> GuestUnreachable:
        """The error for a guest that does not answer: GuestCrashed, with what its console says,
        when its kernel panicked."""
        panic = console_panic(self.console_log, self.via)
        if panic:
            return GuestCrashed(f"{self}: {why}; the guest's kernel panicked, says its console: {panic} "
                                f"(all of it in {keep_console(self.console_log, self.via)})")
        return GuestUnreachable(f"{self}: {why}")

    def wait_until_up(self, timeout: float, progress: Callable[[str], None] | None = None,
                      ready: Callable[[], bool] | None = None) -> float:
        """Poll until SSH login works; returns the seconds it took. Host key mismatches fail at once.

        With `ready` (console_says_ready), connect only once it says sshd listens. User-mode
        networking accepts a connection before the guest has its address, and one made then stays
        queued and reaches sshd later, which spends a booting guest's CPU on it (0.38-0.45 s each
        under TCG by process accounting, four in that boot; five in another, by its journal).
        When `ready` has not said so after BLIND_POLL_AFTER seconds, polling starts anyway."""
        import paramiko
        start = time.monotonic()
        last_report = start
        last_error = "no answer yet"
        while True:
            now = time.monotonic()
            signalled = ready is None or ready()
            if signalled or now - start >= BLIND_POLL_AFTER:
                try:
                    # Without a signal, a booting guest shows as a missing banner: wait for it
                    # only briefly, and retry. With one, sshd listens and the banner comes.
                    self._client = self._new_client(
                        timeout=30.0, banner_timeout=30.0 if ready is not None and signalled else POLL_BANNER_TIMEOUT)
                    return time.monotonic() - start
                except paramiko.BadHostKeyException as e:
                    raise GuestUnreachable(f"{self}: host key is not the one the lab gave it: {e}") from e
                except (OSError, paramiko.SSHException, EOFError) as e:
                    last_error = str(e) or type(e).__name__
            else:
                last_error = f"its console has no '{READY_MARKER}' line yet"
            now = time.monotonic()
            if now - start > timeout:
                raise self._unreachable(f"no SSH login after {timeout:.0f} s (last error: {last_error})")
            if progress and now - last_report >= 10:
                progress(f"waiting for SSH on {self.endpoint}: {now - start:.0f} s ({last_error})")
                last_report = now
            time.sleep(0.2 if ready is not None and not signalled else 1.0)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def run(self, cmd: str, *args, timeout: float = 300.0,
            answer: tuple[str, Callable[[], str]] | None = None) -> CommandResult:
        """Run a command; its status and output. With `answer` (question, reply): when the
        command's first line of output is `question`, reply() is called as it arrives and written
        to the command's stdin (the host's time for a clock step, which must not be stale by the
        command's start-up); that line is not part of the output."""
        import paramiko
        command = shell_join(cmd, args)
        if self._client is None or not self._transport_alive():
            self.connect()
        assert self._client is not None
        try:
            stdin, stdout, stderr = self._client.exec_command(command, timeout=timeout)
            first = ""
            if answer is not None:
                first = stdout.readline()
                if isinstance(first, bytes):
                    first = first.decode(errors="replace")
                if first.rstrip("\n") == answer[0]:
                    stdin.write(answer[1]() + "\n")
                    stdin.flush()
                    first = ""
            out = first + stdout.read().decode(errors="replace")
            err = stderr.read().decode(errors="replace")
            rc = stdout.channel.recv_exit_status()
        except (OSError, paramiko.SSHException) as e:  # socket.timeout is an OSError
            raise self._unreachable(f"'{command}' did not complete: {e}") from e
        return CommandResult(command, rc, out, err)

    def stream(self, cmd: str, *args, on_line: Callable[[str], None], timeout: float = 3600.0) -> CommandResult:
        """Run a command, calling on_line with each line of its output as it arrives (the caller
        takes the moment); its status and output when it ends. A guest that goes away mid-command
        (its QEMU killed) ends it too: rc -1, the output read until then."""
        import paramiko
        command = shell_join(cmd, args)
        if self._client is None or not self._transport_alive():
            self.connect()
        assert self._client is not None
        lines: list[str] = []
        try:
            _, stdout, stderr = self._client.exec_command(command, timeout=timeout)
            for raw in stdout:
                line = raw.decode(errors="replace") if isinstance(raw, bytes) else raw
                lines.append(line.rstrip("\n"))
                on_line(lines[-1])
            err = stderr.read().decode(errors="replace")
            rc = stdout.channel.recv_exit_status()
        except (OSError, paramiko.SSHException, EOFError) as e:
            return CommandResult(command, -1, "\n".join(lines), f"the guest went away: {e}")
        return CommandResult(command, rc, "\n".join(lines), err)

    def check_output(self, cmd: str, *args, timeout: float = 300.0,
                     answer: tuple[str, Callable[[], str]] | None = None) -> str:
        __tracebackhide__ = True
        result = self.run(cmd, *args, timeout=timeout, answer=answer)
        if not result.ok:
            raise GuestCommandError(self.name, result)
        return result.stdout.rstrip("\n")

    def put(self, local: Path, remote: str, mode: int = 0o644) -> None:
        """Copy a file into the guest over SFTP."""
        if self._client is None or not self._transport_alive():
            self.connect()
        assert self._client is not None
        with self._client.open_sftp() as sftp:
            sftp.put(str(local), remote)
            sftp.chmod(remote, mode)

    def get(self, remote: str, local: Path) -> None:
        """Copy a file out of the guest over SFTP."""
        if self._client is None or not self._transport_alive():
            self.connect()
        assert self._client is not None
        with self._client.open_sftp() as sftp:
            sftp.get(remote, str(local))

    def _transport_alive(self) -> bool:
        transport = self._client.get_transport() if self._client else None
        return bool(transport and transport.is_active())

