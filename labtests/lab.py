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


def resolve_disk(param, lab_state: dict, lab_guests: dict, guest_devices: dict):
    """(guest, declared disk, the guest's BlockDevice) for a disk_params() param; a declared disk the
    guest does not show is a failure that names what the guest has and where its console log is."""
    vm_name, declared = param
    dev = guest_devices[vm_name].get(declared.serial)
    if dev is None:
        seen = ", ".join(f"{d.path}={s}" for s, d in sorted(guest_devices[vm_name].items())) or "none"
        pytest.fail(f"{vm_name}: declared disk {declared.name} (bus {declared.bus}, serial {declared.serial}) is "
                    f"not in the guest; disks with serials there: {seen}; console log: "
                    f"{lab_state['vms'][vm_name].get('console_log')}", pytrace=False)
    return lab_guests[vm_name], declared, dev
