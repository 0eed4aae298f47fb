"""`sectorlab report RESULTS_DIR`: a bench's results as report.md, a self-contained report.html
(pictures inline, no network, narrow screens scroll the tables) and summary.json for machines.

A results directory holds bench.json (what ran: the workload, and per run the disk, the geometry
the guest showed, the redo BLOCKSIZE, the rules engine's verdict, the exact command, the paths of
redo-writer's --output json report and --events file), the lab's lab.json, and the runs' files
under runs/. A BLOCKSIZE the rules engine refuses has a verdict and no run: the report shows the
refusal (ORA-01378) where the numbers would be.

Per disk: the AWR-like rows of each run, 512 against 4096 side by side with the change in percent
and Welch's t-test on "log file sync" and "log file parallel write" (from each run's count, mean and
standard deviation), each difference called significant or within noise by its p-value; when a
configuration was repeated, the spread of its repeats; a log-scale latency histogram and the latency
over time. The report never states a difference without its p-value and sample sizes.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import statistics
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .. import inputs
from ..errors import SectorlabError, UsageError
from ..paths import slug
from . import stats

ALPHA = 0.01
SUMMARY_VERSION = 1

# (label, function of a redo-writer report, format): the AWR-like rows, in the order a DBA reads them.
_LFPW, _LFS = "log_file_parallel_write", "log_file_sync"


def _per_s(r: dict, key: str) -> float:
    return r[key] / r["elapsed_s"] if r["elapsed_s"] else 0.0


def _avg_request(r: dict) -> float | None:
    devices = [m["device"] for m in r.get("members", []) if m.get("device")]
    return devices[0]["avg_request_bytes"] if devices else None


ROWS = [
    ("transactions/s", lambda r: r["tps"], "{:,.1f}"),
    ("redo size per second (B)", lambda r: _per_s(r, "redo_bytes"), "{:,.0f}"),
    ("redo size per transaction (B)", lambda r: r["redo_bytes"] / r["transactions"] if r["transactions"] else 0,
     "{:,.0f}"),
    ("redo wastage %", lambda r: r["wastage_pct"], "{:.2f}"),
    ("redo writes", lambda r: r["writes"], "{:,.0f}"),
    ("redo writes under 4 KiB", lambda r: r["writes_under_4k"], "{:,.0f}"),
    ("device average request size (B)", _avg_request, "{:,.0f}"),
    ("log file parallel write mean (ms)", lambda r: r[_LFPW]["mean_us"] / 1000, "{:.3f}"),
    ("log file parallel write p99 (ms)", lambda r: r[_LFPW]["p99_us"] / 1000, "{:.3f}"),
    ("log file parallel write max (ms)", lambda r: r[_LFPW]["max_us"] / 1000, "{:.3f}"),
    ("log file parallel write > 1 / 10 / 20 ms %",
     lambda r: tuple(r[_LFPW][f"over_{k}ms_pct"] for k in (1, 10, 20)), "{:.2f} / {:.2f} / {:.2f}"),
    ("log file sync mean (ms)", lambda r: r[_LFS]["mean_us"] / 1000, "{:.3f}"),
    ("log file sync p50 (ms)", lambda r: r[_LFS]["p50_us"] / 1000, "{:.3f}"),
    ("log file sync p99 (ms)", lambda r: r[_LFS]["p99_us"] / 1000, "{:.3f}"),
    ("log file sync max (ms)", lambda r: r[_LFS]["max_us"] / 1000, "{:.3f}"),
    ("log file sync > 1 / 10 / 20 ms %",
     lambda r: tuple(r[_LFS][f"over_{k}ms_pct"] for k in (1, 10, 20)), "{:.2f} / {:.2f} / {:.2f}"),
]
# The rows whose change from 512 to 4096 is shown in percent (single numbers).
_CHANGE_ROWS = [row for row in ROWS if not row[2].count("/")]


@dataclass
class Run:
    disk: str
    blocksize: int
    repeat: int
    entry: dict                   # the run's entry in bench.json
    report: dict | None = None    # redo-writer's JSON; None for a refused BLOCKSIZE
    events: Path | None = None


@dataclass
class Disk:
    name: str
    entry: dict                   # the first run entry of the disk (bus, geometry, device, sectors)
    runs: list[Run] = field(default_factory=list)

    def by_blocksize(self) -> dict[int, list[Run]]:
        out: dict[int, list[Run]] = {}
        for r in sorted(self.runs, key=lambda r: (r.blocksize, r.repeat)):
            out.setdefault(r.blocksize, []).append(r)
        return out


def _need(entry: dict, key: str, where: str):
    if key not in entry:
        raise UsageError(f"{where}: no '{key}'; expected a run entry as sectorlab bench writes it")
    return entry[key]


def load(results: Path) -> tuple[dict, list[Disk]]:
    """bench.json and the runs it names, grouped by disk in the order they ran; a missing or
    malformed file is an error that names it."""
    results = Path(results)
    bench_path = results / "bench.json"
    if bench_path.is_symlink():
        inputs.inside(results, "bench.json", "bench results")  # a link is followed only within the directory
    if not bench_path.exists() and not bench_path.is_symlink():
        raise UsageError(f"{results}: no bench.json; expected a results directory written by 'sectorlab bench' "
                             f"(results/<timestamp>-<preset>/)")
    try:
        bench = json.loads(inputs.read_text(bench_path, "bench results", inputs.BENCH_JSON_MAX))
    except (ValueError, RecursionError) as e:
        raise UsageError(f"{bench_path}: not JSON ({e})") from e
    if not isinstance(bench, dict) or not isinstance(bench.get("runs"), list) or not bench["runs"]:
        raise UsageError(f"{bench_path}: no 'runs' list; expected what 'sectorlab bench' writes")
    disks: dict[str, Disk] = {}
    for i, entry in enumerate(bench["runs"]):
        where = f"{bench_path}: runs[{i}]"
        if not isinstance(entry, dict):
            raise UsageError(f"{where}: {str(entry)[:60]!r} is not a run entry; expected what 'sectorlab bench' writes")
        name = _need(entry, "disk", where)
        blocksize, verdict = _need(entry, "blocksize", where), _need(entry, "verdict", where)
        repeat = entry.get("repeat", 1)
        if not isinstance(name, str) or not all(isinstance(v, int) and not isinstance(v, bool)
                                                for v in (blocksize, repeat)) or not isinstance(verdict, dict):
            raise UsageError(f"{where}: disk {name!r}, blocksize {blocksize!r}, repeat {repeat!r}, verdict "
                             f"{str(verdict)[:40]!r}: expected a name, two whole numbers and a table, as 'sectorlab "
                             f"bench' writes them")
        run = Run(name, blocksize, repeat, entry)
        if entry.get("report"):
            run.report = stats.load_report(inputs.inside(results, entry["report"], f"{where}: report"))
            if entry.get("events"):
                run.events = inputs.inside(results, entry["events"], f"{where}: events file")
                inputs.check_regular(run.events, f"{where}: events file", inputs.EVENTS_CSV_MAX)
        elif entry["verdict"].get("allowed", False):
            raise UsageError(f"{where}: BLOCKSIZE {run.blocksize} is allowed on {name} but no report was kept")
        disks.setdefault(name, Disk(name, entry)).runs.append(run)
    return bench, list(disks.values())


# ---- the numbers ------------------------------------------------------------------------------

def _welch(a: dict, b: dict, event: str) -> dict:
    test = stats.welch(a, b, event)
    return {"event": event, "t": test["t"], "p": test["p"], "n": test["n"],
            "mean_ms": [a[event]["mean_us"] / 1000, b[event]["mean_us"] / 1000],
            "verdict": stats.verdict(test["p"], ALPHA)}


# What the between-runs test compares: one value per run.
_PER_RUN = [("transactions/s", lambda r: r["tps"], "{:,.1f}"),
            ("log file sync mean (ms)", lambda r: r[_LFS]["mean_us"] / 1000, "{:.3f}")]


def between_runs(a: list[dict], b: list[dict]) -> list[dict] | None:
    """Welch's t-test on one value per run (transactions/s, the mean log file sync) over the
    repeats of two configurations: whether a difference is larger than the run-to-run noise,
    which the per-commit test cannot see (its samples all come from one run). None unless both
    sides ran at least twice."""
    if len(a) < 2 or len(b) < 2:
        return None
    from scipy import stats as scipy_stats
    out = []
    for label, get, _ in _PER_RUN:
        va, vb = [get(r) for r in a], [get(r) for r in b]
        t, p = scipy_stats.ttest_ind(va, vb, equal_var=False)
        tested = p == p  # NaN when neither side varies
        out.append({"metric": label, "a": va, "b": vb, "n": [len(va), len(vb)],
                    "median": [statistics.median(va), statistics.median(vb)],
                    "t": float(t) if tested else None, "p": float(p) if tested else None,
                    "verdict": stats.verdict(float(p), ALPHA) if tested else "not testable (no spread)"})
    return out


def row_value(reports: list[dict], get):
    """A row's value over the repeats of one configuration: the median of the runs (element by
    element for the shares over 1/10/20 ms); one run's own value when it ran once."""
    values = [_value(r, get) for r in reports]
    if not values or any(v is None for v in values):
        return None
    if isinstance(values[0], tuple):
        return tuple(statistics.median(v[i] for v in values) for i in range(len(values[0])))
    return statistics.median(values)


