"""One modelled disk on the host: an nbdkit server (started in a session of its own) serving a
sparse disk in RAM through the device model filter, on a Unix socket, with its pid, identity, log
and trace in one directory of its own.

    d = DeviceServer(directory, size=1 << 30, params=profile.params)
    d.start()          # returns when the socket accepts
    ... d.uri() ...    # nbd+unix:///?socket=<the socket's path, percent-encoded>
    d.fail(); d.heal() # its writes fail with EIO from now on; they work again
    d.answer_as_floor(100); d.answer_as_floor(None)  # every request 100 us after it arrives; the model
    d.stop()           # SIGTERM to that very process (pid and start time), then its trace is complete

Two lifetimes. A model of the device path (bench-sweep, bench-load, crash, a unit test) is tied to
the process that starts it (`tied_to_parent`, the default): nbdkit runs with --exit-with-parent
(the kernel sends it SIGTERM when its parent ends, prctl's PR_SET_PDEATHSIG), so a sectorlab
killed mid-run (a CI timeout, SIGKILL, the OOM killer) leaves no server behind under a temporary
directory. A lab's models (lab/modelled.py) must outlive `sectorlab lab up`, which starts them and
exits: they are not tied (tied_to_parent=False) and nbdkit forks into the background as a daemon
once its socket listens.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

from .. import procs
from ..errors import SectorlabError, UsageError
from ..paths import write_atomic
from . import build, profiles


@dataclass
class DeviceServer:
    directory: Path
    size: int
    params: dict[str, str] = field(default_factory=dict)
    name: str = "disk"
    # A file to serve instead of memory (nbdkit's file plugin): what was written is there to read
    # after the model stops (a crash run builds its states from it). Made `size` bytes, sparse.
    backing: Path | None = None
    # Every write's bytes kept with its arrival (the filter's writelog=): any moment's crash state of
    # the disk can be built from one run (crash/writelog.py). It grows by every byte written.
    write_log: bool = False
    log_dir: Path | None = None  # where the write log goes (default: the directory); a disk's, not RAM's
    # Ends with the process that starts it (nbdkit --exit-with-parent, which also keeps nbdkit in
    # the foreground, a child of this process); False: a daemon that outlives it (a lab's model).
    tied_to_parent: bool = True
    # The model looks at its floor switch (answer_as_floor) at every request, a stat of 0.3 us: only
    # a lab's models (the probe's round trip in a guest), not the device path's.
    floor_switchable: bool = False
    # The foreground nbdkit this object started (tied_to_parent), waited for when it stops.
    _proc: subprocess.Popen | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def socket(self) -> Path:
        return self.directory / f"{self.name}.sock"

    @property
    def trace(self) -> Path:
        return self.directory / f"{self.name}.trace"

    @property
    def unreadable(self) -> Path:
        """The model's medium errors: lines "OFFSET LENGTH" (none while it is absent; read again when
        it changes: a power cut's unreadable sectors, crash/labcut.py)."""
        return self.directory / f"{self.name}.unreadable"

    @property
    def floor_switch(self) -> Path:
        """While it holds a time in microseconds, the model answers every request that long after it
        arrives and sees none of them (the probe's floor on the disk it probes: answer_as_floor)."""
        return self.directory / f"{self.name}.floor"

    def answer_as_floor(self, sleep_us: float | None) -> None:
        """From the next request on, every request answered `sleep_us` after it arrives, the model
        bypassed; None: the model again."""
        if not self.floor_switchable or not self._runs_with(f"floor={self.floor_switch}"):
            raise SectorlabError(f"the device model of {self.name} was started without a floor switch "
                                 f"(floor={self.floor_switch}): it would not look at the file; start it again "
                                 "(a lab's: sectorlab lab down, then up)")
        if sleep_us is None:
            self.floor_switch.unlink(missing_ok=True)
        else:
            write_atomic(self.floor_switch, f"{sleep_us:g}\n")

    def _runs_with(self, argument: str) -> bool:
        """Whether the process this directory records (pid and start time) was started with `argument`
        (True when none runs: nothing is there to ignore it)."""
        pid = self.pid()
        if pid is None:
            return True
        try:
            return argument.encode() in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return False

    @property
    def writelog(self) -> Path:
        return (self.log_dir or self.directory) / f"{self.name}.writelog"

    @property
    def log(self) -> Path:
        return self.directory / f"{self.name}.log"

    @property
    def pidfile(self) -> Path:
        return self.directory / f"{self.name}.pid"

    @property
    def identity_file(self) -> Path:
        return self.directory / f"{self.name}.identity"

    def command(self) -> list[str]:
        nbdkit = shutil.which("nbdkit")
        if nbdkit is None:
            raise SectorlabError("nbdkit is not installed: run scripts/bootstrap (it installs Debian's nbdkit)")
        plugin = (["file", f"file={self.backing}"] if self.backing is not None
                  else ["memory", f"size={self.size}", "allocator=sparse"])
        return [nbdkit, *(["--exit-with-parent"] if self.tied_to_parent else []), "--unix", str(self.socket),
                "--pidfile", str(self.pidfile), "--log=stderr", f"--filter={build.built(build.FILTER)}", *plugin,
                *(f"{k}={v}" for k, v in self.params.items()), f"trace={self.trace}", f"unreadable={self.unreadable}",
                *([f"floor={self.floor_switch}"] if self.floor_switchable else []),
                *([f"writelog={self.writelog}"] if self.write_log else [])]

    def pid(self) -> int | None:
        """The server's pid, if that very process (its recorded start time) still runs."""
        return procs.read_identity(self.identity_file)

    def start(self, timeout: float = 10.0) -> None:
        if self.pid() is not None:
            raise SectorlabError(f"the device model of {self.name} already runs (pid {self.pid()}, {self.socket})")
        problem = profiles.buffer_problem(self.params)  # in more words than the model's own refusal
        if problem:
            raise UsageError(f"the device model of {self.name}: {problem}")
        self.directory.mkdir(parents=True, exist_ok=True)
        # a fresh disk reads whole, and its history starts now
        for stale in (self.socket, self.pidfile, self.identity_file, self.unreadable, self.floor_switch, self.writelog):
            stale.unlink(missing_ok=True)
        if self.write_log:
            self.writelog.parent.mkdir(parents=True, exist_ok=True)
        if self.backing is not None:
            with open(self.backing, "xb") as f:  # a file of its own: never one that is there already
                f.truncate(self.size)
        with open(self.log, "w") as log:
            # In a session of its own (a Ctrl-C or hang-up of the command that started it does not
            # reach it). A daemon's first process exits once the socket listens and the pid file is
            # written; a tied nbdkit stays in the foreground, this process's child, and writes the
            # pid file (its own pid) once its socket listens.
            proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                    start_new_session=True)
        try:
            pid = self._wait_for_pid(proc, timeout)
        except BaseException:
            self._end(proc)
            raise
        if pid is None:
            self._end(proc)
            why = self.log.read_text().strip().splitlines()[-1:] or [f"exit {proc.returncode}, no pid file"]
            raise SectorlabError(f"the device model of {self.name} did not start: {why[0].removeprefix('nbdkit: ')} "
                                 f"(log {self.log})")
        if pid == proc.pid:
            self._proc = proc  # in the foreground: reaped when it stops
        self.identity_file.write_text(procs.identity(pid) + "\n")

    def _wait_for_pid(self, proc: subprocess.Popen, timeout: float) -> int | None:
        """The pid nbdkit writes once its socket listens; None when nbdkit exits with an error first or
        writes none within `timeout`. A daemon's first process exits 0 before (or just after) the
        background process writes the file, which can be there and still empty for a moment (a loaded
        host); a foreground nbdkit (tied) writes its own pid and keeps running."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid = self._written_pid()
            if pid is not None:
                if proc.poll() is None and pid != proc.pid:  # a daemon: its first process is about to exit
                    try:
                        proc.wait(timeout=max(deadline - time.monotonic(), 0.1))
                    except subprocess.TimeoutExpired:
                        # The daemon that wrote its pid here would be left with no identity file,
                        # which stop() goes by: it is ended with the start that failed.
                        try:
                            os.kill(pid, signal.SIGTERM)
                        except ProcessLookupError:
                            pass
                        raise
                return pid
            rc = proc.poll()
            if rc is not None and rc != 0:
                return None
            time.sleep(0.01)
        return None

    @staticmethod
    def _end(proc: subprocess.Popen) -> None:
        """A start that failed leaves no process behind: nbdkit's own process ended and reaped."""
        if proc.poll() is None:
            proc.kill()
        proc.wait()

    def _written_pid(self) -> int | None:
        """The pid nbdkit wrote in its pid file, once the file holds a whole line."""
        try:
            text = self.pidfile.read_text()
        except FileNotFoundError:
            return None
        return int(text.split()[0]) if text.endswith("\n") and text.split() and text.split()[0].isdigit() else None

    def stop(self, timeout: float = 10.0) -> bool:
        """Stop the server this directory records; False when it was not running."""
        pid = self.pid()
        if pid is None:
            self._reap()  # one that ended by itself
            return False
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while self.pid() is not None:  # a zombie runs no more (procs.start_time)
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                if self._proc is not None:
                    self._proc.wait(timeout=timeout)
                self._reap()
                raise SectorlabError(f"the device model of {self.name} (pid {pid}) ignored SIGTERM for "
                                     f"{timeout:.0f} s and was killed; its trace may be cut short ({self.trace})")
            time.sleep(0.02)
        self._reap()
        self.identity_file.unlink(missing_ok=True)
        return True

    def _reap(self) -> None:
        """A foreground nbdkit this object started is this process's child: wait for it, so that no
        zombie is left (a daemon's parent is init)."""
        if self._proc is not None and self._proc.poll() is not None:
            self._proc = None

    def fail(self) -> None:
        """Every write, zero, flush and trim fails with EIO from the model's next request on (a member
        that fails at this moment: SIGUSR1 to that very process); reads still work."""
        self._signal(signal.SIGUSR1, "fail")

    def heal(self) -> None:
        """The writes work again (SIGUSR2)."""
        self._signal(signal.SIGUSR2, "heal")

    def _signal(self, sig: signal.Signals, what: str) -> None:
        pid = self.pid()
        if pid is None:
            raise SectorlabError(f"the device model of {self.name} does not run ({self.directory}): nothing to {what}")
        os.kill(pid, sig)

    def uri(self) -> str:
        return nbd_uri(self.socket)

    def set_unreadable(self, ranges) -> None:
        """The model answers these (offset, length) ranges with EIO from its next request on (after
        the disk's bytes are written: a write that covers a range whole rewrites it)."""
        write_ranges(self.unreadable, ranges)

    def write_image(self, image: Path, timeout: float = 600) -> None:
        """`image` written over the served disk through the socket (qemu-img, libnbd's client: what
        was never written in it is written as zeros); the medium errors cleared first."""
        self.unreadable.unlink(missing_ok=True)
        _qemu_img("convert", "-n", "-f", "raw", "-O", "raw", str(image), self.uri(), what=self.name, timeout=timeout)

    def read_image(self, out: Path, timeout: float = 300) -> None:
        """The served disk read whole through the socket into `out`, sparse (qemu-img leaves what
        reads as zeros a hole)."""
        _qemu_img("convert", "-f", "raw", "-O", "raw", self.uri(), str(out), what=self.name, timeout=timeout)


