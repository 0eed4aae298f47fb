"""Redo BLOCKSIZE rules: the seed cases, the whole cross product with its reasons, bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from sectorlab.inguest import rules
from sectorlab.paths import REPO

COMMAND_FILE = REPO / "sectorlab" / "inguest" / "redocheck.py"


# Seed cases: (host, media, blocksize, override, asm, allowed, expected error or warning fragment)
SEEDS = [
    # 001: 4096 on a 512n disk refused, 512 accepted
    pytest.param(512, 512, 4096, False, None, False,
                 "ORA-01378: The logical block size (4096) of file +REDO is not compatible with the disk sector "
                 "size (media sector size is 512 and host sector size is 512)", id="seed001-4096-on-512n"),
    pytest.param(512, 512, 512, False, None, True, None, id="seed001-512-on-512n"),
    # 002: the override lets 4096 be used on a disk that reports 512/512
    pytest.param(512, 512, 4096, True, None, True, "_disk_sector_size_override", id="seed002-override"),
    # 000: a 4Kn disk gets 4096 by default
    pytest.param(4096, 4096, None, False, None, True, None, id="seed000-4kn-default"),
    # 003: 512e inside an ASM disk group of SECTOR_SIZE 512 refuses 4096 without the override
    pytest.param(512, 4096, 4096, False, 512, False, "media sector size is 512 and host sector size is 512",
                 id="seed003-512e-asm512"),
    pytest.param(512, 4096, 4096, True, 512, True, None, id="seed003-512e-asm512-override"),
    # 003: 512 redo on 512e outside ASM works, with the read-modify-write warning
    pytest.param(512, 4096, 512, False, None, True, "7 of 8 512-byte writes start inside a sector and the other ends",
                 id="seed003-512-on-512e"),
]


@pytest.mark.parametrize("host,media,blocksize,override,asm,allowed,text", SEEDS)
def test_seed_cases(host, media, blocksize, override, asm, allowed, text):
    v = rules.evaluate(host, media, blocksize, override, asm)
    assert v.allowed is allowed, v.reason
    if text:
        assert text in ((v.error or "") + " ".join(v.warnings))


def test_override_cannot_save_a_block_below_the_logical_sector():
    v = rules.evaluate(4096, 4096, 512, override=True)
    assert not v.allowed
    # Oracle's text only: what the engine adds goes to the warnings
    assert v.error == ("ORA-01378: The logical block size (512) of file +REDO is not compatible with the disk sector "
                       "size (media sector size is 4096 and host sector size is 4096)")
    assert any("EINVAL" in w for w in v.warnings)
    assert {"below-logical-sector", "below-logical-error"} <= set(v.rests_on) and v.evidence == "assumed"


@pytest.mark.parametrize("redo,blocksize,blocks,wasted", [
    (1, 512, 1, 495), (496, 512, 1, 0), (497, 512, 2, 495), (3000, 512, 7, 472),
    (3000, 4096, 1, 1080), (4080, 4096, 1, 0), (10000, 1024, 10, 80),
])
def test_wastage_arithmetic(redo, blocksize, blocks, wasted):
    w = rules.redo_wastage(redo, blocksize)
    assert (w.blocks, w.wastage_bytes) == (blocks, wasted)
    assert w.bytes_written == blocks * blocksize
    assert w.bytes_written == redo + w.wastage_bytes + w.header_bytes


@pytest.mark.parametrize("kwargs,fragment", [
    ({"host_sector": 512, "media_sector": 4096, "blocksize": 2048}, "BLOCKSIZE 2048 is not valid"),
    ({"host_sector": 4096, "media_sector": 512}, "logical sector 4096 > physical sector 512"),
    ({"host_sector": 500, "media_sector": 4096}, "not a power of two"),
    ({"host_sector": 512, "media_sector": 4096, "asm_sector_size": 1024}, "ASM SECTOR_SIZE 1024 is not valid"),
])
def test_bad_input(kwargs, fragment):
    with pytest.raises(rules.RulesUsageError, match=fragment):
        rules.evaluate(**kwargs)


def test_a_logical_sector_size_above_the_sector_size_is_oracles_ora_15375():
    v = rules.evaluate(512, 4096, 512, asm_sector_size=512, asm_logical_sector_size=4096)
    assert not v.allowed and v.error == ("ORA-15375: Physical sector size (512) cannot be smaller than the logical "
                                         "sector size (4096).")


def test_blocksize_1024_and_the_emulated_default_say_they_are_not_known():
    v = rules.evaluate(512, 4096, 1024)
    assert v.allowed and v.evidence == "assumed"
    assert any(w.startswith("BLOCKSIZE 1024 on linux") and "not known" in w for w in v.warnings), v.warnings
    hp = rules.evaluate(512, 4096, 1024, platform="hp-ux")
    assert any("HP-UX's and Tru64's native redo block" in w for w in hp.warnings), hp.warnings
    d = rules.evaluate(512, 4096, asm_sector_size=4096, asm_logical_sector_size=512)
    assert d.blocksize == 4096 and d.evidence == "assumed" and any("not public" in w for w in d.warnings)


def run_cli(*args):
    """The standalone file, as it runs inside a guest or on a server: python3 redocheck.py ..."""
    return subprocess.run([sys.executable, str(COMMAND_FILE), *args], capture_output=True, text=True)


def test_cli_exit_codes_and_json():
    ok = run_cli("--logical", "512", "--physical", "4096", "--blocksize", "512", "--json")
    assert ok.returncode == 0
    out = json.loads(ok.stdout)
    assert set(out) == {"allowed", "blocksize", "default_blocksize", "error", "warnings", "host_sector",
                        "media_sector", "evidence", "rests_on", "claims"}
    # The verdict's evidence is its allowed-or-not claim's (issue 49): the default's conflict on 512e
    # and the I/O mode the read-modify-write warning assumes are claims of their own.
    assert out["evidence"] == "seed" and out["claims"]["allowed"] == {
        "evidence": "seed", "rests_on": ["below-media-sector", "blocksize-values"]}
    assert {r["rule"] for r in out["rests_on"]} == {r for c in out["claims"].values() for r in c["rests_on"]}
    assert out["allowed"] is True and "read-modify-write" in ok.stderr
    refused = run_cli("--logical", "512", "--physical", "512", "--blocksize", "4096")
    assert refused.returncode == 1
    assert refused.stderr.strip() == ("ORA-01378: The logical block size (4096) of file +REDO is not compatible "
                                      "with the disk sector size (media sector size is 512 and host sector size "
                                      "is 512)")


@pytest.mark.parametrize("args,fragment", [
    (["--logical", "-512", "--physical", "512"], "not a positive number"),
    (["--logical", "abc", "--physical", "512"], "not a whole number"),
    (["--logical", "4096", "--physical", "512"], "logical sector 4096 > physical sector 512"),
    (["--logical", "512", "--physical", "512", "--blocksize", "2048"], "BLOCKSIZE 2048 is not valid"),
    (["--logical", "512", "--physical", "512", "--asm-sector-size", "1024"], "ASM SECTOR_SIZE 1024"),
    (["/dev/does-not-exist"], "No such file or directory"),
    (["/proc/version"], "no block device under it"),
    (["--logical", "512"], "both --logical and --physical"),
    (["--logical", "1000", "--physical", "4096", "--asm-discovery", "udev"], "host (logical) sector size 1000"),
    (["--logical", "1_024", "--physical", "4096"], "'1_024' is not a whole number"),
    (["--logical", "512", "--physical", "4096", "--asm-discovery", "udev", "--asm-version", " 19 "],
     "is not a version such as"),
    (["--logical", "512", "--physical", "4096", "--asm-discovery", "udev", "--redo-size", "3000"],
     "run it without --asm-discovery"),
    (["--logical", "512", "--physical", "4096", "--redo-size", "9" * 400], "is not a whole number"),
])
def test_cli_bad_usage_exits_2(args, fragment):
    result = run_cli(*args)
    assert result.returncode == 2, result
    assert fragment in result.stderr


def test_sectorlab_cli_delegates():
    from sectorlab import cli
    assert cli.main(["redo-check", "--logical", "4096", "--physical", "4096"]) == 0
    assert cli.main(["redo-check", "--logical", "4096", "--physical", "4096", "--blocksize", "512"]) == 1


@pytest.mark.parametrize("logical, physical, min_io, unit, what", [
    (4096, 16384, None, 16384, "physical sector"),
    (4096, 4096, 16384, 16384, "minimum I/O size"),
    (512, 65536, 4096, 65536, "physical sector"),
])
def test_a_write_unit_above_4096_gets_the_largest_blocksize_and_a_warning(logical, physical, min_io, unit, what):
    v = rules.evaluate(logical, physical, min_io=min_io)
    assert v.allowed and v.default_blocksize == v.blocksize == 4096, v
    said = [w for w in v.warnings if w.startswith(f"the device writes in units of {unit} bytes (its {what})")]
    assert len(said) == 1 and "every redo write is smaller than that unit" in said[0], v.warnings
    assert "not documented" in said[0]
    # No BLOCKSIZE above 4096 exists: asking for one is bad input, not a verdict.
    with pytest.raises(rules.RulesUsageError):
        rules.evaluate(logical, physical, blocksize=16384, min_io=min_io)


def test_up_to_4096_nothing_changes():
    for logical, physical in ((512, 512), (512, 4096), (4096, 4096)):
        v = rules.evaluate(logical, physical, min_io=physical)
        assert v.default_blocksize == physical
        assert not [w for w in v.warnings if "units of" in w], v.warnings


def test_asm_on_a_16k_unit_disk():
    # a 16 KiB unit as minimum I/O: ASM takes the 4096-byte sectors, the verdict warns of the unit
    v = rules.evaluate(4096, 4096, asm_sector_size=4096, min_io=16384)
    assert v.allowed and v.blocksize == 4096
    assert any("units of 16384 bytes" in w for w in v.warnings), v.warnings
    # a 16 KiB physical sector: no disk group takes it, whichever way ASM finds the disk
    p = rules.evaluate(4096, 16384, asm_sector_size=4096, disk="/dev/sdc")
    assert not p.allowed and p.error == "ORA-59012: Disk /dev/sdc uses an invalid physical sector size (16384)."


@pytest.mark.parametrize("min_io", [0, 1000, 2048, True])
def test_a_minimum_io_that_is_not_a_multiple_of_the_logical_sector_is_bad_input(min_io):
    with pytest.raises(rules.RulesUsageError, match="minimum I/O size"):
        rules.evaluate(4096, 16384, min_io=min_io)


@pytest.mark.parametrize("offset, length, unit, expected", [
    (0, 4096, 4096, 0),        # one whole unit
    (0, 512, 4096, 1),         # starts on a boundary, ends inside the unit: the next write reads it again
    (3584, 512, 4096, 1),      # starts inside, ends on the boundary
    (512, 1024, 4096, 1),      # inside one unit at both ends: one unit
    (3584, 1024, 4096, 2),     # crosses a boundary: the first and the last unit
    (1536, 8192, 4096, 2),
    (4096, 8192, 4096, 0),
    (0, 4096, 16384, 1),       # a 4 KiB redo write on a 16 KiB write unit
])
def test_partial_units_count_both_ends(offset, length, unit, expected):
    assert rules.partial_units(offset, length, unit) == expected


def test_a_log_of_512_byte_writes_on_512e_writes_every_sector_in_part():
    """Seed 003's "seven out of eight 512B slots ... are not aligned" counts starts; the eighth ends
    inside its sector: 8 of 8 writes cost a read-modify-write."""
    assert rules.log_partial_units(512, 8, 4096) == (8, 8)
    assert rules.log_partial_units(4096, 8, 4096) == (0, 0)
    assert rules.log_partial_units(1536, 8, 4096) == (8, 10)  # 3 blocks: some writes straddle a boundary
    assert rules.log_partial_units(1536, 3, 4096, log_size=4096) == (3, 3)  # the third write wraps to 0



COLLECTOR = REPO / "labtests" / "unit" / "data" / "from-host" / "collector-db-server.json"


def test_from_host_answers_for_a_servers_disk(capsys):
    from sectorlab import cli
    assert cli.main(["redo-check", "--from-host", str(COLLECTOR), "sdb", "--asm-discovery", "asmlib", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["disk"] == {"name": "sdb", "logical": 512, "physical": 4096, "min_io": 4096}
    assert (out["asm"]["sector_size"], out["asm"]["reads"]) == (4096, [4096, 4096])
    assert [r["allowed"] for r in out["redo"]] == [False, False, True]
    # sdc: a 16 KiB physical sector, which no ASM sector size takes
    assert cli.main(["redo-check", "--from-host", str(COLLECTOR), "sdc", "--asm-discovery", "udev"]) == 1
    assert capsys.readouterr().err.strip() == "ORA-59012: Disk sdc uses an invalid physical sector size (16384)."


@pytest.mark.parametrize("args, fragment", [
    (["sdx"], "no disk 'sdx' in it: expected one of nvme0n1, nvme1n1"),
    (["sdb", "--logical", "512"], "not --logical/--physical"),
    ([], "give the disk's name in it"),
])
def test_from_host_bad_input_is_one_line(capsys, args, fragment):
    from sectorlab import cli
    assert cli.main(["redo-check", "--from-host", str(COLLECTOR), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert fragment in err and "\n" not in err


def test_a_path_on_a_filesystem_gets_the_sizes_of_the_block_device_under_it(tmp_path):
    st = os.stat(tmp_path)
    result = run_cli(str(tmp_path), "--json")
    if os.major(st.st_dev) == 0:  # overlay, tmpfs: nothing under it (test_cli_bad_usage_exits_2 covers that)
        pytest.skip(f"{tmp_path} is on a filesystem with no block device under it")
    # lsblk, a second instrument, on the same device
    rows = subprocess.run(["lsblk", "-n", "-r", "-b", "-o", "MAJ:MIN,LOG-SEC,PHY-SEC"], capture_output=True,
                          text=True, check=True).stdout.splitlines()
    seen = {row.split()[0]: [int(v) for v in row.split()[1:]] for row in rows}
    out = json.loads(result.stdout)
    assert [out["host_sector"], out["media_sector"]] == seen[f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"]
    # How the sizes were read is the sizes claim's, not the allowed-or-not claim's (issue 49).
    assert out["claims"]["sizes"] == {"evidence": "assumed", "rests_on": ["filesystem-device"]}
    assert "filesystem-device" in {r["rule"] for r in out["rests_on"]}
