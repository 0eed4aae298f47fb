"""The device model's decisions in virtual time (devicemodel/simulate: the same model.c the nbdkit
filter runs), request by request: queues per channel, the write-back cache and its flushes, partial
physical sectors and flash units, faults, the seeded distributions; and bad parameters refused in
one line. Timing on a real socket is labtests/devices/test_devicemodel_host.py."""

from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labtests.support.depth import examples
from sectorlab.devices import build, profiles, trace
from sectorlab.errors import SectorlabError, UsageError
from sectorlab.paths import REPO


def simulate(requests: str, **params) -> list[trace.Request]:
    args = [f"{k.replace('_', '-')}={v}" for k, v in params.items()]
    proc = subprocess.run([str(build.built(build.SIMULATE)), *args], input=requests, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return trace.parse(proc.stdout)


def refused(*args: str) -> str:
    proc = subprocess.run([str(build.built(build.SIMULATE)), *args], input="", capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stdout == "", (proc.returncode, proc.stdout)
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    return proc.stderr.strip()


def test_one_channel_serves_in_arrival_order_and_the_queue_is_the_wait():
    rows = simulate("0 write 0 4096\n10 write 4096 4096\n20 write 8192 4096\n", write="fixed:100")
    assert [r.queue_us for r in rows] == [0, 90, 180]
    assert [r.service_us for r in rows] == [100, 100, 100]
    assert {r.channel for r in rows} == {0}


def test_parallel_channels_take_the_first_free_one():
    rows = simulate("0 write 0 4096\n0 write 4096 4096\n0 write 8192 4096\n", write="fixed:100", channels=2)
    assert [r.channel for r in rows] == [0, 1, 0]
    assert [r.queue_us for r in rows] == [0, 0, 100]


def test_a_stripe_sends_each_request_to_its_member():
    reqs = "".join(f"0 write {i * 65536} 4096\n" for i in range(8))
    rows = simulate(reqs, write="fixed:50", channels=4, stripe="64k")
    assert [r.channel for r in rows] == [0, 1, 2, 3, 0, 1, 2, 3]
    assert [r.queue_us for r in rows] == [0, 0, 0, 0, 50, 50, 50, 50]


def test_transfer_rate_adds_bytes_over_bandwidth():
    rows = simulate("0 write 0 1000000\n", write="fixed:10", write_mbps=100)  # 1 MB at 100 MB/s: 10 ms
    assert rows[0].service_us == pytest.approx(10 + 10_000)


@pytest.mark.parametrize(("offset", "length", "partial"), [
    (0, 4096, 0), (0, 512, 1), (3584, 512, 1), (512, 4096, 2), (0, 8192, 0), (4096, 512, 1),
    (2048, 4096, 2), (0, 4608, 1), (3584, 1024, 2),
])
def test_read_modify_write_reads_every_partly_written_physical_sector_at_both_ends(offset, length, partial):
    rows = simulate(f"0 write {offset} {length}\n", write="fixed:100", read="fixed:30", physical_sector=4096)
    assert rows[0].rmw_reads == partial
    assert rows[0].service_us == 100 + 30 * partial


def test_a_flash_write_unit_counts_apart_from_the_physical_sector():
    rows = simulate("0 write 4096 4096\n", write="fixed:20", read="fixed:60", write_unit="16k", physical_sector=4096)
    assert (rows[0].rmw_reads, rows[0].unit_reads) == (0, 1)
    assert rows[0].service_us == 20 + 60


@pytest.mark.parametrize(("offset", "length", "units"), [(0, 512, 1), (3584, 1024, 2), (0, 4096, 0), (512, 8192, 2)])
def test_a_write_unit_of_whole_physical_sectors_is_read_once_not_twice(offset, length, units):
    # A 512e drive programming 4 KiB pages: the page read holds the partly written sector.
    rows = simulate(f"0 write {offset} {length}\n", write="fixed:20", read="fixed:60", write_unit="4096",
                    physical_sector=4096)
    assert (rows[0].rmw_reads, rows[0].unit_reads) == (0, units)
    assert rows[0].service_us == 20 + 60 * units


def _redo_writes(n: int, size: int = 512) -> str:
    """n sequential redo writes of `size` bytes, 1 ms apart (no queue)."""
    return "".join(f"{i * 1000} write {i * size} {size}\n" for i in range(n))


def test_a_write_buffer_merges_appends_into_the_unit_it_just_wrote():
    """Sixteen 512-byte redo writes fill two 4 KiB units: without a buffer each reads its unit
    first; with one, only the first write into each unit does (the rest merge in DRAM), and the
    trace counts the merges."""
    plain = simulate(_redo_writes(16), write="fixed:20", read="fixed:60", write_unit=4096)
    buffered = simulate(_redo_writes(16), write="fixed:20", read="fixed:60", write_unit=4096, write_buffer="64k")
    assert [r.unit_reads for r in plain] == [1] * 16 and [r.buffer_hits for r in plain] == [0] * 16
    assert [r.unit_reads for r in buffered] == [1] + [0] * 7 + [1] + [0] * 7
    assert [r.buffer_hits for r in buffered] == [0] + [1] * 7 + [0] + [1] * 7
    assert [r.service_us for r in buffered][:2] == [80, 20]
    assert trace.summary(buffered, "write")["buffer_hits"] == 14


def test_the_write_buffer_keeps_the_units_written_last():
    """A buffer of one 4 KiB unit: unit 0, then unit 1, then unit 0 again: unit 0 left when unit 1
    came, so it is read again; a whole-unit write reads nothing and enters the buffer, and the
    partial write after it merges."""
    rows = simulate("0 write 0 512\n1000 write 4096 512\n2000 write 512 512\n3000 write 8192 4096\n"
                    "4000 write 8192 512\n", write="fixed:20", read="fixed:60", write_unit=4096, write_buffer=4096)
    assert [(r.unit_reads, r.buffer_hits) for r in rows] == [(1, 0), (1, 0), (1, 0), (0, 0), (0, 1)]


def test_a_write_spanning_more_units_than_the_buffer_leaves_its_last_ones_there():
    # 2 units of buffer, a 16 KiB write at 512 (units 0-4, its first and last partial), then writes
    # into units 0 and 4: unit 4 is held, unit 0 is not.
    rows = simulate("0 write 512 16384\n1000 write 16896 512\n2000 write 1024 512\n",
                    write="fixed:20", read="fixed:60", write_unit=4096, write_buffer=8192)
    assert [(r.unit_reads, r.buffer_hits) for r in rows] == [(2, 0), (0, 1), (1, 0)]


@pytest.mark.parametrize("args, message", [
    (["write-buffer=64k"], "write-buffer needs write-unit"),
    (["write-unit=4096", "write-buffer=1k"], "write-buffer=1024 is not a whole number of write-unit=4096 units: "
                                             "expected a multiple of 4096, such as 4096 or 0 (no buffer)"),
    (["write-unit=4096", "write-buffer=32M"], "write-buffer holds 1 to 4096 write units"),
    (["write-unit=4096", "write-buffer=lots"], "expected a whole number of bytes")])
def test_a_bad_write_buffer_is_one_line(args, message):
    assert message in refused(*args)


# --- smart flash logging inside a cell: the disk and the flash log at once, done at the first -------

CELL = {"write": "fixed:5000", "cache_size": "1M", "cache_destage_mbps": "100", "cache_hit": "fixed:20",
        "cache_plp": "true", "flashlog.write": "fixed:85", "flashlog.read": "fixed:85", "flashlog.write-unit": 4096}


def test_a_cell_write_completes_at_the_first_of_its_disk_cache_and_its_flash_log():
    """With the controller cache answering in 20 us the disk wins every write; with it at 300 us
    the flash log wins, a whole 4 KiB page in 85 us and a 512-byte write in 85 + its page's 85 us
    read, while the disk's own columns keep its 300 us cache hits; a read is the disk's alone."""
    reqs = "0 write 0 4096\n1000 write 4096 512\n2000 flush 0 0\n3000 read 0 512\n"
    fast = simulate(reqs, **CELL)
    assert [r.flashlog_first for r in fast] == [0, 0, 0, -1]
    assert [r.service_us for r in fast[:2]] == [20, 20] and [r.answer_us for r in fast[:2]] == [20, 20]
    assert [r.flashlog_service_us for r in fast[:2]] == [85, 170]  # the flash log wrote too, later
    slow = simulate(reqs, **(CELL | {"cache_hit": "fixed:300"}))
    assert [r.flashlog_first for r in slow[:2]] == [1, 1]
    assert [r.answer_us for r in slow[:2]] == [85, 170]
    assert [(r.service_us, r.cached) for r in slow[:2]] == [(300, 1), (300, 1)]  # the disk's cache took them
    assert slow[3].flashlog_first == -1 and slow[3].service_us == 0  # the disk's read (no read time set)
    assert np.isnan(slow[3].flashlog_service_us)
    summary = trace.summary(slow, "write")
    assert (summary["flashlog_races"], summary["flashlog_first"]) == (2, 2)
    assert summary["await_p50_us"] == pytest.approx(127.5)  # the replies, not the disk's 300 us


def test_each_medium_of_a_cell_keeps_its_own_queue():
    """A slow disk with no cache and a one-channel flash log: two writes 10 us apart, the second
    waits behind the first on the flash log (answered at 160 us) and, on the disk, behind its
    first 5 ms: the disk's channel is busy 10 ms whoever answered."""
    rows = simulate("0 write 0 4096\n10 write 4096 4096\n", write="fixed:5000", **{"flashlog.write": "fixed:80"})
    assert [r.flashlog_first for r in rows] == [1, 1]
    assert [round(r.t_us + r.answer_us) for r in rows] == [80, 160]
    assert [r.queue_us for r in rows] == [0, 4990] and trace.summary(rows, "write")["utilisation"] > 0.99


def test_a_flash_log_that_fails_leaves_the_disks_answer_and_a_disk_that_fails_fails_the_write():
    """The cell falls back to its disk when the flash log faults; when the disk faults there is
    nowhere to keep the redo: the write fails and the flash log is not written."""
    reqs = "0 write 0 4096\n1000 write 4096 4096\n"
    flash_down = simulate(reqs, write="fixed:500", **{"flashlog.write": "fixed:80", "flashlog.fail-after-writes": 1})
    assert [(r.error, r.flashlog_first, r.answer_us) for r in flash_down] == [(0, 0, 500), (0, 0, 500)]
    assert all(np.isnan(r.flashlog_service_us) for r in flash_down)
    disk_down = simulate(reqs, write="fixed:500", fail_after_writes=1, **{"flashlog.write": "fixed:80"})
    assert [(r.error, r.flashlog_first) for r in disk_down] == [(5, -1), (5, -1)]
    assert all(np.isnan(r.flashlog_service_us) for r in disk_down)


def test_a_flash_logs_draws_follow_the_cells_seed_unless_it_has_its_own():
    reqs = "".join(f"{i * 10_000} write {i * 4096} 4096\n" for i in range(20))
    cell = {"write": "fixed:5000", "flashlog.write": "lognormal:80,400"}
    draws = {seed: [r.flashlog_service_us for r in simulate(reqs, seed=seed, **cell)] for seed in (1, 2)}
    assert draws[1] != draws[2]
    own = {seed: [r.flashlog_service_us for r in simulate(reqs, seed=seed, **cell, **{"flashlog.seed": 9})]
           for seed in (1, 2)}
    assert own[1] == own[2] != draws[1]


def test_a_flash_log_whose_queue_runs_away_is_refused():
    """30 writes of 4 GiB at 0.001 MB/s on the flash log (50 days each): past the model's clock,
    though the disk is quick."""
    proc = subprocess.run([str(build.built(build.SIMULATE)), "write=fixed:1", "flashlog.write=fixed:1",
                           "flashlog.write-mbps=0.001"], input="0 write 0 4294967295\n" * 30, capture_output=True,
                          text=True)
    assert proc.returncode == 2 and "runs past" in proc.stderr, proc.stderr


def test_a_plain_models_trace_says_no_flash_log():
    rows = simulate("0 write 0 4096\n", write="fixed:10")
    assert rows[0].flashlog_first == -1 and "flashlog_races" not in trace.summary(rows, "write")


@pytest.mark.parametrize("args, message", [
    (["flashlog.bogus=1"], "flashlog.bogus=1: not a device model key (after flashlog.)"),
    (["flashlog.flashlog.write=fixed:1"], "a flash log has no flash log of its own"),
    (["flashlog.write=fixed:1", "flashlog.write-buffer=4k"],
     "the flash log (flashlog.*): write-buffer needs write-unit"),
    (["flashlog.read=fixed:1"], "the flash log (flashlog.*): it has no write time: give flashlog.write"),
    (["flashlog.write=slow"], "flashlog.write=slow: a distribution is fixed:US")])
def test_a_bad_flash_log_is_one_line(args, message):
    assert message in refused(*args)


def test_a_profile_variant_is_its_base_with_what_it_states_and_a_cell_composes_its_flash_log():
    base, f20 = profiles.get("exadata-celldisk"), profiles.get("sun-f20")
    cell = profiles.get("exadata-cell-flashlog")
    assert cell.params == base.params | {f"flashlog.{k}": v for k, v in f20.params.items()}
    assert cell.sources["flashlog.write-unit"] == f20.sources["write-unit"] and cell.flash_log == "sun-f20"
    assert cell.write_cache == base.write_cache and "flash_log" in cell.sources
    dram = profiles.get("nvme-512e-dram")
    assert dram.params == profiles.get("nvme-512e").params | {"write-buffer": "1M"}
    assert dram.evidence["write-buffer"] == "assumed" and "upper end" in dram.sources["write-buffer"]


def test_a_cell_presents_the_weaker_cache_of_its_two_media():
    """A write the flash log answers first is as safe as the flash log's cache: a cell whose flash
    log has a volatile cache is presented write back, whatever its disk's controller cache."""
    raw = {"disk": {"params": {"write": "fixed:100", "cache-size": "1M", "cache-destage-mbps": "100",
                               "cache-hit": "fixed:20", "cache-plp": "true"}, "write_cache": "protected"},
           "volatile": {"params": {"write": "fixed:50", "flush": "fixed:500"}, "write_cache": "volatile"},
           "cell": {"description": "", "base": "disk", "flash_log": "volatile"}}
    for p in raw.values():
        p["sources"] = {k: "s" for k in [*p.get("params", {}), "write_cache", "flash_log"]}
    cell = profiles.from_entry("cell", profiles._composed("cell", raw))
    assert cell.write_cache == "volatile" and cell.presented == "write back"
    assert [profiles.weaker(a, b) for a, b in [("none", "protected"), ("protected", "none"), ("none", "none"),
                                              ("volatile", "none")]] == ["protected", "protected", "none", "volatile"]
    assert profiles.get("exadata-cell-flashlog").write_cache == "protected"  # battery-backed cache, F20 supercaps


@pytest.mark.parametrize("entry, message", [
    ({"base": "nosuch"}, "base 'nosuch' is not a plain profile of the catalog: expected one of a, b"),
    ({"base": "v"}, "base 'v' is not a plain profile"),
    ({"flash_log": "v2"}, "flash_log 'v2' is not a plain profile")])
def test_a_variant_of_no_plain_profile_is_one_line(entry, message):
    raw = {"a": {"params": {}}, "b": {"params": {}}, "v": entry, "v2": {"base": "a"}}
    with pytest.raises(UsageError, match=re.escape(message)):
        profiles._composed("v", raw)


def test_a_write_back_cache_answers_until_it_is_full_then_the_write_waits_for_destage():
    # 8 KiB of cache draining at 1 MB/s (1 byte per us): the third 4 KiB write finds it full.
    rows = simulate("0 write 0 4096\n0 write 4096 4096\n0 write 8192 4096\n", cache_size=8192,
                    cache_destage_mbps=1, cache_hit="fixed:5", write="fixed:1000")
    assert [r.cached for r in rows] == [1, 1, 1]
    assert [r.channel for r in rows] == [-1, -1, -1]
    assert [r.queue_us for r in rows] == [0, 0, 4096]
    assert [r.service_us for r in rows] == [5, 5, 5]


def test_a_flush_is_free_behind_a_protected_cache_and_waits_for_destage_behind_a_volatile_one():
    reqs = "0 write 0 4096\n0 flush 0 0\n"
    common = dict(cache_size="1M", cache_destage_mbps=1, cache_hit="fixed:5", flush="fixed:50")
    plp = simulate(reqs, cache_plp="true", **common)
    volatile = simulate(reqs, cache_plp="false", **common)
    assert (plp[1].queue_us, plp[1].service_us, plp[1].cached) == (0, 0, 1)
    assert volatile[1].queue_us == pytest.approx(4096)    # 4096 bytes at 1 byte/us
    assert volatile[1].service_us == 50


def test_fua_goes_through_a_volatile_cache_to_the_media_but_not_through_a_protected_one():
    common = dict(cache_size="1M", cache_destage_mbps=100, cache_hit="fixed:5", write="fixed:300")
    volatile = simulate("0 write 0 4096 fua\n", cache_plp="false", **common)
    plp = simulate("0 write 0 4096 fua\n", cache_plp="true", **common)
    assert (volatile[0].cached, volatile[0].service_us) == (0, 300)
    assert (plp[0].cached, plp[0].service_us) == (1, 5)


def test_a_flush_without_a_cache_waits_for_every_write_in_flight():
    rows = simulate("0 write 0 4096\n0 write 4096 4096\n10 flush 0 0\n", write="fixed:100", channels=2,
                    flush="fixed:7")
    assert rows[2].queue_us == 90 and rows[2].service_us == 7


def test_writes_fail_from_the_nth_write_on_and_reads_do_not():
    reqs = "".join(f"{i} write {i * 4096} 4096\n" for i in range(5)) + "10 read 0 4096\n10 flush 0 0\n"
    rows = simulate(reqs, write="fixed:10", fail_after_writes=3)
    assert [r.error for r in rows] == [0, 0, 5, 5, 5, 0, 5]   # 5: EIO


def test_writes_fail_from_a_time_on():
    rows = simulate("0 write 0 4096\n999999 write 0 4096\n1000000 write 0 4096\n", fail_after_seconds=1)
    assert [r.error for r in rows] == [0, 0, 5]


def test_the_same_seed_gives_the_same_times_and_another_seed_others():
    reqs = "".join(f"{i * 1000} write 0 4096\n" for i in range(50))
    a = [r.service_us for r in simulate(reqs, write="lognormal:100,400", seed=7)]
    b = [r.service_us for r in simulate(reqs, write="lognormal:100,400", seed=7)]
    c = [r.service_us for r in simulate(reqs, write="lognormal:100,400", seed=8)]
    assert a == b and a != c


@pytest.mark.parametrize(("dist", "p50", "p99"), [
    ("fixed:250", 250, 250),
    ("normal:200,20", 200, 200 + 2.326 * 20),
    ("lognormal:100,400", 100, 400),
    ("pct:50=80,99=300,100=900", 80, 300),
])
def test_each_distribution_has_the_percentiles_it_was_given(dist, p50, p99):
    reqs = "".join(f"{i * 10_000} write 0 4096\n" for i in range(20_000))
    service = np.array([r.service_us for r in simulate(reqs, write=dist, seed=3)])
    assert np.percentile(service, 50) == pytest.approx(p50, rel=0.03, abs=0.01)
    assert np.percentile(service, 99) == pytest.approx(p99, rel=0.05, abs=0.01)


@settings(max_examples=examples(40), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2000), st.integers(0, 1 << 20), st.integers(1, 64 * 1024)),
                min_size=1, max_size=30),
       st.integers(1, 4))
