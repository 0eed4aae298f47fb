"""Configurations compared on one value per run: what the report tests and how it calls a difference.

A run's commits are not independent samples (the commits one log write covers share its latency,
and a run drifts as a whole), so the unit is the run: every metric of metrics.METRICS is one number
per run, and two configurations are compared on their runs' numbers with the Mann-Whitney U test
(two-sided, no normality assumed) and a bootstrap CI of the difference of the medians (b - a,
the runs resampled) at the test's own level, 1 - ALPHA (99 %). A difference is "significant" only
when p < ALPHA and the CI excludes 0; "within noise" when p >= ALPHA; "unclear" when p < ALPHA but
the CI spans 0. A comparison's headline is its primary metric's verdict, and the primary tests of a
preset's comparisons are one family: their p-values are Holm-adjusted over it (stats.holm) before
the verdict. The secondary metrics and each disk's own BLOCKSIZE comparison are not adjusted, and
the report says so. Also here: the shift function (per decile and p99 of log file sync,
the difference of the run medians with its CI), the shape of a configuration's pooled commit
latencies (bimodal or not), the harness floor shown by control runs and the seed figures beside the
lab's values.
"""

from __future__ import annotations

import os
import statistics
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from .. import fields
from . import stats
from .headlines import headlines
from .metrics import (
    DEFAULT_PRIMARY,
    LFS,
    METRICS,
    ROWS,
    Disk,
    Run,
    device_view,
    metric,
    row_value,
    side,
    verdict_text,
)
from .stats import ALPHA, CI_LEVEL

# Comparisons a bench tests and seed figures it holds against the lab's, at most (a preset's
# [[bench.compare]], [[bench.seed_figure]] and closed-loop figures, and `sectorlab report`'s
# bench.json alike). The presets hold at most 4 comparisons (exadata-flashlog) and 5 figures
# (ssd-vs-hdd's closed loop): 32 leaves them room eight times over. Each comparison is tested
# metric by metric with bootstraps, on both paths: 32 comparisons of 50 runs a side took the
# report 9.4 s on this host (guest path alone), where 500 copies of one ran past 60 s; and Holm over
# 32 needs 8 runs a side (bench/devicepath/runs.repeats_for), well within a preset's 50 repeats.
MAX_COMPARISONS = 32
MAX_FIGURES = 32
# Metrics that are settings or yes/no, not outcomes to test.
UNTESTED = ("offered_rate", "kept_up")
# What a control run is shown beside (the harness floor).
FLOOR_METRICS = ("tps", "log_file_sync_p50_ms", "log_file_sync_p99_ms", "log_file_parallel_write_p50_ms")


def verdict(p: float, ci: tuple[float, float]) -> tuple[str, str | None]:
    """A difference's verdict from the test's p and the CI of the difference, and why when they
    disagree."""
    excludes_zero = ci[0] > 0 or ci[1] < 0
    if p < ALPHA:
        return ("significant", None) if excludes_zero else (
            "unclear", f"p < {ALPHA} but the {CI_LEVEL} CI of the difference spans 0: the test and the CI disagree")
    if excludes_zero:
        return "within noise", f"the {CI_LEVEL} CI excludes 0, but p >= {ALPHA}"
    return "within noise", None


def test_metric(name: str, a: list[float], b: list[float]) -> dict:
    """One metric of two configurations' runs: medians, change, Mann-Whitney p, the CI of the
    difference of medians (also in percent of a's median) and the verdict."""
    ma, mb = statistics.median(a), statistics.median(b)
    p = stats.mann_whitney(a, b)
    ci = stats.median_shift_ci(a, b)
    v, note = verdict(p, ci)
    return {"metric": name, "label": METRICS[name][0], "unit": METRICS[name][2], "medians": [ma, mb],
            "change_pct": 100.0 * (mb - ma) / ma if ma else None, "n": [len(a), len(b)], "p": p,
            "ci": list(ci), "ci_pct": [100.0 * c / ma for c in ci] if ma else None, "verdict": v, "note": note}


