"""`sectorlab probe` and `redo-writer io` (sectorlab/probe/, redo-writer/io.c): the layout of what a
probe issues, the fit of its figures to the model's parameters, redo-writer io's requests and its
refusals, the calibrated profile written and read back as the catalog's are, a probe of a file on
this host's own disk end to end, and the probe's refusals (one line, nothing written)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from labtests.unit.native.test_redo_writer_nbd import binaries, redo_writer, serve  # noqa: F401
from sectorlab import cli
from sectorlab.devices import profiles, trace
from sectorlab.errors import SectorlabError, UsageError
from sectorlab.probe import depth, fit, measure, patterns, profile, target
from sectorlab.probe import run as run_mod

# --- the layout ------------------------------------------------------------------------------------


def _ranges(layout) -> list[tuple[str, int, int, str | None]]:
    out = []
    for line, label in zip(layout.requests, layout.labels):
        op, *rest = line.split()
        out.append((op, int(rest[0]) if rest else 0, int(rest[1]) if rest else 0, label))
    return out


@pytest.mark.parametrize("logical", [512, 4096])
def test_every_figure_gets_its_samples_each_write_a_place_of_its_own_within_the_target(logical):
    samples = 30
    size = patterns.needed_bytes(samples, logical)
    layout = patterns.layout(samples, logical, size, seed=3)
    figures = patterns.figures(logical)
    assert {f.name: layout.labels.count(f.name) for f in figures} == {f.name: samples for f in figures}
    assert all(f.size >= logical for f in figures if f.size)
    assert (logical == 4096) == ("partial-cold" not in layout.labels)
    writes = [(o, n, label) for op, o, n, label in _ranges(layout) if op.startswith("write")]
    assert all(o % logical == 0 and n % logical == 0 and o + n <= size for o, n, _ in writes)
    # no two writes share a byte, but a partial write into the unit just written whole (its set-up)
    spans = sorted((o, o + n, label) for o, n, label in writes)
    overlaps = [(a, b) for a, b in zip(spans, spans[1:]) if b[0] < a[1]]
    assert all(a[2] is None and b[2] == "partial-after-whole" for a, b in overlaps), overlaps[:3]
    # what a partial write into the unit just written is held against comes after a whole 4 KiB
    # write as it does: at a 64 KiB boundary of a slot of its own (no overlap above), away from the
    # partial's unit
    other = [i for i, label in enumerate(layout.labels) if label == "partial-after-other"]
    assert len(other) == (samples if logical == 512 else 0)
    for i in other:
        (op, at, n), (_, partial, _) = (layout.requests[j].split() for j in (i - 1, i))
        assert (layout.labels[i - 1], op, int(n)) == (None, "write-durable", 4096) and int(at) % (64 << 10) == 0
        assert abs(int(at) - int(partial)) >= patterns.SLOT
    # the appends follow each other as a log writer's do
    for name in (f.name for f in figures if f.name.startswith("append")):
        offsets = [o for op, o, n, label in _ranges(layout) if label == name]
        assert offsets == sorted(offsets) and len(set(offsets)) == samples
        assert all(b - a == int(name.split("-")[1]) for a, b in zip(offsets, offsets[1:]))
    # every figure's requests spread over the whole probe, the appends' few runs too
    for f in figures:
        at = [i for i, label in enumerate(layout.labels) if label == f.name]
        share = 1 / (-(-samples // patterns.APPEND_RUN) if f.name.startswith("append") else samples) + 0.05
        assert at[0] < share * len(layout.labels) and at[-1] > (1 - share) * len(layout.labels), f.name


def test_a_layout_is_its_seeds_and_parts_keep_a_set_up_with_its_request():
    a, b = (patterns.layout(20, 512, patterns.needed_bytes(20, 512), seed=s) for s in (1, 1))
    assert a.requests == b.requests
    assert a.requests != patterns.layout(20, 512, patterns.needed_bytes(20, 512), seed=2).requests
    parts = a.chunks(4)
    assert sum(len(p.requests) for p in parts) == len(a.requests) and len(parts) == 4
    assert all(p.labels[-1] is not None for p in parts)  # no part ends on a set-up whose request is in the next
    with pytest.raises(ValueError, match="need"):
        patterns.layout(20, 512, 1 << 20, seed=1)


# --- the fit -------------------------------------------------------------------------------------


def _times(unit: int, reads_first: bool, merges: bool, mbps: float = 2000.0, n: int = 60) -> dict:
    """Made-up times of a device: a write 20 us plus its bytes at `mbps`, a read 80 us; a write that
    leaves part of a `unit` unit costs a read first, unless it merges into the unit just written."""
    out = {}
    for f in patterns.figures(512):
        base = 80.0 + f.size / 2800 if f.op == "read" else 0.5 if f.op == "flush" else 20.0 + f.size / mbps
        partial = False
        if f.is_write and unit:
            start = patterns.MISALIGN if f.name.startswith(("mis", "partial")) else 0
            partial = start % unit != 0 or f.size % unit != 0
        if f.name == "append-512":
            partial = bool(unit)
        if f.name == "partial-after-whole" and merges:
            partial = False
        extra = 80.0 if partial and reads_first else 0.0
        out[f.name] = [base + extra + 0.01 * i for i in range(n)]
    return out


def test_the_write_unit_a_read_first_and_a_merge_are_found_where_the_times_have_them():
    found = fit.fit(_times(4096, True, False), None, 512)
    assert found.unit == 4096 and found.reads_first.found and not found.merges.found
    assert found.params["write-unit"] == "4096" and found.params["write-buffer"] == "0"
    buffered = fit.fit(_times(4096, True, True), None, 512)
    assert buffered.merges.found and buffered.params["write-buffer"] == "4096"
    plain = fit.fit(_times(0, False, False), None, 512)
    assert plain.unit == 0 and not plain.reads_first.found and plain.params["write-unit"] == "0"
    assert "no size at which a misaligned write steps up" in plain.notes["write-unit"]
    sixteen = fit.fit(_times(16384, True, False), None, 512)
    assert sixteen.unit == 16384
    # a partial write into the unit just written faster than into a cold one, where no partial
    # write reads first, is no merge: there is no read for a buffer to spare
    chance = _times(0, False, False)
    chance["partial-after-whole"] = [x - 40.0 for x in chance["partial-after-whole"]]
    spared = fit.fit(chance, None, 512)
    assert not spared.reads_first.found and not spared.merges.found and spared.merges.p < fit.STEP_ALPHA
    assert "no read before a partial write for a buffer to spare" in spared.merges.said()


def test_a_step_is_judged_on_the_path_whatever_its_rise_is_taken_to_be_at_the_devices_times():
    """A guest's path rises steeply between 10 and 25 us of the device's time, where a flash
    drive's 22 us write is, and a probe's floors can miss where: taken away as measured, the
    DRAM drive's read first (80 us here) shrank under its least step (a guest run, 33.5 us). The
    path's rise never falls, so it adds to a step and makes none: the steps are judged with each
    figure's path at the first floor taken away, not its rise."""
    def path(x: float) -> float:   # the path's true rise: 90 us from 10 to 25 us of the device's
        return 0.0 if x <= 10 else 90.0 * min(1.0, (x - 10.0) / 15.0) + max(0.0, x - 25.0) * 0.05

    # as the floors measured it: flat to 30 us, then 100 by 100 us
    floor = measure.Floor({}, measure.Times(), (1.0, 10.0, 30.0, 100.0, 1000.0), (0.0, 0.0, 0.0, 100.0, 150.0),
                          rise_error=(0.0, 5.0, 5.0, 5.0, 5.0))
    for unit, reads_first, merges in ((4096, True, True), (4096, True, False), (0, False, False)):
        device = _times(unit, reads_first, merges, n=200)
        on_path = {k: [300.0 + x + path(x) for x in v] for k, v in device.items()}
        floor.at.update({k: 300.0 for k in device})
        found = fit.fit(on_path, floor, 512)
        assert (found.unit, found.reads_first.found, found.merges.found) == (unit, reads_first, merges), \
            found.reads_first.said()
        if merges:   # the device's times as the floor takes them: the read first under its least step
            assert not fit.step(found.net, "partial-cold", "aligned-4096", measured=on_path).found
            assert found.reads_first.difference_us > 80.0   # 80 us of the device's and the path's rise