def compare_reports(a: list[dict], b: list[dict]) -> dict:
    """Two configurations, each its runs' reports: every single-number row's change in percent
    (of the medians when both sides were repeated, else of the first runs), Welch's t-test per
    commit and per log write in the first run of each, and the test between runs."""
    if len(a) < 2 or len(b) < 2:
        a, b, of = a[:1], b[:1], "the first run of each"
    else:
        of = f"the medians of {len(a)} and {len(b)} runs"
    changes = {}
    for label, get, _ in _CHANGE_ROWS:
        va, vb = row_value(a, get), row_value(b, get)
        changes[label] = None if va in (None, 0) or vb is None else 100.0 * (vb - va) / va
    return {"change_of": of, "change_pct": changes, "values": [a, b],
            "tests": [_welch(a[0], b[0], _LFS), _welch(a[0], b[0], _LFPW)]}


def comparison(disk: Disk, low: int = 512, high: int = 4096) -> dict | None:
    """The runs at `low` against those at `high` on one disk; None unless both ran."""
    runs = disk.by_blocksize()
    a = [r.report for r in runs.get(low, []) if r.report]
    b = [r.report for r in runs.get(high, []) if r.report]
    if not a or not b:
        return None
    return {"low": low, "high": high, **compare_reports(a, b), "between_runs": between_runs(a, b)}


