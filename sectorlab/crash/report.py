"""The crash report (report.md beside crash.json): per cell of the matrix, what the cuts did to
acknowledged redo, with counts over the cuts and exact (Clopper-Pearson) 95 % intervals of the share
of cuts that lost acknowledged commits."""

from __future__ import annotations

import statistics

from scipy.stats import binomtest

from ..bench.findings import one_line

CONFIDENCE = 0.95


def cell(text) -> str:
    """A table cell: on one line, its '|' escaped (the names come from a preset file)."""
    return one_line(text).replace("|", "\\|")


def share(k: int, n: int) -> str:
    """k of n, its percentage and the exact 95 % interval."""
    ci = binomtest(k, n).proportion_ci(CONFIDENCE, method="exact")
    return f"{k}/{n} ({100 * k / n:.1f} %, {100 * ci.low:.1f}-{100 * ci.high:.1f})"


def cell_row(c: dict) -> list[str]:
    cuts = c["cuts"]
    n = len(cuts)
    losing = [x["lost_commits"] for x in cuts if x["lost_commits"] > 0]
    torn = sum(x["torn_blocks"] > 0 for x in cuts)
    blocksize = f"{c['blocksize']}{' (override)' if c.get('override') else ''}"
    return [f"`{cell(c['profile'])}`", c["power_loss"], c["write_cache"], cell(c["geometry"]), blocksize,
            str(c["atomic_unit"]), f"{c['writes']:,}", share(len(losing), n),
            f"{statistics.mean(losing):.1f} / {max(losing)}" if losing else "-",
            share(torn, n), str(sum(x["torn_header_ok"] for x in cuts)),
            str(sum(x["unreadable_blocks"] for x in cuts)), str(sum(x["corrupt_undetected"] for x in cuts))]


COLUMNS = ["profile", "power loss", "write cache", "geometry", "BLOCKSIZE", "atomic unit (B)", "log writes",
           "cuts losing acknowledged commits (95 % CI)", "commits lost: mean / max, when any",
           "cuts with torn blocks found by the checksum", "torn blocks a header check alone misses",
           "unreadable blocks", "corruption not detected"]


def markdown(doc: dict) -> str:
    load = doc["load"]
    lines = [f"# Crash: {cell(doc['title'])}", "",
             f"`sectorlab crash --seed {doc['seed']} -- {doc['preset']}`: {len(doc['cells'])} cells, "
             f"{doc['cuts']} cuts each, {doc['wall_s']} s. The load: redo-writer on this host through libnbd "
             f"(the device path), "
             f"{load['sessions']} sessions, {load['redo_per_txn']} B of redo a commit, {load['rate']} commits/s "
             f"offered (Poisson), {load['seconds']} s, checked "
             f"redo blocks; each cut a moment drawn over the run, its tears drawn from the same seeded generator "
             f"(crash/powerloss.py; docs/crash.md has the rules and their sources), judged by `redo-writer verify`.",
             "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for c in sorted(doc["cells"], key=lambda x: (x["profile"], x["geometry"], x["blocksize"])):
        lines.append("| " + " | ".join(cell_row(c)) + " |")
    if doc["forbidden"]:
        lines += ["", "Not run, forbidden by the rules engine:", ""]
        lines += [f"- {cell(f['cell'])}: {cell(f['why'])}" for f in doc["forbidden"]]
    lines += ["", "A cut that loses acknowledged commits is one whose recovery ends before the redo the writer had "
              "been told was durable. A torn block a header check alone misses is one whose header and first "
              "bytes are right and whose checksum is not: without redo block checksums recovery would take it. "
              "A cell with no losses says 0: that is what was measured.", ""]
    return "\n".join(lines)
