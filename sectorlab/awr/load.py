"""The load an AWR report shows, as the lab's closed loop would run it: each figure derived from the
report's own lines, each naming them (issue 64; parse.py reads the report).

- transactions a second: the Load Profile's `Transactions:` per second, else its redo size per
  second over per transaction;
- redo a transaction: the Load Profile's `Redo size (bytes):` (or `Redo size:`) per transaction;
- sessions: the average active sessions, DB time over elapsed time: the header's minutes, else
  (a report quoted in part, as the seeds quote theirs) the elapsed time from the transactions an
  event's waits and waits a transaction count at the rate above, and the DB time from the Top
  Events' DB CPU time over its share of DB time;
- CPU a transaction: the Load Profile's `DB CPU(s):` per second over the transactions a second,
  else the DB CPU time over those transactions;
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


def _tps(report: Report) -> Derived:
    _, (tps, _) = _load_row(report, "Transactions")
    if tps is not None:
        return Derived(tps.value, "transactions/s", f"Load Profile, Transactions per second ({tps.source()})")
    label, (per_s, per_txn) = _load_row(report, "Redo size (bytes)", "Redo size")
    if report.partial and per_s is not None and per_txn is not None and per_txn.value > 0:
        return Derived(per_s.value / per_txn.value, "transactions/s",
                       f"Load Profile, {label} per second {per_s.value:,.1f} over per transaction "
                       f"{per_txn.value:,.1f} ({per_s.source()})")
    raise report.lacks("Load Profile 'Transactions:' per second" + (
        " (nor its redo size per second and per transaction)" if report.partial else ""))


def _transactions(report: Report, tps: Derived) -> Derived | None:
    """The transactions of the report's interval, from an event's waits over its waits a
    transaction (log file parallel write's first): for a report that prints no elapsed time."""
    for name in ("log file parallel write", "log file sync"):
        e = _event(report, name)
        if e and e.get("waits_per_txn") and e["waits_per_txn"].value > 0:
            w, per = e["waits"], e["waits_per_txn"]
            return Derived(w.value / per.value, "transactions",
                           f"{name}'s {w.value:,.0f} waits at {per.value:g} a transaction (its printed, rounded "
                           f"figure: the count within half its last digit) ({w.source()})")
    return None


def _sessions(report: Report, tps: Derived) -> Derived:
    """Average active sessions: DB time over elapsed time, each from the header's minutes or, in a
    report quoted in part, derived (module doc)."""
    elapsed, db_time = report.elapsed_min, report.db_time_min
    if elapsed is not None and elapsed.value <= 0:
        raise UsageError(f"{report.path}: {elapsed.source()}: an elapsed time of {elapsed.value:g} min: expected a "
                         f"report over a time (its two snapshots apart)")
    if elapsed is not None:
        elapsed_s, elapsed_how = 60 * elapsed.value, f"Elapsed {elapsed.value:,.2f} min ({elapsed.source()})"
    elif report.partial and (txns := _transactions(report, tps)) is not None and tps.value > 0:
        elapsed_s = txns.value / tps.value
        elapsed_how = (f"an interval of {elapsed_s:,.0f} s: {txns.value:,.0f} transactions, {txns.how}, at "
                       f"{tps.value:,.1f} a second")
    else:
        raise report.lacks("'Elapsed: ... (mins)' in its header" + (
            " (nor an event's waits a transaction to count its transactions by)" if report.partial else ""))
    cpu = report.top_events.get("DB CPU", {})
    if db_time is not None:
        db_s, db_how = 60 * db_time.value, f"DB Time {db_time.value:,.2f} min ({db_time.source()})"
    elif report.partial and "time_s" in cpu and "pct" in cpu and cpu["pct"].value > 0:
        db_s = cpu["time_s"].value / (cpu["pct"].value / 100)
        db_how = (f"DB time {db_s:,.0f} s: DB CPU {cpu['time_s'].value:,.0f} s at {cpu['pct'].value:g} % of DB time "
                  f"({cpu['time_s'].source()})")
    else:
        raise report.lacks("'DB Time: ... (mins)' in its header" + (
            " (nor a DB CPU row with its % of DB time)" if report.partial else ""))
    if elapsed is not None and db_time is not None:
        how = (f"average active sessions: DB Time {db_time.value:,.2f} min over Elapsed {elapsed.value:,.2f} min "
               f"({db_time.source()}; {elapsed.source()})")
    else:
        how = f"average active sessions: {db_how} over {elapsed_how}"
    return Derived(db_s / elapsed_s, "sessions", how)


def load(report: Report) -> dict[str, Derived]:
    """The lab's closed-loop inputs and the log writer's figures an AWR report gives; one line for a
    figure the lab needs that the report lacks."""
    tps = _tps(report)
    label, (_, redo) = _load_row(report, "Redo size (bytes)", "Redo size")
    redo = report.need("Load Profile 'Redo size (bytes):' per transaction", redo)
    out = {
        "tps": tps,
        "redo_per_txn": Derived(redo.value, "bytes", f"Load Profile, {label} per transaction ({redo.source()})"),
        "sessions": _sessions(report, tps),
    }
    _, (cpu, _) = _load_row(report, "DB CPU(s)")
    db_cpu = report.top_events.get("DB CPU", {})
    if cpu is not None and tps.value:
        out["cpu_us_per_txn"] = Derived(1e6 * cpu.value / tps.value, "us",
                                        f"Load Profile, DB CPU(s) per second {cpu.value:,.1f} over "
                                        f"{tps.value:,.1f} transactions a second ({cpu.source()})")
    elif report.partial and "time_s" in db_cpu and (txns := _transactions(report, tps)) is not None and txns.value > 0:
        out["cpu_us_per_txn"] = Derived(1e6 * db_cpu["time_s"].value / txns.value, "us",
                                        f"DB CPU {db_cpu['time_s'].value:,.0f} s over {txns.value:,.0f} transactions, "
                                        f"{txns.how}; {db_cpu['time_s'].source()}")
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
    waits for no group commit), log file parallel write's average (the device's side, told apart
    from 0) and their ratio (told apart from 1)."""
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
        if lfpw:
            # the device's side of the commit: told apart from none (a write that takes no time)
            figures.append(_figure(report, f"log file parallel write mean (ms), {cfg}", lfpw, "ms",
                                   "log_file_parallel_write_mean_ms", cfg, 0.0))
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
