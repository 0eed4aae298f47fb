"""Phase 'models': the device models of the lab's disks, before Terraform starts or restores the
domains that open their sockets (a converging lab's run already: none is started again)."""

from __future__ import annotations

import time

from ... import labdef
from ...host import libvirt
from .. import modelled
from ..state import Progress
from .runner import Phase, Timings


def run(lab: labdef.Lab, uri: str, progress: Progress, timings: Timings) -> None:
    if not any(vm.profile(d) for vm, d in lab.disks()):
        return
    start = time.monotonic()
    if modelled.start(lab, libvirt.get_host(uri).qemu_uid(), progress):
        timings.add("device models", time.monotonic() - start)


PHASE = Phase("models", run)
