"""The report's text: report.md from a bench's numbers (markdown, one function per section: the
heading and the run order, the disks as the guest showed them, each disk, the comparisons across
disks, the controls, the seed's figures beside the lab's, the rules engine inside ASM, the
cross-checks) and report.html from report.md (html: one file, the pictures inline, no network).
The tests' text, the shapes, the controls and the seed table are worded in findings.py.

Names and text from a results directory (a disk's name, a title, a rules engine's error, a seed's
quote) go into report.md as they are, and report.html is escaped at one place: the markdown
converter's serializer, with raw HTML off (html()), so that a name such as `<img src=x onerror=...>`
reads as that text on the page and is never markup; every link or picture the text would make is
dropped but for the report's own pictures.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..analysis import devicerows
from ..analysis.compare import Findings, findings_of, shape
from ..analysis.metrics import ROWS, Disk, Run, race_wins, row_of, row_value, spread, verdict_text
from ..analysis.stats import ALPHA, CI_LEVEL
from . import findings, render
from .clock import DevicePath
from .render import one_line


def _fmt(fmt: str, value) -> str:
    if value is None:
        return "-"
    return fmt.format(*value) if isinstance(value, tuple) else fmt.format(value)


def _change_text(label: str, pct: float | None, a, b) -> str:
    """A row's change from one side to the other: in points for a percentage, as a ratio when it is
    more than tenfold (4 -> 4,116 writes reads as x1,029, not +102800.0 %), else in percent."""
    if label.endswith("%"):
        return "-" if a is None or b is None else f"{b - a:+.2f} points"
    if pct is not None and pct >= 900:
        return f"x{1 + pct / 100:,.0f}"
    return "-" if pct is None else f"{pct:+.1f} %"


def _heading(bench: dict, disks: list[Disk]) -> list[str]:
    """The preset, its title, the lab and the workload every run ran, and when a difference is called
    significant."""
    w = {k: one_line(v) if isinstance(v, str) else v for k, v in (bench.get("workload") or {}).items()}
    b = {k: one_line(bench[k]) for k in ("preset", "title", "seed", "lab", "started", "image") if bench.get(k)}
    out = [f"# sectorlab bench: {b.get('preset', '?')}", ""]
    if b.get("title"):
        out += [f"**{b['title']}**" + (f" (seed {b['seed']})" if b.get("seed") else ""), ""]
    out += [f"Lab `{b.get('lab', '?')}`, started {b.get('started', '?')}, image "
            f"`{b.get('image', '?')}`. Each run: {w.get('sessions', '?')} session(s), "
            f"{w.get('redo_per_txn', '?')} B of redo per commit, rate {w.get('rate') or 'as fast as possible'}"
            f"{' commits/s' if w.get('rate') else ''}, a {w.get('warmup_s', '?')} s warm-up then "
            f"{w.get('duration_s', '?')} s measured.", "",
            f"Configurations are compared on one value per run (the run, not the commit, is the unit): "
            f"Mann-Whitney U (two-sided) and a {CI_LEVEL} bootstrap CI of the difference of the medians (the "
            f"interval at the test's level). A difference is **significant** only when p < {ALPHA} and the CI "
            f"excludes 0, **within noise** when p >= {ALPHA}, **unclear** when p < {ALPHA} but the CI spans 0; each "
            f"comparison's headline is its primary metric, whose p is Holm-adjusted over the preset's comparisons "
            f"(a family: the chance of any false claim among them stays at {ALPHA}); the secondary metrics and "
            f"each disk's BLOCKSIZE comparison are not adjusted (docs/bench-statistics.md).", ""]
    return out


def _disks_table(disks: list[Disk]) -> list[str]:
    """The disks' bus, device and sectors, and the rules engine's verdict on each BLOCKSIZE."""
    return ["## The disks as the guest showed them", ""] + render.table(
        [["disk", "bus", "device", "logical/physical (B)", "BLOCKSIZE verdicts (rules engine)"]] + [
            [d.name + (" (control)" if d.entry.get("control") else ""), str(d.entry.get("bus") or "-"),
             f"`{d.entry.get('device')}`" + (f" (device model `{d.entry['model']}`)" if d.entry.get("model") else ""),
             f"{d.entry.get('logical')}/{d.entry.get('physical')}" if d.entry.get("logical") else "no device",
             "; ".join(f"{bs}: {verdict_text(runs[0].entry['verdict'], short=True)}"
                       + (" with _disk_sector_size_override" if runs[0].entry.get("override") else "")
                       for bs, runs in d.by_blocksize().items())]
            for d in disks], numbers=False)


def _rows_present(columns: list[list[dict]]) -> list[tuple]:
    """ROWS that at least one report of these columns has (commit response and the rates only
    for open-loop runs)."""
    return [row for row in ROWS if any(row_of(r, row[1]) is not None for reports in columns for r in reports)]


def _bs_header(bs: int, runs: list[Run]) -> str:
    ran = [r for r in runs if r.report]
    marks = "".join(sorted({m for r in runs for m in [r.marks()] if m}))
    return f"{bs}{marks}" + (f" (median of {len(ran)})" if len(ran) > 1 else "")


def _disk_table(by_bs: dict[int, list[Run]], c: dict | None) -> list[str]:
    """A disk's rows: one column per BLOCKSIZE (the median of its runs when repeated) and the change."""
    header = ["BLOCKSIZE", *(_bs_header(bs, runs) for bs, runs in by_bs.items())]
    if c:
        header.append(f"{c['low']} → {c['high']}" + (" (medians)" if "medians" in c["change_of"] else ""))
    rows = [header]
    columns = [[r.report for r in runs if r.report] for runs in by_bs.values()]
    for label, get, fmt in _rows_present(columns):
        row = [label]
        for reports in columns:
            row.append(_fmt(fmt, row_value(reports, get)) if reports else "refused")
        if c:
            a, b = (row_value([r.report for r in v], get) for v in c["runs"])
            row.append(_change_text(label, c["change_pct"].get(label), a, b) if not isinstance(a, tuple) else "")
        rows.append(row)
    return render.table(rows)