def test_the_media_rate_is_the_line_of_the_medians_and_each_time_the_models_own_points():
    found = fit.fit(_times(4096, True, False, mbps=1000.0), None, 512)
    assert found.write_mbps == pytest.approx(1000.0, rel=0.02) and found.params["write-mbps"] == "1000"
    assert found.read_mbps == pytest.approx(2800.0, rel=0.02)
    write = found.params["write"]
    assert write.startswith("pct:1=") and write.endswith(tuple(f"100={v:.1f}" for v in (20.6, 20.7)))
    profiles.check("the fitted profile", found.params)  # the model takes every parameter
    flat = fit.fit({k: [5.0] * 30 for k in _times(0, False, False)}, None, 512)
    assert flat.params["write-mbps"] == "0" and "no positive slope" in flat.notes["write-mbps"]


def test_the_medians_interval_holds_the_median_and_widens_with_fewer_samples():
    import numpy as np
    xs = np.random.default_rng(1).lognormal(4, 1, 400)
    low, high = fit.median_interval(xs)
    assert low < np.median(xs) < high
    low2, high2 = fit.median_interval(xs[:40])
    assert high2 - low2 > high - low


def _pct_points(spec: str) -> dict[float, float]:
    return {float(k): float(v) for k, v in (x.split("=") for x in spec.removeprefix("pct:").split(","))}


