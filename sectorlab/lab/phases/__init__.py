"""`sectorlab lab up` as a sequence of phases (docs/lab-up.md).

Each phase is a module here: its run() takes, by the names of its parameters, the facts earlier
phases returned and returns those it adds; some have a recover() that undoes their own work when a
later phase fails or lab-up is interrupted (runner.py runs them, in the shape of Vagrant's action
sequences). FIRST is what every lab-up does: validate.py (the lab read once, its lock, the host
checked), image.py (the guest images built or found) and choose.py (the path: cold, warm or
converge, and everything in which they differ). ROUTES lists each path's phases, the one place
where the paths differ in which phases run: provision.py (keys, pool, ports, Terraform's
variables), models.py (the device models), start.py (terraform apply, lab.json) or restore.py
(the warm route's apply that restores saved states; on failure it reroutes to cold), wait.py (SSH),
save.py (the cold route's saved state), hotplug.py (the NVMe controllers) and verify.py (the disks
as the guests show them). A new phase is one module and one entry in these tables.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from pathlib import Path

from ... import labdef
from ...errors import SectorlabError
from ...paths import write_atomic
from .. import record
from ..diskcheck import print_table
from ..state import Progress, say
from . import choose, hotplug, image, models, provision, restore, runner, save, start, validate, verify, wait
from .runner import PAUSE_ENV, Phase, Reroute, Timings  # noqa: F401
from .save import NVME_TCP_CONSOLE_TIMEOUT  # noqa: F401
from .verify import NVME_APPEAR_TIMEOUT  # noqa: F401

FIRST = (validate.PHASE, image.PHASE, choose.PHASE)
ROUTES = {
    "cold": (provision.PHASE, models.PHASE, start.PHASE, wait.BOOTED, save.PHASE, hotplug.PHASE, verify.PHASE),
    "warm": (provision.PHASE, models.PHASE, restore.PHASE, wait.RESTORED, hotplug.PHASE, verify.PHASE),
    "converge": (provision.PHASE, models.PHASE, start.PHASE, wait.RUNNING, hotplug.PHASE, verify.PHASE),
}
# What up() hands the first phase.
GIVEN = ("given", "held", "progress", "cold", "save_state", "require_warm", "timings")


def up(lab: labdef.Lab | Path, progress: Progress = say, cold: bool = False, save_state: bool = True,
       require_warm: bool = False) -> record.LabRecord:
    """Bring the lab up and verify every disk. Three paths, named in the output: converge (the lab
    runs: Terraform finds nothing or little to change), warm (a saved state matches: restore it) and
    cold (boot, then save a state for the next lab-up)."""
    t0 = time.monotonic()
    with contextlib.ExitStack() as held:  # the lab's lock, from 'validate' on
        facts = {"given": lab, "held": held, "progress": progress, "cold": cold, "save_state": save_state,
                 "require_warm": require_warm, "timings": Timings()}
        return _finish(runner.run(FIRST, ROUTES, facts), time.monotonic() - t0)


def _finish(facts: dict, total: float) -> record.LabRecord:
    lab, state, route, progress = facts["lab"], facts["state"], facts["route"], facts["progress"]
    print_table(facts["rows"])
    timings = facts["timings"]
    timing = record.Timing(path=route, total_s=round(total, 2), phases={n: round(v, 2) for n, v in timings})
    data = dataclasses.replace(facts["data"], timing=timing)
    write_atomic(state / "lab.json", data.text())
    summary = ", ".join(f"{n} {s:.1f} s" for n, s in timings)
    progress(f"lab {lab.name} up by the {route} path in {total:.1f} s ({summary}); state in {state}")
    if facts["problems"]:
        raise SectorlabError(f"lab {lab.name}: {len(facts['problems'])} disk(s) not as declared: "
                             + "; ".join(facts["problems"]))
    return data
