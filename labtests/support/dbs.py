"""Real databases and filesystems on a lab data disk, for the cross-check scenarios
(labtests/databases/test_cross_checks.py): a filesystem made and mounted on the disk, a MariaDB server started
by hand on it (Unix socket only), PostgreSQL's pg_test_fsync and the guest's own block-layer
counters. Everything is undone after, even when the scenario fails: the server stopped, the
filesystem unmounted and its signature wiped, so that later scenarios find the disk blank.

The guest image provides the programs (packer/scripts/common/databases.sh): MariaDB and a data
directory template, postgresql-15's pg_test_fsync, sysbench and xfsprogs.
"""

from __future__ import annotations

import contextlib
import re
import shlex
import statistics
from dataclasses import dataclass

from sectorlab.guest.scripts import guest_script
from sectorlab.paths import slug

MOUNT_ROOT = "/mnt/sectorlab-xcheck"
RUN_ROOT = "/run/sectorlab-xcheck"
MARIADB_TEMPLATE = "/usr/local/share/sectorlab/mariadb-datadir"
PG_TEST_FSYNC = "/usr/lib/postgresql/15/bin/pg_test_fsync"
FILESYSTEMS = ("ext4", "xfs")


class CrossCheckError(AssertionError):
    """A database or filesystem step in the guest failed; the message carries what it printed."""


def root(guest, script: str, *args, timeout: float = 300.0) -> str:
    """Run a shell script as root in the guest; its stdout, or CrossCheckError with its output."""
    result = guest.run("sudo -n sh -c", script, "xcheck", *args, timeout=timeout)
    if not result.ok:
        raise CrossCheckError(f"{guest.name}: exited {result.rc}: {result.stderr.strip() or result.stdout.strip()}")
    return result.stdout


# ---- a filesystem on the disk ---------------------------------------------------------------

# The guest-side scripts are files of sectorlab/inguest/sh/ (each says what it does and takes).
_MOUNT = guest_script("xcheck-mount.sh")
_UNMOUNT = guest_script("xcheck-unmount.sh")


@contextlib.contextmanager
def filesystem(guest, dev_path: str, fs: str, name: str):
    """`fs` made on the whole disk and mounted; its mount point. The disk must be blank (not mounted,
    no signature): the lab's data disks are, between scenarios. Unmounted and wiped after."""
    mnt = f"{MOUNT_ROOT}/{slug(name)}"
    root(guest, _MOUNT, dev_path, fs, mnt)
    try:
        yield mnt
    finally:
        root(guest, _UNMOUNT, dev_path, mnt)


# ---- MariaDB --------------------------------------------------------------------------------

# Started and waited for, and killed, by databases.sh's functions, as the crash judges' servers are.
_MARIADB_START = guest_script("xcheck-mariadb-start.sh")
_MARIADB_STOP = guest_script("xcheck-mariadb-stop.sh")


@dataclass
class MariaDB:
    guest: object
    run_dir: str
    datadir: str
    error_log: str = ""  # the server's error log, read when it stopped
    stopped: bool = False

    @property
    def socket(self) -> str:
        return f"{self.run_dir}/mariadb.sock"

    def sql(self, statement: str, timeout: float = 120.0) -> str:
        """One statement through the mariadb client as root over the socket; tab-separated rows."""
        cmd = f"mariadb --socket={shlex.quote(self.socket)} -uroot -N -B -e {shlex.quote(statement)}"
        return root(self.guest, cmd, timeout=timeout)

    def stop(self) -> None:
        """Shut the server down (idempotent); its error log is kept in `error_log`."""
        if not self.stopped:
            self.error_log = root(self.guest, _MARIADB_STOP, self.run_dir, timeout=120)
            self.stopped = True

    def error_log_now(self) -> str:
        return root(self.guest, f"cat {shlex.quote(self.run_dir)}/error.log")

    def status(self, variable: str) -> int:
        out = self.sql(f"SHOW GLOBAL STATUS LIKE '{variable}'").split()
        if len(out) != 2:
            raise CrossCheckError(f"{self.guest.name}: no global status {variable!r} in MariaDB: {out}")
        return int(out[1])


