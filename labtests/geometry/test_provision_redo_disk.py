"""provision-redo-disk on every declared disk: seed 000's procedure for a new redo disk (GPT label,
one partition at sector 2048, `parted align-check optimal 1`, a udev rule that gives the partition
to oracle:dba 0660), then the redo BLOCKSIZE the rules engine picks for it; and a partition started
at sector 63 (-k misalign), which is misaligned only where the physical sector is larger than the
logical one.

Guards sectorlab/inguest/redodisk.py against the guest's real parted, kernel and udev: the start is the
sector asked for, its byte offset a multiple of the physical sector (or of a larger minimum I/O
size the device advertises), the kernel's alignment_offset
what the geometry predicts, the owner holds after `udevadm trigger` and a re-plug (the rule matches
the disk's serial, not its kernel name), a second run changes nothing, and the recommended
BLOCKSIZE is the rules engine's default for the geometry (4096 on 512e and 4Kn and above, 512 on
512n).
These tests write partition tables to the lab's data disks (never the root disk) and blank them
afterwards.
"""

from __future__ import annotations

import dataclasses

import pytest

from labtests.support.lab import (
    blank_disk,
    bus,
    covering,
    disk_params,
    expected_alignment,
    geometry,
    guest_tool,
    replug,
    resolve_disk,
)
from sectorlab.inguest import rules

pytestmark = pytest.mark.lab
OWNER, GROUP, MODE = "oracle", "dba", "0660"


# What depends on the bus (the re-plug: driver unbind and bind, or an NVMe/TCP reconnect) or on the
# geometry (the sector arithmetic of a second run) runs on one disk of each bus and of each
# geometry; what the kernel and parted say of a partition at sector 63, on one disk of each bus and
# each (geometry, expected alignment_offset) (the NVMe/TCP 512e head reports -1). Each costs 4-7 s a
# disk under TCG; the default lab's nine disks are every bus crossed with every geometry.
REPLUG_DISKS = {p.id for p in covering(bus, geometry)}
MISALIGN_PARAMS = covering(bus, lambda d: (geometry(d), expected_alignment(d)))


@pytest.fixture(params=disk_params())
def blank(request, lab_state, lab_guests, guest_devices):
    """A declared disk, blanked again after the test whatever it did."""
    guest, declared, dev = resolve_disk(request.param, lab_state, lab_guests, guest_devices)
    yield guest, declared, dev
    # A re-plug may have renamed the disk: the lab finds disks by serial.
    now = guest_devices[request.param[0]][declared.serial]
    blank_disk(guest, now, declared.serial)


# What a re-run must not change: the partition table as written (its GUIDs too), the rule file's
# content and time, the partition node's owner, group and mode; with "trigger", after `udevadm
# trigger` for the disk and its partition. Also the partition's alignment_offset from sysfs.
_STATE = r'''
set -eu
disk=$1; part=$2; rule=$3
[ "$4" = trigger ] && { udevadm trigger --parent-match="/sys/class/block/${disk#/dev/}"; udevadm settle --timeout=30; }
echo "alignment_offset=$(cat "/sys/class/block/${part#/dev/}/alignment_offset")"
echo "node=$(stat -c '%U:%G %a' "$part")"
echo "rule_mtime=$(stat -c %Y.%y "$rule")"
echo "rule_sha256=$(sha256sum < "$rule" | cut -c1-64)"
echo "rule_text=$(grep -v '^#' "$rule")"
echo "table=$(sfdisk --json "$disk" | tr -d '\n ')"
'''


def _state(guest, dev, partition: str, rule: str, trigger: bool = False) -> dict:
    out = guest.check_output("sudo -n sh -c", _STATE, "state", dev.path, partition, rule,
                             "trigger" if trigger else "-")
    return dict(line.split("=", 1) for line in out.splitlines())


