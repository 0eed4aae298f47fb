"""`sectorlab report RESULTS_DIR` of a redo bench: its results as report.md, a self-contained
report.html (pictures inline, no network, narrow screens scroll the tables) and summary.json for
machines.

A results directory holds bench.json (what ran: the workload, and per run the disk, the geometry
the guest showed, the redo BLOCKSIZE, the rules engine's verdict, the exact command, the paths of
redo-writer's --output json report and --events file), the lab's lab.json, and the runs' files
under runs/. A BLOCKSIZE the rules engine refuses has a verdict and no run: the report shows the
refusal (ORA-01378) where the numbers would be.

Per disk: the AWR-like rows of each run (medians, tails and shares over 1/10/20 ms before means),
512 against 4096 side by side, every run-level metric compared on one value per run (Mann-Whitney
and a bootstrap CI of the difference of medians, compare.py), the shape of each configuration's
commit latencies (bimodal or not), the spread of the repeats, a log-scale latency histogram, the
latency over time and the shift function. Then the preset's comparisons across disks, the control
runs beside what they control, and the seed's figures beside the lab's. The report never states a
difference without its p-value, its runs and its CI; with fewer than 2 runs a side it tests nothing.

The module reads the results directory (load), states its numbers for machines (summary) and
writes the report (write; render_png draws report.html as a reader sees it); metrics.py and
compare.py compute the numbers, plots.py draws the pictures, document.py and findings.py write the
text.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path

from .. import fields, inputs
from ..analysis import stats
from ..analysis.compare import MAX_COMPARISONS, MAX_FIGURES, Findings, findings_of, no_twice, shape
from ..analysis.metrics import ALPHA, ROWS, Disk, Run, race_wins, row_of, run_metrics, spread
from ..analysis.plots import plot_comparison, plot_disk, plot_findings, plot_shift
from ..errors import UsageError
from ..inguest.rules import VALID_BLOCKSIZES
from ..paths import slug
from . import render
from .clock import DevicePath
from .document import markdown
from .render import results_dir

# 2: comparisons test one value per run (Mann-Whitney, bootstrap CI, a primary metric) instead of
# Welch's t-test per commit; runs carry run_metrics; design, controls, seed_figures and shapes added.
# 3: headlines (each comparison on both paths, the floor's share, the path it is read from), the
# device path's comparisons and controls, and each run's device_path twin.
SUMMARY_VERSION = 3


# What the report reads of bench.json (stats.conform's shapes): every name, number and table it
# formats or computes with; keys it does not read may be anything. Disk names head sections and
# pictures: one line of at most 256 characters (a lab's are at most 31). A bench has at most
# MAX_DISKS disks (16 VMs of 31 data disks, labtables' bounds), BLOCKSIZEs are the rules engine's,
# and a configuration at most 50 repeats (a preset's bound).
MAX_DISKS = 16 * 31
_NAME = stats.Text(256)
_VERDICT = {"allowed?": (bool, None), "error?": (str, None), "blocksize?": (int, None),
            "default_blocksize?": (int, None)}
_SELECTOR = (str, {"disk": str, "blocksize": (int, str)})  # a seed figure's: "TARGET@BLOCKSIZE" or a table
_SIDE = {"disk": str, "blocksize": int}  # a comparison's side, as the preset's loader writes it
_OP = {"op?": str, "*": (stats.NUMBER, None)}
_TRACE = {"profile": str, "write?": _OP, "flush?": _OP, "read?": _OP,
          "race?": {"pairs": stats.COUNT, "first_arrived_first_pct?": stats.NUMBER, "gap_p50_us?": stats.NUMBER,
                    "abs_gap_p50_us?": stats.NUMBER}}
# The clock a bench's twins ran on (bench/clock.py's Clock.as_json; none: the real one), checked by
# clock.py.
_CLOCK = {**{f"{k}?": stats.SCALAR
             for k in ("clock", "wakeup_us", "wakeup_dist", "cpus", "cpu_dist", "log_writer_cpu_us")},
          "sources?": (None, stats.MapOf(stats.SCALAR))}
_RUN = {"disk": _NAME, "blocksize": stats.OneOf(*VALID_BLOCKSIZES), "repeat?": stats.Whole(1, 50),
        "verdict": _VERDICT, "report?": (str, None), "events?": (str, None), "control?": stats.SCALAR,
        "controls?": (str, [str], None), "override?": stats.SCALAR, "mode?": (str, None), "arrival?": (str, None),
        "rate?": (stats.NUMBER, None), "slot?": (int, str, None), "kept_up?": (bool, None), "model?": (str, None),
        "bus?": (str, None), "device?": (str, None), "logical?": (int, None), "physical?": (int, None),
        "rmw?": (None, {"rmw_reads": stats.COUNT}), "device_trace?": (None, stats.MapOf(_TRACE)),
        "command?": (str, None), "cpu_us_per_txn?": (stats.NUMBER, None),
        "device_path?": (None, {"report": str, "events?": (str, None), "command?": (str, None),
                                "reply_spin_us?": (stats.NUMBER, None), "device_trace?": (None, stats.MapOf(_TRACE)),
                                **_CLOCK})}
_FIGURE = {"lab?": (str, None), "metric?": (str, None), "a?": (_SELECTOR, None), "b?": (_SELECTOR, None),
           **{f"{k}?": stats.SCALAR for k in ("what", "seed_value", "unit", "quote", "where", "derivation", "reason")}}
BENCH = {"runs": [_RUN], "workload?": (None, stats.MapOf(stats.SCALAR)),
         "design?": (None, {"order?": (None, [stats.SCALAR]), "repeats?": (int, str, stats.MapOf(int), None),
                            "seed?": stats.SCALAR, "randomized?": stats.SCALAR}),
         "commands?": (None, [str]), "crosschecks?": (None, [str]),
         "rules?": (None, [{"target": str, "asm_sector_size": int, "blocksize": int, "override": stats.SCALAR,
                            "verdict": _VERDICT}]),
         "comparisons?": (None, [{"title?": (str, None), "a": _SIDE, "b": _SIDE, "primary?": (str, None)}]),
         "seed_figures?": (None, [_FIGURE]),
         "device_path?": (None, {"reply_spin_us?": (stats.NUMBER, None), "commands?": (None, [str]),
                                 "why_not?": (str, None), **_CLOCK}),
         **{f"{k}?": stats.SCALAR for k in ("preset", "title", "lab", "started", "image", "seed")}}
_EXPECTED = "expected what 'sectorlab bench' writes"


def _own_file(results: Path, name: str, what: str, seen: dict, limit: int) -> Path:
    """A file a run entry names: inside the results directory, regular, within `limit`, and not the
    same file as another entry's (by path or hard link: two runs never share their files, and one
    file counted twice would count its commits twice)."""
    path = inputs.inside(results, name, what)
    inputs.check_regular(path, what, limit)
    st = os.stat(path)
    other = seen.setdefault((st.st_dev, st.st_ino), what)
    if other != what:
        raise UsageError(f"{what} {name!r} is the same file as {other}; expected a file of each run's own")
    return path


def load(results: Path) -> tuple[dict, list[Disk]]:
    """bench.json and the runs it names, grouped by disk in the order they ran; a missing or
    malformed file is an error that names it."""
    results = results_dir(results)
    bench_path = results / "bench.json"
    if bench_path.is_symlink():
        inputs.inside(results, "bench.json", "bench results")  # a link is followed only within the directory
    if not bench_path.exists() and not bench_path.is_symlink():
        raise UsageError(f"{results}: no bench.json; expected a results directory written by 'sectorlab bench' "
                             f"(results/<timestamp>-<preset>/)")
    bench = stats.load_json(bench_path, "bench results", inputs.BENCH_JSON_MAX, _EXPECTED)
    if not isinstance(bench, dict) or not isinstance(bench.get("runs"), list) or not bench["runs"]:
        raise UsageError(f"{bench_path}: no 'runs' list; expected what 'sectorlab bench' writes")
    stats.conform(bench, BENCH, str(bench_path), _EXPECTED)
    _bounded(bench, str(bench_path))
    # A run is its configuration's repeat: one given twice would be counted twice in every test.
    fields.no_duplicates(f"{bench_path}: runs", "disk, BLOCKSIZE and repeat",
                         [f"{e['disk']!r} at {e['blocksize']}, repeat {e.get('repeat', 1)}" for e in bench["runs"]])
    disks: dict[str, Disk] = {}
    seen: dict[tuple[int, int], str] = {}
    for i, entry in enumerate(bench["runs"]):
        where = f"{bench_path}: runs[{i}]"
        name, blocksize, repeat = entry["disk"], entry["blocksize"], entry.get("repeat", 1)
        if name not in disks and len(disks) >= MAX_DISKS:
            raise UsageError(f"{where}: more than {MAX_DISKS} disks, more than a lab has; {_EXPECTED}")
        run = Run(name, blocksize, repeat, entry)
        if entry.get("report"):
            report_path = _own_file(results, entry["report"], f"{where}: report", seen, inputs.REPORT_JSON_MAX)
            if entry.get("events"):
                run.events = _own_file(results, entry["events"], f"{where}: events file", seen,
                                       inputs.EVENTS_CSV_MAX)
            run.report = stats.load_report(report_path)
            if entry.get("device_path"):
                run.device = _twin(results, run, entry, f"{where}: device_path", seen)
        elif entry["verdict"].get("allowed", False):
            raise UsageError(f"{where}: BLOCKSIZE {run.blocksize} is allowed on {name} but no report was kept")
        disks.setdefault(name, Disk(name, entry)).runs.append(run)
    return bench, list(disks.values())


def _bounded(bench: dict, where: str) -> None:
    """bench.json's comparisons and seed figures, as many as a preset may have (MAX_COMPARISONS,
    MAX_FIGURES: each is tested with bootstraps, so 500 copies of one comparison ran the report past
    60 s), and none given twice (Holm would count its test twice in the family)."""
    for key, most in (("comparisons", MAX_COMPARISONS), ("seed_figures", MAX_FIGURES)):
        items = bench.get(key) or []
        if len(items) > most:
            raise UsageError(f"{where}: {len(items)} {key}, more than the {most} a preset may have; {_EXPECTED}")
    compares = bench.get("comparisons") or []
    if compares:
        no_twice(f"{where}: comparisons", compares)


def _twin(results: Path, run: Run, entry: dict, where: str, seen: dict) -> Run:
    """A run's device-path twin: its entry is the run's with the device path's files, command and
    traces in place of the guest's."""
    twin = entry["device_path"]
    out = Run(run.disk, run.blocksize, run.repeat, {**entry, **twin, "path": "device"})
    out.report = stats.load_report(_own_file(results, twin["report"], f"{where}: report", seen,
                                             inputs.REPORT_JSON_MAX))
    if twin.get("events"):
        out.events = _own_file(results, twin["events"], f"{where}: events file", seen, inputs.EVENTS_CSV_MAX)
    return out


