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
(devicepath.REPLY_SPIN_US). Every (value, configuration) runs `repeats` times in complete rounds,
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
from dataclasses import dataclass
from pathlib import Path

from .. import fields
from ..devices import profiles
from ..errors import UsageError
from ..paths import write_atomic
from . import compare, hostpath
from .devicepath import REPLY_SPIN_US
from .preset import RESULTS_DIR, Preset, Progress
from .presetfields import SWEEP_FIELDS


@dataclass(frozen=True)
class Sweep:
    param: str
    profile: str
    values: tuple[str, ...]
    range: str
    # Where the value goes: the swept profile and those built on it that keep its value and serve a
    # disk of the preset, each with its key (an Exadata cell has the cell disk's controller cache,
    # and the F20's write under flashlog.).
    profiles: dict[str, str]

    @property
    def own(self) -> str:
        """The profile's own value of the parameter."""
        return profiles.get(self.profile).params[self.param]


def read(where: str, raw: dict, preset_disks: dict) -> Sweep:
    """One [[bench.sweep]], checked before anything starts: a profile the preset's disks use, a
    parameter that profile has, values the model takes in every profile the value goes to."""
    s = SWEEP_FIELDS.read(where, raw)
    used = sorted({d.device for d in preset_disks.values() if d.device})
    if s["profile"] not in used:
        raise UsageError(f"{where}: profile = {s['profile']!r}: no disk of the preset is served by it; expected one "
                         f"of {', '.join(used) or '(none: the preset has no modelled disk)'}")
    params = profiles.get(s["profile"]).params
    if s["param"] not in params:
        raise UsageError(f"{where}: param = {s['param']!r}: profile {s['profile']!r} has no such parameter (it has "
                         f"{', '.join(params)}); a sweep varies what the profile sets")
    targets = {p: key for p, key in profiles.sharing(s["profile"], s["param"]).items() if p in used}
    for v in s["values"]:
        for p, key in targets.items():
            params = {**profiles.get(p).params, key: v}
            # A buffer of part of a write unit first, with the nearest whole multiples (the model
            # refuses it too, in fewer words).
            if (why := profiles.buffer_problem(params)) is not None:
                raise UsageError(f"{where}: values: on profile {p!r}, {why}")
            proc = profiles.simulate(params)
            why = proc.stderr.strip().removeprefix("simulate: ") if proc.returncode != 0 else None
            if why:
                raise UsageError(f"{where}: values: {s['param']} = {v!r} on profile {p!r} ({key}): {why}: give "
                                 f"values the model takes (docs/device-models.md lists its parameters and their "
                                 f"bounds)")
    fields.no_duplicates(where, "values", s["values"], same=lambda v: model_value(s["param"], v))
    return Sweep(s["param"], s["profile"], tuple(s["values"]), s["range"], targets)


# The model's keys by how it reads their values (devicemodel/model.c, model_set): sizes and counts
# with an optional k, M, G or T; decimal numbers; distributions of microseconds.
SIZE_KEYS = ("channels", "stripe", "cache-size", "physical-sector", "write-unit", "write-buffer",
             "fail-after-writes", "seed")
NUMBER_KEYS = ("read-mbps", "write-mbps", "cache-destage-mbps", "fail-after-seconds")
DISTRIBUTION_KEYS = ("read", "write", "flush", "cache-hit")


def model_value(param: str, text: str):
    """A value of a model parameter as the model reads it, so that two spellings of one value meet
    ("64k" and "65536", "fixed:20" and "fixed:20.0"): a size in bytes, a number, a distribution's
    kind and numbers; any other value as written. `text` is one the model took (sweep.read)."""
    key = param.removeprefix(profiles.FLASH_LOG_PREFIX)
    try:
        if key in SIZE_KEYS:
            return profiles.size_bytes(text)
        if key in NUMBER_KEYS:
            return float(text)
        if key in DISTRIBUTION_KEYS:
            kind, _, numbers = text.partition(":")
            return (kind, *(float(x) for part in numbers.split(",") for x in part.split("=")))
    except ValueError:
        pass
    return text


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


def run(preset: Preset, sweep: Sweep, progress: Progress, results_root: Path = RESULTS_DIR,
        repeats: int | None = None, seed: int | None = None) -> Path:
    """The sweep's runs and its report; the results directory. `repeats` by default the fewest with
    which the preset's comparisons can reach ALPHA after Holm."""
    repeats = repeats or hostpath.repeats_for(len(preset.compares))
    cfgs = hostpath.configs(preset)
    if not cfgs:
        raise UsageError(f"preset {preset.name!r} has no [[bench.compare]]: a sweep shows where its comparisons flip")
    results = hostpath.results_dir(results_root, f"{preset.name}-sweep-{sweep.param}")
    variants = {v: {p: {key: v} for p, key in sweep.profiles.items()} for v in sweep.values}
    done = hostpath.device_runs(preset, preset.workload, cfgs, variants, repeats, seed, results, progress,
                                f"sweep of {sweep.param} on {sweep.profile} over {', '.join(sweep.values)}")
    doc = {"preset": preset.name, "seed": preset.seed, "title": preset.title,
           "sweep": sweep.__dict__ | {"own": sweep.own},
           "workload": preset.workload.as_json(), "order_seed": done.order_seed,
        "repeats": repeats, "comparisons": preset.compares, "runs": done.runs, "reply_spin_us": REPLY_SPIN_US,
        "wall_s": done.wall_s}
    write_atomic(results / "sweep.json", json.dumps(doc, indent=2))
    write_report(results)
    return results


