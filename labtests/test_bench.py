"""`make bench` on the default preset (labs/bench/vsphere-512e.toml), short runs, as a user runs it:
its own lab comes up and goes down, every BLOCKSIZE the rules engine allows on each disk runs, and
what the results directory holds is checked against the runs' own JSON and events files. Then a
bench interrupted with Ctrl-C or killed (SIGTERM): the lab goes down and the runs done so far are kept.

`make bench-check` runs these (CI runs it after make test); they bring their own lab up, so no
lab may be up for numbers, but nothing here asserts a number's size: only where it comes from.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from sectorlab import bench, lab
from sectorlab.inguest import rules
from sectorlab.paths import REPO

pytestmark = pytest.mark.bench

PRESET = bench.DEFAULT_PRESET


def _preset(**overrides) -> bench.Preset:
    """The preset as make bench-check reads it (with make's LAB_SUFFIX)."""
    return bench.load_preset(PRESET, suffix=lab.suffix_from_env(), **overrides)
SHORT = {"DURATION": "3", "WARMUP": "1", "REPEATS": "1"}


def _lab_is_gone(preset: bench.Preset) -> list[str]:
    left = lab.leftovers_of(preset.lab.name, preset.lab.vms[0].libvirt_uri)
    if lab.state_dir(preset.lab.name).exists():
        left.append(str(lab.state_dir(preset.lab.name)))
    return left


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """One `make bench` of the default preset: its results directory and what it printed."""
    results = tmp_path_factory.mktemp("results")
    proc = subprocess.run(["make", "--no-print-directory", "bench", f"PRESET={PRESET}", f"RESULTS={results}",
                           *(f"{k}={v}" for k, v in SHORT.items())], cwd=REPO, capture_output=True, text=True,
                          timeout=900)
    print(proc.stderr[-3000:])
    assert proc.returncode == 0, f"make bench exited {proc.returncode}: {proc.stderr[-1500:]}"
    dirs = sorted(results.iterdir())
    assert len(dirs) == 1 and dirs[0].name.endswith(f"-{PRESET}"), dirs
    return dirs[0], proc.stderr


def test_the_lab_is_down_after_the_bench(made):
    assert _lab_is_gone(_preset()) == []


def test_every_allowed_blocksize_ran_and_every_refused_one_is_recorded(made):
    results, stderr = made
    data = json.loads((results / "bench.json").read_text())
    preset = _preset(repeats=1)
    assert data["workload"]["duration_s"] == 3 and data["workload"]["warmup_s"] == 1
    declared = {d.name: d for d in preset.lab.vms[0].disks}
    seen = {(r["disk"], r["blocksize"]) for r in data["runs"]}
    assert seen == {(t.name, bs) for t in preset.targets for bs in preset.blocksizes}
    for r in data["runs"]:
        g = declared[r["declared_disk"]].geometry
        assert (r["logical"], r["physical"]) == (g.logical_block_size, g.physical_block_size), r
        assert r["verdict"] == rules.evaluate(r["logical"], r["physical"], r["blocksize"], file=r["device"]).as_json()
        assert bool(r.get("report")) == r["verdict"]["allowed"]
    runs = len(preset.plan())
    assert f"run {runs}/{runs}:" in stderr and "0 left after it" in stderr
    assert lab.record.LabRecord.load(results / "lab.json").lab == preset.lab.name  # lab.json, as lab-up wrote it


def test_each_run_is_the_workload_and_its_files_agree(made):
    results, _ = made
    data = json.loads((results / "bench.json").read_text())
    w = data["workload"]
    for r in (r for r in data["runs"] if r.get("report")):
        rep = json.loads((results / r["report"]).read_text())
        assert f"--blocksize {r['blocksize']} --sessions {w['sessions']} --redo-per-txn {w['redo_per_txn']}" \
               in r["command"]
        assert rep["transactions"] > 0 and rep["bytes_written"] % r["blocksize"] == 0
        assert rep["redo_bytes"] == rep["transactions"] * w["redo_per_txn"]
        if r["blocksize"] == 4096:
            assert rep["writes_under_4k"] == 0
        with (results / r["events"]).open() as f:
            kinds = [row[0] for row in csv.reader(f)]
        assert kinds.count("log_file_parallel_write") == rep["writes"]
        assert kinds.count("log_file_sync") == rep["log_file_sync"]["count"] == rep["transactions"]
        assert r["command"] in data["commands"]


def test_read_modify_write_reads_only_where_the_drive_must(made):
    results, _ = made
    data = json.loads((results / "bench.json").read_text())
    rmw = {r["blocksize"]: r["rmw"] for r in data["runs"] if r["disk"] == "rmw-512e" and r.get("report")}
    assert rmw[512]["rmw_reads"] > 0 and rmw[4096]["rmw_reads"] == 0, rmw
    assert not any("rmw" in r for r in data["runs"] if r["disk"] == "plain-512e")


def test_the_report_is_written_from_the_runs(made):
    results, _ = made
    summary = json.loads((results / "summary.json").read_text())
    for d in summary["disks"]:
        for run in d["runs"]:
            if run["allowed"]:
                rep = json.loads((results / run["report"]).read_text())
                assert run["metrics"]["transactions/s"] == rep["tps"]
    assert [c["title"] for c in summary["comparisons"]] == [c["title"] for c in _preset().compares]
    assert {(v["blocksize"], v["override"]): v["verdict"]["allowed"] for v in summary["rules"]} == {
        (512, False): True, (512, True): True, (4096, False): False, (4096, True): True}
    html = (results / "report.html").read_text()
    compared = sum("tests" in c for c in summary["comparisons"])
    # A shift function wherever both sides of a comparison ran at least twice with events.
    every = [d["comparison"] for d in summary["disks"]] + summary["comparisons"]
    shifts = sum(bool(c and c.get("shift")) for c in every)
    assert html.count('src="data:image/png;base64,') == 2 * len(summary["disks"]) + compared + shifts


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_an_interrupted_bench_brings_the_lab_down_and_keeps_its_runs(tmp_path, signum):
    preset = _preset()
    # SIGINT as a terminal's Ctrl-C delivers it: a shell that started this run in the background
    # (CI scripts do) makes its children ignore SIGINT, and Python then never raises KeyboardInterrupt.
    proc = subprocess.Popen([str(REPO / ".venv/bin/sectorlab"), "bench", PRESET, "--duration", "20", "--warmup", "1",
                             "--results", str(tmp_path)], stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    lines = []
    deadline = time.monotonic() + 600
    try:
        for line in proc.stderr:
            lines.append(line)
            if line.startswith("sectorlab: run 2/"):
                time.sleep(3)  # inside the second run's warm-up or measured run
                os.kill(proc.pid, signum)
                break
            assert time.monotonic() < deadline, "".join(lines[-20:])
        lines += proc.stderr.readlines()
        rc = proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    said = "".join(lines[-15:])
    assert rc == 130, said
    assert "interrupted: bringing the lab down" in said and f"lab {preset.lab.name} is down" in said
    assert _lab_is_gone(preset) == []
    (results,) = tmp_path.iterdir()
    data = json.loads((results / "bench.json").read_text())
    kept = [r for r in data["runs"] if r.get("report")]
    assert len(kept) == 1 and Path(results / kept[0]["report"]).is_file(), data["runs"]
