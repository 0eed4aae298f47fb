"""The databases' power-cut judges read on the host (crash/databases.py), their report
(crash/dbreport.py) and the matrix's cells (crash/dbmatrix.py), without a guest."""

from __future__ import annotations

import re

import pytest

from labtests.unit import records
from sectorlab.crash import databases
from sectorlab.crash import labdb as dbmatrix
from sectorlab.errors import SectorlabError, UsageError
from sectorlab.report import crashdb as dbreport

CAME_UP = "mounted 1\nstarted 1\nrecovery_s 1.25\nids 1 2 3 4 5 \nsum_k 5 \ncount_log 5 \ncheck \nerrors 0\n" \
          "restored 0\nwhy \n"


def test_a_database_that_came_back_with_every_acknowledged_commit_is_whole():
    v = databases.parse("mariadb-doublewrite-on", CAME_UP, acknowledged=4)
    assert (v.started, v.recovery_s, v.ids, v.lost, v.consistent, v.detected, v.undetected) == \
        (True, 1.25, {1, 2, 3, 4, 5}, 0, True, False, False)


def test_a_missing_acknowledged_commit_the_database_said_nothing_of_is_undetected():
    v = databases.parse("postgres-fpw-off", CAME_UP.replace("ids 1 2 3 4 5", "ids 1 2 4 5"), acknowledged=4)
    assert (v.lost, v.detected, v.undetected) == (1, False, True)
    # the same with a page the database found bad: detected, not silent
    v = databases.parse("postgres-fpw-off", CAME_UP.replace("ids 1 2 3 4 5", "ids 1 2 4 5").replace(
        "errors 0", "errors 1"), acknowledged=4)
    assert (v.lost, v.detected, v.undetected) == (1, True, False)


def test_tables_that_disagree_are_wrong_even_with_every_commit_there():
    v = databases.parse("postgres-fpw-off", CAME_UP.replace("sum_k 5", "sum_k 4"), acknowledged=5)
    assert (v.lost, v.consistent, v.undetected) == (0, False, True)


def test_a_database_that_did_not_come_up_lost_every_acknowledged_commit_and_said_so():
    text = "mounted 1\nstarted 0\nerrors 3\nrestored 0\nwhy InnoDB: Unable to apply log to corrupted page 516\n"
    v = databases.parse("mariadb-doublewrite-off", text, acknowledged=166)
    assert (v.started, v.lost, v.detected, v.undetected) == (False, 166, True, False)
    assert "corrupted page 516" in v.why


def test_an_error_where_ids_were_expected_is_the_database_speaking():
    v = databases.parse("postgres-fpw-off", CAME_UP.replace(
        "ids 1 2 3 4 5 ", "ids ERROR:  invalid page in block 3 of relation base/16384/16390 "), acknowledged=2)
    assert v.detected and "invalid page in block 3" in v.check and v.lost == 2


def test_each_verdict_names_what_found_the_failure():
    """The first detector of the failure: the filesystem, crash recovery, the database's checks,
    pg_checksums, its log; then the lab's own checks (acknowledged ids, SUM(k)), which a database in
    service does not have: a judge without data checksums that came up short is found by the lab."""
    def found(text, judge="postgres-fpw-off", acknowledged=5):
        return databases.parse(judge, text, acknowledged).detector
    assert found(CAME_UP) == ""
    assert found("mounted 0\nwhy bad superblock\n") == "ext4: the filesystem did not mount"
    assert found("mounted 1\nstarted 0\nerrors 2\nwhy FATAL: invalid page\n") == \
        "crash recovery: the database did not come up"
    assert found(CAME_UP.replace("check \n", "check heap 2\n")) == "the database's checks (CHECK TABLE; amcheck)"
    assert found(CAME_UP + "checksum_failures 1\n") == "pg_checksums (data checksums)"
    short = CAME_UP.replace("ids 1 2 3 4 5", "ids 1 2 4 5") + "checksums off\n"
    v = databases.parse("postgres-fpw-off-checksums-off", short, 4)
    assert (v.checksums, v.detector, v.undetected) == ("off", "the lab: acknowledged commits missing", True)
    assert v.row()["checksums"] == "off" and v.row()["detector"] == v.detector
    assert found(CAME_UP.replace("sum_k 5", "sum_k 4")) == "the lab: SUM(k) against the commits in log"
    assert databases.checksums("postgres-fpw-off-checksums-off") == "off"
    assert databases.checksums("postgres-fpw-off") == "on" == databases.checksums("mariadb-doublewrite-off")


