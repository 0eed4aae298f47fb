"""Phase 'hot-plug': the NVMe controllers that Terraform's provider cannot define, plugged over
QEMU's monitor (lab/hotplug.py), after any saved state (a restored guest gets them anew)."""

from __future__ import annotations

from .. import hotplug, record
from ..state import Progress
from .runner import Phase


def run(uri: str, vm_names: list[str], data: record.LabRecord, progress: Progress) -> None:
    for name in vm_names:
        added = hotplug.hotplug_nvme(uri, data.vm(name).domain, data.disks_of(name))
        if added:
            progress(f"{name}: hot-plugged NVMe controller(s) {', '.join(added)}")


PHASE = Phase("hot-plug", run, label="disk check")
