"""The crash report (report.md beside crash.json): per cell of the matrix, what the cuts did to
acknowledged redo, as rates that say what they are (crash/rates.py): the exposure, the share of cuts
inside the writes' windows, and the rate per cut at a random moment, each with a 95 % interval that
takes the run as the unit; a cell that cannot lose says so by its rule."""

from __future__ import annotations

import dataclasses
import json
import math
import statistics
import warnings
from pathlib import Path

from ..crash import powerloss, rates
from ..errors import UsageError
from ..paths import write_atomic
from . import render
from .render import cell, one_line

CONFIDENCE = 0.95


def share(k: int, n: int) -> str:
    """k of n, its percentage and the exact 95 % interval."""
    from scipy.stats import binomtest  # here: scipy is slow to import and most commands never need it
    ci = binomtest(k, n).proportion_ci(CONFIDENCE, method="exact")
    return f"{k}/{n} = {100 * k / n:.1f} % ({100 * ci.low:.1f}-{100 * ci.high:.1f})"


def counts(c: dict) -> dict:
    """What the report counts of a cell's cuts inside the windows: cuts losing acknowledged commits
    and how many, cuts with torn blocks, torn blocks a header check alone misses, unreadable blocks,
    undetected corruption (that last over every cut)."""
    window = [x for x in c["cuts"] if x["kind"] in ("window", "at")]
    losing = [x["lost_commits"] for x in window if x["lost_commits"] > 0]
    return {"n": len(window), "losing": len(losing), "lost_mean": statistics.mean(losing) if losing else 0.0,
            "lost_max": max(losing, default=0), "torn_cuts": sum(x["torn_blocks"] > 0 for x in window),
            "header_misses": sum(x["torn_header_ok"] for x in window),
            "unreadable": sum(x["unreadable_blocks"] for x in window),
            "undetected": sum(x["corrupt_undetected"] for x in c["cuts"])}


def _order(c: dict) -> tuple:
    """The report's order of cells: by disk, geometry, BLOCKSIZE, members, then the wrapping log."""
    return (c["profile"], c["geometry"], c["blocksize"], c.get("members", 1), c.get("wrapping", False),
            c.get("hold_us", -1))


def disk(c: dict) -> str:
    cache = {"none": "no write cache", "protected": "protected cache", "volatile": "volatile cache"}[c["write_cache"]]
    said = LIES.get(c.get("lies_about") or "none")
    return (f"`{one_line(c['profile'])}` ({c['power_loss']}, {cache}"
            f"{f' that acknowledges {said} before the write is durable' if said else ''})")


LIES = {"none": "", "fua": "a FUA write", "flush": "a flush", "fua,flush": "a FUA write or a flush"}


def lies(c: dict) -> bool:
    """Whether the cell's drive acknowledged writes before they were durable in any run."""
    return any(r.get("acknowledged_early") for r in c["runs"])


def exposure_said(c: dict) -> str:
    """What the cell's exposure is the share of."""
    return ("the disk holds a log write it acknowledged and has not made durable, or writes one's bytes,"
            if lies(c) else "the disk writes a log write's bytes")


def _fraction(k: int, n: int) -> str:
    return f"{k}/{n}"


def cell_row(c: dict) -> list[str]:
    k = counts(c)
    blocksize = (f"{c['blocksize']}{' (override)' if c.get('override') else ''}"
                 f"{', multiplexed on two disks' if c.get('members', 1) == 2 else ''}"
                 f"{', wrapping log' if c.get('wrapping') else ''}"
                 f"{'' if c.get('hold_us') is None else f', cache hold {_hold(c)} us'}")
    writes = f"{len(c['runs'])} x {statistics.median(r['writes'] for r in c['runs']):,.0f}"
    lose, tear = rates.of_cell(c, rates.losing), rates.of_cell(c, rates.tearing)
    if lose is None:  # one cut at a chosen moment a run (--at): counts only
        return [disk(c), c["geometry"], blocksize, writes, "-", share(k["losing"], k["n"]), "-", "-",
                share(k["torn_cuts"], k["n"]), str(k["header_misses"]), str(k["unreadable"]), str(k["undetected"])]
    if c.get("cannot_lose") and not k["losing"]:
        loss = per_cut = "cannot, by rule"
        lost = "-"
    else:
        loss = f"{_fraction(k['losing'], k['n'])} = {lose.conditional.percent()}"
        per_cut = lose.per_cut.percent(2)
        lost = f"{k['lost_mean']:.1f} / {k['lost_max']}" if k["losing"] else "-"
    return [disk(c), c["geometry"], blocksize, writes, lose.exposure.percent(2), loss, per_cut,
            f"{_fraction(lose.uniform_k, lose.uniform_n)}; {lost}",
            f"{_fraction(k['torn_cuts'], k['n'])} = {tear.conditional.percent()}",
            str(k["header_misses"]), str(k["unreadable"]), str(k["undetected"])]