def _reports(disks: list[Disk], name: str, blocksize: int) -> list[dict]:
    return [r.report for d in disks if d.name == name for r in sorted(d.runs, key=lambda r: r.repeat)
            if r.blocksize == blocksize and r.report]


def _first_run(disks: list[Disk], name: str, blocksize: int) -> Run | None:
    return next((r for d in disks if d.name == name for r in sorted(d.runs, key=lambda r: r.repeat)
                 if r.blocksize == blocksize), None)


def cross_comparisons(bench: dict, disks: list[Disk]) -> list[dict]:
    """The preset's comparisons across disks (bench.json "comparisons": a and b each a disk and a
    BLOCKSIZE), as compare_reports; a side that did not run is said, not compared."""
    out = []
    for c in bench.get("comparisons") or []:
        item = {"title": c.get("title"), "a": c["a"], "b": c["b"]}
        ra, rb = (_first_run(disks, c[k]["disk"], int(c[k]["blocksize"])) for k in ("a", "b"))
        missing = [f"{x['disk']}@{x['blocksize']}" + (f" ({_verdict_text(r.entry['verdict'], short=True)})" if r
                                                       else " (not in this bench)")
                   for x, r in ((c["a"], ra), (c["b"], rb)) if r is None or r.report is None]
        if missing:
            item["not_compared"] = missing
        else:
            a, b = (_reports(disks, c[k]["disk"], int(c[k]["blocksize"])) for k in ("a", "b"))
            item.update(compare_reports(a, b))
            item["between_runs"] = between_runs(a, b)
        out.append(item)
    return out


def spread(runs: list[Run]) -> dict | None:
    """Repeats of one configuration: min, median and max of transactions/s and the log file sync
    median, and the coefficient of variation of transactions/s; None for fewer than 2 runs."""
    reports = [r.report for r in runs if r.report]
    if len(reports) < 2:
        return None
    tps = [r["tps"] for r in reports]
    p50 = [r[_LFS]["p50_us"] / 1000 for r in reports]
    return {"runs": len(reports), "tps": [min(tps), statistics.median(tps), max(tps)],
            "log_file_sync_p50_ms": [min(p50), statistics.median(p50), max(p50)],
            "tps_cv_pct": 100.0 * statistics.stdev(tps) / statistics.fmean(tps) if statistics.fmean(tps) else None}