def test_output_that_is_not_a_judges_is_one_line():
    with pytest.raises(SectorlabError, match=re.escape("judge postgres-fpw-on: its output has no 'mounted' line")):
        databases.parse("postgres-fpw-on", "sudo: a password is required\n", 3)
    with pytest.raises(UsageError, match=re.escape("judge 'oracle': expected one of mariadb-doublewrite-on, ")):
        databases.judge_of("oracle")


def _row(judge: str, disk: str = "client-512e", **changes) -> dict:
    base = {"disk": disk, "profile": "hdd-7200-client", "geometry": "sector512e", "sectors": "512/4096",
            "kind": "copy", "writes": 900, "atomic_unit": 4096, "partial_unit_writes": 0, "moment_s": 1.0,
            "acknowledged": 10, "writes_durable": 800, "writes_torn": 1, "writes_lost": 2, "units_unreadable": 0,
            "judge": judge, "mounted": True, "started": True, "recovery_s": 1.0, "recovered": 10, "lost": 0,
            "consistent": True, "detected": False, "undetected": False, "check": "", "checksum_failures": 0,
            "errors": 0, "restored": 0, "why": ""}
    return base | changes


def test_a_cells_share_takes_the_run_as_the_unit_when_it_has_runs():
    """Three runs of three cuts, 1, 0 and 2 not back whole: 3/9, its interval Student's t over the
    runs' shares (1/3, 0, 2/3) widened to the pooled cuts' exact one; one run: the exact interval."""
    down = {"started": False, "lost": 10, "detected": True}
    rows = [_row("postgres-fpw-off", run=r, **(down if i < n else {})) for r, n in enumerate((1, 0, 2))
            for i in range(3)]
    said = dbreport.broken_share(rows)
    assert said.startswith("3/9 = 33.3 % (0-") and said.endswith("(3 runs)"), said
    assert float(said.split("(0-")[1].split(")")[0]) > 90  # t with 2 degrees of freedom: wide
    assert dbreport.broken_share(rows[:3]) == "1/3 = 33.3 % (0.8-90.6)"


def test_a_cut_at_a_random_moment_is_the_exposure_times_the_copies_share():
    """Copies are drawn inside the writes' windows: per run, the exposure (1 % here) times the share
    of its copies not back whole (1 of 2, 0, 0), the mean over runs 0.17 %; the real cuts (one a run,
    not back whole here) are moments of their own and do not enter it; a record without exposures
    says '-'."""
    down = {"started": False, "lost": 10, "detected": True}
    rows = [_row("postgres-fpw-off", run=r, kind="real", exposure=0.01, **down) for r in range(3)]
    rows += [_row("postgres-fpw-off", run=r, kind=f"copy {i + 1}", exposure=0.01, **(down if (r, i) == (0, 0) else {}))
             for r in range(3) for i in range(2)]
    said = dbreport.per_random_cut(rows)
    assert said.startswith("0.17 % (0-"), said
    assert dbreport.per_random_cut([_row("postgres-fpw-off")]) == "-"


def test_a_cell_whose_database_came_up_with_damage_its_checks_found_is_not_back_whole():
    """Every commit there and the tables consistent, but amcheck found a heap tuple without its index
    entry: said as such, and the cell is not among those back whole."""
    rows = [_row("postgres-fpw-off-checksums-off", checksums="off"),
            _row("postgres-fpw-off-checksums-off", checksums="off", detected=True,
                 check="ERROR: heap tuple (574,16) from table \"t\" lacks matching index tuple",
                 detector="the database's checks (CHECK TABLE; amcheck)")]
    said = "\n".join(dbreport.headlines({"rows": rows, "judges": ["postgres-fpw-off-checksums-off"]}))
    assert "(data checksums off)** on `hdd-7200-client` sector512e (512/4096): back with every acknowledged " \
           "commit and consistent tables after every cut, but in 1 of 2 it came up with damage its own checks " \
           "found: 1 by the database's checks (CHECK TABLE; amcheck)." in said, said
    assert "Back whole after every cut" not in said


