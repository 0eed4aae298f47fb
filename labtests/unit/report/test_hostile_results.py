"""The hostile-input campaign on the commands that read a results directory: `sectorlab report DIR`
(bench.json, the runs' redo-writer reports and events files, appliance.json), `sectorlab compare`
and `sectorlab plot`. Results directories are made here from synthetic redo-writer reports and
events files (no bench, no redo-writer run).

What must hold for any input: exit 0, or exactly one line with exit 2; no traceback; nothing
written outside the directory (a symbolic link in it is replaced, never written through); no
markup from the data in report.html; bounded time. Each explicit case is one input of the campaign
(docs/reliability.md counts them); each class also has a hypothesis property over its surface."""

from __future__ import annotations

import copy
import html.parser
import json
import os
import shutil
import signal
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from labtests.support.depth import examples
from sectorlab import cli
from sectorlab.analysis import compare, stats
from sectorlab.report import redo as report
from sectorlab.report import render

PROPERTY = settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                             HealthCheck.function_scoped_fixture])

_EVENT = {"count": 300, "mean_us": 119.2, "stddev_us": 51.8, "p50_us": 109.4, "p95_us": 198.9, "p99_us": 228.2,
          "max_us": 390.9, "over_1ms_pct": 0.0, "over_10ms_pct": 0.0, "over_20ms_pct": 0.0}
# A redo-writer --output json report as redo-writer writes it (a run of 300 commits, cut to what
# the report reads and a little more).
REPORT = {"target": "/tmp/t.log", "blocksize": 512, "sessions": 2, "elapsed_s": 0.018, "transactions": 300,
          "tps": 16565.2, "redo_bytes": 210000, "bytes_written": 256000, "wastage_pct": 14.84, "writes": 200,
          "writes_under_4k": 200, "write_mb_s": 14.136, "arrival": "closed", "offered_rate": 0.0,
          "achieved_rate": 16565.2, "kept_up": True, "cpu_us_per_txn": 0,
          "log_file_parallel_write": {**_EVENT, "count": 200, "mean_us": 77.4},
          "log_file_sync": _EVENT, "commit_response": _EVENT,
          "members": [{"path": "/tmp/t.log", "wins": 0, "writes": 200, "device": None}]}
EVENTS_HEADER = "event,end_us,latency_us\n"


def events_text(n: int = 60, names=("log_file_sync", "log_file_parallel_write")) -> str:
    rows = [f"{name},{100.0 * i + 7},{50.0 + (i * 37) % 200}" for i in range(n) for name in names]
    return EVENTS_HEADER + "\n".join(rows) + "\n"


def make_results(path: Path, disks=("d1",), blocksizes=(512, 4096), events: bool = True, **bench) -> Path:
    """A results directory as 'sectorlab bench' leaves it: bench.json and per run its report and
    (with `events`) its events file under runs/."""
    (path / "runs").mkdir(parents=True, exist_ok=True)
    runs = []
    for d, disk in enumerate(disks):
        for bs in blocksizes:
            rid = f"runs/{d}-bs{bs}-1"
            (path / f"{rid}.json").write_text(json.dumps(REPORT))
            entry = {"disk": disk, "vm": "host", "bus": "virtio", "geometry": "sector512e", "device": "/dev/vdb",
                     "logical": 512, "physical": 4096, "blocksize": bs, "repeat": 1,
                     "verdict": {"allowed": True, "blocksize": bs, "default_blocksize": 512},
                     "report": f"{rid}.json", "command": "redo-writer run"}
            if events:
                (path / f"{rid}.csv").write_text(events_text())
                entry["events"] = f"{rid}.csv"
            runs.append(entry)
    (path / "bench.json").write_text(json.dumps({"preset": "unit", "lab": "none", "started": "2026-11-26",
                                                 "runs": runs, **bench}))
    return path


def side(disk: str, blocksize) -> dict:
    """A comparison's side as bench.json has it."""
    return {"disk": disk, "blocksize": blocksize}


def run_cli(capsys, argv: list[str], seconds: float = 30) -> tuple[int, str]:
    """The command's status and stderr: 0, or 2 with one line; never a traceback; within `seconds`
    (an alarm ends a command that blocks, as on a FIFO, so that the test fails instead of hanging)."""
    def blocked(signum, frame):
        raise TimeoutError(f"{argv} took over {seconds} s")
    previous = signal.signal(signal.SIGALRM, blocked)
    signal.alarm(int(seconds) + 1)
    start = time.monotonic()
    try:
        try:
            rc = cli.main(argv)
        except SystemExit as e:  # argparse
            rc = e.code
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    took = time.monotonic() - start
    _, err = capsys.readouterr()
    assert took < seconds, f"{argv} took {took:.1f} s"
    assert "Traceback" not in err
    if rc != 0:
        assert rc == 2, err
        assert err.count("\n") == 1 and err.startswith("sectorlab"), err
    return rc, err


