"""MariaDB as a cross-check of the rules engine and redo-writer, on every declared disk (-k mariadb).

Oracle Database cannot run in the lab; MariaDB from Debian's packages reacts to the sector size too.
Its InnoDB picks its redo log's block size from the disk the log lives on: the size it reports must
be the physical sector, which is also the rules engine's default redo BLOCKSIZE for Oracle on that
disk (any disagreement fails with all three). Then a commit-heavy load (one row and a COMMIT per
transaction, innodb_flush_log_at_trx_commit=1): what reached the disk by its own counters
(/sys/block/*/stat) and by every write request the guest's block layer issued (block_rq_issue),
and redo-writer with as many sessions on the same filesystem, with the redo MariaDB generated per
commit: both commit-latency distributions and Welch's t-test between them are reported, as the
measure of how close the emulated log writer is to a real one; redo-writer is not tuned to match.

The server runs on the lab's throw-away data disk (ext4 made on the whole disk; SECTORLAB_XCHECK_FS=
ext4,xfs adds XFS), started by hand on a Unix socket and stopped after, even when a test fails
(labtests/dbs.py). Ids name the disk and filesystem: test_mariadb_commit_load[virtio-sector4k-ext4].
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from labtests import dbs
from labtests.lab import declared_disks, disk_params, resolve_disk
from sectorlab import analysis, rules

pytestmark = [pytest.mark.lab, pytest.mark.crosscheck]

SESSIONS = 4       # committing sessions, in MariaDB (sysbench threads) and in redo-writer
LOAD_SECONDS = 2   # each side of the commit-latency comparison
ALPHA = 0.01
COMMIT_SCRIPT = Path(__file__).parent / "guest" / "commit_latency.lua"


def _filesystems() -> tuple[str, ...]:
    raw = os.environ.get("SECTORLAB_XCHECK_FS", "ext4")
    chosen = tuple(f.strip() for f in raw.split(",") if f.strip())
    if not chosen or any(f not in dbs.FILESYSTEMS for f in chosen):
        raise pytest.UsageError(f"SECTORLAB_XCHECK_FS={raw!r}: expected a comma-separated list of "
                                f"{', '.join(dbs.FILESYSTEMS)} (e.g. ext4,xfs)")
    return chosen


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
        g = self.declared.geometry
        return f"{self.dev.path} ({self.declared.name}, {g.logical_block_size}/{g.physical_block_size}, {self.fs})"


def _server_params(one_per_geometry: bool = False) -> list:
    """(vm, disk, filesystem) for every declared disk, or for the first declared disk of each geometry."""
    params, seen = [], set()
    for p in disk_params():
        geometry = p.values[0][1].geometry.name
        if one_per_geometry and geometry in seen:
            continue
        seen.add(geometry)
        params += [pytest.param((*p.values[0], fs), id=f"{p.id}-{fs}") for fs in _filesystems()]
    return params


@pytest.fixture(scope="module", params=_server_params())
def server(request, lab_state, lab_guests, guest_devices):
    """MariaDB with its data directory on a filesystem made on the whole disk; both tests of a disk
    share it. Stopped, unmounted and wiped after, and nothing may be left in the guest."""
    vm_name, declared, fs = request.param
    guest, declared, dev = resolve_disk((vm_name, declared), lab_state, lab_guests, guest_devices)
    with dbs.filesystem(guest, dev.path, fs, declared.name) as mnt, dbs.mariadb(guest, mnt, declared.name) as db:
        yield Server(guest, declared, dev, mnt, fs, db)
    dbs.assert_nothing_left(guest, f"MariaDB on {declared.name}")


def test_lab_guests_have_no_transparent_huge_pages(lab_guests):
    """The lab's kernel command line turns them off (packer/scripts/common/boot-files.sh): with
    them, a MariaDB write that spans the end of a huge page kills the guest's NVMe/TCP target."""
    for guest in lab_guests.values():
        assert "[never]" in guest.check_output("cat /sys/kernel/mm/transparent_hugepage/enabled"), guest.name


def test_mariadb_redo_block_size(server, record_property):
    g = server.declared.geometry
    size, buffers = dbs.mariadb_log_block_size(server.db.error_log_now())
    predicted = g.physical_block_size
    oracle = rules.evaluate(g.logical_block_size, g.physical_block_size).default_blocksize
    said = (f"{server.where}: MariaDB's redo log block size {size} B (file system buffers {buffers}); the lab "
            f"predicts {predicted} B (the physical sector); the rules engine's default Oracle redo BLOCKSIZE "
            f"{oracle} B")
    record_property("mariadb_block_size", said)
    print(said)
    assert size == predicted == oracle, said


def _dist(name: str, s: dict) -> str:
    return f"{name} p50 {s['p50_us'] / 1000:.2f} ms, p99 {s['p99_us'] / 1000:.2f} ms (n={s['count']})"


# On each geometry (its first declared disk): the load and its redo-writer twin take ~15 s a disk.
@pytest.mark.parametrize("server", _server_params(one_per_geometry=True), indirect=True)
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
    # The counters are read inside the traced window: every write they count is traced too.
    dbs.root(guest, dbs.TRACE_ON)
    try:
        lsn0, before = db.status("Innodb_lsn_current"), dbs.disk_stat(guest, io.stat_name)
        dbs.root(guest, f"SL_OUT={out} {bench} run", timeout=LOAD_SECONDS + 180)
        lsn1, after = db.status("Innodb_lsn_current"), dbs.disk_stat(guest, io.stat_name)
    finally:
        trace = dbs.root(guest, dbs.TRACE_OFF)
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
    test = analysis.welch({"log_file_sync": mariadb}, {"log_file_sync": redo_writer}, "log_file_sync")
    said = (f"{server.where}: MariaDB {commits} commits of {redo_per_commit} B redo in {LOAD_SECONDS} s with "
            f"{SESSIONS} sessions; the disk counted {writes} writes of {written} B ({writes / commits:.2f} per "
            f"commit, {written / max(writes, 1):.0f} B on average, empty flushes included); {len(sizes)} write "
            f"bios of {sum(sizes)} B traced, the smallest {min(sizes, default=0)} B. Commit latency: "
            f"{_dist('MariaDB', mariadb)} vs {_dist(f'redo-writer (BLOCKSIZE {blocksize})', redo_writer)}; "
            f"Welch {analysis.p_text(test['p'])}, "
            f"n = {test['n'][0]} + {test['n'][1]} ({analysis.verdict(test['p'], ALPHA)})")
    record_property("mariadb_commit_load", said)
    print(said)
    assert writes > 0 and sizes, f"no write reached the disk during the load: {said}"
    assert written <= sum(sizes) <= written * 1.05, \
        f"the traced writes do not add up to what the disk counted in the window inside the trace: {said}"
    assert min(sizes) >= g.logical_block_size, \
        f"a write of {min(sizes)} B, below the logical sector {g.logical_block_size}: {said}"
    assert redo_writer["count"] > 0, f"redo-writer committed nothing: {said}"


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
