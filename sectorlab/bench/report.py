"""`sectorlab report RESULTS_DIR`: a bench's results as report.md, a self-contained report.html
(pictures inline, no network, narrow screens scroll the tables) and summary.json for machines.

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

import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Callable

from .. import inputs
from ..errors import SectorlabError, UsageError
from ..paths import slug
from . import stats
from .compare import Findings, findings_of, shape
from .document import _change_text, html, markdown  # noqa: F401 (_change_text: the unit tests read it here)
from .metrics import ALPHA, ROWS, Disk, Run, _value, race_wins, run_metrics, spread
from .plots import plot_comparison, plot_disk, plot_shift

# 2: comparisons test one value per run (Mann-Whitney, bootstrap CI, a primary metric) instead of
# Welch's t-test per commit; runs carry run_metrics; design, controls, seed_figures and shapes added.
SUMMARY_VERSION = 2


def _need(entry: dict, key: str, where: str):
    if key not in entry:
        raise UsageError(f"{where}: no '{key}'; expected a run entry as sectorlab bench writes it")
    return entry[key]


def load(results: Path) -> tuple[dict, list[Disk]]:
    """bench.json and the runs it names, grouped by disk in the order they ran; a missing or
    malformed file is an error that names it."""
    results = Path(results)
    bench_path = results / "bench.json"
    if bench_path.is_symlink():
        inputs.inside(results, "bench.json", "bench results")  # a link is followed only within the directory
    if not bench_path.exists() and not bench_path.is_symlink():
        raise UsageError(f"{results}: no bench.json; expected a results directory written by 'sectorlab bench' "
                             f"(results/<timestamp>-<preset>/)")
    try:
        bench = json.loads(inputs.read_text(bench_path, "bench results", inputs.BENCH_JSON_MAX))
    except (ValueError, RecursionError) as e:
        raise UsageError(f"{bench_path}: not JSON ({e})") from e
    if not isinstance(bench, dict) or not isinstance(bench.get("runs"), list) or not bench["runs"]:
        raise UsageError(f"{bench_path}: no 'runs' list; expected what 'sectorlab bench' writes")
    disks: dict[str, Disk] = {}
    for i, entry in enumerate(bench["runs"]):
        where = f"{bench_path}: runs[{i}]"
        if not isinstance(entry, dict):
            raise UsageError(f"{where}: {str(entry)[:60]!r} is not a run entry; expected what 'sectorlab bench' writes")
        name = _need(entry, "disk", where)
        blocksize, verdict = _need(entry, "blocksize", where), _need(entry, "verdict", where)
        repeat = entry.get("repeat", 1)
        if not isinstance(name, str) or not all(isinstance(v, int) and not isinstance(v, bool)
                                                for v in (blocksize, repeat)) or not isinstance(verdict, dict):
            raise UsageError(f"{where}: disk {name!r}, blocksize {blocksize!r}, repeat {repeat!r}, verdict "
                             f"{str(verdict)[:40]!r}: expected a name, two whole numbers and a table, as 'sectorlab "
                             f"bench' writes them")
        run = Run(name, blocksize, repeat, entry)
        if entry.get("report"):
            run.report = stats.load_report(inputs.inside(results, entry["report"], f"{where}: report"))
            if entry.get("events"):
                run.events = inputs.inside(results, entry["events"], f"{where}: events file")
                inputs.check_regular(run.events, f"{where}: events file", inputs.EVENTS_CSV_MAX)
        elif entry["verdict"].get("allowed", False):
            raise UsageError(f"{where}: BLOCKSIZE {run.blocksize} is allowed on {name} but no report was kept")
        disks.setdefault(name, Disk(name, entry)).runs.append(run)
    return bench, list(disks.values())


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
        row["metrics"] = {label: _value(r.report, get) for label, get, _ in ROWS}
        row["run_metrics"] = run_metrics(r.report)
        if race_wins(r.report):
            row["race_wins"] = race_wins(r.report)
    if r.entry.get("rmw"):
        row["rmw"] = r.entry["rmw"]
    if r.entry.get("device_trace"):
        row["device_trace"] = r.entry["device_trace"]
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
        item["spread"] = {str(bs): s for bs, runs in d.by_blocksize().items() if (s := spread(runs))}
        item["shape"] = {str(bs): s for bs, runs in d.by_blocksize().items() if (s := shape(runs))}
        out["disks"].append(item)
    out["comparisons"] = [_public(c) for c in found.cross]
    out["controls"] = found.controls
    out["seed_figures"] = found.seeds
    out["rules"] = bench.get("rules") or []
    return out


def write(results: Path) -> dict[str, Path]:
    """report.md, report.html, summary.json and the pictures (report-*.png) in `results`."""
    results = Path(results)
    if (results / "appliance.json").exists():  # an appliance bench (seed 004): its own tables
        from . import appliancereport
        return appliancereport.write(results)
    bench, disks = load(results)
    found = findings_of(bench, disks)
    pictures = {}
    for d in disks:
        pictures[d.name] = plot_disk(d, results / f"report-{slug(d.name)}")
        c = found.per_disk[d.name]
        if c and c.get("shift"):
            sides = {"a": {"disk": d.name, "blocksize": c["low"]}, "b": {"disk": d.name, "blocksize": c["high"]}}
            pictures[("shift", d.name)] = plot_shift({**c, **sides}, results / f"report-{slug(d.name)}-shift.png")
    for i, c in enumerate(found.cross, 1):
        if "tests" in c:
            pictures[("comparison", c["title"])] = plot_comparison(c, disks, results / f"report-comparison-{i}.png")
            pictures[("shift", c["title"])] = plot_shift(c, results / f"report-comparison-{i}-shift.png")
    text = markdown(bench, disks, pictures, results, found)
    out = {"md": results / "report.md", "html": results / "report.html", "summary": results / "summary.json"}
    out["md"].write_text(text)
    out["html"].write_text(html(text, results))
    out["summary"].write_text(json.dumps(summary(bench, disks, found), indent=2) + "\n")
    return out


# Chromium with no way out: every host name resolves to nothing, and its background services
# (updates, sync, metrics) are off; the report is a local file.
_CHROMIUM_FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
                   "--disable-background-networking", "--disable-component-update", "--disable-sync",
                   "--disable-default-apps", "--host-resolver-rules=MAP * ~NOTFOUND"]
# CSS pixels: the screens' widths. Chromium's --screenshot shoots the window, not the page: the
# window is made as tall as the page measures at that width (its scrollHeight, read back from the
# DOM by a first run), of at most PNG_MAX_PIXELS (a 1,200 x 60,000 px shot took 37 s against 2.4 s
# at 1,200 x 20,000).
SCREENS = {"desktop": 1200, "phone": 412}
PNG_MAX_PIXELS = 1200 * 40000
_HEIGHT_RE = re.compile(r'data-sectorlab-height="(\d+)"')


def render_png(html_path: Path, screens: dict[str, int] = SCREENS,
               progress: Callable[[str], None] = lambda msg: None) -> dict[str, Path]:
    """report.html as a reader sees it, one PNG per screen (report-desktop.png, report-phone.png),
    drawn by headless Chromium (scripts/bootstrap installs it), as tall as the page (a page
    larger than PNG_MAX_PIXELS is cut there, and said)."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        raise SectorlabError("chromium is not installed: run 'scripts/bootstrap --all' (it installs Debian's chromium)")
    out = {}
    for name, width in screens.items():
        height = _page_height(browser, html_path, width)
        png = html_path.with_name(f"report-{name}.png")
        if height > PNG_MAX_PIXELS // width:
            progress(f"{png.name}: the page is {height:,} px tall at {width} px wide; drawn to "
                     f"{PNG_MAX_PIXELS // width:,} px (report.html has all of it)")
            height = PNG_MAX_PIXELS // width
        _chromium(browser, html_path, f"--window-size={width},{height}", f"--screenshot={png}")
        if not png.is_file():
            raise SectorlabError(f"chromium drew no {png.name} of {html_path}")
        out[name] = png
    return out


def _page_height(browser: str, html_path: Path, width: int) -> int:
    """The page's height in CSS pixels at this width: a copy of it beside it (its relative links
    hold) with a script that writes document.documentElement.scrollHeight into the DOM Chromium dumps."""
    probe = html_path.with_name(f".{html_path.stem}-height.html")
    probe.write_text(html_path.read_text() + "<script>document.body.setAttribute('data-sectorlab-height', "
                     "Math.ceil(document.documentElement.scrollHeight))</script>")
    try:
        dom = _chromium(browser, probe, f"--window-size={width},800", "--dump-dom")
    finally:
        probe.unlink(missing_ok=True)
    found = _HEIGHT_RE.search(dom)
    if not found:
        raise SectorlabError(f"chromium gave no height of {html_path} at {width} px")
    return int(found.group(1))


def _chromium(browser: str, html_path: Path, *args: str) -> str:
    with tempfile.TemporaryDirectory(prefix="sectorlab-chromium-") as profile:
        proc = subprocess.run([browser, *_CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args,
                               html_path.resolve().as_uri()], capture_output=True, text=True, timeout=180)
    if proc.returncode != 0:
        raise SectorlabError(f"chromium could not draw {html_path} (exit {proc.returncode}): "
                             f"{proc.stderr.strip()[-400:]}")
    return proc.stdout
