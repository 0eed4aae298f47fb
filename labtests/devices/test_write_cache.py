"""Each disk's write cache as its device profile has it (devices/profiles.py, "write_cache"): the
guest's queue/write_cache reads what the lab presents (none and protected: "write through"; volatile:
"write back"), and the device model's trace holds as many flushes per redo write as Linux sends to
such a device: none to a write-through disk, so a power-loss-protected P3700 or a battery-backed
array is not charged the flush per O_DSYNC write it never gets on real hardware. The default lab
holds every bus (virtio and SCSI are told by their QEMU device, write-cache=off; NVMe and NVMe/TCP
by the guest itself, as QEMU 7.2's NVMe device keeps its volatile cache); the behaviour lab holds
the profiles with a cache of their own."""

from __future__ import annotations

from pathlib import Path

import pytest

from labtests.support.lab import unwatched_paths
from labtests.support.requires import require
from sectorlab.bench.cost import floor
from sectorlab.devices import profiles

# A count of flushes per write, not a timing: 200 writes or 1 s, whichever comes first (a fast disk
# writes 200 in a tenth of a second; the slowest profile, a flush per write to a 7,200 rpm platter,
# some 40 in 1 s).
RUN_S = 1
RUN_WRITES = 200


def _served(lab_state):
    return require([d for d in lab_state.disks.values() if d.device],
                   "the lab's disks are served by no device model (a lab on a remote libvirt host)")


def _check(lab_name, d, guest, path, record_property) -> None:
    profile = profiles.get(d.device)
    assert d.write_cache == profile.presented, (d.name, d.write_cache, profile.presented)
    shown = guest.check_output("cat", f"/sys/block/{Path(path).name}/queue/write_cache").strip()
    assert shown == d.write_cache, \
        f"{path} ({d.bus}, device profile {d.device}, write cache {profile.write_cache}): queue/write_cache " \
        f"is {shown!r}, expected {d.write_cache!r}"
    run = floor.measure(guest, lab_name, d, path, RUN_S, RUN_WRITES)  # the run and trace cut bench-floor makes
    assert run["model_writes"], f"{d.name}: the model saw no write of a {RUN_S} s redo-writer run"
    said = (f"{d.name} ({d.bus}, {d.device}, write cache {profile.write_cache}, guest reads {shown}): "
            f"{run['model_writes']} writes, {run['flushes']} flushes, {run['fua_writes']} with FUA; log file "
            f"parallel write p50 {run['p50_us']:.0f} us (the model served p50 {run['model_p50_us']:.1f} us)")
    record_property(d.name, said)
    print(said)
    if d.write_cache == "write through":
        assert run["flushes"] == 0, f"{d.name}: {said}: a write-through disk gets no flush"
    else:
        assert run["flushes"] >= run["model_writes"] - 2, f"{d.name}: {said}: each O_DSYNC write carries a flush"


def _every_disk(lab_state, lab_guests, guest_devices, record_property) -> None:
    served = _served(lab_state)
    paths = unwatched_paths(served, lab_guests, guest_devices)
    for d in served:
        _check(lab_state.lab, d, lab_guests[d.vm], paths[d.name], record_property)


@pytest.mark.lab
def test_every_bus_shows_its_disks_write_cache_and_gets_flushes_as_it_says(lab_state, lab_guests, guest_devices,
                                                                         record_property):
    """The default lab: a disk of each geometry on each bus, served by the floor (no cache)."""
    _every_disk(lab_state, lab_guests, guest_devices, record_property)


@pytest.mark.lab
@pytest.mark.behaviours
def test_every_profile_shows_its_write_cache_and_gets_flushes_as_it_says(lab_state, lab_guests, guest_devices,
                                                                       record_property):
    """The behaviour lab: disks without a cache (hdd-7200, hdd-15k, the floor) and a power-loss
    protected one (intel-p3700 on NVMe)."""
    _every_disk(lab_state, lab_guests, guest_devices, record_property)
