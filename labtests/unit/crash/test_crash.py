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

from sectorlab.crash import atomic, redolog
from sectorlab.crash import devicepath as crash
from sectorlab.crash import preset as crash_preset
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
    assert len(p.cells) == 4 * 3 * 2 and p.cuts >= 200


def test_the_small_cell_loses_acknowledged_redo_only_at_blocksize_512(tmp_path):
    """512e without read-modify-write protection: at BLOCKSIZE 512 a cut during a log write's
    read-modify-write can leave its 4 KiB sector unreadable, the redo acknowledged before it in the
    same sector included; at 4096 every write is whole sectors, nothing is read first, and no cut
    loses what was acknowledged. Every cut's recovery ends where the checksums say, with no
    corruption the checksum missed."""
    lines = []
    out = crash.run(crash_preset.load("small"), lines.append, tmp_path)
    doc = json.loads((out / "crash.json").read_text())
    by = {c["blocksize"]: c for c in doc["cells"]}
    assert set(by) == {512, 4096} and all(len(c["cuts"]) == 60 for c in by.values())
    assert all(c["writes"] > 20 for c in by.values()), {b: c["writes"] for b, c in by.items()}
    lost = {b: sum(x["lost_commits"] > 0 for x in c["cuts"]) for b, c in by.items()}
    unreadable = {b: sum(x["unreadable_blocks"] for x in c["cuts"]) for b, c in by.items()}
    said = f"cuts losing acknowledged commits {lost}, unreadable blocks {unreadable}"
    assert lost[4096] == 0 and unreadable[4096] == 0, said
    assert lost[512] > 0 and unreadable[512] > 0, said
    assert all(x["corrupt_undetected"] == 0 for c in by.values() for x in c["cuts"]), said
    assert all(x["recovered_to"] >= 0 for c in by.values() for x in c["cuts"])
    md = (out / "report.md").read_text()
    assert "# Crash: 512e without read-modify-write protection" in md
    row = r"\| `hdd-7200-client` \(unprotected, no write cache\) \| sector512e \| 4096 \| [\d,]+ \| 0/60 = 0.0 % "
    assert re.search(row, md), md
    assert "**Acknowledged commits lost** on `hdd-7200-client` (unprotected, no write cache), sector512e at " \
           "BLOCKSIZE 512" in md and (out / "report.html").exists()
    assert re.search(r"At BLOCKSIZE 4096: 0/60 = 0.0 % \(0.0-6.0\); Fisher's exact test p = \S+ \(n = 60 and 60 cuts\)",
                     md), md
    said_first = [line for line in [atomic.line()] if line]  # what this stack lacks for atomic writes, if anything
    assert lines[:len(said_first)] == said_first and len(lines) == len(said_first) + 2, lines
    assert all("cuts" in line for line in lines[len(said_first):])
    assert all(f"- {line}." in md for line in said_first)


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
    """--at: one cut at that moment of each cell's run; a moment after the run is one line naming
    the run's span, and the cell's model and files are gone either way."""
    import dataclasses
    small = crash_preset.load("small")
    one = dataclasses.replace(small, cells=small.cells[:1], cuts=1, at_ms=500.0)
    doc = json.loads((crash.run(one, lambda _: None, tmp_path / "at") / "crash.json").read_text())
    (cut,) = doc["cells"][0]["cuts"]
    assert cut["cut_us"] == pytest.approx(500_000, abs=0.01) and cut["durable"] > 0
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
