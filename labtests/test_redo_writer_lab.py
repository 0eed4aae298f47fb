"""redo-writer inside the guest, on every declared disk, at redo block sizes 512 and 4096.

Guards the benchmark against the real devices: a block size below the disk's logical sector fails
with EINVAL exactly where the geometry predicts (and is reported as such, not as a crash); every
other run completes, writes whole blocks only, and at 4096 never issues a write under 4 KiB.
These runs write to the lab's data disks (never the root disk).
"""

from __future__ import annotations

import json

import pytest

from labtests.lab import disk_params, resolve_disk

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
    device = report["members"][0]["device"]
    assert device is not None and device["writes"] >= report["writes"], device
