"""`sectorlab bench-load` (make bench-load PRESET=...): the seed's own load, closed loop, on the
device path (runs.py: no lab, no guest, redo-writer on this host straight to the models).

A preset's [bench.closed_loop] gives the seed's sessions (committing without think time), its redo
per transaction and its CPU per transaction, each with where it comes from. Every configuration the
preset's comparisons and the table's figures name runs closed loop at that load, `repeats` times in
random rounds. Group commit then happens as the load makes it: the report gives per configuration
the commits per log write, log file sync against log file parallel write, transactions/s, the bytes
per write and the CPU the sessions really used per transaction (redo-writer measures its threads'
CPU time) beside the CPU applied; the preset's comparisons tested as the bench tests them (Holm
over them); and the table's seed figures beside the lab's values with their 99 % CIs, agreeing only
where the CI is narrower than the figure's distance from no difference. The host has 2 cores: where
they cannot give the seed's sessions their CPU, the report says how far the runs got (their
transactions/s against the seed's).
"""

from __future__ import annotations

import json
from pathlib import Path

from ...errors import UsageError
from ...lab.state import Progress
from ...paths import write_atomic
from ...report import load as report
from .. import clock as clock_mod
from ..clock import REAL, Clock
from ..presets import RESULTS_DIR
from ..redo.preset import Preset, Workload, with_closed_loop
from . import runs

VARIANT = "as profiled"


def workload(preset: Preset) -> Workload:
    c = preset.closed_loop
    if c is None:
        raise UsageError(f"preset {preset.name!r} has no [bench.closed_loop]: it does not say the seed's sessions, "
                         f"redo per transaction and CPU per transaction (presets with one: docs/experiments.md)")
    w = preset.workload
    return Workload(c["sessions"], c["redo_per_txn"], 0, "closed", c["cpu_us_per_txn"], w.warmup_s, w.duration_s,
                    w.log_size)


def with_awr(preset: Preset, report) -> Preset:
    """The preset with the load of an AWR report (awr/parse.py's Report, read before the preset, so
    that a report that is not one is refused before anything starts) in place of its
    [bench.closed_loop]: the report's sessions, redo and CPU a transaction at its transactions a
    second, and its log writer's figures beside the lab's on each configuration the preset compares."""
    from ...awr import load as awr_load
    table = awr_load.closed_loop(report, [c.key for c in runs.configs(preset)])
    return with_closed_loop(preset, table, f"{report.path} (as [bench.closed_loop])")


def run(preset: Preset, progress: Progress, results_root: Path = RESULTS_DIR, repeats: int | None = None,
        seed: int | None = None, clock: Clock = REAL, awr: Path | None = None) -> Path:
    """The closed loop of the preset's [bench.closed_loop] (`awr`: the AWR report with_awr made it
    from, recorded) on `clock`, its results directory."""
    w = workload(preset)
    repeats = repeats or runs.repeats_for(len(preset.compares))
    figures = preset.closed_loop["figure"]
    extra = [f[k] for f in figures if f["lab"] != "none" for k in ("a", "b") if f.get(k)]
    cfgs = runs.configs(preset, extra)
    if not cfgs:
        raise UsageError(f"preset {preset.name!r}: no [[bench.compare]] and no figure names a configuration")
    clock_mod.check(preset, w, clock)
    results = runs.results_dir(results_root, f"{preset.name}-closed-loop")
    done = runs.device_runs(preset, w, cfgs, {VARIANT: {}}, repeats, seed, results, progress,
                            f"closed loop, {w.describe()}", clock)
    doc = {"preset": preset.name, "seed": preset.seed, "title": preset.title, "workload": w.as_json(),
           "closed_loop": {k: v for k, v in preset.closed_loop.items() if k != "figure"},
           "seed_figures": figures, "comparisons": preset.compares, "order_seed": done.order_seed,
           "repeats": repeats, "runs": done.runs, "wall_s": done.wall_s, **clock.as_json(),
           **({"awr": str(awr)} if awr is not None else {})}
    write_atomic(results / "load.json", json.dumps(doc, indent=2))
    report.write(results)
    return results


