"""Sector detection: every disk the lab declared shows in the guest with exactly its geometry.

For each declared disk (ids like nvme-sector4k, virtio-sector512e, so `-k sector4k` selects the
4Kn disks on every bus, and `-k iu16k` those with a 16 KiB minimum I/O size): found by serial; the
kernel's queue limits in sysfs, `blockdev --getss --getpbsz`, `lsblk -t`, and for NVMe the LBA
format in use (`nvme id-ns`) all equal the declared logical/physical sizes, and the minimum and
optimal I/O sizes are those the geometry advertises. Guards the lab's disk plumbing (terraform/domain.xsl.tftpl:
<blockio>, -device nvme, the in-guest NVMe/TCP target) against QEMU, libvirt and kernel changes.
"""

from __future__ import annotations

import pytest

from labtests.support.lab import disk_params, expected_alignment, expected_optimal_io, resolve_disk
from sectorlab.guest import disks as guestdisks

pytestmark = pytest.mark.lab


@pytest.fixture(params=disk_params())
def disk(request, lab_state, lab_guests, guest_devices):
    return resolve_disk(request.param, lab_state, lab_guests, guest_devices)


def _expect(dev, what: str, actual: int, expected: int, geometry: str) -> None:
    assert actual == expected, f"{dev.path}: {what}={actual}, expected {expected} ({geometry})"


def test_sysfs_queue_limits(disk):
    guest, declared, dev = disk
    g = declared.geometry
    queue = f"/sys/block/{dev.name}/queue"
    values = guest.check_output(f"cat {queue}/logical_block_size {queue}/physical_block_size "
                                f"{queue}/minimum_io_size {queue}/optimal_io_size "
                                f"/sys/block/{dev.name}/alignment_offset").split()
    logical, physical, minimum_io, optimal_io, alignment = (int(v) for v in values)
    _expect(dev, "logical_block_size", logical, g.logical_block_size, g.name)
    _expect(dev, "physical_block_size", physical, g.physical_block_size, g.name)
    # The device's own minimum I/O size (sector4k-iu16k: 16384), else the physical sector.
    _expect(dev, "minimum_io_size", minimum_io, g.guest_min_io, g.name)
    _expect(dev, "optimal_io_size", optimal_io, expected_optimal_io(declared), g.name)
    _expect(dev, "alignment_offset", alignment, expected_alignment(declared), g.name)


def test_blockdev_sector_sizes(disk):
    guest, declared, dev = disk
    cmd = f"sudo -n blockdev --getss --getpbsz {dev.path}"
    logical, physical = guestdisks.parse_blockdev_sizes(guest.check_output(cmd), cmd)
    _expect(dev, "blockdev --getss", logical, declared.geometry.logical_block_size, declared.geometry.name)
    _expect(dev, "blockdev --getpbsz", physical, declared.geometry.physical_block_size, declared.geometry.name)


def test_lsblk_topology(disk):
    guest, declared, dev = disk
    _expect(dev, "lsblk LOG-SEC", dev.logical_block_size, declared.geometry.logical_block_size, declared.geometry.name)
    _expect(dev, "lsblk PHY-SEC", dev.physical_block_size, declared.geometry.physical_block_size,
            declared.geometry.name)
    _expect(dev, "lsblk ALIGNMENT", dev.alignment_offset, expected_alignment(declared), declared.geometry.name)
    _expect(dev, "lsblk MIN-IO", dev.minimum_io_size, declared.geometry.guest_min_io, declared.geometry.name)
    _expect(dev, "lsblk OPT-IO", dev.optimal_io_size, expected_optimal_io(declared), declared.geometry.name)
    assert dev.size_bytes == declared.size_mib * 1024 * 1024, \
        f"{dev.path}: size {dev.size_bytes}, expected {declared.size_mib} MiB"


@pytest.mark.parametrize("disk", disk_params(buses=("nvme", "nvme-tcp")), indirect=True)
def test_nvme_lba_format_in_use(disk):
    guest, declared, dev = disk
    cmd = f"sudo -n nvme id-ns {dev.path} -o json"
    ns = guestdisks.parse_nvme_id_ns(guest.check_output(cmd), cmd)
    _expect(dev, f"LBA format {ns['lba_format']} data size", ns["data_size"],
            declared.geometry.logical_block_size, declared.geometry.name)
