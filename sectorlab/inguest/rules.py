#!/usr/bin/python3
"""Oracle redo BLOCKSIZE rules: which block size a redo log gets on a disk, which it refuses with
ORA-01378, and which work at the cost of read-modify-write.

Pure Python, standard library only: it runs as `sectorlab redo-check` on the host and, copied as
one file, as `python3 rules.py ...` inside lab guests or on a database server.

The model (docs/redo-blocksize.md has the sources):
- BLOCKSIZE is 512, 1024 or 4096 (Oracle 11.2+; seed 003). Without it a redo log gets the disk's
  media (physical) sector size (seed 000: a 4Kn P3700 gets 4096).
- B < host (logical) sector: ORA-01378, and _disk_sector_size_override does not help: an O_DIRECT
  write of B bytes to such a disk fails with EINVAL, so the I/O itself cannot be done.
- B > media sector: ORA-01378 (seeds 001, 002: 4096 on a 512n disk) unless the instance sets
  _disk_sector_size_override=TRUE (seeds 000, 002, 003).
- B < media sector (512e): allowed, but a write that covers a physical sector only in part costs
  the drive a read-modify-write: 7 of 8 writes of 512 bytes start inside a 4 KiB sector (seed 003)
  and the 8th ends inside it, so all of them do (partial_units counts both ends).
- Inside ASM the database sees the disk group's SECTOR_SIZE as both host and media size (seed
  003). The disk group must be valid for its disks: SECTOR_SIZE 512 or 4096, not smaller than any
  disk's logical sector, and no mixing of disks with different logical sectors.
- Each redo block carries a 16-byte header; a write is padded to whole blocks ("redo wastage").
- A disk whose physical sector or minimum I/O size is above 4096 (QLC drives write in 16 KiB
  indirection units): no BLOCKSIZE reaches it. The model's default is then 4096, the largest; which
  one Oracle picks there is not documented, so this is where the model stops. Every redo write is
  smaller than the device's write unit, and the verdict warns so.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import math
import os
import stat
import struct
import sys
from dataclasses import asdict, dataclass, field

VALID_BLOCKSIZES = (512, 1024, 4096)
MAX_BLOCKSIZE = max(VALID_BLOCKSIZES)
VALID_ASM_SECTOR_SIZES = (512, 4096)
REDO_BLOCK_HEADER = 16
BLKSSZGET = 0x1268  # logical sector size (int)
BLKPBSZGET = 0x127B  # physical sector size (unsigned int)
EXIT_ALLOWED, EXIT_REFUSED, EXIT_USAGE = 0, 1, 2


class RulesUsageError(ValueError):
    """Input outside the model (exit status 2)."""


@dataclass
class Verdict:
    allowed: bool
    blocksize: int
    default_blocksize: int
    error: str | None
    warnings: list[str] = field(default_factory=list)
    host_sector: int = 0
    media_sector: int = 0
    reason: str = ""  # why, in one sentence; not part of the JSON interface

    def as_json(self) -> dict:
        out = asdict(self)
        out.pop("reason")
        return out


def ora_01378(blocksize: int, file: str, media: int, host: int) -> str:
    return (f"ORA-01378: The logical block size ({blocksize}) of file {file} is not compatible with the disk "
            f"sector size (media sector size is {media} and host sector size is {host})")


def _check_sector(what: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise RulesUsageError(f"{what} {value!r} is not a whole number of bytes")
    if value < 512 or value > 65536 or value & (value - 1):
        raise RulesUsageError(f"{what} {value} is not a power of two from 512 to 65536")
    return value


ASM_SOURCE = "Oracle ASM Administrator's Guide 12.1, 'Specifying the Sector Size for Drives'"


def check_asm_disk_group(sector_size: int, disks: dict[str, tuple[int, int]],
                         logical_sector_size: int | None = None) -> None:
    """Raise AsmError when ASM refuses these disks, each (logical, physical), in a disk group of
    SECTOR_SIZE `sector_size` and (12.2+) LOGICAL_SECTOR_SIZE `logical_sector_size` (None: before
    12.2, the one size). A disk fits when its logical sector is not above the group's logical one
    (the smallest I/O the group does, V$ASM_DISKGROUP) and the sector size ASM reads from it, the
    physical one (ASMLib unless ORACLEASM_USE_LOGICAL_BLOCK_SIZE=true) or the logical one, equals
    SECTOR_SIZE ("the new disk must have the same sector size", the 12.1 guide). Oracle's text is
    quoted only where it is public (ORA-15375); the other refusals are the engine's own words."""
    for name, value in (("SECTOR_SIZE", sector_size), ("LOGICAL_SECTOR_SIZE", logical_sector_size)):
        if value is not None and value not in VALID_ASM_SECTOR_SIZES:
            raise RulesUsageError(f"ASM {name} {value} is not valid: expected 512 or 4096")
    logical_group = logical_sector_size or sector_size
    if logical_group > sector_size:
        raise AsmError(f"ORA-15375: Physical sector size ({sector_size}) cannot be smaller than the logical sector "
                       f"size ({logical_group}).")
    if len({sizes for sizes in disks.values()}) > 1:
        listing = ", ".join(f"{d} ({lo}/{ph})" for d, (lo, ph) in sorted(disks.items()))
        raise AsmError(f"ASM refuses disks of different sector sizes in one disk group: {listing} ({ASM_SOURCE}; "
                       f"Oracle's error number for it is not public)")
    for disk, (logical, physical) in disks.items():
        if logical > logical_group:
            raise AsmError(f"ASM refuses disk '{disk}' (logical sector {logical}) in a disk group whose smallest I/O "
                           f"(LOGICAL_SECTOR_SIZE, or SECTOR_SIZE before 12.2) is {logical_group} bytes: the disk "
                           f"cannot do it (the engine's words; Oracle's error number for it is not public)")
        if sector_size not in (logical, physical):
            raise AsmError(f"ASM refuses disk '{disk}' ({logical}/{physical} B sectors) in a disk group of SECTOR_SIZE "
                           f"{sector_size}: a disk's sector size must equal SECTOR_SIZE ({ASM_SOURCE}; ASM reads the "
                           f"physical sector through ASMLib, the logical one through ORACLEASM_USE_LOGICAL_BLOCK_SIZE; "
                           f"Oracle's error number for it is not public)")


