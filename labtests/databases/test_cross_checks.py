"""Real databases and XFS as cross-checks of the rules engine and redo-writer, on every declared disk
(docs/cross-checks.md). Oracle Database cannot run in the lab; these react to the sector size too.
Ids name the tool and the disk: -k mariadb, -k pg_test_fsync, -k xfs (and -k sector4k by geometry).

- MariaDB (-k mariadb): InnoDB picks its redo log's block size from the disk the log lives on; the
  size it reports must be the physical sector, which is also the rules engine's default redo
  BLOCKSIZE for Oracle on that disk (any disagreement fails with all three). On the first disk of
  each geometry, a commit-heavy load (one row and a COMMIT per transaction,
  innodb_flush_log_at_trx_commit=1): what reached the disk by its own counters (/sys/block/*/stat)
  and by every write bio the guest's block layer queued, and redo-writer with as many sessions on
  the same filesystem with the redo MariaDB generated per commit: both commit-latency distributions
  and Welch's t-test between them are reported, as the measure of how close the emulated log writer
  is to a real one; redo-writer is not tuned to match.
- pg_test_fsync (-k pg_test_fsync, postgresql-15): its O_DIRECT writes of 8 kB, then 16, 8, 4, 2 and
  1 kB; it must die with EINVAL ("write failed: Invalid argument") at its first write smaller than
  the disk's logical sector, as rules.direct_io_ok predicts (the 8 x 2 kB open_sync test on 4Kn),
  and run through on every other disk. Its 8 kB results are recorded.
- XFS (-k xfs): mkfs.xfs takes its sector size from the disk's physical sector (xfs_info's sectsz),
  and redo-writer's O_DIRECT writes to a file in it succeed and fail (EINVAL below the logical
  sector) at the same block sizes as on the raw disk (labtests/rules/test_redo_blocksize.py).

Every disk of a VM goes through pg_test_fsync and the MariaDB start in one guest command
(dbs.cross_check_batch): ext4 on each disk (SECTORLAB_XCHECK_FS=ext4,xfs runs the MariaDB scenarios
on XFS too), pg_test_fsync on all of them at once (it spends a fixed second on each of its 16 tests),
then MariaDB started, read and stopped on each in turn. pg_test_fsync's ops/s are measured with the
other disks busy, and are labelled so; whether a write is refused does not depend on it. Servers,
mounts and signatures are undone after, even when a step fails, and a check after each fixture
fails the run if a server process, socket or mount is left.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from labtests.support import dbs
from labtests.support.lab import covering, declared_disks, disk_params, geometry, resolve_disk
from sectorlab.analysis import stats
from sectorlab.inguest import rules

pytestmark = [pytest.mark.lab, pytest.mark.crosscheck]

SESSIONS = 4       # committing sessions, in MariaDB (sysbench threads) and in redo-writer
LOAD_SECONDS = 2   # each side of the commit-latency comparison
ALPHA = 0.01
COMMIT_SCRIPT = Path(dbs.__file__).parent / "guest" / "commit_latency.lua"
XFS_BLOCK_SIZES = (512, 1024, 4096)


def _filesystems() -> tuple[str, ...]:
    raw = os.environ.get("SECTORLAB_XCHECK_FS", "ext4")
    chosen = tuple(f.strip() for f in raw.split(",") if f.strip())
    if not chosen or any(f not in dbs.FILESYSTEMS for f in chosen):
        raise pytest.UsageError(f"SECTORLAB_XCHECK_FS={raw!r}: expected a comma-separated list of "
                                f"{', '.join(dbs.FILESYSTEMS)} (e.g. ext4,xfs)")
    return chosen


def _mariadb_params(params: list) -> list:
    """(vm, disk, filesystem) for each of those disk params and each chosen filesystem."""
    return [pytest.param((*p.values[0], fs), id=f"{p.id}-{fs}") for p in params for fs in _filesystems()]


def _where(dev, declared, fs: str) -> str:
    g = declared.geometry
    return f"{dev.path} ({declared.name}, {g.logical_block_size}/{g.physical_block_size}, {fs})"


def _selected(request, test_name: str) -> list[tuple]:
    """The `target` params of this module's selected items of one test."""
    return [item.callspec.params["target"] for item in request.session.items
            if item.module is request.module and item.originalname == test_name
            and hasattr(item, "callspec") and "target" in item.callspec.params]


