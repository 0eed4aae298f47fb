"""`sectorlab crash` (sectorlab/crash/run.py) on this host: a crash preset checked whole before
anything runs, and the small cell of the matrix (labs/crash/small.toml) run for real: a model of a
512e disk without read-modify-write protection, redo-writer writing checked redo through libnbd,
cuts drawn over the run and judged by redo-writer verify."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path

import pytest

from sectorlab.crash import atomic, rates, redolog
from sectorlab.crash import devicepath as crash
from sectorlab.crash import preset as crash_preset
from sectorlab.devices import trace
from sectorlab.errors import UsageError
from sectorlab.report import crash as report

pytestmark = pytest.mark.skipif(shutil.which("nbdkit") is None, reason="nbdkit is not installed")

GOOD = """[crash]
title = "t"
profiles = ["hdd-7200-client"]
geometries = ["sector512e", "sector4k"]
blocksizes = [512, 4096]
cuts = 5
sessions = 1
redo_per_txn = 512
rate = 200
seconds = 1
log_size_mib = 8
seed = 1
"""


@pytest.mark.parametrize("change, says", [
    (('profiles = ["hdd-7200-client"]', 'profiles = ["floor"]'),
     "device profile 'floor' does not state its power_loss"),
    (('profiles = ["hdd-7200-client"]', 'profiles = ["exadata-cell-flashlog"]'), "a cell with a flash log"),
    (("cuts = 5", "cuts = 0"), "cuts = 0: expected at least 1 and at most 10000"),
    (("blocksizes = [512, 4096]", "blocksizes = [8192]"), "blocksizes = [8192]: expected a list of redo BLOCKSIZEs"),
    (('geometries = ["sector512e", "sector4k"]', 'geometries = ["sector999"]'), "sector999"),
    (("seed = 1", "seed = 1\nflavour = 2"), "unknown key 'flavour'"),
    (("seconds = 1", 'seconds = "1"'), "seconds = '1': expected a whole number"),
    (("seed = 1", "seed = 1\nruns = 2"), "runs = 2: expected at least 3 and at most 100"),
    (("seed = 1", "seed = 1\nsweep_unreadable = [0.1, 1.5]"),
     "sweep_unreadable = [0.1, 1.5]: expected a list of probabilities from 0 to 1 ([] for none)"),
    (("seed = 1", "seed = 1\nsweep_new = [0.5, 0.5]"), "sweep_new"),
    (("seed = 1", "seed = 1\nmembers = [3]"), "members = [3]: expected a list of 1 (one log member) and 2"),
    (("seed = 1", "seed = 1\nwrapping = [1]"), "wrapping = [1]: expected a list of false"),
    (("seed = 1", "seed = 1\nwrapping_log_kib = 16"), "wrapping_log_kib = 16: expected at least 64"),
    (("seed = 1", "seed = 1\ntransactions = -1"), "transactions = -1: expected at least 0 and at most 10000000"),
    (("seed = 1", "seed = 1\ncache_hold_us = [-1]"), "cache_hold_us = [-1]: expected a list of whole microseconds"),
    (("seed = 1", "seed = 1\ncache_hold_us = [1.5]"), "cache_hold_us = [1.5]: expected a list of whole microseconds"),
    (("seed = 1", "seed = 1\ncache_hold_us = [100]"),
     "cache_hold_us = [100] sweeps the hold of a drive that lies about a flush, and none of its profiles does"),
    (('profiles = ["hdd-7200-client"]', 'profiles = ["ssd-client-tlc-lying"]\nwrapping = [true]'),
     "which lies about a flush: a wrapping log's recovery takes the passes before as checkpointed"),
])
def test_a_bad_crash_preset_is_one_line_before_anything_runs(tmp_path, change, says):
    path = tmp_path / "p.toml"
    path.write_text(GOOD.replace(*change))
    with pytest.raises(UsageError) as e:
        crash_preset.load(str(path))
    assert says in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_the_rules_engine_forbids_512_on_4kn_and_the_matrix_lists_it():
    p = crash_preset.load("redo-matrix")
    forbidden = [c.key for c in p.cells if p.forbidden(c)]
    assert forbidden == [f"{prof}/sector4k@512" for prof in ("hdd-7200-client", "hdd-7200", "hdd-7200-wce",
                                                             "intel-p3700")]
    assert len(p.cells) == 4 * 3 * 2 and p.runs >= 3 and p.runs * p.cuts >= 300


@pytest.mark.long
def test_the_small_cell_loses_acknowledged_redo_only_at_blocksize_512(tmp_path):
    """512e without read-modify-write protection, three runs a cell: at BLOCKSIZE 512 a cut while a
    log write's sector is written back can leave it unreadable, the redo acknowledged before it in
    the same sector included; at 4096 every write is whole sectors, nothing is read first, and the
    cell cannot lose what was acknowledged, by rule (its cuts confirm it). The exposure is the
    writes' windows, each a 4 KiB sector at the profile's 140 MB/s. Every cut's recovery ends where
    the checksums say, with no corruption the checksum missed."""
    lines = []
    small = crash_preset.load("small")
    out = crash.run(small, lines.append, tmp_path)
    doc = json.loads((out / "crash.json").read_text())
    by = {c["blocksize"]: c for c in doc["cells"]}
    assert set(by) == {512, 4096} and all(len(c["runs"]) == small.runs == 3 for c in by.values())
    for c in by.values():
        for r, run in enumerate(c["runs"]):
            kinds = [x["kind"] for x in c["cuts"] if x["run"] == r]
            assert kinds.count("window") == small.cuts and kinds.count("uniform") == small.uniform_cuts
            # how many writes a run of one second gets follows this host's pace (14 beside a CPU hog, about 100
            # quiet): not asserted; each window is, write by write, below
            assert run["writes"] > 0 and run["exposure"] == pytest.approx(run["window_us"] / run["span_us"])
            # one channel, so no two windows overlap: each write's is its sectors, rounded out, at 140 MB/s
            writes = [w for w in trace.read(out / f"{c['cell'].replace('/', '-')}.run{r + 1}.trace.csv")
                      if w.op == "write"]
            sectors = sum((w.offset + w.length + 4095) // 4096 - w.offset // 4096 for w in writes)
            assert len(writes) == run["writes"] and run["window_us"] == pytest.approx(
                sectors * 4096 / 140, abs=0.002 * len(writes))  # the trace has us to 3 decimals
        assert len({run["seed"] for run in c["runs"]}) == 3  # independent runs
    lost = {b: sum(x["lost_commits"] > 0 for x in c["cuts"] if x["kind"] == "window") for b, c in by.items()}
    unreadable = {b: sum(x["unreadable_blocks"] for x in c["cuts"]) for b, c in by.items()}
    said = f"cuts losing acknowledged commits {lost}, unreadable blocks {unreadable}"
    assert lost[4096] == 0 and unreadable[4096] == 0 and "whole 4096-byte atomic units" in by[4096]["cannot_lose"], said
    assert lost[512] > 0 and unreadable[512] > 0 and by[512]["cannot_lose"] is None, said
    assert all(x["corrupt_undetected"] == 0 for c in by.values() for x in c["cuts"]), said
    assert all(x["recovered_to"] >= 0 for c in by.values() for x in c["cuts"])
    md = (out / "report.md").read_text()
    assert "# Crash: 512e without read-modify-write protection" in md
    row = (r"\| `hdd-7200-client` \(unprotected, no write cache\) \| sector512e \| 4096 \| 3 x [\d,]+ \| [\d.]+ % .*"
           r"\| cannot, by rule \| cannot, by rule \|")
    assert re.search(row, md), md
    assert re.search(r"\*\*Acknowledged commits lost\*\*: at 200 commits/s offered \(2 sessions, 512 B a commit\), "
                     r"on `hdd-7200-client` \(unprotected, no write cache\), sector512e at BLOCKSIZE 512, a power cut "
                     r"at a random moment loses acknowledged redo with probability "
                     r"\*\*[\d.]+ % \([\d.]+-[\d.]+\)\*\*", md), md
    assert "Against 0 by rule at BLOCKSIZE 4096" in md and (out / "report.html").exists()
    assert "](report-crash.png)" in md.split("**Acknowledged commits lost**")[0]  # the picture before the headlines
    assert (out / "report-crash.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the assumed unreadable share swept where a cut can lose (BLOCKSIZE 512), on the same runs; not at 4096
    swept = [x for x in by[512]["cuts"] if x["kind"] == "sweep"]
    assert sorted({x["shares"]["unreadable"] for x in swept}) == list(small.sweep_unreadable)
    assert len(swept) == len(small.sweep_unreadable) * small.cuts * small.runs
    assert not [x for x in by[4096]["cuts"] if x["kind"] == "sweep"]  # 4096 spans one unit: nothing to sweep
    high = [x for x in swept if x["shares"]["unreadable"] == max(small.sweep_unreadable)]
    assert sum(x["lost_commits"] > 0 for x in high) > lost[512] / 4, (lost, high)
    assert re.search(r"\*\*Swept\*\*: the share of an unprotected drive's partly written units left unreadable from "
                     r"0\.01 to 0\.9 on hdd-7200-client/sector512e@512", md), md
    # summary.json: what the report says, for machines, without the cuts (a matrix's are megabytes)
    summary = json.loads((out / "summary.json").read_text())
    cells = {c["blocksize"]: c for c in summary["cells"]}
    assert "cuts" not in cells[512] and all("command" not in r for r in cells[512]["runs"])
    assert cells[512]["counts"] == report.counts(by[512]) and cells[512]["counts"]["losing"] == lost[512]
    assert f"**{rates.Estimate(**cells[512]['lose']['per_cut']).percent(2)}**" in md
    assumed = summary["shares"]["unreadable"]
    assert [x["value"] for x in cells[512]["swept"]["unreadable"]] == sorted({*small.sweep_unreadable, assumed})
    assert cells[4096]["swept"] == {} and cells[4096]["cannot_lose"] == by[4096]["cannot_lose"]
    said_first = [line for line in [atomic.line()] if line]  # what this stack lacks for atomic writes, if anything
    assert lines[:len(said_first)] == said_first and len(lines) == len(said_first) + 2, lines
    assert all("cuts" in line for line in lines[len(said_first):])
    assert all(f"- {line}." in md for line in said_first)


def test_the_small_cell_in_virtual_time_is_the_same_on_every_run_and_loses_only_at_512(tmp_path):
    """The same small preset on the virtual clock: the models are redo-writer's model: members, which
    write the trace and the disk the filter would; a cut is a moment of the models' time. Run twice,
    every run and cut is the same; at 512 a cut can lose acknowledged redo, at 4096 none can (by rule),
    and the report says it ran in virtual time. Two runs a cell (the preset has three: the real-time
    test above runs them)."""
    import dataclasses
    small = dataclasses.replace(crash_preset.load("small"), clock="virtual", runs=2)
    docs = []
    for name in ("a", "b"):
        doc = json.loads((crash.run(small, lambda _: None, tmp_path / name) / "crash.json").read_text())
        for c in doc["cells"]:
            for r in c["runs"]:
                assert "model:" in " ".join(r.pop("command"))  # the paths of each run's own directory
        docs.append(doc)
    assert docs[0]["cells"] == docs[1]["cells"] and docs[0]["clock"] == "virtual"
    by = {c["blocksize"]: c for c in docs[0]["cells"]}
    assert any(x["lost_commits"] for x in by[512]["cuts"]) and not any(x["lost_commits"] for x in by[4096]["cuts"])
    assert all(x["corrupt_undetected"] == 0 for c in by.values() for x in c["cuts"])
    md = next((tmp_path / "a").iterdir()).joinpath("report.md").read_text()
    assert "--clock virtual -- small" in md and "in virtual time (a cut is a moment of the models' own time" in md


def test_a_virtual_members_file_with_the_key_separator_in_its_path_is_one_line(tmp_path):
    from sectorlab.crash.devicepath import _VirtualModel
    from sectorlab.errors import SectorlabError
    model = _VirtualModel(tmp_path / "a;b", 1 << 20, {"write": "fixed:1"}, tmp_path / "disk.img", False)
    with pytest.raises(SectorlabError, match=r"a;b/disk.trace: a model: member's file may not have ';' in its path"):
        model.uri()
    ok = _VirtualModel(tmp_path / "m", 1 << 20, {"write": "fixed:1"}, tmp_path / "disk.img", True).uri()
    assert ok == f"model:write=fixed:1;trace={tmp_path}/m/disk.trace;image={tmp_path}/disk.img;" \
                 f"writelog={tmp_path}/m/disk.writelog"


def test_a_multiplexed_group_keeps_what_one_member_loses(tmp_path, work_dir):
    """Two unprotected 512e disks written as a multiplexed group (redo-writer run --mirror), both cut
    at the same moment, each tearing on its own draws: verify reads a block from the mirror where the
    first member's is lost, and the group loses acknowledged commits only when both members' copies
    are; one member alone loses them in about a third of its window cuts. On the virtual clock (what is
    tested is the harness's, not the real path's: the small cell above runs that for real)."""
    import dataclasses

    from sectorlab.crash.preset import Cell
    small = crash_preset.load("small")
    cell = Cell("hdd-7200-client", "sector512e", 512, members=2)
    group = dataclasses.replace(small, cells=(cell,), sweep_unreadable=(), clock="virtual")
    doc = json.loads((crash.run(group, lambda _: None, tmp_path) / "crash.json").read_text())
    (c,) = doc["cells"]
    assert c["cell"].endswith("@512x2") and c["members"] == 2 and c["cannot_lose"] is None
    window = [x for x in c["cuts"] if x["kind"] == "window"]
    assert any(x["blocks_from_mirror"] > 0 for x in window), "no cut read a block from the mirror"
    assert sum(x["lost_commits"] > 0 for x in window) <= 3, [x["lost_commits"] for x in window]
    assert sorted(p.name for p in tmp_path.glob("*/*.trace.csv"))[:2] == [
        "hdd-7200-client-sector512e@512x2.run1.member2.trace.csv", "hdd-7200-client-sector512e@512x2.run1.trace.csv"]
    md = (next(tmp_path.glob("*/report.md"))).read_text()
    assert "**No acknowledged commit lost** on `hdd-7200-client` (unprotected, no write cache), sector512e at " \
           "BLOCKSIZE 512, multiplexed on two such disks, where the rules allow it" in md, md


def test_a_drive_that_lies_loses_acknowledged_4k_redo_the_honest_one_cannot_lose(tmp_path, work_dir):
    """The client SSD at 4Kn, BLOCKSIZE 4096: honest, every write covers whole units and what it
    acknowledges is programmed, so it cannot lose a commit by rule; the same drive lying about FUA
    and flush, holding a write 10 ms before its drain, loses acknowledged commits in cuts between
    its acknowledgements and its programs, and the report says what it lies about. The hold is swept
    only on the drive that lies. On the virtual clock (what is
    tested is the harness's, not the real path's: the small cell above runs that for real)."""
    import dataclasses

    from sectorlab.crash.preset import Cell
    path = tmp_path / "p.toml"
    path.write_text(GOOD.replace('["hdd-7200-client"]', '["ssd-client-tlc", "ssd-client-tlc-lying"]')
                    .replace("seed = 1", "seed = 1\ncache_hold_us = [0, 10000]"))
    keys = [c.key for c in crash_preset.load(str(path)).cells]
    assert "ssd-client-tlc/sector4k@4096" in keys and "ssd-client-tlc-lying/sector4k@4096+hold10000us" in keys
    assert not any("+hold" in k for k in keys if k.startswith("ssd-client-tlc/"))
    small = crash_preset.load("small")
    cells = (Cell("ssd-client-tlc", "sector4k", 4096), Cell("ssd-client-tlc-lying", "sector4k", 4096, hold_us=10000))
    both = dataclasses.replace(small, cells=cells, seconds=1, cuts=8, uniform_cuts=2, sweep_unreadable=(), sweep_new=(),
                               clock="virtual")
    doc = json.loads((crash.run(both, lambda _: None, tmp_path / "out") / "crash.json").read_text())
    honest, lying = sorted(doc["cells"], key=lambda c: c["profile"])
    assert "whole 4096-byte atomic units" in honest["cannot_lose"]
    assert not any(x["lost_commits"] for x in honest["cuts"])
    assert lying["cannot_lose"] is None and lying["lies_about"] == "fua,flush" and lying["hold_us"] == 10000
    assert all(r["acknowledged_early"] > 0 for r in lying["runs"])
    assert sum(x["lost_commits"] > 0 for x in lying["cuts"] if x["kind"] == "window") > 0
    md = (next((tmp_path / "out").glob("*/report.md"))).read_text()
    assert "that acknowledges a FUA write or a flush before the write is durable" in md
    assert "holding an acknowledged write 10000 us" in md
    (fua,) = [line for line in md.splitlines() if line.startswith("- The volatile write cache of")]
    assert fua.startswith("- The volatile write cache of `ssd-client-tlc` held no acknowledged write"), fua
    assert fua.endswith("and so does a drive that acknowledges before the write is durable "
                        "(`ssd-client-tlc-lying`)."), fua
    lying["hold_us"] = 1_000_000  # a hold is said as the preset gave it, never as 1e+06
    held = report.markdown(doc)
    assert "holding an acknowledged write 1000000 us" in held and "1e+06" not in held


def test_a_log_that_wraps_ends_its_recovery_at_the_pass_before(tmp_path, work_dir):
    """A 64 KiB log written over several times (512n at BLOCKSIZE 4096, its states built from the
    model's write log): a write lost whole leaves the previous pass's blocks, where recovery ends
    (older-sequence), and a 4 KiB block torn over an older one has a right header over stale bytes,
    which only the checksum tells; acknowledged positions run past the log's size; and the cell,
    whose writes cover whole sectors, loses no acknowledged commit of the pass the cut finds. On the
    virtual clock (what is tested is the harness's, not the real path's: the small cell above runs
    that for real)."""
    import dataclasses

    from sectorlab.crash.preset import Cell
    small = crash_preset.load("small")
    cell = Cell("hdd-7200-client", "sector512n", 4096, wrapping=True)
    # 200 commits of 2 sessions: at least 100 one-block writes of a 16-block log, 6 passes, at any pace
    wrapping = dataclasses.replace(small, cells=(cell,), seconds=60, transactions=200, sweep_new=(), clock="virtual")
    doc = json.loads((crash.run(wrapping, lambda _: None, tmp_path) / "crash.json").read_text())
    (c,) = doc["cells"]
    assert c["cell"].endswith("@4096+wrap") and c["log_size"] == 64 << 10
    md = next(tmp_path.glob("*/report.md")).read_text()
    assert "200 commits or 60 s, whichever came first" in md  # the run's length as the preset bounded it
    assert all(r["wraps"] >= 2 for r in c["runs"]), [r["wraps"] for r in c["runs"]]
    window = [x for x in c["cuts"] if x["kind"] == "window"]
    reasons = {x["end_reason"] for x in window}
    assert "older-sequence" in reasons and "bad-checksum" in reasons, reasons
    assert max(x["acknowledged"] for x in window) > c["log_size"]  # positions count on across passes
    assert any(x["torn_header_ok"] for x in window)  # a right header over an older pass's bytes
    assert c["cannot_lose"] and not [x for x in c["cuts"] if x["lost_commits"]], c["cannot_lose"]
    # verify counts the redo lost from the pass the cut found (its checkpoint), not from block 0
    assert all(x["checkpoint"] == min(x["pass_start"], x["acknowledged"]) for x in window)
    assert all(x["lost_bytes"] == max(0, x["acknowledged"] - max(x["recovered_to"], x["checkpoint"])) for x in window)
    assert any(x["pass_start"] > 0 for x in window)


def test_rates_take_the_run_as_the_unit():
    """Three runs: the interval is Student's t over the runs' own shares, widened to the pooled
    cuts' exact interval where that is wider; runs that all saw 0 keep the pooled bound."""

    varied = rates.over_runs([0.1, 0.3, 0.5], k=45, n=150)
    assert varied.value == pytest.approx(0.3) and (varied.low, varied.high) == (0.0, pytest.approx(0.797, abs=0.001))
    alike = rates.over_runs([0.3, 0.3, 0.3], k=45, n=150)
    assert (alike.low, alike.high) == (pytest.approx(0.228, abs=0.001), pytest.approx(0.380, abs=0.001))
    none = rates.over_runs([0.0, 0.0, 0.0], k=0, n=60)
    assert (none.value, none.low, none.high) == (0.0, 0.0, pytest.approx(0.0596, abs=0.0005))
    assert rates.over_runs([0.0, 0.0, 0.0], k=0, n=60, scale=0.01).high == pytest.approx(0.000596, abs=0.000005)


def test_the_report_gives_an_exact_interval_of_the_share_of_cuts():
    assert report.share(0, 200) == "0/200 = 0.0 % (0.0-1.8)"
    assert report.share(20, 200) == "20/200 = 10.0 % (6.2-15.0)"


@pytest.fixture
def work_dir(monkeypatch):
    """The runs' work directory (/dev/shm's place), short as /dev/shm is: the model's socket goes
    in it, and a socket's path is at most 107 bytes (pytest's tmp_path, under a parallel run's
    worker directory, is longer)."""
    path = Path(tempfile.mkdtemp(prefix="sl-shm-"))
    monkeypatch.setattr(crash, "WORK_DIR", path)
    monkeypatch.setattr(redolog, "WORK_DIR", path)
    yield path
    shutil.rmtree(path)


def test_a_cut_at_a_chosen_moment_and_one_outside_the_run(tmp_path, work_dir):
    """--at: one cut at that moment of each of the cell's runs; a moment after the run is one line naming
    the run's span, and the cell's model and files are gone either way. On the virtual clock (what is
    tested is the harness's, not the real path's: the small cell above runs that for real)."""
    import dataclasses
    small = crash_preset.load("small")
    one = dataclasses.replace(small, cells=small.cells[:1], cuts=1, at_ms=500.0, seconds=2, clock="virtual")
    doc = json.loads((crash.run(one, lambda _: None, tmp_path / "at") / "crash.json").read_text())
    cuts = doc["cells"][0]["cuts"]
    assert [c["run"] for c in cuts] == [0, 1, 2] and all(c["kind"] == "at" for c in cuts)
    assert all(c["cut_us"] == pytest.approx(500_000, abs=0.01) and c["durable"] > 0 for c in cuts)
    with pytest.raises(UsageError, match=r"--at 99999: hdd-7200-client/sector512e@\d+'s run wrote from 0 to "
                                         r"[\d.]+ ms: expected a moment inside it"):
        crash.run(dataclasses.replace(one, at_ms=99999.0), lambda _: None, tmp_path / "late")
    assert not list(redolog.WORK_DIR.iterdir())


def _log(records: list[tuple[int, int, int, int, bytes]]) -> bytes:
    from sectorlab.crash import writelog
    return writelog.MAGIC + b"".join(writelog.HEAD.pack(t, off, n | op << 32) + data for t, off, n, op, data in records)


@pytest.mark.parametrize("body, says", [
    (b"not a log\n", "not a device model's write log"),
    (_log([(1000, 0, 512, 1, b"x" * 512)])[:-100], "cut short: its last write's bytes end at"),
    (_log([(1000, 0, 512, 1, b"x" * 512)]) + b"\0" * 10, "cut short at byte"),
    (_log([(1000, 0, 512, 7, b"")]), "op 7, expected 1 (write) or 4 (zero)"),
])
def test_a_write_log_that_is_not_whole_is_one_line(tmp_path, body, says):
    from sectorlab.crash import writelog
    from sectorlab.errors import SectorlabError
    path = tmp_path / "disk.writelog"
    path.write_bytes(body)
    with pytest.raises(SectorlabError, match=re.escape(says)):
        writelog.records(path)


def test_a_write_log_of_another_run_than_the_trace_is_refused(tmp_path):
    from sectorlab.crash import writelog
    from sectorlab.devices import trace
    from sectorlab.errors import SectorlabError
    path = tmp_path / "disk.writelog"
    path.write_bytes(_log([(1_000_000, 0, 512, 1, b"x" * 512), (2_000_000, 4096, 0, 4, b"")]))
    head = "t_us,op,offset,length,fua,channel,queue_us,service_us,served_us,cached,rmw_reads,unit_reads,error\n"
    same = trace.parse(head + "1000.000,write,0,512,0,0,1,1,1,0,0,0,0\n")
    assert list(writelog.match(same, writelog.records(path))) == [0]
    for row, says in [("1000.000,write,512,512,0,0,1,1,1,0,0,0,0", "not the write log's write of 512 at 0"),
                      ("1500.000,write,0,512,0,0,1,1,1,0,0,0,0", "not the write log's"),
                      ("1000.000,write,0,512,0,0,1,1,1,0,0,0,0\n3000.000,zero,0,512,0,0,1,1,1,0,0,0,0",
                       "the write log has 1 writes and zeros, the trace 2")]:
        with pytest.raises(SectorlabError, match=re.escape(says)):
            writelog.match(trace.parse(head + row + "\n"), writelog.records(path))


def test_cuts_are_judged_side_by_side_and_given_back_in_their_order(monkeypatch):
    """Three judges at once (the first three wait for each other at a barrier: judged one at a time
    they would never meet it), the verdicts in the items' order whatever order they end in, and the
    first failure raised."""
    import threading
    monkeypatch.setattr(crash, "JUDGES", 3)
    met = threading.Barrier(3, timeout=60)
    later = threading.Event()

    def judge(i, item):
        if i < 3:
            met.wait()  # BrokenBarrierError after 60 s: the three were not judged at once
            if i == 0:
                later.wait(60)  # the first ends after the others
        elif i == len(items) - 1:
            later.set()
        if item == "bad":
            raise ValueError(f"cut {i}")
        return (i, item)
    items = [f"x{i}" for i in range(12)]
    assert crash.judged(judge, items) == list(enumerate(items))
    met.reset()
    later.clear()
    with pytest.raises(ValueError, match="cut 4"):
        crash.judged(judge, [*items[:4], "bad", *items[5:]])
    monkeypatch.setattr(crash, "JUDGES", 1)
    met.reset()
    assert crash.judged(lambda i, item: (i, item), items) == list(enumerate(items))
