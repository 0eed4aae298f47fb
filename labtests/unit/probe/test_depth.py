"""The probe's queue depths (sectorlab/probe/depth.py) and the model's closed loop in virtual time
(devicemodel/simulate --depth): the loop's arrivals and waits exactly, its bad options in one line,
the rule that tells a device's channels (told where the rate stops growing and the path had room,
at least the most busy at once where not), fio's output read, and fio's reads at each depth on a
model served here, each depth's count as asked and each read served by the model."""

from __future__ import annotations

import json
import subprocess

import pytest

from labtests.unit.native.test_redo_writer_nbd import serve  # noqa: F401
from sectorlab.devices import build, profiles, trace
from sectorlab.errors import SectorlabError
from sectorlab.probe import depth
from sectorlab.probe.depth import AtDepth


def _loop(params: dict, lines: str, *options: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(build.built(build.SIMULATE)), *options, *(f"{k}={v}" for k, v in params.items())],
                          input=lines, capture_output=True, text=True)


def test_a_closed_loop_of_four_on_two_channels_waits_one_service_each():
    """Four reads outstanding, two channels of 100 us: the first two served at once, every later one
    arriving when one is answered and waiting one service for a channel (k/c x S = 200 us each)."""
    reads = "".join(f"read {i * 4096} 4096\n" for i in range(12))
    proc = profiles.simulate({"read": "fixed:100", "channels": "2"}, reads, depth=4)
    assert proc.returncode == 0, proc.stderr
    rows = trace.parse(proc.stdout)
    assert [r.t_us for r in rows] == [0, 0, 0, 0, 100, 100, 200, 200, 300, 300, 400, 400]
    assert [r.answer_us for r in rows] == [100, 100, 200, 200] + [200] * 8
    assert [r.channel for r in rows[:4]] == [0, 1, 0, 1]


def test_the_loops_think_time_comes_between_a_reply_and_the_next_request():
    proc = _loop({"read": "fixed:100"}, "read 0 4096\n\nread 4096 4096\n", "--depth=1", "--think-us=50")
    assert proc.returncode == 0, proc.stderr
    assert [(r.t_us, r.answer_us) for r in trace.parse(proc.stdout)] == [(50, 100), (200, 100)]


def test_a_loop_that_runs_past_the_models_clock_is_one_line():
    proc = _loop({"read": "fixed:1"}, "read 0 4096\n" * 1001, "--depth=1", "--think-us=1e9")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "line 1000: the closed loop's arrival 1000000000999 us is past 1e12 us of virtual time" in proc.stderr


@pytest.mark.parametrize(("options", "lines", "says"), [
    (["--depth=0"], "", "--depth=0: expected --depth=K, K a whole number of requests 1 to 1024"),
    (["--depth=1025"], "", "--depth=1025: expected --depth=K"),
    (["--depth=2.5"], "", "--depth=2.5: expected --depth=K"),
    (["--depth=1e300"], "", "--depth=1e300: expected --depth=K"),
    (["--depth=2", "--think-us=-1"], "", "--think-us=-1: expected --think-us=US, microseconds 0 to 1e9"),
    (["--think-us=5"], "", "--think-us without --depth: each line gives its own arrival; give --depth=K"),
    (["--depth=2"], "0 read 0 4096\n", "line 1: expected 'OP OFFSET LENGTH [fua]' (--depth: no arrival time), "
                                       "got '0 read 0 4096'"),
])
def test_a_bad_loop_option_or_line_is_one_line(options, lines, says):
    proc = _loop({"read": "fixed:1"}, lines, *options)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and says in proc.stderr, proc.stderr


def _depths(means: dict[int, float], floors: dict[int, float] | None = None) -> list[AtDepth]:
    return [AtDepth(k, 100, m, m, m, None if floors is None else floors[k]) for k, m in means.items()]