def test_the_paths_spread_is_taken_out_of_a_fitted_time_and_a_fixed_time_stays_fixed():
    """A time measured through a path with a skewed spread of its own (the floor's, less its
    median): the fitted time served through the same path again gives what was measured (the
    median and the tail), where the samples' own points, the path's spread in them twice, give a
    median a tenth higher; a fixed time under a wider path is fitted as fixed."""
    import numpy as np
    rng = np.random.default_rng(3)
    x = 200 * np.exp(rng.normal(0, np.log(10) / 2.326, 4000))      # a lognormal: 200 us median, p99 2 ms
    path, floor, again = (rng.gamma(2, 60, 4000) for _ in range(3))
    path, floor, again = (v - np.median(v) for v in (path, floor, again))
    measured = x + path

    def served(spec: str) -> np.ndarray:   # the fitted time's draws, through the path again
        points = _pct_points(spec)
        return np.interp(rng.uniform(1, 100, 4000), list(points), list(points.values())) + again

    fitted = fit.deconvolved_pct(measured, floor)
    naive, taken = served(fit.pct(measured)), served(fitted)
    # the fitted time is the device's own from the 30th to the 90th percentile, within 8 % (the
    # iteration it replaced ran into steps: 28 % low at the 30th)
    body = [_pct_points(fitted)[q] for q in (30, 50, 70, 90)]
    assert np.abs(np.asarray(body) / np.percentile(x, (30, 50, 70, 90)) - 1).max() < 0.08, body
    def error(xs, q):   # the q-quantile's 95 % interval's half-width
        low, high = fit.quantile_interval(xs, q)
        return (high - low) / 2

    for q in (0.5, 0.9, 0.99):   # within the two samples' own error of the quantile
        assert abs(np.quantile(taken, q) - np.quantile(measured, q)) < np.hypot(error(taken, q), error(measured, q)), q
    gap = np.quantile(naive, 0.5) - np.quantile(measured, 0.5)   # the spread twice
    assert gap > np.hypot(error(naive, 0.5), error(measured, 0.5)) and gap > 0.08 * np.quantile(measured, 0.5)
    assert fit.deconvolved_pct(np.full(4000, 20.0) + path, floor) == "fixed:20.0"
    assert fit.deconvolved_pct(x, None) == fit.pct(x)


def test_a_few_outliers_in_the_paths_spread_do_not_make_a_wide_time_fixed():
    """A guest's floor pool at one sleep (185 times) held one 4 ms over its median: a test of means
    took a lognormal disk's writes (an interquartile range six times the pool's) for no wider than
    the path and fitted them as fixed. Their distances from the median are what is compared."""
    import numpy as np
    rng = np.random.default_rng(5)
    x = 200 * np.exp(rng.normal(0, np.log(10) / 2.326, 8000))
    pool = rng.normal(0, 40, 185)
    pool[:3] = (4100.0, 3900.0, 2500.0)      # a few slow ones: the pool's standard deviation past x's
    pool -= np.median(pool)
    measured = x + rng.normal(0, 40, 8000)
    assert np.std(pool) > np.std(measured)   # by standard deviations, the path is the wider
    assert fit.deconvolved_pct(measured, pool).startswith("pct:")
    # and a fixed time under that path stays fixed: its distances are the path's own
    assert fit.deconvolved_pct(np.full(8000, 200.0) + rng.normal(0, 40, 8000), pool).startswith("fixed:")


def test_the_paths_spread_taken_out_of_a_time_is_the_one_at_the_sleep_nearest_it():
    """A guest's path at a sleep of 1 us, before its step, is skewed (a quarter of its times 55 us
    and more over its median, a tenth 133); here the path at 30 us and beyond is not. A lognormal
    200 us drive's times carry that one: deconvolved with the first sleep's, its median comes out
    a fifth low (as in a guest run: 154.5 us fitted, the second probe's medians 50-70 us under the
    first's)."""
    import numpy as np
    rng = np.random.default_rng(1)
    skewed = rng.normal(0.0, 12.0, 4000)
    slow = rng.random(4000) < 0.35
    skewed[slow] += rng.exponential(120.0, slow.sum()) + 40.0
    skewed -= np.median(skewed)
    sleeps = (1.0, 30.0, 100.0, 300.0, 1000.0)
    path = fit.Spread(sleeps, (skewed, *(rng.normal(0.0, 15.0, 230) for _ in sleeps[1:])))
    assert list(path.near([0.5, 20.0, 180.0, 250.0, 5000.0])) == [0, 1, 2, 3, 4]
    device = np.exp(rng.normal(np.log(200.0), 0.5, 1000))
    samples = device + path.draw(device, rng.random(1000))

    def off(points: str) -> np.ndarray:   # each fitted point of the body (10th to 90th) against the device's own
        body = [float(x.split("=")[1]) for x in points.removeprefix("pct:").split(",")][2:11]
        return np.asarray(body) / np.percentile(device, fit.POINTS[2:11]) - 1

    assert np.abs(off(fit.deconvolved_pct(samples, path))).max() < 0.12
    # the first sleep's alone: more noise than the times hold, fitted as steps, a tenth and more low
    alone = off(fit.deconvolved_pct(samples, skewed))
    assert alone.min() < -0.12 and np.median(alone) < -0.05
    # a floor keeps its spread at each sleep; one made without them has its first sleep's
    floor = measure.Floor({"w": 0.0}, measure.Times({"w": [5.0, 1.0, 3.0]}), sleeps[:2], spreads=((1.0, -1.0), (4.0,)))
    assert [list(p) for p in floor.spread(["w"]).pools] == [[-1.0, 1.0], [4.0]]
    bare = measure.Floor({"w": 0.0}, measure.Times({"w": [5.0, 1.0, 3.0]}), sleeps[:2])
    assert [list(p) for p in bare.spread(["w"]).pools] == [[-2.0, 0.0, 2.0]] and bare.spread(["x"]) is None