@contextlib.contextmanager
def mariadb(guest, datadir_parent: str, name: str, extra_config: str = ""):
    """A MariaDB server with its data directory (and so its redo log, ib_logfile0) under
    `datadir_parent` (the mounted disk), on a Unix socket only; stopped after (or before, by
    `stop`), its error log kept in `error_log`. A server that does not start raises
    CrossCheckError with the last lines of its error log."""
    run = f"{RUN_ROOT}/{slug(name)}"
    db = MariaDB(guest, run, f"{datadir_parent}/mysql")
    try:
        root(guest, _MARIADB_START, datadir_parent, run, extra_config, MARIADB_TEMPLATE, timeout=240)
        yield db
    finally:
        db.stop()


_LOG_BLOCK = re.compile(r"InnoDB: File system buffers for log (disabled|enabled) \(block size=(\d+) bytes\)")


def mariadb_log_block_size(error_log: str) -> tuple[int, str]:
    """The block size MariaDB's InnoDB chose for its redo log, and whether it bypasses the page
    cache for it ("disabled": O_DIRECT), from its error log line
    'InnoDB: File system buffers for log disabled (block size=4096 bytes)'."""
    found = _LOG_BLOCK.findall(error_log)
    if not found:
        tail = "\n".join(error_log.strip().splitlines()[-8:])
        raise CrossCheckError(f"no 'File system buffers for log ... (block size=N bytes)' line in MariaDB's error "
                              f"log; its last lines:\n{tail}")
    mode, size = found[-1]
    return int(size), mode


_NOTHING_LEFT = guest_script("xcheck-leftovers.sh")


def leftovers(guest) -> dict[str, str]:
    """What the cross-checks could have left behind in the guest: database or load processes, their
    sockets, mounts of the lab's data disks; only what is there."""
    out = root(guest, _NOTHING_LEFT)
    found = {k: v.strip() for k, v in (line.split("=", 1) for line in out.splitlines())}
    return {k: v for k, v in found.items() if v}


def assert_nothing_left(guest, after: str) -> None:
    left = leftovers(guest)
    if left:
        raise CrossCheckError(f"{guest.name}: left behind after {after}: {left}")


# ---- the guest's own view of the disk's I/O -----------------------------------------------------

@dataclass
class IoDevice:
    stat_name: str  # the /sys/block entry whose stat counts the disk's I/O
    major: int      # the disk's device number, as block_bio_queue names it
    minor: int


_IO_DEVICE = guest_script("xcheck-io-device.sh")


def io_device(guest, dev_path: str) -> IoDevice:
    """Where the disk's I/O is counted and how the block layer's trace names it."""
    stat_name, devno = root(guest, _IO_DEVICE, dev_path).split()
    major, minor = devno.split(":")
    return IoDevice(stat_name, int(major), int(minor))


def window(said: str) -> dict[str, int]:
    """A disk's counters as TRACE_ON or TRACE_OFF printed them, read at once after the tracepoint
    went on or off (so that no SSH round trip lies between the trace's window and the counters'):
    /sys/block/NAME/stat's write requests and 512-byte sectors written since the disk appeared
    (Documentation/block/stat.rst), the write requests in flight then (inflight) and the largest
    request the disk takes (queue/max_sectors_kb)."""
    lines = dict(line.split(" ", 1) for line in said.splitlines() if line.startswith("sectorlab-"))
    try:
        stat, inflight = lines["sectorlab-stat"].split(), lines["sectorlab-inflight"].split()
        return {"writes": int(stat[4]), "write_sectors": int(stat[6]), "inflight_writes": int(inflight[1]),
                "max_request_bytes": int(lines["sectorlab-max-sectors-kb"]) * 1024}
    except (KeyError, IndexError, ValueError) as e:
        raise CrossCheckError(f"the disk's counters are not in what the trace script printed ({e}): "
                              f"{said[:400]!r}") from None


# The block layer's bio-submission tracepoint, for the size of every write submitted to the disk
# (the counters give only sums): on before the workload, off after it, the trace kept; given the
# disk's kernel name, each prints the disk's counters at once after (window). Bios, not requests: a
# request may merge several, and an NVMe multipath head has no requests of its own.
TRACE_ON = guest_script("xcheck-trace-on.sh")
TRACE_OFF = guest_script("xcheck-trace-off.sh")
_BIO = re.compile(r"block_bio_queue: (\d+),(\d+) (\S+) \d+ \+ (\d+)")


