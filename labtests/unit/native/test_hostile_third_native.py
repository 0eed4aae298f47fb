"""The hostile-input campaign's third round on the C programs (issue 58): the device model's own files
against the disk nbdkit serves and against each other; the file of unreadable ranges, which the model's
`unreadable=` and `redo-writer verify --unreadable` now read with one reader (redo-writer/unreadable.c);
verify's `--acknowledged`; and the NBD device path's time bound (`--nbd-timeout`) and its refusals.

Each explicit case is one input of the campaign (docs/reliability.md counts them), and beside each
refused value is a valid one (a control). A case that hung before ends within its subprocess timeout
(TIMEOUT): what is asserted is how it ends, one line that names what happened, never how fast. No
case starts a lab or a guest: nbdkit, qemu-io and servers of the test's own on Unix sockets in its
temporary directory, each stopped by the test that started it."""

from __future__ import annotations

import errno
import json
import math
import os
import random
import shutil
import socket
import struct
import subprocess
import threading
import time
from pathlib import Path

import pytest

from labtests.conftest import require_program
from labtests.unit.native.test_hostile_native import _snapshot, nbdkit_once
from sectorlab.devices import build
from sectorlab.devices.server import nbd_uri
from sectorlab.errors import SectorlabError

TIMEOUT = 20           # seconds: a case that hangs fails here, it does not hold up the run
MIB = 1 << 20
MAX_RANGES = 65536     # unreadable.h: UNREADABLE_MAX_RANGES
MAX_BYTES = 64 * MAX_RANGES


def _run(argv, *, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True, errors="backslashreplace",
                          timeout=TIMEOUT, stdin=subprocess.DEVNULL)


