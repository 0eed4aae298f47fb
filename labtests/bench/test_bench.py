"""`make bench` on the default preset (labs/bench/vsphere-512e.toml), short runs, as a user runs it:
its own lab comes up and goes down, every configuration the rules engine allows runs, in the
random interleaved order bench.json records, the null: control at the same load, and what the
results directory holds is checked against the runs' own JSON and events files: every comparison
with its test, p, n and CI, the device's counters and the device models' host traces against
redo-writer's writes (and on virtio, SCSI and NVMe with labtests/support/data/bench-buses.toml). Then a
bench interrupted with Ctrl-C or killed (SIGTERM): the lab goes down and the runs done so far are
kept.

`make bench-check` runs these (CI runs it after make test); they bring their own lab up, so no
lab may be up for numbers, but nothing here asserts a number's size: only where it comes from.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import time
from pathlib import Path

import pytest

from sectorlab import bench, lab
from sectorlab.devices import profiles
from sectorlab.paths import REPO

pytestmark = pytest.mark.bench

PRESET = bench.DEFAULT_PRESET


def _preset(**overrides) -> bench.Preset:
    """The preset as make bench-check reads it (with make's LAB_SUFFIX)."""
    return bench.load_preset(PRESET, suffix=lab.suffix_from_env(), **overrides)
SHORT = {"DURATION": "3", "WARMUP": "1", "REPEATS": "2", "ORDER_SEED": "5"}


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


def test_every_allowed_configuration_ran_and_every_refused_one_is_recorded(made):
    results, stderr = made
    data = json.loads((results / "bench.json").read_text())
    preset = _preset(repeats=2)
    assert data["workload"]["duration_s"] == 3 and data["workload"]["warmup_s"] == 1
    targets = {t.name: t for t in preset.targets}
    ran = sorted((r["disk"], r["blocksize"], r["repeat"]) for r in data["runs"] if r.get("report"))
    assert ran == sorted((t.name, bs, rep) for t, bs, rep in preset.plan())
    refused = {(r["disk"], r["blocksize"]) for r in data["runs"] if not r["verdict"]["allowed"]}
    assert refused == {(t.name, bs) for t, bs in preset.refused()}
    for r in data["runs"]:
        t = targets[r["disk"]]
        if t.is_null:
            assert r["device"] == "null:" and r["control"] and r["logical"] is None
            continue
        assert (r["logical"], r["physical"]) == t.expected_sectors(), r
        v = t.verdict(r["blocksize"], (r["logical"], r["physical"]), file=r["device"])
        assert r["verdict"] == v.as_json() and r["override"] == (t.override and t.needs_override(r["blocksize"]))
        assert bool(r.get("report")) == r["verdict"]["allowed"]
    runs = len(preset.plan())
    assert f"run {runs}/{runs}:" in stderr and "0 left after it" in stderr
    assert lab.record.LabRecord.load(results / "lab.json").lab == preset.lab.name  # lab.json, as lab-up wrote it


def test_the_runs_ran_in_the_recorded_random_interleaved_order(made):
    results, stderr = made
    data = json.loads((results / "bench.json").read_text())
    preset = _preset(repeats=2)
    design = data["design"]
    assert design["seed"] == 5 and design["randomized"] and "--seed 5 repeats it" in stderr
    assert design["order"] == [s.run_id for s in preset.order(5)]
    ran = [r for r in data["runs"] if r.get("report")]
    assert [r["slot"] for r in ran] == list(range(1, len(ran) + 1))
    assert [f"{r['disk']}-bs{r['blocksize']}-{r['repeat']}" for r in ran] == design["order"]
    configs = len(preset.configs())
    first, second = ran[:configs], ran[configs:]
    assert {r["repeat"] for r in first} == {1} and {r["repeat"] for r in second} == {2}  # interleaved rounds


def test_the_control_ran_at_the_same_load(made):
    results, _ = made
    data = json.loads((results / "bench.json").read_text())
    controls = [r for r in data["runs"] if r.get("control") and r.get("report")]
    assert controls and data["controls"] == ["null"]
    w = data["workload"]
    for r in controls:
        rep = json.loads((results / r["report"]).read_text())
        assert "--target null:" in r["command"] and f"--rate {w['rate']}" in r["command"]
        assert rep["transactions"] > 0 and rep["members"][0]["path"] == "null:"


def test_the_device_counts_the_bytes_of_redo_writers_own_writes(made):
    """avg_request_bytes from /sys/block/X/stat equals redo-writer's bytes per write within 1 %:
    the empty flush requests that O_DSYNC adds on a write-back cache are not counted as writes."""
    results, _ = made
    data = json.loads((results / "bench.json").read_text())
    checked = 0
    for r in (r for r in data["runs"] if r.get("report") and not r.get("control")):
        rep = json.loads((results / r["report"]).read_text())
        m = rep["members"][0]
        assert m["device"], f"{r['disk']}: no device counters ({m.get('device_note')})"
        own = rep["bytes_written"] / m["writes"]
        assert abs(m["device"]["avg_request_bytes"] - own) <= 0.01 * own, (r["disk"], m["device"], own)
        checked += 1
    assert checked


def test_the_models_trace_sees_redo_writers_writes_and_the_page_reads_only_at_512(made):
    """Below the guest, from each run's cut of the host trace: as many writes as redo-writer made, of
    its bytes per write (within 1 %), and flushes only where the profile has a volatile cache (none
    here: every disk is presented write-through); the 512e flash (4 KiB pages) reads a page for a
    write at BLOCKSIZE 512 and none at 4096; the floor model counts the partly written 4 KiB sectors
    of the 512e geometry and charges nothing for them."""
    results, _ = made
    data = json.loads((results / "bench.json").read_text())
    seen = {}
    for r in (r for r in data["runs"] if r.get("report") and not r.get("control")):
        rep = json.loads((results / r["report"]).read_text())
        d = r["device_trace"][r["declared_disk"]]
        assert (results / d["trace"]).exists()
        w = d["write"]
        assert abs(w["count"] - rep["writes"]) <= 0.01 * rep["writes"], (r["disk"], w, rep["writes"])
        own = rep["bytes_written"] / rep["writes"]
        assert abs(w["bytes_per_request"] - own) <= 0.01 * own, (r["disk"], w, own)
        volatile = profiles.get(d["profile"]).write_cache == "volatile"
        assert (d["flush"]["count"] > 0) == volatile and w["errors"] == 0, d
        seen.setdefault((r["disk"], r["blocksize"]), []).append(w)
    flash, plain = (lambda bs, n=n: seen[(n, bs)] for n in ("flash-512e", "plain-512e"))
    assert all(w["unit_reads"] > 0 and w["rmw_reads"] == 0 for w in flash(512)), flash(512)
    assert all(w["unit_reads"] == 0 and w["rmw_reads"] == 0 for w in flash(4096)), flash(4096)
    assert all(w["rmw_reads"] > 0 and w["service_p99_us"] == 0 for w in plain(512)), plain(512)
    assert all(w["rmw_reads"] == 0 for w in plain(4096)), plain(4096)


def test_every_run_has_its_device_path_twin_on_the_same_model(made):
    """Right after each guest run, the same command on this host straight to the same model (its
    target and race replaced by the models' NBD URIs, polling for replies): its report and events
    kept beside the run's, the model's trace of it as many writes as it made, each with FUA (no
    flush), and the 512e flash's page reads at BLOCKSIZE 512 there too: the device path sees the
    device's behaviour without the guest."""
    results, _ = made
    data = json.loads((results / "bench.json").read_text())
    assert data["device_path"]["why_not"] is None and data["device_path"]["reply_spin_us"] == 1000
    ran = [r for r in data["runs"] if r.get("report")]
    assert ran and all(r.get("device_path") for r in ran), [r["disk"] for r in ran if not r.get("device_path")]
    for r in ran:
        twin = r["device_path"]
        rep = json.loads((results / twin["report"]).read_text())
        assert (results / twin["events"]).stat().st_size > 0 and twin["command"] in data["device_path"]["commands"]
        guest = shlex.split(r["command"])
        host = shlex.split(twin["command"])
        target = host[host.index("--target") + 1]
        assert host[host.index("--blocksize") + 1] == guest[guest.index("--blocksize") + 1]
        assert host[host.index("--duration") + 1] == guest[guest.index("--duration") + 1]
        if r["disk"] == "null":
            assert target == "null:" and "device_trace" not in twin
            continue
        assert target.startswith("nbd+unix:///?socket=/run/sectorlab/devices/")
        assert rep["members"][0]["transport"] == "nbd"
        d = twin["device_trace"][r["declared_disk"]]
        assert (results / d["trace"]).exists() and d["trace"] != r["device_trace"][r["declared_disk"]]["trace"]
        assert abs(d["write"]["count"] - rep["writes"]) <= 0.01 * rep["writes"] and d["flush"]["count"] == 0, d
        assert rep["members"][0]["nbd"]["fua_writes"] == rep["writes"], rep["members"][0]
        if r["disk"] == "flash-512e":
            assert (d["write"]["unit_reads"] > 0) == (r["blocksize"] == 512), (r["blocksize"], d["write"])


def test_the_report_opens_with_each_comparisons_verdict_on_both_paths(made):
    results, _ = made
    summary = json.loads((results / "summary.json").read_text())
    heads = summary["headlines"]
    assert [h["title"] for h in heads] == [c["title"] for c in _preset().compares]
    for h in heads:
        for path in ("guest", "device"):
            line = h[path]
            assert line["n"] == [2, 2] and 0 <= line["p"] <= 1 and line["floor"][0]["config"].startswith("plain-512e@")
            assert all(0 < s for s in line["floor_share_pct"]), line
        assert h["read_from"] in ("guest", "device") and h["why"]
    md = (results / "report.md").read_text()
    assert md.index("## Findings") < md.index("## The disks as the guest showed them")
    assert md.count("    - guest path: ") == md.count("    - device path: ") == len(heads)


def test_the_report_is_written_from_the_runs(made):
    results, _ = made
    summary = json.loads((results / "summary.json").read_text())
    for d in summary["disks"]:
        for run in d["runs"]:
            if run["allowed"]:
                rep = json.loads((results / run["report"]).read_text())
                assert run["metrics"]["transactions/s"] == rep["tps"]
    assert [c["title"] for c in summary["comparisons"]] == [c["title"] for c in _preset().compares]
    rules_seen = {(v["asm_sector_size"], v["blocksize"], v["override"]): v["verdict"]["allowed"]
                  for v in summary["rules"]}
    assert {k[1:]: v for k, v in rules_seen.items() if k[0] == 512} == {
        (512, False): True, (512, True): True, (4096, False): False, (4096, True): True}
    html = (results / "report.html").read_text()
    compared = sum("tests" in c for c in summary["comparisons"])
    # A shift function wherever both sides of a comparison ran at least twice with events.
    every = [d["comparison"] for d in summary["disks"]] + summary["comparisons"]
    shifts = sum(bool(c and c.get("shift")) for c in every)
    # The first screen's picture of every comparison on both paths, where any was tested.
    findings = int(any(h.get("guest") or h.get("device") for h in summary["headlines"]))
    assert findings and 'alt="The findings, each comparison' in html
    assert html.count('src="data:image/png;base64,') == 2 * len(summary["disks"]) + compared + shifts + findings


def test_every_comparison_states_its_test_p_n_and_confidence_interval(made):
    results, _ = made
    summary = json.loads((results / "summary.json").read_text())
    md = (results / "report.md").read_text()
    every = [d["comparison"] for d in summary["disks"] if d["comparison"]] + summary["comparisons"]
    assert every and all("not_compared" not in c for c in summary["comparisons"])
    for c in every:
        assert c["tests"] and c["primary"] in {t["metric"] for t in c["tests"]}, c
        for t in c["tests"]:
            assert isinstance(t["p"], float) and 0 <= t["p"] <= 1 and t["n"] == [2, 2], t
            lo, hi = t["ci"]
            assert lo <= hi, t
            assert t["verdict"] in ("significant", "within noise", "unclear"), t
            if t["verdict"] == "significant":  # never called significant against its own interval
                assert lo > 0 or hi < 0, t
        assert c["min_p_note"], c  # 2 + 2 runs cannot reach p < 0.01, and the report says so
    assert "Mann-Whitney" in md
    seeds = summary["seed_figures"]
    assert len(seeds) == len(_preset().seed_figures) and all(s["agreement"] for s in seeds)


BUSES = REPO / "labtests" / "support" / "data" / "bench-buses.toml"


def test_the_device_counts_redo_writers_writes_on_virtio_scsi_and_nvme(tmp_path):
    """A preset given by its path (one 512n disk on each bus): on every bus the device's counters
    (/sys/block/X/stat) give redo-writer's own bytes per write within 1 %, and as many writes; each
    disk reads as its profile's write cache (the floor: write through), so no write carries a flush."""
    preset = bench.load_preset(str(BUSES), suffix=lab.suffix_from_env())
    proc = subprocess.run([str(REPO / ".venv/bin/sectorlab"), "bench", str(BUSES), "--results", str(tmp_path),
                           "--seed", "3"], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-1500:]
    assert _lab_is_gone(preset) == []
    (results,) = tmp_path.iterdir()
    data = json.loads((results / "bench.json").read_text())
    seen = set()
    for r in data["runs"]:
        rep = json.loads((results / r["report"]).read_text())
        m = rep["members"][0]
        assert m["device"], f"{r['disk']}: no device counters ({m.get('device_note')})"
        own = rep["bytes_written"] / m["writes"]
        assert abs(m["device"]["writes"] - m["writes"]) <= 0.01 * m["writes"], (r["bus"], m)
        assert abs(m["device"]["avg_request_bytes"] - own) <= 0.01 * own, (r["bus"], m["device"], own)
        assert m["device"]["write_cache"] == "write through", m["device"]  # the floor: no cache
        assert m["device"]["empty_flush_writes"] == 0, m["device"]
        seen.add(r["bus"])
    assert seen == {"virtio", "scsi", "nvme"}


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
