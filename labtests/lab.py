"""How scenarios find the lab: the declared disks (from the lab definition, at collection time,
so test ids exist even before the lab is up) and the running lab (lab.json written by lab-up)."""

from __future__ import annotations

from functools import cache

import pytest

from sectorlab import lab as lab_mod
from sectorlab import labdef


@cache
def definition() -> labdef.Lab:
    return labdef.load(lab_mod.lab_file_from_env())


def declared_disks() -> list[tuple[labdef.VM, labdef.Disk]]:
    return list(definition().disks())


def disk_params(buses: tuple[str, ...] | None = None):
    """One pytest param per declared disk (on `buses`, when given), id = disk name (e.g. nvme-sector4k)."""
    return [pytest.param((vm.name, disk), id=disk.name) for vm, disk in declared_disks()
            if buses is None or disk.bus in buses]
