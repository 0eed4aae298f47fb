"""What scenarios require of the running lab, asked of its record (labtests/requires.py): the
disks each picks from lab.json, and the skip with its reason when the lab has none."""

import pytest

from labtests import requires
from labtests.unit import records


def _disk(name: str, vm: str = "lab1", **changes):
    return records.disk(name=name, vm=vm, serial=f"s-{name}", **changes)


SLOW = {"latency": "hdd-7200", "write_delay_ms": 4, "mapper": "/dev/mapper/slow"}


def test_behaviour_disks_are_two_plain_and_one_slow_of_one_bus_and_geometry():
    lab = records.lab({"lab1": records.vm()}, [_disk("a"), _disk("b"), _disk("slow", **SLOW),
                                                _disk("other-bus", bus="scsi")])
    vm, fast, slow = requires.behaviour_disks_of(lab)
    assert (vm, [d.name for d in fast], [d.name for d in slow]) == ("lab1", ["a", "b"], ["slow"])
    assert slow[0].latency_profile.expected_write_p50_ms is not None


@pytest.mark.parametrize("disks", [
    [_disk("a"), _disk("slow", **SLOW)],  # one plain disk only
    [_disk("a"), _disk("b", geometry="sector512n"), _disk("slow", **SLOW)],  # the second of another geometry
    [_disk("a"), _disk("b"), _disk("custom", latency="custom-4ms", write_delay_ms=4)],  # no documented range
    [_disk("a"), _disk("b")],
])
def test_no_behaviour_disks_without_the_whole_set(disks):
    lab = records.lab({"lab1": records.vm()}, disks)
    assert requires.behaviour_disks_of(lab) is None
    with pytest.raises(pytest.skip.Exception, match="labs/behaviours.toml has"):
        requires.require(requires.behaviour_disks_of(lab), requires.BEHAVIOURS)


def test_rmw_pair_is_a_plain_twin_on_the_same_vm():
    lab = records.lab({"lab1": records.vm(), "lab2": records.vm(domain="d2")},
                      [_disk("rmw", rmw=True, geometry="sector512e"), _disk("twin-elsewhere", vm="lab2",
                                                                              geometry="sector512e"),
                       _disk("twin", geometry="sector512e")])
    vm, rmw, twin = requires.rmw_pair_of(lab)
    assert (vm, rmw.name, twin.name) == ("lab1", "rmw", "twin")
    alone = records.lab({"lab1": records.vm()}, [_disk("rmw", rmw=True, geometry="sector512e")])
    assert requires.rmw_pair_of(alone) is None


def test_first_disk_skips_disks_with_something_added():
    lab = records.lab({"lab1": records.vm()}, [_disk("a-slow", **SLOW), _disk("b")])
    assert requires.first_disk_of(lab, "virtio").name == "b"
    assert requires.first_disk_of(lab, "nvme") is None
    assert requires.require(["x"], "never said") == ["x"]
