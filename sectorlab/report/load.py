"""The report of a closed-loop run's results directory (load.json, written by
bench/devicepath/load.py): group commit and the load per configuration, the preset's comparisons
tested as the bench tests them, the seed's figures beside the lab's values."""

from __future__ import annotations

import json
import shlex
import statistics
from pathlib import Path

from ..analysis import compare, stats
from ..analysis.metrics import Disk, Run, metric
from ..errors import UsageError
from ..paths import write_atomic
from . import clock, render
from .findings import seed_section, tests_lines

# Per configuration, the medians of the runs: (label, metric, format).
ROWS = (("transactions/s", "tps", "{:,.0f}"), ("commits per log write", "commits_per_write", "{:.2f}"),
        ("log file sync mean (ms)", "log_file_sync_mean_ms", "{:.3f}"),
        ("log file sync p99.9 (ms)", "log_file_sync_p999_ms", "{:.3f}"),
        ("log file sync max (ms)", "log_file_sync_max_ms", "{:.3f}"),
        ("log file parallel write mean (ms)", "log_file_parallel_write_mean_ms", "{:.3f}"),
        ("log file parallel write p99.9 (ms)", "log_file_parallel_write_p999_ms", "{:.3f}"),
        ("log file parallel write > 1 ms (%)", "lfpw_over_1ms_pct", "{:.3f}"),
        ("log file parallel write > 10 ms (%)", "lfpw_over_10ms_pct", "{:.3f}"),
        ("log file parallel write max (ms)", "log_file_parallel_write_max_ms", "{:.3f}"),
        ("log file sync / log file parallel write (means)", "lfs_over_lfpw_mean", "{:.2f}"),
        ("bytes per redo write", "bytes_per_write", "{:,.0f}"), ("redo MB/s", "write_mb_s", "{:.2f}"),
        ("sessions' CPU per transaction, measured (us)", "session_cpu_us_per_txn", "{:.0f}"))


def disks(doc: dict, reports: dict[str, dict]) -> list[Disk]:
    """The runs as the bench's report holds them: a Disk per target, its runs by BLOCKSIZE."""
    out: dict[str, Disk] = {}
    for r in doc["runs"]:
        name, _, bs = r["config"].partition("@")
        entry = {"disk": name, "blocksize": int(bs), "verdict": {"allowed": True}}
        out.setdefault(name, Disk(name, entry)).runs.append(Run(name, int(bs), r["repeat"], entry,
                                                                 reports[r["report"]]))
    return list(out.values())


EXPECTED = "expected the load.json 'sectorlab bench-load' writes"


def _findings_picture(cross: list[dict], results: Path, path_name: str) -> list[str]:
    """The first screen's picture, as a bench report's: each comparison's primary metric, b over a,
    with its CI, on the one path a closed loop runs on (no picture when none was tested)."""
    from ..analysis.plots import plot_findings
    items = [{"title": c.get("title"), "device": (c.get("tests") or [None])[0], "guest": None} for c in cross]
    if plot_findings(items, path_name, results / render.FINDINGS_PNG) is None:
        return []
    return [f"![The findings: each comparison's primary metric, b over a, with its {stats.CI_LEVEL} CI ({path_name})]"
            f"({render.FINDINGS_PNG})", ""]
AWR_PATH_MAX = 4096


