"""bench-sweep (sectorlab/bench/sweep.py): a preset's [[bench.sweep]] checked before anything
starts (one line for a profile the preset does not use, a parameter the profile lacks, a value the
model refuses, fewer than two values), where each headline flips across the values, and a real
sweep on this host's models in a few seconds (nbdkit, the filter, redo-writer over libnbd)."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from labtests.unit.analysis.test_compare import runs
from sectorlab import bench
from sectorlab.bench.devicepath import sweep
from sectorlab.devices import trace
from sectorlab.errors import UsageError
from sectorlab.paths import REPO
from sectorlab.report import sweep as report_sweep

TINY = '''
[lab]
name = "sweep-unit"
[[vm]]
name = "lab1"
guest = "debian12"
[[vm.disk]]
name = "flash"
bus = "virtio"
geometry = "sector512e"
device = "nvme-512e"
size_mib = 64
[[vm.disk]]
name = "floor"
bus = "virtio"
geometry = "sector512e"
device = "floor"
size_mib = 64
[bench]
sessions = 1
redo_per_txn = 512
rate = 200
warmup_s = 1
duration_s = 1
log_size_mib = 8
blocksizes = [512, 4096]
repeats = 2
[[bench.compare]]
title = "512 against 4096 on the flash"
a = "flash@512"
b = "flash@4096"
'''
SWEEP = '''
[[bench.sweep]]
param = "write-buffer"
profile = "nvme-512e"
values = ["0", "64k"]
range = "none to 16 units"
'''


def tiny_preset(tmp_path, bench_tables: str):
    """The TINY lab with these [bench] tables after it, read as a preset."""
    path = tmp_path / "tiny.toml"
    path.write_text(TINY + bench_tables)
    return bench.load_preset(str(path))


def _preset(tmp_path, sweep_text: str = SWEEP):
    return tiny_preset(tmp_path, sweep_text)


def test_a_presets_sweep_is_read_with_the_profiles_own_value(tmp_path):
    (s,) = _preset(tmp_path).sweeps
    assert (s.param, s.profile, s.values, s.own) == ("write-buffer", "nvme-512e", ("0", "64k"), "0")
    assert [p.param for p in bench.load_preset("vsphere-512e").sweeps] == ["write-buffer", "read", "write"]


@pytest.mark.parametrize("change, says", [
    (("nvme-512e", "intel-p3700"), "profile = 'intel-p3700': no disk of the preset is served by it; expected one "
                                   "of floor, nvme-512e"),
    (('"write-buffer"', '"cache-hit"'), "param = 'cache-hit': profile 'nvme-512e' has no such parameter"),
    (('["0", "64k"]', '["0", "64M"]'), "values: write-buffer = '64M' on profile 'nvme-512e' (write-buffer): "
                                     "write-buffer holds 1 to 4096 write units"),
    (('["0", "64k"]', '["0", "lots"]'), "write-buffer = 'lots' on profile 'nvme-512e' (write-buffer): "
                                      "write-buffer=lots: expected"),
    (('["0", "64k"]', '["64k"]'), "expected a list of at least 2 values"),
    (('["0", "64k"]', '["0", "0"]'), "values: '0' is given twice (#1 and #2)"),
])
def test_a_bad_sweep_is_one_line_before_anything_starts(tmp_path, change, says):
    with pytest.raises(UsageError) as e:
        _preset(tmp_path, SWEEP.replace(*change))
    assert "\n" not in str(e.value) and says in str(e.value), str(e.value)
    assert "[[bench.sweep]] #1" in str(e.value)


def test_a_variant_that_sets_the_parameter_itself_is_not_swept_even_at_the_same_value(monkeypatch):
    from sectorlab.devices import profiles
    raw = {"a": {"params": {"write": "fixed:10"}},
           "same": {"base": "a", "params": {"write": "fixed:10"}}, "keeps": {"base": "a"}}
    made = {n: profiles.DeviceProfile(n, "", {"write": "fixed:10"}, "none", base=raw[n].get("base")) for n in raw}
    monkeypatch.setattr(profiles, "_raw", lambda: raw)
    monkeypatch.setattr(profiles, "profiles", lambda: made)
    assert profiles.sharing("a", "write") == {"a": "write", "keeps": "write"}


def test_a_value_the_swept_profile_takes_but_a_variant_of_it_refuses_is_one_line(tmp_path):
    """A 2 MiB write unit suits nvme-512e but not its DRAM variant, whose 1 MiB buffer then holds
    no unit: the sweep reaches the variant (a disk of the preset is served by it), so it is refused."""
    text = TINY.replace('name = "floor"\nbus = "virtio"\ngeometry = "sector512e"\ndevice = "floor"',
                        'name = "floor"\nbus = "virtio"\ngeometry = "sector512e"\ndevice = "nvme-512e-dram"')
    path = tmp_path / "tiny.toml"
    path.write_text(text + SWEEP.replace('"write-buffer"', '"write-unit"').replace('["0", "64k"]', '["4k", "8k"]'))
    assert bench.load_preset(str(path)).sweeps[0].profiles == {"nvme-512e": "write-unit",
                                                               "nvme-512e-dram": "write-unit"}
    path.write_text(text + SWEEP.replace('"write-buffer"', '"write-unit"').replace('["0", "64k"]', '["4k", "2M"]'))
    with pytest.raises(UsageError, match=re.escape("on profile 'nvme-512e-dram', write-buffer = '1M' is 1,048,576 "
                                                   "bytes, not a whole number of write units of 2,097,152 bytes")):
        bench.load_preset(str(path))


def test_pick_names_what_there_is(tmp_path):
    p = _preset(tmp_path)
    assert [s.param for s in sweep.pick(p, None)] == ["write-buffer"]
    with pytest.raises(UsageError, match="SWEEP='read': preset 'tiny' sweeps write-buffer"):
        sweep.pick(p, "read")
    with pytest.raises(UsageError, match="has no \\[\\[bench.sweep\\]\\]"):
        sweep.pick(_preset(tmp_path, ""), None)


def _doc(values, sides_per_value):
    """A sweep.json of one comparison a -> b, its runs' reports from log file sync medians."""
    doc = {"sweep": {"values": values}, "comparisons": [{"title": "t", "a": {"disk": "x", "blocksize": 512},
                                                         "b": {"disk": "x", "blocksize": 4096}}], "runs": []}
    reports = {}
    for v, (a, b) in zip(values, sides_per_value):
        for side, ms in (("x@512", a), ("x@4096", b)):
            for i, rep in enumerate(runs(ms)):
                name = f"{v}-{side}-{i}"
                reports[name] = rep
                doc["runs"].append({"value": v, "config": side, "report": name})
    return doc, reports