def snapshot(root: Path, skip: Path) -> dict[str, bytes | str]:
    """Every file under `root` but those under `skip`, and its bytes (a link: its target)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        if Path(dirpath) == skip or skip in Path(dirpath).parents:
            continue
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            p = Path(dirpath, name)
            out[str(p)] = os.readlink(p) if p.is_symlink() else p.read_bytes()
    return out


class Tags(html.parser.HTMLParser):
    """The tags and attributes of a page."""

    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


class Visible(html.parser.HTMLParser):
    """The text a reader sees of a fragment (entities decoded, tags left out)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []

    def handle_data(self, data):
        self.text.append(data)


ALLOWED_TAGS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "h4", "p", "table", "thead",
                "tbody", "tr", "th", "td", "code", "pre", "strong", "em", "ul", "ol", "li", "img", "span", "hr", "br",
                "blockquote"}


def assert_no_markup_from_data(page: str) -> None:
    """report.html holds only the converter's own elements: no script, link, frame or handler; a
    picture only as a data: URI."""
    parser = Tags()
    parser.feed(page)
    for tag, attrs in parser.tags:
        assert tag in ALLOWED_TAGS, (tag, attrs)
        assert not any(name.startswith("on") for name in attrs), (tag, attrs)
        if tag == "img":
            assert attrs["src"].startswith("data:image/png;base64,"), attrs
        assert "href" not in attrs, (tag, attrs)  # no link at all


# --- 1. report writes only into DIR: a symbolic link in it is replaced, never written through ----

LINKED = ["report.md", "report.html", "summary.json", "report-disk-d1-histogram.png", "report-disk-d1-over-time.png",
          "report-comparison-1.png"]


@pytest.mark.parametrize("name", LINKED)
@pytest.mark.parametrize("target", ["existing", "dangling"])
def test_a_symlink_in_the_results_directory_is_replaced_not_written_through(tmp_path, capsys, name, target):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim").write_text("precious")
    results = make_results(tmp_path / "r", comparisons=[{"title": "c", "a": side("d1", 512), "b": side("d1", 4096)}])
    (results / name).symlink_to(outside / ("victim" if target == "existing" else "new"))
    before = snapshot(tmp_path, results)
    rc, err = run_cli(capsys, ["report", str(results)])
    assert rc == 0, err
    assert snapshot(tmp_path, results) == before  # the victim unchanged, nothing new beside it
    assert not (results / name).is_symlink() and (results / name).stat().st_size > 0


@pytest.mark.parametrize("name", ["report.md", "summary.json", "report-disk-d1-histogram.png"])
@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_a_fifo_or_directory_where_the_report_writes_is_one_line(tmp_path, capsys, name, kind):
    results = make_results(tmp_path / "r")
    os.mkfifo(results / name) if kind == "fifo" else (results / name).mkdir()
    rc, err = run_cli(capsys, ["report", str(results)], seconds=20)
    assert rc == 2 and name in err, err
    assert (results / name).is_fifo() if kind == "fifo" else (results / name).is_dir()


def test_a_planted_link_under_the_pages_probe_name_is_not_followed(tmp_path, monkeypatch):
    """--png measures the page in a copy: that copy is made in a directory of sectorlab's own, so a
    link planted in DIR under any name is never written through."""
    outside = tmp_path / "victim"
    outside.write_text("precious")
    results = make_results(tmp_path / "r", events=False)
    report.write(results)
    (results / ".report-height.html").symlink_to(outside)
    seen = []

    def chromium(browser, page, *args):
        seen.append(Path(page))
        shot = next((a.split("=", 1)[1] for a in args if a.startswith("--screenshot=")), None)
        if shot:
            Path(shot).write_bytes(b"\x89PNG shot")
        return '<body data-sectorlab-height="900">'
    monkeypatch.setattr(render, "_chromium", chromium)
    monkeypatch.setattr(render.shutil, "which", lambda name: "/usr/bin/chromium")
    (results / "report-desktop.png").symlink_to(outside)
    out = render.render_png(results / "report.html", {"desktop": 800})
    assert outside.read_text() == "precious"
    assert out["desktop"].read_bytes() == b"\x89PNG shot" and not out["desktop"].is_symlink()
    assert all(results not in p.parents for p in seen), seen


# --- 2. report.html: text from the results directory is text, escaped once -----------------------

XSS = "<img src=x onerror=alert(1)>"
PAGES = [  # (where in bench.json, the value, what the reader must see on the page, escaped once)
    ("disk", XSS, "&lt;img src=x onerror=alert(1)&gt;"),
    ("disk", "<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"),
    ("disk", "a&lt;b", "a&amp;lt;b"),
    ("disk", "[click](javascript:alert(1))", "click"),
    ("disk", "![x](report-../../etc/passwd.png)", "x"),
    ("title", "x\n<script>alert(1)</script>", "x\\n&lt;script&gt;"),  # the break shown as its escape
    ("title", XSS, "&lt;img src=x onerror=alert(1)&gt;"),
    ("preset", "</title><script>alert(1)</script>", "&lt;/title&gt;&lt;script&gt;"),
    ("device", "`" + XSS, "&lt;img src=x onerror=alert(1)&gt;"),
    ("verdict-error", "ORA-01378 " + XSS, "&lt;img src=x onerror=alert(1)&gt;"),
    ("comparison-title", XSS, "&lt;img src=x onerror=alert(1)&gt;"),
    ("seed-quote", '"><svg onload=alert(1)>', "&gt;&lt;svg onload=alert(1)&gt;"),
    ("command", "```\n" + XSS, "&lt;img src=x onerror=alert(1)&gt;"),
    ("crosscheck", "<iframe src=//x>", "&lt;iframe src=//x&gt;"),
    ("model", "<a href=javascript:alert(1)>x</a>", "&lt;a href=javascript:alert(1)&gt;x&lt;/a&gt;"),
    ("disk", "&amp;&#x3c;", "&amp;amp;&amp;#x3c;"),
]