def _one_line(proc: subprocess.CompletedProcess, says: str, status: int | None = 2) -> str:
    """The one line of stderr, which holds `says`; `status` None: any failing exit."""
    assert (proc.returncode != 0 if status is None else proc.returncode == status), (
        proc.returncode, proc.stdout[-500:], proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and proc.stderr.endswith("\n"), proc.stderr
    assert says in lines[0], proc.stderr
    return lines[0]


@pytest.fixture(scope="module")
def model_filter() -> str:
    require_program("nbdkit")
    try:
        return str(build.built(build.FILTER))
    except SectorlabError as e:
        pytest.skip(str(e))


@pytest.fixture(scope="module")
def nbd_writer(redo_writer) -> str:
    """The host's redo-writer with NBD support; a skip naming the reason when it has none."""
    probe = _run([redo_writer, "run", "--target", "nbd+unix:///?socket=/nonexistent/disk.sock"])
    if "without NBD support" in probe.stderr:
        pytest.skip("redo-writer is built without NBD support: libnbd-dev is not installed (scripts/bootstrap "
                    "installs it)")
    return redo_writer


def _nbdkit_once(model_filter: str, *args) -> subprocess.CompletedProcess:
    """nbdkit with the model over the plugin and parameters `args`, started and ended at once: what its
    start makes of them."""
    return nbdkit_once([f"--filter={model_filter}", *args, "spin-us=0"], run=_run)


# --- the model's files: never the served disk, never each other ------------------------------------

@pytest.fixture
def files(tmp_path) -> Path:
    """A served disk with bytes in it and other names for it (a hard link, a symbolic link), a trace
    that is there already with another name of its own, a FIFO and a directory."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "disk.img").write_bytes(random.Random(58).randbytes(64 * 1024))
    os.link(ws / "disk.img", ws / "hard.img")
    (ws / "link.img").symlink_to("disk.img")
    (ws / "other.trace").write_text("an earlier run's trace\n")
    os.link(ws / "other.trace", ws / "other-hard.trace")
    (ws / "to-other.trace").symlink_to("other.trace")
    os.mkfifo(ws / "fifo")
    (ws / "dir").mkdir()
    return ws


SERVED = "the disk nbdkit serves (file={ws}/"
FILE_CASES = [
    ("trace-is-the-disk", ["file", "file={ws}/disk.img", "trace={ws}/disk.img"],
     "trace={ws}/disk.img is " + SERVED + "disk.img; the same device and inode): expected a file of its own"),
    ("writelog-is-the-disk", ["file", "file={ws}/disk.img", "writelog={ws}/disk.img"],
     "writelog={ws}/disk.img is " + SERVED + "disk.img"),
    ("trace-is-a-hard-link-of-the-disk", ["file", "file={ws}/disk.img", "trace={ws}/hard.img"],
     "trace={ws}/hard.img is " + SERVED + "disk.img"),
    ("writelog-is-a-hard-link-of-the-disk", ["file", "file={ws}/disk.img", "writelog={ws}/hard.img"],
     "writelog={ws}/hard.img is " + SERVED + "disk.img"),
    ("disk-served-through-a-symlink", ["file", "file={ws}/link.img", "trace={ws}/disk.img"],
     "trace={ws}/disk.img is " + SERVED + "link.img"),
    ("disk-given-bare", ["file", "{ws}/disk.img", "writelog={ws}/hard.img"],   # the file plugin's magic key
     "writelog={ws}/hard.img is " + SERVED + "disk.img"),
    ("trace-and-writelog-one-new-name", ["memory", "size=1M", "trace={ws}/x.trace", "writelog={ws}/x.trace"],
     "trace={ws}/x.trace is the same file as writelog={ws}/x.trace (the same device and inode)"),
    ("trace-and-writelog-hard-links", ["memory", "size=1M", "trace={ws}/other.trace",
                                       "writelog={ws}/other-hard.trace"],
     "trace={ws}/other.trace is the same file as writelog={ws}/other-hard.trace"),
    ("unreadable-is-the-disk", ["file", "file={ws}/disk.img", "unreadable={ws}/disk.img"],
     "unreadable={ws}/disk.img is " + SERVED + "disk.img"),
    ("unreadable-is-the-trace", ["memory", "size=1M", "trace={ws}/t.trace", "unreadable={ws}/t.trace"],
     "unreadable={ws}/t.trace is the same file as trace={ws}/t.trace"),
    ("unreadable-is-the-writelog-hard-link", ["memory", "size=1M", "writelog={ws}/other.trace",
                                             "unreadable={ws}/other-hard.trace"],
     "unreadable={ws}/other-hard.trace is the same file as writelog={ws}/other.trace"),
    ("writelog-fifo", ["memory", "size=1M", "writelog={ws}/fifo"],
     "writelog={ws}/fifo: a FIFO: expected a regular file"),
    ("writelog-directory", ["memory", "size=1M", "writelog={ws}/dir"], "writelog={ws}/dir: a directory"),
    ("writelog-device", ["memory", "size=1M", "writelog=/dev/null"], "writelog=/dev/null: a device or special file"),
    ("trace-device", ["memory", "size=1M", "trace=/dev/null"], "trace=/dev/null: a device or special file"),
    ("writelog-symlink", ["memory", "size=1M", "writelog={ws}/to-other.trace"],
     "writelog={ws}/to-other.trace: a symbolic link: expected a regular file"),
    # controls: files of their own, beside the disk
    ("own-files", ["file", "file={ws}/disk.img", "trace={ws}/new.trace", "writelog={ws}/new.log",
                   "unreadable={ws}/new.unreadable"], None),
    ("trace-there-already", ["file", "file={ws}/link.img", "trace={ws}/other.trace"], None),
]


@pytest.mark.parametrize("args,says", [c[1:] for c in FILE_CASES], ids=[c[0] for c in FILE_CASES])
def test_the_model_writes_none_of_its_files_over_the_disk_or_each_other(model_filter, files, args, says):
    """The model's trace= was the served disk (cut to its header line, 174 bytes), its writelog= was
    written over it, and the two could be one file: each is refused by device and inode, in one line
    naming the option, its path and what it is, before any file is emptied; nothing is left behind."""
    disk = (files / "disk.img").read_bytes()
    before = _snapshot(files)
    proc = _nbdkit_once(model_filter, *(a.format(ws=files) for a in args))
    assert (files / "disk.img").read_bytes() == disk, "the served disk was written"
    if says is None:
        assert proc.returncode == 0, proc.stderr
        for a in args:
            if a.startswith("trace="):
                assert Path(a[6:].format(ws=files)).read_text().startswith("t_us,op,offset,"), "a trace of its own"
        return
    _one_line(proc, f"nbdkit: error: {says.format(ws=files)}", status=None)
    assert _snapshot(files) == before, "nothing emptied, written or made"


# --- the unreadable file: one reader, the model and verify alike ------------------------------------

def _ranges(n: int) -> bytes:
    return b"".join(b"%d 512\n" % (i * 4096) for i in range(n))


UNREADABLE_CASES = [
    ("minus", b"0 512\n-1 5\n", "line 2: expected two numbers, OFFSET and LENGTH"),
    ("plus", b"+1 5\n", "line 1: expected two numbers"),
    ("hex", b"0x10 5\n", "line 1: expected two numbers"),
    ("exponent", b"1e3 5\n", "line 1: expected two numbers"),
    ("past-64-bits", b"18446744073709551616 1\n", "line 1: expected two numbers"),
    ("sum-past-64-bits", b"18446744073709551615 1\n", "line 1: expected two numbers"),
    ("zero-length", b"4096 0\n", "line 1: expected two numbers"),
    ("three-numbers", b"1 2 3\n", "line 1: expected two numbers"),
    ("one-number", b"12\n", "line 1: expected two numbers"),
    ("a-word", b"5 x\n", "line 1: expected two numbers"),
    ("bad-after-good", b"0 512\n4096 512\n\nbad\n8192 512\n", "line 4: expected two numbers"),
    ("nul", b"0 512\0\n", "line 1: expected two numbers"),
    ("no-break-space", "0\u00a0512\n".encode(), "line 1: expected two numbers"),
    ("too-many-ranges", _ranges(MAX_RANGES + 1), f"line {MAX_RANGES + 1}: more than {MAX_RANGES} ranges"),
    ("too-large", b"0 1\n" * (MAX_BYTES // 4) + b"\n", f"is {MAX_BYTES + 1} bytes: expected at most {MAX_BYTES}"),
    ("fifo", "fifo", "is a FIFO: expected a regular file"),
    ("directory", "dir", "is a directory: expected a regular file"),
    ("link-to-dev-zero", "zero", "is a character device: expected a regular file"),
    # controls
    ("one-range", b"0 512\n", None),
    ("empty", b"", None),
    ("blank-lines", b"\n\n", None),
    ("crlf", b"0 512\r\n4096 4096\r\n", None),
    ("blanks-and-tabs", b"  0\t512  \n", None),
    ("no-last-newline", b"0 512", None),
    ("the-most-ranges", _ranges(MAX_RANGES), None),
    ("the-largest-range", b"18446744073709551614 1\n", None),
]


def _unreadable_file(tmp_path: Path, content) -> Path:
    path = tmp_path / "ranges"
    if content == "fifo":
        os.mkfifo(path)
    elif content == "dir":
        path.mkdir()
    elif content == "zero":
        path.symlink_to("/dev/zero")
    else:
        path.write_bytes(content)
    return path


@pytest.mark.parametrize("content,says", [c[1:] for c in UNREADABLE_CASES], ids=[c[0] for c in UNREADABLE_CASES])
def test_the_model_and_verify_read_an_unreadable_file_alike(model_filter, redo_writer, tmp_path, content, says):
    """The model took an unreadable= file leniently (up to its first bad line; "-1" as 2^64 - 1; hex and
    overflow dropped; past 65,536 ranges cut off) while verify refused it, and verify waited on a FIFO
    forever and read 100 million lines: a host and a guest could disagree about what a cut left. Both
    now read it with one reader: the same file is taken by both, or refused by both in the same words."""
    path = _unreadable_file(tmp_path, content)
    image = tmp_path / "log.img"
    image.write_bytes(bytes(65536))
    model = _nbdkit_once(model_filter, "memory", "size=1M", f"unreadable={path}")
    verify = _run([redo_writer, "verify", "--target", image, "--blocksize", 512, "--log-size", 65536,
                   "--unreadable", path])
    if says is None:
        assert model.returncode == 0, model.stderr
        assert verify.returncode == 0, verify.stderr
        return
    model_says = _one_line(model, f"nbdkit: error: unreadable={path} ", status=None).split(f"unreadable={path} ", 1)[1]
    verify_says = _one_line(verify, f"redo-writer: --unreadable {path} ").split(f"--unreadable {path} ", 1)[1]
    assert says in verify_says and model_says == verify_says


class RunningModel:
    """nbdkit with the model over a 1 MiB memory disk on a socket of its own, unreadable= at `ranges`
    (m.unreadable beside it unless given; absent at start); io() runs one qemu-io command on it."""

    def __init__(self, model_filter: str, directory: Path, ranges: Path | None = None):
        self.socket, self.log = directory / "m.sock", directory / "m.log"
        self.ranges = ranges or directory / "m.unreadable"
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen([shutil.which("nbdkit"), "-f", "-U", str(self.socket),
                                          f"--filter={model_filter}", "memory", "size=1M", "spin-us=0",
                                          f"unreadable={self.ranges}"], stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=log)
        deadline = time.monotonic() + TIMEOUT
        while not self.socket.exists():
            assert self.proc.poll() is None and time.monotonic() < deadline, self.log.read_text()
            time.sleep(0.01)

    def io(self, command: str) -> str:
        out = _run([require_program("qemu-io"), "-f", "raw", "-c", command, nbd_uri(self.socket)])
        return out.stdout + out.stderr

    def replace(self, content) -> None:
        """The ranges file replaced as sectorlab writes it (a new file renamed over the name), then
        time for the model to look again (it does at most every 50 ms)."""
        new = self.ranges.with_name("m.new")
        if content == "fifo":
            os.mkfifo(new)
        elif content == "socket":   # stat() sees it, open() fails (ENXIO), for root too
            listener = socket.socket(socket.AF_UNIX)
            listener.bind(str(new))
            listener.close()
        else:
            new.write_bytes(content)
        os.replace(new, self.ranges)
        time.sleep(0.12)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:   # a request thread held up for good (the old FIFO hang)
            self.proc.kill()
            self.proc.wait()


EIO = "failed: Input/output error"
RUNTIME_CASES = [
    ("fifo", "fifo", "is a FIFO: expected a regular file"),
    ("minus", b"4096 4096\n-1 5\n", "line 2: expected two numbers"),
    ("too-large", b"0 1\n" * (MAX_BYTES // 4 + 1), f"is {MAX_BYTES + 4} bytes: expected at most {MAX_BYTES}"),
    ("control", b"4096 4096\n", None),
]


@pytest.mark.parametrize("content,says", [c[1:] for c in RUNTIME_CASES], ids=[c[0] for c in RUNTIME_CASES])
def test_a_running_model_reads_its_unreadable_file_without_blocking_and_strictly(model_filter, tmp_path, content,
                                                                                says):
    """The file is read again when it changes: a FIFO put there blocked the request that looked (under
    the model's lock: every request after it); a bad file was taken in part. Now a refused file is one
    error in nbdkit's log, every read fails with EIO until a good file replaces it (the model cannot
    say which ranges the cut left), and then the disk reads again; a good file fails its ranges only."""
    require_program("qemu-io")
    model = RunningModel(model_filter, tmp_path)
    try:
        assert EIO not in model.io("read 0 8k")
        model.replace(content)
        if says is None:
            assert EIO not in model.io("read 0 512") and EIO in model.io("read 4096 512")
            return
        assert EIO in model.io("read 0 512"), "a refused file fails every read"
        assert f"error: unreadable={model.ranges} {says}" in model.log.read_text()
        model.replace(b"")
        assert EIO not in model.io("read 0 8k"), "a good file again: the disk reads"
    finally:
        model.stop()


def _looks(model: RunningModel, times: int) -> list[str]:
    """`times` reads, each after the model's next look at its file (at most every 50 ms); what each said."""
    said = []
    for _ in range(times):
        time.sleep(0.07)
        said.append(model.io("read 0 512"))
    return said


def test_an_unreadable_file_that_cannot_be_opened_is_said_once_and_its_removal_clears_it(model_filter, tmp_path):
    """A file that stat() sees and open() refuses (here a socket; EACCES for another user) left the
    model's memory of it empty, so it was never the file of the last look: under load it was opened
    again and an error logged every 50 ms. Now an unchanged bad file is said once, every read fails
    with EIO while it is there, and once it is removed the disk reads again (an absent file is no
    ranges)."""
    require_program("qemu-io")
    model = RunningModel(model_filter, tmp_path)
    try:
        assert EIO not in model.io("read 0 8k")
        model.replace("socket")
        assert all(EIO in said for said in _looks(model, 5)), "a file that cannot be read fails every read"
        errors = [line for line in model.log.read_text().splitlines() if f"error: unreadable={model.ranges} " in line]
        assert len(errors) == 1 and "cannot be read: open: " in errors[0], errors
        model.ranges.unlink()
        assert not any(EIO in said for said in _looks(model, 2)), "no file: no ranges, the disk reads"
    finally:
        model.stop()


def test_what_stat_says_of_the_unreadable_file_is_a_change_of_its_own(model_filter, tmp_path):
    """stat() failing one way and then another (ENOENT, ENOTDIR: a directory on the way that became
    a file) was one state, "no file": the model never looked again. Now each is a change: a file it
    cannot reach fails every read as it does at start, and it reads again once the path is absent."""
    require_program("qemu-io")
    on_the_way = tmp_path / "sub"
    model = RunningModel(model_filter, tmp_path, ranges=on_the_way / "m.unreadable")
    try:
        assert EIO not in model.io("read 0 8k")
        on_the_way.write_bytes(b"")
        assert all(EIO in said for said in _looks(model, 2)), "a path it cannot reach fails every read"
        errors = [line for line in model.log.read_text().splitlines() if f"error: unreadable={model.ranges} " in line]
        assert len(errors) == 1 and "cannot be read: open: Not a directory" in errors[0], errors
        on_the_way.unlink()
        assert not any(EIO in said for said in _looks(model, 2)), "no file again: the disk reads"
    finally:
        model.stop()


def test_a_start_that_fails_writing_the_trace_takes_away_the_files_it_made(model_filter, tmp_path):
    """When the trace could not be started (its first line, after the write log's), the write log
    stayed open and both files the start had made were left behind, where a refused start takes them
    away. Now every failing step of the start cleans up alike. (A file size limit of 100 bytes: the
    write log's first line fits, the trace's does not; a file that was there already stays.)"""
    import resource
    import signal

    def limit_file_size():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (100, 100))

    writelog, trace, kept = tmp_path / "w.log", tmp_path / "t.csv", tmp_path / "kept.log"
    kept.write_bytes(b"there before")
    for log in (writelog, kept):
        proc = nbdkit_once([f"--filter={model_filter}", "memory", "size=1M", "spin-us=0", f"writelog={log}",
                            f"trace={trace}"], preexec_fn=limit_file_size)
        _one_line(proc, f"nbdkit: error: trace={trace}: File too large", status=None)
        assert not writelog.exists() and not trace.exists(), sorted(p.name for p in tmp_path.iterdir())
        assert kept.exists(), "a write log that was there before the start is not taken away"


