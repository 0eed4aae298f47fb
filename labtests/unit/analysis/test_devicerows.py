"""What a bench keeps of the device models' traces for one run (sectorlab/bench/devicerows.py): the
trace cut to the run by byte offset, its summary per operation (flushes apart from writes), the
report's device table, and a model that died failing the run with the disk and its log named."""

from __future__ import annotations

import os

import pytest

from sectorlab import procs
from sectorlab.analysis import devicerows
from sectorlab.analysis.metrics import Run
from sectorlab.devices import trace
from sectorlab.errors import SectorlabError
from sectorlab.lab import modelled
from sectorlab.lab.record import DiskRecord

HEADER = "t_us,op,offset,length,fua,channel,queue_us,service_us,served_us,cached,rmw_reads,unit_reads,error\n"


def _disk(name: str, device: str = "nvme-512e") -> DiskRecord:
    return DiskRecord.from_json({
        "backing_serial": None, "bus": "virtio", "geometry": "sector512e",
        "logical_block_size": 512, "min_io_size": 4096, "name": name, "opt_io_size": 0,
        "physical_block_size": 4096, "serial": name, "size_bytes": 1 << 26,
        "volume": "/x.sock", "vm": "lab1", "write_cache": "write through", "device": device}, "t")


@pytest.fixture
def served(tmp_path, monkeypatch):
    """A disk 'd' whose model 'runs' (this very process stands in for it) with a trace of two writes."""
    monkeypatch.setattr(modelled, "SERVE_DIR", tmp_path / "devices")
    s = modelled.server("lab", "d")
    s.directory.mkdir(parents=True)
    s.identity_file.write_text(procs.identity(os.getpid()) + "\n")
    s.log.write_text("nbdkit: started\n")
    s.trace.write_text(HEADER + "0.0,write,0,4096,0,0,0,20,21,0,0,0,0\n10.0,write,4096,4096,0,0,0,20,21,0,0,0,0\n")
    return s


def test_the_runs_rows_are_the_trace_after_the_offset_with_flushes_apart(served, tmp_path):
    window = devicerows.Window("lab", [_disk("d")])
    with open(served.trace, "a") as f:  # the measured run: two 512-byte writes (a page read each) and a flush
        f.write("100.0,write,512,512,0,1,5,80,81,0,0,1,0\n200.0,write,1024,512,0,2,0,80,82,0,0,1,0\n"
                "300.0,flush,0,0,0,-1,0,0,1,0,0,0,0\n")
    window.check_alive("r1")
    runs = tmp_path / "results" / "runs"
    runs.mkdir(parents=True)
    rows = window.rows(runs, "r1", tmp_path / "results")["d"]
    assert rows["profile"] == "nvme-512e" and rows["trace"] == "runs/r1.d.trace.csv"
    assert (rows["write"]["count"], rows["write"]["bytes_per_request"], rows["write"]["unit_reads"]) == (2, 512, 2)
    assert rows["flush"]["count"] == 1 and rows["read"]["count"] == 0
    assert (runs / "r1.d.trace.csv").read_text().splitlines()[0] + "\n" == HEADER


@pytest.mark.parametrize("race", [True, False])
def test_only_a_races_two_members_get_their_arrivals_paired(tmp_path, monkeypatch, race):
    """A mirror's two members (or an appliance's two log devices) are no race: no race rows."""
    monkeypatch.setattr(modelled, "SERVE_DIR", tmp_path / "devices")
    for name in ("a", "b"):
        s = modelled.server("lab", name)
        s.directory.mkdir(parents=True)
        s.identity_file.write_text(procs.identity(os.getpid()) + "\n")
        s.trace.write_text(HEADER + "0.0,write,0,4096,0,0,0,20,21,0,0,0,0\n")
    window = devicerows.Window("lab", [_disk("a"), _disk("b")], race=race)
    runs = tmp_path / "results" / "runs"
    runs.mkdir(parents=True)
    rows = window.rows(runs, "r1", tmp_path / "results")
    assert ("race" in rows["a"]) is race


def test_a_model_that_died_fails_the_run_naming_the_disk_and_its_log(served):
    window = devicerows.Window("lab", [_disk("d")])
    served.identity_file.write_text("999999999 1\n")  # no such process: the daemon is gone
    served.log.write_text("nbdkit: started\nnbdkit: killed by signal 9\n")
    with pytest.raises(SectorlabError) as e:
        window.check_alive("r7")
    msg = str(e.value)
    assert msg.startswith("r7: the device model serving disk d is not running") and str(served.log) in msg, msg
    assert msg.endswith("killed by signal 9") and "\n" not in msg, msg


def test_the_device_table_gives_each_disk_the_median_of_its_runs():
    def run(repeat, await_us, flushes):
        summary = {"write": {"op": "write", "count": 100, "bytes_per_request": 512.0, "await_p50_us": await_us,
                             "service_p50_us": 80.0, "service_p99_us": 90.0, "queue_p50_us": 0.0,
                             "served_p50_us": 81.0, "utilisation": 0.01, "cached": 25, "rmw_reads": 0,
                             "unit_reads": 100, "errors": 0},
                   "flush": {"op": "flush", "count": flushes}, "read": {"op": "read", "count": 0}}
        return Run("flash", 512, repeat, {"device_trace": {"flash": {"profile": "sun-f20", **summary}}},
                   {"elapsed_s": 10.0, "writes": 100})
    head, *rows = devicerows.table([run(1, 80.0, 10), run(2, 100.0, 30), run(3, 90.0, 20)])
    assert head == ["the model's trace", "flash (sun-f20)"]
    cells = dict(rows)
    assert (cells["writes/s"], cells["write await p50 (us)"], cells["flushes/s"]) == ("10", "90", "2")
    assert (cells["cache hits %"], cells["unit reads per write"], cells["service p50 / p99 (us)"]) == \
        ("25.0", "1.00", "80 / 90")
    assert devicerows.table([Run("x", 512, 1, {}, {"elapsed_s": 1})]) == []


def test_a_races_writes_are_paired_by_offset_and_the_arrival_gap_is_the_hosts_clock():
    def w(t, offset, length=512):
        return trace.Request(t, "write", offset, length, 0, 0, 0.0, 20.0, 21.0, 0, 0, 0, 0)
    # the same offset written twice (a log wrapped): paired in order; one write the second never got
    first = [w(1000, 0), w(2000, 512), w(3000, 0), w(4000, 1024)]
    second = [w(1300, 0), w(1900, 512), w(3400, 0)]
    got = devicerows.arrivals(first, second)
    assert got == {"pairs": 3, "first_arrived_first_pct": pytest.approx(200 / 3), "gap_p50_us": 300.0,
                   "abs_gap_p50_us": 300.0}
    assert devicerows.arrivals(first, []) == {"pairs": 0}


def test_the_report_says_which_members_model_got_each_write_first():
    race = {"pairs": 100, "first_arrived_first_pct": 60.0, "gap_p50_us": 120.0, "abs_gap_p50_us": 300.0}
    summary = {op: {"op": op, "count": 0} for op in devicerows.OPS}
    entry = {"device_trace": {"flash": {"profile": "sun-f20", **summary, "race": race},
                              "celldisk": {"profile": "exadata-celldisk", **summary}}}
    lines = devicerows.race_lines(512, [Run("race", 512, 1, entry, {"elapsed_s": 1.0})])
    assert lines[0] == ("- BLOCKSIZE 512: a log write reached `flash`'s model before `celldisk`'s in 60.0 % of the "
                        "pairs (medians of 1 run); `celldisk` got it 120 us later at the median, 300 us apart "
                        "either way")
