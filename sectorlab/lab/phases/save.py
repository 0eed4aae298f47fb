"""Phase 'save' (the cold route): the NVMe/TCP targets up, then each guest's state saved for the
next lab-up (lab/warm.py; written to a temporary directory renamed when complete, so a failure or
an interrupt leaves no half state)."""

from __future__ import annotations

import time
from pathlib import Path

from ...guest import NVME_TCP_FAILED_MARKER, NVME_TCP_READY_MARKER, Guest
from .. import record, warm
from ..diskcheck import probe, wait_for
from ..state import Progress
from .runner import Phase, Timings
from .wait import RESTORED_SSH_TIMEOUT, console

# How long a cold lab-up waits, after SSH is up, for the console line that says the in-guest
# NVMe/TCP targets are connected; then it asks the guest (the probe starts or waits for them).
NVME_TCP_CONSOLE_TIMEOUT = 60.0


def nvme_tcp_up(data: record.LabRecord, records: dict, vm_guest: dict[str, str], guests: dict[str, Guest],
                progress: Progress) -> None:
    """Every guest's NVMe/TCP targets connected: the state is saved with them up."""
    for name, guest in guests.items():
        declared = data.disks_of(name)
        if not any(d.bus == "nvme-tcp" for d in declared):
            continue
        up = console(data, records, vm_guest, guests, name, NVME_TCP_READY_MARKER)
        failed = console(data, records, vm_guest, guests, name, NVME_TCP_FAILED_MARKER)
        if up is None or failed is None:
            probe(guest, declared)  # an image without the console lines: ask the guest
            continue
        said = wait_for(lambda up=up, failed=failed: up() or failed(), NVME_TCP_CONSOLE_TIMEOUT)
        if said and not failed():
            continue
        progress(f"{name}: " + ("its NVMe/TCP targets' unit failed, says its console" if said else
                                f"no '{NVME_TCP_READY_MARKER}' line on its console after "
                                f"{NVME_TCP_CONSOLE_TIMEOUT:.0f} s") + "; asking the guest")
        # The probe starts the targets' unit, or waits for it, and lists the namespaces; a unit
        # that fails again fails the probe, with the guest's message.
        probe(guest, declared)


def run(saves: bool, saved: warm.SavedState, key_parts: dict, uri: str, state: Path, data: record.LabRecord,
        records: dict, vm_guest: dict[str, str], guests: dict[str, Guest], progress: Progress,
        timings: Timings) -> dict | None:
    if not saves:
        return None
    start = time.monotonic()
    nvme_tcp_up(data, records, vm_guest, guests, progress)
    timings.add("NVMe/TCP targets", time.monotonic() - start)
    start = time.monotonic()
    for name in warm.save(saved, key_parts, uri, data.vms, state, progress):
        guests[name].close()
        guests[name].wait_until_up(RESTORED_SSH_TIMEOUT, progress)
    timings.add("save state", time.monotonic() - start)
    return {"clock_behind": True}  # the guests were paused while their memory was saved


PHASE = Phase("save", run, gives=("clock_behind",))
