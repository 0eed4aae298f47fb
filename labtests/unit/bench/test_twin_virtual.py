"""`make bench CLOCK=virtual`: each run's device-path twin in virtual time (bench/redo/twin.py):
the run's workload, BLOCKSIZE and seed on model: members with the parameters the lab's models
serve, each model's trace kept beside the run and summed up as a served model's is, the same
numbers from the same seed on any host, and the report naming the clock of every device-path
figure. The real redo-writer runs here, no lab: the twin needs none in virtual time."""

from __future__ import annotations

import json
import shlex

import pytest

from labtests.unit.bench.test_bench_paths import _noisy, cmp, write_bench
from sectorlab import bench
from sectorlab.bench.clock import Clock, model_member
from sectorlab.bench.redo import twin
from sectorlab.errors import UsageError
from sectorlab.lab import modelled
from sectorlab.lab.record import DiskRecord
from sectorlab.report import redo as report

CLOCK = Clock("virtual", wakeup_us=10)


def _members(preset, target) -> list[DiskRecord]:
    """The lab disks a target writes, as lab.json records them (what the twin reads of them)."""
    fields = {f: None for f in DiskRecord.__dataclass_fields__}
    vm = preset.lab.vms[0]
    return [DiskRecord(**{**fields, "name": d.name, "device": vm.profile(d), "vm": vm.name,
                          "logical_block_size": d.geometry.logical_block_size,
                          "physical_block_size": d.geometry.physical_block_size})
            for d in (target.disk, target.second) if d is not None]


def _twin(tmp_path, preset_name: str, target_name: str, seed: int = 7, duration: int = 2):
    preset = bench.load_preset(preset_name, duration_s=duration)
    target = next(t for t in preset.targets if t.name == target_name)
    members = _members(preset, target)
    results = tmp_path / f"results-{len(list(tmp_path.iterdir()))}"
    results.mkdir()
    entry = twin.Twin("no-such-lab", results, preset.workload, CLOCK).run("r1", members, target, 4096, seed, [])
    return preset, members, results, entry


def test_a_mirrored_twin_runs_the_labs_models_in_virtual_time_and_keeps_their_traces(tmp_path):
    """exadata-flashlog's `on` (two cells with flash logging, mirrored, seed 002): both members are
    model: members with the parameters the lab's running models would serve, the second drawing
    from another seed; each model's trace is kept and summed up, its writes are redo-writer's own,
    and the cells' flash log counts come from those traces."""
    preset, members, results, entry = _twin(tmp_path, "exadata-flashlog", "on")
    assert [m.device for m in members] == ["exadata-cell-flashlog"] * 2
    argv = shlex.split(entry["command"])
    for i, (opt, m) in enumerate(zip(("--target", "--mirror"), members)):
        params = modelled.params(m.device, m.logical_block_size, m.physical_block_size)
        want = model_member(params, 7, second=i > 0, trace=f"runs/r1.device.{m.name}.trace.csv")
        assert argv[argv.index(opt) + 1] == want
    assert entry["clock"] == "virtual" and entry["wakeup_us"] == 10 and "reply_spin_us" not in entry
    out = json.loads((results / entry["report"]).read_text())
    assert out["clock"] == "virtual" and out["virtual"]["wakeup_us"] == 10
    assert [m["transport"] for m in out["members"]] == ["model", "model"]
    for m in members:
        summed = entry["device_trace"][m.name]
        assert (results / summed["trace"]).is_file() and summed["profile"] == "exadata-cell-flashlog"
        assert summed["write"]["count"] == out["writes"] > 100, (summed["write"], out["writes"])
    # The profile's disk cache answers in a fixed 20 us, its flash log in a fixed 85: the disk is
    # first at every write of both cells.
    assert out["flash_log"]["writes"] == 2 * out["writes"] and out["flash_log"]["flash_first"] == 0
    assert (results / entry["events"]).stat().st_size > 0


