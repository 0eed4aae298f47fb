"""The databases' crash report (report.md and report.html beside crash-db.json): per cell (a disk's
profile and sectors, a judge), over its cuts: the cuts after which the database did not come back
whole (it did not come up, or acknowledged commits were missing), those it said nothing about
(corruption not detected), the acknowledged commits lost, the recovery time; exact (Clopper-Pearson)
95 % intervals, and Fisher's exact test of a protection on against off on the same disk."""

from __future__ import annotations

import statistics
from pathlib import Path

from . import render
from .crash import share
from .render import cell, one_line

PROTECTION = {"mariadb-doublewrite-on": "mariadb-doublewrite-off", "postgres-fpw-on": "postgres-fpw-off"}


def counts(rows: list[dict]) -> dict:
    up = [r for r in rows if r["started"]]
    losing = [r["lost"] for r in rows if r["started"] and r.get("ids_read", True) and r["lost"] > 0]
    times = sorted(r["recovery_s"] for r in up if r["recovery_s"] is not None and r["kind"] != "real")
    real = [r["recovery_s"] for r in up if r["recovery_s"] is not None and r["kind"] == "real"]
    return {"n": len(rows), "down": sum(not r["started"] for r in rows),
            "broken": sum((not r["started"]) or not r.get("ids_read", True) or r["lost"] > 0
                          or r["consistent"] is False for r in rows),
            "holes": sum(r.get("holes", 0) > 0 for r in rows),
            "losing": len(losing), "lost_max": max(losing, default=0),
            "detected": sum(r["detected"] for r in rows), "undetected": sum(r["undetected"] for r in rows),
            "restored": sum(r["restored"] for r in rows), "checksum": sum(r["checksum_failures"] for r in rows),
            "torn": sum(r["writes_torn"] > 0 for r in rows), "unreadable": sum(r["units_unreadable"] for r in rows),
            "partial": max((r["partial_unit_writes"] for r in rows), default=0),
            "writes": max((r["writes"] for r in rows), default=0),
            "exposure": max((r["exposure"] for r in rows if "exposure" in r), default=None),
            "recovery": (f"{statistics.median(times):.1f} ({times[0]:.1f}-{times[-1]:.1f})" if times else "-"),
            "recovery_real": ", ".join(f"{t:.1f}" for t in real) or "-"}


def _cells(doc: dict) -> dict[tuple[str, str], list[dict]]:
    out: dict[tuple[str, str], list[dict]] = {}
    for r in doc["rows"]:
        out.setdefault((r["disk"], r["judge"]), []).append(r)
    return dict(sorted(out.items()))


def found_by(rows: list[dict]) -> str:
    """What found the failures of a cell's cuts, by count ('-': none failed): crash/databases.py's
    Verdict.detector (a record without one says so)."""
    got: dict[str, int] = {}
    for r in rows:
        d = r.get("detector", "not recorded (before 2026-11-29)") if (r["detected"] or r["undetected"] or
                                                                       r["lost"] or r["consistent"] is False) else ""
        if d:
            got[d] = got.get(d, 0) + 1
    return "; ".join(f"{n} by {d}" for d, n in sorted(got.items(), key=lambda x: -x[1])) or "-"


def _broken(r: dict) -> bool:
    return (not r["started"]) or not r.get("ids_read", True) or r["lost"] > 0 or r["consistent"] is False


def _by_run(rows: list[dict]) -> list[list[dict]]:
    """The rows grouped by their run, in run order (a record from before runs: one run)."""
    return [[r for r in rows if r.get("run", 0) == run] for run in sorted({r.get("run", 0) for r in rows})]


def broken_share(rows: list[dict]) -> str:
    """A cell's cuts not back whole: k/n and a 95 % interval that takes the run as the unit when the
    cell had more than one (crash/rates.py: t over the runs' shares, widened to the pooled cuts'
    exact interval), else the exact interval of the cuts."""
    per_run = _by_run(rows)
    if len(per_run) < 2:
        return share(sum(map(_broken, rows)), len(rows))
    from ..crash import rates
    k = sum(map(_broken, rows))
    e = rates.over_runs([sum(map(_broken, x)) / len(x) for x in per_run], k, len(rows))
    return f"{k}/{len(rows)} = {e.percent()} ({len(per_run)} runs)"


def per_random_cut(rows: list[dict]) -> str:
    """The share of cuts at a random moment that leave the cell's database not back whole: per run,
    the exposure (the share of the run in which a cut finds a write in flight) times the share of
    its copies, drawn inside the windows, that were not back whole (a cut elsewhere tears nothing);
    the mean over runs with crash/rates.py's interval. '-' for a record without exposures."""
    copies = [r for r in rows if r["kind"] != "real" and "exposure" in r]
    if not copies:
        return "-"
    from ..crash import rates
    per_run = _by_run(copies)
    exposure = [x[0]["exposure"] for x in per_run]
    k = sum(map(_broken, copies))
    e = rates.over_runs([ex * sum(map(_broken, x)) / len(x) for ex, x in zip(exposure, per_run)], k, len(copies),
                        scale=sum(exposure) / len(exposure))
    return e.percent(2)