def _bench_with(results: Path, where: str, value: str) -> None:
    bench = json.loads((results / "bench.json").read_text())
    runs = bench["runs"]
    if where == "disk":
        for r in runs:
            r["disk"] = value
    elif where in ("device", "model"):
        runs[0][where] = value
    elif where == "verdict-error":
        runs.append({**runs[0], "blocksize": 1024, "report": None, "events": None,
                     "verdict": {"allowed": False, "error": value}})
    elif where == "comparison-title":
        bench["comparisons"] = [{"title": value, "a": side(runs[0]["disk"], 512), "b": side(runs[0]["disk"], 4096)}]
    elif where == "seed-quote":
        bench["seed_figures"] = [{"what": value, "quote": value, "lab": "value", "metric": "tps",
                                  "a": f"{runs[0]['disk']}@512", "seed_value": 1}]
    elif where == "command":
        bench["commands"] = [value]
    elif where == "crosscheck":
        bench["crosschecks"] = [value]
    else:
        bench[where] = value
    (results / "bench.json").write_text(json.dumps(bench))


@pytest.mark.parametrize("where,value,seen", PAGES, ids=[f"{w}-{i}" for i, (w, _, _) in enumerate(PAGES)])
def test_text_from_the_results_directory_is_never_markup(tmp_path, capsys, where, value, seen):
    results = make_results(tmp_path / "r", events=where == "disk")
    _bench_with(results, where, value)
    rc, err = run_cli(capsys, ["report", str(results)])
    assert rc == 0, err
    page = (results / "report.html").read_text()
    assert_no_markup_from_data(page)
    assert seen in page, seen
    assert "&amp;lt;img" not in page.replace("a&amp;lt;b", "")  # escaped once, not twice


def test_the_appliance_pages_text_is_never_markup(tmp_path, capsys):
    results = tmp_path / "a"
    results.mkdir()
    doc = appliance_doc()
    doc["title"] = XSS
    doc["shares"][0]["note"] = "<script>alert(1)</script>"
    (results / "appliance.json").write_text(json.dumps(doc))
    rc, err = run_cli(capsys, ["report", str(results)])
    assert rc == 0, err
    page = (results / "report.html").read_text()
    assert_no_markup_from_data(page)
    assert "<title>&lt;img src=x onerror=alert(1)&gt;</title>" in page and "&lt;script&gt;alert(1)" in page


def test_the_reports_own_pictures_are_still_inline(tmp_path, capsys):
    results = make_results(tmp_path / "r", disks=(XSS,))
    rc, err = run_cli(capsys, ["report", str(results)])
    assert rc == 0, err
    page = (results / "report.html").read_text()
    assert page.count('src="data:image/png;base64,') == 2 and 'alt="&lt;img src=x' in page


def test_a_picture_the_text_names_is_inlined_only_when_it_is_a_small_regular_file(tmp_path, capsys):
    results = make_results(tmp_path / "r", disks=("![f](report-fifo.png) ![b](report-big.png) ![l](report-link.png)",),
                           events=False)
    os.mkfifo(results / "report-fifo.png")
    with open(results / "report-big.png", "wb") as f:
        f.truncate(render.PICTURE_MAX + 1)
    (results / "report-link.png").symlink_to(tmp_path / "secret")
    (tmp_path / "secret").write_bytes(b"\x89PNG secret")
    rc, err = run_cli(capsys, ["report", str(results)], seconds=20)
    assert rc == 0, err
    page = (results / "report.html").read_text()
    assert_no_markup_from_data(page)
    assert "data:image" not in page and "<span>f</span>" in page


# --- 3. appliance.json read as the run files are: bounded, regular, inside, of its shape --------

def appliance_doc() -> dict:
    op = {"count": 4, "bytes_per_request": 4096.0, "rmw_reads": 0, "unit_reads": 0}
    run = {"share": "DATAFILES", "repeat": 1, "latency_us": [1000.0 * i for i in range(1, 11)],
           "granted": {"vers": "3"}, "nfs": {"write_ops": 4, "commit_ops": 0, "read_ops": 0, "write_bytes": 32768},
           "devices": {"disk-a": {"write": op, "read": op}, "ssd-a": {"write": op, "read": op}}}
    share = {"name": "DATAFILES", "seed_row": True, "note": "", "log_layout": None, "dataset": "df",
             "properties": {"logbias": "latency", "recordsize": "8K"},
             "workload": {"name": "datafile", "description": "8 KiB writes", "size": 8192, "count": 4,
                          "file_mib": 1, "pattern": "random"}}
    return {"preset": "zfs-appliance", "kind": "appliance", "seed": "004", "title": "t", "lab": "zfs",
            "mount": "rw", "pool": {"data": ["disk-a"], "data_layout": "stripe", "log": ["ssd-a"],
                                    "log_layout": "striped", "ashift": None},
            "shares": [share], "design": {"seed": 1, "repeats": 1, "order": ["DATAFILES#1"]},
            "started": "2026-11-26", "image": "img", "zfs_version": "2.1", "runs": [run]}