FAST = [0.100 + 0.001 * i for i in range(8)]
SLOW = [0.300 + 0.001 * i for i in range(8)]


def test_a_headline_that_changes_inside_the_range_depends_on_the_parameter():
    doc, reports = _doc(["0", "64k", "1M"], [(SLOW, FAST), (FAST, FAST[::-1]), (FAST, FAST[::-1])])
    (item,) = report_sweep.analyse(doc, reports)
    assert [c["direction"] for c in item["cells"]] == ["b lower", "no difference", "no difference"]
    assert item["flips"] == [("0", "64k")] and item["holds"] is False


def test_a_headline_the_same_at_every_value_holds_and_too_few_runs_are_not_told():
    doc, reports = _doc(["a", "b"], [(SLOW, FAST), (SLOW, FAST)])
    (item,) = report_sweep.analyse(doc, reports)
    assert item["holds"] and not item["flips"] and not item["too_few"]
    doc, reports = _doc(["a", "b"], [(SLOW[:2], FAST[:2]), (SLOW[:2], FAST[:2])])
    (item,) = report_sweep.analyse(doc, reports)
    assert not item["holds"] and "cannot show a difference" in item["too_few"]


def test_a_median_of_zero_has_no_change_to_say():
    """A model that serves in no time (the floor on the virtual clock) has a median of 0: the change
    against it is no percentage, and its row says so rather than failing the report."""
    doc, reports = _doc(["a"], [(FAST, FAST)])
    for name, rep in reports.items():
        if "@512-" in name:  # side a: every commit in no time
            rep["log_file_sync"] |= {"p50_us": 0.0, "mean_us": 0.0}
    (item,) = report_sweep.analyse(doc, reports)
    (cell,) = item["cells"]
    assert cell["medians"][0] == 0 and cell["change_pct"] is None
    assert report_sweep._row(cell)[3] == "-"