def _judge_label(judge: str, rows: list[dict]) -> str:
    """A judge as the table names it, its data checksums beside when they were off."""
    return judge + (" (data checksums off)" if rows and rows[0].get("checksums") == "off" else "")


def _row(rows: list[dict], judge: str) -> list[str]:
    """A cell's row of the table: a disk and a judge over its cuts."""
    k = counts(rows)
    return [_disk(rows[0]), _judge_label(judge, rows), str(k["n"]), broken_share(rows), per_random_cut(rows),
            str(k["down"]),
            f"{k['losing']} ({k['lost_max']})" if k["losing"] else "0", str(k["undetected"]), str(k["torn"]),
            f"{k['partial']} of {k['writes']:,}",
            "-" if k["exposure"] is None else f"{100 * k['exposure']:.2g} %", f"{k['restored']} / {k['checksum']}",
            f"{k['recovery_real']}; {k['recovery']}", found_by(rows)]


def _disk(r: dict) -> str:
    return f"`{one_line(r['profile'])}` {one_line(r['geometry'])} ({r['sectors']})"


COLUMNS = ["disk", "judge", "cuts", "not back whole (95 % CI)", "a cut at a random moment: not back whole (95 % CI)",
           "down", "short", "silent", "torn", "partial",
           "exposure", "restored / bad checksums", "recovery s: real; copies", "found by"]
LEGEND = ("Not back whole: the database did not come up (down), came up short of an acknowledged commit (short: "
          "the most missing in brackets), with an id missing below one that is there (one session: it had committed "
          "before the next began), or with SUM(k) unequal to the commits in `log`. Silent: wrong while the "
          "database came up and its checks (CHECK TABLE; amcheck and pg_checksums) found nothing: corruption not "
          "detected. Torn: cuts that tore a write in flight. Partial: the run's writes that covered their disk's "
          "atomic unit in part, of all its writes. Exposure: the share of the run (from its first acknowledgement to "
          "the real cut) in which a cut finds one of the disk's writes in its window, its bytes going onto the "
          "medium: the copies are drawn inside those windows, so their shares are of cuts that find a write "
          "mid-flight; a cut at a random moment does so with the exposure's probability (elsewhere it tears "
          "nothing). Restored / bad checksums: pages InnoDB restored from its "
          "doublewrite buffer; pages pg_checksums found bad after a clean stop. ")


def _significance(p: float) -> str:
    return ", not significant at the 1 % level" if p >= 0.01 else ""


def headlines(doc: dict) -> list[str]:
    from scipy.stats import fisher_exact  # here: scipy is slow to import and most commands never need it
    out = []
    cells = _cells(doc)
    for on, off in PROTECTION.items():  # each protection over all the disks
        ons = [r for (_, j), rows in cells.items() if j == on for r in rows]
        offs = [r for (_, j), rows in cells.items() if j == off for r in rows]
        if ons and offs:
            k, o = counts(offs), counts(ons)
            p = fisher_exact([[k["broken"], k["n"] - k["broken"]], [o["broken"], o["n"] - o["broken"]]]).pvalue
            out.append(f"- **Over all the disks**: {cell(off)} not back whole after {broken_share(offs)} of "
                       f"the cuts, {cell(on)} after {broken_share(ons)}; Fisher's exact test of the pooled cuts "
                       f"(which takes them as independent) p = {p:.2g}{_significance(p)}."
                       + (f" InnoDB restored {o['restored']} torn pages from its doublewrite buffer, in "
                          f"{sum(r['restored'] > 0 for r in ons)} of the {o['n']} cuts with it on."
                          if on.startswith("mariadb") else ""))
    for (disk, judge), rows in cells.items():
        k = counts(rows)
        if k["broken"] or k["undetected"]:
            line = (f"- **{cell(_judge_label(judge, rows))}** on {_disk(rows[0])}: not back whole after "
                    f"{broken_share(rows)} of the cuts ({k['down']} did not come up, {k['losing']} came up "
                    f"without acknowledged commits); a cut at a random moment: {per_random_cut(rows)}; "
                    f"{k['undetected']} wrong without a word from the database; "
                    f"found by: {found_by(rows)}.")
            for on, off in PROTECTION.items():
                if judge == off and (disk, on) in cells:
                    o = counts(cells[(disk, on)])
                    p = fisher_exact([[k["broken"], k["n"] - k["broken"]], [o["broken"], o["n"] - o["broken"]]]).pvalue
                    line += (f" With {cell(on)}: {share(o['broken'], o['n'])}; Fisher's exact test p = {p:.2g} "
                             f"(n = {k['n']} and {o['n']} cuts){_significance(p)}.")
            out.append(line)
    def damaged(rows: list[dict]) -> int:
        """Cuts after which the database came up and its own checks found damage."""
        return sum(r["started"] and bool(r["check"] or r["checksum_failures"]) for r in rows)
    for (_, judge), rows in cells.items():
        if damaged(rows) and not counts(rows)["broken"]:
            out.append(f"- **{cell(_judge_label(judge, rows))}** on {_disk(rows[0])}: back with every acknowledged "
                       f"commit and consistent tables after every cut, but in {damaged(rows)} of {len(rows)} it came "
                       f"up with damage its own checks found: {found_by(rows)}.")
    whole = [(d, j) for (d, j), rows in cells.items()
             if not counts(rows)["broken"] and not counts(rows)["undetected"] and not damaged(rows)]
    if whole:
        out.append(f"- **Back whole after every cut** in {len(whole)} cells: "
                   + "; ".join(f"{cell(j)} on {cell(d)} ({counts(cells[(d, j)])['n']} cuts)" for d, j in whole)
                   + " (each cell's 95 % upper bound in the table).")
    partial = sum(counts(rows)["partial"] for rows in cells.values())
    if not partial:
        out.append("- No database write covered its disk's atomic unit in part (ext4 of 4 KiB blocks, InnoDB's "
                   "log block at the physical sector, PostgreSQL's 8 KiB pages): no read-modify-write was in "
                   "flight at any cut, so a drive's power-loss protection of it could not matter here.")
    return out


