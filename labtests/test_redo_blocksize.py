"""Redo BLOCKSIZE verdicts on real devices: the rules engine run inside the guest agrees with the
declared geometry, and real I/O confirms it.

For every declared disk and every redo block size: `python3 rules.py DEVICE --blocksize B --json`
inside the guest gives the verdict the geometry predicts; a refusal because B is below the logical
sector is confirmed by an O_DIRECT write of B bytes failing with EINVAL, and every acceptance by
an O_DIRECT+O_DSYNC write of B bytes succeeding (one redo-writer transaction: one B-byte block).
A refusal because B is above the media sector is the database's policy, not the disk's: there the
write succeeds. Guards sectorlab/rules.py (the ORA-01378 model, docs/redo-blocksize.md) against the
kernel's real behaviour.
These tests write to the lab's data disks (never the root disk).
"""

from __future__ import annotations

import json

import pytest

from labtests.lab import disk_params, one_block_write, resolve_disk
from sectorlab import rules
from sectorlab.paths import REPO

pytestmark = pytest.mark.lab
HELPERS = {"rules.py": REPO / "sectorlab" / "rules.py"}
REMOTE_DIR = "/tmp/sectorlab"


@pytest.fixture(scope="session")
def helpers(lab_guests):
    for guest in lab_guests.values():
        guest.check_output("mkdir -p", REMOTE_DIR)
        for name, local in HELPERS.items():
            guest.put(local, f"{REMOTE_DIR}/{name}", 0o755)
    return REMOTE_DIR


@pytest.fixture(params=disk_params())
def disk(request, lab_state, lab_guests, guest_devices):
    return resolve_disk(request.param, lab_state, lab_guests, guest_devices)


@pytest.mark.parametrize("blocksize", rules.VALID_BLOCKSIZES, ids=lambda b: f"bs{b}")
def test_verdict_and_real_io(disk, blocksize, helpers):
    guest, declared, dev = disk
    logical, physical = declared.geometry.logical_block_size, declared.geometry.physical_block_size
    result = guest.run(f"sudo -n python3 {helpers}/rules.py", dev.path, "--blocksize", blocksize, "--json")
    assert result.rc in (0, 1), f"redo-check exited {result.rc}: {result.stderr}"
    verdict = json.loads(result.stdout)
    want_allowed = logical <= blocksize <= physical
    assert verdict["allowed"] is want_allowed, (
        f"{dev.path} ({declared.geometry.name} {logical}/{physical}): BLOCKSIZE {blocksize} "
        f"allowed={verdict['allowed']}, expected {want_allowed}: {verdict['error']}")
    assert (verdict["host_sector"], verdict["media_sector"]) == (logical, physical)
    assert verdict["default_blocksize"] == physical
    assert (result.rc == 0) is want_allowed

    # One transaction of one redo byte: one write of one B-byte block at offset 0.
    io = one_block_write(guest, dev, blocksize)
    if blocksize < logical:
        assert io.rc == 1 and "pwrite: Invalid argument" in io.stderr, (
            f"{dev.path}: O_DIRECT write of {blocksize} B below the {logical} B logical sector: "
            f"rc {io.rc}: {io.stderr}")
    else:
        assert io.rc == 0, f"{dev.path}: O_DIRECT+O_DSYNC write of {blocksize} B failed: {io.stderr}"
        report = json.loads(io.stdout)
        assert (report["writes"], report["bytes_written"]) == (1, blocksize), report


def test_raw_writes_refuse_the_root_disk(lab_guests):
    guest = next(iter(lab_guests.values()))
    root = guest.check_output("findmnt -n -o SOURCE /")
    disk = "/dev/" + guest.check_output("lsblk -n -d -o PKNAME", root).strip()
    result = guest.run("sudo -n redo-writer run --target", disk, "--blocksize", 4096, "--transactions", 1)
    assert result.rc == 2
    assert "refusing to write" in result.stderr and "mounted" in result.stderr
