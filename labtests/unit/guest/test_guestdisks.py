"""Parsers of guest output, against outputs saved from the default lab's Debian 12 guest
(kernel 6.1.0-50, util-linux 2.38.1, nvme-cli 2.3) in labtests/unit/data/."""

from __future__ import annotations

from pathlib import Path

import pytest

from sectorlab.guest import disks as guestdisks
from sectorlab.guest.disks import GuestOutputError

DATA = Path(__file__).parents[1] / "data"


def test_lsblk_default_lab():
    disks = guestdisks.parse_lsblk((DATA / "lsblk-debian12-default-lab.json").read_text())
    serials = guestdisks.by_serial(disks)
    assert {s: (d.logical_block_size, d.physical_block_size) for s, d in serials.items()
            if s.startswith("sl")} == {
        "sl00-nvme-512n": (512, 512), "sl01-nvme-4k": (4096, 4096), "sl02-ntcp-512e": (512, 4096),
        "sl02-ntcp-512e-bk": (512, 4096), "sl03-vblk-512n": (512, 512), "sl04-vblk-512e": (512, 4096),
        "sl05-vblk-4k": (4096, 4096), "sl06-scsi-512n": (512, 512), "sl07-scsi-512e": (512, 4096),
        "sl08-scsi-4k": (4096, 4096)}
    tcp = serials["sl02-ntcp-512e"]
    assert tcp.name.startswith("nvme") and tcp.alignment_offset == -1 and tcp.minimum_io_size == 4096
    assert all(d.size_bytes == 256 << 20 for s, d in serials.items() if s.startswith("sl"))
    assert not any(d.name.startswith(("loop", "sr")) for d in disks), "only TYPE disk"


@pytest.mark.parametrize("text,why", [
    ("not json", "not JSON"),
    ('{"devices": []}', "no 'blockdevices' list"),
    ('{"blockdevices": [{"name": "vdb", "type": "disk", "log-sec": "x"}]}', "no integer 'log-sec'"),
])
def test_lsblk_unexpected_output(text, why):
    with pytest.raises(GuestOutputError, match=f"unexpected output of 'lsblk -J .*{why}"):
        guestdisks.parse_lsblk(text)


def test_blockdev_sizes():
    text = (DATA / "blockdev-getss-getpbsz-sector512e.txt").read_text()
    assert guestdisks.parse_blockdev_sizes(text, "blockdev --getss --getpbsz /dev/vdd") == (512, 4096)
    with pytest.raises(GuestOutputError, match="expected two numbers"):
        guestdisks.parse_blockdev_sizes("512\n", "blockdev --getss --getpbsz /dev/vdd")


def test_nvme_id_ns_4kn():
    ns = guestdisks.parse_nvme_id_ns((DATA / "nvme-id-ns-sector4k.json").read_text(), "nvme id-ns")
    assert ns["data_size"] == 4096 and ns["formats"][ns["lba_format"]] == 4096


def test_nvme_id_ns_tcp_512e():
    ns = guestdisks.parse_nvme_id_ns((DATA / "nvme-id-ns-tcp-sector512e.json").read_text(), "nvme id-ns")
    assert (ns["lba_format"], ns["data_size"]) == (0, 512)


def test_nvme_id_ns_unexpected():
    with pytest.raises(GuestOutputError, match="no 'flbas' and 'lbafs'"):
        guestdisks.parse_nvme_id_ns('{"nsze": 1}', "nvme id-ns /dev/nvme0n1 -o json")
    with pytest.raises(GuestOutputError, match="selects LBA format 3 of 1"):
        guestdisks.parse_nvme_id_ns('{"flbas": 3, "lbafs": [{"ms": 0, "ds": 9, "rp": 0}]}', "nvme id-ns")
