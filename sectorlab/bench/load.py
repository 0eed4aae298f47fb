"""`sectorlab bench-load` (make bench-load PRESET=...): the seed's own load, closed loop, on the
device path (hostpath.py: no lab, no guest, redo-writer on this host straight to the models).

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
import statistics
from pathlib import Path

from ..errors import UsageError
from ..paths import write_atomic
from . import compare, hostpath
from .findings import _table, seed_section, tests_lines
from .metrics import Disk, Run, metric
from .preset import RESULTS_DIR, Preset, Progress, Workload

VARIANT = "as profiled"
# Per configuration, the medians of the runs: (label, metric, format).
ROWS = (("transactions/s", "tps", "{:,.0f}"), ("commits per log write", "commits_per_write", "{:.2f}"),
        ("log file sync mean (ms)", "log_file_sync_mean_ms", "{:.3f}"),
        ("log file parallel write mean (ms)", "log_file_parallel_write_mean_ms", "{:.3f}"),
        ("log file sync / log file parallel write (means)", "lfs_over_lfpw_mean", "{:.2f}"),
        ("bytes per redo write", "bytes_per_write", "{:,.0f}"), ("redo MB/s", "write_mb_s", "{:.2f}"),
        ("sessions' CPU per transaction, measured (us)", "session_cpu_us_per_txn", "{:.0f}"))


def workload(preset: Preset) -> Workload:
    c = preset.closed_loop
    if c is None:
        raise UsageError(f"preset {preset.name!r} has no [bench.closed_loop]: it does not say the seed's sessions, "
                         f"redo per transaction and CPU per transaction (presets with one: docs/experiments.md)")
    w = preset.workload
    return Workload(c["sessions"], c["redo_per_txn"], 0, "closed", c["cpu_us_per_txn"], w.warmup_s, w.duration_s,
                    w.log_size)


def run(preset: Preset, progress: Progress, results_root: Path = RESULTS_DIR, repeats: int | None = None,
        seed: int | None = None) -> Path:
    w = workload(preset)
    repeats = repeats or hostpath.repeats_for(len(preset.compares))
    figures = preset.closed_loop["figure"]
    extra = [f[k] for f in figures if f["lab"] != "none" for k in ("a", "b") if f.get(k)]
    cfgs = hostpath.configs(preset, extra)
    if not cfgs:
        raise UsageError(f"preset {preset.name!r}: no [[bench.compare]] and no figure names a configuration")
    results = hostpath.results_dir(results_root, f"{preset.name}-closed-loop")
    done = hostpath.device_runs(preset, w, cfgs, {VARIANT: {}}, repeats, seed, results, progress,
                                f"closed loop, {w.describe()}")
    doc = {"preset": preset.name, "seed": preset.seed, "title": preset.title, "workload": w.as_json(),
           "closed_loop": {k: v for k, v in preset.closed_loop.items() if k != "figure"},
           "seed_figures": figures, "comparisons": preset.compares, "order_seed": done.order_seed,
           "repeats": repeats, "runs": done.runs, "wall_s": done.wall_s}
    write_atomic(results / "load.json", json.dumps(doc, indent=2))
    write_report(results)
    return results


def disks(doc: dict, reports: dict[str, dict]) -> list[Disk]:
    """The runs as the bench's report holds them: a Disk per target, its runs by BLOCKSIZE."""
    out: dict[str, Disk] = {}
    for r in doc["runs"]:
        name, _, bs = r["config"].partition("@")
        entry = {"disk": name, "blocksize": int(bs), "verdict": {"allowed": True}}
        out.setdefault(name, Disk(name, entry)).runs.append(Run(name, int(bs), r["repeat"], entry,
                                                                 reports[r["report"]]))
    return list(out.values())


def write_report(results: Path) -> Path:
    doc = json.loads((results / "load.json").read_text())
    reports = {r["report"]: json.loads((results / r["report"]).read_text()) for r in doc["runs"]}
    ds = disks(doc, reports)
    cross = compare.cross_comparisons({"comparisons": doc["comparisons"]}, ds)
    seeds = compare.seed_table({"seed_figures": doc["seed_figures"]}, ds)
    w, c = doc["workload"], doc["closed_loop"]
    configs = list(dict.fromkeys(r["config"] for r in doc["runs"]))
    by_config = {k: [reports[r["report"]] for r in doc["runs"] if r["config"] == k] for k in configs}
    table = [["median of the runs", *configs]]
    for label, name, fmt in ROWS:
        row = [label]
        for k in configs:
            values = [v for v in (metric(rep, name) for rep in by_config[k]) if isinstance(v, (int, float))]
            row.append(fmt.format(statistics.median(values)) if values else "-")
        table.append(row)
    reached = []
    if c.get("seed_tps"):
        for k in configs:
            tps = statistics.median(metric(rep, "tps") for rep in by_config[k])
            reached.append(f"{k} {100 * tps / c['seed_tps']:.1f} %")
    lines = [f"# The seed's load, closed loop, on the device path: {doc['title']}", "",
             f"Preset `{doc['preset']}` (seed {doc['seed'] or '-'}): {w['sessions']} sessions committing without "
             f"think time, {w['redo_per_txn']:,} B of redo and {w['cpu_us_per_txn']:,} us of CPU per transaction "
             f"(applied before each commit), redo-writer on this host straight to the device models (no guest). "
             f"Where these come from: {c['source']}", "",
             f"{doc['repeats']} runs of each configuration in random rounds (order seed {doc['order_seed']}), "
             f"{w['warmup_s']} s warm-up per model, {w['duration_s']} s a run; {doc['wall_s']} s in all.", ""]
    if reached:
        lines += [f"**How far the host got**: the seed ran {c['seed_tps']:,.0f} transactions/s; these runs reached "
                  + ", ".join(reached) + " of it. The host's 2 cores give the sessions, the log writer and the "
                  "models 2 CPU-seconds a second, where the seed's sessions alone needed "
                  f"{c['seed_tps'] * w['cpu_us_per_txn'] / 1e6:,.1f} at its rate: group commit here is what this "
                  "load makes of 2 cores, not the seed's.", ""]
    lines += ["## Group commit and the load per configuration", ""] + _table(table) + [""]
    for i, item in enumerate(cross, 1):
        a, b = (f"{item[k]['disk']}@{item[k]['blocksize']}" for k in ("a", "b"))
        lines += [f"## {i}. {item.get('title')} ({a} → {b})", ""]
        lines += ([f"Not compared: {', '.join(item['not_compared'])}.", ""] if item.get("not_compared")
                  else tests_lines(item, a, b) + [""])
    lines += seed_section(seeds, path="These are the device path's, at the seed's closed-loop load.")
    lines += ["", "## How to run it again", "", "```",
              f"sectorlab bench-load --repeats {doc['repeats']} --duration {w['duration_s']} --seed "
              f"{doc['order_seed']} -- {doc['preset']}", "```", ""]
    write_atomic(results / "summary.json", json.dumps({"workload": w, "closed_loop": c, "configurations": {
        k: {name: statistics.median(v) if (v := [x for x in (metric(rep, name) for rep in by_config[k])
                                               if isinstance(x, (int, float))]) else None for _, name, _ in ROWS}
        for k in configs}, "comparisons": [{k: v for k, v in x.items() if k not in ("runs", "values")} for x in cross],
        "seed_figures": seeds}, indent=2, default=str))
    path = results / "report.md"
    write_atomic(path, "\n".join(lines))
    return path