def _run_name(r: Run) -> str:
    slot = r.entry.get("slot")
    return f"{r.blocksize} #{r.repeat}" + (f" (slot {slot})" if slot is not None else "") + r.marks()


# Runs per every-run table: the rows' labels and this many columns fit a 1,200 px page.
RUNS_PER_TABLE = 6


def _every_run_table(by_bs: dict[int, list[Run]]) -> list[str]:
    """A disk's rows, one column per run that ran, RUNS_PER_TABLE runs to a table."""
    ran = [r for runs in by_bs.values() for r in runs if r.report]
    out = ["Every run:", ""]
    for start in range(0, len(ran), RUNS_PER_TABLE):
        part = ran[start:start + RUNS_PER_TABLE]
        every = [["BLOCKSIZE", *(_run_name(r) for r in part)]]
        every += [[label, *(_fmt(fmt, row_of(r.report, get)) for r in part)]
                  for label, get, fmt in _rows_present([[r.report for r in ran]])]
        out += render.table(every)
    return out


def _disk_tests(by_bs: dict[int, list[Run]], c: dict | None) -> list[str]:
    """The BLOCKSIZEs the rules engine refused, then the low BLOCKSIZE tested against the high one."""
    refused = [r for runs in by_bs.values() for r in runs[:1] if not r.report]
    out = [f"- BLOCKSIZE {r.blocksize} not run: {verdict_text(r.entry['verdict'])}" for r in refused]
    if c:
        out += [f"- {c['low']} against {c['high']}: **{c['verdict']}** on `{c['primary']}` "
                f"(the last column compares {c['change_of']})"]
        out += findings.tests_lines(c, f"{c['low']}", f"{c['high']}")
    return out


def _race_and_rmw(bs: int, runs: list[Run]) -> list[str]:
    """At one BLOCKSIZE: who won a raced run's log writes, and (in a bench made before the device
    models, whose runs have an "rmw" entry) the read-modify-write reads QEMU made."""
    out = []
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
    return out


def _device_rows(bs: int, runs: list[Run]) -> list[str]:
    """At one BLOCKSIZE: what the device models saw below the guest (their host traces), beside the
    log writes redo-writer made; nothing for a disk no model served."""
    rows = devicerows.table(runs)
    if not rows:
        return []
    ran = [r.report for r in runs if r.report]
    writes = row_value(ran, lambda r: r["writes"] / r["elapsed_s"])
    size = row_value(ran, lambda r: r["bytes_written"] / r["writes"])
    return ["", f"BLOCKSIZE {bs}, below the guest (the device model's trace of each run on the host; medians "
            f"of {len(ran)} run{'s' if len(ran) > 1 else ''}; flushes counted apart from writes). "
            f"redo-writer made {_fmt('{:,.0f}', writes)} log writes/s of {_fmt('{:,.0f}', size)} bytes:", "",
            *render.table(rows), *devicerows.race_lines(bs, runs)]