# ---- MariaDB's start and pg_test_fsync on every disk, in one guest command per VM --------------

@pytest.fixture(scope="module")
def batch(request, lab_state, lab_guests, guest_devices) -> dict:
    """(filesystem, serial) -> (declared disk, device, dbs.BatchDisk) for the selected disks: MariaDB
    started on the disks whose redo block size test is selected, on each of their filesystems;
    pg_test_fsync on ext4 on the disks whose test is selected."""
    want: dict[tuple[str, str], dict] = {}  # (vm, fs) -> {serial: [declared, pg, mariadb]}
    for vm_name, declared, fs in _selected(request, "test_mariadb_redo_block_size"):
        want.setdefault((vm_name, fs), {}).setdefault(declared.serial, [declared, False, False])[2] = True
    for vm_name, declared in _selected(request, "test_pg_test_fsync"):
        want.setdefault((vm_name, "ext4"), {}).setdefault(declared.serial, [declared, False, False])[1] = True
    found = {}
    for (vm_name, fs), disks in want.items():
        resolved = {s: resolve_disk((vm_name, d), lab_state, lab_guests, guest_devices)
                    for s, (d, _, _) in disks.items()}
        guest = lab_guests[vm_name]
        done = dbs.cross_check_batch(guest, {d.name: (resolved[s][2].path, pg, maria)
                                             for s, (d, pg, maria) in disks.items()}, fs=fs)
        dbs.assert_nothing_left(guest, f"the cross-check batch on {fs}")
        for serial, (d, _, _) in disks.items():
            b = done[d.name]
            if b.unmount[0] != 0:
                raise dbs.CrossCheckError(f"{vm_name}: {d.name}: the {fs} filesystem was not unmounted and "
                                          f"wiped: {b.unmount[1]}")
            found[(fs, serial)] = (d, resolved[serial][2], b)
    return found


def _batch_disk(batch: dict, fs: str, declared) -> tuple:
    d, dev, b = batch[(fs, declared.serial)]
    where = _where(dev, d, fs)
    assert b.mount[0] == 0, f"{where}: no {fs} filesystem on the disk: {b.mount[1].strip()}"
    return d, dev, b, where


@pytest.mark.parametrize("target", _mariadb_params(disk_params()))
def test_mariadb_redo_block_size(target, batch, record_property):
    _, declared, fs = target
    d, _, b, where = _batch_disk(batch, fs, declared)
    rc, text = b.mariadb
    assert rc == 0, f"{where}: MariaDB did not start (exit {rc}):\n{text.strip()}"
    size, buffers = dbs.mariadb_log_block_size(text)
    g = d.geometry
    predicted = g.physical_block_size
    oracle = rules.evaluate(g.logical_block_size, g.physical_block_size).default_blocksize
    said = (f"{where}: MariaDB's redo log block size {size} B (file system buffers {buffers}); the lab "
            f"predicts {predicted} B (the physical sector); the rules engine's default Oracle redo BLOCKSIZE "
            f"{oracle} B")
    record_property("mariadb_block_size", said)
    print(said)
    assert size == predicted == oracle, said


@pytest.mark.parametrize("target", disk_params())
def test_pg_test_fsync(target, batch, record_property):
    _, declared = target
    d, _, b, where = _batch_disk(batch, "ext4", declared)
    r, g = b.pg_test_fsync, d.geometry
    assert r is not None, f"{where}: pg_test_fsync left no output"
    impossible = next((s for s in dbs.PG_DIRECT_WRITE_SIZES if not rules.direct_io_ok(s, g.logical_block_size)), None)
    eight_kb = {k.split(" / ")[-1]: v for k, v in r.results.items() if "using one 8kB write" in k}
    said = (f"{where}: pg_test_fsync "
            + (f"died at {r.failed_at.split(' / ')[-1].strip()!r}: {r.error}" if r.failed_at else
               f"ran through (exit {r.rc})")
            + "; one 8 kB write (all the disks at once): "
            + ", ".join(f"{k} {v:.0f} ops/s" for k, v in eight_kb.items()))
    record_property("pg_test_fsync", said)
    print(said)
    assert len(eight_kb) == 4, f"{said}: expected 4 results for one 8 kB write:\n{r.output}"
    if impossible is None:
        assert r.rc == 0 and r.failed_at is None, \
            f"{said}; every O_DIRECT write of pg_test_fsync fits a {g.logical_block_size}-byte logical sector"
    else:
        size = f"{impossible // 1024}kB"
        assert r.rc != 0 and r.error == "Invalid argument" and size in (r.failed_at or ""), \
            f"{said}; expected EINVAL at its first O_DIRECT write of {size}, below the logical sector " \
            f"{g.logical_block_size}:\n{r.output}"


