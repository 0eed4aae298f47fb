"""What scenarios require of the running lab, asked of its record (labtests/support/requires.py): the
disks each picks from lab.json, and the skip with its reason when the lab has none."""

import pytest

from labtests.support import requires
from labtests.unit import records


def _disk(name: str, vm: str = "lab1", **changes):
    return records.disk(name=name, vm=vm, serial=f"s-{name}", **changes)


SLOW = {"device": "hdd-7200", "volume": "/run/sectorlab/devices/default/slow/disk.sock"}


def test_behaviour_disks_are_two_plain_and_one_slow_of_one_bus_and_geometry():
    # a slow 512e disk first (the read-modify-write scenario's), whose geometry no two plain disks have
    lab = records.lab({"lab1": records.vm()}, [_disk("a-512e", geometry="sector512e", **SLOW), _disk("a"),
                                                _disk("b"), _disk("slow", **SLOW), _disk("other-bus", bus="scsi")])
    vm, fast, slow = requires.behaviour_disks_of(lab)
    assert (vm, [d.name for d in fast], [d.name for d in slow]) == ("lab1", ["a", "b"], ["slow"])


@pytest.mark.parametrize("disks", [
    [_disk("a"), _disk("slow", **SLOW)],  # one plain disk only
    [_disk("a"), _disk("b", geometry="sector512n"), _disk("slow", **SLOW)],  # the second of another geometry
    [_disk("a"), _disk("b"), _disk("floor", device="floor")],  # a model that writes for free is not slow
    [_disk("a"), _disk("flash", device="intel-p3700"), _disk("slow", **SLOW)],  # a modelled device is not plain
    [_disk("a"), _disk("b")],
])
def test_no_behaviour_disks_without_the_whole_set(disks):
    lab = records.lab({"lab1": records.vm()}, disks)
    assert requires.behaviour_disks_of(lab) is None
    with pytest.raises(pytest.skip.Exception, match="labs/behaviours.toml has"):
        requires.require(requires.behaviour_disks_of(lab), requires.BEHAVIOURS)


E512 = {"geometry": "sector512e", "logical_block_size": 512, "physical_block_size": 4096}


def test_rmw_pair_is_a_model_served_512e_disk_and_a_plain_twin_on_the_same_vm():
    lab = records.lab({"lab1": records.vm(), "lab2": records.vm(domain="d2")},
                      [_disk("rmw", device="hdd-7200", **E512), _disk("twin-elsewhere", vm="lab2", **E512),
                       _disk("twin", device="floor", **E512)])  # the floor's model is a plain disk
    vm, rmw, twin = requires.rmw_pair_of(lab)
    assert (vm, rmw.name, twin.name) == ("lab1", "rmw", "twin")
    alone = records.lab({"lab1": records.vm()}, [_disk("rmw", device="hdd-7200", **E512)])
    assert requires.rmw_pair_of(alone) is None
    native = records.lab({"lab1": records.vm()}, [_disk("rmw", device="hdd-7200"), _disk("twin")])  # 4k: no RMW
    assert requires.rmw_pair_of(native) is None


def test_rmw_pair_is_not_a_flash_drive_whose_partial_writes_read_its_unit():
    """A 512e flash drive (a write unit) reads its unit, not the sector, before a partial write: it
    is the DRAM buffer scenario's, not the read-modify-write one's, even when it comes first."""
    lab = records.lab({"lab1": records.vm()},
                      [_disk("dram", device="nvme-512e-dram", **E512), _disk("nand", device="nvme-512e", **E512),
                       _disk("rmw", device="hdd-7200", **E512), _disk("twin", device="floor", **E512)])
    vm, rmw, twin = requires.rmw_pair_of(lab)
    assert (rmw.name, twin.name) == ("rmw", "twin")
    vm, dram, nand = requires.buffer_pair_of(lab)
    assert (dram.name, nand.name) == ("dram", "nand")
    cell = records.lab({"lab1": records.vm()}, [_disk("cell", device="exadata-cell-flashlog"), _disk("a"),
                                                _disk("busy", device="exadata-cell-flashlog-busy")])
    assert [d.name for d in requires.flash_log_cells_of(cell)] == ["cell", "busy"]
    assert requires.buffer_pair_of(cell) is None
    with pytest.raises(pytest.skip.Exception, match="exadata-cell-flashlog"):
        requires.require(requires.flash_log_cells_of(records.lab({"lab1": records.vm()}, [_disk("a")])),
                         requires.FLASH_LOG_CELL)


def test_first_disk_skips_disks_with_something_added():
    lab = records.lab({"lab1": records.vm()}, [_disk("a-slow", **SLOW), _disk("b")])
    assert requires.first_disk_of(lab, "virtio").name == "b"
    assert requires.first_disk_of(lab, "nvme") is None
    assert requires.require(["x"], "never said") == ["x"]
