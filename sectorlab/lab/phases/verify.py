"""Phase 'verify': what every guest shows of every declared disk, against the definition
(lab/diskcheck.py)."""

from __future__ import annotations

from ...guest import Guest
from .. import record
from ..diskcheck import verify
from ..state import Progress
from .runner import Phase

# A hot-plugged NVMe controller takes the guest a few seconds to probe under TCG.
NVME_APPEAR_TIMEOUT = 90.0


def run(data: record.LabRecord, guests: dict[str, Guest], clock_behind: bool, pristine: bool,
        progress: Progress) -> dict:
    rows, problems = verify(data, guests, progress, wait=NVME_APPEAR_TIMEOUT, clock=clock_behind, pristine=pristine,
                            settle=True)
    return {"rows": rows, "problems": problems}


PHASE = Phase("verify", run, gives=("rows", "problems"), label="disk check")