_MARK = re.compile(r"tracing_mark_write: (sectorlab-window-(?:start|end))")


def traced_write_sizes(trace: str, major: int, minor: int) -> list[int]:
    """Bytes of each write bio submitted to the device major:minor in a block_bio_queue trace
    ('block_bio_queue: 254,48 WS 2048 + 8 [mariadbd]'; sectors of 512 bytes); empty flushes are
    not writes of data."""
    return [size for _, size in traced_writes(trace, major, minor)]


def traced_writes(trace: str, major: int, minor: int) -> list[tuple[str, int]]:
    """(where, bytes) of each write bio to major:minor, in the trace's order: where is "before" the
    trace's sectorlab-window-start mark (TRACE_ON's, after the counters were read: such a write may
    be in them already), "after" its sectorlab-window-end mark (TRACE_OFF's, before the counters
    were read: such a write may not be in them yet), else "inside"; a trace without a mark is all
    inside."""
    out, where = [], "before" if "sectorlab-window-start" in trace else "inside"
    for line in trace.splitlines():
        if m := _MARK.search(line):
            where = "inside" if m.group(1).endswith("start") else "after"
            continue
        for ma, mi, rwbs, sectors in _BIO.findall(line):
            if (int(ma), int(mi)) == (major, minor) and "W" in rwbs and int(sectors) > 0:
                out.append((where, int(sectors) * 512))
    return out


def latency_summary(samples_us: list[float]) -> dict:
    """count, mean, stddev, p50 and p99 in the shape of redo-writer's report (so that
    sectorlab.stats.welch compares the two)."""
    ordered = sorted(samples_us)
    n = len(ordered)
    if n < 2:
        raise CrossCheckError(f"{n} latency sample(s): a comparison needs at least 2")

    def pct(q: float) -> float:
        return ordered[min(n - 1, int(q * n))]

    return {"count": n, "mean_us": statistics.fmean(ordered), "stddev_us": statistics.stdev(ordered),
            "p50_us": statistics.median(ordered), "p99_us": pct(0.99), "max_us": ordered[-1]}


# ---- pg_test_fsync ----------------------------------------------------------------------------

# pg_test_fsync's O_DIRECT writes, in the order it makes them: its open_datasync / open_sync tests
# write 8 kB (one or two at a time), then "Compare open_sync with different write sizes" writes
# 16 kB, 8 kB, 4 kB, 2 kB, 1 kB (PostgreSQL 15, src/bin/pg_test_fsync/pg_test_fsync.c).
PG_DIRECT_WRITE_SIZES = (8192, 16384, 8192, 4096, 2048, 1024)
_PG_RESULT = re.compile(r"^\s+(\S.*?)\s{2,}([\d.]+) ops/sec")
_PG_FAILED = re.compile(r"^\s+(\S.*?)\s+(?:pg_test_fsync: error: )?\w+ failed: (.+)$")


def parse_pg_test_fsync(text: str) -> tuple[dict[str, float], str | None, str | None]:
    """pg_test_fsync's output: {"SECTION / TEST": ops/sec}, the test it died at and what it said.
    Sections are the unindented lines ending in ':' ("Compare file sync methods using one 8kB
    write:"); a failure is the test's label followed by "pg_test_fsync: error: write failed:
    Invalid argument" (the label on stdout, the error on stderr: stdout is read first)."""
    section, results, failed_at, error = "", {}, None, None
    for line in text.splitlines():
        if line and not line[0].isspace() and line.rstrip().endswith(":"):
            section = line.rstrip().rstrip(":")
        elif m := _PG_RESULT.match(line):
            results[f"{section} / {m.group(1)}"] = float(m.group(2))
        elif m := _PG_FAILED.match(line):
            failed_at, error = f"{section} / {m.group(1)}", m.group(2).strip()
    return results, failed_at, error


@dataclass
class PgTestFsync:
    results: dict[str, float]   # test line -> ops/sec, as printed
    failed_at: str | None       # the test line it died at
    error: str | None           # what it said ("Invalid argument")
    rc: int
    output: str


