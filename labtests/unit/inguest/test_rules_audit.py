"""Issue 49, the rules engine after an outside audit: what each of its seven points changed, beyond
the case table (test_rules_cases.py): the words a verdict says, the labels of the rules, the JSON
its callers read, and the command line's new inputs and their bad input (one line, exit 2)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import stat
import subprocess
import sys
from unittest import mock

import pytest

from sectorlab.inguest import asmrules, redocheck, rules
from sectorlab.paths import REPO

COMMAND_FILE = REPO / "sectorlab" / "inguest" / "redocheck.py"
# Seed 003's words, and the Administrator's Guide's that seed 003 carries without naming them (point 1).
GUIDE_WORDS = "'you can override the default 4K block size for redo logs by specifying a 512B block size'"
SEED_DEFAULT = "'default is 512 bytes'"
SEED_FAILS = "'will fail unless the sector size check is overridden'"


def run_cli(*args) -> subprocess.CompletedProcess:
    """redo-check's command line run in this process: its exit status and what it printed on stdout
    and stderr, as the guest's standalone script gives them (test_rules.py runs that script in a
    process of its own; here the verdicts' words are tested, not the process)."""
    out, err = io.StringIO(), io.StringIO()
    with mock.patch.dict(os.environ, {"COLUMNS": "80"}), contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err):
        try:
            code = redocheck.main(list(args))
        except SystemExit as e:  # argparse's --help and its refusals, as a process would exit
            code = 0 if e.code is None else e.code if isinstance(e.code, int) else 1
            if isinstance(e.code, str):
                print(e.code, file=sys.stderr)
    return subprocess.CompletedProcess([str(COMMAND_FILE), *args], code, out.getvalue(), err.getvalue())


# -- 1. a 512e disk outside ASM: both sources said, the verdict assumed --------------------------------

@pytest.mark.parametrize("blocksize, what", [(4096, "BLOCKSIZE 4096"), (None, "the default BLOCKSIZE 4096")])
def test_512e_outside_asm_says_both_sources_in_their_own_words(blocksize, what):
    v = rules.evaluate(512, 4096, blocksize, on_filesystem=True)
    assert v.allowed is True and v.blocksize == v.default_blocksize == 4096
    assert v.evidence == v.evidence_of("default") == "assumed"
    assert "emulated-default-conflict" in v.claims["allowed"] and "emulated-default-conflict" in v.claims["default"]
    said = [w for w in v.warnings if w.startswith(f"{what} on a 512e disk outside ASM: the sources conflict")]
    assert len(said) == 1, v.warnings
    for words in (GUIDE_WORDS, SEED_DEFAULT, SEED_FAILS, "Administrator's Guide"):
        assert words in said[0]
    # Seed 003 never names the Guide: the warning does not say it quotes the Guide.
    assert "seed 003 quotes" not in said[0] and "without naming their source" in said[0]


SEEDS = REPO.parent / "shared" / "seeds"


def test_every_quote_attributed_to_seed_003_is_verbatim_in_it():
    """What the 512e warning and the rules quote in single quotes is seed 003's text, word for word."""
    found = sorted(SEEDS.glob("003_*.txt")) if SEEDS.is_dir() else []
    if not found:
        pytest.skip(f"the seeds are not beside the repository ({SEEDS})")
    seed = found[0].read_text()
    said = rules.evaluate(512, 4096, 4096).warnings
    conflict = next(w for w in said if "the sources conflict" in w)
    quoted = re.compile(r"(?<=[\s(])'([^']+?)'(?=[\s);,.:]|$)")  # not an apostrophe (the Guide's answer)
    quotes = quoted.findall(conflict)
    quotes += quoted.findall(rules.RULES["emulated-default-conflict"].source.replace(rules.ADMIN_GUIDE, ""))
    assert len(quotes) >= 4, quotes
    for quote in quotes:
        assert quote in seed, quote


def test_with_the_override_both_sources_agree_on_4096_and_the_default_stays_in_conflict():
    v = rules.evaluate(512, 4096, 4096, override=True)
    assert v.allowed is True and v.evidence == "seed" and "override" in v.claims["allowed"]
    assert "emulated-default-conflict" not in v.claims["allowed"]
    assert not [w for w in v.warnings if "the sources conflict" in w], v.warnings
    assert v.evidence_of("default") == "assumed"


@pytest.mark.parametrize("host, media, asm", [(512, 512, None), (4096, 4096, None), (512, 16384, None),
                                              (512, 4096, 4096)])
def test_no_conflict_where_the_sources_do_not_meet(host, media, asm):
    """Not a 4 KiB physical sector under a smaller logical one outside ASM: nothing to conflict
    (inside ASM the group's own rule, asm-emulated-default, speaks for the default)."""
    v = rules.evaluate(host, media, asm_sector_size=asm, asm_logical_sector_size=512 if asm else None)
    assert "emulated-default-conflict" not in v.rests_on
    assert not [w for w in v.warnings if "the sources conflict" in w]


# -- 2. mount: ORA-15085 ----------------------------------------------------------------------------