def _mutated(change) -> str:
    doc = appliance_doc()
    change(doc)
    return json.dumps(doc)


APPLIANCE = [  # (id, how appliance.json is made, what the line says)
    ("dev-zero", "link:/dev/zero", "leads out of"),
    ("outside-file", "link:outside", "leads out of"),
    ("fifo", "fifo", "a FIFO"),
    ("directory", "dir", "a directory"),
    ("list", "[]", "not a table"),
    ("string", '"x"', "not a table"),
    ("empty-object", "{}", "no run finished"),
    ("nan", '{"runs": [NaN]}', "NaN"),
    ("infinity", '{"runs": [1e400]}', "beyond a float's range"),
    ("not-json", "{runs", "not JSON"),
    ("deep", "[" * 5000 + "]" * 5000, "nested"),
    ("no-pool", _mutated(lambda d: d.pop("pool")), "no 'pool'"),
    ("latency-empty", _mutated(lambda d: d["runs"][0].update(latency_us=[])), "no write timed"),
    ("latency-text", _mutated(lambda d: d["runs"][0].update(latency_us=["x"])), "latency_us[0] 'x'"),
    ("count-zero", _mutated(lambda d: d["shares"][0]["workload"].update(count=0)), "workload.count 0"),
    ("huge-int", _mutated(lambda d: d["shares"][0]["workload"].update(size=10 ** 400)), "workload.size"),
    ("runs-dict", _mutated(lambda d: d.update(runs={"a": 1})), "runs {'a': 1}"),
    ("devices-list", _mutated(lambda d: d["runs"][0].update(devices=[1])), "devices [1]"),
    ("share-name-list", _mutated(lambda d: d["shares"][0].update(name=["x"])), "name ['x']"),
    ("negative-writes", _mutated(lambda d: d["runs"][0]["nfs"].update(write_ops=-5)), "write_ops -5"),
]


@pytest.mark.parametrize("how,says", [c[1:] for c in APPLIANCE], ids=[c[0] for c in APPLIANCE])
def test_an_appliance_record_that_is_not_one_is_one_line(tmp_path, capsys, how, says):
    results = tmp_path / "a"
    results.mkdir()
    path = results / "appliance.json"
    if how.startswith("link:"):
        target = how[5:]
        if target == "outside":
            target = tmp_path / "elsewhere.json"
            target.write_text(json.dumps(appliance_doc()))
        path.symlink_to(target)
    elif how == "fifo":
        os.mkfifo(path)
    elif how == "dir":
        path.mkdir()
    else:
        path.write_text(how)
    rc, err = run_cli(capsys, ["report", str(results)], seconds=20)
    assert rc == 2 and says in err, err
    assert sorted(p.name for p in results.iterdir()) == ["appliance.json"]  # nothing written


def test_a_fifo_named_report_md_beside_appliance_json_is_one_line(tmp_path, capsys):
    results = tmp_path / "a"
    results.mkdir()
    (results / "appliance.json").write_text(json.dumps(appliance_doc()))
    os.mkfifo(results / "report.md")
    rc, err = run_cli(capsys, ["report", str(results)], seconds=20)
    assert rc == 2 and "report.md" in err and "FIFO" in err, err


# --- 4. the run files: a line where a traceback was --------------------------------------------

def _report_with(change) -> str:
    r = copy.deepcopy(REPORT)
    change(r)
    return json.dumps(r)


RUN_FILES = [  # (id, the first run's redo-writer report, what the line says)
    ("no-tps", _report_with(lambda r: r.pop("tps")), "no 'tps'"),
    ("no-elapsed", _report_with(lambda r: r.pop("elapsed_s")), "no 'elapsed_s'"),
    ("nan", json.dumps(REPORT).replace('"tps": 16565.2', '"tps": NaN'), "NaN"),
    ("infinity", json.dumps(REPORT).replace('"tps": 16565.2', '"tps": Infinity'), "Infinity"),
    ("1e308", json.dumps(REPORT).replace('"tps": 16565.2', '"tps": 1e308'), "tps 1e+308"),
    ("1e400", json.dumps(REPORT).replace('"tps": 16565.2', '"tps": 1e400'), "beyond a float's range"),
    ("huge-int", json.dumps(REPORT).replace('"writes": 200', '"writes": ' + "9" * 400), "writes 999"),
    ("negative", _report_with(lambda r: r.update(writes=-1)), "writes -1"),
    ("text-number", _report_with(lambda r: r.update(tps="fast")), "tps 'fast'"),
    ("bool-number", _report_with(lambda r: r.update(writes=True)), "writes True"),
    ("event-list", _report_with(lambda r: r.update(log_file_sync=[1])), "log_file_sync [1]"),
    ("event-no-p50", _report_with(lambda r: r["log_file_sync"].pop("p50_us")), "no 'p50_us'"),
    ("members-dict", _report_with(lambda r: r.update(members={"a": 1})), "members {'a': 1}"),
    ("member-no-path", _report_with(lambda r: r.update(members=[{"wins": 3}, {"wins": 4}])), "no 'path'"),
    ("list", "[1, 2]", "no 'log_file_sync' and 'writes'"),
    ("empty", "", "not JSON"),
]