@pytest.mark.long
@pytest.mark.skipif(shutil.which("nbdkit") is None, reason="nbdkit is not installed (scripts/bootstrap installs it)")
def test_a_sweep_runs_on_this_hosts_models_and_reports(tmp_path):
    """Two values x two configurations x a run of 1 s on real models: each value's runs reach their
    own model (the buffer's merges are in no trace of the value 0), and the report and summary say
    the comparison is not told by 1 + 1 runs. (Repeats and their order are the virtual clock's and
    the plan's tests, without a second of real time a run.)"""
    p = _preset(tmp_path)
    lines = []
    out = sweep.run(p, p.sweeps[0], lines.append, tmp_path / "results", repeats=1, seed=5)
    doc = json.loads((out / "sweep.json").read_text())
    assert len(doc["runs"]) == 4 and {r["value"] for r in doc["runs"]} == {"0", "64k"}
    assert doc["sweep"]["own"] == "0" and doc["order_seed"] == 5
    reports = [json.loads((out / r["report"]).read_text()) for r in doc["runs"]]
    assert all(r["transactions"] > 0 and r["members"][0]["path"].startswith("nbd+unix://") for r in reports)
    traces = {d.name: (d / "disk.trace").read_text() for d in (out / "models").iterdir()}
    assert sorted(traces) == ["flash-512-4096-v0", "flash-512-4096-v1"]
    merged = {name: sum(r.buffer_hits for r in trace.parse(t)) for name, t in traces.items()}
    assert merged["flash-512-4096-v0"] == 0 and merged["flash-512-4096-v1"] > 0, merged
    md = (out / "report.md").read_text()
    assert "# Sweep of `write-buffer` on `nvme-512e`" in md and "`0` (the profile's own)" in md
    assert "**not told**" in md and f"--seed 5 -- {p.name}" in md
    assert json.loads((out / "summary.json").read_text())["comparisons"][0]["too_few"]
    assert any("sweep of write-buffer on nvme-512e" in line for line in lines)


def test_the_makefile_runs_a_sweep_from_bench_with_sweep():
    text = (REPO / "Makefile").read_text()
    assert "ifeq ($(SWEEP),)" in text and "else\nbench: bench-sweep\nendif" in text
    assert "bench-sweep $${SWEEP:+--param=\"$$SWEEP\"}" in text


def test_a_sweep_reaches_the_profiles_built_on_the_swept_one_that_keep_its_value():
    """The cell disk's cache hit is also each flash-logging cell's; the F20's write is also each
    cell's flash log's (under flashlog.); a variant that sets its own value (nvme-512e-dram's
    buffer) is not swept with its base."""
    by = {s.param: s for s in bench.load_preset("exadata-flashlog").sweeps}
    assert by["cache-hit"].profiles == {"exadata-celldisk": "cache-hit", "exadata-cell-flashlog": "cache-hit"}
    # the F20 module shares the F20's write but serves no disk of this preset (zfs-appliance's)
    assert by["write"].profiles == {"sun-f20": "write", "exadata-cell-flashlog": "flashlog.write"}
    vs = {s.param: s for s in bench.load_preset("vsphere-512e").sweeps}
    assert vs["write-buffer"].profiles == {"nvme-512e": "write-buffer"}
    assert vs["read"].profiles == {"nvme-512e": "read"}  # the preset serves no disk by nvme-512e-dram


def test_a_sweep_in_virtual_time_is_the_same_on_any_host_and_says_its_clock(tmp_path):
    """The same sweep on the virtual clock (the models linked into redo-writer): no server, each run a
    model: member with the run's own model seed; the write buffer's merges show in the 512-byte
    writes' time (no unit read first), and the same order seed gives the same runs to the last digit."""
    from sectorlab.bench.clock import Clock
    p = _preset(tmp_path)
    clock = Clock("virtual", wakeup_us=10)
    out = [sweep.run(p, p.sweeps[0], lambda _: None, tmp_path / name, repeats=2, seed=5, clock=clock)
           for name in ("a", "b")]
    docs = [json.loads((o / "sweep.json").read_text()) for o in out]
    assert docs[0]["clock"] == "virtual" and docs[0]["wakeup_us"] == 10 and "reply_spin_us" not in docs[0]
    reports = []
    for o, doc in zip(out, docs):
        reports.append([json.loads((o / r["report"]).read_text()) for r in doc["runs"]])
        assert all("model:" in r["command"] and "--reply-spin-us" not in r["command"] for r in doc["runs"])
    for x, y in zip(*reports):
        assert x.pop("real_s") >= 0 and y.pop("real_s") >= 0
        assert x == y and x["clock"] == "virtual" and x["members"][0]["transport"] == "model"
    by = {}
    for r, rep in zip(docs[0]["runs"], reports[0]):
        by.setdefault((r["value"], r["config"]), []).append(rep["log_file_parallel_write"]["p50_us"])
    assert max(by[("64k", "flash@512")]) < min(by[("0", "flash@512")]), by
    assert sorted(d.name for d in (out[0] / "models").iterdir()) == ["flash-512-4096-v0", "flash-512-4096-v1"]
    md = (out[0] / "report.md").read_text()
    assert "in virtual time: redo-writer's own engine with the device models linked in" in md
    assert ("--clock virtual --wakeup-us 10 --wakeup-dist exponential --cpus 0 --cpu-dist exponential "
            "--log-writer-cpu-us 0 -- ") in md