def test_mount_of_a_group_whose_disk_now_reports_another_size_is_ora_15085_in_its_own_words():
    v = rules.evaluate(4096, 4096, 4096, asm_sector_size=512, operation="mount", file="+DATA_SSD/db/redo01.log",
                       disk="/dev/nvme0n1p1")
    assert v.allowed is False
    assert v.error == ('ORA-15085: disk "/dev/nvme0n1p1" has inconsistent sector size (expected 512, actual 4096) '
                       'with disk group "DATA_SSD"')
    assert v.claims["error"][0] == "asm-mount-sector-size" and rules.RULES["asm-mount-sector-size"].evidence == \
        "documented"


@pytest.mark.parametrize("operation", ["create", "add"])
def test_create_and_add_refuse_the_same_disk_in_the_engines_words(operation):
    v = rules.evaluate(4096, 4096, 4096, asm_sector_size=512, operation=operation)
    assert v.allowed is False and v.error.startswith("ASM refuses disk 'DISK' (logical sector 4096")
    assert "ORA-" not in v.error and "asm-mount-sector-size" not in v.rests_on


def test_the_command_mounts_a_group_after_asmlib_changed_the_size_it_shows():
    """ORACLEASM_USE_LOGICAL_BLOCK_SIZE made the group of 512 on a 512e disk; without it ASMLib shows 4096."""
    r = run_cli("--logical", "512", "--physical", "4096", "--asm-discovery", "asmlib", "--asm-version", "19",
                "--asm-sector-size", "512", "--operation", "mount", "--json")
    assert r.returncode == 1
    assert json.loads(r.stdout)["error"] == r.stderr.strip() == (
        'ORA-15085: disk "DISK" has inconsistent sector size (expected 512, actual 4096) with disk group "REDO"')
    same = run_cli("--logical", "512", "--physical", "4096", "--asm-discovery", "asmlib", "--asm-version", "19",
                   "--asmlib-logical-block-size", "--asm-sector-size", "512", "--operation", "mount")
    assert same.returncode == 0, same.stderr


# -- 3. the override in the ASM instance: ORA-15086 -------------------------------------------------

@pytest.mark.parametrize("instance", ["asm", "both"])
def test_the_override_in_the_asm_instance_without_sector_size_is_ora_15086(instance):
    group = asmrules.group_for(512, 4096, "udev", (19, 0))
    v = rules.evaluate(512, 4096, 512, override=True, override_in=instance, group=group)
    assert v.allowed is False and v.error == "ORA-15086: Diskgroup sector size must be specified."
    assert v.claims["error"] == ["asm-override-sector-size"]
    r = run_cli("--logical", "512", "--physical", "4096", "--asm-discovery", "udev", "--override", "--override-in",
                instance)
    assert r.returncode == 1 and r.stderr.strip() == "ORA-15086: Diskgroup sector size must be specified."


def test_the_override_in_the_asm_instance_does_not_reach_the_database():
    asm_only = rules.evaluate(512, 4096, 4096, override=True, override_in="asm", asm_sector_size=512)
    assert asm_only.allowed is False and asm_only.error.startswith("ORA-01378")
    assert "override-instance" in asm_only.claims["allowed"]
    assert any("set in the ASM instance" in w for w in asm_only.warnings), asm_only.warnings
    database = rules.evaluate(512, 4096, 4096, override=True, asm_sector_size=512)
    assert database.allowed is True and "override-instance" not in database.rests_on


def test_a_mount_with_the_asm_override_is_not_ora_15086():
    v = rules.evaluate(512, 4096, 512, override=True, override_in="asm", asm_sector_size=512, operation="mount")
    assert v.allowed is True and v.claims["warnings"][0] == "override-instance"


# -- 4. the I/O mode ----------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, default_rule", [
    ({}, "io-default-direct"),                            # a raw device
    ({"asm_sector_size": 4096}, "io-default-direct"),     # ASM
    ({"on_filesystem": True}, "io-default-filesystem"),   # FILESYSTEMIO_OPTIONS's Linux default, NONE
])
def test_without_an_io_mode_the_verdict_names_the_default_it_takes(kwargs, default_rule):
    v = rules.evaluate(4096, 4096, 512, **kwargs)
    assert v.allowed is False and default_rule in v.claims["allowed"]
    assert ("below-logical-sector" in v.rests_on) is (default_rule == "io-default-direct")
    assert ("buffered-io" in v.rests_on) is (default_rule == "io-default-filesystem")


@pytest.mark.parametrize("io_mode", rules.IO_MODES)
def test_an_io_mode_given_is_no_default(io_mode):
    v = rules.evaluate(4096, 4096, 512, io_mode=io_mode, on_filesystem=True)
    assert not {"io-default-direct", "io-default-filesystem"} & set(v.rests_on)
    assert v.evidence == ("physics" if io_mode == "direct" else "assumed")


def test_below_the_logical_sector_only_direct_io_is_physics():
    direct = rules.evaluate(4096, 4096, 512, io_mode="direct", override=True)
    assert direct.allowed is False and any("EINVAL" in w for w in direct.warnings)
    buffered = rules.evaluate(4096, 4096, 512, io_mode="buffered")
    assert buffered.allowed is False and buffered.error.startswith("ORA-01378")
    assert "below-logical-sector" not in buffered.rests_on and buffered.evidence == "assumed"
    lifted = rules.evaluate(4096, 4096, 512, io_mode="buffered", override=True)
    assert lifted.allowed is True and not [w for w in lifted.warnings if "does not help here" in w]
    assert any("page cache" in w and "not public" in w for w in lifted.warnings), lifted.warnings