def _numbers(reports: list[dict], name: str) -> list[float] | None:
    values = [metric(r, name) for r in reports]
    ok = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
    return [float(v) for v in values] if ok else None


def min_p_note(n_a: int, n_b: int, family: int = 1) -> str | None:
    """Said when the runs are too few for the test to reach ALPHA at all (adjusted over a family of
    `family` comparisons, Holm's smallest adjusted p is `family` times the smallest p)."""
    floor = stats.min_p(n_a, n_b)
    if floor * family <= ALPHA:
        return None
    over = f", {family} x that over the preset's {family} comparisons (Holm)" if family > 1 else ""
    return (f"the smallest p an exact Mann-Whitney test can give for {n_a} + {n_b} runs is {floor:.3g}{over}: "
            f"these runs cannot show a difference at p < {ALPHA}")


def compare_runs(a: list[dict], b: list[dict], primary: str | None = None) -> dict:
    """Two configurations, each its runs' reports: every metric both sides have, tested on one value
    per run; the primary metric's verdict is the headline. With fewer than 2 runs a side nothing
    is tested and no p-value is given."""
    primary = primary or DEFAULT_PRIMARY
    n = [len(a), len(b)]
    out = {"primary": primary, "n": n, "min_p": stats.min_p(*n) if min(n) else None, "values": [a, b],
           "tests": [], "change_of": "the medians of {} and {} runs".format(*n) if min(n) > 1
           else "the first run of each"}
    changes = {}
    for label, get, _ in ROWS:
        va, vb = (row_value(x if min(n) > 1 else x[:1], get) for x in (a, b))
        changes[label] = None if isinstance(va, tuple) or va in (None, 0) or vb is None else 100.0 * (vb - va) / va
    out["change_pct"] = changes
    if min(n) < 2:
        out["not_tested"] = (f"not tested: n = {n[0]} + {n[1]} runs; a comparison needs >= 2 runs per side")
        out["verdict"] = out["not_tested"]
        return out
    out["min_p_note"] = min_p_note(*n)
    untested = {}
    for name in METRICS:
        va, vb = _numbers(a, name), _numbers(b, name)
        if name in UNTESTED or va is None or vb is None:
            if name not in UNTESTED and any(metric(r, name) is not None for r in a + b):
                untested[name] = "not in every run"
            continue
        out["tests"].append(test_metric(name, va, vb))
    out["tests"].sort(key=lambda t: t["metric"] != primary)
    out["untested"] = untested
    head = out["tests"][0] if out["tests"] and out["tests"][0]["metric"] == primary else None
    out["verdict"] = head["verdict"] if head else (
        f"not tested: the primary metric {primary} is not in every run" if primary in METRICS
        else f"not tested: no metric {primary!r} (metrics: {', '.join(METRICS)})")
    return out


def missing_text(label: str, runs: list[Run]) -> str | None:
    """Why a side has no numbers: refused by the rules engine, or not in this bench; None when it ran."""
    if not runs:
        return f"{label} (not in this bench)"
    if not any(r.report for r in runs):
        return f"{label} ({verdict_text(runs[0].entry['verdict'], short=True)})"
    return None


def cross_comparisons(bench: dict, disks: list[Disk]) -> list[dict]:
    """The preset's comparisons (bench.json "comparisons": a and b each a disk and a BLOCKSIZE, and
    optionally "primary": a metric name), as compare_runs; a side that did not run is said, not
    compared."""
    out = []
    for c in bench.get("comparisons") or []:
        item = {"title": c.get("title"), "a": c["a"], "b": c["b"], "primary": c.get("primary") or DEFAULT_PRIMARY}
        (la, ra), (lb, rb) = side(disks, c["a"]), side(disks, c["b"])
        missing = [m for m in (missing_text(la, ra), missing_text(lb, rb)) if m]
        if missing:
            item["not_compared"] = missing
        else:
            ra, rb = [r for r in ra if r.report], [r for r in rb if r.report]
            item.update(compare_runs([r.report for r in ra], [r.report for r in rb], item["primary"]))
            item["runs"] = [ra, rb]
            item["shift"] = shift(ra, rb)
        out.append(item)
    adjust_family(out)
    return out


