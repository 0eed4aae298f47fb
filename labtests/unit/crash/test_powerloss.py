"""What a power cut leaves of a run's writes (sectorlab/crash/powerloss.py), on the device model's
own decisions in virtual time (devicemodel/simulate): durable writes survive; a write cut before its
window (queued, positioning, reading the sector it modifies) is lost with its old bytes whole; one
cut in its window (its units going onto the medium at the media rate) lands unit by unit, and only
an unprotected drive leaves a unit unreadable; the same seed gives the same state."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labtests.support.depth import examples
from labtests.unit.devices.test_devicemodel import simulate
from sectorlab.crash import powerloss
from sectorlab.devices import profiles
from sectorlab.errors import UsageError


def rules(power_loss="protected", write_cache="none", unit=4096, sized=False, destage=0.0):
    return powerloss.Rules("test", power_loss, write_cache, sized, unit, destage)


def test_a_cut_keeps_durable_writes_loses_queued_ones_and_tears_the_one_in_its_window():
    """Three 4 KiB writes at 0, 10 and 20 us on a disk with no cache, 60 us of positioning and
    4 KiB at 102.4 MB/s (40 us) each: done at 100, 200 and 300 us, their windows the last 40 us of
    each. A cut at 180 us finds the first durable, the second in its window (160-200) and the third
    still queued; at 130 us the second is positioning: lost whole, nothing of it landed."""
    rows = simulate("0 write 0 4096\n10 write 4096 4096\n20 write 8192 4096\n", write="fixed:60", write_mbps=102.4)
    state = powerloss.cut(rows, rules(unit=512), 180, random.Random(1))
    assert (state.writes_durable, state.writes_torn, state.writes_lost) == (1, 1, 1)
    assert state.landed[0] == (0, 4096) and not state.unreadable
    torn = state.landed[1:]
    assert all(4096 <= off < 8192 and length == 512 for off, length in torn)  # whole 512-byte units
    assert powerloss.cut(rows, rules(unit=512), 180, random.Random(1)) == state  # a seed, a state
    before = powerloss.cut(rows, rules(unit=512), 130, random.Random(1))
    assert (before.writes_durable, before.writes_torn, before.writes_lost) == (1, 0, 2)
    assert before.landed == ((0, 4096),)


def test_a_cut_while_positioning_or_reading_the_sector_leaves_it_whole_and_only_the_transfer_tears():
    """A 512-byte write into a 4 KiB physical sector of an unprotected drive: 8 ms of positioning,
    the sector read (8 ms), then the whole sector written back at 140 MB/s (29.26 us). Cuts in the
    positioning and in the read leave the old bytes whole, whatever the seed: the write is lost,
    not torn. Cuts in the transfer tear by the unit rules: old, new or unreadable, the sector's
    neighbours included. At 70 MB/s the window is twice as long; so is the share of the run a cut
    can tear in (exposure)."""
    def rows_at(mbps):
        return simulate("0 write 512 512\n", write="fixed:8000", read="fixed:8000", write_mbps=mbps,
                        physical_sector=4096)
    unprotected = rules("unprotected", unit=4096)
    rows = rows_at(140)
    (w,) = rows
    ((start, end),) = powerloss.windows(rows, [], unprotected)
    assert (start, end) == (pytest.approx(w.media_us), pytest.approx(w.durable_us))
    assert end - start == pytest.approx(4096 / 140, abs=0.002) and start > 8000 + 8000 - 30  # after the read
    for at in (10.0, 4000.0, 7999.0, 8100.0, 12000.0, start - 0.01):  # positioning, then the read
        for seed in range(20):
            s = powerloss.cut(rows, unprotected, at, random.Random(seed))
            assert (s.writes_lost, s.writes_torn, s.landed, s.unreadable) == (1, 0, (), ()), (at, seed)
    outcomes = set()
    for seed in range(60):
        s = powerloss.cut(rows, unprotected, powerloss.inside([(start, end)], random.Random(seed)), random.Random(seed))
        assert s.writes_torn == 1
        outcomes.add("unreadable" if s.unreadable else "new" if s.landed else "old")
        assert s.unreadable in ((), ((0, 4096),))  # the whole sector, its neighbours' 3.5 KiB with it
    assert outcomes == {"old", "new", "unreadable"}
    assert powerloss.cut(rows, unprotected, end, random.Random(1)).writes_durable == 1
    slow = powerloss.windows(rows_at(70), [], unprotected)
    assert slow[0][1] - slow[0][0] == pytest.approx(2 * (end - start), abs=0.004)
    assert powerloss.exposure(slow, 0, 20000) == pytest.approx(2 * powerloss.exposure([(start, end)], 0, 20000),
                                                                rel=1e-3)


def test_windows_merge_and_a_moment_inside_them_is_drawn_in_proportion_to_their_length():
    spans = [(0.0, 10.0), (100.0, 130.0)]
    assert powerloss.exposure(spans, 0, 200) == 0.2
    draws = [powerloss.inside(spans, random.Random(i)) for i in range(2000)]
    assert all(0 <= d <= 10 or 100 <= d <= 130 for d in draws)
    assert 400 < sum(d <= 10 for d in draws) < 600  # a quarter of the length, a quarter of the draws
    rows = simulate("0 write 0 4096\n0 write 4096 4096\n", write="fixed:10", write_mbps=102.4, channels=2)
    assert powerloss.windows(rows, [], rules(unit=512)) == [(pytest.approx(10), pytest.approx(50))]  # overlapping
    with pytest.raises(Exception, match="no write was in its window"):
        powerloss.inside([], random.Random(1))


def test_the_rule_by_which_a_cell_cannot_lose_an_acknowledged_write():
    """A protected drive never does; an unprotected one cannot when every write covers whole units,
    and can when one covers a unit in part."""
    partial = simulate("0 write 512 512\n", write="fixed:100", write_mbps=140, physical_sector=4096)
    whole = simulate("0 write 4096 4096\n", write="fixed:100", write_mbps=140, physical_sector=4096)
    assert "protected drive" in powerloss.cannot_lose(rules("protected"), partial, [])
    assert "whole 4096-byte atomic units" in powerloss.cannot_lose(rules("unprotected"), whole, [])
    assert powerloss.cannot_lose(rules("unprotected"), partial, []) is None


def test_only_an_unprotected_drive_leaves_a_partly_written_unit_unreadable():
    """A 512-byte write into a 4 KiB physical sector, cut in its window, 300 times: a protected
    drive leaves it old or new; an unprotected one also unreadable (the whole sector), about a
    third of the time."""
    rows = simulate("0 write 512 512\n", write="fixed:100", write_mbps=140, physical_sector=4096)
    outcomes = {"protected": [], "unprotected": []}
    for kind in outcomes:
        rng = random.Random(7)
        for _ in range(300):
            s = powerloss.cut(rows, rules(kind, unit=4096), 90, rng)
            outcomes[kind].append("unreadable" if s.unreadable else "new" if s.landed else "old")
    assert set(outcomes["protected"]) == {"old", "new"}
    assert 60 < outcomes["unprotected"].count("unreadable") < 140, outcomes["unprotected"].count("unreadable")
    s = next(powerloss.cut(rows, rules("unprotected"), 90, random.Random(i)) for i in range(50)
             if powerloss.cut(rows, rules("unprotected"), 90, random.Random(i)).unreadable)
    assert s.unreadable == ((0, 4096),)  # the neighbours' 3.5 KiB with it


def test_the_assumed_shares_decide_how_often_a_tear_hurts_not_whether_it_can():
    """The odds of a tear's outcomes, swept: no unreadable share, never unreadable; all of it,
    always (on the unit written in part); `new` 0 leaves every torn unit old, 1 new. A share outside
    0-1 is one line."""
    rows = simulate("0 write 512 512\n", write="fixed:100", write_mbps=140, physical_sector=4096)
    def outcomes(**shares):
        r = powerloss.Rules("test", "unprotected", "none", False, 4096, 0.0, powerloss.Shares(**shares))
        states = [powerloss.cut(rows, r, 90, random.Random(seed)) for seed in range(200)]
        return {"unreadable" if s.unreadable else "new" if s.landed else "old" for s in states}
    assert outcomes(unreadable=0.0) == {"old", "new"}
    assert outcomes(unreadable=1.0) == {"unreadable"}
    assert outcomes(unreadable=0.0, new=0.0) == {"old"} and outcomes(unreadable=0.0, new=1.0) == {"new"}
    for bad in (-0.1, 1.5, True, "half"):
        with pytest.raises(UsageError, match=r"the share unreadable = .*: expected a probability from 0 to 1"):
            powerloss.Shares(unreadable=bad)


def test_a_volatile_cache_keeps_a_write_until_it_drains_or_a_flush_completes():
    """hdd-7200-wce's model: two 4 KiB writes cached in 20 us, destaged in order at 140 MB/s (the
    first from 0 to 29.3 us, the second to 58.5); a cut at 21 us, after both were answered, finds the
    first half drained (torn) and the second not begun (lost). A flush-only volatile
    disk (no cache size) keeps a write only once a flush that arrived after its answer is done."""
    params = profiles.get("hdd-7200-wce").params
    rows = simulate("0 write 0 4096\n0 write 4096 4096\n", **{k.replace("-", "_"): v for k, v in params.items()})
    r = powerloss.Rules.of("hdd-7200-wce", params, 512)
    assert (r.write_cache, r.sized_cache, r.destage_mbps) == ("volatile", True, 140)
    assert all(w.answer_us == 20 for w in rows)
    early = powerloss.cut(rows, r, 21, random.Random(1))
    assert (early.writes_torn, early.writes_lost, early.writes_durable) == (1, 1, 0)
    assert powerloss.acknowledged_at(rows, []) == [math.inf, math.inf]  # no FUA and no flush: never acknowledged
    fua = simulate("0 write 0 4096 fua\n", **{k.replace("-", "_"): v for k, v in params.items()})
    assert powerloss.acknowledged_at(fua, []) == [fua[0].answer_us] and fua[0].cached == 0  # FUA: past the cache
    late = powerloss.cut(rows, r, 100, random.Random(1))
    assert late.writes_durable == 2 and late.landed == ((0, 4096), (4096, 4096))  # 8 KiB drain in 58.5 us
    flush_only = rules(write_cache="volatile", unit=512)
    rows = simulate("0 write 0 4096\n200 flush 0 0\n", write="fixed:100", flush="fixed:1000")
    assert powerloss.cut(rows, flush_only, 150, random.Random(1)).writes_lost == 1  # answered at 100, in the cache
    assert powerloss.cut(rows, flush_only, 700, random.Random(1)).writes_torn == 1  # the flush writing it out
    assert powerloss.cut(rows, flush_only, 1200, random.Random(1)).writes_durable == 1


def test_rules_come_from_the_profile_and_one_without_power_loss_is_one_line():
    r = powerloss.Rules.of("hdd-7200-client", {"physical-sector": "4096", "write-mbps": "140"}, 512)
    assert (r.power_loss, r.unit, r.write_cache) == ("unprotected", 4096, "none")
    assert powerloss.Rules.of("intel-p3700", profiles.get("intel-p3700").params, 4096).unit == 4096
    with pytest.raises(UsageError, match="device profile 'floor' does not state its power_loss"):
        powerloss.Rules.of("floor", {}, 512)
    with pytest.raises(UsageError, match="a cell with a flash log"):
        powerloss.Rules.of("exadata-cell-flashlog", {}, 512)
    for rate in ("0", "fast"):  # no media rate, no window: one line, not a cell that can never tear
        with pytest.raises(UsageError, match=f"device profile 'hdd-7200-client': write-mbps = '{rate}': a crash run "
                                             f"needs the rate") as e:
            powerloss.Rules.of("hdd-7200-client", {"physical-sector": "4096", "write-mbps": rate}, 512)
        assert "\n" not in str(e.value)


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 63), st.sampled_from([512, 1024, 4096, 8192])), min_size=1, max_size=12),
       st.floats(0, 2000), st.sampled_from(["protected", "unprotected"]), st.integers(0, 1000))
def test_a_state_never_invents_bytes_and_every_durable_write_is_whole(writes, cut_us, kind, seed):
    """Whatever the writes and the moment: every landed range lies inside a write submitted before
    the cut, every write durable before it landed whole, unreadable ranges only on an unprotected
    drive, whole units."""
    lines = "".join(f"{i * 50} write {block * 8192} {size}\n" for i, (block, size) in enumerate(writes))
    rows = simulate(lines, write="fixed:120", write_mbps=140, physical_sector=4096)
    r = rules(kind, unit=4096)
    state = powerloss.cut(rows, r, cut_us, random.Random(seed))
    submitted = [w for w in rows if w.t_us <= cut_us]
    for off, length in state.landed:
        assert any(w.offset <= off and off + length <= w.offset + w.length for w in submitted)
    for w in submitted:
        if w.t_us + w.durable_us <= cut_us:
            assert (w.offset, w.length) in state.landed
    assert kind == "unprotected" or not state.unreadable
    assert all(off % 4096 == 0 and length == 4096 for off, length in state.unreadable)
    assert state.writes_durable + state.writes_lost + state.writes_torn == len(submitted)


def test_a_write_without_fua_is_acknowledged_by_the_flush_after_its_reply():
    rows = simulate("0 write 0 4096\n10 write 4096 4096\n200 flush 0 0\n", write="fixed:50", flush="fixed:30")
    writes, flushes = rows[:2], rows[2:]
    # the second write waits 40 us behind the first (answered at 100); the flush arrives at 200, done at 230
    assert powerloss.acknowledged_at(writes, flushes) == [230, 230]


def test_the_flush_that_acknowledges_a_write_is_the_first_to_arrive_at_or_after_its_reply():
    """A flush arriving at the very moment of a write's reply acknowledges it; one before does not;
    a write with no flush after it is never acknowledged (the flushes searched in arrival order)."""
    rows = simulate("0 write 0 4096\n50 flush 0 0\n100 flush 0 0\n300 write 4096 4096\n", write="fixed:100",
                    flush="fixed:10")
    writes, flushes = [rows[0], rows[3]], rows[1:3]
    assert writes[0].answer_us == 100 and flushes[1].t_us == 100
    assert powerloss.acknowledged_at(writes, flushes) == [flushes[1].t_us + flushes[1].answer_us, math.inf]


def test_a_lying_drive_loses_an_acknowledged_write_whole_between_its_acknowledgement_and_its_window():
    """ssd-client-tlc-lying with a hold of 10 ms: a 4 KiB FUA write answered from DRAM in 34 us,
    programmed from 10,000 to 11,125 us. A cut at 5,000 us finds it acknowledged and lost whole (no
    byte of it landed, nothing unreadable); inside its program it tears; the exposure runs from the
    acknowledgement to durability, and no rule holds even though every write covers whole units.
    The honest drive acknowledges it only once programmed: nothing is exposed before its program."""
    g = dict(profiles.get("ssd-client-tlc-lying").params, **{"cache-hold-us": "10000"})
    rows = simulate("0 write 0 4096 fua\n", **{k.replace("-", "_"): v for k, v in g.items()})
    r = powerloss.Rules.of("ssd-client-tlc-lying", g, 4096)
    (ack,) = powerloss.acknowledged_at(rows, [])
    assert ack == 34 and rows[0].media_us == pytest.approx(10000, abs=0.002)
    lost = powerloss.cut(rows, r, 5000, random.Random(1))
    assert (lost.writes_lost, lost.landed, lost.unreadable) == (1, (), ())
    assert powerloss.cut(rows, r, 10500, random.Random(1)).writes_torn == 1
    assert powerloss.windows(rows, [], r) == [(34, pytest.approx(11125, abs=0.002))]
    assert powerloss.acknowledged_early(rows, [], r) == 1 and powerloss.cannot_lose(r, rows, []) is None
    honest_params = profiles.get("ssd-client-tlc").params
    honest = simulate("0 write 0 4096 fua\n", **{k.replace("-", "_"): v for k, v in honest_params.items()})
    h = powerloss.Rules.of("ssd-client-tlc", honest_params, 4096)
    assert powerloss.acknowledged_early(honest, [], h) == 0
    (a, b), = powerloss.windows(honest, [], h)
    assert b - a == pytest.approx(1125, abs=0.002) and "whole 4096-byte" in powerloss.cannot_lose(h, honest, [])


def test_an_honest_flush_answered_as_its_last_write_is_durable_is_not_a_lie_at_a_host_clocks_times():
    """The honest client SSD answers a flush at the moment its last write's program ends; the trace's
    times, at a host clock's 3.6e9 us and written to 0.001 us, can read the reply a rounding before
    durability: that is not an acknowledgement before the write is durable, and the whole-units rule
    holds."""
    params = profiles.get("ssd-client-tlc").params
    rng, t, lines = random.Random(3), 3_600_000_000.0, []
    for i in range(400):
        t += rng.uniform(100, 5000)
        lines.append(f"{t:.3f} write {i * 4096} 4096\n")
        t += rng.uniform(0, 100)
        lines.append(f"{t:.3f} flush 0 0\n")
    requests = "".join(lines)
    rows = simulate(requests, **{k.replace("-", "_"): v for k, v in params.items()})
    writes, flushes = [r for r in rows if r.op == "write"], [r for r in rows if r.op == "flush"]
    r = powerloss.Rules.of("ssd-client-tlc", params, 4096)
    assert powerloss.acknowledged_early(writes, flushes, r) == 0
    assert "whole 4096-byte atomic units" in powerloss.cannot_lose(r, writes, flushes)