def test_buffered_io_says_no_read_modify_write_on_512e():
    direct = rules.evaluate(512, 4096, 512, io_mode="direct")
    buffered = rules.evaluate(512, 4096, 512, io_mode="buffered")
    rmw = "BLOCKSIZE 512 < physical sector 4096: a redo write of fewer than 8 blocks"
    assert any(w.startswith(rmw) for w in direct.warnings)
    assert not any(w.startswith(rmw) for w in buffered.warnings)
    assert direct.allowed is buffered.allowed is True


# -- 5. BLOCKSIZE 1024 where it was the native log block: not known -----------------------------------

def test_1024_on_hp_ux_above_the_media_sector_is_neither_allowed_nor_refused():
    v = rules.evaluate(512, 512, 1024, platform="hp-ux")
    assert v.allowed is None and v.error is None and v.as_json()["allowed"] is None
    assert v.claims["allowed"] == ["blocksize-1024-native"]
    r = run_cli("--logical", "512", "--physical", "512", "--blocksize", "1024", "--platform", "hp-ux", "--json")
    assert r.returncode == 3 and json.loads(r.stdout)["allowed"] is None
    text = run_cli("--logical", "512", "--physical", "512", "--blocksize", "1024", "--platform", "hp-ux")
    assert text.stdout.startswith("BLOCKSIZE 1024: not known (default 512;")


def test_the_asm_table_says_not_known_too():
    r = run_cli("--logical", "512", "--physical", "512", "--asm-discovery", "udev", "--asm-version", "19",
                "--platform", "hp-ux", "--json")
    rows = {row["blocksize"]: row for row in json.loads(r.stdout)["redo"]}
    assert rows[1024]["allowed"] is None and rows[1024]["needs_override"] is False
    assert rows[4096]["allowed"] is False and rows[4096]["needs_override"] is True


# -- 6. evidence per claim, and the JSON callers read ---------------------------------------------------

# What callers read of a verdict's JSON (sectorlab/bench: report.py, run.py, metrics.py; redodisk; the
# guest scenarios): keys and their types as before issue 49; `claims` is new beside them.
READ_BY_CALLERS = {"allowed": (bool, type(None)), "error": (str, type(None)), "blocksize": int,
                   "default_blocksize": int, "warnings": list, "host_sector": int, "media_sector": int,
                   "evidence": str, "rests_on": list}


@pytest.mark.parametrize("kwargs", [{"blocksize": 4096}, {"blocksize": 512}, {},
                                    {"blocksize": 512, "asm_sector_size": 4096, "asm_logical_sector_size": 512},
                                    {"blocksize": 4096, "asm_sector_size": 512, "operation": "mount"}])
def test_the_json_keeps_every_key_callers_read(kwargs):
    out = rules.evaluate(512, 4096, **kwargs).as_json()
    for key, kind in READ_BY_CALLERS.items():
        assert isinstance(out[key], kind), (key, out[key])
    assert set(out) == set(READ_BY_CALLERS) | {"claims"}
    assert set(out["claims"]) <= set(rules.CLAIMS) and "allowed" in out["claims"]
    assert ("error" in out["claims"]) is (out["error"] is not None), out["claims"]
    for claim in out["claims"].values():
        assert claim["evidence"] == rules.weakest(claim["rests_on"])


def test_a_documented_verdict_is_not_dragged_down_by_how_its_sizes_were_read():
    """V$ASM_DISKGROUP: a 4096/512 group takes redo of 512 and of 4096; the group named without a
    discovery method (which sector ASM reads: assumed) is the sizes claim's."""
    for bs in (512, 4096):
        v = rules.evaluate(512, 4096, bs, asm_sector_size=4096, asm_logical_sector_size=512)
        assert (v.allowed, v.evidence, v.evidence_of("sizes")) == (True, "documented", "assumed"), v.claims
    seed_001 = rules.evaluate(512, 512, 4096)
    assert (seed_001.evidence_of("error"), seed_001.claims["error"]) == ("seed", ["above-media-sector"])


# -- 7. labels -------------------------------------------------------------------------------------------

def test_the_relabelled_rules():
    assert rules.RULES["blocksize-values"].evidence == "documented"
    assert "Administrator's Guide" in rules.RULES["blocksize-values"].source
    assert rules.RULES["asm-smallest-io"].evidence == "physics"
    assert rules.RULES["asmlib-smallest-io"].evidence == "documented"
    assert "driver's I/O unit" in rules.RULES["asmlib-smallest-io"].says


@pytest.mark.parametrize("discovery, smallest", [("asmlib", "asmlib-smallest-io"), ("udev", "asm-smallest-io"),
                                                 ("afd", "asm-smallest-io"), (None, "asm-smallest-io")])
def test_the_smallest_io_rule_follows_the_discovery_method(discovery, smallest):
    group = asmrules.group_for(512, 4096, discovery, (19, 0), sector_size=4096 if discovery is None else None)
    v = rules.evaluate(512, 4096, 4096, group=group)
    other = ({"asm-smallest-io", "asmlib-smallest-io"} - {smallest}).pop()
    assert smallest in v.claims["sizes"] and other not in v.rests_on, v.claims


@pytest.mark.parametrize("version, seen_rule", [(None, "asm-logical-sector-size"), ("19", "asm-logical-sector-size"),
                                                ("12.2", "asm-logical-sector-size"), ("12.1", "asm-one-sector-size"),
                                                ("11.2", "asm-one-sector-size")])
