"""A lab left defined but stopped, as a host restart or a killed run leaves it, comes up fresh; a
lab-up of a running lab converges at once.

Run by `make test` after the scenarios, on a lab that is up (it brings the lab down and up itself,
so `make scenarios` and `-m lab` never select it).
"""

from __future__ import annotations

import pytest

from sectorlab import lab as lab_mod
from sectorlab.host import libvirt

pytestmark = pytest.mark.lifecycle

MARK = "sectorlab-restart-test"


def test_lab_up_after_a_host_restart_brings_back_fresh_disks(lab_state, lab_guests, guest_devices):
    # What a run leaves on its disks: a few bytes at the start of every declared data disk.
    for vm_name, guest in lab_guests.items():
        for serial, dev in guest_devices[vm_name].items():
            if any(d.serial == serial for d in lab_state.disks.values()):
                guest.check_output(f"printf {MARK} | sudo -n dd of={dev.path} bs={dev.logical_block_size} "
                                   "conv=sync oflag=direct status=none")
    declared = {name: lab_state.disks_of(name) for name in lab_guests}
    for name, guest in lab_guests.items():  # the check lab-up makes sees them
        dirty = lab_mod.probe(guest, declared[name], pristine=True)["dirty"]
        assert len(dirty) == len(declared[name]), f"{name}: written disks not seen as written: {dirty}"
        guest.close()

    # The host restarts: the VMs stop; their definitions, volumes and the lab's state stay.
    for vm in lab_state.vms.values():
        libvirt.get_host(lab_state.libvirt_uri).virsh("destroy", vm.domain)

    said: list[str] = []
    data = lab_mod.up(lab_mod.lab_file_from_env(), progress=said.append, require_warm=True)

    assert any("taking the lab down first" in line for line in said), "\n".join(said)
    assert data.timing.path == "warm"
    for name, guest in lab_mod.guests_from_lab_json(data).items():
        try:
            assert lab_mod.probe(guest, declared[name], pristine=True)["dirty"] == []
        finally:
            guest.close()


def test_lab_up_of_a_running_lab_converges_without_waiting_for_its_console(lab_state):
    """A second lab-up finds the lab running and changes nothing; a guest restored from a saved
    state (this run's is) never wrote the console line a booting one does, so SSH is tried at once."""
    said: list[str] = []
    data = lab_mod.up(lab_mod.lab_file_from_env(), progress=said.append)
    assert data.timing.path == "converge", "\n".join(said)
    assert not [line for line in said if "console" in line], "\n".join(said)
    assert data.vms.keys() == lab_state.vms.keys()
