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
"""

from __future__ import annotations

from dataclasses import dataclass, field

VALID_SECTOR_SIZES = (512, 4096)
DISCOVERY = ("asmlib", "afd", "udev")
LOGICAL_SECTOR_SIZE_FROM = (12, 2)
OLDEST = (11, 2)
GUIDE_121 = "Oracle ASM Administrator's Guide 12.1, 'Specifying the Sector Size for Drives'"


class AsmError(Exception):
    """ASM refuses the disk group or the disk (exit status 1)."""


class AsmUsageError(ValueError):
    """An ASM input outside the model (exit status 2)."""


def parse_version(text: str | None) -> tuple[int, int] | None:
    """'19', '19.3', '12.2.0.1' -> (19, 0), (19, 3), (12, 2); None stays None (the newest behaviour)."""
    if text is None:
        return None
    parts = str(text).strip().split(".")
    try:
        major, minor = int(parts[0]), int(parts[1]) if len(parts) > 1 else 0
    except ValueError:
        raise AsmUsageError(f"ASM version {text!r} is not a version such as 12.1, 12.2 or 19") from None
    if (major, minor) < OLDEST or major > 99:
        raise AsmUsageError(f"ASM version {text} is outside the model: expected 11.2 or later (e.g. 12.1, 19)")
    return major, minor


def has_logical_sector_size(version: tuple[int, int] | None) -> bool:
    return version is None or version >= LOGICAL_SECTOR_SIZE_FROM


@dataclass
class DiskGroup:
    """What CREATE DISKGROUP gives, or what the user says a group has: SECTOR_SIZE and (12.2+)
    LOGICAL_SECTOR_SIZE, and the sizes ASM reads from its disk (None: any discovery method)."""
    sector_size: int
    logical_sector_size: int | None = None
    reads: tuple[int, int] | None = None  # (logical, physical) as ASM sees the disk
    rests_on: list[str] = field(default_factory=list)

    @property
    def smallest_io(self) -> int:
        return self.logical_sector_size or self.sector_size


def discover(logical: int, physical: int, method: str, version: tuple[int, int] | None = None,
             asmlib_logical: bool = False, disk: str = "DISK") -> DiskGroup:
    """The disk group CREATE DISKGROUP makes of this disk when it names no sector size."""
    if method not in DISCOVERY:
        raise AsmUsageError(f"discovery method {method!r} is not known: expected one of {', '.join(DISCOVERY)}")
    if asmlib_logical and method != "asmlib":
        raise AsmUsageError("ORACLEASM_USE_LOGICAL_BLOCK_SIZE is an ASMLib setting: it needs --asm-discovery asmlib")
    if method == "asmlib":
        one = logical if asmlib_logical else physical
        reads, rests_on = (one, one), ["asmlib-reads-one-size"]
        sector, logical_group = one, one
    else:
        reads, rests_on = (logical, physical), [f"{method}-reads-kernel-sizes"]
        sector, logical_group = logical, logical
    for what, size, error in (("physical", reads[1], "ORA-59012"), ("logical", reads[0], "ORA-59013")):
        if size not in VALID_SECTOR_SIZES:
            raise AsmError(f"{error}: Disk {disk} uses an invalid {what} sector size ({size}).")
    if not has_logical_sector_size(version):
        logical_group = None
    elif method == "asmlib":
        rests_on.append("asmlib-logical-sector-size")
    return DiskGroup(sector, logical_group, reads, rests_on)


def explicit(sector_size: int, logical_sector_size: int | None, version: tuple[int, int] | None,
             reads: tuple[int, int] | None = None) -> DiskGroup:
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
                       f"size ({logical_sector_size}).")
    return DiskGroup(sector_size, logical_sector_size, reads, ["asm-sector-size-values"])


def check_disks(group: DiskGroup, disks: dict[str, tuple[int, int]]) -> None:
    """Raise AsmError when ASM refuses these disks, each (logical, physical) as the kernel shows it.
    A disk fits when the sector size ASM reads from it equals SECTOR_SIZE (12.1 guide: "the new disk
    must have the same sector size") and its logical sector is not above the group's smallest I/O.
    Oracle's text is quoted where it is public; the refusals at CREATE or ADD DISK have no public
    number, so they are the engine's own words."""
    if len(set(disks.values())) > 1:
        listing = ", ".join(f"{d} ({lo}/{ph})" for d, (lo, ph) in sorted(disks.items()))
        raise AsmError(f"ASM refuses disks of different sector sizes in one disk group: {listing} ({GUIDE_121}; "
                       f"Oracle's error number for it is not public)")
    for disk, (logical, physical) in disks.items():
        seen_logical, seen_physical = group.reads or (logical, physical)
        if seen_logical > group.smallest_io:
            raise AsmError(f"ASM refuses disk '{disk}' (logical sector {seen_logical}, as ASM reads it) in a disk "
                           f"group whose smallest I/O (LOGICAL_SECTOR_SIZE, or SECTOR_SIZE before 12.2) is "
                           f"{group.smallest_io} bytes: the disk cannot do it (the engine's words; Oracle's error "
                           f"number for it is not public)")
        if group.sector_size not in (seen_logical, seen_physical):
            raise AsmError(f"ASM refuses disk '{disk}' ({seen_logical}/{seen_physical} B sectors, as ASM reads "
                           f"them) in a disk group of SECTOR_SIZE {group.sector_size}: a disk's sector size must equal "
                           f"SECTOR_SIZE ({GUIDE_121}; Oracle's error number for it is not public)")


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
    """What the spfile and a file of 512-byte blocks (a control file or redo log of 512-byte blocks
    moved in) meet in the group: ASM refuses a file block below the group's smallest I/O
    (ORA-15347); an spfile in a group of SECTOR_SIZE 4096 is created but unreadable in 12.1.0.2
    without the patch for bug 16870214 (seed 000)."""
    if group.sector_size > 512:
        spfile = FileVerdict("spfile", False, "bug 16870214 (12.1.0.2 without its patch): the spfile DBCA writes "
                             "into a disk group of SECTOR_SIZE 4096 is unreadable, and startup fails with ORA-17510: "
                             "Attempt to do i/o beyond file size; keep the spfile outside the group or apply the patch",
                             ["spfile-4k-bug"])
    else:
        spfile = FileVerdict("spfile", True, "fits", ["spfile-4k-bug"])
    small = group.smallest_io
    moved = FileVerdict("a file of 512-byte blocks (a control file or redo log moved in)", small <= 512,
                        "fits" if small <= 512 else ora_15347(512, f"{name}/control01.ctl", small),
                        ["asm-file-below-sector"])
    return [spfile, moved]


def group_for(logical: int, physical: int, method: str | None, version: tuple[int, int] | None,
              asmlib_logical: bool = False, sector_size: int | None = None, logical_sector_size: int | None = None,
              disk: str = "DISK") -> DiskGroup:
    """The group a disk would be in: the one CREATE DISKGROUP makes of it through `method` when no
    size is named, else the named one, with what `method` reads from the disk for membership."""
    found = discover(logical, physical, method, version, asmlib_logical, disk) if method else None
    if sector_size is None:
        if found is None or logical_sector_size is not None:
            raise AsmUsageError("name the disk group's SECTOR_SIZE (--asm-sector-size), or a discovery method "
                                "(--asm-discovery) to say which one CREATE DISKGROUP would give")
        return found
    named = explicit(sector_size, logical_sector_size, version, found.reads if found else None)
    if found is not None:
        named.rests_on = found.rests_on[:1] + named.rests_on
    return named