def test_a_group_without_logical_sector_size_is_judged_by_its_versions_rule(version, seen_rule):
    group = asmrules.group_for(512, 4096, None, asmrules.parse_version(version), sector_size=4096)
    v = rules.evaluate(512, 4096, 4096, group=group)
    other = {"asm-logical-sector-size", "asm-one-sector-size"} - {seen_rule}
    assert seen_rule in v.claims["allowed"] and not other & set(v.rests_on), v.claims
    assert ("asm-logical-default" in v.claims["sizes"]) is (seen_rule == "asm-logical-sector-size")


@pytest.mark.parametrize("compatible, refused", [
    (("11.1", None), "COMPATIBLE.ASM 11.1"), ((None, "10.1"), "COMPATIBLE.RDBMS 10.1"),
    (("11.2", "11.2"), None), (("19.0.0.0.0", "12.1.0.2"), None), ((None, None), None),
])
def test_compatible_attributes_are_checked_for_a_4096_group(compatible, refused):
    v = rules.evaluate(4096, 4096, 4096, asm_sector_size=4096, compatible_asm=compatible[0],
                       compatible_rdbms=compatible[1])
    if refused:
        assert v.allowed is False and v.error.startswith(f"ASM refuses SECTOR_SIZE 4096 with {refused}: ")
    else:
        assert v.allowed is True
    assert ("asm-compatible" in v.rests_on) is (compatible != (None, None))
    small = rules.evaluate(512, 512, 512, asm_sector_size=512, compatible_asm="10.1", compatible_rdbms="10.1")
    assert small.allowed is True and "asm-compatible" not in small.rests_on


# -- bad input: one line, the value, what was expected ----------------------------------------------------

@pytest.mark.parametrize("kwargs, fragment", [
    ({"io_mode": "fast"}, "I/O mode 'fast' is not known: expected direct"),
    ({"operation": "remount", "asm_sector_size": 512}, "operation 'remount' is not known: expected create"),
    ({"override": True, "override_in": "cluster"}, "instance 'cluster' is not known: expected database, asm or both"),
    ({"operation": "mount"}, "operation mount is an ASM disk group's"),
    ({"override": True, "override_in": "asm"}, "in the asm instance needs an ASM disk group"),
    ({"asm_sector_size": 4096, "io_mode": "buffered"}, "ASM does direct I/O to its disks"),
    ({"asm_sector_size": 4096, "on_filesystem": True}, "is not a file on a file system"),
    ({"compatible_asm": "11.2"}, "are a disk group's attributes"),
    ({"asm_sector_size": 4096, "compatible_asm": "eleven"}, "COMPATIBLE.ASM 'eleven' is not a version"),
    ({"asm_sector_size": 4096, "compatible_rdbms": "9.2"}, "COMPATIBLE.RDBMS 9.2 is outside the model"),
])
def test_bad_input(kwargs, fragment):
    with pytest.raises(rules.RulesUsageError, match=fragment.replace("(", r"\(").replace("?", r"\?")):
        rules.evaluate(512, 4096, 512, **kwargs)


def test_a_mount_of_a_group_with_no_recorded_sector_size_is_bad_input():
    group = asmrules.group_for(512, 4096, "udev", (19, 0))
    for operation in ("mount", "add"):
        with pytest.raises(rules.RulesUsageError, match=f"operation {operation} needs the disk group's recorded "
                                                        f"SECTOR_SIZE"):
            rules.evaluate(512, 4096, 512, group=group, operation=operation)


@pytest.mark.parametrize("args, fragment", [
    (["--io-mode", "fast"], "I/O mode 'fast' is not known"),
    (["--operation", "remount", "--asm-sector-size", "512"], "operation 'remount' is not known"),
    (["--override", "--override-in", "cluster"], "instance 'cluster' is not known"),
    (["--operation", "mount"], "give the group's recorded SECTOR_SIZE (--asm-sector-size)"),
    (["--asm-discovery", "udev", "--operation", "mount"], "needs the disk group's recorded SECTOR_SIZE"),
    (["--override", "--override-in", "asm"], "needs an ASM disk group"),
    (["--compatible-rdbms", "11.2"], "are a disk group's attributes"),
    (["--asm-sector-size", "4096", "--compatible-asm", "11"], "is not a version such as 11.1"),
    (["--asm-sector-size", "4096", "--io-mode", "buffered"], "ASM does direct I/O"),
    (["--asm-sector-size", "4096", "--on-filesystem"], "is not a file on a file system"),
    (["--members-sector", "3000"], "other members' physical sector size 3000 is not a power of two"),
    (["--members-sector", "4k"], "'4k' is not a whole number of bytes"),
    (["--asm-discovery", "udev", "--members-sector", "512"], "--members-sector judges one log member"),
])
def test_cli_bad_input_is_one_line_and_exit_2(args, fragment):
    r = run_cli("--logical", "512", "--physical", "4096", *args)
    err = r.stderr.strip()
    assert r.returncode == 2 and err.startswith("redo-check: ") and fragment in err and "\n" not in err, r