def test_the_floor_is_a_curve_through_its_sleeps_and_a_step_within_its_error_is_not_one():
    floor = measure.Floor({"w": 300.0}, measure.Times(), (100.0, 2000.0, 20000.0), (0.0, 300.0, 1000.0),
                          rise_error=(0.0, 100.0, 200.0), at_error={"a": 30.0, "b": 40.0})
    for device_us in (20.0, 100.0, 1000.0, 2000.0, 9000.0, 30000.0):
        rise = float(__import__("numpy").interp(device_us, floor.sleeps, floor.rises))
        if device_us > 20000:
            rise = 1000.0 + (device_us - 20000.0) * 700.0 / 18000.0
        elif device_us < 100:
            rise = (device_us - 100.0) * 300.0 / 1900.0
        assert floor.less("w", device_us + 300.0 + rise) == pytest.approx(device_us)
        assert floor.rise_at(device_us) == pytest.approx(rise)   # the same curve, beyond the sleeps too
    assert floor.unsure(1050.0) == pytest.approx(50.0) and floor.unsure(50000.0) == pytest.approx(200.0)
    times = {"a": [100.0 + 0.1 * i for i in range(200)], "b": [55.0 + 0.1 * i for i in range(200)]}
    assert fit.step(times, "a", "b").found                      # 45 us at p ~ 0
    assert not fit.step(times, "a", "b", unsure=floor.at_error).found   # within 50 us: the floors' error
    # nor one under a tenth of the faster figure's time as measured, its path's included
    assert not fit.step(times, "a", "b", measured={"b": [460.0] * 200}).found
    assert fit.step(times, "a", "b", measured={"b": [440.0] * 200}).found
    # a flush the path never sent (the longest floor's took less than half its sleep) is not measured
    figures = {**_times(0, False, False), "flush": [10.0 + 0.1 * i for i in range(30)]}
    # (judged at the longest sleep, 5 ms here: at the first, a sleep of 1 us can't tell)
    sent = measure.Floor({"flush": 20.0}, measure.Times({"flush": [20.0] * 30}), last={"flush": 30.0})
    elided = measure.Floor({"flush": 20.0}, measure.Times({"flush": [20.0] * 30}), last={"flush": -4880.0})
    assert fit.fit(figures, sent, 512).params["flush"] != "fixed:0"
    dropped = fit.fit(figures, elided, 512)
    assert dropped.params["flush"] == "fixed:0" and "never reached the floor" in dropped.notes["flush"]
    with pytest.raises(UsageError, match="expected one a sleep"):
        measure.with_floor("x", patterns.layout(2, 512, 8 << 20, 1), 10, floors=("a",), sleeps=(100.0, 200.0))


def test_the_paths_rises_are_made_monotone_by_pooling_not_by_carrying_the_highest():
    """A guest's rises, flat from 30 to 100 us, one sampled high: the monotone fit pools it with its
    neighbours (their weighted mean), where a running maximum carried it to every floor after it."""
    flat = [0.0, 13.0, 54.0, 145.0, 90.0, 92.0, 88.0, 95.0, 91.0, 93.0, 137.0]
    errors = [0.0] + [30.0] * 10
    got = measure._monotone(flat, errors)
    assert got[0] == 0.0 and got[:3] == pytest.approx([0.0, 13.0, 54.0]) and got[-1] == pytest.approx(137.0)
    assert got[3:10] == pytest.approx([sum(flat[3:10]) / 7] * 7)   # 99.1: the seven pooled, equal errors
    assert all(b >= a for a, b in zip(got, got[1:]))
    rising = [0.0, 10.0, 40.0, 90.0, 150.0]
    assert measure._monotone(rising, [0.0, 5.0, 5.0, 5.0, 5.0]) == pytest.approx(rising)
    # a rise known better weighs more where two are pooled; one below the first's 0 is held at it
    pooled = (60 / 100 + 30 / 900) / (1 / 100 + 1 / 900)
    assert measure._monotone([0.0, 60.0, 30.0], [0.0, 10.0, 30.0])[1] == pytest.approx(pooled)
    assert measure._monotone([0.0, -8.0, 5.0], [0.0, 10.0, 10.0])[:2] == pytest.approx([0.0, 0.0], abs=1e-6)


def test_an_own_floor_is_the_target_answering_as_each_floor_in_its_turns_and_as_itself_between():
    """measure.OwnFloor (the guest's round trip: a floor disk beside the probed one has a path of its
    own): every floor turn goes to the target itself with its model told to answer as that floor, and
    every turn of the device's with the model answering; a turn that fails leaves the model answering."""
    switched: list[float | None] = [None]
    seen = []

    def answering(sleep_us: float | None) -> None:
        switched[0] = sleep_us

    def runner(target, requests, timeout_s):   # the path adds 50 us; the device's own time is 30 us
        seen.append((target, switched[0]))
        n = len(requests.splitlines())
        return 0, json.dumps({"ns": [1000 * (50 + (switched[0] or 30))] * n, "transport": "fake"}), ""

    layout = patterns.layout(20, 512, patterns.needed_bytes(20, 512), 1)
    sleeps = measure.GUEST_FLOOR_SLEEPS_US
    times, floor = measure.with_floor("/dev/vdb", layout, 10, runner, measure.OwnFloor(answering), sleeps)
    assert seen == [("/dev/vdb", x) for x in (None, *sleeps)] * measure.CHUNKS and switched == [None]
    assert set(floor.at.values()) == {50.0} and floor.rises == (0.0,) * len(sleeps)
    assert {floor.less(k, x) for k, v in times.us.items() for x in v} == {30.0}

    def failing(target, requests, timeout_s):
        return (1, "", "redo-writer io: EIO") if switched[0] else runner(target, requests, timeout_s)
    with pytest.raises(SectorlabError, match="EIO"):
        measure.with_floor("/dev/vdb", layout, 10, failing, measure.OwnFloor(answering), sleeps)
    assert switched == [None]


