"""The numbers of a bench's report, which summary.json (report.summary) and report.md
(document.markdown) both state: the AWR-like rows of a run (ROWS), the runs grouped by disk (Run,
Disk), and what is computed from them: per disk the runs at 512 against those at 4096, the
preset's comparisons across disks (the change in percent, Welch's t-test per commit and per log
write and between runs, each called significant or within noise at ALPHA), the spread of a
configuration's repeats and the wins of a raced run.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from . import stats

ALPHA = 0.01

_LFPW, _LFS = "log_file_parallel_write", "log_file_sync"


def _per_s(r: dict, key: str) -> float:
    return r[key] / r["elapsed_s"] if r["elapsed_s"] else 0.0


def _avg_request(r: dict) -> float | None:
    devices = [m["device"] for m in r.get("members", []) if m.get("device")]
    return devices[0]["avg_request_bytes"] if devices else None


# (label, function of a redo-writer report, format): the AWR-like rows, in the order a DBA reads them.
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
    # Imported where it is used, as in stats.py: scipy is slow to import and comes with the optional
    # 'analysis' extra (pyproject.toml), which reading a results directory (or refusing one) does not need.
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


def _verdict_text(v: dict, short: bool = False) -> str:
    """The rules engine's verdict in words; `short` keeps only the ORA- code of a refusal (the disks'
    table, a side of a comparison that did not run)."""
    if v.get("allowed"):
        return "allowed" + (" (default)" if v.get("blocksize") == v.get("default_blocksize") else "")
    error = (v.get("error") or "").strip()
    if short:
        code = re.match(r"(ORA-\d+)", error)
        return f"refused ({code.group(1)})" if code else "refused"
    return "refused: " + error



def metric_names() -> list[str]:  # placeholder until the run-level metrics land
    return ["tps", "log_file_sync_mean_ms", "log_file_sync_p50_ms", "log_file_sync_p99_ms"]