def _public(c: dict | None) -> dict | None:
    """A comparison without the runs' reports it was made from (summary.json names those files)."""
    return None if c is None else {k: v for k, v in c.items() if k not in ("values", "runs")}


_RUN_KEYS = ("slot", "control", "override", "mode", "rate", "arrival", "cpu_us_per_txn")


def _run_row(r: Run) -> dict:
    """One run in summary.json: what it was, its design facts, its rows and metrics."""
    row = {"blocksize": r.blocksize, "repeat": r.repeat, "allowed": r.entry["verdict"].get("allowed"),
           "verdict_error": r.entry["verdict"].get("error") or None, "report": r.entry.get("report"),
           **{k: r.entry[k] for k in _RUN_KEYS if k in r.entry}}
    if r.report:
        row["metrics"] = {label: row_of(r.report, get) for label, get, _ in ROWS}
        row["run_metrics"] = run_metrics(r.report)
        if race_wins(r.report):
            row["race_wins"] = race_wins(r.report)
    if r.entry.get("rmw"):
        row["rmw"] = r.entry["rmw"]
    if r.entry.get("device_trace"):
        row["device_trace"] = r.entry["device_trace"]
    if r.device is not None:
        row["device_path"] = {"report": r.device.entry.get("report"), "command": r.device.entry.get("command"),
                              "run_metrics": run_metrics(r.device.report)}
    return row


