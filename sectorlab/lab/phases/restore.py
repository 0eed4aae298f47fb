"""Phase 'restore' (the warm route): the guests restored from their saved state as Terraform
creates them. libvirt starts a domain that has a managed-save image by restoring it, so each saved
state is armed as its domain's managed-save image first. When a restore fails the saved state is
discarded and lab-up goes on by the cold route, its VMs made anew (unless --require-warm)."""

from __future__ import annotations

from pathlib import Path

from ... import labdef
from ...errors import SectorlabError
from .. import warm
from ..state import Progress
from .runner import Phase, Reroute
from .start import apply, recorded


def run(lab: labdef.Lab, state: Path, uri: str, vm_names: list[str], domains: dict[str, str], found,
        saved: warm.SavedState, key: str, save_state: bool, require_warm: bool, progress: Progress) -> dict:
    for name in vm_names:
        warm.arm(saved, name, domains[name])
    try:
        tf = apply(lab, state, uri, vm_names, found, progress)
        not_restored = [n for n in vm_names if warm.managed_save_path(domains[n]).exists()]
        if not_restored:
            raise SectorlabError(f"libvirt booted {', '.join(not_restored)} instead of restoring its state")
    except SectorlabError as e:
        if require_warm:
            raise SectorlabError(f"lab {lab.name}: warm restore failed: {e}") from e
        progress(f"warm restore failed ({e}); discarding saved state {key} and booting cold")
        saved.discard()
        raise Reroute("cold", {"saves": save_state, "replace": True,
                               "root_sources": {name: "" for name in vm_names}}) from e
    return {**recorded(lab, state, tf, progress, " (guests restored from their saved state)"), "clock_behind": True}


def recover(vm_names: list[str], domains: dict[str, str]) -> None:
    """No managed-save image is left armed: a later start of the domain would restore it."""
    for name in vm_names:
        warm.managed_save_path(domains[name]).unlink(missing_ok=True)


PHASE = Phase("start", run, gives=("tf", "data", "guests", "clock_behind"), label="terraform apply + restore",
              recover=recover)
