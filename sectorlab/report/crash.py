"""The crash report (report.md beside crash.json): per cell of the matrix, what the cuts did to
acknowledged redo, with counts over the cuts and exact (Clopper-Pearson) 95 % intervals of the share
of cuts that lost acknowledged commits."""

from __future__ import annotations

import statistics
from pathlib import Path

from . import render
from .render import cell, one_line

CONFIDENCE = 0.95


def share(k: int, n: int) -> str:
    """k of n, its percentage and the exact 95 % interval."""
    from scipy.stats import binomtest  # here: scipy is slow to import and most commands never need it
    ci = binomtest(k, n).proportion_ci(CONFIDENCE, method="exact")
    return f"{k}/{n} = {100 * k / n:.1f} % ({100 * ci.low:.1f}-{100 * ci.high:.1f})"


def counts(c: dict) -> dict:
    """What the report says of a cell: cuts losing acknowledged commits and how many, cuts with
    torn blocks, torn blocks a header check alone misses, unreadable blocks, undetected corruption."""
    cuts = c["cuts"]
    losing = [x["lost_commits"] for x in cuts if x["lost_commits"] > 0]
    return {"n": len(cuts), "losing": len(losing), "lost_mean": statistics.mean(losing) if losing else 0.0,
            "lost_max": max(losing, default=0), "torn_cuts": sum(x["torn_blocks"] > 0 for x in cuts),
            "header_misses": sum(x["torn_header_ok"] for x in cuts),
            "unreadable": sum(x["unreadable_blocks"] for x in cuts),
            "undetected": sum(x["corrupt_undetected"] for x in cuts)}


def disk(c: dict) -> str:
    cache = {"none": "no write cache", "protected": "protected cache", "volatile": "volatile cache"}[c["write_cache"]]
    return f"`{one_line(c['profile'])}` ({c['power_loss']}, {cache})"


def cell_row(c: dict) -> list[str]:
    k = counts(c)
    blocksize = f"{c['blocksize']}{' (override)' if c.get('override') else ''}"
    return [disk(c), c["geometry"], blocksize, f"{c['writes']:,}", share(k["losing"], k["n"]),
            f"{k['lost_mean']:.1f} / {k['lost_max']}" if k["losing"] else "-", share(k["torn_cuts"], k["n"]),
            str(k["header_misses"]), str(k["unreadable"]), str(k["undetected"])]


COLUMNS = ["disk (power loss, cache)", "geometry", "BLOCKSIZE", "log writes",
           "cuts losing acknowledged commits (95 % CI)", "commits lost: mean / max", "cuts with torn blocks the "
           "checksum found (95 % CI)", "of those, blocks a header check alone takes", "unreadable blocks",
           "corruption not detected"]


def against(c: dict, other: dict) -> str:
    """The same disk at its other BLOCKSIZE: its share of cuts that lost acknowledged commits, and
    Fisher's exact test of the two shares (two-sided)."""
    from scipy.stats import fisher_exact
    k, o = counts(c), counts(other)
    p = fisher_exact([[k["losing"], k["n"] - k["losing"]], [o["losing"], o["n"] - o["losing"]]]).pvalue
    return (f" At BLOCKSIZE {other['blocksize']}: {share(o['losing'], o['n'])}; Fisher's exact test p = {p:.2g} "
            f"(n = {k['n']} and {o['n']} cuts){', within noise' if p >= 0.01 else ''}.")


