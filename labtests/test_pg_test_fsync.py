"""PostgreSQL's pg_test_fsync as a cross-check of the rules engine's O_DIRECT rule, on every
declared disk (-k pg_test_fsync).

pg_test_fsync (postgresql-15) makes O_DIRECT writes of 8 kB, then 16, 8, 4, 2 and 1 kB: it must die
with EINVAL ("write failed: Invalid argument") at its first write smaller than the disk's logical
sector, as rules.direct_io_ok predicts (at the 8 x 2 kB open_sync test on a 4Kn disk), and run
through on every other disk. Its 8 kB results are recorded.

Every disk of a VM runs it at the same time, each on ext4 made on the whole disk (pg_test_fsync
spends at least a second on each of its 16 tests: one disk after the other would take minutes).
The pass or fail of each write does not depend on that; the ops/s it prints are measured with the
other disks busy, and are labelled so. Filesystems are unmounted and wiped after.
"""

from __future__ import annotations

import contextlib

import pytest

from labtests import dbs
from labtests.lab import disk_params, resolve_disk
from sectorlab import rules

pytestmark = [pytest.mark.lab, pytest.mark.crosscheck]


@pytest.fixture(scope="module")
def pg_runs(request, lab_state, lab_guests, guest_devices) -> dict:
    """serial -> (declared disk, device, PgTestFsync) for the disks whose test is selected, run at once per VM."""
    chosen: dict[str, list] = {}
    for item in request.session.items:
        spec = getattr(item, "callspec", None)
        if item.module is request.module and spec is not None and "target" in spec.params:
            vm_name, declared = spec.params["target"]
            chosen.setdefault(vm_name, []).append(declared)
    runs = {}
    for vm_name, disks in chosen.items():
        resolved = [resolve_disk((vm_name, d), lab_state, lab_guests, guest_devices) for d in disks]
        guest = lab_guests[vm_name]
        with contextlib.ExitStack() as stack:
            mounts = {d.name: stack.enter_context(dbs.filesystem(guest, dev.path, "ext4", d.name))
                      for _, d, dev in resolved}
            results = dbs.run_pg_test_fsync_all(guest, mounts)
        dbs.assert_nothing_left(guest, "pg_test_fsync")
        for _, d, dev in resolved:
            runs[d.serial] = (d, dev, results[d.name], len(resolved))
    return runs


@pytest.mark.parametrize("target", disk_params())
def test_pg_test_fsync(target, pg_runs, record_property):
    _, declared = target
    d, dev, r, at_once = pg_runs[declared.serial]
    g = d.geometry
    impossible = next((s for s in dbs.PG_DIRECT_WRITE_SIZES if not rules.direct_io_ok(s, g.logical_block_size)), None)
    eight_kb = {k.split(" / ")[-1]: v for k, v in r.results.items() if "using one 8kB write" in k}
    said = (f"{dev.path} ({d.name}, {g.logical_block_size}/{g.physical_block_size}, ext4): pg_test_fsync "
            + (f"died at {r.failed_at.split(' / ')[-1].strip()!r}: {r.error}" if r.failed_at else
               f"ran through (exit {r.rc})")
            + f"; one 8 kB write ({at_once} disks at once): "
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