class AsmError(Exception):
    """The ASM disk group itself is invalid for its disks (exit status 1)."""


def direct_io_ok(size: int, logical_sector: int) -> bool:
    """Whether an O_DIRECT write of `size` bytes (at an offset that is a multiple of it) can be made
    to a disk or a file on a disk whose logical (host) sector is `logical_sector`: Linux fails an
    O_DIRECT I/O whose size or offset is not a multiple of the logical sector with EINVAL. This is
    why a redo BLOCKSIZE below the host sector can never work, whatever the database accepts."""
    return size > 0 and size % logical_sector == 0


def _unverified(media: int, min_io: int | None, chosen: int, asm_emulated_default: bool) -> list[str]:
    """What the verdict rests on that no public source settles: said in the verdict, not hidden."""
    out = []
    unit = max(media, min_io or 0)
    if unit > MAX_BLOCKSIZE:
        what = "physical sector" if media >= (min_io or 0) else "minimum I/O size"
        out.append(f"the device writes in units of {unit} bytes (its {what}), more than the largest redo "
                   f"BLOCKSIZE ({MAX_BLOCKSIZE}): every redo write is smaller than that unit, and the drive "
                   f"must read-modify-write or merge it; which BLOCKSIZE Oracle picks on such a disk is not "
                   f"documented (the model assumes {MAX_BLOCKSIZE})")
    if chosen == 1024:
        out.append("BLOCKSIZE 1024: Oracle allows it 'for some platforms'; Linux's redo block was 512 before 11.2 "
                   "(1024 was HP-UX's and Tru64's) and no public source shows Linux accepting 1024: the model "
                   "judges it by the sector sizes alone, unverified")
    if asm_emulated_default:
        out.append("the default BLOCKSIZE in a disk group whose LOGICAL_SECTOR_SIZE is below its SECTOR_SIZE is not "
                   "documented publicly (it depends on compatible.rdbms); the model assumes SECTOR_SIZE")
    return out