def test_cli_a_path_with_asm_options_names_a_disk_not_a_file(tmp_path):
    """A PATH on a file system is a file there, buffered by default; with ASM options it only names
    the disk whose sizes to read, and the log is in ASM (direct I/O)."""
    alone = run_cli(str(tmp_path), "--blocksize", "4096", "--json")
    if alone.returncode == 2:  # overlay, tmpfs: no block device under it (test_rules.py covers that)
        pytest.skip(f"{tmp_path} is on a filesystem with no block device under it: {alone.stderr.strip()}")
    rests_on = {r["rule"] for r in json.loads(alone.stdout)["rests_on"]}
    assert "filesystem-device" in rests_on and "io-default-direct" not in rests_on
    in_asm = run_cli(str(tmp_path), "--asm-discovery", "udev", "--json")
    assert in_asm.returncode in (0, 1) and "file system" not in in_asm.stderr, in_asm


def test_cli_on_filesystem_needs_sizes_given():
    r = run_cli("--on-filesystem")
    err = r.stderr.strip()
    assert r.returncode == 2 and "\n" not in err and "give --logical and --physical too, or a PATH" in err, r


def test_cli_help_names_the_new_inputs():
    out = run_cli("--help").stdout
    for option in ("--io-mode", "--on-filesystem", "--override-in", "--operation", "--compatible-asm",
                   "--compatible-rdbms"):
        assert option in out, option
    assert "FILESYSTEMIO_OPTIONS defaults to NONE on Linux" in " ".join(out.split())
    assert "exit status: 0 allowed" in " ".join(out.split()) and "3 not known" in " ".join(out.split())


# -- after the review of issue 49's change ---------------------------------------------------------------

def test_a_12_2_group_without_logical_sector_size_refuses_512_on_the_models_default():
    """Blocker 2: LOGICAL_SECTOR_SIZE not named is the model's default (asm-logical-default, assumed);
    the refusal of 512 rests on it, in the allowed claim and the error's; 4096 does not."""
    v = rules.evaluate(512, 4096, 512, asm_sector_size=4096)
    assert v.allowed is False and v.evidence == "assumed", v.claims
    assert "asm-logical-default" in v.claims["allowed"] and "asm-logical-default" in v.claims["error"]
    named = rules.evaluate(512, 4096, 512, asm_sector_size=4096, asm_logical_sector_size=4096)
    assert named.allowed is False and "asm-logical-default" not in named.rests_on
    full = rules.evaluate(512, 4096, 4096, asm_sector_size=4096)
    assert (full.allowed, full.evidence) == (True, "documented") and "asm-logical-default" not in full.claims["allowed"]
    old = rules.evaluate(512, 4096, 512, group=asmrules.group_for(512, 4096, None, (12, 1), sector_size=4096))
    assert "asm-logical-default" not in old.rests_on


@pytest.mark.parametrize("discovery", [None, "udev", "afd"])
def test_ora_15085_for_a_disk_neither_of_whose_sectors_is_the_recorded_one_rests_on_the_mount_rule(discovery):
    """Finding 3: a 4Kn disk in a group of 512 fails at mount whichever sector ASM reads."""
    group = asmrules.group_for(4096, 4096, discovery, (19, 0), sector_size=512)
    v = rules.evaluate(4096, 4096, 4096, group=group, operation="mount")
    assert v.error.startswith("ORA-15085") and v.claims["allowed"] == v.claims["error"] == ["asm-mount-sector-size"]
    assert v.evidence == "documented"


def test_ora_15085_through_asmlib_rests_on_what_asmlib_shows():
    group = asmrules.group_for(512, 4096, "asmlib", (19, 0), sector_size=512)
    v = rules.evaluate(512, 4096, 512, group=group, operation="mount")
    assert v.claims["error"] == ["asm-mount-sector-size", "asmlib-reads-one-size"] and v.evidence == "documented"


def test_a_membership_refusal_names_the_discovery_rule_only_where_the_disks_sectors_differ():
    same = rules.evaluate(4096, 4096, 4096, asm_sector_size=512)
    assert same.allowed is False and "asm-membership-any-discovery" not in same.rests_on
    e512 = rules.evaluate(512, 4096, 4096, group=asmrules.group_for(512, 4096, None, (19, 0), sector_size=4096,
                                                                    logical_sector_size=4096))
    assert e512.allowed is True and "asm-membership-any-discovery" in e512.claims["sizes"]


@pytest.mark.parametrize("kwargs, checked", [
    ({"asm_sector_size": 4096}, True),                                     # CREATE DISKGROUP naming 4096
    ({"asm_sector_size": 4096, "operation": "add"}, False),
    ({"asm_sector_size": 4096, "operation": "mount"}, False),
    ({"group": "discovered"}, False),                                      # SECTOR_SIZE taken from the disk
])
def test_compatible_is_checked_only_at_create_naming_the_sector_size(kwargs, checked):
    """Finding 4: the 12.1 guide's sentence is about setting SECTOR_SIZE at CREATE DISKGROUP to other
    than the default, which is platform dependent: the check rests on the model's 512 (assumed)."""
    compatible = {"compatible_asm": "11.1", "compatible_rdbms": "11.1"}
    if kwargs.get("group"):
        kwargs = {"group": asmrules.group_for(4096, 4096, "udev", (19, 0), compatible=("11.1", "11.1"))}
        compatible = {}
    v = rules.evaluate(4096, 4096, 4096, **kwargs, **compatible)
    if checked:
        assert v.allowed is False and v.evidence == "assumed"
        assert v.claims["allowed"] == ["asm-compatible", "asm-sector-size-default"]
        assert rules.RULES["asm-sector-size-default"].evidence == "assumed"
    else:
        assert v.allowed is True and "asm-sector-size-default" not in v.rests_on
        said = [w for w in v.warnings if w.startswith("COMPATIBLE.ASM and COMPATIBLE.RDBMS are not checked")]
        assert len(said) == 1 and v.claims["warnings"] == ["asm-compatible"], v.warnings


