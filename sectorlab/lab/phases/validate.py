"""Phase 'validate': the lab read once, its lock taken, the host checked before anything is made."""

from __future__ import annotations

import contextlib
from pathlib import Path

from ... import labdef
from .. import ownership
from ..state import Progress, as_lab, lab_lock, own_ports, state_dir
from ..teardown import check_host
from .runner import Phase


def run(given: labdef.Lab | Path, held: contextlib.ExitStack, progress: Progress) -> dict:
    lab = as_lab(given)  # read once: a Lab from the CLI or the bench is not read again
    held.enter_context(lab_lock(lab.name, "lab up"))  # from here on, this process alone works on it
    state, ports = state_dir(lab.name), own_ports(lab.name)
    host = check_host(lab, ports)  # before anything of the lab is made
    identity = ownership.identity(lab.name, create=True, adopt=host.adoptable_id())
    state.mkdir(parents=True, exist_ok=True)
    progress(f"lab {lab.name}: {len(lab.vms)} VM(s), {sum(len(v.disks) for v in lab.vms)} data disks ({lab.path})")
    return {"lab": lab, "state": state, "own_ports": ports, "identity": identity, "uri": lab.vms[0].libvirt_uri,
            "vm_names": [vm.name for vm in lab.vms], "vm_guest": {vm.name: vm.guest for vm in lab.vms}}


PHASE = Phase("validate", run, gives=("lab", "state", "own_ports", "identity", "uri", "vm_names", "vm_guest"))
