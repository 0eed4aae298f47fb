"""Bench presets (labs/bench/*.toml, sectorlab/bench/preset.py) on the host: every preset loads and
plans the runs the rules engine allows on its disks; bad presets are refused with the value, what
was expected and what to do, before anything starts."""

from __future__ import annotations

import math

import pytest
import tomllib

from sectorlab import bench
from sectorlab.analysis.metrics import ALPHA
from sectorlab.errors import UsageError
from sectorlab.inguest import rules

# The redo presets (a [bench] table); zfs-appliance is an [appliance] preset (test_appliance.py). Told
# from the files' tables, not by loading each preset: every test worker collects this module.
REDO_PRESETS = [n for n in bench.preset_names() if bench.kind_of_preset(
    bench.preset_path(n), tomllib.loads(bench.preset_path(n).read_text())).table == "bench"]


def _plan(preset: bench.Preset) -> list[tuple[str, int, int]]:
    return [(t.name, bs, r) for t, bs, r in preset.plan()]


@pytest.mark.parametrize("name", REDO_PRESETS)
def test_every_preset_loads_and_plans_what_the_rules_engine_allows(name):
    p = bench.load_preset(name)
    assert p.lab.name == f"bench-{name}" and len(p.lab.vms) == 1 and p.seed and p.title
    assert p.plan(), f"{name}: no run allowed"
    for t in p.targets:
        if t.is_null:
            assert [bs for tn, bs, r in _plan(p) if tn == t.name and r == 1] == list(t.blocksizes)
            continue
        logical, physical = t.expected_sectors()
        allowed = [bs for bs in t.blocksizes
                   if rules.evaluate(logical, physical, bs, override=t.needs_override(bs) and t.override).allowed]
        assert [bs for tn, bs, r in _plan(p) if tn == t.name and r == 1] == allowed


@pytest.mark.parametrize("name", REDO_PRESETS)
def test_every_preset_has_a_control_and_compares_at_equal_offered_load(name):
    p = bench.load_preset(name)
    assert any(t.control for t in p.targets), f"{name}: no control target"
    assert p.workload.mode == "open" and p.workload.rate > 0
    # Enough runs per configuration that a difference can be significant with room to spare: the
    # smallest two-sided p of an exact Mann-Whitney test of n + n runs, 2 / C(2n, n), under a tenth of
    # the bench's alpha (8 + 8: 0.00016; 7 + 7: 0.00058; 6 + 6 would be 0.0022).
    assert all(2 / math.comb(2 * t.repeats, t.repeats) < ALPHA / 10 for t in p.targets), name
    # Both paths of every run (the guest's, then its device-path twin) in under 20 minutes a preset.
    assert p.estimate_s() <= 1200, f"{name}: {p.estimate_s():.0f} s of runs"


def test_the_presets_are_the_five_seeds():
    assert {bench.load_preset(n).seed for n in bench.preset_names()} == {"000", "001", "002", "003", "004"}
    assert REDO_PRESETS == ["exadata-flashlog", "p3700-4k", "ssd-vs-hdd", "vsphere-512e"]
    assert bench.DEFAULT_PRESET in bench.preset_names()


def test_p3700_runs_both_of_the_seeds_options():
    p = bench.load_preset("p3700-4k")
    configs = {(c.target.name, c.blocksize, c.override) for c in p.configs()}
    assert configs == {("p3700-512n", 512, False), ("p3700-512n", 4096, True), ("p3700-4kn", 4096, False),
                       ("floor", 512, False), ("floor", 4096, True), ("null", 4096, False)}
    assert [(t.name, bs) for t, bs in p.refused()] == [("p3700-4kn", 512)]
    assert [t.expected_sectors() for t in p.targets] == [(512, 512), (4096, 4096), (512, 512), None]


@pytest.mark.parametrize("name", ["p3700-4k", "ssd-vs-hdd", "exadata-flashlog", "vsphere-512e"])
def test_every_preset_measures_the_labs_floor_in_the_same_bench(name):
    """A target on a disk the model serves with no behaviour of its own (the floor profile), so
    that the report shows what each device model adds against it."""
    p = bench.load_preset(name)
    floors = [t for t in p.targets if t.disk and t.disk.device == "floor"]
    assert floors, f"{name}: no target on a floor-served disk"
    # ... at every BLOCKSIZE a comparison uses, on each side's bus: the floor's share of each side.
    floor_configs = {(t.disk.bus, c.blocksize) for t in floors for c in p.configs() if c.target is t}
    for c in p.compares:
        for side in (c["a"], c["b"]):
            t = next(t for t in p.targets if t.name == side["disk"])
            assert t.disk is None or (t.disk.bus, side["blocksize"]) in floor_configs, (name, side)


def test_the_order_is_complete_rounds_each_in_a_random_order_repeatable_by_its_seed():
    p = bench.load_preset("vsphere-512e")
    order = p.order(11)
    keys = [s.config.key for s in order]
    configs = [c.key for c in p.configs()]
    assert [s.slot for s in order] == list(range(1, len(order) + 1))
    rounds = [keys[i:i + len(configs)] for i in range(0, len(keys), len(configs))]
    assert len(rounds) == 8 and all(sorted(r) == sorted(configs) for r in rounds)
    assert [s.repeat for s in order[:len(configs)]] == [1] * len(configs)
    assert len({tuple(r) for r in rounds}) > 1, "every round in the same order"
    assert [s.run_id for s in p.order(11)] == [s.run_id for s in order]
    assert [s.run_id for s in p.order(12)] != [s.run_id for s in order]