def race_wins(report: dict) -> list[dict] | None:
    """For a raced run (redo-writer --race): each member's path, wins and share of the log writes."""
    members = report.get("members") or []
    if len(members) < 2 or not any(m.get("wins") for m in members):
        return None
    total = sum(m.get("wins", 0) for m in members)
    return [{"path": m["path"], "wins": m.get("wins", 0), "share_pct": 100.0 * m.get("wins", 0) / total}
            for m in members]


def _value(report: dict, get) -> float | tuple | None:
    try:
        return get(report)
    except (KeyError, TypeError, ZeroDivisionError):
        return None


def _public(c: dict | None) -> dict | None:
    """A comparison without the runs' reports it was made from (summary.json names those files)."""
    return None if c is None else {k: v for k, v in c.items() if k != "values"}


def summary(bench: dict, disks: list[Disk]) -> dict:
    """What report.md says, for machines (summary.json)."""
    out = {"version": SUMMARY_VERSION, "preset": bench.get("preset"), "lab": bench.get("lab"),
           "started": bench.get("started"), "workload": bench.get("workload"), "alpha": ALPHA, "disks": []}
    for d in disks:
        e = d.entry
        item = {"disk": d.name, "bus": e.get("bus"), "geometry": e.get("geometry"), "device": e.get("device"),
                "logical_block_size": e.get("logical"), "physical_block_size": e.get("physical"), "runs": []}
        for r in sorted(d.runs, key=lambda r: (r.blocksize, r.repeat)):
            row = {"blocksize": r.blocksize, "repeat": r.repeat, "allowed": r.entry["verdict"].get("allowed"),
                   "verdict_error": r.entry["verdict"].get("error") or None, "report": r.entry.get("report")}
            if r.report:
                row["metrics"] = {label: _value(r.report, get) for label, get, _ in ROWS}
            item["runs"].append(row)
        for row, r in zip(item["runs"], sorted(d.runs, key=lambda r: (r.blocksize, r.repeat))):
            if r.report and race_wins(r.report):
                row["race_wins"] = race_wins(r.report)
            if r.entry.get("rmw"):
                row["rmw"] = r.entry["rmw"]
        item["comparison"] = _public(comparison(d))
        item["spread"] = {str(bs): s for bs, runs in d.by_blocksize().items() if (s := spread(runs))}
        out["disks"].append(item)
    out["comparisons"] = [_public(c) for c in cross_comparisons(bench, disks)]
    out["rules"] = bench.get("rules") or []
    return out


# ---- the pictures -----------------------------------------------------------------------------

def _sync_ms(events_path: Path):
    """A run's log file sync latencies (ms, clipped at 1 us for the log scale) and its log writes."""
    import numpy as np
    events = stats.read_events(events_path)
    return (np.clip(np.array([p[1] for p in events.get(_LFS, [])]) / 1000, 1e-3, None),
            events.get(_LFPW, []))