def test_how_far_the_paths_rise_moved_between_the_turns_is_what_a_time_near_it_is_known_to():
    """The path at a device's 200 us moved by tens of microseconds between runs seconds apart in a
    guest, where its first floor did not: each turn's rise against its own first floor, the largest
    less the smallest, is what a figure's path time near that sleep is known to; a move of the
    whole path (every floor and the device's turns alike) is the first floor's drift, not counted again."""
    switched: list[float | None] = [None]
    turn = [-1]

    def answering(sleep_us: float | None) -> None:
        switched[0] = sleep_us

    def runner(target, requests, timeout_s):   # the path: 50 us, 40 more at 100 us and beyond in the third
        if switched[0] is None:                # turn; the whole path 30 us more in the fourth
            turn[0] += 1
        sleep = switched[0] or 30.0
        path = 50.0 + (40.0 if turn[0] == 2 and sleep >= 100 else 0.0) + (30.0 if turn[0] == 3 else 0.0)
        # a flush never reaches the model (a guest's kernel sends none to a write-through disk): 7 us
        ns = [7000 if line.startswith("flush") else 1000 * (path + sleep) for line in requests.splitlines()]
        return 0, json.dumps({"ns": ns, "transport": "fake"}), ""

    layout = patterns.layout(20, 512, patterns.needed_bytes(20, 512), 1)
    sleeps = (1.0, 50.0, 100.0, 200.0)
    _, floor = measure.with_floor("/dev/vdb", layout, 10, runner, measure.OwnFloor(answering), sleeps)
    assert floor.rise_moved == pytest.approx((0.0, 0.0, 40.0, 40.0))
    assert floor.unsure(50.0) == pytest.approx(0.0) and floor.unsure(150.0) == pytest.approx(40.0)
    assert max(floor.drift.values()) == pytest.approx(30.0)   # the whole path's move: the first floor's
    # the flush, which never reached the floor's model, is in none of the path's rise, spread or moves
    reaching = sum(len(v) for k, v in floor.times.us.items() if k != "flush")
    assert not floor.reached("flush") and len(floor.spreads[0]) == reaching


# --- redo-writer io --------------------------------------------------------------------------------

def _io(binary, *args, stdin: str | bytes | None = None):
    raw = isinstance(stdin, bytes)
    out = subprocess.run([binary, "io", *map(str, args)], input=stdin, capture_output=True, text=not raw, timeout=60)
    if raw:
        out.stdout, out.stderr = out.stdout.decode(), out.stderr.decode()
    return out


def test_io_times_each_request_on_a_file_it_makes_as_large_as_they_reach(binaries, tmp_path):  # noqa: F811
    out = _io(binaries[0], "--target", tmp_path / "t.img", "--requests", "-",
              stdin="write-durable 0 4096\nwrite 8192 512\nflush\nread 0 4096\n")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["transport"] == "file" and doc["requests"] == 4 and len(doc["ns"]) == 4 and all(doc["ns"])
    assert (tmp_path / "t.img").stat().st_size == 8704 == doc["size_bytes"]


BAD_IO = [  # (id, requests, what the line says)
    ("unknown-op", "trim 0 4096\n", "expected write, write-durable, read or flush"),
    ("no-length", "write 0\n", "expected OFFSET LENGTH"),
    ("sign", "write -512 512\n", "expected OFFSET LENGTH"),
    ("hex", "write 0x200 512\n", "expected OFFSET LENGTH"),
    ("unaligned", "write 100 512\n", "multiples of 512"),
    ("zero-length", "read 0 0\n", "a length of 512 to"),
    ("too-long", "write 0 33554432\n", "a length of 512 to 16777216"),
    ("flush-with-range", "flush 0 512\n", "flush takes no offset"),
    ("long-line", "write " + "0" * 200 + " 512\n", "longer than 96 bytes"),
    ("control", "write 0 512\x1b[2J\n", "expected OFFSET LENGTH"),
    ("empty", "", "holds no request"),
    ("not-utf8", b"\xff\xfe 0 512\n", "expected write"),
    ("trailing-space", "write 0 512 \n", "expected OFFSET LENGTH"),
    ("flush-trailing-space", "flush \n", "flush takes no offset"),
    ("nul", b"write 0 512\x00rest\nflush\n", "holds a NUL byte"),
    ("offset-2^60", f"read {1 << 60} 512\n", "the offset below 2^60"),
]


@pytest.mark.parametrize("text,says", [c[1:] for c in BAD_IO], ids=[c[0] for c in BAD_IO])
def test_io_refuses_a_bad_request_in_one_line_and_makes_no_file(binaries, tmp_path, text, says):  # noqa: F811
    out = _io(binaries[0], "--target", tmp_path / "t.img", "--requests", "-", stdin=text)
    assert out.returncode == 2 and out.stdout == "" and out.stderr.count("\n") == 1, out.stderr
    assert says in out.stderr and out.stderr.startswith("redo-writer: "), out.stderr
    assert not (tmp_path / "t.img").exists()