def test_command_line_overrides_flow_into_the_workload_and_the_plan():
    p = bench.load_preset("vsphere-512e", duration_s=5, warmup_s=2, repeats=2, order_seed=3)
    assert (p.workload.duration_s, p.workload.warmup_s, p.order_seed) == (5, 2, 3)
    assert len(p.plan()) == 10 and p.estimate_s() == 10 * (2 * 5 + 2 + bench.RUN_OVERHEAD_S)


def test_redo_writer_arguments_are_the_workload():
    w = bench.Workload(sessions=4, redo_per_txn=700, rate=300, arrival="poisson", cpu_us_per_txn=50, warmup_s=1,
                       duration_s=9, log_size=1 << 26)
    assert bench.redo_writer_args(w, "/dev/vdc", 4096, 9, "/dev/vdd", 5, "mirror")[4:6] == ["--mirror", "/dev/vdd"]
    assert bench.redo_writer_args(w, "/dev/vdc", 4096, 9, second="/dev/vdd", seed=5, pairing="race") == [
        "redo-writer", "run", "--target", "/dev/vdc", "--race", "/dev/vdd", "--blocksize", "4096", "--sessions",
        "4", "--redo-per-txn", "700", "--arrival", "poisson", "--rate", "300", "--seed", "5", "--cpu-us-per-txn",
        "50", "--log-size", str(1 << 26), "--duration", "9"]
    closed = bench.Workload(4, 512, 0, "closed", 0, 1, 9, 1 << 26)
    assert bench.redo_writer_args(closed, "null:", 512, 9)[4:] == [
        "--blocksize", "512", "--sessions", "4", "--redo-per-txn", "512", "--arrival", "closed", "--rate", "0",
        "--log-size", str(1 << 26), "--duration", "9"]


def test_asm_verdicts_on_512e_in_disk_groups_of_512_and_4096():
    p = bench.load_preset("vsphere-512e")
    got = {(v["asm_sector_size"], v["blocksize"], v["override"]): v["verdict"]["allowed"]
           for v in bench.asm_verdicts(p, {"plain-512e": (512, 4096)})}
    assert got == {(512, 512, False): True, (512, 512, True): True, (512, 4096, False): False,
                   (512, 4096, True): True, (4096, 512, False): False, (4096, 512, True): False,
                   (4096, 4096, False): True, (4096, 4096, True): True}


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
     r"disk = 'c': no such disk in this lab; expected one of a, b, or null:"),
    ("[bench]\n[[bench.target]]\nname = 't'\ndisk = 'a'\nrace = 'a'", r"race = 'a' is the target's own disk"),
    ("[bench]\n[[bench.target]]\nname = 't'\ndisk = 'a'\nrace = 'b'",
     r"race = 'b' has geometry sector512n, the disk sector512e: the members of a log group need one sector size"),
    ("[bench]\n[[bench.target]]\nname = 't'\ndisk = 'a'\nreformat_lbads = 4096",
     r"reformat_lbads on disk a \(bus virtio\): only an emulated NVMe namespace"),
    ("[bench]\n[[bench.compare]]\na = 'a@512'\nb = 'c@512'",
     r"b = 'c@512': expected TARGET@BLOCKSIZE with a target of a, b"),
    ("[bench]\nrepeats = 1\n[[bench.compare]]\na = 'a@512'\nb = 'b@512'",
     r"a = 'a@512' runs 1 time\(s\): a comparison tests run against run and needs repeats >= 2"),
    ("[bench]\nrate = 100\narrival = 'closed'", r"arrival = 'closed' with rate = 100: a closed loop has no rate"),
    ("[bench]\narrival = 'poisson'", r"arrival = 'poisson' with rate = 0: .* an open loop .* needs one"),
    ("[bench]\nrate = 50000", r"rate = 50000: expected at least 0 and at most 20000"),
    ("[bench]\n[[bench.target]]\ndisk = 'b'\noverride = true\nblocksizes = [512]",
     r"override = true on 'b' \(512/512 B sectors\): none of its BLOCKSIZEs \[512\] needs _disk_sector_size_override"),
    ("[bench]\n[[bench.target]]\ndisk = 'a'\n[[bench.compare]]\na = 'a@512'\nb = 'a@4096'\nprimary = 'speed'",
     r"primary = 'speed': not a metric the report gives; expected one of .*log_file_sync_p50_ms"),
    ("[bench]\n[[bench.target]]\ndisk = 'null:'\nrace = 'a'", r"race on 'null', a null: target"),
    ("[bench]\n[[bench.target]]\ndisk = 'a'\nmirror = 'a'", r"mirror = 'a' is the target's own disk"),
    ("[bench]\n[[bench.target]]\nname = 't'\ndisk = 'a'\nmirror = 'b'",
     r"mirror = 'b' has geometry sector512n, the disk sector512e: the members of a log group need one sector size"),
    ("[bench]\n[[bench.target]]\nname = 't'\ndisk = 'a'\nrace = 'null:'\nmirror = 'null:'",
     r"race and mirror on 't': a log group's second member is raced .* or mirrored .*: give one"),
    ("[bench]\n[[bench.seed_figure]]\nwhat = 'x'\nseed_value = 1.0\nquote = 'q'\nwhere = 'w'\nlab = 'none'",
     r"lab = \"none\" without a reason"),
    ("[bench]\n[[bench.seed_figure]]\nwhat = 'x'\nseed_value = 1.0\nquote = 'q'\nwhere = 'w'\nlab = 'ratio'\n"
     "metric = 'tps'\na = 'a@512'", r"lab = 'ratio' without b: a ratio needs metric, a, b"),
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