def write(results: Path) -> dict[str, Path]:
    """report.md, report.html and summary.json of load.json and the runs' reports it names."""
    doc = render.read_results(results, "load.json", "closed-loop record", EXPECTED)
    reports = render.read_runs(results, doc, EXPECTED)
    ds = disks(doc, reports)
    cross = compare.cross_comparisons({"comparisons": doc["comparisons"]}, ds)
    seeds = compare.seed_table({"seed_figures": doc["seed_figures"]}, ds)
    w, c = doc["workload"], doc["closed_loop"]
    awr = doc.get("awr")
    if awr is not None and (not isinstance(awr, str) or len(awr) > AWR_PATH_MAX):
        raise UsageError(f"awr = {stats.shown(awr)}: expected the path of the AWR report the load came from, at most "
                         f"{AWR_PATH_MAX} characters; {EXPECTED}")
    from_awr = bool(awr or c.get("awr"))   # --awr, or a preset whose own closed loop is a report's (a twin's)
    who = "the AWR report's load" if from_awr else "the seed"
    whose = "the AWR report's" if from_awr else "the seed's"
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
    where = "in virtual time" if clock.virtual(doc) else "on the device path"
    lines = [f"# {whose[0].upper()}{whose[1:]} load, closed loop, {where}: {doc['title']}", "",
             *_findings_picture(cross, results, "virtual time" if clock.virtual(doc) else "device path"),
             f"Preset `{doc['preset']}` (seed {doc['seed'] or '-'}): {w['sessions']} sessions committing without "
             f"think time, {w['redo_per_txn']:,} B of redo and {w['cpu_us_per_txn']:,} us of CPU per transaction "
             f"(applied before each commit), no guest: {clock.where(doc)}. Where these come from: \"Where the "
             f"load comes from\", below.", "",
             f"{doc['repeats']} runs of each configuration in random rounds (order seed {doc['order_seed']}), "
             f"{clock.warmup(doc, w)}, {w['duration_s']} s a run; {doc['wall_s']} s in all.", ""]
    if reached and clock.virtual(doc):
        lines += [f"**How far the modelled host got**: {who} ran {c['seed_tps']:,.0f} transactions/s; "
                  "these runs "
                  "reached " + ", ".join(reached) + f" of it, on {clock.host(doc, sources=False)}: what differs is "
                  "the model's, not this host's.", ""]
    elif reached:
        lines += [f"**How far the host got**: {who} ran {c['seed_tps']:,.0f} transactions/s; these runs "
                  "reached "
                  + ", ".join(reached) + " of it. The host's 2 cores give the sessions, the log writer and the "
                  "models 2 CPU-seconds a second, where the seed's sessions alone needed "
                  f"{c['seed_tps'] * w['cpu_us_per_txn'] / 1e6:,.1f} at its rate: group commit here is what this "
                  "load makes of 2 cores, not the seed's.", ""]
    lines += ["## Group commit and the load per configuration", ""] + render.table(table) + [""]
    for i, item in enumerate(cross, 1):
        a, b = (f"{item[k]['disk']}@{item[k]['blocksize']}" for k in ("a", "b"))
        lines += [f"## {i}. {item.get('title')} ({a} → {b})", ""]
        lines += ([f"Not compared: {', '.join(item['not_compared'])}.", ""] if item.get("not_compared")
                  else tests_lines(item, a, b) + [""])
    lines += seed_section(seeds, path=("These are virtual time's" if clock.virtual(doc) else "These are the device "
                                       "path's") + f", at {whose} closed-loop load.")
    # the load's derivation, each figure with its line, is long: after the findings, not before them
    lines += ["", "## Where the load comes from", "", str(c["source"])]
    lines += ["", "## How to run it again", "", "```",
              f"sectorlab bench-load --repeats {doc['repeats']} --duration {w['duration_s']} --seed "
              f"{doc['order_seed']}{clock.again(doc)}{f' --awr {shlex.quote(awr)}' if awr else ''} -- "
              f"{doc['preset']}", "```", ""]
    write_atomic(results / "summary.json", json.dumps({"workload": w, "closed_loop": c, "configurations": {
        k: {name: statistics.median(v) if (v := [x for x in (metric(rep, name) for rep in by_config[k])
                                               if isinstance(x, (int, float))]) else None for _, name, _ in ROWS}
        for k in configs}, "comparisons": [{k: v for k, v in x.items() if k not in ("runs", "values")} for x in cross],
        "seed_figures": seeds}, indent=2, default=str))
    # no text of the record (a source, the AWR report's path) breaks a line of the page
    return {**render.write(results, "\n".join(render.one_line(line) for line in lines)),
            "summary": results / "summary.json"}