COLUMNS = ["disk (power loss, cache)", "geometry", "BLOCKSIZE (and members)", "runs x log writes (median)",
           "exposure: share of the time a cut can tear a write, or lose one a lying drive acknowledged (95 % CI)",
           "cuts inside a window losing acknowledged commits (95 % CI)",
           "a cut at a random moment loses acknowledged commits (95 % CI)",
           "uniform cuts losing; commits lost per losing window cut: mean / max",
           "cuts inside a window leaving torn blocks the checksum found (95 % CI)",
           "of those, blocks a header check alone takes", "unreadable blocks", "corruption not detected"]


def variant(c: dict) -> str:
    """What sets a cell apart from the others on its disk and geometry: its BLOCKSIZE, its members."""
    return (f"BLOCKSIZE {c['blocksize']}" + (", multiplexed on two such disks" if c.get("members", 1) == 2 else "")
            + (f", a log of {c['log_size'] >> 10} KiB that wraps" if c.get("wrapping") else "")
            + ("" if c.get("hold_us") is None else f", holding an acknowledged write {_hold(c)} us before its drain"))


def _length(load: dict) -> str:
    """A run's length as the preset bounded it: seconds, or a count of commits and seconds."""
    n = load.get("transactions")
    return f"{n:,} commits or {load['seconds']} s, whichever came first" if n else f"{load['seconds']} s"


def _hold(c: dict) -> str:
    """A cell's cache hold as its preset gave it (whole microseconds: never 1e+06), one line."""
    return one_line(str(c["hold_us"]))


def where(c: dict) -> str:
    return f"{disk(c)}, {cell(c['geometry'])} at {variant(c)}"


def neighbours(c: dict, cells: list[dict]) -> list[dict]:
    """The cells on the same disk and geometry that differ from `c` in one thing: its BLOCKSIZE, its
    members, its log, or its cache's hold."""
    return [o for o in cells if (o["profile"], o["geometry"]) == (c["profile"], c["geometry"]) and
            (o["blocksize"] != c["blocksize"]) + (o.get("members", 1) != c.get("members", 1))
            + (o.get("wrapping", False) != c.get("wrapping", False)) + (o.get("hold_us") != c.get("hold_us")) == 1]


def against(c: dict, other: dict) -> str:
    """The same disk at its other BLOCKSIZE or members: by its rule, or its rates and Welch's t test
    of the two cells' run-level conditional shares (two-sided, the run as the unit)."""
    if other.get("cannot_lose") and not counts(other)["losing"]:
        return f" Against 0 by rule at {variant(other)}: {other['cannot_lose']}."
    from scipy.stats import ttest_ind
    mine, theirs = (_run_shares(x) for x in (c, other))
    o = rates.of_cell(other, rates.losing)
    if o is None:
        return ""
    from scipy.stats import fisher_exact
    with warnings.catch_warnings():  # runs all alike: no spread, said below
        warnings.simplefilter("ignore", RuntimeWarning)
        p = ttest_ind(mine, theirs, equal_var=False).pvalue
    if math.isnan(p) and statistics.mean(mine) != statistics.mean(theirs):
        said, p = "not computable (every run of each the same, and they differ)", 0.0
    else:
        said = "not computable (no spread)" if math.isnan(p) else f"p = {p:.2g}"
    k, n = counts(c)["losing"], counts(c)["n"]
    pooled = fisher_exact([[k, n - k], [o.conditional.k, o.conditional.n - o.conditional.k]]).pvalue
    return (f" At {variant(other)}: {o.conditional.percent()} of the window cuts; Welch's t test of "
            f"the runs' shares {said} (n = {len(mine)} and {len(theirs)} runs)"
            f"{', within noise at the run level' if math.isnan(p) or p >= 0.01 else ''} (Fisher's exact test of "
            f"the pooled cuts, which takes them as independent: p = {pooled:.2g}).")