# ---- the MariaDB commit load, on the first disk of each geometry --------------------------------

@dataclass
class Server:
    guest: object
    declared: object
    dev: object
    mnt: str
    fs: str
    db: dbs.MariaDB

    @property
    def where(self) -> str:
        return _where(self.dev, self.declared, self.fs)


@pytest.fixture
def server(request, lab_state, lab_guests, guest_devices):
    """MariaDB with its data directory on a filesystem made on the whole disk. Stopped, unmounted and
    wiped after, and nothing may be left in the guest."""
    vm_name, declared, fs = request.param
    guest, declared, dev = resolve_disk((vm_name, declared), lab_state, lab_guests, guest_devices)
    with dbs.filesystem(guest, dev.path, fs, declared.name) as mnt, dbs.mariadb(guest, mnt, declared.name) as db:
        yield Server(guest, declared, dev, mnt, fs, db)
    dbs.assert_nothing_left(guest, f"MariaDB on {declared.name}")


def _dist(name: str, s: dict) -> str:
    return f"{name} p50 {s['p50_us'] / 1000:.2f} ms, p99 {s['p99_us'] / 1000:.2f} ms (n={s['count']})"


@pytest.mark.parametrize("server", _mariadb_params(covering(geometry)), indirect=True)
def test_mariadb_commit_load(server, record_property):
    guest, db, g = server.guest, server.db, server.declared.geometry
    lua = "/tmp/sectorlab-commit_latency.lua"
    guest.put(COMMIT_SCRIPT, lua)
    io = dbs.io_device(guest, server.dev.path)
    db.sql("CREATE DATABASE IF NOT EXISTS xcheck")
    bench = (f"sysbench {lua} --db-driver=mysql --mysql-socket={db.socket} --mysql-user=root --mysql-db=xcheck "
             f"--threads={SESSIONS} --time={LOAD_SECONDS} --events=0")
    dbs.root(guest, f"{bench} prepare")
    out = f"{db.run_dir}/commits"
    dbs.root(guest, f"mkdir -p {out}")
    # The counters are read by the trace scripts at once after the tracepoint goes on and off: what
    # they count and what is traced differ only by the requests in flight at those two moments.
    before = dbs.window(dbs.root(guest, dbs.TRACE_ON, io.stat_name))
    try:
        lsn0 = db.status("Innodb_lsn_current")
        dbs.root(guest, f"SL_OUT={out} {bench} run", timeout=LOAD_SECONDS + 180)
        lsn1 = db.status("Innodb_lsn_current")
    finally:
        trace = dbs.root(guest, dbs.TRACE_OFF, io.stat_name)
    after = dbs.window(trace)
    samples = [float(x) for x in dbs.root(guest, f"cat {out}/commit-*.txt").split()]
    db.stop()  # redo-writer runs on a quiet guest

    commits = len(samples)
    assert commits > 0, f"{server.where}: sysbench committed nothing"
    writes = after["writes"] - before["writes"]
    written = (after["write_sectors"] - before["write_sectors"]) * 512
    sizes = dbs.traced_write_sizes(trace, io.major, io.minor)
    redo_per_commit = max(1, round((lsn1 - lsn0) / commits))
    mariadb = dbs.latency_summary(samples)

    # redo-writer as the log writer of as many sessions, on a file in the same filesystem, with the
    # redo each commit generated in MariaDB, at the rules engine's default BLOCKSIZE for the disk.
    blocksize = rules.evaluate(g.logical_block_size, g.physical_block_size).default_blocksize
    rw = guest.run("sudo -n redo-writer run --target", f"{server.mnt}/redo-writer.log", "--blocksize", blocksize,
                   "--sessions", SESSIONS, "--duration", LOAD_SECONDS, "--redo-per-txn", redo_per_commit,
                   "--log-size", 8 << 20, "--output", "json", timeout=LOAD_SECONDS + 120)
    assert rw.ok, f"{server.where}: redo-writer exited {rw.rc}: {rw.stderr.strip()}"
    redo_writer = json.loads(rw.stdout)["log_file_sync"]
    test = stats.welch({"log_file_sync": mariadb}, {"log_file_sync": redo_writer}, "log_file_sync")
    said = (f"{server.where}: MariaDB {commits} commits of {redo_per_commit} B redo in {LOAD_SECONDS} s with "
            f"{SESSIONS} sessions; the disk counted {writes} writes of {written} B ({writes / commits:.2f} per "
            f"commit, {written / max(writes, 1):.0f} B on average, empty flushes included); {len(sizes)} write "
            f"bios of {sum(sizes)} B traced, the smallest {min(sizes, default=0)} B. Commit latency: "
            f"{_dist('MariaDB', mariadb)} vs {_dist(f'redo-writer (BLOCKSIZE {blocksize})', redo_writer)}; "
            f"Welch {stats.p_text(test['p'])}, "
            f"n = {test['n'][0]} + {test['n'][1]} ({stats.verdict(test['p'], ALPHA)})")
    record_property("mariadb_commit_load", said)
    print(said)
    assert writes > 0 and sizes, f"no write reached the disk during the load: {said}"
    # A request in flight when the counters were first read was queued untraced and may be counted;
    # one in flight at their second read was traced and may not be: at most the largest request
    # each. A write traced before the first read's mark may be in the first counters already, one
    # after the second read's mark may be missing from the second (the tracepoint is on around both
    # reads, each mark on the read's far side): their bytes. Nothing else separates the two sums,
    # whatever this host's pace (a 5 % margin did not hold on a busy one; nor, beside a CPU hog, did
    # the microseconds between the tracepoint going on and the first read without the marks).
    early, late = (w["inflight_writes"] * w["max_request_bytes"] for w in (before, after))
    edges = sum(size for where, size in dbs.traced_writes(trace, io.major, io.minor) if where != "inside")
    assert written - early <= sum(sizes) <= written + late + edges, \
        f"the traced writes do not add up to what the disk counted ({before['inflight_writes']} and " \
        f"{after['inflight_writes']} writes in flight at the window's two ends, {edges} B traced at its " \
        f"edges): {said}"
    assert min(sizes) >= g.logical_block_size, \
        f"a write of {min(sizes)} B, below the logical sector {g.logical_block_size}: {said}"
    assert redo_writer["count"] > 0, f"redo-writer committed nothing: {said}"


