"""The cross-check scenarios' parsers (labtests/support/dbs.py), on output captured from the real tools:
pg_test_fsync from postgresql-15 on ext4 over loop devices with 512- and 4096-byte sectors, MariaDB
10.11's error log lines, and the block layer's block_bio_queue trace lines."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from labtests.support import dbs
from sectorlab.analysis import stats
from sectorlab.inguest import rules

DATA = Path(__file__).parent / "data"


def test_pg_test_fsync_that_ran_through():
    results, failed_at, error = dbs.parse_pg_test_fsync((DATA / "pg_test_fsync-512.txt").read_text())
    assert failed_at is None and error is None
    one = {k.split(" / ")[1]: v for k, v in results.items() if "using one 8kB write" in k}
    assert one == {"open_datasync": 6723.146, "fdatasync": 6395.181, "fsync": 5415.588, "open_sync": 5995.7}
    assert results["Compare open_sync with different write sizes / 16 *  1kB open_sync writes"] == 371.887
    assert results["Non-sync'ed 8kB writes / write"] == 1075335.363
    assert len(results) == 16  # 4 + 4 + 5 + 2 + 1 timed tests; fsync_writethrough is n/a (twice)


def test_pg_test_fsync_that_died_at_einval():
    results, failed_at, error = dbs.parse_pg_test_fsync((DATA / "pg_test_fsync-4096.txt").read_text())
    assert failed_at == "Compare open_sync with different write sizes / 8 *  2kB open_sync writes"
    assert error == "Invalid argument"
    assert "Compare open_sync with different write sizes / 4 *  4kB open_sync writes" in results
    assert not any("2kB" in k or "1kB" in k for k in results)


@pytest.mark.parametrize("logical, dies_at", [(512, None), (1024, None), (2048, 1024), (4096, 2048)])
def test_where_pg_test_fsync_must_die_follows_the_o_direct_rule(logical, dies_at):
    first = next((s for s in dbs.PG_DIRECT_WRITE_SIZES if not rules.direct_io_ok(s, logical)), None)
    assert first == dies_at


@given(st.sampled_from([512, 1024, 2048, 4096]), st.integers(min_value=1, max_value=1 << 20))
def test_direct_io_needs_a_multiple_of_the_logical_sector(logical, size):
    assert rules.direct_io_ok(size, logical) == (size % logical == 0)


def test_mariadb_log_block_size_from_its_error_log():
    log = ("2026-11-23  2:10:01 0 [Note] InnoDB: Using liburing\n"
           "2026-11-23  2:10:02 0 [Note] InnoDB: File system buffers for log disabled (block size=4096 bytes)\n"
           "2026-11-23  2:10:03 0 [Note] mariadbd: ready for connections.\n")
    assert dbs.mariadb_log_block_size(log) == (4096, "disabled")
    with pytest.raises(dbs.CrossCheckError, match="ready for connections"):
        dbs.mariadb_log_block_size("2026-11-23  2:10:03 0 [Note] mariadbd: ready for connections.\n")


def test_traced_write_sizes_keep_only_the_device_and_its_writes():
    trace = """\
        mariadbd-812     [000] .....   101.000001: block_bio_queue: 254,48 WS 2048 + 8 [mariadbd]
        mariadbd-812     [000] .....   101.000002: block_bio_queue: 254,48 R 0 + 8 [mariadbd]
     jbd2/vda1-8-90      [000] .....   101.000003: block_bio_queue: 254,0 WS 10 + 1 [jbd2/vda1-8]
     jbd2/vdd-8-91       [000] .....   101.000004: block_bio_queue: 254,48 FWS 0 + 0 [jbd2/vdd-8]
        mariadbd-812     [000] .....   101.000005: block_bio_queue: 254,48 W 4096 + 32 [mariadbd]
"""
    assert dbs.traced_write_sizes(trace, 254, 48) == [4096, 16384]


def test_writes_traced_at_the_windows_edges_are_told_apart():
    """The marks TRACE_ON and TRACE_OFF write beside the counters' reads split the writes: before the
    first (maybe counted already), after the second (maybe not counted yet), inside."""
    trace = """\
     jbd2/vdd-8-91       [000] .....   100.000001: block_bio_queue: 254,48 WS 16 + 8 [jbd2/vdd-8]
              sh-900     [000] .....   100.000002: tracing_mark_write: sectorlab-window-start
        mariadbd-812     [000] .....   101.000001: block_bio_queue: 254,48 WS 2048 + 8 [mariadbd]
              sh-901     [000] .....   103.000000: tracing_mark_write: sectorlab-window-end
     jbd2/vdd-8-91       [000] .....   103.000001: block_bio_queue: 254,48 WS 24 + 16 [jbd2/vdd-8]
"""
    assert dbs.traced_writes(trace, 254, 48) == [("before", 4096), ("inside", 4096), ("after", 8192)]
    assert dbs.traced_write_sizes(trace, 254, 48) == [4096, 4096, 8192]
    assert {w for w, _ in dbs.traced_writes(trace.replace("sectorlab-window-start", "x"), 254, 48)} == {"inside",
                                                                                                       "after"}


def test_latency_summary_feeds_welch():
    a = dbs.latency_summary([1000.0, 1100.0, 900.0, 1050.0])
    b = dbs.latency_summary([2000.0, 2100.0, 1900.0, 2050.0])
    assert a["count"] == 4 and a["p50_us"] == 1025.0 and a["max_us"] == 1100.0
    test = stats.welch({"log_file_sync": a}, {"log_file_sync": b}, "log_file_sync")
    assert test["n"] == [4, 4] and test["p"] < 1e-4
    with pytest.raises(dbs.CrossCheckError, match="at least 2"):
        dbs.latency_summary([5.0])


def test_sections_of_a_guest_batch():
    text = ("=== nvme-sector4k mount 0\n=== nvme-sector4k pg_test_fsync 1\nfirst\n=== not a head here\nsecond\n"
            "=== virtio-sector512n mount 1\n/dev/vdd holds a signature\n")
    assert dbs._sections(text, 3) == [
        (["nvme-sector4k", "mount", "0"], ""),
        (["nvme-sector4k", "pg_test_fsync", "1"], "first\n=== not a head here\nsecond"),
        (["virtio-sector512n", "mount", "1"], "/dev/vdd holds a signature"),
    ]
    assert dbs._sections("=== a 0\nx\n=== b 2\n", 2) == [(["a", "0"], "x"), (["b", "2"], "")]