def _spread_text(bs: int, runs: list[Run]) -> list[str]:
    """The spread of a BLOCKSIZE's repeats; nothing when it ran once."""
    s = spread(runs)
    if not s:
        return []
    return [f"- BLOCKSIZE {bs} repeated {s['runs']} times: transactions/s min {s['tps'][0]:,.1f}, "
            f"median {s['tps'][1]:,.1f}, max {s['tps'][2]:,.1f} (coefficient of variation "
            f"{s['tps_cv_pct']:.1f} %); log file sync p50 {s['log_file_sync_p50_ms'][0]:.3f} to "
            f"{s['log_file_sync_p50_ms'][2]:.3f} ms"]


def _pictures(pngs: list[Path], alt: str, results: Path) -> list[str]:
    alt = re.sub(r"[\[\]\\]", " ", one_line(alt))  # the picture's words, never the end of its brackets
    return ["", " ".join(f"![{alt}: {png.stem.rsplit('-', 1)[-1]}]({png.relative_to(results)})" for png in pngs), ""]


def _disk_section(d: Disk, c: dict | None, pictures: dict, results: Path, device: Disk | None = None,
                  device_c: dict | None = None, path: DevicePath | None = None) -> list[str]:
    """One disk: its rows on the guest path (and on the device path: `device`, its runs' twins),
    the refusals and the tests, the shape of each BLOCKSIZE's commit latencies, the race and the
    read-modify-writes, the repeats' spread and the pictures."""
    by_bs = d.by_blocksize()
    # Every run in a table of its own below the medians when something was repeated, so that the
    # change stays on screen.
    out = [f"## {one_line(d.name)}", "", "On the guest path:", ""] + _disk_table(by_bs, c)
    if device:
        out += [(path or DevicePath(None)).twins("model"), ""]
        out += _disk_table(device.by_blocksize(), device_c)
    if any(len(runs) > 1 for runs in by_bs.values()):
        out += _every_run_table(by_bs)
    out += _disk_tests(by_bs, c)
    for bs, runs in by_bs.items():
        out += findings.shape_line(f"BLOCKSIZE {bs}", shape(runs))
    for bs, runs in by_bs.items():
        out += _race_and_rmw(bs, runs)
    for bs, runs in by_bs.items():
        out += _device_rows(bs, runs)
    for bs, runs in by_bs.items():
        out += _spread_text(bs, runs)
    pngs = [*pictures.get(d.name, []), *([pictures[("shift", d.name)]] if pictures.get(("shift", d.name)) else [])]
    if pngs:
        out += _pictures(pngs, d.name, results)
    return out + [""]


def _comparison_section(i: int, c: dict, pictures: dict, results: Path, device: dict | None = None,
                        path: DevicePath | None = None) -> list[str]:
    """The i-th comparison across disks: its headline, both sides' rows and the change on the
    guest path and, beside them, on the device path (`device`: the same comparison of the runs'
    device-path twins), the tests of each and the pictures; or which side did not run."""
    a, b = (f"{c[k]['disk']} at {c[k]['blocksize']}" if isinstance(c[k], dict) else str(c[k]) for k in ("a", "b"))
    out = [f"### {one_line(str(c['title'] or f'comparison {i + 1}'))}", ""]
    if c.get("not_compared"):
        return out + [f"Not compared: {', '.join(c['not_compared'])} did not run.", ""]
    device = device if device and device.get("tests") else None
    path = path or DevicePath(None)
    out += [f"**{c['verdict']}** on the primary metric `{c['primary']}` on the guest path"
            + (f", **{device['verdict']}** on the {path.name}." if device else ".") , ""]
    paths = [("guest", c)] + ([("device", device)] if device else [])
    header = [""]
    columns = []
    for name, x in paths:
        medians = "medians" in x["change_of"]
        header += [f"{name}: {side}{''.join(sorted({r.marks() for r in runs}))} "
                   f"({'median of ' + str(len(runs)) + ' runs' if medians else 'one run'})"
                   for side, runs in zip((a, b), x["runs"])] + [f"{name}: change"]
        columns.append((x, [[r.report for r in runs] if medians else [runs[0].report] for runs in x["runs"]]))
    rows = [header]
    for label, get, fmt in _rows_present([reports for _, pair in columns for reports in pair]):
        row = [label]
        for x, (ra, rb) in columns:
            va, vb = row_value(ra, get), row_value(rb, get)
            row += [_fmt(fmt, va), _fmt(fmt, vb),
                    "" if isinstance(va, tuple) else _change_text(label, x["change_pct"].get(label), va, vb)]
        rows.append(row)
    out += render.table(rows)
    out += ["On the guest path:", ""] + findings.tests_lines(c, a, b)
    if device:
        out += ["", path.twins(), ""]
        out += findings.tests_lines(device, a, b)
    for k, x in (("a", a), ("b", b)):
        out += findings.shape_line(x, shape(c["runs"][0 if k == "a" else 1]))
    pngs = [p for p in (pictures.get(("comparison", i)), pictures.get(("comparison-shift", i))) if p]
    if pngs:
        out += _pictures(pngs, str(c["title"] or f"comparison {i + 1}"), results)
    return out + [""]