def write_ranges(path: Path, ranges) -> Path:
    """The unreadable-ranges file the filter's unreadable= and redo-writer verify --unreadable read
    (redo-writer/unreadable.c): a line "OFFSET LENGTH" a range, decimal, written whole."""
    return write_atomic(path, "".join(f"{off} {length}\n" for off, length in ranges))


def qemu_img() -> str:
    found = shutil.which("qemu-img")
    if found is None:
        raise SectorlabError("qemu-img is not installed: run scripts/bootstrap (Debian's qemu-utils)")
    return found


def _qemu_img(*args: str, what: str, timeout: float) -> None:
    proc = subprocess.run([qemu_img(), *args], capture_output=True, text=True, timeout=timeout)
    if proc.returncode:
        raise SectorlabError(f"{what}: qemu-img on its model's socket exited {proc.returncode}: "
                             f"{proc.stderr.strip()[-300:]}")


def nbd_uri(socket: Path | str) -> str:
    """The NBD URI of the default export on a Unix socket: nbd+unix:///?socket=PATH, the path
    percent-encoded (RFC 3986; NBD's URI spec), so that a '#', '?', '&', '%' or space in a
    directory's name ($TMPDIR's, a results directory's) is the path's and not the URI's: a raw '#'
    began a fragment and '&' another parameter. redo-writer, libnbd and QEMU decode it."""
    return "nbd+unix:///?socket=" + urllib.parse.quote(str(socket), safe="/")