def adjust_family(items: list[dict]) -> None:
    """Holm's adjustment over the primary tests of a preset's comparisons (those tested): each
    primary test keeps its own p as `p_unadjusted`, gets the adjusted one as `p` with the family's
    size `family`, and its verdict from the adjusted p; with one comparison nothing changes but the
    record that it is a family of one."""
    heads = [c["tests"][0] for c in items
             if c.get("tests") and c["tests"][0]["metric"] == c.get("primary") and not c.get("not_tested")]
    for head, p in zip(heads, stats.holm([h["p"] for h in heads])):
        head["p_unadjusted"], head["p"], head["family"] = head["p"], p, len(heads)
        head["verdict"], head["note"] = verdict(p, tuple(head["ci"]))
    for c in items:
        if c.get("tests") and c["tests"][0] in heads:
            c["verdict"] = c["tests"][0]["verdict"]
            c["min_p_note"] = min_p_note(*c["n"], family=len(heads))


def comparison(disk: Disk, low: int = 512, high: int = 4096) -> dict | None:
    """The runs at `low` against those at `high` on one disk; None unless both ran."""
    by_bs = disk.by_blocksize()
    a = [r for r in by_bs.get(low, []) if r.report]
    b = [r for r in by_bs.get(high, []) if r.report]
    if not a or not b:
        return None
    return {"low": low, "high": high, **compare_runs([r.report for r in a], [r.report for r in b]),
            "runs": [a, b], "shift": shift(a, b)}


# The events files' latencies a report keeps read (each is read by the shapes, the shift functions
# and the pictures): at most this many bytes of them (8 a commit), the oldest dropped first, so a
# results directory of many large events files is read again rather than held whole in memory.
SYNC_CACHE_MAX = 256 << 20
_sync_cache: OrderedDict[tuple, object] = OrderedDict()


