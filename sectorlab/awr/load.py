"""The load an AWR report shows, as the lab's closed loop would run it: each figure derived from the
report's own lines, each naming them (issue 64; parse.py reads the report).

- transactions a second: the Load Profile's `Transactions:` per second;
- redo a transaction: the Load Profile's `Redo size (bytes):` (or `Redo size:`) per transaction;
- sessions: the average active sessions, DB time over elapsed time (the header's minutes);
- CPU a transaction: the Load Profile's `DB CPU(s):` per second over the transactions a second;
- commits a log write: `user commits` over `redo writes` (Instance Activity Stats), else one over
  log file parallel write's waits a transaction (Background Wait Events);
- log file sync and log file parallel write: their average waits (ms) and counts, from the Top
  Events or the Foreground and Background Wait Events."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import UsageError
from .parse import Figure, Report


@dataclass(frozen=True)
class Derived:
    """A figure of the load: its value, its unit and how it came from the report's lines."""
    value: float
    unit: str
    how: str

    def as_json(self) -> dict:
        return {"value": self.value, "unit": self.unit, "how": self.how}


def _load_row(report: Report, *labels: str) -> tuple[str, tuple[Figure | None, Figure | None]]:
    for label in labels:
        if label in report.load_profile:
            return label, report.load_profile[label]
    return labels[0], (None, None)


def _event(report: Report, name: str) -> dict[str, Figure] | None:
    for table in (report.top_events, report.foreground, report.background):
        if name in table and "waits" in table[name]:
            return table[name]
    return None


def load(report: Report) -> dict[str, Derived]:
    """The lab's closed-loop inputs and the log writer's figures an AWR report gives; one line for a
    figure the lab needs that the report lacks."""
    _, (tps, _) = _load_row(report, "Transactions")
    tps = report.need("Load Profile 'Transactions:' per second", tps)
    label, (_, redo) = _load_row(report, "Redo size (bytes)", "Redo size")
    redo = report.need("Load Profile 'Redo size (bytes):' per transaction", redo)
    elapsed = report.need("'Elapsed: ... (mins)' in its header", report.elapsed_min)
    db_time = report.need("'DB Time: ... (mins)' in its header", report.db_time_min)
    if elapsed.value <= 0:
        raise UsageError(f"{report.path}: {elapsed.source()}: an elapsed time of {elapsed.value:g} min: expected a "
                         f"report over a time (its two snapshots apart)")
    out = {
        "tps": Derived(tps.value, "transactions/s", f"Load Profile, Transactions per second ({tps.source()})"),
        "redo_per_txn": Derived(redo.value, "bytes", f"Load Profile, {label} per transaction ({redo.source()})"),
        "sessions": Derived(db_time.value / elapsed.value, "sessions",
                            f"average active sessions: DB Time {db_time.value:,.2f} min over Elapsed "
                            f"{elapsed.value:,.2f} min ({db_time.source()}; {elapsed.source()})"),
    }
    _, (cpu, _) = _load_row(report, "DB CPU(s)")
    if cpu is not None and tps.value:
        out["cpu_us_per_txn"] = Derived(1e6 * cpu.value / tps.value, "us",
                                        f"Load Profile, DB CPU(s) per second {cpu.value:,.1f} over "
                                        f"{tps.value:,.1f} transactions a second ({cpu.source()})")
    commits, writes = report.activity.get("user commits"), report.activity.get("redo writes")
    lfpw = _event(report, "log file parallel write")
    if commits and writes and writes["total"].value:
        out["commits_per_write"] = Derived(
            commits["total"].value / writes["total"].value, "commits",
            f"Instance Activity Stats, user commits {commits['total'].value:,.0f} over redo writes "
            f"{writes['total'].value:,.0f} ({commits['total'].source()}; {writes['total'].source()})")
    elif lfpw and lfpw.get("waits_per_txn") and lfpw["waits_per_txn"].value:
        w = lfpw["waits_per_txn"]
        out["commits_per_write"] = Derived(1 / w.value, "transactions",
                                           f"one over log file parallel write's waits a transaction, "
                                           f"{w.value:g} ({w.source()})")
    for name, key in (("log file sync", "log_file_sync"), ("log file parallel write", "log_file_parallel_write")):
        e = _event(report, name)
        if e and e["waits"].value > 0:
            # its total time over its waits: 11g prints the average in whole milliseconds (0 for a fast
            # disk), the total in seconds
            out[f"{key}_avg_ms"] = Derived(1000 * e["time_s"].value / e["waits"].value, "ms",
                                           f"{name}, its total wait time {e['time_s'].value:,.1f} s over its "
                                           f"{e['waits'].value:,.0f} waits ({e['waits'].source()})")
            out[f"{key}_waits"] = Derived(e["waits"].value, "waits", f"{name}, its waits ({e['waits'].source()})")
    return out


def closed_loop(report: Report, configs: list[str]) -> dict:
    """The preset's [bench.closed_loop] table made from the report (bench/redo/preset.py reads it as
    the preset file's own): its sessions, redo and CPU a transaction and its transactions a second,
    the source of each, and for each configuration in `configs` ("TARGET@BLOCKSIZE") the report's log
    writer figures beside the lab's: commits a log write (told apart from 1, no group commit), log
    file sync's average (told apart from log file parallel write's: a sync no longer than the write
    waits for no group commit) and their ratio (told apart from 1)."""
    d = load(report)
    figures = []
    lfs, lfpw = d.get("log_file_sync_avg_ms"), d.get("log_file_parallel_write_avg_ms")
    for cfg in configs:
        if "commits_per_write" in d:
            figures.append(_figure(report, f"commits per log write (group commit), {cfg}", d["commits_per_write"],
                                   "commits", "commits_per_write", cfg, 1.0))
        if lfs:
            figures.append(_figure(report, f"log file sync mean (ms), {cfg}", lfs, "ms", "log_file_sync_mean_ms",
                                   cfg, lfpw.value if lfpw else None))
        if lfs and lfpw and lfpw.value:
            ratio = Derived(lfs.value / lfpw.value, "ratio", f"{lfs.how} over {lfpw.how}")
            figures.append(_figure(report, f"log file sync mean over log file parallel write mean, {cfg}", ratio,
                                   "ratio", "lfs_over_lfpw_mean", cfg, 1.0))
    cpu = d.get("cpu_us_per_txn")
    return {"sessions": max(1, round(d["sessions"].value)), "redo_per_txn": max(1, round(d["redo_per_txn"].value)),
            "cpu_us_per_txn": round(cpu.value) if cpu else 0, "seed_tps": d["tps"].value,
            "source": f"the AWR report {report.path}: " + "; ".join(
                f"{key} {x.value:,.1f} {x.unit}: {x.how}" for key, x in d.items()
                if key in ("tps", "redo_per_txn", "sessions", "cpu_us_per_txn")),
            "figure": [f for f in figures if f["tell_apart"] is not None]}


def _figure(report: Report, what: str, x: Derived, unit: str, metric: str, cfg: str,
            tell_apart: float | None) -> dict:
    return {"what": what, "seed_value": round(x.value, 4), "unit": unit, "quote": x.how,
            "where": f"the AWR report {report.path}", "lab": "value", "metric": metric, "a": cfg,
            "tell_apart": tell_apart}