def _run_shares(c: dict) -> list[float]:
    out = []
    for r in range(len(c["runs"])):
        w = [x for x in c["cuts"] if x["run"] == r and x["kind"] == "window"]
        out.append(sum(map(rates.losing, w)) / len(w) if w else math.nan)
    return out


def headlines(doc: dict) -> list[str]:
    """What a DBA reads first: where acknowledged redo can be lost and how likely a power cut does
    it, where blocks tore, and the cells that cannot lose said to, with their rule."""
    out = []
    cells = sorted(doc["cells"], key=_order)
    load = doc["load"]
    at = f"at {load['rate']} commits/s offered ({load['sessions']} sessions, {load['redo_per_txn']} B a commit)"
    for c in cells:
        k, lose = counts(c), rates.of_cell(c, rates.losing)
        if k["losing"] and lose is not None:
            out.append(f"- **Acknowledged commits lost**: {at}, on {where(c)}, a power cut at a random moment "
                       f"loses acknowledged redo with probability **{lose.per_cut.percent(2)}** "
                       f"({lose.lost_per_cut:.2g} commits a cut on average): {exposure_said(c)} "
                       f"{lose.exposure.percent(2)} of the time (the exposure), and a cut "
                       f"then loses commits in {_fraction(k['losing'], k['n'])} = {lose.conditional.percent()} "
                       f"({k['lost_mean']:.1f} commits on average, at most {k['lost_max']}; {k['unreadable']} "
                       f"blocks left unreadable); {_fraction(lose.uniform_k, lose.uniform_n)} cuts at random "
                       f"moments lost any ({len(c['runs'])} runs)."
                       + "".join(against(c, o) for o in neighbours(c, cells)))
        elif lose is not None and not c.get("cannot_lose"):
            out.append(f"- **No acknowledged commit lost** on {where(c)}, where the rules allow it: "
                       f"{_fraction(k['losing'], k['n'])} cuts inside a window = {lose.conditional.percent()}, a cut "
                       f"at a random moment {lose.per_cut.percent(2)} (exposure {lose.exposure.percent(2)}; "
                       f"{len(c['runs'])} runs)." + "".join(against(c, o) for o in neighbours(c, cells)))
    for c in cells:
        k, tear = counts(c), rates.of_cell(c, rates.tearing)
        if k["torn_cuts"] and tear is not None:
            out.append(f"- **Torn redo blocks** on {where(c)}: "
                       f"in {_fraction(k['torn_cuts'], k['n'])} = {tear.conditional.percent()} of the cuts inside a "
                       f"window, {tear.per_cut.percent(2)} of cuts at a random moment; "
                       f"{'the checksum found each' if not k['undetected'] else str(k['undetected']) + ' it missed'}, "
                       f"and {k['header_misses']} torn blocks a check of the header alone would have taken as good.")
    ruled = [c for c in cells if c.get("cannot_lose") and not any(x["lost_commits"] for x in c["cuts"])]
    if ruled:
        rules_ = sorted({c["cannot_lose"] for c in ruled})
        out.append(f"- **Cannot lose an acknowledged commit, by rule**, in {len(ruled)} cells ("
                   f"{sum(counts(c)['n'] for c in ruled):,} cuts inside windows, none did): "
                   + "; ".join(f"{r} ({', '.join(cell(c['cell']) for c in ruled if c['cannot_lose'] == r)})"
                               for r in rules_) + ".")
    broken = [c for c in cells if c.get("cannot_lose") and any(x["lost_commits"] for x in c["cuts"])]
    for c in broken:
        out.append(f"- **A rule contradicted**: {cell(c['cell'])} lost acknowledged commits where the rule says it "
                   f"cannot ({c['cannot_lose']}): the model or the judge is wrong; report it.")
    out += swept_headlines(doc, cells)
    volatile = [c for c in cells if c["write_cache"] == "volatile" and not c.get("lies_about") and not lies(c)]
    if volatile and all(r["fua_writes"] == r["writes"] for c in volatile for r in c["runs"]):
        disks = ", ".join(sorted({f"`{one_line(c['profile'])}`" for c in volatile}))
        liars = sorted({f"`{one_line(c['profile'])}`" for c in cells if c.get("lies_about") or lies(c)})
        out.append(f"- The volatile write cache of {disks} held no acknowledged write, because every log write "
                   f"was a FUA write (redo-writer's, as Linux's O_DSYNC on a disk that offers FUA), which it "
                   f"wrote through; what it lost, it lost on the media. A host that skips FUA and flushes would "
                   f"lose acknowledged writes in it"
                   + (f", and so does a drive that acknowledges before the write is durable ({', '.join(liars)})."
                      if liars else "."))
    return out


