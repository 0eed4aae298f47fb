"""Phase 'image': each guest image the lab's VMs use, built unless the cache holds it."""

from __future__ import annotations

from ... import images
from ..state import Progress
from .runner import Phase


def run(vm_guest: dict[str, str], progress: Progress) -> dict:
    return {"records": {g: images.build(g, progress=progress) for g in sorted(set(vm_guest.values()))}}


PHASE = Phase("image", run, gives=("records",), label="image")
