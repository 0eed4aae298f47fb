"""What a scenario needs of the running lab, asked of its record (lab.json), as blktests' requires():
a lab without it skips the scenario saying what is missing and which lab has it. A lab that
declared a disk and does not show it is not a skip: lab-up's check and the scenarios fail on it.

Each `*_of(record)` answers (None when the lab has none); `require(found, reason)` is the one skip."""

from __future__ import annotations

import pytest

from sectorlab.lab.record import DiskRecord, LabRecord


def require(found, reason: str):
    """`found`, or a skip with `reason` when the lab has nothing of the kind."""
    if not found:
        pytest.skip(reason)
    return found


def _plain(d: DiskRecord) -> bool:
    """A disk with no behaviour of its own: the floor's model, or a volume on a remote host."""
    return d.device in (None, "floor")


SLOW_DEVICES = ("hdd-7200", "hdd-15k")  # device profiles whose writes take milliseconds (seek and rotation)


def behaviour_disks_of(record: LabRecord) -> tuple[str, list[DiskRecord], list[DiskRecord]] | None:
    """(VM, two or more disks with nothing added, the disks served by a spinning disk's device model)
    of the first VM that has both on one bus and geometry."""
    for vm in sorted(record.vms):
        disks = record.disks_of(vm)
        for kind in dict.fromkeys((d.bus, d.geometry) for d in disks if d.device in SLOW_DEVICES):
            slow = [d for d in disks if d.device in SLOW_DEVICES and (d.bus, d.geometry) == kind]
            fast = [d for d in disks if _plain(d) and (d.bus, d.geometry) == kind]
            if len(fast) >= 2:
                return vm, fast, slow
    return None


BEHAVIOURS = ("the lab has no two plain disks and one served by a spinning disk's device model (device = "
              "\"hdd-7200\") of the same bus and geometry (labs/behaviours.toml has)")


def rmw_pair_of(record: LabRecord) -> tuple[str, DiskRecord, DiskRecord] | None:
    """(VM, a model-served disk that reads a partly written physical sector before the write (a
    physical sector larger than the logical one, a model with times: not the floor, and no flash
    write unit, whose reads are the unit's: buffer_pair_of), a plain disk of its VM, bus and
    geometry)."""
    from sectorlab.devices import profiles
    for d in record.disks.values():
        unit = profiles.get(d.device).write_unit if d.device else 0
        if d.device and d.device != "floor" and d.physical_block_size > d.logical_block_size and unit == 0:
            twin = next((t for t in record.disks_of(d.vm) if _plain(t) and t.bus == d.bus
                         and t.geometry == d.geometry), None)
            if twin:
                return d.vm, d, twin
    return None


RMW_PAIR = ("the lab has no 512e disk served by a device model (it reads a partly written physical sector "
            "first) beside a plain one of the same bus and geometry (labs/behaviours.toml has)")


def first_disk_of(record: LabRecord, bus: str) -> DiskRecord | None:
    """The lab's first disk on `bus` (in lab.json's order) with nothing added below the guest."""
    return next((d for d in record.disks.values() if d.bus == bus and _plain(d)), None)


def flash_log_cells_of(record: LabRecord) -> list[DiskRecord]:
    """The disks served by a cell with smart flash logging (a device profile with a flash log)."""
    from sectorlab.devices import profiles
    return [d for d in record.disks.values() if d.device and profiles.get(d.device).flash_log]


FLASH_LOG_CELL = ("the lab has no disk served by a cell with smart flash logging (device = "
                  "\"exadata-cell-flashlog\"; labs/behaviours.toml has two)")


def buffer_pair_of(record: LabRecord) -> tuple[str, DiskRecord, DiskRecord] | None:
    """(VM, a disk whose profile is a variant with a DRAM write buffer, a disk of its base profile
    on the same VM, bus and geometry)."""
    from sectorlab.devices import profiles
    for d in record.disks.values():
        p = profiles.get(d.device) if d.device else None
        if p and p.base and p.params.get("write-buffer", "0") != "0":
            twin = next((t for t in record.disks_of(d.vm) if t.device == p.base and t.bus == d.bus
                         and t.geometry == d.geometry), None)
            if twin:
                return d.vm, d, twin
    return None


BUFFER_PAIR = ("the lab has no disk of a profile with a DRAM write buffer beside one of the profile it varies, "
               "same bus and geometry (device = \"nvme-512e-dram\" and \"nvme-512e\"; labs/behaviours.toml has them)")