def test_no_channel_serves_two_requests_at_once_and_none_starts_before_it_arrives(reqs, channels):
    reqs = sorted(reqs)
    text = "".join(f"{t} write {off} {n}\n" for t, off, n in reqs)
    rows = simulate(text, write="lognormal:50,200", channels=channels, seed=11)
    for c in range(channels):
        spans = sorted((r.t_us + r.queue_us, r.t_us + r.queue_us + r.service_us) for r in rows if r.channel == c)
        assert all(a[1] <= b[0] + 1e-3 for a, b in zip(spans, spans[1:]))
    assert all(r.queue_us >= 0 for r in rows)


@pytest.mark.parametrize(("args", "says"), [
    (["write=fixed:-5"], "write=fixed:-5: times are not negative"),
    (["write=fixed:20000000"], "times above 10 s"),
    (["write=lognormal:100,50"], "the 99th percentile not below it"),
    (["write=gamma:3"], "a distribution is fixed:US"),
    (["read=pct:50=100,90=80,100=200"], "percentile points rise"),
    (["cache-size=1M"], "a cache needs cache-destage-mbps"),
    (["cache-destage-mbps=100"], "cache-destage-mbps and cache-hit need cache-size"),
    (["write-unit=1000"], "write-unit is a multiple of 512"),
    (["physical-sector=3000"], "physical-sector is a power of two"),
    (["channels=0"], "channels is 1 to 64"),
    (["colour=blue"], "colour=blue: not a device model key"),
    (["lies-about=yes"], "lies-about=yes: expected what the drive acknowledges before it is durable: fua, flush"),
    (["lies-about=flush"], "lies-about needs a volatile cache: expected cache-size (and cache-plp=false) too"),
    (["cache-size=1M", "cache-destage-mbps=100", "cache-plp=true", "lies-about=fua"],
     "cache-plp=true is durable at once, nothing to lie about; expected cache-plp=false or lies-about=none"),
    (["cache-size=1M", "cache-destage-mbps=100", "lies-about=fua", "cache-hold-us=100"],
     "cache-hold-us=100 needs lies-about=flush or fua,flush (got fua)"),
    (["cache-hold-us=-1"], "cache-hold-us=-1: expected 0 (none) to 10000000 us"),
    (["program-us=200000"], "program-us=200000: expected 0 (the write's bytes at the media rate) to 100000 us"),
    (["channels"], "'channels': expected KEY=VALUE"),
])
def test_bad_parameters_are_refused_in_one_line_naming_the_value(args, says):
    assert says in refused(*args)