@pytest.mark.parametrize("compatible", [("11.1", None), ((11, 1), None), [(11, 1), (19, 0)]])
def test_compatible_is_text_or_a_tuple_everywhere(compatible):
    """The Python API takes COMPATIBLE.ASM/RDBMS in either form, in rules and in asmrules alike."""
    group = asmrules.group_for(4096, 4096, None, (19, 0), sector_size=4096, compatible=compatible)
    assert group.compatible[0] == (11, 1)
    assert rules.evaluate(4096, 4096, 4096, group=group).allowed is False
    v = rules.evaluate(4096, 4096, 4096, asm_sector_size=4096, compatible_asm=compatible[0],
                       compatible_rdbms=compatible[1])
    assert v.allowed is False and v.error.startswith("ASM refuses SECTOR_SIZE 4096 with COMPATIBLE.ASM 11.1")
    direct = asmrules.DiskGroup(4096, compatible=compatible)
    assert direct.compatible[0] == (11, 1)


@pytest.mark.parametrize("bad", [11.1, "eleven", (11,), (11, "1"), ("11", "1")])
def test_a_compatible_of_another_form_fails_with_a_clear_error(bad):
    with pytest.raises(asmrules.AsmUsageError, match="COMPATIBLE.ASM .* is not a version such as"):
        asmrules.group_for(4096, 4096, None, (19, 0), sector_size=4096, compatible=(bad, None))
    with pytest.raises(rules.RulesUsageError, match="COMPATIBLE.ASM .* is not a version such as"):
        rules.evaluate(4096, 4096, 4096, asm_sector_size=4096, compatible_asm=bad)


def test_the_compatible_range_says_what_it_accepts():
    assert asmrules.parse_compatible("26.3", "COMPATIBLE.ASM") == (26, 3)
    with pytest.raises(asmrules.AsmUsageError, match=r"expected 10\.1 to 26\.x$"):
        asmrules.parse_compatible("27.0", "COMPATIBLE.ASM")


@pytest.mark.parametrize("platform", ["linux", "aix", "solaris", "windows", "hp-ux", "tru64"])
def test_the_io_mode_default_for_a_file_follows_the_platform(platform):
    """Finding 5: Linux's FILESYSTEMIO_OPTIONS default (NONE, cited) is not every platform's."""
    v = rules.evaluate(4096, 4096, 512, override=True, on_filesystem=True, platform=platform)
    if platform == "linux":
        assert v.allowed is True and "io-default-filesystem" in v.claims["allowed"]
        assert "io-default-unknown" not in v.rests_on
    else:
        assert v.allowed is None and v.error is None and "io-default-unknown" in v.claims["allowed"]
        assert "io-default-filesystem" not in v.rests_on
        said = [w for w in v.warnings if w.startswith(f"not known: how a file on a file system on {platform}")]
        assert len(said) == 1 and "--io-mode" in said[0] and "EINVAL" in said[0], v.warnings
    refused = rules.evaluate(4096, 4096, 512, on_filesystem=True, platform=platform)
    assert refused.allowed is False and refused.error.startswith("ORA-01378")
    emulated = rules.evaluate(512, 4096, 512, on_filesystem=True, platform=platform)
    assert emulated.allowed is True
    assert any(f"on {platform} is written is not known" in w for w in emulated.warnings) is (platform != "linux")


def test_the_command_says_not_known_off_linux_and_exits_3():
    r = run_cli("--logical", "4096", "--physical", "4096", "--on-filesystem", "--blocksize", "512", "--override",
                "--platform", "aix")
    assert r.returncode == 3 and r.stdout.startswith("BLOCKSIZE 512: not known"), r
    assert "not known: how a file on a file system on aix is written" in r.stderr


def test_buffered_io_says_plainly_what_lets_512_through_and_what_direct_io_would_answer():
    """Finding 6: a file on a Linux file system is written buffered by default (the sources the
    engine cites); the verdict says that is what lets it through, and what --io-mode direct does."""
    v = rules.evaluate(4096, 4096, 512, override=True, on_filesystem=True)
    assert v.allowed is True
    said = [w for w in v.warnings if w.startswith("BLOCKSIZE 512 < logical sector 4096 is allowed here only because "
                                                  "the log is written buffered")]
    assert len(said) == 1, v.warnings
    for words in ("page cache", "the Linux default", "SETALL or DIRECTIO", "EINVAL", "--io-mode direct"):
        assert words in said[0], words
    assert rules.evaluate(4096, 4096, 512, override=True, on_filesystem=True, io_mode="direct").allowed is False
    emulated = rules.evaluate(512, 4096, 512, on_filesystem=True)
    page = [w for w in emulated.warnings if w.startswith("BLOCKSIZE 512 < physical sector 4096, written buffered")]
    assert len(page) == 1 and "(--io-mode direct)" in page[0], emulated.warnings
    # Issue 65, point 6: both sides said, the assumption named: the page cache writes whole pages for
    # each 512-byte write (the read-modify-write moves into the host), direct I/O's is the disk's.
    for words in ("assumed", "the read-modify-write moves, it does not go away", "sends the whole page",
                  "reads that page first", "read-modify-written by the disk", "Administrator's Guide"):
        assert words in page[0], (words, page[0])
    # The override rule is about a BLOCKSIZE above the disk's sector size: not cited below the host sector.
    assert "override" not in v.rests_on and "buffered-io" in v.claims["allowed"]


