"""`sectorlab report DIR` re-renders every results directory the project writes, each by its kind
(sectorlab/report/kinds.py): a directory of each of the seven kinds, made as its command leaves it
(its record and its runs' files), gets report.md and report.html from the one renderer; the record
files of KINDS are exactly the ones the project's commands write; a results directory is never of
two kinds. A new kind added as one module and one entry is test_bench_kinds.py's."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from labtests.unit.analysis.test_compare import fake_report
from labtests.unit.bench import test_load as load_tests
from labtests.unit.crash.test_crash_databases import _row
from labtests.unit.report.test_hostile_results import appliance_doc, make_results, run_cli
from sectorlab.paths import REPO
from sectorlab.report import kinds

CUT = {"run": 0, "kind": "window", "cut_us": 1000.0, "acknowledged": 512, "durable": 3, "lost": 1, "torn": 1,
       "units_unreadable": 0, "recovered_to": 512, "end_reason": "unwritten", "torn_blocks": 1, "torn_header_ok": 0,
       "unreadable_blocks": 0,
       "valid_after_end": 0, "lost_bytes": 0, "lost_commits": 0, "corrupt_undetected": 0}


def _crash(path: Path) -> None:
    cell = {"cell": "hdd-7200-client/sector512e@512", "profile": "hdd-7200-client", "geometry": "sector512e",
            "blocksize": 512, "override": False, "power_loss": "unprotected", "write_cache": "none",
            "atomic_unit": 4096, "cannot_lose": None,
            "runs": [{"seed": 1, "writes": 4, "fua_writes": 4, "flushes": 0, "transactions": 4, "span_us": 1e6,
                      "window_us": 117.0, "exposure": 1.17e-4, "partial_unit_writes": 4, "command": []}],
            "cuts": [CUT, {**CUT, "lost_commits": 1, "lost_bytes": 512}, {**CUT, "kind": "uniform"}]}
    (path / "crash.json").write_text(json.dumps({
        "preset": "small", "title": "t", "seed": 7, "runs": 1, "cuts": 2, "uniform_cuts": 1, "at_ms": None,
        "atomic": None, "wall_s": 1,
        "load": {"sessions": 1, "redo_per_txn": 512, "rate": 10, "seconds": 1, "log_size": 1 << 20},
        "forbidden": [{"cell": "hdd-7200-client/sector4k@512", "why": "ORA-01378"}], "cells": [cell]}))


def _crash_db(path: Path) -> None:
    rows = [_row("mariadb-doublewrite-off")] * 3 + [_row("mariadb-doublewrite-on")] * 3
    (path / "crash-db.json").write_text(json.dumps({
        "lab": "crash-db", "judges": ["mariadb-doublewrite-on", "mariadb-doublewrite-off"], "cuts": 3, "seed": 1,
        "rows_per_table": 20000, "checkpoint_every": 50, "min_acks": 150, "rows": rows, "wall_s": 9}))


def _sweep(path: Path) -> None:
    (path / "runs").mkdir()
    runs = []
    for value in ("0", "64k"):
        for config, ms in (("flash@512", 1.0), ("flash@4096", 0.5)):
            for i in range(3):
                name = f"runs/{value}-{config.replace('@', '-')}-{i}.json"
                (path / name).write_text(json.dumps(fake_report(ms + 0.01 * i)))
                runs.append({"value": value, "config": config, "repeat": i + 1, "report": name})
    (path / "sweep.json").write_text(json.dumps({
        "preset": "tiny", "seed": "", "title": "tiny", "order_seed": 5, "repeats": 3, "reply_spin_us": 1000,
        "wall_s": 1, "runs": runs,
        "sweep": {"param": "write-buffer", "profile": "nvme-512e", "values": ["0", "64k"], "range": "r",
                  "profiles": {"nvme-512e": "write-buffer"}, "own": "0"},
        "workload": {"sessions": 1, "redo_per_txn": 512, "rate": 200, "arrival": "poisson", "warmup_s": 1,
                     "duration_s": 1},
        "comparisons": [{"title": "512 against 4096", "a": {"disk": "flash", "blocksize": 512},
                         "b": {"disk": "flash", "blocksize": 4096}, "primary": "log_file_sync_p50_ms"}]}))


def _load(path: Path, tmp_path: Path) -> None:
    made, _ = load_tests._results(tmp_path / "load-made", {"flash@512": [fake_report(1.0)] * 2,
                                                           "flash@4096": [fake_report(0.5)] * 2})
    for p in made.rglob("*"):
        if p.is_file() and not p.name.startswith(("report", "summary")):
            (path / p.relative_to(made)).parent.mkdir(parents=True, exist_ok=True)
            (path / p.relative_to(made)).write_bytes(p.read_bytes())


def _probe(path: Path) -> None:
    """A probe.json as sectorlab probe writes it, from a fit of made-up times (a 4 KiB unit)."""
    from sectorlab.probe import fit, patterns
    times = {f.name: [100.0 + i + (300 if f.name.startswith("mis") and f.size >= 4096 else 0) for i in range(30)]
             for f in patterns.figures(512)}
    found = fit.fit(times, None, 512)
    (path / "probe.json").write_text(json.dumps({
        "target": "/srv", "kind": "file", "device": "ACME SSD 123 (/dev/sda)", "queue": {"write_cache": "write back"},
        "logical": 512, "samples": 30, "seed": 1, "date": "2026-11-29", "host": "h", "floor": None,
        "summaries": {k: v.as_dict() for k, v in found.summaries.items()}, "unit": found.unit,
        "steps": [s.said() for s in found.unit_steps], "reads_first": None, "merges": None,
        "params": found.params, "notes": found.notes, "times_us": times, "net_us": found.net, "floor_us": None,
        "append_run": patterns.APPEND_RUN}))


MAKERS = {"redo": lambda p, t: make_results(p), "appliance": lambda p, t: (p / "appliance.json").write_text(
    json.dumps(appliance_doc())), "sweep": lambda p, t: _sweep(p), "load": _load, "crash": lambda p, t: _crash(p),
    "crash-db": lambda p, t: _crash_db(p), "probe": lambda p, t: _probe(p)}


def test_the_kinds_are_every_record_the_commands_write():
    """Every results record a command writes (write_atomic(results / "NAME.json", ...) in
    sectorlab/; lab.json beside it is the lab's, summary.json a report's) is a kind's, and every
    kind's record is written by a command."""
    written = set()
    for path in (REPO / "sectorlab").rglob("*.py"):
        written |= set(re.findall(r'write_atomic\((?:self\.)?results / "([a-z-]+\.json)"', path.read_text()))
    written -= {"summary.json", "lab.json"}
    assert written == {k.results_file for k in kinds.KINDS}, written
    assert sorted(MAKERS) == sorted(k.name for k in kinds.KINDS)


@pytest.mark.parametrize("kind", [k.name for k in kinds.KINDS])
def test_sectorlab_report_re_renders_every_kind(tmp_path, capsys, kind):
    results = tmp_path / "results"
    results.mkdir()
    MAKERS[kind](results, tmp_path)
    assert kinds.kind_of(results).name == kind
    rc, err = run_cli(capsys, ["report", str(results)])
    assert rc == 0, err
    md, page = (results / "report.md").read_text(), (results / "report.html").read_text()
    assert md.startswith("# ") and page.startswith("<!DOCTYPE html>") and "<table>" in page
    first = md.splitlines()[0][2:]
    assert first.replace("`", "") in page.replace("<code>", "").replace("</code>", "") or first in md
    again = {p.name: p.read_bytes() for p in results.iterdir() if p.name.startswith(("report", "summary"))}
    assert run_cli(capsys, ["report", str(results)])[0] == 0
    assert again == {p.name: p.read_bytes() for p in results.iterdir() if p.name.startswith(("report", "summary"))}, \
        "re-rendering the same results gives the same bytes"