# One guest command for a VM's disks (cross_check_batch; what it does in its file's header).
_BATCH = guest_script("xcheck-batch.sh")


def _sections(text: str, fields: int) -> list[tuple[list[str], str]]:
    """The guest batches' output: ([field, ...], body) for each "=== FIELD ..." line of exactly
    `fields` fields, the body being the lines up to the next such line (any other line, one that
    starts with "=== " too, is body)."""
    found: list[tuple[list[str], list[str]]] = []
    for line in text.splitlines():
        head = line[4:].split() if line.startswith("=== ") else []
        if len(head) == fields:
            found.append((head, []))
        elif found:
            found[-1][1].append(line)
    return [(head, "\n".join(body)) for head, body in found]


@dataclass
class BatchDisk:
    """What one disk went through in cross_check_batch: each step's exit status and output."""
    mount: tuple[int, str]    # a disk that was not blank is refused here, and left as it was
    unmount: tuple[int, str]  # unmounted and wiped (only after a mount that succeeded)
    pg_test_fsync: PgTestFsync | None = None
    mariadb: tuple[int, str] | None = None  # the start's exit status; its output and the error log


def cross_check_batch(guest, disks: dict[str, tuple[str, bool, bool]], fs: str = "ext4", seconds: int = 1,
                      timeout: float = 600.0) -> dict[str, BatchDisk]:
    """{name: (device path, run pg_test_fsync, start MariaDB)} -> {name: BatchDisk}, in one guest
    command (see _BATCH): `fs` on every disk, pg_test_fsync -s SECONDS on the chosen ones at once,
    then MariaDB started and stopped on the chosen ones in turn; all undone after."""
    if fs not in FILESYSTEMS:
        raise CrossCheckError(f"no filesystem {fs!r}: expected one of {', '.join(FILESYSTEMS)}")
    args = []
    for name, (dev_path, pg, maria) in disks.items():
        tag = slug(name)
        args += [tag, dev_path, f"{MOUNT_ROOT}/{tag}", f"{RUN_ROOT}/{tag}", int(pg), int(maria)]
    text = root(guest, _BATCH, f"{RUN_ROOT}/batch", seconds, PG_TEST_FSYNC, MARIADB_TEMPLATE, fs,
                _MOUNT, _UNMOUNT, _MARIADB_START, _MARIADB_STOP, *args, timeout=timeout)
    steps: dict[str, dict[str, tuple[int, str]]] = {}
    for (tag, step, rc), body in _sections(text, 3):
        steps.setdefault(tag, {})[step] = (int(rc), body)
    found = {}
    for name in disks:
        got = steps.get(slug(name), {})
        if "mount" not in got or (got["mount"][0] == 0 and "unmount" not in got):
            raise CrossCheckError(f"{guest.name}: the cross-check batch said nothing of {name}: {text[-500:]}")
        disk = BatchDisk(got["mount"], got.get("unmount", (0, "")), mariadb=got.get("mariadb"))
        if "pg_test_fsync" in got:
            rc, body = got["pg_test_fsync"]
            results, failed_at, error = parse_pg_test_fsync(body)
            disk.pg_test_fsync = PgTestFsync(results, failed_at, error, rc, body)
        found[name] = disk
    return found


# XFS on each disk in turn, in one guest command (xfs_on_each; what it does in its file's header).
_XFS_EACH = guest_script("xcheck-xfs-each.sh")


def xfs_on_each(guest, disks: dict[str, str], block_sizes: tuple[int, ...],
                timeout: float = 300.0) -> dict[str, tuple[int, str]]:
    """{name: device path} -> {name: (exit status of mkfs.xfs and mount, what the guest printed)}."""
    args = [x for name, dev in disks.items() for x in (slug(name), dev, f"{MOUNT_ROOT}/{slug(name)}")]
    text = root(guest, _XFS_EACH, _MOUNT, _UNMOUNT, " ".join(map(str, block_sizes)), *args, timeout=timeout)
    by_slug = {tag: (int(rc), body) for (tag, rc), body in _sections(text, 2)}
    missing = [name for name in disks if slug(name) not in by_slug]
    if missing:
        raise CrossCheckError(f"{guest.name}: no XFS output for {missing}: {text[-500:]}")
    return {name: by_slug[slug(name)] for name in disks}