def test_the_same_seed_gives_the_same_twin_and_another_seed_another(tmp_path):
    """Exact: two twins of one run are the same to the last digit but for the host's own seconds;
    another run's seed draws other arrivals and another model."""
    runs = [json.loads((r / e["report"]).read_text()) for _, _, r, e in
            (_twin(tmp_path, "vsphere-512e", "flash-512e", seed=s) for s in (3, 3, 4))]
    for r in runs:
        r.pop("real_s")
    assert runs[0] == runs[1] and runs[0]["log_file_sync"] != runs[2]["log_file_sync"]


def test_a_null_target_has_no_virtual_twin_and_says_why():
    preset = bench.load_preset("vsphere-512e")
    null = next(t for t in preset.targets if t.is_null)
    assert twin.missing([], null) is None
    why = twin.missing([], null, CLOCK)
    assert why.startswith("target null writes to null:, which has no model: in virtual time there is no harness")


def test_a_closed_loop_with_nothing_between_its_commits_is_refused_before_the_lab_comes_up(tmp_path, monkeypatch):
    from sectorlab.bench.redo import run as redo_run
    preset = bench.load_preset("vsphere-512e")
    closed = preset.__class__(**{**preset.__dict__, "workload": preset.workload.__class__(
        **{**preset.workload.__dict__, "arrival": "closed", "rate": 0})})
    monkeypatch.setattr(redo_run.lab_mod, "up", lambda *a: pytest.fail("the lab came up"))
    with pytest.raises(UsageError, match="no CPU a transaction, and in virtual time nothing else separates them"):
        redo_run.run(closed, print, tmp_path, Clock("virtual"))
    assert not any(tmp_path.iterdir())


def test_the_report_names_the_virtual_clock_of_every_device_path_figure(tmp_path):
    """A bench whose twins ran in virtual time: the first screen, the disk and comparison tables,
    the controls and the commands say so, with the modelled host; none says 'straight to the model'."""
    guest = {"floor": ("floor", _noisy(0.300, 0.060)), "a": ("x", _noisy(0.400, 0.060)),
             "b": ("y", _noisy(0.420, 0.060))}
    device = {"floor": _noisy(0.020, 0.002), "a": _noisy(0.130, 0.002), "b": _noisy(0.150, 0.002)}
    bench_json = write_bench(tmp_path, guest, device, [cmp("a", "b", "a against b")])
    bench_json["device_path"] = {**CLOCK.as_json(), "commands": ["redo-writer run ..."], "why_not": None}
    (tmp_path / "bench.json").write_text(json.dumps(bench_json))
    md = report.write(tmp_path)["md"].read_text()
    assert "the **device path, virtual time** runs the same workload with the same device models" in md
    assert ("the modelled host: a wake-up of 10 us (given) on average (exponential, assumed) from a post to the "
            "thread it wakes, a core for every session") in md
    assert "    - device path, virtual time: 0.1" in md
    assert "On the device path in virtual time (the same runs on this host with the same model linked" in md
    assert "# on this host, in the results directory, each run's device-path twin in virtual time:" in md
    assert "straight to the model" not in md and "    - device path: " not in md
    # The first screen opens with the picture of both paths, named by the device path's clock.
    picture = ("![The findings, each comparison's b over a with its CI on the guest path and the device path, "
               "virtual time: findings](report-findings.png)")
    assert md.index("## Findings") < md.index(picture) < md.index("1. **a against b**")
    assert (tmp_path / "report-findings.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_bench_record_with_a_clock_it_does_not_know_is_refused(tmp_path):
    guest = {"a": ("x", _noisy(0.400, 0.010))}
    bench_json = write_bench(tmp_path, guest, {"a": _noisy(0.130, 0.002)}, [])
    bench_json["device_path"]["clock"] = "sundial"
    (tmp_path / "bench.json").write_text(json.dumps(bench_json))
    with pytest.raises(UsageError, match=r"clock = 'sundial': expected 'real' or 'virtual'"):
        report.write(tmp_path)