def evaluate(host_sector: int, media_sector: int, blocksize: int | None = None, override: bool = False,
             asm_sector_size: int | None = None, file: str = "+REDO", disk: str | None = None,
             min_io: int | None = None, asm_logical_sector_size: int | None = None) -> Verdict:
    """The verdict for a redo log of `blocksize` (None: the default) on a disk of host/media sectors
    (and, when known, its minimum I/O size)."""
    host = _check_sector("host (logical) sector size", host_sector)
    media = _check_sector("media (physical) sector size", media_sector)
    if host > media:
        raise RulesUsageError(f"logical sector {host} > physical sector {media}: no disk reports that")
    if min_io is not None and (isinstance(min_io, bool) or not isinstance(min_io, int) or min_io <= 0
                               or min_io % host):
        raise RulesUsageError(f"minimum I/O size {min_io!r} is not a positive multiple of the logical sector {host}")
    if blocksize is not None and blocksize not in VALID_BLOCKSIZES:
        raise RulesUsageError(f"BLOCKSIZE {blocksize} is not valid: expected one of "
                              f"{', '.join(map(str, VALID_BLOCKSIZES))}")
    if asm_sector_size is not None:
        try:
            check_asm_disk_group(asm_sector_size, {disk or file: (host, media)}, asm_logical_sector_size)
        except AsmError as e:
            return Verdict(False, blocksize or asm_sector_size, asm_sector_size, str(e), [], host, media,
                           "the ASM disk group is not valid for this disk")
        # Inside ASM the database sees the disk group's sizes, not the disk's: before 12.2 one size,
        # from 12.2 LOGICAL_SECTOR_SIZE as the host sector (V$ASM_DISKGROUP: a group of 4096/512
        # takes redo of 512 and of 4096).
        seen_host, seen_media = asm_logical_sector_size or asm_sector_size, asm_sector_size
    else:
        seen_host, seen_media = host, media
    default = min(seen_media, MAX_BLOCKSIZE)  # no BLOCKSIZE above 4096 exists (see the model)
    chosen = blocksize if blocksize is not None else default
    warnings = _unverified(media, min_io, chosen, blocksize is None and seen_host < seen_media and
                           asm_sector_size is not None)

    if not direct_io_ok(chosen, host):
        # The override changes what the database accepts, not what the disk can do.
        error = ora_01378(chosen, file, seen_media, seen_host)
        note = " (_disk_sector_size_override does not help: the O_DIRECT I/O itself fails with EINVAL)"
        return Verdict(False, chosen, default, error + (note if override else ""), warnings, seen_host, seen_media,
                       f"blocksize {chosen} < the disk's logical sector {host}: I/O of {chosen} bytes is impossible")
    if chosen < seen_host:
        return Verdict(False, chosen, default, ora_01378(chosen, file, seen_media, seen_host), warnings,
                       seen_host, seen_media, f"blocksize {chosen} < host sector {seen_host} seen by the database")
    if chosen > seen_media:
        if not override:
            return Verdict(False, chosen, default, ora_01378(chosen, file, seen_media, seen_host), warnings,
                           seen_host, seen_media,
                           f"blocksize {chosen} > media sector {seen_media}; _disk_sector_size_override=TRUE allows it")
        warnings.append(f"BLOCKSIZE {chosen} > media sector size {seen_media}: allowed by "
                        f"_disk_sector_size_override=TRUE")
    if chosen < media:
        warnings.append(rmw_warning(chosen, media))
    return Verdict(True, chosen, default, None, warnings, seen_host, seen_media, "allowed")