SHARE_NAMES = {"unreadable": "the share of an unprotected drive's partly written units left unreadable",
               "new": "the odds of a torn write's unit landing new"}


def assumed_shares(doc: dict) -> dict[str, float]:
    """The shares the record's cuts assumed (crash.json's `shares`; a record without them, the
    model's defaults: crash/powerloss.py, DEFAULT_SHARES)."""
    return doc.get("shares") or dataclasses.asdict(powerloss.DEFAULT_SHARES)


def _swept(c: dict) -> dict[str, list[float]]:
    """The shares swept in a cell, with their values (sorted)."""
    out: dict[str, set] = {}
    for x in c["cuts"]:
        for name, value in x.get("shares", {}).items():
            out.setdefault(name, set()).add(value)
    return {k: sorted(v) for k, v in sorted(out.items())}


def _at(c: dict, name: str, value: float, default: dict, did) -> rates.CellRates | None:
    return rates.of_cell(c, did) if value == default[name] else rates.of_cell(c, did, {name: value})


def _apart(got: list[rates.CellRates]) -> bool:
    """Whether the conditional shares at some two values of a sweep differ beyond their intervals."""
    return max(r.conditional.low for r in got) > min(r.conditional.high for r in got)


def swept_headlines(doc: dict, cells: list[dict]) -> list[str]:
    """Each headline over the assumed shares' range: it holds at every value swept, or it depends."""
    out, default = [], assumed_shares(doc)
    for c in cells:
        for name, values in _swept(c).items():
            values = sorted({*values, default[name]})
            did, what = ((rates.losing, "loses acknowledged commits") if name == "unreadable"
                         else (rates.tearing, "leaves torn blocks"))
            got = [(v, _at(c, name, v, default, did)) for v in values]
            if any(r is None for _, r in got):
                continue
            some = [v for v, r in got if r.conditional.k]
            verdict = ("holds over the range" if len(some) == len(got) else
                       "was not seen at any value" if not some else
                       "depends on it: not seen at " + ", ".join(f"{v:.2g}" for v, r in got if not r.conditional.k))
            out.append(f"- **Swept**: {SHARE_NAMES[name]} from {values[0]:g} to {values[-1]:g} on "
                       f"{cell(c['cell'])}: a cut inside a window {what} in "
                       + ", ".join(f"{r.conditional.percent()} at {v:.2g}" for v, r in got)
                       + f" ({got[0][1].conditional.n} cuts each): that it can {verdict}"
                       + ("" if verdict != "holds over the range" else
                          "; how often follows the share." if _apart([r for _, r in got]) else
                          "; how often hardly moves with it (its intervals overlap over the whole range)."))
    return out


