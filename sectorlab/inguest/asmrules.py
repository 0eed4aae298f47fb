"""Oracle ASM's side of the redo BLOCKSIZE rules: which sector sizes a disk group has, which disks it
takes, what ASM reads from a disk through each discovery method, and the files it refuses.

Standard library only (a guest tool, beside rules.py). Each rule a result rests on is named by its
id in rules.RULES, which holds its evidence (documented, seed, physics or assumed) and its source;
docs/redo-blocksize.md prints that table.

- Before 12.2 a disk group has one sector size, SECTOR_SIZE (512 or 4096). From 12.2 it also has
  LOGICAL_SECTOR_SIZE, its smallest I/O (V$ASM_DISKGROUP); below SECTOR_SIZE the group emulates
  512-byte sectors and takes redo of 512 and of 4096.
- What ASM reads from a disk: through ASMLib (the oracleasm kernel driver) one size, the physical
  sector unless ORACLEASM_USE_LOGICAL_BLOCK_SIZE=true (the driver's asm_block_size()); through the
  ASM Filter Driver or a plain udev device no public source says: the model assumes the kernel's
  logical and physical sectors, and a group of the logical one when CREATE DISKGROUP names none.
- The operation decides what a refusal is: CREATE DISKGROUP and ADD DISK refuse a disk of another
  sector size (no public Oracle number: the engine's words); mounting a group whose disk now
  reports another sector size is ORA-15085. _disk_sector_size_override set in the ASM instance makes
  CREATE DISKGROUP without SECTOR_SIZE ORA-15086. CREATE DISKGROUP that names a SECTOR_SIZE other
  than the default needs COMPATIBLE.ASM and COMPATIBLE.RDBMS of 11.2 or higher (the 12.1 guide);
  the default is platform dependent, and the model takes 512 (assumed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

VALID_SECTOR_SIZES = (512, 4096)
DISCOVERY = ("asmlib", "afd", "udev")
# CREATE DISKGROUP (a new group), ALTER DISKGROUP ... ADD DISK, ALTER DISKGROUP ... MOUNT (an existing one).
OPERATIONS = ("create", "add", "mount")
STATEMENTS = {"create": "CREATE DISKGROUP", "add": "ALTER DISKGROUP ... ADD DISK", "mount": "ALTER DISKGROUP ... MOUNT"}
# The rule each discovery method's reading of a disk rests on (rules.RULES).
READS_RULE = {"asmlib": "asmlib-reads-one-size", "afd": "afd-reads-kernel-sizes", "udev": "udev-reads-kernel-sizes"}
LOGICAL_SECTOR_SIZE_FROM = (12, 2)
OLDEST, NEWEST = (11, 2), 26
COMPATIBLE_OLDEST = (10, 1)  # the lowest COMPATIBLE.ASM / COMPATIBLE.RDBMS a disk group takes
SECTOR_SIZE_COMPATIBLE = (11, 2)
GUIDE_121 = "Oracle ASM Administrator's Guide 12.1, 'Specifying the Sector Size for Drives'"


class AsmError(Exception):
    """ASM refuses the disk group or the disk (exit status 1); `rules`: the rules it rests on."""

    def __init__(self, text: str, rules: list[str]):
        super().__init__(text)
        self.rules = rules


class AsmNotKnown(Exception):
    """What ASM does is not public (exit status 3, no refusal); `rules`: what the question rests on."""

    def __init__(self, text: str, rules: list[str]):
        super().__init__(text)
        self.rules = rules


class AsmUsageError(ValueError):
    """An ASM input outside the model (exit status 2)."""


def parse_version(text: str | None) -> tuple[int, int] | None:
    """'19', '19.3', '12.2.0.1' -> (19, 0), (19, 3), (12, 2); None stays None (the newest behaviour)."""
    if text is None:
        return None
    if not re.fullmatch(r"[0-9]{1,2}(\.[0-9]{1,2}){0,4}", str(text)):
        raise AsmUsageError(f"ASM version {text!r} is not a version such as 12.1, 12.2 or 19")
    parts = [int(p) for p in str(text).split(".")]
    major, minor = parts[0], parts[1] if len(parts) > 1 else 0
    if (major, minor) < OLDEST or major > NEWEST:
        raise AsmUsageError(f"ASM version {text} is outside the model: expected 11.2 to {NEWEST} (e.g. 12.1, 19)")
    return major, minor


def parse_compatible(value, attribute: str) -> tuple[int, int] | None:
    """A disk group's COMPATIBLE.ASM or COMPATIBLE.RDBMS, as text ('11.1', '11.2.0.0.0', '19.0') or
    as (major, minor) whole numbers: (11, 1), ...; None: not given (not checked). Every function
    here and in rules.py that takes the attributes takes either form."""
    if value is None:
        return None
    if isinstance(value, tuple) and len(value) == 2 and all(type(v) is int for v in value):
        major, minor = value
        shown = f"{major}.{minor}"
    elif isinstance(value, str) and re.fullmatch(r"[0-9]{1,2}(\.[0-9]{1,2}){1,4}", value):
        major, minor = (int(p) for p in value.split(".")[:2])
        shown = value
    elif isinstance(value, str):
        raise AsmUsageError(f"{attribute} {value!r} is not a version such as 11.1, 11.2.0.0.0 or 19.0")
    else:  # from Python: the two forms it takes
        raise AsmUsageError(f"{attribute} {value!r} is not a version such as '11.1' (text) or (11, 1) (a pair of "
                            f"whole numbers)")
    if (major, minor) < COMPATIBLE_OLDEST or major > NEWEST:
        raise AsmUsageError(f"{attribute} {shown} is outside the model: expected 10.1 to {NEWEST}.x")
    return major, minor


def parse_compatibles(compatible) -> tuple[tuple[int, int] | None, tuple[int, int] | None]:
    """(COMPATIBLE.ASM, COMPATIBLE.RDBMS), each as parse_compatible takes it."""
    if not (isinstance(compatible, (tuple, list)) and len(compatible) == 2):
        raise AsmUsageError(f"compatible {compatible!r} is not a pair (COMPATIBLE.ASM, COMPATIBLE.RDBMS)")
    return (parse_compatible(compatible[0], "COMPATIBLE.ASM"), parse_compatible(compatible[1], "COMPATIBLE.RDBMS"))


def has_logical_sector_size(version: tuple[int, int] | None) -> bool:
    return version is None or version >= LOGICAL_SECTOR_SIZE_FROM


@dataclass
class DiskGroup:
    """What CREATE DISKGROUP gives, or what the user says a group has: SECTOR_SIZE and (12.2+)
    LOGICAL_SECTOR_SIZE, and the sizes ASM reads from its disk (None: any discovery method).
    `named`: SECTOR_SIZE was named (in CREATE DISKGROUP, or as an existing group's recorded one),
    not taken from the disk; `compatible`: (COMPATIBLE.ASM, COMPATIBLE.RDBMS), given as text or
    (major, minor) and held as (major, minor), None where not given."""
    sector_size: int
    logical_sector_size: int | None = None
    reads: tuple[int, int] | None = None  # (logical, physical) as ASM sees the disk
    rests_on: list[str] = field(default_factory=list)
    version: tuple[int, int] | None = None
    named: bool = True
    discovery: str | None = None
    compatible: tuple[tuple[int, int] | None, tuple[int, int] | None] = (None, None)

    def __post_init__(self):
        self.compatible = parse_compatibles(self.compatible)  # text or (major, minor): one form from here on

    @property
    def smallest_io(self) -> int:
        return self.logical_sector_size or self.sector_size


def _valid_reads(reads: tuple[int, int], disk: str, one_size: str | None = None) -> None:
    """ORA-59012 / ORA-59013 for a sector ASM reads that no disk group can have (a 16 KiB one)."""
    checks = [(one_size, reads[0])] if one_size else [("physical", reads[1]), ("logical", reads[0])]
    for what, size in checks:
        if size not in VALID_SECTOR_SIZES:
            error = "ORA-59012" if what == "physical" else "ORA-59013"
            raise AsmError(f"{error}: Disk {disk} uses an invalid {what} sector size ({size}).", ["asm-invalid-sector"])


def discover(logical: int, physical: int, method: str, version: tuple[int, int] | None = None,
             asmlib_logical: bool = False, disk: str = "DISK") -> DiskGroup:
    """The disk group CREATE DISKGROUP makes of this disk when it names no sector size."""
    if method not in DISCOVERY:
        raise AsmUsageError(f"discovery method {method!r} is not known: expected one of {', '.join(DISCOVERY)}")
    if asmlib_logical and method != "asmlib":
        raise AsmUsageError("ORACLEASM_USE_LOGICAL_BLOCK_SIZE is an ASMLib setting: it needs --asm-discovery asmlib")
    if method == "asmlib":
        one = logical if asmlib_logical else physical
        reads, rests_on = (one, one), [READS_RULE[method]]
        _valid_reads(reads, disk, "logical" if asmlib_logical else "physical")
    else:
        reads, rests_on = (logical, physical), [READS_RULE[method]]
        _valid_reads(reads, disk)
    logical_group = reads[0] if has_logical_sector_size(version) else None
    if logical_group is not None and method == "asmlib":
        rests_on.append("asmlib-logical-sector-size")
    return DiskGroup(reads[0], logical_group, reads, rests_on, version, named=False, discovery=method)


def explicit(sector_size: int, logical_sector_size: int | None, version: tuple[int, int] | None,
             reads: tuple[int, int] | None = None, compatible=(None, None)) -> DiskGroup:
    """A group whose sizes CREATE DISKGROUP names (ATTRIBUTE 'sector_size', 'logical_sector_size')."""
    for name, value in (("SECTOR_SIZE", sector_size), ("LOGICAL_SECTOR_SIZE", logical_sector_size)):
        if value is not None and value not in VALID_SECTOR_SIZES:
            raise AsmUsageError(f"ASM {name} {value} is not valid: expected 512 or 4096")
    if logical_sector_size is not None and not has_logical_sector_size(version):
        raise AsmUsageError(f"LOGICAL_SECTOR_SIZE exists from ASM 12.2 (V$ASM_DISKGROUP); ASM "
                            f"{version[0]}.{version[1]} has one sector size: drop --asm-logical-sector-size or give "
                            f"--asm-version 12.2 or later")
    if logical_sector_size is not None and logical_sector_size > sector_size:
        raise AsmError(f"ORA-15375: Physical sector size ({sector_size}) cannot be smaller than the logical sector "
                       f"size ({logical_sector_size}).", ["asm-sector-size-values"])
    rests_on = ["asm-sector-size-values"]
    if logical_sector_size is not None:
        rests_on.append("asm-logical-values")
    elif has_logical_sector_size(version):
        rests_on.append("asm-logical-default")
    return DiskGroup(sector_size, logical_sector_size, reads, rests_on, version, compatible=compatible)


def check_operation(operation: str) -> None:
    if operation not in OPERATIONS:
        raise AsmUsageError(f"operation {operation!r} is not known: expected create ({STATEMENTS['create']}), add "
                            f"({STATEMENTS['add']}) or mount ({STATEMENTS['mount']})")


def check_disk(group: DiskGroup, disk: str, logical: int, physical: int, operation: str = "create",
               group_name: str = "REDO", asm_override: bool = False) -> list[str]:
    """Raise AsmError when ASM refuses this disk, (logical, physical) as the kernel shows it, in the
    group at `operation`; else the rules its membership rests on. A disk fits when the sector size
    ASM reads from it equals SECTOR_SIZE (12.1 guide: "the new disk must have the same sector size";
    so disks of different sector sizes never share a group) and its logical sector is not above the
    group's smallest I/O. Without a discovery method either of its sectors may be the one ASM reads
    (ASMLib reads the physical one). The refusals at CREATE or ADD DISK have no public Oracle number:
    they are the engine's own words; at mount a disk that reports another sector size than the
    group's is ORA-15085. Each refusal rests on what it depends on: which of a disk's sectors ASM
    reads matters only when the two differ (a 512e disk)."""
    reads = group.reads or (logical, physical)
    _valid_reads(reads, disk)
    # Through ASMLib ASM's I/O goes through the oracleasm driver in units of the one size it shows;
    # otherwise the kernel's O_DIRECT rule holds the smallest I/O to the logical sector.
    smallest = "asmlib-smallest-io" if group.discovery == "asmlib" else "asm-smallest-io"
    if logical == physical:  # one sector size: whichever ASM reads, it is this one
        which = []
    else:
        which = [READS_RULE[group.discovery]] if group.discovery else ["asm-membership-any-discovery"]
    if operation == "mount" and group.sector_size not in reads:
        # Neither sector ASM reads is the recorded one. Which one it reads decides this only when the
        # other would match: through a discovery method that shows one size (ASMLib); without a
        # discovery method a disk both of whose sectors differ from SECTOR_SIZE fails whichever it is.
        depends = which if group.sector_size in (logical, physical) else []
        raise AsmError(f'ORA-15085: disk "{disk}" has inconsistent sector size (expected {group.sector_size}, '
                       f'actual {reads[1]}) with disk group "{group_name}"', ["asm-mount-sector-size"] + depends)
    fits = ["asm-mount-sector-size" if operation == "mount" else "asm-membership", smallest] + which
    if reads[0] > group.smallest_io:
        when = "mount" if operation == "mount" else "CREATE DISKGROUP or ADD DISK"
        raise AsmError(f"ASM refuses disk '{disk}' (logical sector {reads[0]}, as ASM reads it) in a disk group "
                       f"whose smallest I/O (LOGICAL_SECTOR_SIZE, or SECTOR_SIZE before 12.2) is {group.smallest_io} "
                       f"bytes at {when}: the disk cannot do it (the engine's words; Oracle's error number for it is "
                       f"not public)", fits)
    if group.sector_size not in reads and asm_override and group.named and operation != "mount":
        # The override's one public effect in ASM is ORA-15086 (a SECTOR_SIZE must then be named): whether
        # the group then takes a disk of another sector size, which is what naming one would be for, is not.
        raise AsmNotKnown(f"not known: _disk_sector_size_override is set in the ASM instance and the group's "
                          f"SECTOR_SIZE is named {group.sector_size} ({STATEMENTS[operation]}); whether ASM then takes "
                          f"disk '{disk}' ({reads[0]}/"
                          f"{reads[1]} B sectors, as ASM reads them) is not public: the parameter's one public "
                          f"effect in ASM is ORA-15086, and seed 003 says not to set it there",
                          ["asm-override-membership"] + which)
    if group.sector_size not in reads:
        raise AsmError(f"ASM refuses disk '{disk}' ({reads[0]}/{reads[1]} B sectors, as ASM reads them) in a disk "
                       f"group of SECTOR_SIZE {group.sector_size}: a disk's sector size must equal SECTOR_SIZE "
                       f"({GUIDE_121}; Oracle's error number for it is not public)", ["asm-membership"] + which)
    return fits


def compatible_checked(group: DiskGroup, operation: str) -> bool:
    """Whether COMPATIBLE.ASM and COMPATIBLE.RDBMS are checked against SECTOR_SIZE: the 12.1 guide
    asks for 11.2 or higher "to set the sector size to a value other than the default value", which
    is CREATE DISKGROUP naming a SECTOR_SIZE; not ADD DISK or MOUNT of an existing group, nor a group
    whose SECTOR_SIZE CREATE DISKGROUP takes from the disk."""
    return operation == "create" and group.named


def check_compatible(group: DiskGroup, operation: str = "create") -> list[str]:
    """At CREATE DISKGROUP naming a SECTOR_SIZE other than the default, COMPATIBLE.ASM and
    COMPATIBLE.RDBMS must be 11.2 or higher (12.1 guide). The default is platform dependent: the
    model takes 512 (asm-sector-size-default, assumed), so 4096 is the one checked. Only the
    attributes given are checked; the rules the group rests on for it ([] when not checked)."""
    if group.compatible == (None, None) or not compatible_checked(group, operation):
        return []
    if group.sector_size == 512:  # the default, as the model takes it: nothing to check
        return ["asm-sector-size-default"]
    rules = ["asm-compatible", "asm-sector-size-default"]
    for attribute, value in zip(("COMPATIBLE.ASM", "COMPATIBLE.RDBMS"), group.compatible):
        if value is not None and value < SECTOR_SIZE_COMPATIBLE:
            raise AsmError(f"ASM refuses SECTOR_SIZE {group.sector_size} with {attribute} {value[0]}.{value[1]}: "
                           f"CREATE DISKGROUP naming a sector size other than the default needs COMPATIBLE.ASM and "
                           f"COMPATIBLE.RDBMS of 11.2 or higher ({GUIDE_121}; the default is platform dependent, "
                           f"the model takes 512; the engine's words, Oracle's error number for it is not public)",
                           rules)
    return rules


def ora_15086() -> str:
    return "ORA-15086: Diskgroup sector size must be specified."


def admit(group: DiskGroup, disk: str, logical: int, physical: int, operation: str = "create",
          asm_override: bool = False, group_name: str = "REDO") -> list[str]:
    """Everything ASM checks before a redo log is written in the group: at CREATE DISKGROUP with
    _disk_sector_size_override set in the ASM instance a SECTOR_SIZE must be named (ORA-15086), the
    COMPATIBLE attributes a named SECTOR_SIZE of 4096 needs at CREATE DISKGROUP, and the disk's
    membership at `operation` (one of OPERATIONS: the caller checks it, as rules.check_modes does).
    AsmError names the refusal, AsmNotKnown what is not public (a disk of another sector size than the
    SECTOR_SIZE named with the override set in the ASM instance); else the rules the group and the
    disk's place in it rest on."""
    if operation == "create" and asm_override and not group.named:
        raise AsmError(ora_15086(), ["asm-override-sector-size"])
    return check_compatible(group, operation) + check_disk(group, disk, logical, physical, operation, group_name,
                                                           asm_override)


def ora_15347(block: int, file: str, group_sector: int) -> str:
    return (f"ORA-15347: The logical block size {block} of the Oracle Automatic Storage Management (Oracle ASM) "
            f"file '{file}' is too small for disk group sector size {group_sector}.")


@dataclass
class FileVerdict:
    what: str
    allowed: bool
    said: str
    rests_on: list[str]


def files_in(group: DiskGroup, name: str = "+DATA") -> list[FileVerdict]:
    """What the spfile and a file of 512-byte blocks (a redo log of BLOCKSIZE 512 moved in with RMAN
    or ASMCMD) meet in the group: ASM refuses a file block below the group's smallest I/O
    (ORA-15347); an spfile in a group of SECTOR_SIZE 4096 is created but unreadable up to 12.1.0.2
    without the patch for bug 16870214 (seed 000); whether later releases have the bug is not public."""
    if group.sector_size == 512:
        spfile = FileVerdict("spfile", True, "fits", ["spfile-4k-bug"])
    elif group.version is not None and group.version < LOGICAL_SECTOR_SIZE_FROM:
        spfile = FileVerdict("spfile", False, "bug 16870214 (12.1.0.2 without its patch): the spfile DBCA writes "
                             "into a disk group of SECTOR_SIZE 4096 is unreadable, and startup fails with ORA-17510: "
                             "Attempt to do i/o beyond file size; keep the spfile outside the group or apply the patch",
                             ["spfile-4k-bug"])
    else:
        spfile = FileVerdict("spfile", True, "fits as far as is public: bug 16870214 (startup fails with ORA-17510 "
                             "when the spfile is in a group of SECTOR_SIZE 4096) was seen up to 12.1.0.2",
                             ["spfile-4k-bug", "spfile-later-releases"])
    small = group.smallest_io
    moved = FileVerdict("a file of 512-byte blocks (a redo log of BLOCKSIZE 512 moved in)", small <= 512,
                        "fits" if small <= 512 else ora_15347(512, f"{name}/onlinelog/group_1.log", small),
                        ["asm-file-below-sector"])
    return [spfile, moved]


def group_for(logical: int, physical: int, method: str | None, version: tuple[int, int] | None,
              asmlib_logical: bool = False, sector_size: int | None = None, logical_sector_size: int | None = None,
              disk: str = "DISK", compatible=(None, None)) -> DiskGroup:
    """The group a disk would be in: the one CREATE DISKGROUP makes of it through `method` when no
    size is named, else the named one, with what `method` reads from the disk for membership;
    `compatible`: (COMPATIBLE.ASM, COMPATIBLE.RDBMS), each as text or (major, minor) (None: not
    given); they are checked only where CREATE DISKGROUP names the SECTOR_SIZE (compatible_checked)."""
    found = discover(logical, physical, method, version, asmlib_logical, disk) if method else None
    if sector_size is None:
        if found is None or logical_sector_size is not None:
            raise AsmUsageError("name the disk group's SECTOR_SIZE (--asm-sector-size), or a discovery method "
                                "(--asm-discovery) to say which one CREATE DISKGROUP would give")
        found.compatible = parse_compatibles(compatible)  # described, not checked: no SECTOR_SIZE was named
        return found
    named = explicit(sector_size, logical_sector_size, version, found.reads if found else None, compatible)
    if found is not None:
        named.rests_on = found.rests_on[:1] + named.rests_on
        named.discovery = found.discovery
    return named