def rmw_warning(blocksize: int, unit: int) -> str:
    """What a BLOCKSIZE below the physical sector (or write unit) costs, counted at both ends."""
    per = unit // blocksize
    return (f"BLOCKSIZE {blocksize} < physical sector {unit}: a redo write of fewer than {per} blocks covers a "
            f"physical sector only in part, and any write that starts or ends inside one does: {per - 1} of {per} "
            f"{blocksize}-byte writes start inside a sector and the other ends inside it, so every one costs a "
            f"read-modify-write")


def partial_units(offset: int, length: int, unit: int) -> int:
    """The units of `unit` bytes (physical sectors, write units) that a write of `length` bytes at
    `offset` covers only in part: its first if it starts inside one, its last if it ends inside
    one, one when they are the same unit. Each costs a device that writes whole units a read and a
    rewrite: a write that ends inside a unit leaves it for the next write to read again."""
    if length <= 0:
        return 0
    end = offset + length
    head, tail = offset % unit != 0, end % unit != 0
    if offset // unit == (end - 1) // unit:
        return int(head or tail)
    return int(head) + int(tail)


def log_partial_units(write_length: int, writes: int, unit: int, log_size: int | None = None) -> tuple[int, int]:
    """A redo log written in `writes` equal writes of `write_length` bytes from offset 0, wrapping
    at `log_size` as a log does: (writes not aligned to the unit at their start or end, units
    written in part), as redo-writer counts them (writes_unaligned_to_unit, partial_units)."""
    unaligned = partial = offset = 0
    for _ in range(writes):
        if log_size and offset + write_length > log_size:
            offset = 0
        unaligned += bool(offset % unit or write_length % unit)
        partial += partial_units(offset, write_length, unit)
        offset += write_length
    return unaligned, partial


@dataclass
class Wastage:
    redo_bytes: int
    blocksize: int
    blocks: int
    bytes_written: int
    header_bytes: int
    wastage_bytes: int
    wastage_pct: float


def redo_wastage(redo_bytes: int, blocksize: int) -> Wastage:
    """One write of `redo_bytes` of redo: whole blocks of `blocksize`, each with a 16-byte header."""
    if blocksize not in VALID_BLOCKSIZES:
        raise RulesUsageError(f"BLOCKSIZE {blocksize} is not valid: expected one of 512, 1024, 4096")
    if isinstance(redo_bytes, bool) or not isinstance(redo_bytes, int) or redo_bytes <= 0:
        raise RulesUsageError(f"redo size {redo_bytes!r} is not a positive number of bytes")
    payload = blocksize - REDO_BLOCK_HEADER
    blocks = math.ceil(redo_bytes / payload)
    written = blocks * blocksize
    wasted = blocks * payload - redo_bytes
    return Wastage(redo_bytes, blocksize, blocks, written, blocks * REDO_BLOCK_HEADER, wasted,
                   round(100.0 * wasted / written, 2))


def device_sectors(path: str) -> tuple[int, int]:
    """(logical, physical) sector sizes of a block device, from the BLKSSZGET/BLKPBSZGET ioctls,
    checked against sysfs."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise RulesUsageError(f"{path}: {e.strerror}: expected a block device such as /dev/sdb") from e
    if not stat.S_ISBLK(st.st_mode):
        raise RulesUsageError(f"{path} is not a block device")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as e:
        raise RulesUsageError(f"{path}: cannot open: {e.strerror}") from e
    try:
        logical = struct.unpack("i", fcntl.ioctl(fd, BLKSSZGET, b"\0" * 4))[0]
        physical = struct.unpack("I", fcntl.ioctl(fd, BLKPBSZGET, b"\0" * 4))[0]
    finally:
        os.close(fd)
    sysfs = f"/sys/dev/block/{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}/queue"
    for name, value in (("logical_block_size", logical), ("physical_block_size", physical)):
        try:
            with open(f"{sysfs}/{name}") as f:
                seen = int(f.read())
        except OSError:
            continue  # a partition has no queue/ of its own; the ioctls are authoritative
        if seen != value:
            raise RulesUsageError(f"{path}: ioctl says {name}={value} but sysfs says {seen}")
    return logical, physical


def device_min_io(path: str) -> int | None:
    """The device's minimum I/O size from sysfs (a partition's is its disk's), or None."""
    st = os.stat(path)
    base = f"/sys/dev/block/{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"
    for queue in (f"{base}/queue", f"{base}/../queue"):
        try:
            with open(f"{queue}/minimum_io_size") as f:
                return int(f.read()) or None
        except (OSError, ValueError):
            continue
    return None


