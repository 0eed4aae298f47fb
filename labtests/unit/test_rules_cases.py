"""The rules engine case by case, as a DBA would look them up: versions x sector sizes x discovery
method x override x BLOCKSIZE. Each case names its source, and the verdict must cite it: a rule
the engine applies without its source, or a case whose source the engine no longer rests on,
fails. The expected answers are written from the sources (docs/redo-blocksize.md), not read
back from the engine."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from sectorlab.inguest import asmrules, rules

V_ASM = "V$ASM_DISKGROUP"
GUIDE = "Administrator's Guide 12.1"
ORACLEASM = "asm_block_size()"
IXORA = "Ixora"
NOT_PUBLIC = "not public"


@dataclass
class Case:
    name: str
    disk: tuple[int, int]
    bs: int | None  # None: the default BLOCKSIZE
    allowed: bool | str  # or the start of the error the disk group itself meets
    source: str  # must appear among the sources the verdict cites
    evidence: str | None = None  # the verdict's evidence, where the case is about it
    discovery: str | None = None
    version: str | None = None
    asmlib_logical: bool = False
    sector: int | None = None
    logical_sector: int | None = None
    override: bool = False
    platform: str = "linux"
    group: tuple[int, int | None] | None = None  # (SECTOR_SIZE, LOGICAL_SECTOR_SIZE) expected
    chosen: int | None = None  # the BLOCKSIZE the default comes to


N512, E512, K4, P16 = (512, 512), (512, 4096), (4096, 4096), (4096, 16384)
CASES = [
    # On the disk itself, no ASM.
    Case("512n-512", N512, 512, True, "seed 003", "seed"),
    Case("512n-4096", N512, 4096, False, "seeds 001 and 002", "seed"),
    Case("512n-4096-override", N512, 4096, True, "seeds 000, 002 and 003", override=True),
    Case("512n-1024", N512, 1024, False, "seeds 001 and 002"),
    Case("512n-1024-override", N512, 1024, True, IXORA, "assumed", override=True),
    Case("512n-1024-hp-ux", N512, 1024, True, IXORA, "assumed", override=True, platform="hp-ux"),
    Case("512e-default", E512, None, True, "seeds 000 and 003", "seed", chosen=4096),
    Case("512e-512", E512, 512, True, "seed 003", "seed"),
    Case("512e-1024", E512, 1024, True, IXORA, "assumed"),
    # The refusal is physics; that Oracle's error for it is ORA-01378 is not public.
    Case("4kn-512", K4, 512, False, "O_DIRECT", "assumed"),
    Case("4kn-512-override", K4, 512, False, "seeds 001, 002", "assumed", override=True),
    Case("4kn-default", K4, None, True, "seeds 000 and 003", "seed", chosen=4096),
    Case("16k-default", P16, None, True, "minimum_io_size", "assumed", chosen=4096),
    # A disk group named by its sizes (any discovery method).
    Case("asm-512n-in-4096", N512, 4096, "ASM refuses", GUIDE, sector=4096),
    Case("asm-512n-in-4096/512", N512, 512, "ASM refuses", GUIDE, sector=4096, logical_sector=512),
    Case("asm-4kn-in-512", K4, 4096, "ASM refuses", GUIDE, sector=512),
    Case("asm-4kn-in-4096/512", K4, 4096, "ASM refuses", GUIDE, sector=4096, logical_sector=512),
    Case("asm-512e-in-4096-4096", E512, 4096, True, "seed 003", sector=4096),
    Case("asm-512e-in-4096-4096-12.1", E512, 4096, True, GUIDE, "assumed", sector=4096, version="12.1"),
    Case("asm-16k-in-4096", P16, 4096, "ORA-59012", "ORA-59012", sector=4096),
    Case("asm-512e-in-4096-512", E512, 512, False, "ORA-15347", "assumed", sector=4096),
    Case("asm-512e-in-4096/512-512", E512, 512, True, V_ASM, sector=4096, logical_sector=512),
    Case("asm-512e-in-4096/512-4096", E512, 4096, True, V_ASM, sector=4096, logical_sector=512),
    Case("asm-512e-in-4096/512-default", E512, None, True, "compatible.rdbms", "assumed", sector=4096,
         logical_sector=512, chosen=4096),
    Case("asm-512e-in-512-4096", E512, 4096, False, "seed 003", sector=512),
    Case("asm-512e-in-512-4096-override", E512, 4096, True, "seeds 000, 002 and 003", sector=512, override=True),
    Case("asm-logical-above-sector", E512, 512, "ORA-15375", "ORA-15375", sector=512, logical_sector=4096),
    # The group CREATE DISKGROUP makes through each discovery method.
    Case("asmlib-512e-12.1", E512, 512, False, ORACLEASM, discovery="asmlib", version="12.1", group=(4096, None)),
    Case("asmlib-512e-19-4096", E512, 4096, True, ORACLEASM, "assumed", discovery="asmlib", version="19",
         group=(4096, 4096)),
    Case("asmlib-512e-12.1-4096", E512, 4096, True, ORACLEASM, "seed", discovery="asmlib", version="12.1",
         group=(4096, None)),
    Case("asmlib-logical-512e-12.1", E512, 512, True, "seed 003", discovery="asmlib", version="12.1",
         asmlib_logical=True, group=(512, None)),
    Case("asmlib-logical-512e-19-4096", E512, 4096, False, ORACLEASM, discovery="asmlib", version="19",
         asmlib_logical=True, group=(512, 512)),
    Case("asmlib-logical-512e-19-4096-override", E512, 4096, True, "seeds 000, 002 and 003", discovery="asmlib",
         version="19", asmlib_logical=True, override=True, group=(512, 512)),
    Case("asmlib-512n", N512, 512, True, ORACLEASM, discovery="asmlib", version="12.1", group=(512, None)),
    Case("asmlib-4kn-512", K4, 512, False, "O_DIRECT", discovery="asmlib", version="12.1", group=(4096, None)),
    Case("asmlib-16k", P16, 4096, "ORA-59012", "ORA-59012", discovery="asmlib"),
    Case("asmlib-logical-16k", P16, 4096, True, "minimum_io_size", "assumed", discovery="asmlib", version="12.1",
         asmlib_logical=True, group=(4096, None)),
    Case("udev-512e-12.1-512", E512, 512, True, "NetApp", "assumed", discovery="udev", version="12.1",
         group=(512, None)),
    Case("udev-512e-12.1-4096", E512, 4096, False, "NetApp", discovery="udev", version="12.1", group=(512, None)),
    Case("udev-512e-19-default", E512, None, True, "NetApp", discovery="udev", version="19", group=(512, 512),
         chosen=512),
    Case("udev-512e-19-named-4096/512", E512, 512, True, V_ASM, "assumed", discovery="udev", version="19",
         sector=4096, logical_sector=512, group=(4096, 512)),
    Case("udev-512e-19-named-4096-512", E512, 512, False, "ORA-15347", discovery="udev", version="19", sector=4096,
         group=(4096, None)),
    Case("udev-4kn", K4, None, True, "NetApp", discovery="udev", version="19", group=(4096, 4096), chosen=4096),
    Case("udev-16k", P16, 4096, "ORA-59012", "ORA-59012", discovery="udev", version="19"),
    Case("afd-512e-19", E512, None, True, NOT_PUBLIC, "assumed", discovery="afd", version="19", group=(512, 512),
         chosen=512),
    Case("afd-4kn-12.1", K4, None, True, NOT_PUBLIC, discovery="afd", version="12.1", group=(4096, None),
         chosen=4096),
    Case("asmlib-512e-named-512", E512, 512, "ASM refuses", GUIDE, discovery="asmlib", version="12.1", sector=512),
    Case("asmlib-logical-512e-named-4096", E512, 4096, "ASM refuses", GUIDE, discovery="asmlib", version="12.1",
         asmlib_logical=True, sector=4096),
    Case("asmlib-512e-named-4096/512", E512, 512, "ASM refuses", GUIDE, discovery="asmlib", version="19",
         sector=4096, logical_sector=512),
    Case("udev-512n-named-4096/512", N512, 512, "ASM refuses", GUIDE, discovery="udev", version="19", sector=4096,
         logical_sector=512),
]


def _group(c: Case) -> asmrules.DiskGroup | None:
    if not (c.discovery or c.sector):
        return None
    return asmrules.group_for(*c.disk, c.discovery, asmrules.parse_version(c.version), c.asmlib_logical, c.sector,
                              c.logical_sector, disk="/dev/sdb")


def _sources(rule_ids: list[str]) -> str:
    return " | ".join(r["source"] for r in rules.cited(rule_ids))


@pytest.mark.parametrize("c", CASES, ids=[c.name for c in CASES])
def test_case(c: Case):
    try:
        group = _group(c)
    except asmrules.AsmError as e:  # the disk cannot be in such a group at all (ORA-59012, ORA-15375)
        assert isinstance(c.allowed, str) and str(e).startswith(c.allowed), e
        assert c.source in _sources(e.rules), e.rules
        return
    if group is not None and c.group is not None:
        assert (group.sector_size, group.logical_sector_size) == c.group, c.source
    v = rules.evaluate(*c.disk, c.bs, c.override, file="+REDO", disk="/dev/sdb", platform=c.platform, group=group)
    if isinstance(c.allowed, str):
        assert not v.allowed and v.error.startswith(c.allowed), v.error
    else:
        assert v.allowed is c.allowed, (c.source, v.error)
    assert c.source in _sources(v.rests_on), f"{c.name}: the verdict does not cite {c.source!r}: {v.rests_on}"
    if c.evidence:
        assert v.evidence == c.evidence, v.rests_on
    if c.chosen:
        assert v.blocksize == c.chosen
    assert "ORA-15038" not in (v.error or ""), "ORA-15038 is a mount error with another text"


# Rules no verdict of the model rests on: the command adds them (test_rules.py tests it there).
COMMAND_RULES = {"filesystem-device": "test_a_path_on_a_filesystem_gets_the_sizes_of_the_block_device_under_it"}


def test_there_are_at_least_40_cases_and_every_rule_is_in_one():
    assert len(CASES) >= 40
    used = set()
    for c in CASES:
        try:
            group = _group(c)
        except asmrules.AsmError as e:
            used |= set(e.rules)
            continue
        used |= set(rules.evaluate(*c.disk, c.bs, c.override, platform=c.platform, group=group).rests_on)
    for disk, discovery, version, named, *_ in FILE_CASES:
        used |= {r for f in asmrules.files_in(_file_group(disk, discovery, version, named)) for r in f.rests_on}
    from labtests.unit import test_rules
    for rule, test in COMMAND_RULES.items():
        assert hasattr(test_rules, test), test
        used.add(rule)
    assert set(rules.RULES) - used == set(), sorted(set(rules.RULES) - used)


# (disk, discovery, version, named (SECTOR_SIZE, LOGICAL_SECTOR_SIZE), spfile, a file of 512-byte blocks)
FILE_CASES = [
    (E512, "asmlib", "12.1", None, "bug 16870214", "ORA-15347"),  # seed 000: DATA on a 512e LUN became 4096
    (E512, "asmlib", "19", None, "fits as far as is public", "ORA-15347"),
    (E512, "udev", "19", (4096, 512), "fits as far as is public", "fits"),
    (E512, "udev", "19", None, "fits", "fits"),
    (K4, "udev", "12.1", None, "bug 16870214", "ORA-15347"),
]


def _file_group(disk, discovery, version, named):
    sector, logical = named or (None, None)
    return asmrules.group_for(*disk, discovery, asmrules.parse_version(version), False, sector, logical)


@pytest.mark.parametrize("disk, discovery, version, named, spfile, moved", FILE_CASES)
def test_what_the_spfile_and_a_file_of_512_byte_blocks_meet(disk, discovery, version, named, spfile, moved):
    got = {f.what.split(" ")[0]: f for f in asmrules.files_in(_file_group(disk, discovery, version, named))}
    assert got["spfile"].said.startswith(spfile) and "seed 000" in _sources(got["spfile"].rests_on)
    assert got["spfile"].allowed is (spfile != "bug 16870214")
    assert got["a"].said.startswith(moved) and (got["a"].allowed is (moved == "fits"))


@pytest.mark.parametrize("kwargs, fragment", [
    ({"method": "iscsi"}, "discovery method 'iscsi' is not known"),
    ({"method": "udev", "asmlib_logical": True}, "needs --asm-discovery asmlib"),
])
def test_discovery_bad_input(kwargs, fragment):
    with pytest.raises(asmrules.AsmUsageError, match=fragment):
        asmrules.discover(512, 4096, **kwargs)


@pytest.mark.parametrize("text, fragment", [
    ("10.2", "outside the model: expected 11.2 to 26"),
    (" 19 ", "is not a version such as"),
    ("19.3.0.0.0abc", "is not a version such as"),
    ("nineteen", "is not a version such as"),
])
def test_bad_versions(text, fragment):
    with pytest.raises(asmrules.AsmUsageError, match=fragment):
        asmrules.parse_version(text)


def test_logical_sector_size_before_12_2_is_bad_input():
    with pytest.raises(asmrules.AsmUsageError, match="LOGICAL_SECTOR_SIZE exists from ASM 12.2"):
        asmrules.group_for(512, 4096, None, asmrules.parse_version("12.1"), sector_size=4096, logical_sector_size=512)


def test_docs_table_lists_every_rule_with_its_evidence():
    from sectorlab.paths import REPO
    text = (REPO / "docs" / "redo-blocksize.md").read_text()
    for rule_id, rule in rules.RULES.items():
        assert f"| `{rule_id}` | {rule.evidence} |" in text, f"docs/redo-blocksize.md lacks the row of {rule_id}"