# ---- XFS on every disk, in one guest command per VM ---------------------------------------------

@pytest.fixture(scope="module")
def xfs_runs(request, lab_state, lab_guests, guest_devices) -> dict:
    """serial -> (declared disk, device, (exit status of mkfs.xfs and mount, guest output))."""
    chosen: dict[str, list] = {}
    for vm_name, declared in _selected(request, "test_xfs_sector_size_and_direct_io"):
        chosen.setdefault(vm_name, []).append(declared)
    found = {}
    for vm_name, disks in chosen.items():
        resolved = [resolve_disk((vm_name, d), lab_state, lab_guests, guest_devices) for d in disks]
        guest = lab_guests[vm_name]
        done = dbs.xfs_on_each(guest, {d.name: dev.path for _, d, dev in resolved}, XFS_BLOCK_SIZES)
        dbs.assert_nothing_left(guest, "XFS")
        found.update({d.serial: (d, dev, done[d.name]) for _, d, dev in resolved})
    return found


@pytest.mark.parametrize("target", disk_params())
def test_xfs_sector_size_and_direct_io(target, xfs_runs, record_property):
    _, declared = target
    d, dev, (rc, out) = xfs_runs[declared.serial]
    g = d.geometry
    where = _where(dev, d, "xfs")
    assert rc == 0, f"{where}: mkfs.xfs or its mount failed: {out.strip()}"
    assert "unmount failed" not in out, f"{where}: not unmounted and wiped after:\n{out}"
    sectsz = sorted({int(x) for x in re.findall(r"sectsz=(\d+)", out)})
    writes = {int(bs): (int(rc), err.strip()) for bs, rc, err in re.findall(r"^write (\d+)=(\d+) ?(.*)$", out, re.M)}
    said = (f"{where}: xfs_info sectsz {'/'.join(map(str, sectsz))}; one O_DIRECT redo write to a file in it: "
            + ", ".join(f"{bs} B " + ("ok" if rc == 0 else f"exit {rc} ({err.rsplit(': ', 1)[-1]})")
                       for bs, (rc, err) in writes.items()))
    record_property("xfs", said)
    print(said)
    assert sectsz == [g.physical_block_size], f"{said}; expected sectsz={g.physical_block_size} (physical sector)"
    assert sorted(writes) == list(XFS_BLOCK_SIZES), f"{said}; the guest printed:\n{out}"
    for bs, (rc, err) in writes.items():
        if rules.direct_io_ok(bs, g.logical_block_size):
            assert rc == 0, f"{said}; a {bs}-byte O_DIRECT write fits the {g.logical_block_size}-byte logical sector"
        else:
            assert rc == 1 and "Invalid argument" in err, \
                f"{said}; expected EINVAL for {bs} B, below the {g.logical_block_size}-byte logical sector"