def test_io_refuses_a_request_past_the_file_or_off_the_logical_block_and_writes_nothing(binaries, tmp_path):  # noqa: F811
    img = tmp_path / "t.img"
    img.write_bytes(b"\x07" * 8192)
    out = _io(binaries[0], "--target", img, "--requests", "-", stdin="write 0 4096\nwrite 8192 512\n")
    assert out.returncode == 2 and "request 2: write 8192 512" in out.stderr and "within its 8192 bytes" in out.stderr
    assert img.read_bytes() == b"\x07" * 8192  # the first request was not issued either


def test_io_over_nbd_sends_a_durable_write_with_fua_and_a_plain_one_without(redo_writer, serve):  # noqa: F811
    disk = serve({})
    out = _io(redo_writer, "--target", disk.uri(), "--requests", "-", "--reply-spin-us", 1000,
              stdin="write-durable 0 4096\nwrite 4096 4096\nflush\nread 0 8192\n")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["transport"] == "nbd"
    assert disk.stop()
    rows = [(r.op, r.offset, r.length, r.fua) for r in trace.read(disk.trace)]
    assert rows == [("write", 0, 4096, 1), ("write", 4096, 4096, 0), ("flush", 0, 0, 0), ("read", 0, 8192, 0)], rows


# --- the profile -----------------------------------------------------------------------------------

def test_a_fitted_profile_is_written_and_read_back_as_a_catalog_profile(tmp_path):
    found = fit.fit(_times(4096, True, True), None, 512)
    entry = profile.entry(found, "ACME SSD 9 (/dev/sdq)", "2026-11-29", "volatile",
                          "measured: the kernel's queue/write_cache says write back", "ACME SSD 9, probed")
    path = profile.write(tmp_path / "p.toml", "acme", entry)
    got = profile.load(path)
    assert got.name == "acme" and got.params == found.params and got.write_cache == "volatile"
    assert got.evidence["write"] == "measured" and got.evidence["channels"] == "assumed"
    assert got.sources["write"].startswith("measured: probe of ACME SSD 9 (/dev/sdq) on 2026-11-29: ")
    assert got.write_unit == 4096


@pytest.mark.parametrize("edit,says", [
    (lambda t: t.replace('write = "measured: ', 'wrote = "', 1), "no source for write"),
    (lambda t: t.replace('write_cache = "volatile"', 'write_cache = "maybe"'), "write_cache is 'maybe'"),
    (lambda t: t.replace('channels = "1"', 'channels = "0"'), "channels"),
    (lambda t: t.replace("[profile", "[other"), r"no \[profile\] table"),
    (lambda t: t + "\n[profile.params.nested]\nx = 1\n", "device profile"),
])
def test_a_bad_profile_file_is_one_line(tmp_path, edit, says):
    found = fit.fit(_times(4096, True, False), None, 512)
    path = profile.write(tmp_path / "p.toml", "acme", profile.entry(
        found, "d", "2026-11-29", "volatile", "measured: write back", "d"))
    path.write_text(edit(path.read_text()))
    with pytest.raises(UsageError, match=says):
        profile.load(path)


# --- sectorlab probe -------------------------------------------------------------------------------

def _probe(capsys, *args) -> tuple[int, str]:
    rc = cli.main(["probe", *map(str, args)])
    return rc, capsys.readouterr().err


def _everything(root: Path) -> set:
    return {(p, p.stat().st_size) for p in root.rglob("*")}


@pytest.mark.parametrize("kind", ["existing-file", "char-device", "missing", "block-device", "empty", "bad-name"])
def test_a_probe_of_what_it_must_not_write_is_one_line_and_writes_nothing(tmp_path, capsys, kind):
    (tmp_path / "data.dbf").write_bytes(b"precious")
    results = tmp_path / "results"
    before = _everything(tmp_path)
    block = next((f"/dev/{d}" for d in ("vda", "sda", "nvme0n1") if os.path.exists(f"/dev/{d}")), None)
    if kind == "block-device" and block is None:
        pytest.fail("this host has no /dev/vda, /dev/sda or /dev/nvme0n1 to refuse")
    target, extra, says = {
        "existing-file": (tmp_path / "data.dbf", [], "is an existing file: it holds data"),
        "char-device": ("/dev/null", [], "neither a directory, a block device nor an NBD URI"),
        "missing": (tmp_path / "nope", [], "No such file or directory"),
        "block-device": (block, [], "expected --destroy-data"),
        "empty": ("", [], "the target is empty"),
        "bad-name": (tmp_path, ["--name", "a/b"], "--name 'a/b'"),
    }[kind]
    rc, err = _probe(capsys, target, "--results", results, *extra)
    assert rc == 2 and err.count("\n") == 1 and says in err, err
    assert _everything(tmp_path) == before and (tmp_path / "data.dbf").read_bytes() == b"precious"


def test_a_directory_on_no_block_device_is_refused(capsys, tmp_path):
    shm = Path("/dev/shm")
    if not shm.is_dir() or os.major(shm.stat().st_dev) != 0:
        pytest.fail("/dev/shm is not a filesystem on no block device here (tmpfs expected)")
    rc, err = _probe(capsys, shm, "--results", tmp_path / "r")
    assert rc == 2 and "on no block device" in err, err
    assert not any(p.name.startswith(".sectorlab-probe.") for p in shm.iterdir())