def headlines(doc: dict) -> list[str]:
    """What a DBA reads first: where acknowledged redo was lost, where blocks tore, and the cells
    that lost nothing said to have."""
    out = []
    cells = sorted(doc["cells"], key=lambda x: (x["profile"], x["geometry"], x["blocksize"]))
    for c in cells:
        k = counts(c)
        if k["losing"]:
            out.append(f"- **Acknowledged commits lost** on {disk(c)}, {cell(c['geometry'])} at BLOCKSIZE "
                       f"{c['blocksize']}: in {share(k['losing'], k['n'])} of the cuts, {k['lost_mean']:.1f} "
                       f"commits on average (at most {k['lost_max']}); {k['unreadable']} blocks left unreadable."
                       + "".join(against(c, o) for o in cells if o is not c and (o["profile"], o["geometry"]) ==
                                 (c["profile"], c["geometry"])))
    for c in cells:
        k = counts(c)
        if k["torn_cuts"]:
            out.append(f"- **Torn redo blocks** on {disk(c)}, {cell(c['geometry'])} at BLOCKSIZE {c['blocksize']}: "
                       f"{share(k['torn_cuts'], k['n'])} of the cuts; "
                       f"{'the checksum found each' if not k['undetected'] else str(k['undetected']) + ' it missed'}, "
                       f"and "
                       f"{k['header_misses']} torn blocks a check of the header alone would have taken as good; "
                       f"{sum(x['torn_blocks'] > 0 and x['lost_commits'] > 0 for x in c['cuts'])} of those cuts "
                       f"lost acknowledged commits.")
    quiet = [c for c in cells if not counts(c)["losing"]]
    cuts = sum(counts(c)["n"] for c in quiet)
    out.append(f"- **No acknowledged commit lost** in the other {len(quiet)} cells ({cuts:,} cuts; each cell's 95 % "
               f"upper bound in the table).")
    volatile = [c for c in cells if c["write_cache"] == "volatile"]
    if volatile and all(c["fua_writes"] == c["writes"] for c in volatile):
        out.append("- The volatile write cache lost nothing acknowledged because every log write was a FUA write "
                   "(redo-writer's, as Linux's O_DSYNC on a disk that offers FUA): the cache never held an "
                   "acknowledged write. Only a host that skips FUA and flushes would lose one there.")
    return out


EXPECTED = "expected the crash.json 'sectorlab crash' writes"


def write(results: Path) -> dict[str, Path]:
    """report.md and report.html (as a bench's: one file, nothing from the network) of crash.json."""
    return render.write(results, markdown(render.read_results(results, "crash.json", "crash record", EXPECTED)))


def markdown(doc: dict) -> str:
    load = doc["load"]
    lines = [f"# Crash: {cell(doc['title'])}", "",
             f"`sectorlab crash --seed {doc['seed']} -- {one_line(doc['preset'])}`: {len(doc['cells'])} cells, "
             f"{doc['cuts']} cuts each, {doc['wall_s']} s. The load: redo-writer on this host through libnbd "
             f"(the device path), "
             f"{load['sessions']} sessions, {load['redo_per_txn']} B of redo a commit, {load['rate']} commits/s "
             f"offered (Poisson), {load['seconds']} s, checked "
             f"redo blocks; each cut a moment drawn over the run, its tears drawn from the same seeded generator "
             f"(crash/powerloss.py; docs/crash.md has the rules and their sources), judged by `redo-writer verify`.",
             "", *headlines(doc), *([f"- {cell(doc['atomic'])}."] if doc.get("atomic") else []), "",
             *render.table([COLUMNS, *(cell_row(c) for c in sorted(doc["cells"], key=lambda x: (
                 x["profile"], x["geometry"], x["blocksize"])))], align="-" * len(COLUMNS))[:-1]]
    if doc["forbidden"]:
        lines += ["", "Not run, forbidden by the rules engine:", ""]
        lines += [f"- {cell(f['cell'])}: {cell(f['why'])}" for f in doc["forbidden"]]
    lines += ["", "A cut that loses acknowledged commits is one whose recovery ends before the redo the writer had "
              "been told was durable. A torn block a header check alone takes is one whose header and first "
              "bytes are right and whose checksum is not: without redo block checksums recovery would take it. "
              "A cell with no losses says 0: that is what was measured. How often a cut hurts follows from the "
              "assumed shares of each tear's outcomes (docs/crash.md); that it can, from the rules.", ""]
    return "\n".join(lines)