# ---- safety and failure ---------------------------------------------------------------------------

def test_lab_guests_have_no_transparent_huge_pages(lab_guests):
    """The lab's kernel command line turns them off (scripts/debian-boot-files): with
    them, a MariaDB write that spans the end of a huge page kills the guest's NVMe/TCP target."""
    for guest in lab_guests.values():
        assert "[never]" in guest.check_output("cat /sys/kernel/mm/transparent_hugepage/enabled"), guest.name


def test_mariadb_that_cannot_start_fails_with_its_error_log(lab_guests):
    """A server that does not start is a failure that shows its error log, and leaves nothing."""
    vm_name = declared_disks()[0][0].name
    guest = lab_guests[vm_name]
    parent = f"{dbs.RUN_ROOT}/no-start-data"
    dbs.root(guest, f"mkdir -p {parent}")
    try:
        with pytest.raises(dbs.CrossCheckError) as failed:
            with dbs.mariadb(guest, parent, "no-start", extra_config="sectorlab-no-such-option=1"):
                pass
    finally:
        dbs.root(guest, f"rm -rf {parent}")
    said = str(failed.value)
    assert "mariadbd exited before it answered" in said and "sectorlab-no-such-option" in said, said
    # Its run directory (socket, pid file) is gone; no process of it (the stop verifies that).
    assert guest.run("test ! -e", f"{dbs.RUN_ROOT}/no-start").ok, f"{dbs.RUN_ROOT}/no-start left behind"


def test_a_disk_that_is_not_blank_is_refused_and_left_as_it_was(lab_state, lab_guests, guest_devices):
    """The cross-checks make filesystems only on blank disks: one that holds a signature is refused
    by name, and its signature is still there after (nothing unmounted, wiped or written)."""
    guest, declared, dev = resolve_disk(disk_params()[0].values[0], lab_state, lab_guests, guest_devices)
    dbs.root(guest, "mkfs.ext4 -q -F -L xcheck-keep \"$1\"", dev.path)
    try:
        done = dbs.cross_check_batch(guest, {declared.name: (dev.path, True, True)})[declared.name]
        kept = dbs.root(guest, "blkid -o value -s LABEL \"$1\" || true", dev.path).strip()
        rc, said = done.mount
        assert rc != 0 and f"{dev.path} holds a signature" in said, (rc, said)
        assert done.mariadb is None and done.pg_test_fsync is None, done
        assert kept == "xcheck-keep", f"{dev.path}: its ext4 label is {kept!r} after the refusal"
    finally:
        dbs.root(guest, "wipefs --all --quiet \"$1\"", dev.path)
    dbs.assert_nothing_left(guest, "a refused disk")