def test_the_report_tests_a_protection_off_against_on_and_says_which_cells_came_back_whole():
    down = {"started": False, "lost": 10, "recovered": 0, "consistent": None, "detected": True, "errors": 3,
            "recovery_s": None, "why": "InnoDB: Unable to apply log to corrupted page 516"}
    rows = ([_row("mariadb-doublewrite-off", **down) for _ in range(12)] + [_row("mariadb-doublewrite-off")] * 8
            + [_row("mariadb-doublewrite-on")] * 20)
    doc = {"lab": "crash-db", "judges": ["mariadb-doublewrite-on", "mariadb-doublewrite-off"], "cuts": 20,
           "seed": 1, "rows_per_table": 20000, "checkpoint_every": 50, "min_acks": 150, "rows": rows, "wall_s": 9}
    text = dbreport.markdown(doc)
    assert "**mariadb-doublewrite-off** on `hdd-7200-client` sector512e (512/4096): not back whole after " \
           "12/20 = 60.0 % (36.1-80.9) of the cuts (12 did not come up, 0 came up without acknowledged commits)" in text
    assert "With mariadb-doublewrite-on: 0/20 = 0.0 % (0.0-16.8); Fisher's exact test p = 4.5e-05 (n = 20 and " \
           "20 cuts)." in text
    assert "**Back whole after every cut** in 1 cells: mariadb-doublewrite-on on client-512e (20 cuts)" in text
    assert "No database write covered its disk's atomic unit in part" in text
    assert "Unable to apply log to corrupted page 516" in text
    partial = dbreport.markdown(doc | {"rows": [_row("mariadb-doublewrite-on", partial_unit_writes=3)]})
    assert "No database write covered" not in partial and "| 3 of 900 |" in partial


def test_the_matrix_pairs_each_logged_disk_with_a_judge_disk_of_its_sectors(tmp_path, monkeypatch):
    from sectorlab.lab import modelled
    monkeypatch.setattr(modelled, "SERVE_DIR", tmp_path / "serve")
    monkeypatch.setattr(modelled, "state_dir", lambda lab: tmp_path / "state" / lab)
    raw = records.record()
    raw["lab"] = "crash-db"
    db = records.DISK | {"name": "client-512e", "geometry": "sector512e", "logical_block_size": 512,
                         "physical_block_size": 4096, "device": "hdd-7200-client", "serial": "a"}
    judge = db | {"name": "judge-512e", "device": None, "serial": "b"}
    other = db | {"name": "judge-4k", "device": None, "serial": "c", "logical_block_size": 4096, "geometry": "sector4k"}
    raw["disks"] = {"lab1/client-512e": db, "lab1/judge-4k": other}
    from sectorlab.lab.record import LabRecord
    with pytest.raises(UsageError, match=re.escape("lab crash-db: no disk keeps a write log (write_log = true)")):
        dbmatrix.pairs(LabRecord.from_json(raw, "test"))
    # the record says which disks keep a write log (write_log = true), not a file's existence
    log = modelled.server("crash-db", "client-512e").writelog
    log.parent.mkdir(parents=True)
    log.write_bytes(b"")
    with pytest.raises(UsageError, match=re.escape("lab crash-db: no disk keeps a write log (write_log = true)")):
        dbmatrix.pairs(LabRecord.from_json(raw, "test"))
    db["write_log"] = True
    with pytest.raises(UsageError, match=re.escape("disk client-512e (512/4096) has no judge disk: add one to VM "
                                                   "lab1 with the same sectors")):
        dbmatrix.pairs(LabRecord.from_json(raw, "test"))
    raw["disks"]["lab1/judge-512e"] = judge
    got = dbmatrix.pairs(LabRecord.from_json(raw, "test"))
    assert [(d.name, j.name) for d, j in got] == [("client-512e", "judge-512e")]