def _size(text: str) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of bytes") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not a positive number of bytes")
    return value


def build_parser(prog: str = "redo-check") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description="Which redo BLOCKSIZE a disk accepts (ORA-01378 rules).")
    p.add_argument("device", nargs="?", help="block device to read the sector sizes from (instead of the flags)")
    p.add_argument("--logical", type=_size, help="host (logical) sector size in bytes")
    p.add_argument("--physical", type=_size, help="media (physical) sector size in bytes")
    p.add_argument("--min-io", type=_size, help="the device's minimum I/O size in bytes (sysfs minimum_io_size)")
    p.add_argument("--blocksize", type=_size, help="requested redo BLOCKSIZE (512, 1024 or 4096)")
    p.add_argument("--override", action="store_true", help="_disk_sector_size_override=TRUE in the instance")
    p.add_argument("--asm-sector-size", type=_size, help="SECTOR_SIZE of the ASM disk group holding the log")
    p.add_argument("--asm-logical-sector-size", type=_size,
                   help="LOGICAL_SECTOR_SIZE of that disk group (ASM 12.2 and later; default: SECTOR_SIZE)")
    p.add_argument("--file", default="+REDO", help="file name for messages (default +REDO)")
    p.add_argument("--redo-size", type=_size, help="also report redo wastage for one write of this many bytes")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    return p


def main(argv: list[str] | None = None, prog: str = "redo-check") -> int:
    parser = build_parser(prog)
    args = parser.parse_args(argv)  # bad flags exit 2 through argparse
    try:
        if args.device:
            if args.logical or args.physical:
                raise RulesUsageError("give a DEVICE or --logical/--physical, not both")
            logical, physical = device_sectors(args.device)
            min_io = args.min_io or device_min_io(args.device)
        elif args.logical and args.physical:
            logical, physical, min_io = args.logical, args.physical, args.min_io
        else:
            raise RulesUsageError("give a DEVICE, or both --logical and --physical")
        if args.asm_logical_sector_size and not args.asm_sector_size:
            raise RulesUsageError("--asm-logical-sector-size needs --asm-sector-size (the disk group's SECTOR_SIZE)")
        verdict = evaluate(logical, physical, args.blocksize, args.override, args.asm_sector_size, args.file,
                           disk=args.device, min_io=min_io, asm_logical_sector_size=args.asm_logical_sector_size)
        wastage = redo_wastage(args.redo_size, verdict.blocksize) if args.redo_size else None
    except RulesUsageError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        out = verdict.as_json()
        if wastage:
            out["wastage"] = asdict(wastage)
        print(json.dumps(out))
    else:
        state = "allowed" if verdict.allowed else "refused"
        print(f"BLOCKSIZE {verdict.blocksize}: {state} (default {verdict.default_blocksize}; host sector "
              f"{verdict.host_sector}, media sector {verdict.media_sector})")
        if wastage:
            print(f"one write of {wastage.redo_bytes} B of redo: {wastage.blocks} blocks, {wastage.bytes_written} B "
                  f"written, {wastage.wastage_bytes} B wasted ({wastage.wastage_pct}%)")
    for w in verdict.warnings:
        print(f"{prog}: warning: {w}", file=sys.stderr)
    if verdict.error:
        print(verdict.error, file=sys.stderr)
    return EXIT_ALLOWED if verdict.allowed else EXIT_REFUSED


if __name__ == "__main__":
    sys.exit(main())