def _times(n: int) -> str:
    return {1: "once", 2: "twice"}.get(n, f"{n} times")


def markdown(doc: dict) -> str:
    judges = ", ".join(doc["judges"])
    checkpoints = f"; PostgreSQL checkpointing every {doc['checkpoint_every']} commits"
    lines = [f"# Crash: real databases on lab {cell(doc['lab'])}", "",
             f"`sectorlab crash-db --seed {doc['seed']} --runs {doc.get('runs', 1)} --cuts {doc['cuts']}`: judges "
             f"{cell(judges)}; {len(doc['rows'])} judged cuts in {doc['wall_s']} s. Each judge ran "
             f"{_times(doc.get('runs', 1))} on every disk at once, each run: the "
             f"database made on ext4, one session committing (an insert and an update of one of "
             f"{doc['rows_per_table']:,} rows a transaction"
             f"{checkpoints if 'postgres' in judges else ''}"
             f"), the guest's QEMU killed after {doc['min_acks']} acknowledged commits and a seeded moment more (the "
             f"real cut), the database recovering from what the cut left; then {doc['cuts'] - 1} more moments of the "
             f"same run, drawn from the disk's write windows (its bytes going onto the medium) between its first "
             f"acknowledgement and the real cut, each built from the disk's write log and recovered in the guest "
             f"(crash/labrun.py; docs/crash.md).", "", *headlines(doc), "",
             *([f"- {cell(doc['atomic'])}."] if doc.get("atomic") else []), "",
             *render.table([COLUMNS, *(_row(rows, judge) for (_, judge), rows in _cells(doc).items())],
                           align="-" * len(COLUMNS))[:-1]]
    said = {}
    for r in doc["rows"]:  # up to three of each judge, in the order they came
        if r["detected"] and (r["why"] or r["check"]) and len(said.setdefault(r["judge"], [])) < 3:
            said[r["judge"]].append(f"{r['disk']} {r['kind']}, found by {r.get('detector') or 'the database'}: "
                                    f"{r['why'] or r['check']}")
    if said:
        lines += ["", "What the databases said when they did not come back whole (the first lines of their logs; up "
                  "to three per judge):", ""]
        lines += [f"- {cell(j)}, {cell(w[:300])}" for j in sorted(said) for w in said[j]]
    lines += ["", LEGEND + "Recovery is timed from the "
              "server's launch to its first answer, in the guest under TCG: the real cut's on the cell's own disk "
              "(its device model's times), the copies' on the judge disk, whose model adds nothing of its own "
              "(the floor): a copy's time is the database's and the lab's work, not the device's. A cell with no "
              "failures says 0: that is what was measured, in these cuts of these runs. A cell's cuts are one "
              "real cut and moments of the same run: the intervals and Fisher's test take them as independent "
              "trials, which they are only as far as one run's I/O is like another's; how often a cut hurts "
              "follows from the assumed shares of each tear's outcomes (docs/crash.md).", ""]
    return "\n".join(lines)


EXPECTED = "expected the crash-db.json 'sectorlab crash-db' writes"


def write(results: Path) -> dict[str, Path]:
    """report.md and report.html of crash-db.json."""
    return render.write(results, markdown(render.read_results(results, "crash-db.json", "crash-db record", EXPECTED)))