def test_the_stack_without_atomic_writes_is_said_in_one_line(tmp_path, monkeypatch):
    from sectorlab.crash import atomic
    assert atomic.kernel_lacks("6.12.48+deb12-amd64") is None and atomic.kernel_lacks("6.11.0") is None
    assert "the guest's kernel 6.1.0-40-amd64 reports no atomic_write_* limits" in \
        atomic.kernel_lacks("6.1.0-40-amd64")
    fake = tmp_path / atomic.QEMU
    with_atomic = "nvme options:\n  atomic.awun=<uint16>\n  atomic.awupf=<uint16>\n"
    for props, version, lacks in [("nvme options:\n  serial=<str>\n", "7.2.22", True), (with_atomic, "10.0.3", False)]:
        fake.write_text(f"#!/bin/sh\n[ \"$1\" = --version ] && echo 'QEMU emulator version {version}' && exit 0\n"
                        f"printf '{props}'\n")
        fake.chmod(0o755)
        monkeypatch.setenv("PATH", str(tmp_path))
        said = atomic.line("6.12.1")
        if lacks:
            assert said == (f"atomic writes: not run: the host's QEMU {version} has no NVMe atomic write parameters "
                            f"(atomic.awun, atomic.awupf: QEMU 10, bookworm-backports); the rest runs without them")
        else:
            assert said is None and atomic.line("6.1.0") is not None


def test_a_commit_missing_below_one_that_survived_is_a_hole_even_before_the_host_had_its_ack():
    v = databases.parse("postgres-fpw-off", CAME_UP.replace("ids 1 2 3 4 5", "ids 1 2 3 5").replace(
        "count_log 5", "count_log 4").replace("sum_k 5", "sum_k 4"), acknowledged=2)
    assert (v.lost, v.holes, v.consistent, v.undetected) == (0, 1, False, True)


def test_ids_the_database_would_not_give_are_not_read_and_pg_checksums_that_did_not_run_is_said():
    text = CAME_UP.replace("ids 1 2 3 4 5 ", "ids ERROR:  could not read block 0 in file \"base/5/16390\" ") + \
        "checksum_error pg_checksums did not check: pg_checksums: error: cluster must be shut down\n"
    v = databases.parse("postgres-fpw-on", text, acknowledged=3)
    assert (v.ids_read, v.lost, v.detected) == (False, 3, True)
    assert "pg_checksums did not check" in v.check and "could not read block 0" in v.check
    doc = {"lab": "l", "judges": ["postgres-fpw-on"], "cuts": 1, "seed": 1, "rows_per_table": 1,
           "checkpoint_every": 50, "min_acks": 1, "rows": [_row(**v.row())], "wall_s": 1}
    assert "| 1/1 = 100.0 % (2.5-100.0) | - | 0 | 0 | 0 |" in dbreport.markdown(doc)  # no exposure: no rate


def test_a_judge_whose_database_the_image_lacks_is_one_line():
    from sectorlab.guest.client import CommandResult

    class Guest:
        def __init__(self, has: set[str]):
            self.has, self.asked = has, []

        def run(self, cmd, *args):
            self.asked.append(args[0])
            ok = any(name in args[0] for name in self.has)
            return CommandResult(cmd, 0 if ok else 1, "", "")

    bare = Guest(set())
    with pytest.raises(UsageError, match=re.escape("judge postgres-fpw-off: the guest image ol9 has no PostgreSQL "
                                                   "server (initdb, pg_ctl): use a Debian 12 image")):
        databases.require(bare, "ol9", "postgres-fpw-off")
    with pytest.raises(UsageError, match=re.escape("judge mariadb-doublewrite-on: the guest image ol9 has no MariaDB "
                                                   "server (mariadbd) with its data directory template")):
        databases.require(bare, "ol9", "mariadb-doublewrite-on")
    databases.require(Guest({"mariadbd"}), "debian12", "mariadb-doublewrite-on")