@pytest.mark.parametrize("text,says", [c[1:] for c in RUN_FILES], ids=[c[0] for c in RUN_FILES])
def test_a_run_report_that_is_not_one_is_one_line(tmp_path, capsys, text, says):
    results = make_results(tmp_path / "r", events=False)
    (results / "runs/0-bs512-1.json").write_text(text)
    rc, err = run_cli(capsys, ["report", str(results)])
    assert rc == 2 and says in err and "0-bs512-1.json" in err, err
    rc, err = run_cli(capsys, ["compare", str(results / "runs/0-bs512-1.json"), str(results / "runs/0-bs4096-1.json")])
    assert rc == 2 and says in err, err


BENCH_JSON = [  # (id, a change of bench.json, what the line says)
    ("runs-missing", lambda b: b.pop("runs"), "no 'runs' list"),
    ("disk-number", lambda b: b["runs"][0].update(disk=5), "disk 5"),
    ("disk-long", lambda b: b["runs"][0].update(disk="x" * 300), "runs[0].disk"),
    ("blocksize-odd", lambda b: b["runs"][0].update(blocksize=513), "blocksize 513"),
    ("repeat-zero", lambda b: b["runs"][0].update(repeat=0), "repeat 0"),
    ("verdict-error-number", lambda b: b["runs"][0]["verdict"].update(error=5), "error 5"),
    ("controls-number", lambda b: b["runs"][0].update(controls=5), "controls 5"),
    ("workload-list", lambda b: b.update(workload=[1]), "workload [1]"),
    ("design-order-number", lambda b: b.update(design={"order": 5}), "design.order 5"),
    ("comparison-no-b", lambda b: b.update(comparisons=[{"a": side("d1", 512)}]), "no 'b'"),
    ("comparison-primary-list",
     lambda b: b.update(comparisons=[{"a": side("d1", 512), "b": side("d1", 4096), "primary": []}]), "primary []"),
    ("comparison-text-side", lambda b: b.update(comparisons=[{"a": "d1@512", "b": side("d1", 4096)}]),
     "comparisons[0].a 'd1@512'"),
    ("comparison-blocksize-text", lambda b: b.update(comparisons=[{"a": side("d1", "x"), "b": side("d1", 4096)}]),
     "comparisons[0].a.blocksize 'x'"),
    ("seed-figure-metric-list", lambda b: b.update(seed_figures=[{"lab": "value", "metric": ["tps"]}]),
     "metric ['tps']"),
    ("rules-no-target", lambda b: b.update(rules=[{"blocksize": 512}]), "no 'target'"),
    ("commands-numbers", lambda b: b.update(commands=[1]), "commands[0] 1"),
    ("device-trace-strings",
     lambda b: b["runs"][0].update(device_trace={"x": {"profile": "p", "write": {"count": "a"}}}), "count 'a'"),
    ("rmw-text", lambda b: b["runs"][0].update(rmw={"rmw_reads": "many"}), "rmw_reads 'many'"),
    ("key-with-newline", lambda b: b.update(workload={"a\nb": [1]}), "workload.'a\\nb' [1]"),
    ("too-many-disks", lambda b: b.update(runs=[{**b["runs"][0], "disk": f"d{i}", "report": None, "events": None,
                                                 "verdict": {"allowed": False}} for i in range(600)]),
     "more than 496 disks"),
]


@pytest.mark.parametrize("change,says", [c[1:] for c in BENCH_JSON], ids=[c[0] for c in BENCH_JSON])
def test_a_bench_json_that_is_not_one_is_one_line(tmp_path, capsys, change, says):
    results = make_results(tmp_path / "r", events=False)
    bench = json.loads((results / "bench.json").read_text())
    change(bench)
    (results / "bench.json").write_text(json.dumps(bench))
    rc, err = run_cli(capsys, ["report", str(results)])
    assert rc == 2 and says in err, err


DIRECTORIES = [  # (id, what DIR is, what the line says)
    ("missing", "missing", "no such directory"),
    ("a-file", "file", "not a directory"),
    ("bench-json-dir", "bench-dir", "a directory"),
    ("bench-json-list", "bench-list", "no 'runs' list"),
    ("bench-json-fifo", "bench-fifo", "a FIFO"),
    ("bench-json-dev-zero", "bench-zero", "leads out of"),
    ("nul-in-name", "nul", "expected a file name"),
]


@pytest.mark.parametrize("kind,says", [c[1:] for c in DIRECTORIES], ids=[c[0] for c in DIRECTORIES])
def test_a_results_directory_that_is_not_one_is_one_line(tmp_path, capsys, kind, says):
    results = tmp_path / "r"
    if kind == "file":
        results.write_text("x")
    elif kind.startswith("bench"):
        results.mkdir()
        bench = results / "bench.json"
        {"bench-dir": bench.mkdir, "bench-list": lambda: bench.write_text("[]"),
         "bench-fifo": lambda: os.mkfifo(bench), "bench-zero": lambda: bench.symlink_to("/dev/zero")}[kind]()
    elif kind == "nul":
        results = make_results(results, events=False)
        bench = json.loads((results / "bench.json").read_text())
        bench["runs"][0]["report"] = "runs/a\0b.json"
        (results / "bench.json").write_text(json.dumps(bench))
    rc, err = run_cli(capsys, ["report", str(results)], seconds=20)
    assert rc == 2 and says in err, err