def test_a_bad_request_line_is_refused_naming_the_line():
    proc = subprocess.run([str(build.built(build.SIMULATE))], input="0 write 0 4096\n5 scribble 0 1\n",
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert "line 2: expected 'T_US OP OFFSET LENGTH [fua]', got '5 scribble 0 1'" in proc.stderr


def test_profiles_check_refuses_through_the_model_naming_the_profile():
    with pytest.raises(UsageError, match="device profile 'x': a cache needs cache-destage-mbps"):
        profiles.check("device profile 'x'", {"cache-size": "1M"})


def test_trace_summary_counts_per_operation():
    rows = simulate("0 write 0 512\n0 write 4096 4096\n0 read 0 4096\n", write="fixed:100", read="fixed:50",
                    physical_sector=4096)
    w = trace.summary(rows, "write")
    assert (w["count"], w["bytes_per_request"], w["rmw_reads"]) == (2, 2304, 1)
    assert w["service_p50_us"] == pytest.approx(125)   # 150 (a read first) and 100: their midpoint
    assert trace.summary(rows, "flush") == {"op": "flush", "count": 0}



def test_a_trace_read_since_its_end_gives_the_later_lines_alone(tmp_path):
    """trace.end() is where the whole lines end (a line still being written is not one of them);
    read(since=) parses only what came after it; a trace emptied since is one line, not another
    model's requests."""
    header = "t_us,op,offset,length,fua,channel,queue_us,service_us,served_us,cached,rmw_reads,unit_reads,error\n"
    row = "{t}.000,write,{o},4096,1,0,0.000,20.000,21.000,0,0,0,0\n"
    path = tmp_path / "disk.trace"
    assert trace.end(path) == 0
    path.write_text(header + row.format(t=1, o=0) + row.format(t=2, o=4096) + "3.000,wri")  # a line half written
    mark = trace.end(path)
    assert mark == len((header + row.format(t=1, o=0) + row.format(t=2, o=4096)).encode())
    assert [r.t_us for r in trace.read(path)] == [1.0, 2.0]  # the half line is not read
    assert trace.read(path, since=mark) == []
    with open(path, "a") as f:
        f.write("te,8192,4096,1,0,0.000,20.000,21.000,0,0,0,0\n" + row.format(t=4, o=12288))
    assert [(r.t_us, r.offset) for r in trace.read(path, since=mark)] == [(3.0, 8192), (4.0, 12288)]
    assert len(trace.read(path)) == 4
    path.write_text(header)  # its model started again
    with pytest.raises(SectorlabError, match=f"{path}: .* fewer than the {mark} it had: its device model started"):
        trace.read(path, since=mark)

@pytest.mark.parametrize("name", sorted(profiles.profiles()))
def test_every_catalog_profile_is_one_the_model_takes_and_names_its_sources(name):
    p = profiles.get(name)
    profiles.check(f"device profile '{name}'", p.params)
    stated = set(p.params) | {"write_cache"} | {k for k in ("flash_log", "power_loss") if getattr(p, k)}
    assert set(p.sources) == stated == set(p.evidence), name
    assert all(len(s) > 20 for s in p.sources.values()), name
    assert set(p.evidence.values()) <= set(profiles.EVIDENCE)
    # A seed's measured result is never a source (the seeds' hardware names are).
    assert not any("iostat" in s or "AWR" in s for s in p.sources.values()), name


def test_an_unknown_profile_is_refused_naming_the_known_ones():
    with pytest.raises(UsageError, match="device profile 'ssd9000' is not in the catalog: expected one of .*hdd-7200"):
        profiles.get("ssd9000")


def test_the_spinning_profiles_follow_from_rotation_and_seek():
    """hdd-7200: 8.5 ms average seek plus a wait uniform over one 8.33 ms revolution."""
    reqs = "".join(f"{i * 100_000} write 0 4096\n" for i in range(4000))
    w = np.array([r.service_us for r in simulate(reqs, **{k.replace("-", "_"): v for k, v in
                                                          profiles.get("hdd-7200").params.items()})])
    transfer = 4096 / 140   # us at 140 MB/s
    assert np.percentile(w, 50) == pytest.approx(8500 + 8333 / 2 + transfer, rel=0.02)
    assert w.min() >= 8500 - 1 and w.max() <= 8500 + 8333 + transfer + 1


def test_the_docs_table_lists_every_profile_with_its_parameters_and_write_cache():
    text = (REPO / "docs" / "device-models.md").read_text()
    for name, p in profiles.profiles().items():
        row = next((line for line in text.splitlines() if line.startswith(f"| `{name}` |")), None)
        assert row is not None, f"docs/device-models.md has no row for {name}"
        args = f"`{' '.join(p.args())}`" if p.params else "(none)"
        assert f"| {args} |" in row, f"docs/device-models.md: {name}'s parameters differ from the catalog"
        assert f"| {p.write_cache} ({p.presented}) |" in row, f"docs/device-models.md: {name}'s write cache differs"


# --- issue 44: every parameter finite and bounded, every request line strict ------------------------

def _request_refused(requests: str, *args: str) -> str:
    proc = subprocess.run([str(build.built(build.SIMULATE)), *args], input=requests, capture_output=True, text=True)
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert all(float(v) >= 0 for row in proc.stdout.splitlines()[1:] for v in row.split(",")[6:8]), proc.stdout
    return proc.stderr.strip()


@pytest.mark.parametrize(("args", "says"), [
    (["write=pct:50=nan,100=10"], "write=pct:50=nan,100=10: percentile points are P=MICROSECONDS"),
    (["write-mbps=1e-300"], "write-mbps=1e-300: expected 0 (no transfer time) or 0.001 to 1000000 MB/s"),
    (["cache-size=1k", "cache-destage-mbps=1e-300", "cache-hit=fixed:1"],
     "cache-destage-mbps=1e-300: expected 0.001 to 1000000 MB/s"),
    (["fail-after-seconds=1e308"], "fail-after-seconds=1e308: expected 0 (never) to 1000000 seconds"),
    (["write=fixed:0x10"], "write=fixed:0x10: fixed:MICROSECONDS"),
    (["seed=99999999999999999999999"], "seed=99999999999999999999999: expected a whole number"),
])
def test_numbers_that_gave_negative_times_or_were_misread_are_refused(args, says):
    assert says in refused(*args)


def test_decreasing_arrival_times_are_refused_as_the_header_says():
    assert _request_refused("10 write 0 4096\n5 write 0 4096\n", "write=fixed:100") == (
        "simulate: line 2: arrival time 5.000 is before the previous line's 10.000: arrival times do not decrease "
        "(sort the requests by time)")


@pytest.mark.parametrize("line", ["0 write 0 -1", "0 write -1 4096", "0 write 0 4294967296", "nan write 0 4096",
                                  "inf write 0 4096", "-1 write 0 4096", "0 write 0 4096 fua extra"])
def test_a_request_line_is_read_strictly(line):
    assert "line 1: " in _request_refused(line + "\n")


def test_a_tiny_lognormal_median_never_gives_a_time_out_of_range():
    """lognormal:1e-300,1e7 has a sigma of ~300: its draws overflowed to infinity, then to a negative time."""
    rows = simulate("".join(f"{i} write 0 4096\n" for i in range(2000)), write="lognormal:1e-300,1e7", seed=5)
    assert all(0 <= r.service_us <= 1e7 for r in rows)


# --- issue 46: the write cache as the device has it ----------------------------------------------

def _entry(**change) -> dict:
    entry = {"description": "d", "write_cache": "protected", "params": {"write": "fixed:20"},
             "sources": {"write": "s", "write_cache": "s"},
             "evidence": {"write": "datasheet", "write_cache": "datasheet"}}
    return {**entry, **change}


@pytest.mark.parametrize("change, refused", [
    ({"write_cache": None}, "write_cache is None: expected one of none, protected, volatile"),
    ({"write_cache": "battery"}, "write_cache is 'battery': expected one of none, protected, volatile"),
    ({"sources": {"write": "s"}}, "no source for write_cache"),
    ({"params": {"write": "fixed:20", "cache-size": "64M", "cache-plp": "false"}},
     "write_cache is protected but the model's cache-plp is false"),
    ({"write_cache": "volatile", "params": {"write": "fixed:20", "cache-size": "64M", "cache-plp": "true"}},
     "write_cache is volatile but the model's cache-plp is true"),
    ({"write_cache": "volatile"}, "write_cache is volatile but the model has no cache-size and no flush time"),
], ids=["missing", "unknown", "no-source", "plp-disagrees", "volatile-plp", "volatile-free-flush"])
def test_a_profile_without_a_known_write_cache_or_one_its_model_contradicts_is_one_line(change, refused):
    entry = _entry(**change)
    entry["sources"] = {**entry["sources"], **{k: "s" for k in entry["params"]}}
    with pytest.raises(UsageError, match=re.escape(refused)) as e:
        profiles.from_entry("x", entry)
    assert "\n" not in str(e.value) and str(e.value).startswith("device profile 'x': ")


def test_every_catalog_profile_says_its_write_cache_and_the_guest_reads_it_as_linux_would_need():
    for name, p in profiles.profiles().items():
        assert p.write_cache in profiles.WRITE_CACHES and p.sources["write_cache"], name
        assert p.presented == ("write back" if p.write_cache == "volatile" else "write through"), name


# --- power loss: when each write's data survives a cut ---------------------------------------------

def test_a_write_is_durable_on_the_media_in_a_protected_cache_or_once_a_volatile_one_drains_past_it():
    """No cache: at its completion. A protected cache: when the cache takes it. A volatile cache of
    8 KiB draining at 1 MB/s (1 byte per us): the first 4 KiB write is durable 4,096 us after its
    start, the second 8,192 us (the drain passes its last byte), whatever the cache hit says; a FUA
    write through a volatile cache goes to the media and is durable when done. Reads and flushes
    carry no durability."""
    media = simulate("0 write 0 4096\n1000 read 0 4096\n2000 flush 0 0\n", write="fixed:100", read="fixed:50")
    assert [r.durable_us for r in media[:1]] == [100]
    assert all(np.isnan(r.durable_us) for r in media[1:])
    cache = {"cache_size": 8192, "cache_destage_mbps": 1, "cache_hit": "fixed:5", "write": "fixed:1000"}
    protected = simulate("0 write 0 4096\n0 write 4096 4096\n", **cache, cache_plp="true")
    assert [r.durable_us for r in protected] == [5, 5]
    volatile = simulate("0 write 0 4096\n0 write 4096 4096\n10 write 8192 4096 fua\n", **cache)
    assert [r.answer_us for r in volatile[:2]] == [5, 5]
    assert [r.durable_us for r in volatile[:2]] == [4096, 8192]
    assert volatile[2].cached == 0 and volatile[2].durable_us == volatile[2].queue_us + volatile[2].service_us


def test_a_writes_window_is_its_units_at_the_media_rate_just_before_it_is_durable():
    """media_us: when a write's bytes start going onto the medium. At 140 MB/s a 4 KiB unit takes
    29.257 us, the last stretch of its service (after its positioning); a 512-byte write into a 4 KiB
    physical sector writes the whole sector back after reading it (a window of 4 KiB, not 512 bytes);
    at half the rate the window doubles; a volatile cache's drain writes it at the destage rate; a
    write with no media rate has no window (as durable); reads and flushes have none."""
    rmw = simulate("0 write 512 512\n0 read 0 4096\n0 flush 0 0\n", write="fixed:8000", read="fixed:8000",
                   write_mbps=140, physical_sector=4096)
    w = rmw[0]
    assert w.rmw_reads == 1 and w.durable_us == pytest.approx(16000 + 512 / 140, abs=0.002)
    assert w.durable_us - w.media_us == pytest.approx(4096 / 140, abs=0.002)
    assert all(np.isnan(r.media_us) for r in rmw[1:])
    slow = simulate("0 write 0 4096\n", write="fixed:100", write_mbps=70, physical_sector=4096)[0]
    assert slow.durable_us - slow.media_us == pytest.approx(4096 / 70, abs=0.002)
    unit = simulate("0 write 0 4096\n", write="fixed:100", write_mbps=140, write_unit=16384)[0]
    assert unit.durable_us - unit.media_us == pytest.approx(16384 / 140, abs=0.002)  # the flash unit it programs
    drained = simulate("0 write 0 4096\n", cache_size=8192, cache_destage_mbps=1,
                       cache_hit="fixed:5", write="fixed:1000")[0]
    assert (drained.media_us, drained.durable_us) == (0, 4096)  # 4 KiB at 1 byte per us
    none = simulate("0 write 0 4096\n", write="fixed:100")[0]
    assert none.media_us == none.durable_us == 100


VOLATILE = {"write": "fixed:8000", "flush": "fixed:8000", "write_mbps": 140, "cache_size": "64M",
            "cache_destage_mbps": 140, "cache_hit": "fixed:20", "cache_plp": "false"}


def test_a_drive_that_lies_answers_fua_and_flush_from_its_cache_and_is_durable_only_when_it_drains():
    """An honest volatile cache writes a FUA write through (8 ms) and answers a flush once what it
    holds is on the medium; one with lies-about=fua,flush answers both as cache hits (20 us) and
    makes the write durable when its drain reaches it: after cache-hold-us, then its bytes at the
    destage rate. lies-about=fua alone still answers a flush honestly."""
    requests = "0 write 0 4096 fua\n100 write 4096 4096\n200 flush 0 0\n"
    honest = simulate(requests, **VOLATILE)
    through = pytest.approx(8000 + 4096 / 140, abs=0.002)
    assert honest[0].cached == 0 and honest[0].durable_us == honest[0].answer_us == through
    assert honest[2].t_us + honest[2].answer_us >= honest[1].t_us + honest[1].durable_us  # the flush waited
    lying = simulate(requests, **VOLATILE, lies_about="fua,flush", cache_hold_us=12000)
    assert [r.answer_us for r in lying] == [20, 20, 20]
    for w in lying[:2]:
        assert w.durable_us == pytest.approx(12000 + 4096 / 140, abs=0.002)
        assert w.durable_us - w.media_us == pytest.approx(4096 / 140, abs=0.002)
    assert lying[2].t_us + lying[2].answer_us < lying[1].t_us + lying[1].durable_us  # acknowledged, not durable
    fua_only = simulate(requests, **VOLATILE, lies_about="fua")
    assert fua_only[0].answer_us == 20 and fua_only[2].answer_us >= 8000


def test_a_flash_write_is_exposed_for_its_program_and_an_honest_flush_waits_for_it():
    """program-us: a flash write's window is the program of its units (1,125 us on ssd-client-tlc),
    not its bytes at the sequential rate; a write its volatile cache takes is durable no sooner than
    one program after it arrived, and an honest flush answers no sooner than that."""
    params = {k.replace("-", "_"): v for k, v in profiles.get("ssd-client-tlc").params.items()}
    rows = simulate("0 write 0 512\n10 flush 0 0\n2000 write 4096 4096 fua\n", **params)
    cached, flush, fua = rows
    assert cached.answer_us == 34 and cached.durable_us == pytest.approx(1125, abs=0.002)
    assert cached.durable_us - cached.media_us == pytest.approx(1125, abs=0.002)
    assert flush.t_us + flush.answer_us >= cached.durable_us
    assert fua.cached == 0 and fua.durable_us - fua.media_us == pytest.approx(1125, abs=0.002)
    by_rate = simulate("0 write 0 4096\n", write="fixed:2000", write_mbps=250)[0]
    assert by_rate.durable_us - by_rate.media_us == pytest.approx(4096 / 250, abs=0.002)


def test_a_cells_write_is_durable_when_the_first_of_its_media_has_it():
    rows = simulate("0 write 0 4096\n", write="fixed:5000", **{"flashlog.write": "fixed:80"})
    assert rows[0].durable_us == 80 and rows[0].service_us == 5000