def test_provision(blank, guest_devices):
    guest, declared, dev = blank
    g = declared.geometry
    result = guest_tool(guest, "provision-redo-disk", dev.path, "--json")
    assert result.rc == 0, f"{dev.path}: provision-redo-disk exited {result.rc}: {result.stderr}"
    p = result.json
    where = f"{dev.path} ({declared.name}, {g.logical_block_size}/{g.physical_block_size})"

    assert (p["serial"], p["logical_block_size"], p["physical_block_size"]) == (
        declared.serial, g.logical_block_size, g.physical_block_size), p
    assert p["start_sectors"] == 2048 and p["start_bytes"] == 2048 * g.logical_block_size, \
        f"{where}: partition at sector {p['start_sectors']} (byte {p['start_bytes']}), expected sector 2048"
    assert p["start_bytes"] % g.guest_min_io == 0 and p["aligned"] is True, p
    assert p["parted_align_check"]["optimal"] is True, f"{where}: parted align-check optimal 1 failed: {p}"
    assert p["alignment_offset"] == expected_alignment(declared), \
        f"{where}: kernel alignment_offset {p['alignment_offset']}, expected {expected_alignment(declared)}"

    default = rules.evaluate(g.logical_block_size, g.physical_block_size).default_blocksize
    assert default == min(g.physical_block_size, rules.MAX_BLOCKSIZE)
    assert p["redo_blocksize"] == default, \
        f"{where}: recommended BLOCKSIZE {p['redo_blocksize']}, the rules engine says {default}"
    assert (p["owner"], p["group"], p["mode"]) == (OWNER, GROUP, MODE), p

    # After `udevadm trigger`: the owner holds; the rule is named after the serial and matches it,
    # not a kernel name.
    before = _state(guest, dev, p["partition"], p["udev_rule"], trigger=True)
    # Kernel 6.1 prints a partition's alignment_offset unsigned: -1 shows as 4294967295.
    assert int(before["alignment_offset"]) == expected_alignment(declared) % (1 << 32), \
        f"{where}: sysfs alignment_offset {before['alignment_offset']}"
    assert before["node"] == f"{OWNER}:{GROUP} 660", f"{where}: {p['partition']} after udevadm trigger"
    assert declared.serial in p["udev_rule"], p["udev_rule"]
    assert f'=="{declared.serial}"' in before["rule_text"] and "KERNEL" not in before["rule_text"], before

    if declared.name not in REPLUG_DISKS:
        return
    again = guest_tool(guest, "provision-redo-disk", dev.path, "--json")
    assert again.rc == 0, f"{dev.path}: second run exited {again.rc}: {again.stderr}"
    assert again.json["changed"] == [], f"{where}: a second run changed {again.json['changed']}"
    after = _state(guest, dev, p["partition"], p["udev_rule"])
    assert after == before, f"{where}: the second run rewrote something: {before} -> {after}"

    path, partition, node = replug(guest, dev, declared.serial).split()[:3]
    vm = next(n for n, devs in guest_devices.items() if devs.get(declared.serial) is dev)
    guest_devices[vm][declared.serial] = dataclasses.replace(dev, name=path.rsplit("/", 1)[1])
    assert node == f"{OWNER}:{GROUP}:660", f"{where}: {partition} after a re-plug is {node}"


@pytest.fixture(params=MISALIGN_PARAMS)
def blank_misalign(request, lab_state, lab_guests, guest_devices):
    """A disk of MISALIGN_PARAMS, blanked again after the test."""
    guest, declared, dev = resolve_disk(request.param, lab_state, lab_guests, guest_devices)
    yield guest, declared, dev
    blank_disk(guest, dev, declared.serial)


def test_misalign_at_sector_63(blank_misalign):
    guest, declared, dev = blank_misalign
    g = declared.geometry
    result = guest_tool(guest, "provision-redo-disk", dev.path, "--start", "63s", "--json")
    assert result.rc == 0, f"{dev.path}: provision-redo-disk --start 63s exited {result.rc}: {result.stderr}"
    p = result.json
    start = 63 * g.logical_block_size
    # What the start must be a multiple of: the physical sector, or the minimum I/O size a device
    # advertises above it (the kernel's alignment_offset takes the larger of the two as well).
    granule = g.guest_min_io
    unit = "minimum I/O size" if g.min_io_size > g.physical_block_size else "physical sector"
    into = start % granule
    assert (p["start_sectors"], p["start_bytes"]) == (63, start), p
    where = f"{dev.path} ({declared.name}): partition at byte {start}"
    if into:  # 512e: 32256 B is 3584 B into a 4 KiB physical sector; 4Kn: 258048 B is 12 KiB into 16 KiB
        assert p["aligned"] is False, f"{where} reported as aligned"
        offset = expected_alignment(declared) or (granule - into)
        assert p["alignment_offset"] == offset, f"{where}: kernel alignment_offset {p['alignment_offset']}, " \
                                                f"expected {offset}"
        assert p["parted_align_check"] == {"optimal": False, "minimal": False}, p["parted_align_check"]
        assert f"{into} bytes into a {granule}-byte {unit}" in result.stderr, result.stderr
    else:  # 512n: any sector is aligned; 4Kn: sector 63 is 258048 B, a multiple of 4 KiB
        assert p["aligned"] is True, f"{where} reported as misaligned"
        assert p["alignment_offset"] == expected_alignment(declared), p
        # parted's "optimal" is a 1 MiB boundary unless the disk reports an optimal I/O size.
        assert p["parted_align_check"] == {"optimal": False, "minimal": True}, p["parted_align_check"]
        assert f"aligned to the {granule}-byte {unit}" in result.stderr, result.stderr


@pytest.fixture
def first_disk(lab_state, lab_guests, guest_devices):
    """The first declared disk, blanked again after the test."""
    param = disk_params()[0].values[0]
    guest, declared, dev = resolve_disk(param, lab_state, lab_guests, guest_devices)
    yield guest, declared, dev
    blank_disk(guest, dev, declared.serial)


def test_provision_creates_a_missing_owner_and_group(first_disk):
    guest, declared, dev = first_disk
    owner, group = "sl_redo_owner", "sl_redo_group"
    assert not guest.run("getent passwd", owner).ok and not guest.run("getent group", group).ok
    try:
        result = guest_tool(guest, "provision-redo-disk", dev.path, "--owner", owner, "--group", group,
                            "--mode", "0640", "--json")
        assert result.rc == 0, f"{dev.path}: exited {result.rc}: {result.stderr}"
        assert result.json["changed"][:2] == [f"group {group}", f"user {owner}"], result.json["changed"]
        assert (result.json["owner"], result.json["group"], result.json["mode"]) == (owner, group, "0640")
        assert guest.check_output("id -gn", owner) == group
    finally:
        guest.run("sudo -n sh -c", 'userdel "$1"; groupdel "$2"; true', "cleanup", owner, group)