def sweep_rows(doc: dict) -> list[list[str]]:
    default = assumed_shares(doc)
    rows = []
    for c in sorted(doc["cells"], key=_order):
        for name, values in _swept(c).items():
            for v in sorted({*values, default[name]}):
                lose, tear = _at(c, name, v, default, rates.losing), _at(c, name, v, default, rates.tearing)
                if lose is None:
                    continue
                rows.append([cell(c["cell"]), name, f"{v:.2g}{' (assumed)' if v == default[name] else ''}",
                             f"{lose.conditional.k}/{lose.conditional.n} = {lose.conditional.percent()}",
                             lose.per_cut.percent(2), f"{tear.conditional.k}/{tear.conditional.n} = "
                             f"{tear.conditional.percent()}"])
    return rows


SWEEP_COLUMNS = ["cell", "share", "value", "cuts inside a window losing acknowledged commits (95 % CI)",
                 "a cut at a random moment loses (95 % CI)", "cuts inside a window leaving torn blocks (95 % CI)"]


EXPECTED = "expected the crash.json 'sectorlab crash' writes"


def write(results: Path) -> dict[str, Path]:
    """report.md, report.html (as a bench's: one file, nothing from the network), its picture
    (report-crash.png) and summary.json of crash.json."""
    doc = render.read_results(results, "crash.json", "crash record", EXPECTED)
    picture = None
    rows = picture_rows(doc)
    if rows:
        from ..analysis.plots import plot_crash
        picture = plot_crash(rows, results / "report-crash.png").name
    text = markdown(doc, picture)
    write_atomic(results / "summary.json", json.dumps(summary(doc), indent=2))
    return {**render.write(results, text), "summary": results / "summary.json"}


def summary(doc: dict) -> dict:
    """What report.md says, for machines: the record without its cuts and its runs' commands (a
    matrix's cuts are megabytes); per cell its counts and its rates at the assumed shares, and at
    each swept value of a share (crash/rates.py: each a mean over the runs and its 95 % interval)."""
    default = assumed_shares(doc)

    def measured(c: dict, did, name: str | None = None, value: float | None = None) -> dict | None:
        got = rates.of_cell(c, did) if name is None else _at(c, name, value, default, did)
        return None if got is None else dataclasses.asdict(got)

    cells = []
    for c in sorted(doc["cells"], key=_order):
        out = {k: v for k, v in c.items() if k not in ("cuts", "runs")}
        out["runs"] = [{k: v for k, v in r.items() if k != "command"} for r in c.get("runs", [])]
        out["counts"] = counts(c)
        out["lose"], out["tear"] = measured(c, rates.losing), measured(c, rates.tearing)
        out["swept"] = {name: [{"value": v, "lose": measured(c, rates.losing, name, v),
                                "tear": measured(c, rates.tearing, name, v)} for v in sorted({*values, default[name]})]
                        for name, values in _swept(c).items()}
        cells.append(out)
    return {**{k: v for k, v in doc.items() if k != "cells"}, "cells": cells}


def picture_rows(doc: dict) -> list[dict]:
    """Per cell measured over runs (not --at), what the picture draws: its label, its rule, and per
    measure (lose, tear) the rate per cut at a random moment and given a cut inside a window."""
    rows = []
    for c in sorted(doc["cells"], key=_order):
        lose, tear = rates.of_cell(c, rates.losing), rates.of_cell(c, rates.tearing)
        if lose is None:
            continue
        by_rule = bool(c.get("cannot_lose")) and not counts(c)["losing"]
        rows.append({"label": f"{c['profile']} {c['geometry'].removeprefix('sector')} @{c['blocksize']}"
                              f"{' x2 (multiplexed)' if c.get('members', 1) == 2 else ''}"
                              f"{' wrapping' if c.get('wrapping') else ''}"
                              f"{'' if c.get('hold_us') is None else f' hold {_hold(c)} us'}",
                     "by_rule": by_rule,
                     "lose": {k: None if by_rule else (e.value, e.low, e.high)
                              for k, e in (("per_cut", lose.per_cut), ("conditional", lose.conditional))},
                     "tear": {k: (e.value, e.low, e.high)
                              for k, e in (("per_cut", tear.per_cut), ("conditional", tear.conditional))}})
    return rows


