"""The kinds of bench, in one table (KINDS), and `sectorlab bench` for all of them: load_preset and
run.

A kind is known by one table of its preset file: the redo bench ([bench]: redo-writer at every
BLOCKSIZE the rules engine allows on each target; redo/) and the appliance bench ([appliance]: seed
004's shares of a storage appliance over NFS; appliance/). Its results directory is of the report
kind it names (sectorlab/report/kinds.py). A new kind is its own room and one entry here; nothing
else chooses between kinds.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .. import inputs, labdef
from ..errors import UsageError
from ..lab.state import Progress
from .appliance import preset as appliance
from .appliance import run as appliancerun
from .clock import REAL, Clock
from .presets import RESULTS_DIR, preset_path
from .redo import preset
from .redo.run import run as run_redo  # `run` is this module's own: every kind's


@dataclass(frozen=True)
class Kind:
    """A kind of bench.

    `load(path, data, lab, duration_s=, warmup_s=, repeats=, order_seed=)` makes its preset from the
    preset file's TOML `data` (the kind's `table` in it; `lab` is the rest, already read), refusing
    in one line an override given that does not apply to it (None: not given). The preset has name,
    path, lab, seed, title, order_seed and `kind` (this kind's name), plan() and estimate_s()
    (`sectorlab bench --list`).

    `run(preset, progress, results_root)` is the whole bench: its lab up, the runs, its lab down, the
    report; it returns the results directory it made under results_root, a directory of the report
    kind `report` (sectorlab/report/kinds.py). A kind with a device path (`device_path`) also takes
    `clock=` (bench/clock.py), the clock its device-path runs are on."""
    name: str
    table: str
    report: str
    load: Callable[..., Any]
    run: Callable[..., Path]
    device_path: bool = False


KINDS = (
    Kind("redo", "bench", "redo", preset.from_table, run_redo, device_path=True),
    Kind("appliance", "appliance", "appliance", appliance.from_table, appliancerun.run),
)


def kind_of_preset(path: Path, data: dict) -> Kind:
    """The kind whose table the preset file's TOML `data` has; one line when it has none or two."""
    found = [k for k in KINDS if k.table in data]
    if len(found) > 1:
        raise UsageError(f"{path}: both [{found[0].table}] and [{found[1].table}]: a preset is one or the other")
    if not found:  # named as the first kind's (the redo bench's, most presets'), the others beside it
        first, others = KINDS[0].table, " or ".join(f"[{k.table}]" for k in KINDS[1:])
        raise UsageError(f"{path}: no [{first}] table: a preset is a lab definition with a [{first}] table "
                         f"(or {others}; see labs/bench/)")
    return found[0]


def load_preset(name: str, duration_s: int | None = None, warmup_s: int | None = None,
                repeats: int | None = None, suffix: str = "", order_seed: int | None = None):
    """The preset `name` (labs/bench/NAME.toml or a path), of the kind whose table it has, checked
    before anything starts; `duration_s`, `warmup_s`, `repeats` and `order_seed` override the
    file's (make bench DURATION=...) where they apply to its kind; `suffix` follows the lab's name
    (make's LAB_SUFFIX)."""
    path = preset_path(name)
    data = inputs.read_toml(path, "bench preset", inputs.LAB_DEFINITION_MAX)
    # The lab is the file without the kinds' tables, so that a new kind's table needs no word in labdef.
    tables = {k.table for k in KINDS}
    lab = labdef.with_suffix(labdef.validate({k: v for k, v in data.items() if k not in tables}, path), suffix)
    return kind_of_preset(path, data).load(path, data, lab, duration_s=duration_s, warmup_s=warmup_s,
                                           repeats=repeats, order_seed=order_seed)


def run(preset, progress: Progress, results_root: Path = RESULTS_DIR, clock: Clock = REAL) -> Path:
    """`sectorlab bench`: the preset's kind runs it (lab-up, the runs, lab-down whatever happened,
    the report), its device path on `clock`; the results directory. A kind without a device path
    is refused another clock than the real one, before anything starts."""
    for kind in KINDS:
        if kind.name != preset.kind:
            continue
        if kind.device_path:
            return kind.run(preset, progress, results_root, clock=clock)
        if clock.virtual:
            raise UsageError(f"preset {preset.name!r}, a bench of kind {kind.name}, has no device path: nothing of it "
                             f"runs in virtual time; run it without --clock virtual (make CLOCK=)")
        return kind.run(preset, progress, results_root)
    raise ValueError(f"preset {preset.name!r} is of kind {preset.kind!r}, which KINDS does not have")
