"""What a power cut leaves of a run's writes (sectorlab/crash/powerloss.py), on the device model's
own decisions (devicemodel/simulate): durable writes survive, writes not on the media are lost,
writes on the media land unit by unit, and only an unprotected drive leaves a unit unreadable;
the same seed gives the same state."""

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


def test_a_cut_keeps_durable_writes_loses_queued_ones_and_tears_the_one_on_the_media():
    """Three 4 KiB writes at 0, 10 and 20 us on a 100 us disk with no cache (done at 100, 200 and
    300 us): a cut at 150 us finds the first durable, the second on the media (100-200) and the
    third still queued."""
    rows = simulate("0 write 0 4096\n10 write 4096 4096\n20 write 8192 4096\n", write="fixed:100")
    state = powerloss.cut(rows, rules(unit=512), 150, random.Random(1))
    assert (state.writes_durable, state.writes_torn, state.writes_lost) == (1, 1, 1)
    assert state.landed[0] == (0, 4096) and not state.unreadable
    torn = state.landed[1:]
    assert all(4096 <= off < 8192 and length == 512 for off, length in torn)  # whole 512-byte units
    assert powerloss.cut(rows, rules(unit=512), 150, random.Random(1)) == state  # a seed, a state


def test_only_an_unprotected_drive_leaves_a_partly_written_unit_unreadable():
    """A 512-byte write into a 4 KiB physical sector, cut on the media, 300 times: a protected
    drive leaves it old or new; an unprotected one also unreadable (the whole sector), about a
    third of the time."""
    rows = simulate("0 write 512 512\n", write="fixed:100", physical_sector=4096)
    outcomes = {"protected": [], "unprotected": []}
    for kind in outcomes:
        rng = random.Random(7)
        for _ in range(300):
            s = powerloss.cut(rows, rules(kind, unit=4096), 50, rng)
            outcomes[kind].append("unreadable" if s.unreadable else "new" if s.landed else "old")
    assert set(outcomes["protected"]) == {"old", "new"}
    assert 60 < outcomes["unprotected"].count("unreadable") < 140, outcomes["unprotected"].count("unreadable")
    s = next(powerloss.cut(rows, rules("unprotected"), 50, random.Random(i)) for i in range(50)
             if powerloss.cut(rows, rules("unprotected"), 50, random.Random(i)).unreadable)
    assert s.unreadable == ((0, 4096),)  # the neighbours' 3.5 KiB with it


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
    r = powerloss.Rules.of("hdd-7200-client", {"physical-sector": "4096"}, 512)
    assert (r.power_loss, r.unit, r.write_cache) == ("unprotected", 4096, "none")
    assert powerloss.Rules.of("intel-p3700", profiles.get("intel-p3700").params, 4096).unit == 4096
    with pytest.raises(UsageError, match="device profile 'floor' does not state its power_loss"):
        powerloss.Rules.of("floor", {}, 512)
    with pytest.raises(UsageError, match="a cell with a flash log"):
        powerloss.Rules.of("exadata-cell-flashlog", {}, 512)


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 63), st.sampled_from([512, 1024, 4096, 8192])), min_size=1, max_size=12),
       st.floats(0, 2000), st.sampled_from(["protected", "unprotected"]), st.integers(0, 1000))
def test_a_state_never_invents_bytes_and_every_durable_write_is_whole(writes, cut_us, kind, seed):
    """Whatever the writes and the moment: every landed range lies inside a write submitted before
    the cut, every write durable before it landed whole, unreadable ranges only on an unprotected
    drive, whole units."""
    lines = "".join(f"{i * 50} write {block * 8192} {size}\n" for i, (block, size) in enumerate(writes))
    rows = simulate(lines, write="fixed:120", physical_sector=4096)
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