def test_the_override_rule_says_what_it_is_cited_for():
    v = rules.evaluate(512, 4096, 4096, override=True)
    assert "override" in v.claims["allowed"] and "512e" in rules.RULES["override"].says
    assert "seed 003" in rules.RULES["override"].source or "003" in rules.RULES["override"].source


def test_no_error_claim_unless_refused():
    assert "error" not in rules.evaluate(512, 512, 512).claims
    assert "error" not in rules.evaluate(512, 512, 1024, platform="hp-ux").claims
    assert rules.evaluate(512, 512, 4096).claims["error"] == ["above-media-sector"]


@pytest.mark.parametrize("args, fragment", [
    (["--logical", "512", "--physical", "512", "--override-in", "asm"], "add --override"),
    (["--logical", "512", "--physical", "512", "--asm-sector-size", "512", "--override-in", "both"],
     "add --override"),
    (["--logical", "512", "--physical", "512", "--operation", "add"], "(ALTER DISKGROUP ... ADD DISK)"),
    (["--logical", "512", "--physical", "512", "--operation", "mount"], "(ALTER DISKGROUP ... MOUNT)"),
])
def test_cli_inputs_that_were_accepted_silently_are_one_line_with_a_way_forward(args, fragment):
    """Finding 7 and the nits: --override-in without --override; the statement an operation is."""
    r = run_cli(*args)
    err = r.stderr.strip()
    assert r.returncode == 2 and fragment in err and "\n" not in err, r


def test_the_api_refuses_override_in_without_the_override():
    with pytest.raises(rules.RulesUsageError, match="add --override"):
        rules.evaluate(512, 4096, 512, asm_sector_size=512, override_in="asm")


def _fake_block_device(monkeypatch, logical, physical):
    from sectorlab.inguest import redocheck
    real = redocheck._stat

    def fake(path):
        if path != "/dev/fake":
            return real(path)
        return os.stat_result((stat.S_IFBLK | 0o660, 0, 0, 1, 0, 0, 0, 0, 0, 0))
    monkeypatch.setattr(redocheck, "_stat", fake)
    monkeypatch.setattr(redocheck, "device_sectors", lambda path: (logical, physical))
    monkeypatch.setattr(redocheck, "device_min_io", lambda path: None)
    return redocheck