def _histogram(series: list[tuple[str, object]], title: str, path: Path) -> Path | None:
    """A log-scale histogram of log file sync, one step line per (label, latencies in ms)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    everything = np.concatenate([sync for _, sync in series])
    if not everything.size:
        return None
    bins = np.logspace(np.log10(everything.min()), np.log10(everything.max() * 1.01), 60)
    fig, ax = plt.subplots(figsize=(6, 4))
    for label, sync in series:
        ax.hist(sync, bins=bins, histtype="step", linewidth=1.5, label=f"{label} (n={len(sync):,})")
    ax.set_xscale("log")
    ax.set(xlabel="log file sync (ms, log scale)", ylabel="commits", title=title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def plot_disk(disk: Disk, stem: Path) -> list[Path]:
    """Two pictures of a disk's first run at each BLOCKSIZE, from their events files: a log-scale
    histogram of log file sync (as seed 002) and log file parallel write over time (as seed 000);
    STEM-histogram.png and STEM-over-time.png, side by side on a wide screen, one above the other
    on a phone. Empty when no run kept events."""
    runs = [r for r in sorted(disk.runs, key=lambda r: (r.blocksize, r.repeat)) if r.events and r.repeat == 1]
    if not runs:
        return []
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    per_run = [(r, *_sync_ms(r.events)) for r in runs]
    g = disk.entry
    where = f"{disk.name} ({g.get('logical')}/{g.get('physical')} B)"
    hist = _histogram([(f"BLOCKSIZE {r.blocksize}", sync) for r, sync, _ in per_run], f"{where}: commit latency",
                      stem.with_name(f"{stem.name}-histogram.png"))
    if hist is None:
        return []
    fig, ax = plt.subplots(figsize=(6, 4))
    for r, _, writes in per_run:
        ax.scatter([t / 1e6 for t, _ in writes], [lat / 1000 for _, lat in writes], s=3, alpha=0.5,
                   label=f"BLOCKSIZE {r.blocksize} (n={len(writes):,})")
    ax.set_yscale("log")
    ax.set(xlabel="seconds since the run started", ylabel="log file parallel write (ms, log scale)",
           title=f"{where}: log writes over time")
    ax.legend(fontsize=8, markerscale=4)
    fig.tight_layout()
    over_time = stem.with_name(f"{stem.name}-over-time.png")
    fig.savefig(over_time, dpi=90)
    plt.close(fig)
    return [hist, over_time]


def plot_comparison(c: dict, disks: list[Disk], path: Path) -> Path | None:
    """A comparison across disks as one log-scale histogram of both sides' commit latency (the
    first run of each, as the comparison's table), as seed 002 drew flash logging on and off."""
    series = []
    for k in ("a", "b"):
        run = _first_run(disks, c[k]["disk"], int(c[k]["blocksize"]))
        if run is None or run.events is None:
            return None
        series.append((f"{c[k]['disk']} at {c[k]['blocksize']}", _sync_ms(run.events)[0]))
    return _histogram(series, "commit latency", path)


# ---- the documents ----------------------------------------------------------------------------

def _fmt(fmt: str, value) -> str:
    if value is None:
        return "-"
    return fmt.format(*value) if isinstance(value, tuple) else fmt.format(value)


def _table(rows: list[list[str]], numbers: bool = True) -> list[str]:
    """A markdown table; with `numbers`, every column but the first is right-aligned."""
    head, *body = rows
    align = [":---", *(("---:" if numbers else ":---") for _ in head[1:])]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in body]
    return lines + [""]


def _verdict_text(v: dict, short: bool = False) -> str:
    if v.get("allowed"):
        return "allowed" + (" (default)" if v.get("blocksize") == v.get("default_blocksize") else "")
    error = (v.get("error") or "").strip()
    if short:
        code = re.match(r"(ORA-\d+)", error)
        return f"refused ({code.group(1)})" if code else "refused"
    return "refused: " + error


def _change_text(label: str, pct: float | None, a, b) -> str:
    """A row's change from one side to the other: in points for a percentage, as a ratio when it is
    more than tenfold (4 -> 4,116 writes reads as x1,029, not +102800.0 %), else in percent."""
    if label.endswith("%"):
        return "-" if a is None or b is None else f"{b - a:+.2f} points"
    if pct is not None and pct >= 900:
        return f"x{1 + pct / 100:,.0f}"
    return "-" if pct is None else f"{pct:+.1f} %"


def _test_text(t: dict, low, high) -> str:
    """One Welch test in words; `low` and `high` name the two sides (a BLOCKSIZE or 'at' a run)."""
    event = t["event"].replace("_", " ")
    a, b = t["mean_ms"]
    low, high = (f"at {x}" if isinstance(x, int) else x for x in (low, high))
    return (f"Per {'commit' if t['event'] == _LFS else 'log write'}, first run of each, {event}: mean {a:.3f} ms "
            f"{low} against {b:.3f} ms {high} ({100 * (b - a) / a:+.1f} %), "
            f"Welch t = {t['t']:.2f}, {stats.p_text(t['p'])}, n = {t['n'][0]:,} + {t['n'][1]:,}: "
            f"**{t['verdict']}** at alpha {ALPHA}")


def _between_text(tests: list[dict] | None, low, high) -> list[str]:
    if not tests:
        return ["- Not repeated on both sides: whether the difference exceeds the run-to-run noise is not tested "
                "(the per-commit tests above take every sample from one run each)"]
    low, high = (f"at {x}" if isinstance(x, int) else x for x in (low, high))
    out = []
    fmt = {label: f for label, _, f in _PER_RUN}
    for t in tests:
        a, b = t["median"]
        p = stats.p_text(t["p"]) + f", Welch t = {t['t']:.2f}" if t["p"] is not None else "no spread to test"
        out.append(f"- Between runs, {t['metric']}: median {fmt[t['metric']].format(a)} {low} against "
                   f"{fmt[t['metric']].format(b)} {high} "
                   f"({100 * (b - a) / a:+.1f} %), {p}, n = {t['n'][0]} + {t['n'][1]} runs: **{t['verdict']}**"
                   + (f" at alpha {ALPHA}" if t["p"] is not None else ""))
    return out