def _rules_section(bench: dict) -> list[str]:
    """The rules engine's verdicts inside an ASM disk group, when the preset asked for them."""
    if not bench.get("rules"):
        return []
    out = ["## The rules engine inside an ASM disk group", "",
           "Inside ASM the database sees the disk group's SECTOR_SIZE, not the disk's; "
           "`_disk_sector_size_override=TRUE` lets a BLOCKSIZE above it through (rules.evaluate on the "
           "sectors the guest showed; not run).", ""]
    rows = [["disk", "disk group SECTOR_SIZE", "BLOCKSIZE", "_disk_sector_size_override", "verdict"]]
    for v in bench["rules"]:
        rows.append([v["target"], str(v["asm_sector_size"]), str(v["blocksize"]),
                     "TRUE" if v["override"] else "FALSE", verdict_text(v["verdict"])])
    return out + render.table(rows, numbers=False)


def markdown(bench: dict, disks: list[Disk], pictures: dict, results: Path, found: Findings | None = None) -> str:
    """report.md: `pictures` are plot_findings' ("findings", the first screen's), plot_disk's per disk
    name, plot_shift's per ("shift", disk name), and per ("comparison", i) and ("comparison-shift", i)
    those of the i-th comparison across disks (from 0), files in `results`; `found` the bench's
    comparisons, computed once by the caller."""
    found = found or findings_of(bench, disks)
    why_no_device = (bench.get("device_path") or {}).get("why_not")
    path = DevicePath(bench.get("device_path"))
    picture = _pictures([pictures["findings"]], f"The findings, each comparison's b over a with its CI on the guest "
                        f"path and the {path.name}", results) if pictures.get("findings") else []
    out = _heading(bench, disks) + findings.headline_section(found.headlines, why_no_device, path, picture)
    out += findings.seed_section(found.seeds, compact=True, device=found.device_seeds)
    out += findings.design_lines(bench, disks) + _disks_table(disks)
    device_disks = {d.name: d for d in found.device_disks}
    for d in disks:
        twin = device_disks.get(d.name)
        out += _disk_section(d, found.per_disk[d.name], pictures, results, twin, found.device_per_disk.get(d.name),
                             path)
    comparisons = found.cross
    if comparisons:
        out += ["## Comparisons across disks", ""]
        for i, c in enumerate(comparisons):
            device = found.device_cross[i] if i < len(found.device_cross) else None
            out += _comparison_section(i, c, pictures, results, device, path)
    out += findings.controls_section(found.controls)
    out += findings.controls_section(found.device_controls, path.name)
    out += findings.seed_section(found.seeds)
    out += findings.held_out_section(found.held_out)
    out += _rules_section(bench)
    crosschecks = bench.get("crosschecks")
    if crosschecks:
        out += ["## Real-database cross-checks", ""]
        out += [f"- {one_line(line)}" for line in crosschecks] + [""]
    # A fence longer than any run of backticks in the commands, so that none ends it.
    host = (bench.get("device_path") or {}).get("commands") or []
    intro = [path.again()] if host else []
    commands = [one_line(c) for c in [*(bench.get("commands") or []), *intro, *host]]
    fence = "`" * max(3, 1 + max((len(m) for c in commands for m in re.findall("`+", c)), default=0))
    out += ["## How to run it again", "", fence, *commands, fence, ""]
    return "\n".join(one_line(line) for line in out)  # no text of the results directory breaks a line


