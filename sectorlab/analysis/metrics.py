"""The numbers of one run, which summary.json (report.summary) and report.md (document.markdown)
both state: the run-level metrics by name (METRICS, metric_names, run_metrics: one value per run,
what comparisons test and seed figures name), the AWR-like rows of the tables (ROWS), the runs
grouped by disk (Run, Disk), the median of a configuration's repeats (row_value), their spread
and the wins of a raced run. compare.py compares configurations on these values.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from .stats import ALPHA  # noqa: F401 (the report's modules take it from here)

LFPW, LFS, CR = "log_file_parallel_write", "log_file_sync", "commit_response"


def _per_s(r: dict, key: str) -> float:
    return r[key] / r["elapsed_s"] if r["elapsed_s"] else 0.0


def _avg_request(r: dict) -> float | None:
    devices = [m["device"] for m in r.get("members", []) if m.get("device")]
    return devices[0]["avg_request_bytes"] if devices else None


def _ms(event: str, key: str):
    return lambda r: r[event][key] / 1000


def _over(event: str):
    return lambda r: tuple(r[event][f"over_{k}ms_pct"] for k in (1, 10, 20))


def _race_win_pct(r: dict) -> float | None:
    """The first member's share of the log writes won in a raced run (redo-writer --race)."""
    members = r.get("members") or []
    total = sum(m.get("wins", 0) for m in members)
    return 100.0 * members[0].get("wins", 0) / total if len(members) > 1 and total else None


def _flash_first_pct(r: dict) -> float | None:
    """Inside the cells (a device model with a flash log): the share of the log writes that the flash
    log completed first (the harness adds the counts from the models' traces)."""
    counts = r.get("flash_log") or {}
    return 100.0 * counts["flash_first"] / counts["writes"] if counts.get("writes") else None


def _sync_over_write(r: dict) -> float | None:
    write = r[LFPW]["mean_us"]
    return r[LFS]["mean_us"] / write if write else None


def _number(key: str):
    return lambda r: r[key] if isinstance(r.get(key), (int, float)) and not isinstance(r.get(key), bool) else None


# name -> (label, function of a redo-writer report, unit, format): one value per run. The names are
# the public vocabulary: a preset's comparison names its `primary` metric and a seed figure its
# `metric` from them. A function gives None where the report has no such number (a run that was
# not raced, a closed-loop run without commit_response or rates).
METRICS = {
    "tps": ("transactions/s", lambda r: r["tps"], "1/s", "{:,.1f}"),
    "log_file_sync_p50_ms": ("log file sync p50", _ms(LFS, "p50_us"), "ms", "{:.3f}"),
    "log_file_sync_p99_ms": ("log file sync p99", _ms(LFS, "p99_us"), "ms", "{:.3f}"),
    "log_file_sync_p999_ms": ("log file sync p99.9", _ms(LFS, "p99_9_us"), "ms", "{:.3f}"),
    "lfs_over_1ms_pct": ("log file sync > 1 ms", lambda r: r[LFS]["over_1ms_pct"], "%", "{:.2f}"),
    "lfs_over_10ms_pct": ("log file sync > 10 ms", lambda r: r[LFS]["over_10ms_pct"], "%", "{:.2f}"),
    "lfs_over_20ms_pct": ("log file sync > 20 ms", lambda r: r[LFS]["over_20ms_pct"], "%", "{:.2f}"),
    "log_file_sync_mean_ms": ("log file sync mean", _ms(LFS, "mean_us"), "ms", "{:.3f}"),
    "log_file_parallel_write_p50_ms": ("log file parallel write p50", _ms(LFPW, "p50_us"), "ms", "{:.3f}"),
    "log_file_parallel_write_p99_ms": ("log file parallel write p99", _ms(LFPW, "p99_us"), "ms", "{:.3f}"),
    "log_file_parallel_write_p999_ms": ("log file parallel write p99.9", _ms(LFPW, "p99_9_us"), "ms", "{:.3f}"),
    "log_file_parallel_write_mean_ms": ("log file parallel write mean", _ms(LFPW, "mean_us"), "ms", "{:.3f}"),
    "log_file_parallel_write_max_ms": ("log file parallel write max", _ms(LFPW, "max_us"), "ms", "{:.3f}"),
    "lfpw_over_1ms_pct": ("log file parallel write > 1 ms", lambda r: r[LFPW]["over_1ms_pct"], "%", "{:.3f}"),
    "lfpw_over_10ms_pct": ("log file parallel write > 10 ms", lambda r: r[LFPW]["over_10ms_pct"], "%", "{:.3f}"),
    "log_file_sync_max_ms": ("log file sync max", _ms(LFS, "max_us"), "ms", "{:.3f}"),
    # The classic diagnosis: a log file sync far above the log write means commits wait for CPU
    # and for being posted, not for the storage.
    "lfs_over_lfpw_mean": ("log file sync mean / log file parallel write mean", _sync_over_write, "ratio",
                           "{:.2f}"),
    "commit_response_p50_ms": ("commit response p50", _ms(CR, "p50_us"), "ms", "{:.3f}"),
    "commit_response_p99_ms": ("commit response p99", _ms(CR, "p99_us"), "ms", "{:.3f}"),
    "redo_wastage_pct": ("redo wastage", lambda r: r["wastage_pct"], "%", "{:.2f}"),
    "redo_per_txn_bytes": ("redo size per transaction", lambda r: r["redo_bytes"] / r["transactions"], "B",
                           "{:,.0f}"),
    "writes_under_4k_pct": ("redo writes under 4 KiB", lambda r: 100.0 * r["writes_under_4k"] / r["writes"], "%",
                            "{:.2f}"),
    "write_mb_s": ("redo write rate", lambda r: r["write_mb_s"], "MB/s", "{:.3f}"),
    # AWR's "redo size" per second: the redo generated, without the wastage of padded blocks.
    "redo_mb_s": ("redo size per second", lambda r: _per_s(r, "redo_bytes") / 1e6, "MB/s", "{:.3f}"),
    "bytes_per_write": ("bytes per redo write", lambda r: r["bytes_written"] / r["writes"] if r["writes"] else None,
                        "B", "{:,.0f}"),
    "race_win_pct": ("first race member's wins", _race_win_pct, "%", "{:.1f}"),
    "flash_log_first_pct": ("writes the cells' flash log completed first", _flash_first_pct, "%", "{:.1f}"),
    "offered_rate": ("offered rate", _number("offered_rate"), "commits/s", "{:,.1f}"),
    "achieved_rate": ("achieved rate", _number("achieved_rate"), "commits/s", "{:,.1f}"),
    "kept_up": ("kept up with the offered rate", lambda r: r.get("kept_up"), "", "{}"),
    # Group commit, and the CPU the sessions really used per transaction (a report from before
    # redo-writer measured them has neither).
    "commits_per_write": ("commits per log write", _number("commits_per_write"), "commits", "{:.2f}"),
    "session_cpu_us_per_txn": ("sessions' CPU per transaction, measured",
                               lambda r: (r.get("cpu_measured") or {}).get("sessions_us_per_txn"), "us", "{:.1f}"),
}
DEFAULT_PRIMARY = "log_file_sync_p50_ms"


