"""redo-writer inside the guest, on every declared disk, at redo block sizes 512 and 4096.

Guards the benchmark against the real devices: a block size below the disk's logical sector fails
with EINVAL exactly where the geometry predicts (and is reported as such, not as a crash); every
other run completes, writes whole blocks only, and at 4096 never issues a write under 4 KiB; the
device's write unit (its minimum I/O size) is the geometry's, and on a disk whose unit is above
4 KiB every redo write is reported as smaller than it; the device's own counters count the bytes
of redo-writer's own writes (virtio, SCSI, NVMe and NVMe/TCP).
These runs write to the lab's data disks (never the root disk).
"""

from __future__ import annotations

import json

import pytest

from labtests.support.lab import disk_params, resolve_disk
from sectorlab.inguest import rules

pytestmark = pytest.mark.lab


@pytest.fixture(params=disk_params())
def disk(request, lab_state, lab_guests, guest_devices):
    return resolve_disk(request.param, lab_state, lab_guests, guest_devices)


@pytest.mark.parametrize("blocksize", [512, 4096], ids=lambda b: f"bs{b}")
def test_redo_writer_on_the_device(disk, blocksize):
    guest, declared, dev = disk
    logical = declared.geometry.logical_block_size
    result = guest.run("sudo -n redo-writer run --target", dev.path, "--blocksize", blocksize, "--sessions", 4,
                       "--transactions", 200, "--redo-per-txn", 700, "--log-size", 16 << 20, "--max-write", 1 << 20,
                       "--output", "json", timeout=300)
    if blocksize < logical:
        assert result.rc == 1, f"{dev.path}: expected the EINVAL failure, got rc {result.rc}: {result.stderr}"
        assert "pwrite: Invalid argument" in result.stderr
        assert (f"O_DIRECT refused a {blocksize}-byte redo block: the device's logical sector is larger "
                f"({logical} bytes;") in result.stderr, result.stderr
        return
    assert result.rc == 0, f"{dev.path}: redo-writer failed: {result.stderr}"
    report = json.loads(result.stdout)
    assert report["transactions"] == 200
    assert report["bytes_written"] % blocksize == 0
    assert report["writes"] <= 200, "group commit never writes more often than sessions commit"
    if blocksize == 4096:
        assert report["writes_under_4k"] == 0
    # The device's write unit is its minimum I/O size; at most 4 x 700 B of redo are pending at a
    # time, so every log write is one 4 KiB block at 4096 (at most six 512 B blocks at 512): on a
    # disk whose unit is above 4 KiB (sector4k-iu16k, sector4k-p16k) each is smaller than the unit.
    unit = declared.geometry.guest_min_io
    assert report["write_unit"] == unit, report
    if unit > 4096:
        assert report["writes_under_unit"] == report["writes_unaligned_to_unit"] == report["writes"], report
    elif blocksize == 4096:
        assert report["writes_under_unit"] == report["writes_unaligned_to_unit"] == 0, report
    # The device's own counters (/sys/block/X/stat) see the same writes: the empty flush request that
    # each O_DSYNC write adds on a write-back cache is not counted as one (NVMe/TCP: the path device's).
    member = report["members"][0]
    device = member["device"]
    assert device is not None, member.get("device_note")
    own = report["bytes_written"] / member["writes"]
    assert abs(device["writes"] - member["writes"]) <= 0.01 * member["writes"], (device, member["writes"])
    assert abs(device["avg_request_bytes"] - own) <= 0.01 * own, (device, own)


def test_both_ends_of_a_misaligned_write_agree_with_the_rules_engine(disk):
    """One session, 1,000 B of redo a commit: every log write is 3 blocks of 512 (1,536 B, 4 KiB
    disks: 1 block of 4096) at the next offset, so on a 512e disk some writes end inside a physical
    sector and some straddle one. redo-writer's count of writes unaligned at either end and of
    sectors written in part equals the rules engine's for the same log, on every disk."""
    guest, declared, dev = disk
    blocksize = max(512, declared.geometry.logical_block_size)
    log_size = 1 << 20
    result = guest.run("sudo -n redo-writer run --target", dev.path, "--blocksize", blocksize, "--sessions", 1,
                       "--transactions", 100, "--redo-per-txn", 1000, "--log-size", log_size, "--output", "json",
                       timeout=300)
    assert result.rc == 0, f"{dev.path}: redo-writer failed: {result.stderr}"
    report = json.loads(result.stdout)
    length = -(-1000 // (blocksize - 16)) * blocksize
    assert report["writes"] == 100 and report["bytes_written"] == 100 * length, report
    unit = report["write_unit"]
    assert unit == declared.geometry.guest_min_io
    expected = rules.log_partial_units(length, 100, unit, log_size)
    assert (report["writes_unaligned_to_unit"], report["partial_units"]) == expected, (unit, length, report)
    if declared.geometry.physical_block_size > blocksize:  # 512e: the case the seed's "7 of 8" undercounts
        assert expected[1] > 0