def test_cli_buffered_io_on_a_raw_device_is_bad_input(monkeypatch, capsys):
    """Finding 7: FILESYSTEMIO_OPTIONS is for file system files; a raw DEVICE is written direct."""
    redocheck = _fake_block_device(monkeypatch, 4096, 4096)
    assert redocheck.main(["/dev/fake", "--blocksize", "512", "--io-mode", "buffered"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--io-mode buffered is a file system's" in err and "give a PATH on a file system on it" in err
    assert "\n" not in err
    assert redocheck.main(["/dev/fake", "--blocksize", "512"]) == 1  # direct: refused
    assert redocheck.main(["/dev/fake", "--on-filesystem"]) == 2
    assert "give a PATH on that file system instead" in capsys.readouterr().err


def test_cli_on_filesystem_with_from_host_is_a_file_on_that_disk(capsys):
    """Finding 7: --on-filesystem with --from-host used to be refused with no way forward."""
    from sectorlab import cli
    collector = REPO / "labtests" / "unit" / "data" / "from-host" / "collector-db-server.json"
    assert cli.main(["redo-check", "--from-host", str(collector), "sdb", "--on-filesystem", "--blocksize", "512",
                     "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["host_sector"], out["media_sector"]) == (512, 4096)
    assert "io-default-filesystem" in {r["rule"] for r in out["rests_on"]}
    assert any("written buffered" in w for w in out["warnings"])


def test_cli_help_says_what_file_names():
    out = " ".join(run_cli("--help").stdout.split())
    assert "file name for messages" not in out
    assert "names the disk group, as ORA-15085 does" in out


def test_the_command_reports_an_asm_refusal_in_one_line_without_admitting_twice(monkeypatch, capsys):
    """The nits: admit runs once per verdict (inside evaluate), the command reads its refusal."""
    from sectorlab.inguest import redocheck
    admits, verdicts = [], []
    admit, evaluate = asmrules.admit, rules.evaluate
    monkeypatch.setattr(asmrules, "admit", lambda *a, **k: admits.append(a) or admit(*a, **k))
    monkeypatch.setattr(rules, "evaluate", lambda *a, **k: verdicts.append(a) or evaluate(*a, **k))
    assert redocheck.main(["--logical", "512", "--physical", "4096", "--asm-discovery", "udev", "--blocksize",
                           "512"]) == 0
    assert len(admits) == len(verdicts) > 1  # the verdict asked, and the table's
    capsys.readouterr()
    admits.clear()
    assert redocheck.main(["--logical", "4096", "--physical", "4096", "--asm-discovery", "udev", "--asm-sector-size",
                           "512", "--blocksize", "4096"]) == 1
    assert len(admits) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("ASM refuses disk 'DISK'") and "\n" not in err


def test_an_operation_is_checked_once_per_verdict(monkeypatch):
    calls = []
    real = asmrules.check_operation
    monkeypatch.setattr(asmrules, "check_operation", lambda op: calls.append(op) or real(op))
    rules.evaluate(512, 4096, 512, asm_sector_size=512, operation="mount")
    assert calls == ["mount"]
    assert not hasattr(rules, "OPERATIONS")


def test_the_bench_says_not_known_with_the_warnings_reason():
    from sectorlab.analysis.metrics import verdict_text
    v = rules.evaluate(512, 512, 1024, platform="hp-ux").as_json()
    text = verdict_text(v)
    assert text.startswith("not known: BLOCKSIZE 1024 > media sector size 512 on hp-ux") and "refused" not in \
        text.split(":")[0]
    assert verdict_text(v, short=True) == "not known"
    assert verdict_text({"allowed": None, "warnings": []}) == "not known"
    assert verdict_text(rules.evaluate(512, 512, 4096).as_json(), short=True) == "refused (ORA-01378)"


# -- issue 65, point 9: what the exit status says, and the guest's own --help -------------------------

def test_the_guests_help_names_no_option_it_does_not_take_and_says_what_each_status_means():
    """The guest's redo-check (the file run alone) takes no --from-host and its --help names none; the
    status 3 is "neither allowed nor refused", and an answer that keeps one of two conflicting
    sources (512e at 4096 outside ASM) is 0 with its warning and its evidence in --json."""
    helped = subprocess.run([sys.executable, str(COMMAND_FILE), "--help"], capture_output=True, text=True)
    assert helped.returncode == 0 and "--from-host" not in helped.stdout, helped.stdout
    said = " ".join(helped.stdout.split())
    assert "3 not known: the engine gives neither allowed nor refused" in said, said
    assert "keeps one of two sources that conflict, is still 0 or 1" in said, said
    assert "--from-host" in " ".join(subprocess.run([sys.executable, "-m", "sectorlab", "redo-check", "--help"],
                                                    capture_output=True, text=True, cwd=REPO).stdout.split())
    conflict = run_cli("--logical", "512", "--physical", "4096", "--blocksize", "4096", "--on-filesystem", "--json")
    doc = json.loads(conflict.stdout)
    assert conflict.returncode == 0 and doc["allowed"] is True and doc["evidence"] == "assumed", conflict
    assert any("the sources conflict" in w for w in doc["warnings"]), doc["warnings"]
    unknown = run_cli("--logical", "512", "--physical", "512", "--blocksize", "1024", "--platform", "hp-ux",
                      "--json")
    assert unknown.returncode == 3 and json.loads(unknown.stdout)["allowed"] is None, unknown


# -- issue 65, point 8: an ASM refusal gives its evidence, as a verdict does --------------------------

@pytest.mark.parametrize("args, error, evidence, rule", [
    (("--logical", "4096", "--physical", "16384", "--asm-discovery", "udev", "--asm-version", "19"), "ORA-59012",
     "assumed", "asm-invalid-sector"),
    (("--logical", "512", "--physical", "4096", "--asm-discovery", "udev", "--override", "--override-in", "asm"),
     "ORA-15086", "documented", "asm-override-sector-size"),
])
def test_an_asm_refusal_says_its_evidence_and_what_it_rests_on(args, error, evidence, rule):
    as_json = run_cli(*args, "--json")
    doc = json.loads(as_json.stdout)
    assert as_json.returncode == 1 and doc["allowed"] is False and doc["error"].startswith(error), as_json
    assert doc["evidence"] == evidence and rule in [r["rule"] for r in doc["rests_on"]], doc
    assert all(r["source"] == rules.RULES[r["rule"]].source for r in doc["rests_on"]), doc
    as_text = run_cli(*args)
    assert as_text.returncode == 1 and as_text.stderr.strip().startswith(error), as_text
    assert as_text.stdout.startswith(f"refused (evidence: {evidence}; rests on ") and rule in as_text.stdout, as_text


# -- issue 65, point 5: a row of the ASM report rests on what the discovery method shows ASM ----------

@pytest.mark.parametrize("discovery, version, rule, rows", [
    ("afd", "19", "afd-reads-kernel-sizes", {512: "assumed", 1024: "assumed", 4096: "assumed"}),
    ("udev", "19", "udev-reads-kernel-sizes", {512: "assumed", 1024: "assumed", 4096: "assumed"}),
    # ASMLib before 12.2: the one size it shows is documented (its driver's source), so the rows keep theirs
    ("asmlib", "11.2", "asmlib-reads-one-size", {512: "seed", 1024: "assumed", 4096: "seed"}),
])
def test_the_asm_reports_rows_carry_the_discovery_methods_evidence(discovery, version, rule, rows):
    r = run_cli("--logical", "512", "--physical", "4096", "--asm-discovery", discovery, "--asm-version", version,
                "--json")
    doc = json.loads(r.stdout)
    assert rule in [x["rule"] for x in doc["asm"]["rests_on"]], doc["asm"]
    assert {row["blocksize"]: row["evidence"] for row in doc["redo"]} == rows, doc["redo"]
    weakest_of_group = doc["asm"]["evidence"]
    for row in doc["redo"] + doc["files"]:
        assert rules.EVIDENCE.index(row["evidence"]) >= rules.EVIDENCE.index(weakest_of_group), row