def metric_names() -> list[str]:
    """The names a preset may give a comparison's `primary` and a seed figure's `metric`."""
    return list(METRICS)


def metric(report: dict, name: str):
    """One run's value of a metric (METRICS), None where its report has none."""
    return row_of(report, METRICS[name][1])


def run_metrics(report: dict) -> dict:
    """Every metric of one run (one redo-writer report), by name."""
    return {name: metric(report, name) for name in METRICS}


# (label, function of a redo-writer report, format): the AWR-like rows, in the order a DBA reads them;
# for each event the median, the tail and the shares over 1/10/20 ms first, the mean after (the shape
# of a latency distribution matters more than its mean). Rows that no run has (commit response and
# the rates, for closed-loop runs) are left out of the tables.
ROWS = [
    ("transactions/s", lambda r: r["tps"], "{:,.1f}"),
    ("offered rate (commits/s)", _number("offered_rate"), "{:,.1f}"),
    ("achieved rate (commits/s)", _number("achieved_rate"), "{:,.1f}"),
    ("log file sync p50 (ms)", _ms(LFS, "p50_us"), "{:.3f}"),
    ("log file sync p99 (ms)", _ms(LFS, "p99_us"), "{:.3f}"),
    ("log file sync p99.9 (ms)", _ms(LFS, "p99_9_us"), "{:.3f}"),
    ("log file sync > 1 / 10 / 20 ms %", _over(LFS), "{:.2f} / {:.2f} / {:.2f}"),
    ("log file sync mean (ms)", _ms(LFS, "mean_us"), "{:.3f}"),
    ("log file sync max (ms)", _ms(LFS, "max_us"), "{:.3f}"),
    ("commit response p50 (ms)", _ms(CR, "p50_us"), "{:.3f}"),
    ("commit response p99 (ms)", _ms(CR, "p99_us"), "{:.3f}"),
    ("log file parallel write p50 (ms)", _ms(LFPW, "p50_us"), "{:.3f}"),
    ("log file parallel write p99 (ms)", _ms(LFPW, "p99_us"), "{:.3f}"),
    ("log file parallel write p99.9 (ms)", _ms(LFPW, "p99_9_us"), "{:.3f}"),
    ("log file parallel write > 1 / 10 / 20 ms %", _over(LFPW), "{:.2f} / {:.2f} / {:.2f}"),
    ("log file parallel write mean (ms)", _ms(LFPW, "mean_us"), "{:.3f}"),
    ("log file parallel write max (ms)", _ms(LFPW, "max_us"), "{:.3f}"),
    ("redo size per second (B)", lambda r: _per_s(r, "redo_bytes"), "{:,.0f}"),
    ("redo size per transaction (B)", lambda r: r["redo_bytes"] / r["transactions"] if r["transactions"] else 0,
     "{:,.0f}"),
    ("redo wastage %", lambda r: r["wastage_pct"], "{:.2f}"),
    ("redo writes", lambda r: r["writes"], "{:,.0f}"),
    ("redo writes under 4 KiB", lambda r: r["writes_under_4k"], "{:,.0f}"),
    ("device average request size (B)", _avg_request, "{:,.0f}"),
]
# The rows whose change from one configuration to the other is shown in percent (single numbers).
_CHANGE_ROWS = [row for row in ROWS if not row[2].count("/")]