def summary(bench: dict, disks: list[Disk], found: Findings | None = None) -> dict:
    """What report.md says, for machines (summary.json)."""
    found = found or findings_of(bench, disks)
    out = {"version": SUMMARY_VERSION, "preset": bench.get("preset"), "lab": bench.get("lab"),
           "started": bench.get("started"), "workload": bench.get("workload"), "alpha": ALPHA,
           "design": bench.get("design"), "disks": []}
    for d in disks:
        e = d.entry
        item = {"disk": d.name, "bus": e.get("bus"), "geometry": e.get("geometry"), "device": e.get("device"),
                "logical_block_size": e.get("logical"), "physical_block_size": e.get("physical"), "runs": []}
        item["runs"] = [_run_row(r) for r in sorted(d.runs, key=lambda r: (r.blocksize, r.repeat))]
        item["comparison"] = _public(found.per_disk[d.name])
        item["device_comparison"] = _public(found.device_per_disk.get(d.name))
        item["spread"] = {str(bs): s for bs, runs in d.by_blocksize().items() if (s := spread(runs))}
        item["shape"] = {str(bs): s for bs, runs in d.by_blocksize().items() if (s := shape(runs))}
        out["disks"].append(item)
    out["headlines"] = found.headlines
    out["comparisons"] = [_public(c) for c in found.cross]
    out["device_path"] = {**(bench.get("device_path") or {}), "comparisons": [_public(c) for c in found.device_cross],
                          "controls": found.device_controls, "seed_figures": found.device_seeds}
    out["controls"] = found.controls
    out["seed_figures"] = found.seeds
    out["held_out"] = found.held_out
    out["rules"] = bench.get("rules") or []
    return out