def markdown(bench: dict, disks: list[Disk], pictures: dict, results: Path) -> str:
    w = bench.get("workload", {})
    out = [f"# sectorlab bench: {bench.get('preset', '?')}", ""]
    if bench.get("title"):
        out += [f"**{bench['title']}**" + (f" (seed {bench['seed']})" if bench.get("seed") else ""), ""]
    out += [f"Lab `{bench.get('lab', '?')}`, started {bench.get('started', '?')}, image "
            f"`{bench.get('image', '?')}`. Each run: {w.get('sessions', '?')} session(s), "
            f"{w.get('redo_per_txn', '?')} B of redo per commit, rate {w.get('rate') or 'as fast as possible'}"
            f"{' commits/s' if w.get('rate') else ''}, a {w.get('warmup_s', '?')} s warm-up then "
            f"{w.get('duration_s', '?')} s measured. A difference is called significant only when Welch's "
            f"t-test gives p < {ALPHA}; otherwise it is within noise.", ""]
    out += ["## The disks as the guest showed them", ""]
    out += _table([["disk", "bus", "device", "logical/physical (B)", "BLOCKSIZE verdicts (rules engine)"]] + [
        [d.name, str(d.entry.get("bus")), f"`{d.entry.get('device')}`",
         f"{d.entry.get('logical')}/{d.entry.get('physical')}",
         "; ".join(f"{bs}: {_verdict_text(runs[0].entry['verdict'], short=True)}"
                   for bs, runs in d.by_blocksize().items())]
        for d in disks], numbers=False)
    for d in disks:
        out += [f"## {d.name}", ""]
        by_bs = d.by_blocksize()
        cols = [(bs, r) for bs, runs in by_bs.items() for r in runs]
        repeated = any(len(runs) > 1 for runs in by_bs.values())
        c = comparison(d)
        # One column per BLOCKSIZE (the median of its runs when repeated) and the change; every run
        # in a table of its own below when something was repeated, so that the change stays on screen.
        header = ["BLOCKSIZE", *(f"{bs}" + (f" (median of {len(runs)})" if len(runs) > 1 else "")
                                 for bs, runs in by_bs.items())]
        if c:
            header.append(f"{c['low']} → {c['high']}" + (" (medians)" if "medians" in c["change_of"] else ""))
        rows = [header]
        for label, get, fmt in ROWS:
            row = [label]
            for runs in by_bs.values():
                reports = [r.report for r in runs if r.report]
                row.append(_fmt(fmt, row_value(reports, get)) if reports else "refused")
            if c:
                a, b = (row_value(v, get) for v in c["values"])
                row.append(_change_text(label, c["change_pct"].get(label), a, b) if not isinstance(a, tuple) else "")
            rows.append(row)
        out += _table(rows)
        if repeated:
            out += ["Every run:", ""]
            every = [["BLOCKSIZE", *(f"{bs} #{r.repeat}" for bs, r in cols if r.report)]]
            every += [[label, *(_fmt(fmt, _value(r.report, get)) for _, r in cols if r.report)]
                      for label, get, fmt in ROWS]
            out += _table(every)
        refused = [r for runs in by_bs.values() for r in runs[:1] if not r.report]
        out += [f"- BLOCKSIZE {r.blocksize} not run: {_verdict_text(r.entry['verdict'])}" for r in refused]
        if c:
            out += [f"- {_test_text(t, c['low'], c['high'])}" for t in c["tests"]]
            out += _between_text(c["between_runs"], c["low"], c["high"])
            out += [f"- The last column compares {c['change_of']} at {c['low']} and {c['high']}. The per-commit "
                    f"tests take all their samples from one run on each side, so they cannot see the drift from "
                    f"run to run; the between-runs tests can"
                    + (" (the spread is below)." if any(spread(r) for r in by_bs.values())
                       else ", and this bench has no repeats for them.")]
        for bs, runs in by_bs.items():
            ran = [r for r in runs if r.report]
            wins = [race_wins(r.report) for r in ran if race_wins(r.report)]
            if wins:
                members = [m["path"] for m in wins[0]]
                out += [f"- BLOCKSIZE {bs}: the race's log writes won by "
                        + ", ".join(f"`{path}` " + ", ".join(f"{w[i]['wins']:,} ({w[i]['share_pct']:.1f} %)"
                                                             for w in wins) for i, path in enumerate(members))
                        + (f" in runs {', '.join(str(r.repeat) for r in ran)}" if len(ran) > 1 else "")]
            traced = [r for r in ran if r.entry.get("rmw")]
            if traced:
                reads = ", ".join(f"{r.entry['rmw']['rmw_reads']:,}" for r in traced)
                writes = ", ".join(f"{r.report['writes']:,}" for r in traced)
                which = f" (runs {', '.join(str(r.repeat) for r in traced)})" if len(traced) > 1 else ""
                out += [f"- BLOCKSIZE {bs}: QEMU made {reads} read-modify-write reads below the guest while "
                        f"redo-writer made {writes} log writes{which}; traced from the host"]
        for bs, runs in by_bs.items():
            s = spread(runs)
            if s:
                out += [f"- BLOCKSIZE {bs} repeated {s['runs']} times: transactions/s min {s['tps'][0]:,.1f}, "
                        f"median {s['tps'][1]:,.1f}, max {s['tps'][2]:,.1f} (coefficient of variation "
                        f"{s['tps_cv_pct']:.1f} %); log file sync p50 {s['log_file_sync_p50_ms'][0]:.3f} to "
                        f"{s['log_file_sync_p50_ms'][2]:.3f} ms"]
        if pictures.get(d.name):
            alt = {True: "commit latency histogram", False: "log write latency over time"}
            out += ["", " ".join(f"![{d.name}: {alt['histogram' in png.name]}]({png.relative_to(results)})"
                                 for png in pictures[d.name])]
        out += [""]
    comparisons = cross_comparisons(bench, disks)
    if comparisons:
        out += ["## Comparisons across disks", ""]
        for c in comparisons:
            a, b = (f"{c[k]['disk']} at {c[k]['blocksize']}" for k in ("a", "b"))
            out += [f"### {c['title']}", ""]
            if c.get("not_compared"):
                out += [f"Not compared: {', '.join(c['not_compared'])} did not run.", ""]
                continue
            medians = "medians" in c["change_of"]
            rows = [["", *(f"{x} ({'median of ' + str(len(v)) + ' runs' if medians else 'one run'})"
                           for x, v in zip((a, b), c["values"])), "change"]]
            for label, get, fmt in ROWS:
                va, vb = (row_value(v, get) for v in c["values"])
                rows.append([label, _fmt(fmt, va), _fmt(fmt, vb),
                             "" if isinstance(va, tuple) else _change_text(label, c["change_pct"].get(label), va, vb)])
            out += _table(rows)
            out += [f"- {_test_text(t, a, b)}" for t in c["tests"]]
            out += _between_text(c["between_runs"], a, b) + [""]
            picture = pictures.get(("comparison", c["title"]))
            if picture:
                out += [f"![{c['title']}: commit latency histogram]({picture.relative_to(results)})", ""]
    if bench.get("rules"):
        out += ["## The rules engine inside an ASM disk group", "",
                "Inside ASM the database sees the disk group's SECTOR_SIZE, not the disk's; "
                "`_disk_sector_size_override=TRUE` lets a BLOCKSIZE above it through (rules.evaluate on the "
                "sectors the guest showed; not run).", ""]
        rows = [["disk", "disk group SECTOR_SIZE", "BLOCKSIZE", "_disk_sector_size_override", "verdict"]]
        for v in bench["rules"]:
            rows.append([v["target"], str(v["asm_sector_size"]), str(v["blocksize"]),
                         "TRUE" if v["override"] else "FALSE", _verdict_text(v["verdict"])])
        out += _table(rows, numbers=False)
    crosschecks = bench.get("crosschecks")
    if crosschecks:
        out += ["## Real-database cross-checks", ""]
        out += [f"- {line}" for line in crosschecks] + [""]
    out += ["## How to run it again", "", "```", *bench.get("commands", []), "```", ""]
    return "\n".join(out)


