"""Phase 'wait': every guest reachable over SSH. A booting guest is connected to once its console
says sshd listens (cold); a running lab's console may not say it (a guest restored from a saved
state booted before its console log began), so a converging lab connects at once, and a restored
guest is given a minute."""

from __future__ import annotations

from ...guest import READY_MARKER, Guest, console_says_ready
from .. import record
from ..state import Progress
from .runner import Phase

SSH_TIMEOUT = 900.0
RESTORED_SSH_TIMEOUT = 60.0


def console(data: record.LabRecord, records: dict, vm_guest: dict[str, str], guests: dict[str, Guest], name: str,
            marker: str):
    """A check that the VM's console says `marker`, or None for an image that does not write it."""
    if not records[vm_guest[name]].ready_marker:
        return None
    return console_says_ready(data.vm(name).console_log, marker, guests[name].via)


def booted(data: record.LabRecord, records: dict, vm_guest: dict[str, str], guests: dict[str, Guest],
           progress: Progress) -> None:
    for name, guest in guests.items():
        ready = console(data, records, vm_guest, guests, name, READY_MARKER)
        progress(f"{name}: waiting for SSH on {guest.endpoint}"
                 + (" (connecting once its console says sshd listens)" if ready else ""))
        progress(f"{name}: SSH up after {guest.wait_until_up(SSH_TIMEOUT, progress, ready):.0f} s")


def running(guests: dict[str, Guest], progress: Progress) -> None:
    for name, guest in guests.items():
        progress(f"{name}: waiting for SSH on {guest.endpoint}")
        progress(f"{name}: SSH up after {guest.wait_until_up(SSH_TIMEOUT, progress):.0f} s")


def restored(guests: dict[str, Guest], progress: Progress) -> None:
    for name, guest in guests.items():
        progress(f"{name}: restored, SSH up after {guest.wait_until_up(RESTORED_SSH_TIMEOUT, progress):.1f} s")


def recover(guests: dict[str, Guest]) -> None:
    """The SSH connections this lab-up opened are closed."""
    for guest in guests.values():
        guest.close()


BOOTED = Phase("wait", booted, label="boot to SSH", recover=recover)
RUNNING = Phase("wait", running, label="boot to SSH", recover=recover)
RESTORED = Phase("wait", restored, label="SSH", recover=recover)