EVENTS = [  # (id, the first run's events file, what the line says; None: the report is made)
    ("header-only", EVENTS_HEADER, None),
    ("no-log-writes", events_text(names=("log_file_sync",)), None),
    ("no-commits", events_text(names=("log_file_parallel_write",)), None),
    ("commit-response-only", events_text(names=("commit_response",)), None),
    ("one-event", EVENTS_HEADER + "log_file_sync,1,1\n", None),
    ("zero-latencies", EVENTS_HEADER + "log_file_sync,1,0\nlog_file_sync,2,0\n", None),
    ("nan", EVENTS_HEADER + "log_file_sync,1,nan\n", "expected 0 to 1e+15"),
    ("inf", EVENTS_HEADER + "log_file_sync,1,inf\n", "expected 0 to 1e+15"),
    ("1e308", EVENTS_HEADER + "log_file_sync,1,1e308\n", "expected 0 to 1e+15"),
    ("negative", EVENTS_HEADER + "log_file_sync,1,-5\n", "expected 0 to 1e+15"),
    ("many-names", EVENTS_HEADER + "".join(f"e{i},1,1\n" for i in range(3000)), "at most 16 event names"),
    ("long-name", EVENTS_HEADER + "x" * 100 + ",1,1\n", "at most 16 event names of 1 to 64"),
    ("empty-name", EVENTS_HEADER + ",1,1\n", "event ''"),
    ("name-control", EVENTS_HEADER + "log\x1b[2Jsync,1,1\n", "on one line"),
    ("long-line", EVENTS_HEADER + "log_file_sync,1," + "1" * 100_000 + "\n", "line"),
    ("blank-line", EVENTS_HEADER + "\n", "not enough values"),
]


@pytest.mark.parametrize("text,says", [c[1:] for c in EVENTS], ids=[c[0] for c in EVENTS])
def test_an_events_file_of_any_content_is_drawn_or_one_line(tmp_path, capsys, text, says):
    results = make_results(tmp_path / "r")
    (results / "runs/0-bs512-1.csv").write_text(text)
    rc, err = run_cli(capsys, ["report", str(results)])
    assert (rc, says is None or says in err) == (0 if says is None else 2, True), err
    rc, err = run_cli(capsys, ["plot", str(results / "runs/0-bs512-1.csv"), "-o", str(tmp_path / "p.png")])
    if says is not None:
        assert rc == 2 and says in err, err


# --- plot: its output and its text ----------------------------------------------------------------

PLOT = [  # (id, extra arguments, what the line says; None: drawn)
    ("output-missing-dir", ["-o", "{tmp}/no/such/dir/p.png"], "no/such/dir"),
    ("output-is-dir", ["-o", "{tmp}"], "a directory"),
    ("output-unwritable", ["-o", "/proc/sectorlab-plot.png"], "/proc"),
    ("output-fifo", ["-o", "{tmp}/fifo.png"], "FIFO"),
    ("output-unknown-format", ["-o", "{tmp}/p.xyz"], "'.xyz' is not a picture format"),
    ("output-no-suffix", ["-o", "{tmp}/plain"], None),
    ("output-svg", ["-o", "{tmp}/p.svg"], None),
    ("title-mathtext", ["--title", "$\\badmacro{$", "-o", "{tmp}/p.png"], None),
    ("title-dollars", ["--title", "$$$ $x^2$ \\frac{", "-o", "{tmp}/p.png"], None),
    ("title-long", ["--title", "t" * 5000, "-o", "{tmp}/p.png"], "--title"),
    ("title-newline", ["--title", "a\nb", "-o", "{tmp}/p.png"], "--title"),
]


@pytest.mark.parametrize("args,says", [c[1:] for c in PLOT], ids=[c[0] for c in PLOT])
def test_plot_draws_or_says_why_not_in_one_line(tmp_path, capsys, args, says):
    events = tmp_path / "e.csv"
    events.write_text(events_text())
    os.mkfifo(tmp_path / "fifo.png")
    rc, err = run_cli(capsys, ["plot", str(events), *(a.replace("{tmp}", str(tmp_path)) for a in args)])
    assert (rc, says is None or says in err) == (0 if says is None else 2, True), err
    assert (tmp_path / "fifo.png").is_fifo()


def test_event_and_disk_names_with_mathtext_are_drawn_as_text(tmp_path, capsys):
    events = tmp_path / "e.csv"
    events.write_text(events_text(names=("$\\badmacro{$", "log_file_sync")))
    rc, err = run_cli(capsys, ["plot", str(events), "-o", str(tmp_path / "p.png")])
    assert rc == 0, err
    results = make_results(tmp_path / "r", disks=("$\\badmacro{$", "$x^{"))
    rc, err = run_cli(capsys, ["report", str(results)])
    assert rc == 0, err