def test_the_channels_are_told_where_the_rate_stops_growing():
    """Four channels of 80 us: the rate doubles up to depth 4 and stays at depth 8 (each read 160
    us): four, told at 8; one channel: the rate stays from depth 2 on: one, told at 2."""
    four = depth.channels(_depths({1: 80.0, 2: 80.0, 4: 80.0, 8: 160.0}))
    assert (four.value, four.told, four.depth) == (4, True, 8)
    assert four.busy == {1: 1.0, 2: 2.0, 4: 4.0, 8: 4.0}
    one = depth.channels(_depths({1: 500.0, 2: 1000.0, 4: 2000.0, 8: 4000.0}))
    assert (one.value, one.told, one.depth) == (1, True, 2)
    assert one.said().startswith("1: the reads busy at once stayed within 10 % from depth 1 on")


def test_where_the_rate_grows_at_every_depth_the_channels_are_at_least_the_most_found_busy():
    more = depth.channels(_depths({1: 80.0, 2: 80.0, 4: 80.0, 8: 80.0}))
    assert (more.value, more.told) == (8, False)
    assert more.said().startswith("at least 8: the reads busy at once reached no plateau the device made up to "
                                  "depth 8;")


def test_a_rate_that_slows_without_a_plateau_was_not_stopped_by_the_device():
    """This host's own disk, two file probes of 400 reads a depth: busy 1.78, 2.20, 2.91 at depths 2,
    4 and 8 in one (each step from depth 4 on 1.32 times, no plateau) and 1.65, 2.06, 2.29 in the
    other (1.25 and 1.11 times: slowing, but over the plateau's 10 %): neither told. The channels are
    at least the most busy at once over 1.10, rounded up: 3 in each."""
    seen = depth.channels(_depths({1: 32.9, 2: 37.0, 4: 59.8, 8: 90.3}))
    assert (seen.value, seen.told, seen.depth) == (3, False, None)
    assert round(seen.busy[8], 2) == 2.91
    again = depth.channels(_depths({1: 27.7, 2: 33.6, 4: 53.8, 8: 96.6}))
    assert (again.value, again.told) == (3, False) and round(again.busy[8], 2) == 2.29


def test_the_channels_round_the_busy_count_up_not_to_the_nearest():
    """2.45 busy at depth 8 on a plateau: 3 channels (2.45 / 1.10 rounded up; to the nearest, 2.45 gave
    2, fewer than were busy)."""
    seen = depth.channels(_depths({1: 100.0, 2: 100.0, 4: 4 * 100 / 2.3, 8: 8 * 100 / 2.45}))
    assert (seen.told, seen.depth, seen.value) == (True, 8, 3)


def test_a_device_time_not_told_from_the_paths_counts_no_channels():
    """The floor took as long at depth 1 as the reads (less its sleep, nothing is left of the device's
    own time): nothing counted, said; a model that answers at once in virtual time, the same."""
    lost = depth.channels(_depths({1: 140.0, 2: 150.0, 4: 200.0, 8: 400.0}, {1: 245.0, 2: 250.0, 4: 260.0, 8: 300.0}))
    assert (lost.told, lost.value, lost.busy) == (False, 1, {})
    assert lost.said().startswith("at least 1: the device's own mean read at depth 1 (-5.0 us of 140.0) is not told")
    instant = depth.channels(depth.simulated({"read": "fixed:0"}, 50, 1 << 20))
    assert not instant.told and "is not told from the path's" in instant.said()


def test_where_the_paths_own_time_grew_with_the_reads_the_stop_is_not_the_devices():
    """The reads busy at once reach a plateau at depth 8 (1.73 at 4, 1.68 at 8), but the path's floor
    grew there by 190 us against the reads' 260 (more than its 10 %): the path may have stopped them;
    not told, at least 2. The device's own time is the depth-1 mean less the path's (the floor's
    less its sleep): 80 us. With a floor that stayed at 140 us at every depth: told, 2."""
    seen = depth.channels(_depths({1: 120.0, 2: 122.0, 4: 185.0, 8: 380.0}, {1: 140.0, 2: 145.0, 4: 186.0, 8: 330.0}))
    assert (seen.told, seen.path_limited, seen.device_us, seen.value) == (False, (8,), 80.0, 2)
    assert ("at depth 8 the path's own time (its floor's) grew from depth 1 by more than 10 % of what the reads' "
            "did: the path, not the device, may have stopped them") in seen.said()
    told = depth.channels(_depths({1: 120.0, 2: 122.0, 4: 185.0, 8: 380.0}, {1: 140.0, 2: 140.0, 4: 140.0, 8: 140.0}))
    assert (told.told, told.depth, told.value, told.path_limited) == (True, 8, 2, ())