_CSS = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:0 auto;padding:0 12px;line-height:1.45;color:#222}
table{border-collapse:collapse;font-size:.9em;display:block;overflow-x:auto;max-width:100%}
th,td{border:1px solid #ccc;padding:3px 8px;vertical-align:top}
td:first-child{min-width:12em}
tr:nth-child(even){background:#f6f6f6}
td[style*="right"],th[style*="right"]{white-space:nowrap}
img{width:49%;height:auto}
@media (max-width:700px){img{width:100%}}
code{font-size:.9em}
pre{overflow-x:auto;background:#f4f4f4;padding:8px}
"""


def html(md_text: str, results: Path) -> str:
    """report.md as one HTML file: the pictures inline (data: URIs), no network."""
    import markdown as md_lib

    body = md_lib.markdown(md_text, extensions=["tables", "fenced_code"])

    def inline(m: re.Match) -> str:
        # Only the pictures write() drew, in the results directory: a src="..." that came with
        # bench.json's text (a title, a disk name) is not a file to read.
        path = results / m.group(1)
        if path.is_symlink() or not path.is_file():
            return m.group(0)
        data = base64.b64encode(path.read_bytes()).decode()
        return f'src="data:image/png;base64,{data}"'

    body = re.sub(r'src="(report-[A-Za-z0-9._-]+\.png)"', inline, body)
    title = re.search(r"<h1>(.*?)</h1>", body)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{title.group(1) if title else 'sectorlab report'}</title><style>{_CSS}</style></head>"
            f"<body>\n{body}\n</body></html>\n")


def write(results: Path) -> dict[str, Path]:
    """report.md, report.html, summary.json and the pictures (report-*.png) in `results`."""
    results = Path(results)
    bench, disks = load(results)
    pictures = {}
    for d in disks:
        pictures[d.name] = plot_disk(d, results / f"report-{slug(d.name)}")
    for i, c in enumerate(cross_comparisons(bench, disks), 1):
        if "tests" in c:
            pictures[("comparison", c["title"])] = plot_comparison(c, disks, results / f"report-comparison-{i}.png")
    text = markdown(bench, disks, pictures, results)
    out = {"md": results / "report.md", "html": results / "report.html", "summary": results / "summary.json"}
    out["md"].write_text(text)
    out["html"].write_text(html(text, results))
    out["summary"].write_text(json.dumps(summary(bench, disks), indent=2) + "\n")
    return out


# Chromium with no way out: every host name resolves to nothing, and its background services
# (updates, sync, metrics) are off; the report is a local file.
_CHROMIUM_FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
                   "--disable-background-networking", "--disable-component-update", "--disable-sync",
                   "--disable-default-apps", "--host-resolver-rules=MAP * ~NOTFOUND"]
# CSS pixels: the screen's width, the window's height before the sections and for each section (a
# disk, a comparison across disks, the ASM verdicts). Chromium's --screenshot shoots the window, not
# the page: too short a window cuts the report off. The unit-test report's two disks end at 2,650 px
# on the desktop and 4,150 on the phone.
SCREENS = {"desktop": (1200, 800, 1400), "phone": (412, 1200, 2400)}


def render_png(html_path: Path, screens: dict[str, tuple[int, int, int]] = SCREENS) -> dict[str, Path]:
    """report.html as a reader sees it, one PNG per screen (report-desktop.png, report-phone.png),
    drawn by headless Chromium (scripts/bootstrap installs it), tall enough for all its sections."""
    summary = json.loads(html_path.with_name("summary.json").read_text())
    sections = len(summary["disks"]) + len(summary.get("comparisons") or []) + bool(summary.get("rules"))
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        raise SectorlabError("chromium is not installed: run scripts/bootstrap (it installs Debian's chromium)")
    out = {}
    for name, (width, head, per_disk) in screens.items():
        height = head + per_disk * sections
        png = html_path.with_name(f"report-{name}.png")
        with tempfile.TemporaryDirectory(prefix="sectorlab-chromium-") as profile:
            proc = subprocess.run([browser, *_CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                                   f"--window-size={width},{height}", f"--screenshot={png}",
                                   html_path.resolve().as_uri()], capture_output=True, text=True, timeout=120)
        if proc.returncode != 0 or not png.is_file():
            raise SectorlabError(f"chromium could not draw {html_path} (exit {proc.returncode}): "
                                 f"{proc.stderr.strip()[-400:]}")
        out[name] = png
    return out