def test_plot_writes_over_a_link_at_its_output_not_through_it(tmp_path, capsys):
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (tmp_path / "p.png").symlink_to(victim)
    events = tmp_path / "e.csv"
    events.write_text(events_text())
    rc, err = run_cli(capsys, ["plot", str(events), "-o", str(tmp_path / "p.png")])
    assert rc == 0 and victim.read_text() == "precious" and not (tmp_path / "p.png").is_symlink(), err


# --- two names for one thing ------------------------------------------------------------------------

NAMES = [["x/y", "x?y"], ["x_y", "x/y"], ["a b", "a_b", "a?b"], ["comparison-1", "d1"], ["..", "."],
         ["", "_"], ["x" * 200, "x" * 201], ["é", "e", "_"]]


@pytest.mark.parametrize("names", NAMES, ids=range(len(NAMES)))
def test_disks_whose_names_slug_alike_get_pictures_of_their_own(tmp_path, capsys, names):
    results = make_results(tmp_path / "r", disks=names, comparisons=[
        {"title": "c", "a": side(names[0], 512), "b": side(names[1], 4096)}])
    rc, err = run_cli(capsys, ["report", str(results)])
    assert rc == 0, err
    stems = report.file_stems(names)
    assert len(set(stems.values())) == len(names)
    pngs = sorted(p.name for p in results.glob("report-*.png"))
    assert len(pngs) == len(set(pngs)) == 2 * len(names) + 1
    md = (results / "report.md").read_text()
    for name in names:  # each disk's section shows its own pictures
        assert f"report-disk-{stems[name]}-histogram.png" in md
    assert all(len(p) < 255 for p in pngs)


def test_a_stem_another_name_took_gets_a_longer_one():
    hashed = report.file_stems(["x/y"])["x/y"]
    stems = report.file_stems(["x/y", hashed])
    assert len(set(stems.values())) == 2 and stems[hashed] != hashed


@pytest.mark.parametrize("how", ["hard-link", "same-path", "link-to-report"])
def test_two_runs_never_share_a_file(tmp_path, capsys, how):
    """40 hard links of one 45 MB events file took 1.9 GB: a file counted twice is refused, naming
    both runs (two runs of a bench never share their files)."""
    results = make_results(tmp_path / "r")
    bench = json.loads((results / "bench.json").read_text())
    if how == "hard-link":
        os.link(results / "runs/0-bs512-1.csv", results / "runs/copy.csv")
        bench["runs"][1]["events"] = "runs/copy.csv"
    elif how == "same-path":
        bench["runs"][1]["events"] = bench["runs"][0]["events"]
    else:
        bench["runs"][1]["events"] = bench["runs"][0]["report"]
    (results / "bench.json").write_text(json.dumps(bench))
    rc, err = run_cli(capsys, ["report", str(results)])
    assert rc == 2 and "is the same file as" in err and "runs[0]" in err and "runs[1]" in err, err


def test_the_latencies_kept_in_memory_stay_within_their_bound(tmp_path, monkeypatch):
    monkeypatch.setattr(compare, "SYNC_CACHE_MAX", 3000)
    compare._sync_cache.clear()
    for i in range(10):
        path = tmp_path / f"{i}.csv"
        path.write_text(events_text(n=100 + i))
        assert len(compare.sync_ms(path)) == 100 + i
        assert sum(v.nbytes for v in compare._sync_cache.values()) <= 3000 or len(compare._sync_cache) == 1
    compare._sync_cache.clear()


# --- properties ----------------------------------------------------------------------------------

TEXT = st.text(st.characters(codec="utf-8"), max_size=30) | st.sampled_from(
    [XSS, "<script>x</script>", "$\\badmacro{$", "x/y", "&lt;", "[a](javascript:x)", "`", "|", "\n", "\u2028"])
NUMBERS = st.integers(min_value=-(2 ** 70), max_value=2 ** 70) | st.floats(allow_nan=False, allow_infinity=False)
SCALARS = st.none() | st.booleans() | NUMBERS | TEXT
JSONISH = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
                       max_leaves=8)


def _paths(value, prefix=()):
    """Every place in a JSON value (a tuple of keys and indexes), the value's own included."""
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*prefix, i))


def _replace(value, path, new):
    if not path:
        return new
    value[path[0]] = _replace(value[path[0]], path[1:], new)
    return value


def _mutate(data, draw) -> object:
    """`data` with one place replaced by any JSON value, or a key of a table removed."""
    paths = list(_paths(data))
    path = draw(st.sampled_from(paths))
    if path and draw(st.booleans()):
        parent = data
        for key in path[:-1]:
            parent = parent[key]
        if isinstance(parent, dict):
            del parent[path[-1]]
            return data
    return _replace(data, path, draw(JSONISH))


@pytest.fixture(scope="module")
def base_results(tmp_path_factory):
    path = make_results(tmp_path_factory.mktemp("base"), events=False, comparisons=[
        {"title": "c", "a": side("d1", 512), "b": side("d1", 4096)}],
        seed_figures=[{"what": "w", "lab": "ratio", "metric": "tps", "a": "d1@512", "b": "d1@4096", "seed_value": 1}],
        design={"seed": 1, "order": ["d1@512#1"], "repeats": {"d1": 1}}, rules=[
            {"target": "d1", "asm_sector_size": 512, "blocksize": 512, "override": False,
             "verdict": {"allowed": True}}], commands=["make bench"], crosschecks=["ok"], title="t")
    return path, json.loads((path / "bench.json").read_text())


