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
    return not d.rmw and not d.write_delay_ms and not d.device


def behaviour_disks_of(record: LabRecord) -> tuple[str, list[DiskRecord], list[DiskRecord]] | None:
    """(VM, two or more disks with nothing added, the disks with a catalog latency profile that has a
    documented range) of the first VM that has both on one bus and geometry."""
    for vm in sorted(record.vms):
        disks = record.disks_of(vm)
        slow = [d for d in disks if d.latency_profile and d.latency_profile.expected_write_p50_ms]
        fast = [d for d in disks if slow and _plain(d) and d.bus == slow[0].bus and d.geometry == slow[0].geometry]
        if slow and len(fast) >= 2:
            return vm, fast, slow
    return None


BEHAVIOURS = ("the lab has no two plain disks and one with a latency profile of the same bus and geometry "
              "(labs/behaviours.toml has)")


def rmw_pair_of(record: LabRecord) -> tuple[str, DiskRecord, DiskRecord] | None:
    """(VM, a disk with rmw = true, a plain disk of its VM, bus and geometry)."""
    for d in record.disks.values():
        if d.rmw:
            twin = next((t for t in record.disks_of(d.vm) if _plain(t) and t.bus == d.bus
                         and t.geometry == d.geometry), None)
            if twin:
                return d.vm, d, twin
    return None


RMW_PAIR = ("the lab has no disk with rmw = true beside one of the same bus and geometry without it "
            "(labs/behaviours.toml has)")


def first_disk_of(record: LabRecord, bus: str) -> DiskRecord | None:
    """The lab's first disk on `bus` (in lab.json's order) with nothing added below the guest."""
    return next((d for d in record.disks.values() if d.bus == bus and _plain(d)), None)
