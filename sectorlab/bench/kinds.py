"""The kinds of bench, in one table (KINDS), and `sectorlab bench` and `sectorlab report` for all of
them: load_preset, run and write_report.

A kind is known by one table of its preset file and by one file of its results directory: the redo
bench ([bench], bench.json: redo-writer at every BLOCKSIZE the rules engine allows on each target;
preset.py, run.py, report.py) and the appliance bench ([appliance], appliance.json: seed 004's
shares of a storage appliance over NFS; appliance.py, appliancerun.py, appliancereport.py). A new
kind is its own module(s) and one entry here; nothing else chooses between kinds.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .. import inputs, labdef
from ..errors import UsageError
from . import appliance, appliancereport, appliancerun, preset, report
from .preset import RESULTS_DIR, Progress, preset_path
from .run import run as run_redo  # `run` is this module's own: every kind's


@dataclass(frozen=True)
class Kind:
    """A kind of bench.

    `load(path, data, lab, duration_s=, warmup_s=, repeats=, order_seed=)` makes its preset from the
    preset file's TOML `data` (the kind's `table` in it; `lab` is the rest, already read), refusing
    in one line an override given that does not apply to it (None: not given). The preset has name,
    path, lab, seed, title, order_seed and `kind` (this kind's name), plan() and estimate_s()
    (`sectorlab bench --list`).

    `run(preset, progress, results_root)` is the whole bench: its lab up, the runs, its lab down, the
    report; it returns the results directory it made under results_root, which holds `results_file`.

    `report(results)` writes the report of such a directory and returns the files it wrote by name,
    report.html as "html" (`sectorlab report --png` draws it)."""
    name: str
    table: str
    results_file: str
    load: Callable[..., Any]
    run: Callable[[Any, Progress, Path], Path]
    report: Callable[[Path], dict[str, Path]]


KINDS = (
    Kind("redo", "bench", "bench.json", preset.from_table, run_redo, report.write),
    Kind("appliance", "appliance", "appliance.json", appliance.from_table, appliancerun.run, appliancereport.write),
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


def kind_of_results(results: Path | str) -> Kind:
    """The kind whose results file the results directory holds; one line when it is not a
    directory, or holds none or two. A link or a FIFO in the file's place counts: the kind's
    report refuses it with its reason."""
    results = report.results_dir(results)
    found = [k for k in KINDS if os.path.lexists(results / k.results_file)]
    if len(found) > 1:
        raise UsageError(f"{results}: both {found[0].results_file} and {found[1].results_file}: a results "
                         f"directory is one bench's; expected a directory written by 'sectorlab bench' "
                         f"(results/<timestamp>-<preset>/)")
    if not found:
        files = " or ".join(k.results_file for k in KINDS)
        raise UsageError(f"{results}: no {files}; expected a results directory written by 'sectorlab bench' "
                         f"(results/<timestamp>-<preset>/)")
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


def run(preset, progress: Progress, results_root: Path = RESULTS_DIR) -> Path:
    """`sectorlab bench`: the preset's kind runs it (lab-up, the runs, lab-down whatever happened,
    the report); the results directory."""
    for kind in KINDS:
        if kind.name == preset.kind:
            return kind.run(preset, progress, results_root)
    raise ValueError(f"preset {preset.name!r} is of kind {preset.kind!r}, which KINDS does not have")


def write_report(results: Path | str) -> dict[str, Path]:
    """`sectorlab report`: the report of a results directory, by the kind whose file it holds."""
    return kind_of_results(results).report(Path(results))
