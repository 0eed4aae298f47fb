"""`sectorlab bench-sweep` (make bench-sweep PRESET=... SWEEP=PARAM): one assumed parameter of a
device profile varied over its stated plausible range, and where each of the preset's headlines
flips.

A preset's [[bench.sweep]] names a parameter of a profile its disks are served by, the values that
span the range a reader could believe (each a value the model takes, in its own syntax), and why
that range. The sweep runs on the device path only, on this host: no lab, no guest. For every
value a model of each disk the comparisons need is started (devices/server.py, nbdkit and the
project's filter, a disk in RAM; the swept profile's disks with the value, the others as their
profile has them), and the preset's comparisons run on them as the bench's device path runs them:
redo-writer through libnbd with the preset's workload, polling for replies
(bench/clock.py's REPLY_SPIN_US). Every (value, configuration) runs `repeats` times in complete rounds,
each round in its own random order over all values alike, so the host's drift falls on every value
the same. Each model gets one unmeasured run of the preset's warm-up first (its memory allocated).

Per value, each comparison is tested as the bench tests it (compare.compare_runs, its primary
metric, Holm over the preset's comparisons at that value). A comparison whose verdict is not the
same at every value (significant one way, the other, or within noise) is printed as depending on
the parameter, with the values between which it flips; one that holds at every value holds over the
range. The results directory has sweep.json and report.md.
"""

from __future__ import annotations

import json
from pathlib import Path

from ...errors import UsageError
from ...lab.state import Progress
from ...paths import write_atomic
from ...report import sweep as report
from .. import clock as clock_mod
from ..clock import REAL, REPLY_SPIN_US, Clock
from ..presets import RESULTS_DIR
from ..redo.preset import Preset
from ..redo.sweeps import Sweep
from . import runs


def run(preset: Preset, sweep: Sweep, progress: Progress, results_root: Path = RESULTS_DIR,
        repeats: int | None = None, seed: int | None = None, clock: Clock = REAL) -> Path:
    """The sweep's runs and its report; the results directory. `repeats` by default the fewest with
    which the preset's comparisons can reach ALPHA after Holm."""
    repeats = repeats or runs.repeats_for(len(preset.compares))
    cfgs = runs.configs(preset)
    if not cfgs:
        raise UsageError(f"preset {preset.name!r} has no [[bench.compare]]: a sweep shows where its comparisons flip")
    clock_mod.check(preset, preset.workload, clock)
    results = runs.results_dir(results_root, f"{preset.name}-sweep-{sweep.param}")
    variants = {v: {p: {key: v} for p, key in sweep.profiles.items()} for v in sweep.values}
    done = runs.device_runs(preset, preset.workload, cfgs, variants, repeats, seed, results, progress,
                            f"sweep of {sweep.param} on {sweep.profile} over {', '.join(sweep.values)}", clock)
    doc = {"preset": preset.name, "seed": preset.seed, "title": preset.title,
           "sweep": sweep.__dict__ | {"own": sweep.own},
           "workload": preset.workload.as_json(), "order_seed": done.order_seed,
        "repeats": repeats, "comparisons": preset.compares, "runs": done.runs,
        **({} if clock.virtual else {"reply_spin_us": REPLY_SPIN_US}), "wall_s": done.wall_s, **clock.as_json()}
    write_atomic(results / "sweep.json", json.dumps(doc, indent=2))
    report.write(results)
    return results


def pick(preset: Preset, param: str | None) -> list[Sweep]:
    """The preset's sweeps, or the one of `param`; one line when there is none."""
    if not preset.sweeps:
        raise UsageError(f"preset {preset.name!r} has no [[bench.sweep]]: nothing to sweep (presets with one: "
                         f"see docs/experiments.md, 'What the headlines rest on')")
    if param is None:
        return list(preset.sweeps)
    chosen = [s for s in preset.sweeps if s.param == param]
    if not chosen:
        raise UsageError(f"SWEEP={param!r}: preset {preset.name!r} sweeps {', '.join(s.param for s in preset.sweeps)}")
    return chosen