def test_the_channels_need_depth_one_and_a_deeper_one_and_a_floor_at_all_or_none():
    with pytest.raises(SectorlabError, match=r"queue depths \[2, 4\]: the channels need depth 1"):
        depth.channels(_depths({2: 1.0, 4: 2.0}))
    mixed = [AtDepth(1, 10, 120.0, 120.0, 120.0, 140.0), AtDepth(2, 10, 240.0, 240.0, 240.0)]
    with pytest.raises(SectorlabError, match="a floor measured at some and not at others"):
        depth.channels(mixed)
    zero = depth.channels([AtDepth(1, 10, 120.0, 120.0, 120.0), AtDepth(2, 10, 0.0, 0.0, 0.0)])
    assert not zero.told and zero.said() == "at least 1: a mean read of 0.0 us at depth 2: no channels counted"


FIO = {"jobs": [{"jobname": "depth", "error": 0, "read": {
    "total_ios": 400, "lat_ns": {"mean": 123456.0, "percentile": {"50.000000": 120832, "99.000000": 250880}}}}]}


def test_fios_json_is_read_after_the_lines_it_prints_first():
    got = depth.parse("fio: connected to NBD server {x}\n" + json.dumps(FIO, indent=1) + "\nfio: done\n", 4)
    assert got == AtDepth(4, 400, 123.456, 120.832, 250.88)


@pytest.mark.parametrize("out", ["", "fio: no json", "{}", json.dumps({"jobs": [{"read": {}}]}),
                                 json.dumps({**FIO, "jobs": [{**FIO["jobs"][0], "error": 5}]})])
def test_fios_output_that_is_not_its_json_is_one_line(out):
    with pytest.raises(SectorlabError) as e:
        depth.parse(out, 2)
    assert "\n" not in str(e.value) and "queue depth 2" in str(e.value)


def test_fios_reads_at_each_depth_reach_the_model_as_many_as_asked(serve):  # noqa: F811
    """fio's reads on a model served here and on a floor model of their own: each depth's count as
    asked, each read of the target in the model's trace (4 KiB, aligned, within the size given);
    the floor's mean at least its sleep (its model answers no read sooner: a bound, not this host's
    timing judged)."""
    disk = serve({"read": "fixed:0"})
    got = depth.with_floor(disk.uri(), 40, 8 << 20, 1, 120)
    assert [(d.depth, d.n) for d in got] == [(1, 40), (2, 40), (4, 40), (8, 40)]
    assert all(d.mean_us > 0 and d.floor_mean_us is not None and d.floor_mean_us >= depth.FLOOR_SLEEP_US
               for d in got)
    assert disk.stop()
    reads = [r for r in trace.read(disk.trace) if r.op == "read"]
    assert len(reads) == 4 * 40
    assert all(r.length == 4096 and r.offset % 4096 == 0 and r.offset < 8 << 20 for r in reads)


def test_a_path_with_a_colon_reaches_fio_as_one_file():
    assert depth._fio_target("/dev/disk/by-path/pci-0000:00:04.0") == [
        "--ioengine=libaio", "--direct=1", "--filename=/dev/disk/by-path/pci-0000\\:00\\:04.0"]
    assert depth._fio_target("/dev/fd/7") == ["--ioengine=libaio", "--direct=1", "--filename=/dev/fd/7"]
    assert depth._fio_target("nbd+unix:///?socket=/run/x.sock")[0] == "--ioengine=nbd"
