"""A lab made by `sectorlab lab from-host` from a saved collector file (a database server with NVMe
512n, 4Kn and 512e namespaces, a QLC NVMe namespace with 16 KiB minimum and 128 KiB optimal I/O, a
SAS 512e HDD, a SATA 512e SSD and a SAS disk with 16 KiB physical sectors) comes up, and its guest
shows every disk with the server's sector sizes and I/O sizes (`make test`, lane "databases"). On
the 16 KiB disk the rules engine in the guest reads the device and warns that every redo write is
smaller than its write unit.
"""

from __future__ import annotations

import subprocess

import pytest

from sectorlab import lab as lab_mod
from sectorlab.guest import disks as guestdisks
from sectorlab.paths import REPO

pytestmark = pytest.mark.fromhost

SECTORLAB = str(REPO / ".venv" / "bin" / "sectorlab")
COLLECTED = REPO / "labtests" / "unit" / "data" / "from-host" / "collector-db-server.json"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    path = tmp_path_factory.mktemp("from-host") / "from-host-db1.toml"
    made = subprocess.run([SECTORLAB, "lab", "from-host", str(COLLECTED), "-o", str(path), "--size-mib", "64"],
                          capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    up = subprocess.run([SECTORLAB, "lab", "up", "--lab", str(path)], capture_output=True, text=True, timeout=900)
    try:
        assert up.returncode == 0, up.stderr[-3000:]
        lab = lab_mod.load_lab(path)
        yield lab, lab_mod.read_lab_json(lab.name)
    finally:
        down = subprocess.run([SECTORLAB, "lab", "down", "--lab", str(path)], capture_output=True, text=True,
                              timeout=600)
        assert down.returncode == 0, down.stderr


@pytest.fixture(scope="module")
def seen(lab):
    """Per VM: its guest and the disks it shows (lsblk), by serial."""
    _, state = lab
    guests = lab_mod.guests_from_lab_json(state)
    try:
        yield {vm: (g, {d.serial: d for d in guestdisks.parse_lsblk(g.check_output(guestdisks.LSBLK_COMMAND))})
               for vm, g in guests.items()}
    finally:
        for g in guests.values():
            g.close()


def test_every_disk_of_the_server_shows_its_sector_sizes_in_the_guest(lab, seen):
    definition, state = lab
    for disk in state.disks.values():
        dev = seen[disk.vm][1].get(disk.serial)
        assert dev is not None, f"{disk.name} (serial {disk.serial}) is not in the guest: {seen[disk.vm][1]}"
        assert (dev.logical_block_size, dev.physical_block_size) == \
            (disk.logical_block_size, disk.physical_block_size), (disk.name, dev)
        if disk.min_io_size or disk.opt_io_size:  # the QLC namespace: on virtio, with its I/O sizes
            assert (dev.minimum_io_size, dev.optimal_io_size) == (disk.min_io_size, disk.opt_io_size), \
                (disk.name, dev)
    assert {d.name for d in state.disks.values()} == {d.name for _, d in definition.disks()}
    assert [(d.bus, d.min_io_size, d.opt_io_size) for d in state.disks.values() if d.min_io_size] == \
        [("virtio", 16384, 131072)]


def test_on_the_16k_disk_the_guests_rules_engine_warns_of_writes_below_the_unit(lab, seen):
    _, state = lab
    disk = next(d for d in state.disks.values() if d.physical_block_size == 16384)
    guest, devices = seen[disk.vm]
    result = guest.run("sudo -n redo-check", f"/dev/{devices[disk.serial].name}")
    assert result.rc == 0, result.stderr
    assert result.stdout.startswith("BLOCKSIZE 4096: allowed (default 4096; host sector 4096, media sector 16384; "
                                    "evidence: assumed)")
    assert "the device writes in units of 16384 bytes (its physical sector)" in result.stderr, result.stderr