def _cut_state_with_unreadable_ranges():
    """A real cut (sectorlab/crash/powerloss.py) on the model's own decisions that leaves ranges
    unreadable: 512-byte writes into 4 KiB sectors of an unprotected drive, cut while their sectors
    are written back (the last 29 us of each write: 4 KiB at 140 MB/s)."""
    from sectorlab.crash import powerloss
    from sectorlab.devices import trace
    requests = "".join(f"{i} write {i * 8192 + 512} 512\n" for i in range(8))
    proc = subprocess.run([str(build.built(build.SIMULATE)), "write=fixed:100", "write-mbps=140",
                           "physical-sector=4096", "channels=8"], input=requests, capture_output=True, text=True,
                          timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    rows = trace.parse(proc.stdout)
    rules = powerloss.Rules("test", "unprotected", "none", False, 4096, 0.0)
    for seed in range(100):
        state = powerloss.cut(rows, rules, 90, random.Random(seed))
        if state.unreadable:
            return state
    raise AssertionError("no cut left a range unreadable")


def test_what_sectorlab_writes_into_the_unreadable_file_still_parses(model_filter, redo_writer, tmp_path):
    """The two writers of the file: crash/run.py verify() for redo-writer verify, and crash/lab.py and
    dblab.py for the model ("OFFSET LENGTH\\n" a range, written whole). A real cut's ranges, through the
    first as it is, and in the second's format into a model at start: both take them."""
    from sectorlab.crash import devicepath as run
    state = _cut_state_with_unreadable_ranges()
    image = tmp_path / "cut.img"
    image.write_bytes(bytes(65536))
    got = run.verify(image, list(state.unreadable), 512, 0, 512)
    assert got["unreadable_blocks"] == sum(length // 512 for _, length in state.unreadable)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cut.img"]  # its ranges file removed after
    ranges = tmp_path / "disk.unreadable"
    ranges.write_text("".join(f"{off} {length}\n" for off, length in state.unreadable))  # crash/lab.py's format
    proc = _nbdkit_once(model_filter, "memory", "size=1M", f"unreadable={ranges}")
    assert proc.returncode == 0, proc.stderr


# --- verify --acknowledged ------------------------------------------------------------------------

PER_PASS = 256 * 4080                 # a 1 MiB log of 4 KiB blocks: redo bytes a pass
MOST = PER_PASS * 0xFFFFFFFF          # its 32-bit sequence numbers' worth of passes
ACK_CASES = [
    ("all-ones", ["--acknowledged", (1 << 64) - 1, "--redo-per-txn", 4080], "--acknowledged 18446744073709551615 "
     "is past any redo position a log of --log-size 1048576 in 4096-byte blocks reaches"),
    ("one-past-the-most", ["--acknowledged", MOST + 1, "--redo-per-txn", 4080], f"--acknowledged {MOST + 1} is past"),
    # controls: the most (its commits counted exactly), a wrapped log's position past --log-size, none lost
    ("the-most", ["--acknowledged", MOST, "--redo-per-txn", 4080], None),
    ("past-the-log-size", ["--acknowledged", 3 * MIB, "--redo-per-txn", 4080], None),
    ("zero", ["--acknowledged", 0, "--redo-per-txn", 4080], None),
]


@pytest.mark.parametrize("args,says", [c[1:] for c in ACK_CASES], ids=[c[0] for c in ACK_CASES])
def test_an_acknowledged_position_no_log_reaches_is_refused_and_losses_never_wrap(redo_writer, tmp_path, args, says):
    """--acknowledged 2^64 - 1 on a 1 MiB log was taken: 18446744073709551615 bytes lost in 0 commits
    (lost + redo_per_txn - 1 wrapped). A redo position counts on across the log's passes (a wrapped
    log's is past --log-size), so the bound is the redo its 2^32 - 1 passes hold; within it the
    commits lost are the bytes lost over the commit's size, rounded up, exactly."""
    image = tmp_path / "log.img"
    image.write_bytes(bytes(MIB))
    proc = _run([redo_writer, "verify", "--target", image, "--blocksize", 4096, "--log-size", MIB, *args,
                 "--output", "json"])
    if says is not None:
        _one_line(proc, f"redo-writer: {says}")
        assert proc.stdout == ""
        return
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    acknowledged = int(args[1])
    assert (got["recovered_to"], got["lost_bytes"]) == (0, acknowledged)
    assert got["lost_commits"] == math.ceil(acknowledged / 4080) == -(-acknowledged // 4080)


# --- the NBD device path: bounded in time, and saying which end refused --------------------------

NBD_SIZE = 64 * MIB
TRANSMISSION_FLAGS = 1 | 4 | 8          # has flags, takes flushes, takes FUA
OPT_GO, OPT_ABORT, OPT_INFO = 7, 2, 6
REP_ACK, REP_INFO, REP_ERR_UNSUP, REP_ERR_UNKNOWN = 1, 3, 0x80000001, 0x80000006
OPT_REPLY_MAGIC, SIMPLE_REPLY_MAGIC = 0x3E889045565A9, 0x67446698


def _recv(c: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        got = c.recv(n - len(data))
        if not got:
            raise ConnectionError("the client went away")
        data += got
    return data


class FakeNBD:
    """An NBD server of the test's own on a Unix socket, in threads. `silent` accepts and says nothing;
    `newstyle` (fixed newstyle, NBD_OPT_GO) and `oldstyle` complete their handshake (a 64 MiB export
    that takes FUA and flushes), answer the first `answers` requests and then no more; `refuse` answers
    NBD_OPT_GO with "no such export"; `garbage` greets with bytes that are no NBD magic; `backlog`
    listens, never accepts, and its backlog is full."""

    def __init__(self, path: Path, mode: str, answers: int = 0):
        self.path, self.mode, self.answers = path, mode, answers
        self.stopping = threading.Event()
        self.held: list[socket.socket] = []
        self.listener = socket.socket(socket.AF_UNIX)
        self.listener.bind(str(path))
        self.listener.listen(0 if mode == "backlog" else 8)
        if mode == "backlog":
            for _ in range(64):   # connections of its own until the kernel says the backlog is full
                c = socket.socket(socket.AF_UNIX)
                c.setblocking(False)
                self.held.append(c)
                if c.connect_ex(str(path)) in (errno.EAGAIN, errno.EWOULDBLOCK):
                    break
            return
        self.listener.settimeout(0.1)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                c, _ = self.listener.accept()
            except (TimeoutError, OSError):
                continue
            self.held.append(c)
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c: socket.socket) -> None:
        """Ends with the connection closed once the client says it is leaving (NBD_CMD_DISC), as a
        real server does; a silent or stalled one keeps it open until the test ends."""
        try:
            if self.mode == "oldstyle":
                c.sendall(b"NBDMAGIC" + struct.pack(">QQI", 0x00420281861253, NBD_SIZE, TRANSMISSION_FLAGS)
                          + bytes(124))
            elif self.mode in ("newstyle", "refuse"):
                if not self._handshake(c):
                    return
            elif self.mode == "garbage":
                c.sendall(b"HTTP/1.0 400 Bad Request\r\n\r\n")
                return
            else:
                return   # silent
            self._transmission(c)
        except OSError:
            pass

    def _reply(self, c, option: int, kind: int, data: bytes = b"") -> None:
        c.sendall(struct.pack(">QIII", OPT_REPLY_MAGIC, option, kind, len(data)) + data)

    def _handshake(self, c) -> bool:
        c.sendall(b"NBDMAGIC" + b"IHAVEOPT" + struct.pack(">H", 1 | 2))   # fixed newstyle, no zeroes
        _recv(c, 4)
        while True:
            _, option, length = struct.unpack(">QII", _recv(c, 16))
            _recv(c, length)
            if option == OPT_ABORT:
                return False
            if option not in (OPT_GO, OPT_INFO):
                self._reply(c, option, REP_ERR_UNSUP)
            elif self.mode == "refuse":
                self._reply(c, option, REP_ERR_UNKNOWN, b"this server serves no such export")
            else:
                self._reply(c, option, REP_INFO, struct.pack(">HQH", 0, NBD_SIZE, TRANSMISSION_FLAGS))
                self._reply(c, option, REP_ACK)
                if option == OPT_GO:
                    return True

    def _transmission(self, c) -> None:
        answered = 0
        while True:
            _, _, kind, handle, _, length = struct.unpack(">IHHQQI", _recv(c, 28))
            if kind == 1:
                _recv(c, length)
            if kind == 2:
                c.close()
                return
            if answered < self.answers:
                c.sendall(struct.pack(">IIQ", SIMPLE_REPLY_MAGIC, 0, handle))
                answered += 1

    def close(self) -> None:
        self.stopping.set()
        for s in [self.listener, *self.held]:
            s.close()


@pytest.fixture
def fake_nbd(tmp_path):
    started: list[FakeNBD] = []

    def start(mode: str, answers: int = 0) -> FakeNBD:
        server = FakeNBD(tmp_path / f"fake{len(started)}.sock", mode, answers)
        started.append(server)
        return server

    yield start
    for server in started:
        server.close()


RUN = ("--blocksize", 4096, "--redo-per-txn", 4080, "--log-size", MIB, "--transactions", 20)
NO_REPLY = "nbd_pwrite: the server on {sock} sent no reply to the write within 1 s (--nbd-timeout)"
STALL_CASES = [
    ("accepts-and-says-nothing", "silent", 0, [], 2, "--target {uri}: the server on {sock} "
     "accepted the connection and did not complete the NBD handshake within 1 s (--nbd-timeout)"),
    ("never-accepts", "backlog", 0, [], 2, "the server on {sock} did not accept the connection within 1 s "
     "(--nbd-timeout)"),
    ("newstyle-never-replies", "newstyle", 0, [], 1, NO_REPLY),
    ("newstyle-never-replies-spinning", "newstyle", 0, ["--reply-spin-us", 1000], 1, NO_REPLY),
    ("oldstyle-never-replies", "oldstyle", 0, [], 1, NO_REPLY),
    ("oldstyle-never-replies-spinning", "oldstyle", 0, ["--reply-spin-us", 1000], 1, NO_REPLY),
    ("flush-never-answered", "newstyle", 1, ["--sync", "fdatasync"], 1,
     "nbd_flush: the server on {sock} sent no reply to the flush within 1 s (--nbd-timeout)"),
]


@pytest.mark.long
@pytest.mark.parametrize("mode,answers,args,status,says", [c[1:] for c in STALL_CASES],
                         ids=[c[0] for c in STALL_CASES])
def test_an_nbd_server_that_stalls_ends_the_run_in_one_line(nbd_writer, fake_nbd, mode, answers, args, status, says):
    """A server that accepted and never answered, or answered the handshake (newstyle or oldstyle) and
    then no request, held `redo-writer run` forever, with --reply-spin-us too: each reply now has
    --nbd-timeout, and the run ends in one line naming the socket and the wait (exit 2 before the
    run, 1 for a run whose only member failed)."""
    server = fake_nbd(mode, answers)
    proc = _run([nbd_writer, "run", "--target", nbd_uri(server.path), *RUN, "--nbd-timeout", 1,
                 *args])
    _one_line(proc, says.format(sock=server.path, uri=nbd_uri(server.path)), status=status)


@pytest.mark.long
def test_a_mirror_member_that_stalls_mid_run_is_dropped_and_the_run_goes_on(nbd_writer, fake_nbd, tmp_path):
    """The fifth write answered, the sixth never: that member fails after --nbd-timeout, named with its
    socket, and the file beside it takes the rest (exit 3), as a member that failed with EIO is."""
    server = fake_nbd("newstyle", answers=5)
    log = tmp_path / "redo.log"
    proc = _run([nbd_writer, "run", "--target", nbd_uri(server.path), "--mirror", log, *RUN,
                 "--nbd-timeout", 1, "--output", "json"])
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.splitlines() == [
        f"redo-writer: write of 4096 bytes at offset {5 * 4096} of {nbd_uri(server.path)} failed (log "
        f"write 6): " + NO_REPLY.format(sock=server.path),
        f"redo-writer: member {nbd_uri(server.path)} dropped; going on with {log}"], proc.stderr
    nbd, file = json.loads(proc.stdout)["members"]
    assert nbd["failed"] and nbd["writes"] == 5 and file["writes"] == 20


@pytest.fixture
def strict_exports(tmp_path):
    """nbdkit serving only the export `good` (its exportname filter, strict): any other name it refuses."""
    require_program("nbdkit")
    sock = tmp_path / "strict.sock"
    proc = subprocess.Popen([shutil.which("nbdkit"), "-f", "-U", str(sock), "--filter=exportname", "memory",
                             str(NBD_SIZE), "exportname-strict=true", "exportname=good"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + TIMEOUT
    while not sock.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.skip(f"nbdkit's exportname filter did not start: {proc.stderr.read().decode()[-300:]}")
        time.sleep(0.01)
    yield sock
    proc.terminate()
    proc.wait(timeout=10)


def test_an_export_the_server_refuses_is_not_a_socket_nothing_serves(nbd_writer, strict_exports):
    """A server that answered and refused the export was reported as "nothing serves socket" (libnbd
    gives ENOENT for both): the line now says the server refused it and what it said."""
    proc = _run([nbd_writer, "run", "--target", nbd_uri(strict_exports).replace(":///?", ":///bad?"), *RUN])
    line = _one_line(proc, f"the server on {strict_exports} refused the NBD handshake for export 'bad': ")
    assert "has no export named 'bad'" in line and "nothing serves" not in line


def test_an_export_a_server_of_ones_own_refuses_says_so(nbd_writer, fake_nbd):
    server = fake_nbd("refuse")
    proc = _run([nbd_writer, "run", "--target", nbd_uri(server.path).replace(":///?", ":///disk?"), *RUN])
    line = _one_line(proc, f"the server on {server.path} refused the NBD handshake for export 'disk': ")
    assert "nothing serves" not in line


def test_a_server_that_greets_with_no_nbd_magic_is_the_servers_doing(nbd_writer, fake_nbd):
    """libnbd reads the server's greeting as soon as it takes the socket, so a greeting that is no NBD
    magic can fail nbd_aio_connect_socket itself: that is the server's handshake, not this host (the
    socket is libnbd's then, closed by it, never closed twice). Its line names the server."""
    server = fake_nbd("garbage")
    for _ in range(8):   # the greeting comes before or after libnbd takes the socket: both are the server's
        proc = _run([nbd_writer, "run", "--target", nbd_uri(server.path), *RUN])
        line = _one_line(proc, f"the server on {server.path} refused the NBD handshake for export '': ")
        assert "NBD magic" in line and "not the server's doing" not in line, line


def test_the_export_it_serves_is_written(nbd_writer, strict_exports):
    """The control beside the refused export: the same server, the export it serves."""
    proc = _run([nbd_writer, "run", "--target", nbd_uri(strict_exports).replace(":///?", ":///good?"), *RUN])
    assert proc.returncode == 0, proc.stderr


def test_a_server_of_ones_own_that_answers_every_request_is_written(nbd_writer, fake_nbd):
    """The control beside the stalls: the same fake server answering everything takes the whole run (the
    stalls are its silence, not its handshake)."""
    server = fake_nbd("newstyle", answers=10**9)
    proc = _run([nbd_writer, "run", "--target", nbd_uri(server.path), *RUN, "--output", "json"])
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["members"][0]["nbd"]["fua_writes"] == 20


def test_a_socket_nothing_listens_on_is_still_nothing_serves(nbd_writer, tmp_path):
    """The control beside the refused export: connect() itself refused."""
    dead = socket.socket(socket.AF_UNIX)
    dead.bind(str(tmp_path / "dead.sock"))
    try:
        proc = _run([nbd_writer, "run", "--target", nbd_uri(tmp_path / "dead.sock"), *RUN])
    finally:
        dead.close()
    _one_line(proc, f"nothing serves socket {tmp_path}/dead.sock (connect: Connection refused)")


@pytest.mark.parametrize("value,says", [("0", "--nbd-timeout 0 is out of range: expected 1 to 3600"),
                                        ("3601", "--nbd-timeout 3601 is out of range: expected 1 to 3600"),
                                        ("1s", "--nbd-timeout '1s' is not a whole number"),
                                        ("-1", "--nbd-timeout '-1' is not a whole number"),
                                        ("3600", None)])
def test_the_nbd_timeout_is_whole_seconds_in_range(redo_writer, value, says):
    proc = _run([redo_writer, "run", "--target", "null:", "--transactions", 1, "--nbd-timeout", value])
    if says is None:
        assert proc.returncode == 0, proc.stderr
    else:
        _one_line(proc, f"redo-writer: {says}")


# The model itself (simulate and the filter share model.c's check): a write buffer of part of a
# write unit is refused, naming the value, the unit and the nearest multiples it holds; it was rounded
# down to whole units, unsaid (6000 bytes held one unit), then refused in words naming neither.
UNITS_OF_4096 = "is not a whole number of write-unit=4096 units: expected a multiple of 4096, such as"


@pytest.mark.parametrize("buffer, says", [
    ("6000", f"write-buffer=6000 {UNITS_OF_4096} 4096 or 8192"),
    ("4097", f"write-buffer=4097 {UNITS_OF_4096} 4096 or 8192"),
    ("2000", f"write-buffer=2000 {UNITS_OF_4096} 4096 or 0 (no buffer)"),
    ("16777217", f"write-buffer=16777217 {UNITS_OF_4096} 16777216 (4096 units, the most it holds)"),
    ("8192", None), ("4096", None), ("16777216", None)])
def test_the_model_refuses_a_write_buffer_of_part_of_a_unit(buffer, says):
    from sectorlab.devices import build
    proc = subprocess.run([str(build.built(build.SIMULATE)), "write=fixed:20", "write-unit=4096",
                           f"write-buffer={buffer}"], input="0 write 0 4096\n", capture_output=True, text=True,
                          timeout=30)
    if says is None:
        assert proc.returncode == 0, proc.stderr
    else:
        assert proc.returncode == 2 and proc.stdout == "", (proc.returncode, proc.stdout)
        assert proc.stderr.strip().splitlines() == [f"simulate: {says}"]