def test_a_probe_that_would_outlast_its_bound_is_refused_after_its_pilot(redo_writer, serve,  # noqa: F811
                                                                        capsys, tmp_path):
    """The pilot (3 samples a figure, past the probe's own region) says how long a request takes; a
    probe over --max-seconds is refused before its first request, and no results are written."""
    disk = serve({"write": "fixed:20000", "read": "fixed:20000", "flush": "fixed:20000"})
    rc, err = _probe(capsys, disk.uri(), "--destroy-data", "--samples", 20, "--max-seconds", 10,
                     "--results", tmp_path / "r")
    assert rc == 2 and "over --max-seconds 10" in err and "give fewer --samples" in err, err
    assert not (tmp_path / "r").exists() or not any((tmp_path / "r").iterdir())
    assert disk.stop()
    pilot = patterns.layout(run_mod.PILOT_SAMPLES, 512, patterns.needed_bytes(run_mod.PILOT_SAMPLES, 512), 2,
                            base=patterns.needed_bytes(20, 512))
    served = trace.read(disk.trace)
    assert len(served) == len(pilot.requests)  # the pilot's, and not one of the probe's
    assert min(r.offset for r in served if r.op == "write") >= patterns.needed_bytes(20, 512)


def test_an_nbd_export_is_written_only_with_destroy_data(capsys, tmp_path):
    rc, err = _probe(capsys, "nbd+unix:///?socket=/nonexistent.sock", "--results", tmp_path / "r")
    assert rc == 2 and "is an NBD export: the probe writes over it; expected --destroy-data" in err, err


