"""Bench presets (labs/bench/*.toml, sectorlab/bench/preset.py) on the host: every preset loads and
plans the runs the rules engine allows on its disks; bad presets are refused with the value, what
was expected and what to do, before anything starts."""

from __future__ import annotations

import pytest

from sectorlab import bench
from sectorlab.errors import UsageError
from sectorlab.inguest import rules


def _plan(preset: bench.Preset) -> list[tuple[str, int, int]]:
    return [(t.name, bs, r) for t, bs, r in preset.plan()]


@pytest.mark.parametrize("name", bench.preset_names())
def test_every_preset_loads_and_plans_what_the_rules_engine_allows(name):
    p = bench.load_preset(name)
    assert p.lab.name == f"bench-{name}" and len(p.lab.vms) == 1 and p.seed and p.title
    assert p.plan(), f"{name}: no run allowed"
    for t in p.targets:
        logical, physical = t.expected_sectors()
        allowed = [bs for bs in p.blocksizes if rules.evaluate(logical, physical, bs).allowed]
        assert [bs for tn, bs, r in _plan(p) if tn == t.name and r == 1] == allowed


def test_the_presets_are_the_four_seeds():
    assert {bench.load_preset(n).seed for n in bench.preset_names()} == {"000", "001", "002", "003"}
    assert bench.DEFAULT_PRESET in bench.preset_names()


def test_p3700_runs_512_before_the_format_and_4096_after():
    p = bench.load_preset("p3700-4k")
    first = {(t, bs) for t, bs, _ in _plan(p)}
    assert first == {("p3700-512n", 512), ("p3700-4kn", 4096)}
    assert [t.expected_sectors() for t in p.targets] == [(512, 512), (4096, 4096)]


def test_vsphere_runs_both_blocksizes_on_both_512e_disks_three_times():
    p = bench.load_preset("vsphere-512e")
    assert sorted(_plan(p)) == sorted((d, bs, r) for d in ("rmw-512e", "plain-512e") for bs in (512, 4096)
                                      for r in (1, 2, 3))


def test_command_line_overrides_flow_into_the_workload_and_the_plan():
    p = bench.load_preset("vsphere-512e", duration_s=5, warmup_s=2, repeats=1)
    assert (p.workload.duration_s, p.workload.warmup_s) == (5, 2)
    assert len(p.plan()) == 4 and p.estimate_s() == 4 * (5 + 2 + bench.RUN_OVERHEAD_S)


def test_redo_writer_arguments_are_the_workload():
    w = bench.Workload(sessions=4, redo_per_txn=700, rate=0, warmup_s=1, duration_s=9, log_size=1 << 26)
    assert bench.redo_writer_args(w, "/dev/vdc", 4096, 9, race="/dev/vdd") == [
        "redo-writer", "run", "--target", "/dev/vdc", "--race", "/dev/vdd", "--blocksize", "4096", "--sessions",
        "4", "--redo-per-txn", "700", "--rate", "0", "--log-size", str(1 << 26), "--duration", "9"]


def test_asm_verdicts_on_512e_in_a_disk_group_of_512():
    p = bench.load_preset("vsphere-512e")
    got = {(v["blocksize"], v["override"]): v["verdict"]["allowed"]
           for v in bench.asm_verdicts(p, {"plain-512e": (512, 4096)})}
    assert got == {(512, False): True, (512, True): True, (4096, False): False, (4096, True): True}


LAB = """
[lab]
name = "bench-x"
[[vm]]
name = "lab1"
[[vm.disk]]
name = "a"
bus = "virtio"
geometry = "sector512e"
[[vm.disk]]
name = "b"
bus = "virtio"
geometry = "sector512n"
"""


@pytest.mark.parametrize("table, message", [
    ("", r"no \[bench\] table: a preset is a lab definition with a \[bench\] table"),
    ("[bench]\nsessions = 0", r"sessions = 0: expected at least 1 and at most 256"),
    ("[bench]\nduration = 5", r"unknown key 'duration': expected one of .*duration_s"),
    ("[bench]\nblocksizes = [512, 2048]", r"blocksizes = \[512, 2048\]: expected a list of distinct redo BLOCKSIZEs"),
    ("[bench]\n[[bench.target]]\nname = 't'\ndisk = 'c'",
     r"disk = 'c': no such disk in this lab; expected one of a, b"),
    ("[bench]\n[[bench.target]]\nname = 't'\ndisk = 'a'\nrace = 'a'", r"race = 'a' is the target's own disk"),
    ("[bench]\n[[bench.target]]\nname = 't'\ndisk = 'a'\nrace = 'b'",
     r"race = 'b' has geometry sector512n, the disk sector512e: the members of a log group need one sector size"),
    ("[bench]\n[[bench.target]]\nname = 't'\ndisk = 'a'\nreformat_lbads = 4096",
     r"reformat_lbads on disk a \(bus virtio\): only an emulated NVMe namespace"),
    ("[bench]\n[[bench.compare]]\na = 'a@512'\nb = 'c@512'",
     r"b = 'c@512': expected TARGET@BLOCKSIZE with a target of a, b"),
    ("[bench]\n[[bench.asm]]\ntarget = 'a'\nsector_size = 1024", r"sector_size = 1024: expected an ASM disk group"),
])
def test_a_bad_preset_is_refused_by_name(tmp_path, table, message):
    path = tmp_path / "x.toml"
    path.write_text(LAB + table + "\n")
    with pytest.raises(UsageError, match=message):
        bench.load_preset(str(path))


def test_a_duration_of_zero_is_refused_naming_duration():
    with pytest.raises(UsageError, match=r"duration_s \(DURATION\) = 0: expected at least 1 and at most 3600"):
        bench.load_preset("vsphere-512e", duration_s=0)


def test_an_unknown_preset_names_the_presets():
    with pytest.raises(UsageError, match=r"unknown preset 'p3700': expected one of exadata-flashlog, p3700-4k, "):
        bench.load_preset("p3700")