def _finite(value):
    """summary.json's numbers as JSON has them: a ratio of two extreme runs that overflowed to
    infinity, or a CI that could not be computed (NaN), is null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def file_stems(names: list[str]) -> dict[str, str]:
    """Each disk name's part of its pictures' file names: the name itself when it is already a
    file name (letters, digits, '.', '_', '-'; at most 64 characters), else its slug cut to 64
    characters and the first 10 hex digits of the SHA-256 of the name, so that `x/y` and `x?y` get
    two files; a stem another name already took gets a longer hash."""
    out: dict[str, str] = {}
    taken = set()
    for name in names:
        cut, digest = slug(name)[:64], hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()
        candidates = ([name] if cut == name and name not in ("", ".", "..") else []) + [f"{cut}-{digest[:10]}",
                                                                                        f"{cut}-{digest}"]
        out[name] = next(c for c in candidates if c not in taken)
        taken.add(out[name])
    return out


def write(results: Path) -> dict[str, Path]:
    """report.md, report.html, summary.json and the pictures (report-findings.png, report-disk-*.png
    and report-comparison-*.png) in `results`, each written whole and never through a link in its place
    (the redo kind's report in kinds.py)."""
    results = results_dir(results)
    bench, disks = load(results)
    found = findings_of(bench, disks)
    pictures: dict = {}
    stems = file_stems([d.name for d in disks])
    for d in disks:
        stem = results / f"report-disk-{stems[d.name]}"
        pictures[d.name] = plot_disk(d, stem)
        c = found.per_disk[d.name]
        if c and c.get("shift"):
            sides = {"a": {"disk": d.name, "blocksize": c["low"]}, "b": {"disk": d.name, "blocksize": c["high"]}}
            pictures[("shift", d.name)] = plot_shift({**c, **sides}, stem.with_name(f"{stem.name}-shift.png"))
    device = DevicePath(bench.get("device_path"))
    pictures["findings"] = plot_findings(found.headlines, device.name, results / render.FINDINGS_PNG)
    for i, c in enumerate(found.cross):
        if "tests" in c:
            pictures[("comparison", i)] = plot_comparison(c, disks, results / f"report-comparison-{i + 1}.png")
            pictures[("comparison-shift", i)] = plot_shift(c, results / f"report-comparison-{i + 1}-shift.png")
    text = markdown(bench, disks, pictures, results, found)
    out = {**render.write(results, text), "summary": results / "summary.json"}
    stats.write_file(out["summary"], json.dumps(_finite(summary(bench, disks, found)), indent=2,
                                                allow_nan=False) + "\n")
    return out