def sync_ms(events: Path):
    """A run's log file sync latencies in ms (a read-only numpy array), from its events file: read
    once per report while it stays within SYNC_CACHE_MAX."""
    import numpy as np
    st = os.stat(events)
    key = (str(events), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    if key in _sync_cache:
        _sync_cache.move_to_end(key)
        return _sync_cache[key]
    values = np.frombuffer(stats.read_events(events).latencies(LFS), dtype=float) / 1000
    values.flags.writeable = False
    _sync_cache[key] = values
    while sum(v.nbytes for v in _sync_cache.values()) > SYNC_CACHE_MAX and len(_sync_cache) > 1:
        _sync_cache.popitem(last=False)
    return values


def shift(a: list[Run], b: list[Run]) -> dict | None:
    """The shift function of log file sync: for each decile and p99, each run's quantile, then the
    difference of the run medians b - a with its bootstrap CI over runs. None unless both sides have
    at least 2 runs with events."""
    if min(len([r for r in runs if r.events]) for runs in (a, b)) < 2:
        return None
    per_run = [[stats.quantiles(sync_ms(r.events)) for r in runs if r.events and len(sync_ms(r.events))]
               for runs in (a, b)]
    if min(len(x) for x in per_run) < 2:
        return None
    out = {"quantiles": list(stats.QUANTILES), "a_ms": [], "b_ms": [], "diff_ms": [], "ci_ms": []}
    for i in range(len(stats.QUANTILES)):
        qa, qb = ([q[i] for q in side_runs] for side_runs in per_run)
        out["a_ms"].append(statistics.median(qa))
        out["b_ms"].append(statistics.median(qb))
        out["diff_ms"].append(statistics.median(qb) - statistics.median(qa))
        out["ci_ms"].append(list(stats.median_shift_ci(qa, qb)))
    out["n"] = [len(x) for x in per_run]
    return out


def shape(runs: list[Run]) -> dict | None:
    """The pooled log file sync of a configuration's runs (those with events): how many runs and
    commits, and its two modes when stats.bimodal finds them."""
    import numpy as np
    pooled = np.concatenate([sync_ms(r.events) for r in runs if r.events] or [np.zeros(0)])
    if not pooled.size:
        return None
    return {"runs": sum(1 for r in runs if r.events), "commits": len(pooled), "bimodal": stats.bimodal(pooled)}


def controls(disks: list[Disk]) -> list[dict]:
    """Each control configuration (runs marked "control") beside what it controls: the runs its
    entry names ("controls": a target or a list of them), else every other configuration at its
    BLOCKSIZE; FLOOR_METRICS as medians over the runs."""
    configs = {(d.name, bs): [r for r in runs if r.report] for d in disks for bs, runs in d.by_blocksize().items()}
    configs = {k: v for k, v in configs.items() if v}
    out = []
    for (name, bs), runs in configs.items():
        if not runs[0].entry.get("control"):
            continue
        named = runs[0].entry.get("controls")
        named = [named] if isinstance(named, str) else named
        beside = [(n, b) for (n, b), rs in configs.items() if (n, b) != (name, bs) and not rs[0].entry.get("control")
                  and (n in named if named else b == bs)]
        out.append({"control": f"{name}@{bs}", "controls": [f"{n}@{b}" for n, b in beside],
                    "medians": {f"{n}@{b}": {m: row_value([r.report for r in configs[(n, b)]], METRICS[m][1])
                                             for m in FLOOR_METRICS} for n, b in [(name, bs), *beside]}})
    return out


_SEED_KEYS = ("what", "seed_value", "unit", "quote", "where", "derivation", "lab", "metric", "a", "b", "reason",
              "tell_apart")


def tell_apart(f: dict) -> float | None:
    """The value a seed figure must be told apart from: the preset's, else 1 (no difference) for a
    ratio, else none."""
    if isinstance(f.get("tell_apart"), (int, float)):
        return float(f["tell_apart"])
    return 1.0 if f.get("unit") == "ratio" else None


def agreement(seed, ci: tuple[float, float], apart: float | None) -> str:
    """Whether the lab's CI agrees with a seed's figure. It agrees only when the figure lies inside
    the CI and the CI is narrower than the figure's distance from the value it must be told apart
    from (a CI that also holds "no difference" agrees with anything); a CI of no width holding the
    figure agrees exactly."""
    lo, hi = ci
    if not isinstance(seed, (int, float)) or not lo <= seed <= hi:
        return f"differs (seed {seed} outside lab CI [{lo:.3g}, {hi:.3g}])"
    width = hi - lo
    if width == 0:
        return "agrees"
    if apart is None:
        return "inside the lab CI, nothing named to tell it apart from: not an agreement"
    if width < abs(seed - apart):
        return "agrees"
    return (f"too wide to tell: the lab CI [{lo:.3g}, {hi:.3g}] is {width:.3g} wide, the seed is "
            f"{abs(seed - apart):.3g} from {apart:g}")


def _lab_figure(f: dict, disks: list[Disk]) -> dict:
    """A seed figure's lab value and its CI (CI_LEVEL): for "ratio" median(metric over a's runs) /
    median(metric over b's runs), for "value" the median over a's runs; or why there is none."""
    sides = [side(disks, f.get(k)) for k in (("a", "b") if f["lab"] == "ratio" else ("a",))]
    missing = [m for label, runs in sides if (m := missing_text(label, runs))]
    if missing:
        return {"agreement": f"not compared: {', '.join(missing)} did not run"}
    if f.get("metric") not in METRICS:
        return {"agreement": f"not compared: no metric {f.get('metric')!r}"}
    values = [_numbers([r.report for r in runs if r.report], f["metric"]) for _, runs in sides]
    if any(v is None for v in values):
        return {"agreement": f"not compared: {f['metric']} is not in every run"}
    if f["lab"] == "ratio":
        lab = statistics.median(values[0]) / statistics.median(values[1]) if statistics.median(values[1]) else None
    else:
        lab = statistics.median(values[0])
    out = {"lab_value": lab, "n": [len(v) for v in values], "ci": None}
    if lab is None:
        return {**out, "agreement": f"not compared: the median of {sides[1][0]} is 0"}
    if min(out["n"]) < 2:
        runs = " + ".join(str(n) for n in out["n"])
        return {**out, "agreement": f"not tested: n = {runs} runs; a CI needs >= 2 runs per side"}
    out["ci"] = list(stats.median_ratio_ci(*values) if f["lab"] == "ratio" else stats.median_ci(values[0]))
    out["agreement"] = agreement(f.get("seed_value"), tuple(out["ci"]), tell_apart(f))
    return out


def seed_table(bench: dict, disks: list[Disk]) -> list[dict]:
    """bench.json's "seed_figures" beside what the lab measured: each figure's own keys, the lab's
    value with its CI and the agreement ("agrees", "differs (...)", "not compared: ...")."""
    out = []
    for f in bench.get("seed_figures") or []:
        if not isinstance(f, dict):
            continue
        row = {k: f.get(k) for k in _SEED_KEYS}
        if f.get("lab") in ("ratio", "value"):
            row.update(_lab_figure(f, disks))
        else:
            row["agreement"] = "not compared: " + (f.get("reason") or "the lab does not measure it")
        out.append(row)
    return out


@dataclass
class Findings:
    """Every comparison, control and seed figure of a bench, computed once (their bootstraps are
    the report's slowest part) for the pictures, report.md and summary.json alike; the device
    path's disks and comparisons beside the guest path's, and each comparison's headline on both
    (headlines.py)."""
    per_disk: dict[str, dict | None]
    cross: list[dict]
    controls: list[dict]
    seeds: list[dict]
    device_disks: list[Disk] = field(default_factory=list)
    device_cross: list[dict] = field(default_factory=list)
    device_controls: list[dict] = field(default_factory=list)
    headlines: list[dict] = field(default_factory=list)
    device_seeds: list[dict] = field(default_factory=list)  # the seed table on the device path
    device_per_disk: dict[str, dict | None] = field(default_factory=dict)
    held_out: list[dict] = field(default_factory=list)  # the disks' models against their seeds' figures


def held_out_of(disks: list[Disk]) -> list[dict]:
    """The held-out device figures of the profiles the bench's disks are served by, beside the
    model at the seed's load (devices/heldout.py; the catalog's profiles as they are now)."""
    from ..devices import heldout
    models = {d.entry.get("model") for d in disks}
    items = [h for h in heldout.held_out() if h.profile in models]
    return heldout.check(items) if items else []


def findings_of(bench: dict, disks: list[Disk]) -> Findings:
    cross = cross_comparisons(bench, disks)
    device_disks = device_view(disks)
    device_cross = cross_comparisons(bench, device_disks) if device_disks else []
    why_not = (bench.get("device_path") or {}).get("why_not")
    return Findings({d.name: comparison(d) for d in disks}, cross, controls(disks), seed_table(bench, disks),
                    device_disks, device_cross, controls(device_disks) if device_disks else [],
                    headlines(cross, device_cross, disks, device_disks, why_not),
                    seed_table(bench, device_disks) if device_disks else [],
                    {d.name: comparison(d) for d in device_disks}, held_out_of(disks))


def comparison_key(c: dict) -> tuple:
    """What makes two comparisons one test: the same two configurations (either way round: b
    against a is a against b, mirrored) on the same primary metric."""
    sides = sorted(f"{c[s]['disk']}@{c[s]['blocksize']}" for s in ("a", "b"))
    return (*sides, c.get("primary") or DEFAULT_PRIMARY)


def no_twice(where: str, compares: list[dict]) -> None:
    """One line when a comparison is given twice: Holm would count its test twice in the family
    (each p doubled) and the report would show it twice."""
    text = {id(c): f"{c['a']['disk']}@{c['a']['blocksize']} against {c['b']['disk']}@{c['b']['blocksize']} on "
                   f"{c.get('primary') or DEFAULT_PRIMARY}" for c in compares}
    keys = {text[id(c)]: comparison_key(c) for c in compares}
    fields.no_duplicates(where, "a and b", [text[id(c)] for c in compares], same=keys.__getitem__)