@dataclass
class Run:
    disk: str
    blocksize: int
    repeat: int
    entry: dict                   # the run's entry in bench.json
    report: dict | None = None    # redo-writer's JSON; None for a refused BLOCKSIZE
    events: Path | None = None
    device: Run | None = None     # its device-path twin (bench/redo/twin.py), when it had one

    def marks(self) -> str:
        """What a table says beside the run's name: a control target, a BLOCKSIZE let through by
        _disk_sector_size_override, an open-loop run that did not keep up with its offered rate."""
        out = [m for m, key in (("control", "control"), ("override", "override")) if self.entry.get(key)]
        if (self.report or {}).get("kept_up") is False or self.entry.get("kept_up") is False:
            out.append("did not keep up")
        return "".join(f" ({m})" for m in out)


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


def side(disks: list[Disk], selector) -> tuple[str, list[Run]]:
    """A configuration named by a selector ("TARGET@BLOCKSIZE", or {"disk", "blocksize"}): its name
    and its runs in the order of their repeats (refused ones too)."""
    if isinstance(selector, dict):
        name, blocksize = selector.get("disk"), selector.get("blocksize")
    else:
        name, _, blocksize = str(selector).partition("@")
    try:
        blocksize = int(blocksize)
    except (TypeError, ValueError):
        return f"{name}@{blocksize}", []
    runs = [r for d in disks if d.name == name for r in sorted(d.runs, key=lambda r: r.repeat)
            if r.blocksize == blocksize]
    return f"{name}@{blocksize}", runs


def device_view(disks: list[Disk]) -> list[Disk]:
    """The device path's disks: each disk's runs that had a device-path twin, as those twins (a
    refused BLOCKSIZE, which ran on neither path, is kept as it is); disks without one left out."""
    out = []
    for d in disks:
        runs = [r.device if r.device else r for r in d.runs if r.device or not r.report]
        if any(r.report for r in runs):
            out.append(Disk(d.name, d.entry, runs))
    return out


def row_value(reports: list[dict], get):
    """A row's value over the repeats of one configuration: the median of the runs (element by
    element for the shares over 1/10/20 ms); one run's own value when it ran once."""
    values = [row_of(r, get) for r in reports]
    if not values or any(v is None for v in values):
        return None
    if isinstance(values[0], tuple):
        return tuple(statistics.median(v[i] for v in values) for i in range(len(values[0])))
    return statistics.median(values)


def _reports(disks: list[Disk], name: str, blocksize: int) -> list[dict]:
    return [r.report for d in disks if d.name == name for r in sorted(d.runs, key=lambda r: r.repeat)
            if r.blocksize == blocksize and r.report]


def first_run(disks: list[Disk], name: str, blocksize: int) -> Run | None:
    return next((r for d in disks if d.name == name for r in sorted(d.runs, key=lambda r: r.repeat)
                 if r.blocksize == blocksize), None)


def spread(runs: list[Run]) -> dict | None:
    """Repeats of one configuration: min, median and max of transactions/s and the log file sync
    median, and the coefficient of variation of transactions/s; None for fewer than 2 runs."""
    reports = [r.report for r in runs if r.report]
    if len(reports) < 2:
        return None
    tps = [r["tps"] for r in reports]
    p50 = [r[LFS]["p50_us"] / 1000 for r in reports]
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


def row_of(report: dict, get) -> float | tuple | None:
    try:
        return get(report)
    except (KeyError, TypeError, ZeroDivisionError):
        return None


def verdict_text(v: dict, short: bool = False) -> str:
    """The rules engine's verdict in words; `short` keeps only the ORA- code of a refusal (the disks'
    table, a side of a comparison that did not run)."""
    if v.get("allowed"):
        return "allowed" + (" (default)" if v.get("blocksize") == v.get("default_blocksize") else "")
    if v.get("allowed", False) is None:  # neither allowed nor refused: a warning says why
        warnings = v.get("warnings") or []
        why = next((w for w in warnings if "not known" in w), warnings[-1] if warnings else "")
        why = re.sub(r"\s+", " ", why).strip()
        return "not known" if short or not why else f"not known: {why}"
    error = re.sub(r"\s+", " ", v.get("error") or "").strip()
    if short:
        code = re.match(r"(ORA-\d+)", error)
        return f"refused ({code.group(1)})" if code else "refused"
    return "refused: " + error