def _outside_unchanged(tmp_path, results, run):
    before = snapshot(tmp_path, results)
    out = run()
    assert snapshot(tmp_path, results) == before
    return out


@PROPERTY
@given(data=st.data())
def test_any_bench_json_is_a_report_or_one_line(tmp_path_factory, capsys, base_results, data):
    base, bench = base_results
    tmp = tmp_path_factory.mktemp("bench")
    results = tmp / "r"
    results.mkdir()
    shutil.copytree(base / "runs", results / "runs")
    mutated = _mutate(copy.deepcopy(bench), data.draw)
    (results / "bench.json").write_text(json.dumps(mutated))
    rc, err = _outside_unchanged(tmp, results, lambda: run_cli(capsys, ["report", str(results)], seconds=20))
    if rc == 0:
        assert_no_markup_from_data((results / "report.html").read_text())
        json.loads((results / "summary.json").read_text(), parse_constant=lambda c: pytest.fail(c))


@settings(max_examples=examples(12), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(names=st.lists(TEXT.filter(lambda t: len(t) <= 256), min_size=1, max_size=2, unique=True))
def test_any_disk_names_give_a_safe_page_and_pictures_of_their_own(tmp_path_factory, capsys, names):
    tmp = tmp_path_factory.mktemp("names")
    results = make_results(tmp / "r", disks=names, blocksizes=(512,))
    rc, err = _outside_unchanged(tmp, results, lambda: run_cli(capsys, ["report", str(results)]))
    if rc == 0:
        assert_no_markup_from_data((results / "report.html").read_text())
        assert len(list(results.glob("report-disk-*.png"))) == 2 * len(names)
    else:  # only a name the report refuses: a control character
        assert any(stats._CONTROL.search(n) for n in names), err


@PROPERTY
@given(data=st.data())
def test_any_appliance_json_is_a_report_or_one_line(tmp_path_factory, capsys, data):
    tmp = tmp_path_factory.mktemp("appl")
    results = tmp / "a"
    results.mkdir()
    (results / "appliance.json").write_text(json.dumps(_mutate(appliance_doc(), data.draw)))
    rc, _ = _outside_unchanged(tmp, results, lambda: run_cli(capsys, ["report", str(results)], seconds=20))
    if rc == 0:
        assert_no_markup_from_data((results / "report.html").read_text())


@PROPERTY
@given(data=st.data(), alpha=st.sampled_from(["0.05", "0.5"]) | st.text(max_size=8))
def test_any_pair_of_run_reports_is_compared_or_one_line(tmp_path_factory, capsys, data, alpha):
    tmp = tmp_path_factory.mktemp("cmp")
    a, b = tmp / "a.json", tmp / "b.json"
    a.write_text(json.dumps(_mutate(copy.deepcopy(REPORT), data.draw)))
    b.write_text(json.dumps(REPORT | {"log_file_sync": {**_EVENT, "mean_us": 130.0}}))
    run_cli(capsys, ["compare", str(a), str(b), f"--alpha={alpha}"])


ROW = st.tuples(st.sampled_from(["log_file_sync", "log_file_parallel_write", "commit_response", "$x^{", ""]) | TEXT,
                st.sampled_from(["1", "0", "1e308", "nan", "-1", "2.5"]) | st.text(max_size=6),
                st.sampled_from(["1", "0", "1e308", "inf", "-3", "250"]) | st.text(max_size=6))


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(rows=st.lists(ROW, max_size=8), header=st.sampled_from([EVENTS_HEADER, "event,end_us\n", ""]))
def test_any_events_file_is_plotted_or_one_line(tmp_path_factory, capsys, rows, header):
    tmp = tmp_path_factory.mktemp("ev")
    events = tmp / "e.csv"
    with open(events, "w", newline="") as f:
        f.write(header + "".join(",".join(r) + "\n" for r in rows))
    out = tmp / "out"
    out.mkdir()
    _outside_unchanged(tmp, out, lambda: run_cli(capsys, ["plot", str(events), "-o", str(out / "p.png")]))


@settings(max_examples=examples(200), deadline=None)
@given(text=TEXT)
def test_any_text_in_a_table_or_heading_reads_as_itself(tmp_path_factory, text):
    """The page's one escaper: whatever a name holds, the page has no markup of it, and its visible
    text is the name's (line breaks as spaces)."""
    md = "\n".join([f"# {render.one_line(text)}", "", f"## {render.one_line(text)}", "",
                    *render.table([["a", "b"], [text, "x"]])])
    page = render.html(md, tmp_path_factory.getbasetemp())
    assert_no_markup_from_data(page)
    shown = render.one_line(text)
    if not any(c in shown for c in "\\`*_[]!#|") and shown.strip() and shown == shown.strip():
        # Without markdown's own characters, the name reads back exactly: escaped once, not twice.
        parser = Visible()
        parser.feed(page.split("<h2>", 1)[1].split("</h2>", 1)[0])
        assert "".join(parser.text) == shown