def test_a_probe_of_a_file_on_this_hosts_disk_writes_a_profile_the_lab_reads(redo_writer, capsys, tmp_path):  # noqa: F811
    scratch = tmp_path / "fs"
    scratch.mkdir()
    rc, err = _probe(capsys, scratch, "--samples", 20, "--name", "this-disk", "--results", tmp_path / "r")
    assert rc == 0, err
    (out,) = (tmp_path / "r").iterdir()
    assert out.name.endswith("-probe-this-disk") and not list(scratch.iterdir())  # its file's name was never left
    doc = json.loads((out / "probe.json").read_text())
    assert doc["kind"] == "file" and doc["floor"] is None and doc["samples"] == 20
    # every figure's 20, but those of the run's first measure.WARMUP requests (issued, not timed)
    warm = patterns.layout(20, doc["logical"], patterns.needed_bytes(20, doc["logical"]), doc["seed"]).labels
    warm = warm[:measure.WARMUP]
    assert {k: s["n"] for k, s in doc["summaries"].items()} == {k: 20 - warm.count(k) for k in doc["summaries"]}
    assert sum(s["n"] for s in doc["summaries"].values()) < 20 * len(doc["summaries"])
    assert "append-512" in doc["summaries"]
    got = profile.load(out / "profile.toml")
    said = doc["queue"]["write_cache"]
    assert got.name == "this-disk" and got.write_cache == {"write back": "volatile", "write through": "none"}[said]
    assert got.evidence["write_cache"] == ("measured" if said == "write back" else "assumed")
    md = (out / "report.md").read_text()
    assert md.startswith("# Probe: ") and "**Redo on this device**" in md and "report-probe.png" in md
    assert (out / "report-probe.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and (out / "report.html").exists()
    assert f"The first {measure.WARMUP} requests of each run issued and not timed." in md
    # random 4 KiB reads at each queue depth, through fio on the probe's own file; the channels they tell
    # in the profile (measured where the rate stopped growing, assumed at the least found busy where not)
    assert [(d["depth"], d["n"]) for d in doc["depths"]] == [(k, depth.samples(20)) for k in depth.DEPTHS]
    told = doc["channels"]["told"]
    assert got.params["channels"] == str(doc["channels"]["value"])
    assert got.evidence["channels"] == ("measured" if told else "assumed")
    assert "## Queue depths" in md
    assert f"**Requests served at once (channels)**: {doc['channels']['said']} (no floor" in md
    assert got.sources["channels"].endswith(depth.NO_FLOOR + ("" if told else f": taken as {doc['channels']['value']}"))


def test_the_devices_queue_is_read_from_the_whole_disk_under_a_partition(tmp_path):
    t = target.resolve(str(tmp_path), destroy_data=False)
    assert t.kind == "file" and t.device.endswith(")") and t.logical in (512, 4096)
    assert set(t.queue) == set(target.QUEUE) and t.queue["logical_block_size"] in ("512", "4096")
    parts = [p for p in Path("/sys/class/block").iterdir() if (p / "partition").exists()]
    for part in parts:  # a partition's device number leads to its whole disk, whose queue/ the kernel has
        major, minor = (part / "dev").read_text().split(":")
        whole = target._block_of(os.makedev(int(major), int(minor)))
        assert whole is not None and (whole / "queue" / "logical_block_size").exists() and whole.name != part.name


# --- a lab disk served with a probed profile ---------------------------------------------------------

def _lab_toml(device: str) -> str:
    """A lab of one disk on 512e served by `device`, written by tomli-w (a path may hold a quote)."""
    import tomli_w
    return tomli_w.dumps({"vm": [{"name": "lab1", "disk": [{"name": "d1", "bus": "virtio", "geometry": "sector512e",
                                                           "device": device}]}]})


def test_a_lab_disk_names_a_probed_profile_file_and_its_model_gets_its_parameters(tmp_path):
    from sectorlab import labdef
    from sectorlab.lab import modelled
    found = fit.fit(_times(4096, True, False), None, 512)
    path = profile.write(tmp_path / "p.toml", "acme", profile.entry(
        found, "ACME SSD 9 (/dev/sdq)", "2026-11-29", "volatile", "measured: write back", "ACME SSD 9, probed"))
    lab = tmp_path / "lab.toml"
    lab.write_text(_lab_toml(str(path)))
    vm = labdef.load(lab).vms[0]
    assert vm.profile(vm.disks[0]) == str(path)
    assert modelled.params(str(path), 512, 4096) == {**found.params, "physical-sector": "4096"}
    assert profiles.get(str(path)).presented == "write back"  # a volatile cache: Linux sends it flushes


@pytest.mark.parametrize("device,says", [
    ("{tmp}/nope.toml", "No such file"),
    ("{tmp}/bad.toml", r"no \[profile\] table"),
])
def test_a_lab_disk_naming_a_bad_profile_file_is_one_line(tmp_path, device, says):
    from sectorlab import labdef
    (tmp_path / "bad.toml").write_text("[other]\nx = 1\n")
    lab = tmp_path / "lab.toml"
    lab.write_text(_lab_toml(device.format(tmp=tmp_path)))
    with pytest.raises(UsageError, match=says) as e:
        labdef.load(lab)
    assert "\n" not in str(e.value) and "device = " in str(e.value)


def test_a_probe_record_of_hostile_text_is_a_report_of_one_line_cells(tmp_path):
    """A probe.json's device, host, notes and figure names as a stranger could write them: each on
    one line of the report and its '|' escaped (the renderer's one_line and cell); a figure name that
    is not one is a row, not a crash."""
    from labtests.unit.report.test_report_kinds import _probe as make_probe
    from sectorlab.report import probe as report
    make_probe(tmp_path)
    doc = json.loads((tmp_path / "probe.json").read_text())
    doc["device"] = "ACME | evil\n# heading <script>"
    doc["host"] = "h\x1b[2J"
    doc["notes"]["write"] = "a|b\nc"
    doc["summaries"]["aligned-x|y"] = doc["summaries"]["aligned-4096"]
    doc["times_us"]["aligned-x|y"] = doc["times_us"]["aligned-4096"]
    (tmp_path / "probe.json").write_text(json.dumps(doc))
    report.write(tmp_path)
    md = (tmp_path / "report.md").read_text()
    assert md.splitlines()[0] == "# Probe: ACME | evil\\n# heading <script>"
    assert "\n# heading" not in md and "\x1b" not in md
    assert "| aligned-x\\|y |" in md and "| write | " in md and "a\\|b\\nc" in md
    assert "<script>" not in (tmp_path / "report.html").read_text()


def test_the_path_is_known_to_no_better_than_two_probes_curves_agree_at_a_figures_time():
    """roundtrip.path_known: each probe's own (its move between turns and its rise's interval), or,
    where more, the turns' moves and the two rise curves' distance at either figure's median."""
    from sectorlab.probe import roundtrip

    def probe(median: float, rises: tuple[float, ...], moved: float) -> roundtrip.Probe:
        floor = measure.Floor({"a": 300.0}, measure.Times(), (1.0, 100.0, 300.0), rises, {"a": moved},
                              (0.0, 10.0, 10.0))
        s = fit.summary([median] * 50)
        found = fit.Fit({"a": s}, {"a": [median] * 50}, 0, [], None, None, 0.0, 0.0, {})
        return roundtrip.Probe(found, {}, {"a": moved + floor.unsure(median)}, floor)

    first, second = probe(200.0, (0.0, 100.0, 150.0), 5.0), probe(150.0, (0.0, 100.0, 250.0), 7.0)
    # at 200 us the curves give 125 and 175, at 150 us 112.5 and 137.5: 50 apart, with the moves 62
    assert roundtrip.path_known(first, second, "a") == pytest.approx(5.0 + 7.0 + 50.0)
    alike = probe(150.0, (0.0, 100.0, 150.0), 7.0)
    assert roundtrip.path_known(first, alike, "a") == pytest.approx(5.0 + 10.0 + 7.0 + 10.0)   # their own
    # told from the path where it is known to less than half the median: 32 us of 200 is, 37 of 60 is not
    assert roundtrip.untold(first, alike) == []
    assert roundtrip.untold(probe(60.0, (0.0, 100.0, 150.0), 5.0), second) == ["a"]


def test_a_difference_the_test_finds_under_the_least_step_says_so():
    """A partial write 5 us slower than a whole one in every one of 200 samples: Mann-Whitney finds it
    (p far under 0.001) but 5 us is under the least step (10 us): no step, and the verdict says why,
    not a bare "no step" beside a p of 1e-70."""
    fast = [50.0 + i % 7 for i in range(200)]
    found = fit.step({"slow": [x + 5.0 for x in fast], "fast": fast}, "slow", "fast")
    assert found.p < fit.STEP_ALPHA and not found.found
    assert found.said().endswith(": no step: under the least step, 10.0 us"), found.said()
    assert fit.step({"slow": [x + 50.0 for x in fast], "fast": fast}, "slow", "fast").said().endswith(": a step")
