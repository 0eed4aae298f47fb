"""The twin (sectorlab/labdef/twin.py, `sectorlab lab twin`): a server's disk, a device profile and
an AWR report as one bench preset; the preset read back as a preset, run in virtual time, and bad
input refused in one line with nothing written."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from sectorlab.errors import UsageError
from sectorlab.labdef import fromhost, twin
from sectorlab.paths import REPO

DATA = REPO / "labtests" / "unit" / "data"
SERVER = DATA / "from-host" / "collector-db-server.json"   # nvme0n1: a P3700 1.6 TB as delivered (512n)
AWR = DATA / "awr" / "seed000-excerpt.txt"


def _lab(*args, cwd=REPO):
    return subprocess.run([sys.executable, "-m", "sectorlab", "lab", "twin", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd)


def test_a_512n_drive_is_asked_512_against_4096_with_the_override_beside_the_floor(tmp_path):
    out, notes = twin.write(tmp_path / "twin-db1.toml", SERVER, "nvme0n1", "intel-p3700", AWR)
    import tomllib
    text = out.read_text()
    doc = tomllib.loads(text)
    disks = {d["name"]: d for d in doc["vm"][0]["disk"]}
    assert disks["mine"] == {"name": "mine", "bus": "nvme", "geometry": "sector512n", "size_mib": twin.SIZE_MIB,
                             "device": "intel-p3700"}
    assert disks["floor"]["device"] == "floor" and disks["floor"]["geometry"] == "sector512n"
    bench = doc["bench"]
    assert bench["blocksizes"] == [512, 4096] and all(t["override"] for t in bench["target"])
    assert [(c["a"], c["b"]) for c in bench["compare"]] == [("mine@512", "mine@4096"), ("floor@512", "mine@512"),
                                                              ("floor@4096", "mine@4096")]
    # the AWR's load: seed 000's 202 sessions, 5,351 B and 1,265 us a transaction, its figures beside the disk's
    loop = bench["closed_loop"]
    assert (loop["sessions"], loop["redo_per_txn"], loop["cpu_us_per_txn"]) == (202, 5351, 1265)
    assert {f["a"] for f in loop["figure"]} == {"mine@512", "mine@4096"}
    assert doc["lab"]["name"] == "twin-db1" and "nvme0n1" in text.splitlines()[0]
    assert any("sizes" in n for n in notes)


def test_a_4kn_disk_gets_4096_only_and_a_512e_disk_no_override(tmp_path):
    import tomllib
    out, _ = twin.write(tmp_path / "t4k.toml", SERVER, "nvme1n1", "intel-p3700", AWR)
    bench = tomllib.loads(out.read_text())["bench"]
    assert bench["blocksizes"] == [4096] and [(c["a"], c["b"]) for c in bench["compare"]] == [("floor@4096",
                                                                                              "mine@4096")]
    out, _ = twin.write(tmp_path / "t512e.toml", SERVER, "nvme3n1", "nvme-512e", AWR)
    bench = tomllib.loads(out.read_text())["bench"]
    assert bench["blocksizes"] == [512, 4096] and not any(t.get("override") for t in bench["target"])


def test_the_twin_runs_in_virtual_time_and_answers_for_the_disk(tmp_path):
    out, _ = twin.write(tmp_path / "twin-v.toml", SERVER, "nvme3n1", "nvme-512e", AWR)
    proc = subprocess.run([sys.executable, "-m", "sectorlab", "bench-load", str(out), "--clock", "virtual",
                           "--wakeup-us", "10", "--repeats", "2", "--duration", "1", "--seed", "1",
                           "--results", str(tmp_path / "r")], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads(next((tmp_path / "r").glob("*/summary.json")).read_text())
    configs = summary["configurations"]
    assert set(configs) == {"mine@512", "mine@4096", "floor@512", "floor@4096"}
    # the 512e drive reads its 4 KiB unit before a 512-byte write: its log writer is slower at 512
    lfpw = "log_file_parallel_write_mean_ms"
    assert configs["mine@512"][lfpw] > configs["mine@4096"][lfpw]
    report = next((tmp_path / "r").glob("*/report.md")).read_text()
    assert "The AWR report's load" in report and "your disk (nvme3n1) at BLOCKSIZE 512 against 4096" in report
    # the first screen's picture: each comparison's effect with its CI, as a bench report opens (under
    # its title, before any section)
    lines = report.splitlines()
    picture = next(i for i, x in enumerate(lines) if x.startswith("![The findings: each comparison's primary metric"))
    section = next(i for i, x in enumerate(lines) if x.startswith("## "))
    assert lines[0].startswith("# ") and picture < section, lines[:8]
    assert next((tmp_path / "r").glob("*/report-findings.png")).stat().st_size > 1000


@pytest.mark.parametrize(("args", "says"), [
    (["--device", "intel-p3700", "--awr", AWR], "8 disks (nvme0n1, nvme1n1"),
    (["--disk", "sdz", "--device", "intel-p3700", "--awr", AWR], "--disk 'sdz': "),
    (["--disk", "nvme0n1", "--device", "no-such", "--awr", AWR], "device profile 'no-such' is not in the catalog"),
    (["--disk", "nvme0n1", "--device", "intel-p3700", "--awr", DATA / "awr" / "seed001-hdd-excerpt.txt"],
     "the AWR report has no Load Profile"),
    (["--disk", "sdd", "--device", "intel-p3700", "--awr", AWR], "none of its disks can be reproduced"),
])
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, args, says):
    proc = _lab(SERVER, *args, "-o", tmp_path / "twin.toml")
    assert proc.returncode == 2 and says in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_an_existing_file_is_kept_unless_forced(tmp_path):
    out = tmp_path / "twin.toml"
    out.write_text("mine\n")
    proc = _lab(SERVER, "--disk", "nvme0n1", "--device", "intel-p3700", "--awr", AWR, "-o", out)
    assert proc.returncode == 2 and "the file exists" in proc.stderr and out.read_text() == "mine\n"
    proc = _lab(SERVER, "--disk", "nvme0n1", "--device", "intel-p3700", "--awr", AWR, "-o", out, "--force")
    assert proc.returncode == 0, proc.stderr
    assert "sectorlab bench-load" in proc.stderr and out.read_text().startswith("# A twin")


def test_a_probe_s_profile_file_named_from_elsewhere_is_kept_absolute_and_a_512e_disk_without_a_unit_said(tmp_path):
    (tmp_path / "profile.toml").write_text((DATA / "profiles" / "nvme-512e-without-tail.toml").read_text())
    proc = _lab(SERVER, "--disk", "nvme3n1", "--device", "profile.toml", "--awr", AWR, "-o", tmp_path / "t.toml",
                cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    import tomllib
    disk = tomllib.loads((tmp_path / "t.toml").read_text())["vm"][0]["disk"][0]
    assert disk["device"] == str(tmp_path / "profile.toml")   # not the checkout's profile.toml
    proc = _lab(SERVER, "--disk", "nvme3n1", "--device", "intel-p3700", "--awr", AWR, "-o", tmp_path / "u.toml")
    assert proc.returncode == 0 and "reads no unit before a smaller write (write-unit 0)" in proc.stderr


def test_a_disk_the_lab_leaves_out_says_why(tmp_path):
    proc = _lab(SERVER, "--disk", "loop0", "--device", "intel-p3700", "--awr", AWR, "-o", tmp_path / "t.toml")
    assert proc.returncode == 2 and "loop0: not a disk the lab reproduces" in proc.stderr, proc.stderr


def test_a_left_out_disk_is_found_by_its_exact_name_not_a_name_it_begins_with(tmp_path):
    """Kernel names may hold a colon: a disk `a` beside a left-out `a:b` (and the other way) is each
    its own; a prefix of a left-out disk's name, or a name a left-out one begins with, is not it."""
    def disk(name: str) -> fromhost.HostDisk:
        return fromhost.HostDisk(name, 512, 4096, 4096, 0, 0, 1 << 30, False, "nvme", "m", None, None)

    host = tmp_path / "server.json"
    assert twin._choose(host, [disk("a")], "a", {"a:b": "left out"}).name == "a"
    assert twin._choose(host, [disk("a:b")], "a:b", {"a": "left out"}).name == "a:b"
    with pytest.raises(UsageError, match=r"^--disk 'a:b': a:b: left out: expected one of a$"):
        twin._choose(host, [disk("a")], "a:b", {"a:b": "left out"})
    with pytest.raises(UsageError, match=r"has no such disk: expected one of a:b$"):
        twin._choose(host, [disk("a:b")], "a:", {"a": "left out"})


def test_a_missing_report_is_refused_before_the_disks_are_read(tmp_path):
    with pytest.raises(UsageError, match="missing.txt"):
        twin.make(tmp_path / "no-server.json", "nvme0n1", "intel-p3700", tmp_path / "missing.txt")