def markdown(doc: dict, picture: str | None = None) -> str:
    if any("runs" not in c for c in doc.get("cells", [])):
        raise UsageError("crash.json: its cells have no runs: it was written before a crash run had independent runs "
                         "and write windows (2026-11-29), and its rates are not comparable; run make crash again")
    load = doc["load"]
    virtual = doc.get("clock", "real") == "virtual"  # a record before the virtual clock: its runs were real
    if doc.get("clock", "real") not in ("real", "virtual"):
        raise UsageError(f"crash.json: clock = {one_line(str(doc.get('clock')))[:40]!r}: expected 'real' or 'virtual'")
    lines = [f"# Crash: {cell(doc['title'])}", "",
             f"`sectorlab crash --seed {doc['seed']}{' --clock virtual' if virtual else ''} -- "
             f"{one_line(doc['preset'])}`: {len(doc['cells'])} cells, "
             f"{doc['runs']} runs each (each with its own workload seed), "
             + (f"one cut a run at {doc['at_ms']:g} ms" if doc.get("at_ms") is not None else
                f"{doc['cuts']} cuts a run drawn inside the writes' windows and {doc['uniform_cuts']} at moments "
                f"drawn uniformly over it") +
             f", {doc['wall_s']} s. The load: "
             + ("redo-writer with each model linked in, in virtual time (a cut is a moment of the models' own "
                "time; nothing of this host's in the runs: redo-writer/README.md), " if virtual else
                "redo-writer on this host through libnbd (the device path), ") +
             f"{load['sessions']} sessions, {load['redo_per_txn']} B of redo a commit, {load['rate']} commits/s "
             f"offered (Poisson), {_length(load)}, checked redo blocks. A write's window is when its bytes go "
             f"onto the medium (the units it writes at the medium's rate, after positioning and any read of a "
             f"read-modify-write): a cut before it loses the write whole, inside it tears it by the unit rules "
             f"(crash/powerloss.py; docs/crash.md has the rules and their sources); each cut judged by "
             f"`redo-writer verify`. Intervals are 95 %, the run as the unit (crash/rates.py).",
             *(["", f"![power cuts per cell: the share of cuts that lost acknowledged commits and that left torn "
                    f"blocks, at a random moment and inside a write's window, with 95 % intervals]({picture})"]
               if picture else []),
             "", *headlines(doc), *([f"- {cell(doc['atomic'])}."] if doc.get("atomic") else []), "",
             *render.table([COLUMNS, *(cell_row(c) for c in sorted(doc["cells"], key=_order))],
                           align="-" * len(COLUMNS))[:-1]]
    swept = sweep_rows(doc)
    if swept:
        lines += ["", "## The assumed shares swept", "",
                  "No vendor publishes the odds of a tear's outcomes. Each is swept over its range on the same runs "
                  "(as many cuts inside the windows at each value), in the cells where it can change a finding: the "
                  "unreadable share where a cut can lose acknowledged commits, the odds of a unit landing new where "
                  "a log block spans several units.", "",
                  *render.table([SWEEP_COLUMNS, *swept], align="-" * len(SWEEP_COLUMNS))[:-1]]
    if doc["forbidden"]:
        lines += ["", "Not run, forbidden by the rules engine:", ""]
        lines += [f"- {cell(f['cell'])}: {cell(f['why'])}" for f in doc["forbidden"]]
    lines += ["", "A cut that loses acknowledged commits is one whose recovery ends before the redo the writer had "
              "been told was durable. A torn block a header check alone takes is one whose header and first "
              "bytes are right and whose checksum is not: without redo block checksums recovery would take it. "
              "A cell that cannot lose by the rules says so, and its rule; its cuts are run all the same (a loss "
              "there would contradict the rule). The exposure follows from the profile's media rate and the load; "
              "the share of window cuts that lose, from the assumed shares of each tear's outcomes (docs/crash.md); "
              "that a cut can lose at all, from the rules.", ""]
    return "\n".join(lines)