def analyse(doc: dict, reports: dict[str, dict]) -> list[dict]:
    """Per comparison: its test at every value (Holm over the comparisons at that value) and whether
    its verdict holds over the range or flips (and between which values)."""
    def key(side):
        return f"{side['disk']}@{side['blocksize']}"
    out = []
    per_value = {}
    for value in doc["sweep"]["values"]:
        items = []
        for c in doc["comparisons"]:
            side = {s: [reports[r["report"]] for r in doc["runs"] if r["value"] == value and r["config"] == key(c[s])]
                    for s in ("a", "b")}
            items.append(compare.compare_runs(side["a"], side["b"], c.get("primary")))
        compare.adjust_family(items)
        per_value[value] = items
    for i, c in enumerate(doc["comparisons"]):
        cells = []
        for value in doc["sweep"]["values"]:
            item = per_value[value][i]
            head = item["tests"][0] if item.get("tests") and item["tests"][0]["metric"] == item["primary"] else None
            cells.append({"value": value, "verdict": item["verdict"], "n": item["n"],
                          "medians": head["medians"] if head else None,
                          "change_pct": head["change_pct"] if head else None, "p": head["p"] if head else None,
                          "ci": head["ci"] if head else None, "label": head["label"] if head else item["primary"],
                          "unit": head["unit"] if head else "", "direction": _direction(head)})
        directions = [x["direction"] for x in cells]
        flips = [(cells[j]["value"], cells[j + 1]["value"]) for j in range(len(cells) - 1)
                 if directions[j] != directions[j + 1]]
        too_few = next((per_value[v][i].get("min_p_note") for v in doc["sweep"]["values"]
                        if per_value[v][i].get("min_p_note") or per_value[v][i].get("not_tested")), None)
        out.append({"title": c.get("title"), "a": key(c["a"]), "b": key(c["b"]), "primary": c.get("primary"),
                    "cells": cells, "flips": flips, "holds": not flips and not too_few,
                    "too_few": too_few or (per_value[doc["sweep"]["values"][0]][i].get("not_tested"))})
    return out


def _direction(head: dict | None) -> str:
    """'b higher', 'b lower' or 'no difference' (within noise, unclear, not tested)."""
    if not head or head["verdict"] != "significant":
        return "no difference"
    return "b higher" if head["medians"][1] > head["medians"][0] else "b lower"


def _value_text(value: str, own: str) -> str:
    return f"`{value}`" + (" (the profile's own)" if value == own else "")


def write_report(results: Path) -> Path:
    doc = json.loads((results / "sweep.json").read_text())
    reports = {r["report"]: json.loads((results / r["report"]).read_text()) for r in doc["runs"]}
    found = analyse(doc, reports)
    s, w = doc["sweep"], doc["workload"]
    lines = [f"# Sweep of `{s['param']}` on `{s['profile']}`: {doc['title']}", "",
             f"Preset `{doc['preset']}` (seed {doc['seed'] or '-'}), on the device path only (redo-writer on this "
             f"host straight to the models, polling for replies {doc['reply_spin_us']} us). Values: "
             f"{', '.join(_value_text(v, s['own']) for v in s['values'])}"
             + (f", on the disks of {', '.join(f'`{p}` (`{k}`)' for p, k in s['profiles'].items())} (the "
                "profiles built on it that keep its value)" if len(s.get("profiles", {})) > 1 else "") + ". "
             f"Why this range: {s['range']}", "",
             f"Workload: {w['sessions']} session(s), {w['redo_per_txn']:,} B of redo per commit, "
             + (f"{w['rate']:,} commits/s ({w['arrival']})" if w["rate"] else "closed loop")
             + f"; {w['warmup_s']} s warm-up per model, {w['duration_s']} s a run, {doc['repeats']} runs of each "
             f"(value, configuration) in random rounds (order seed {doc['order_seed']}); {doc['wall_s']} s in all.",
             "", "Each comparison's primary metric at every value (Mann-Whitney on one value per run, Holm over the "
             "preset's comparisons at that value, 99 % bootstrap CI): a headline whose verdict is not the same at "
             "every value **depends on the parameter** and is not a result on its own.", ""]
    for item in found:
        if item["flips"]:
            verdict = ("**depends on `" + s["param"] + "`**: flips between " +
                       "; ".join(f"`{a}` and `{b}`" for a, b in item["flips"]))
        elif item["too_few"]:
            verdict = f"**not told**: {item['too_few']}"
        else:
            verdict = "**holds over the range**"
        lines += [f"## {item['title']} ({item['a']} → {item['b']})", "", f"Verdict over the range: {verdict}.", "",
                  f"| `{s['param']}` | median a | median b | change | p (Holm) | 99 % CI of b - a | verdict |",
                  "|---|---:|---:|---:|---:|---|---|"]
        for x in item["cells"]:
            if x["medians"] is None:
                lines.append(f"| `{x['value']}` | - | - | - | - | - | {x['verdict']} |")
                continue
            ma, mb = x["medians"]
            lines.append(f"| `{x['value']}` | {ma:.4g} {x['unit']} | {mb:.4g} {x['unit']} | "
                         f"{x['change_pct']:+.1f} % | {x['p']:.2g} | [{x['ci'][0]:+.3g}, {x['ci'][1]:+.3g}] | "
                         f"{x['verdict']} |")
        lines.append("")
    lines += ["## How to run it again", "", "```",
              f"sectorlab bench-sweep --param {s['param']} --repeats {doc['repeats']} --duration {w['duration_s']} "
              f"--seed {doc['order_seed']} -- {doc['preset']}", "```", ""]
    write_atomic(results / "summary.json", json.dumps({"sweep": s, "comparisons": found}, indent=2))
    path = results / "report.md"
    write_atomic(path, "\n".join(lines))
    return path
