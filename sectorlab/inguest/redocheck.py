#!/usr/bin/python3
"""redo-check: which redo BLOCKSIZE a disk accepts (the ORA-01378 rules, rules.py), and inside ASM
(asmrules.py) which disk group CREATE DISKGROUP would make of it and what that group takes.

The sizes come from flags, from a block device (its ioctls, checked against sysfs), from a file or
directory on a filesystem (the block device under it), or, on the host, from a server's collector
file (`sectorlab redo-check --from-host FILE DISK`). Standard library only: `redo-check` in every
guest image, `python3 redocheck.py` beside rules.py and asmrules.py on a database server.
Exit status: 0 allowed, 1 refused, 2 bad usage, 3 not known (the sources point both ways, or none is public).
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import stat
import struct
import sys
from dataclasses import asdict

try:
    from . import asmrules, rules
except ImportError:  # flat in /usr/local/lib/sectorlab/ inside a guest
    import asmrules
    import rules

BLKSSZGET = 0x1268  # logical sector size (int)
BLKPBSZGET = 0x127B  # physical sector size (unsigned int)
EXIT_ALLOWED, EXIT_REFUSED, EXIT_USAGE, EXIT_NOT_KNOWN = 0, 1, 2, 3
Usage = rules.RulesUsageError


def _sysfs_queue(major: int, minor: int) -> str | None:
    """The queue/ directory of a block device, a partition's being its disk's."""
    base = f"/sys/dev/block/{major}:{minor}"
    for queue in (f"{base}/queue", f"{base}/../queue"):
        if os.path.isdir(queue):
            return queue
    return None


def _read_int(path: str) -> int | None:
    try:
        with open(path) as f:
            return int(f.read())
    except (OSError, ValueError):
        return None


def device_sectors(path: str) -> tuple[int, int]:
    """(logical, physical) sector sizes of a block device, from the BLKSSZGET/BLKPBSZGET ioctls,
    checked against sysfs."""
    st = _stat(path)
    if not stat.S_ISBLK(st.st_mode):
        raise Usage(f"{path} is not a block device")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as e:
        raise Usage(f"{path}: cannot open: {e.strerror}") from e
    try:
        logical = struct.unpack("i", fcntl.ioctl(fd, BLKSSZGET, b"\0" * 4))[0]
        physical = struct.unpack("I", fcntl.ioctl(fd, BLKPBSZGET, b"\0" * 4))[0]
    except OSError as e:
        raise Usage(f"{path}: the kernel does not say its sector sizes ({e.strerror})") from e
    finally:
        os.close(fd)
    queue = f"/sys/dev/block/{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}/queue"
    for name, value in (("logical_block_size", logical), ("physical_block_size", physical)):
        seen = _read_int(f"{queue}/{name}")  # a partition has no queue/ of its own: the ioctls decide
        if seen is not None and seen != value:
            raise Usage(f"{path}: ioctl says {name}={value} but sysfs says {seen}")
    return logical, physical


def device_min_io(path: str) -> int | None:
    """The device's minimum I/O size from sysfs (a partition's is its disk's), or None."""
    st = os.stat(path)
    queue = _sysfs_queue(os.major(st.st_rdev), os.minor(st.st_rdev))
    return (_read_int(f"{queue}/minimum_io_size") or None) if queue else None


def _stat(path: str) -> os.stat_result:
    try:
        return os.stat(path)
    except OSError as e:
        raise Usage(f"{path}: {e.strerror}: expected a block device such as /dev/sdb, or a file or directory "
                    f"on one") from e


def filesystem_sectors(path: str) -> tuple[int, int, int | None]:
    """(logical, physical, minimum I/O) of the block device under the filesystem that holds `path`
    (a device-mapper or LVM volume: its own sizes, which the kernel stacks from the disks below)."""
    st = _stat(path)
    major, minor = os.major(st.st_dev), os.minor(st.st_dev)
    queue = _sysfs_queue(major, minor) if major else None
    sizes = [_read_int(f"{queue}/{name}") if queue else None
             for name in ("logical_block_size", "physical_block_size", "minimum_io_size")]
    if queue is None or None in sizes[:2]:
        raise Usage(f"{path} is on a filesystem with no block device under it (device {major}:{minor}: NFS, tmpfs, "
                    f"overlay or btrfs): the sector sizes Oracle sees there are not public; give --logical and "
                    f"--physical")
    return sizes[0], sizes[1], sizes[2] or None


def _size(text: str) -> int:
    if not (text.isascii() and text.lstrip("-").isdigit()) or len(text) > 19:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of bytes")
    value = int(text, 10)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not a positive number of bytes")
    return value


class _OneLine(argparse.ArgumentParser):
    """A bad command line is one line, as the epilog says (argparse would print the usage first)."""

    def error(self, message: str):
        message = message.replace("\n", "\\n")  # an argument with a line break in it stays on the one line
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def build_parser(prog: str = "redo-check", from_host: bool = False) -> argparse.ArgumentParser:
    p = _OneLine(prog=prog, description="Which redo BLOCKSIZE a disk accepts (ORA-01378 rules), and "
                                "inside ASM which disk group it would be in.",
                                epilog="exit status: 0 allowed (warnings on stderr), 1 refused (the ORA- text, or the "
                                "engine's own words, on stderr), 2 bad usage (one line), 3 not known: the engine "
                                "gives neither allowed nor refused (a warning says why). An answer that rests on an "
                                "assumption, or keeps one of two sources that conflict, is still 0 or 1: its warning "
                                "says so, and --json gives each claim's evidence (documented, seed, physics, "
                                "assumed). docs/redo-blocksize.md has the rules and their sources.")
    p.add_argument("device", nargs="?", help="block device, or a file or directory on a filesystem, to read the "
                   "sector sizes from" + (" (with --from-host: the disk's name in FILE)" if from_host else ""))
    if from_host:
        p.add_argument("--from-host", metavar="FILE", help="read the disk's sizes from a collector file "
                       "(scripts/collect-host-geometry)")
    p.add_argument("--logical", type=_size, help="host (logical) sector size in bytes")
    p.add_argument("--physical", type=_size, help="media (physical) sector size in bytes")
    p.add_argument("--min-io", type=_size, help="the device's minimum I/O size in bytes (sysfs minimum_io_size)")
    p.add_argument("--blocksize", type=_size, help="requested redo BLOCKSIZE (512, 1024 or 4096)")
    p.add_argument("--override", action="store_true", help="_disk_sector_size_override=TRUE (in the database "
                   "instance; --override-in says otherwise)")
    p.add_argument("--override-in", default="database", metavar="INSTANCE",
                   help="with --override, the instance it is set in: database (default; what lets redo above the "
                   "media sector through), asm (the ASM instance: CREATE DISKGROUP without SECTOR_SIZE fails with "
                   "ORA-15086) or both")
    p.add_argument("--platform", default="linux", choices=rules.PLATFORMS, help="the database's platform "
                   "(default linux; it decides what is known of BLOCKSIZE 1024, and the I/O mode of a file on a "
                   "file system when --io-mode is not given)")
    p.add_argument("--io-mode", metavar="MODE", help="how the database writes the log: direct (O_DIRECT: ASM, raw "
                   "devices, FILESYSTEMIO_OPTIONS DIRECTIO or SETALL) or buffered (FILESYSTEMIO_OPTIONS NONE or "
                   "ASYNCH: a file on a file system, not a raw DEVICE); default: direct on a device and in ASM; for "
                   "a file on a file system buffered on Linux (FILESYSTEMIO_OPTIONS defaults to NONE on Linux), not "
                   "known on other platforms (the verdict holds for both, or is not known)")
    p.add_argument("--on-filesystem", action="store_true", help="with --logical/--physical"
                   + (" or --from-host" if from_host else "") + ": the log is a file on a file system on such a disk "
                   "(a PATH on one says so itself)")
    asm = p.add_argument_group("ASM")
    asm.add_argument("--asm-discovery", choices=asmrules.DISCOVERY, help="how ASM finds the disk: answers which "
                     "disk group CREATE DISKGROUP makes of it, what that group takes, and what the spfile meets")
    asm.add_argument("--asmlib-logical-block-size", action="store_true",
                     help="ORACLEASM_USE_LOGICAL_BLOCK_SIZE=true in /etc/sysconfig/oracleasm (ASMLib only)")
    asm.add_argument("--asm-version", help="ASM's version (11.2, 12.1, 12.2, 19, ...; default: 12.2 and later, "
                     "which has LOGICAL_SECTOR_SIZE)")
    asm.add_argument("--asm-sector-size", type=_size, help="SECTOR_SIZE of the ASM disk group holding the log")
    asm.add_argument("--asm-logical-sector-size", type=_size,
                     help="LOGICAL_SECTOR_SIZE of that disk group (ASM 12.2 and later; not named: the model assumes "
                     "SECTOR_SIZE)")
    asm.add_argument("--operation", default="create", metavar="OP",
                     help="what ASM does with the disk: create (CREATE DISKGROUP, the default), add (ALTER DISKGROUP "
                     "... ADD DISK) or mount (ALTER DISKGROUP ... MOUNT; a disk that now reports another sector size "
                     "than the group's is ORA-15085); add and mount need the group's recorded --asm-sector-size")
    asm.add_argument("--compatible-asm", metavar="VERSION", help="the group's COMPATIBLE.ASM (e.g. 11.1, 19.0): "
                     "CREATE DISKGROUP naming a SECTOR_SIZE of 4096 (--asm-sector-size) needs 11.2 or higher; not "
                     "checked otherwise (a warning says so), nor when not given")
    asm.add_argument("--compatible-rdbms", metavar="VERSION", help="the group's COMPATIBLE.RDBMS, as "
                     "--compatible-asm")
    p.add_argument("--file", default="+REDO", help="the redo log's file name, as ORA-01378 names it (default "
                   "+REDO); inside ASM a name +GROUP/... also names the disk group, as ORA-15085 does (default "
                   "REDO)")
    p.add_argument("--members-sector", type=_size, metavar="BYTES", help="ALTER DATABASE ADD LOGFILE MEMBER: the "
                   "physical sector of the disks the log group's other members are on (ORA-01168 when this disk's "
                   "differs)")
    p.add_argument("--redo-size", type=_size, help="also report redo wastage for one write of this many bytes")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    return p


def _asm_options(args) -> bool:
    """Whether the command line puts the log in an ASM disk group."""
    return bool(args.asm_discovery or args.asm_sector_size or args.asm_logical_sector_size or args.asm_version)


def sizes_of(args, from_host) -> tuple[int, int, int | None, list[str]]:
    """(logical, physical, minimum I/O, rules the sizes came through) from the command line."""
    given = args.logical or args.physical
    if getattr(args, "from_host", None):
        if given or not args.device:
            raise Usage("with --from-host FILE give the disk's name in it (e.g. sdb), not --logical/--physical")
        logical, physical, min_io = from_host(args.from_host, args.device)
        return logical, physical, args.min_io or min_io, []
    if args.on_filesystem and not (given or args.device):
        raise Usage("--on-filesystem says the log is a file on a file system on a disk of the sizes given: give "
                    "--logical and --physical too, or a PATH on the file system instead")
    if args.device:
        if given:
            raise Usage("give a DEVICE or --logical/--physical, not both")
        if stat.S_ISBLK(_stat(args.device).st_mode):
            if args.on_filesystem:
                raise Usage(f"{args.device} is a raw device: for a file on a file system on it give a PATH on that "
                            f"file system instead (or --logical/--physical with --on-filesystem)")
            if args.io_mode == "buffered" and not _asm_options(args):
                raise Usage(f"--io-mode buffered is a file system's (FILESYSTEMIO_OPTIONS NONE or ASYNCH, for file "
                            f"system files) and a redo log on the raw device {args.device} is written with direct "
                            f"I/O: drop --io-mode buffered, or give a PATH on a file system on it")
            logical, physical = device_sectors(args.device)
            return logical, physical, args.min_io or device_min_io(args.device), []
        logical, physical, min_io = filesystem_sectors(args.device)
        return logical, physical, args.min_io or min_io, ["filesystem-device"]
    if args.logical and args.physical:
        return args.logical, args.physical, args.min_io, []
    raise Usage("give a DEVICE, or both --logical and --physical")


def asm_group_of(args, logical: int, physical: int) -> asmrules.DiskGroup | None:
    """The disk group the command line describes (None: not in ASM)."""
    if args.asmlib_logical_block_size and args.asm_discovery != "asmlib":
        raise Usage("--asmlib-logical-block-size is an ASMLib setting: it needs --asm-discovery asmlib")
    compatible = (args.compatible_asm, args.compatible_rdbms)
    if not _asm_options(args):
        return rules.asm_group(None, compatible=compatible)  # None, or COMPATIBLE without a group: bad input
    try:
        version = asmrules.parse_version(args.asm_version)
        return asmrules.group_for(logical, physical, args.asm_discovery, version, args.asmlib_logical_block_size,
                                  args.asm_sector_size, args.asm_logical_sector_size, args.device or "DISK",
                                  compatible)
    except asmrules.AsmUsageError as e:
        raise Usage(str(e)) from None


def where(args, via: list[str], group: asmrules.DiskGroup | None) -> dict:
    """What rules.evaluate is told about where the log is and how it is written, from the command
    line: a PATH on a file system is a file there, unless the ASM options say the log is in ASM (the
    path then only names the disk whose sizes to read)."""
    on_filesystem = args.on_filesystem or ("filesystem-device" in via and group is None)
    return {"io_mode": args.io_mode, "on_filesystem": on_filesystem, "operation": args.operation,
            "platform": args.platform, "file": args.file, "disk": args.device}


def report(args, sizes, group) -> dict:
    """Every BLOCKSIZE in the group a discovery method gives: allowed, or allowed only with the
    override, and what the spfile and a file of 512-byte blocks meet there."""
    logical, physical, min_io, via = sizes
    context = where(args, via, group)
    redo = []
    # A row is a BLOCKSIZE in the group this discovery method gives: it rests on what the method
    # shows ASM (through AFD or udev the kernel's sizes, assumed) as well as on the verdict's rules.
    discovered = list(group.rests_on)
    # The ASM instance's own _disk_sector_size_override is the group's, as given; a row is then with
    # and without the database's.
    in_asm = args.override and args.override_in in ("asm", "both")
    for bs in rules.VALID_BLOCKSIZES:
        plain = rules.evaluate(logical, physical, bs, in_asm, min_io=min_io, group=group, via=via,
                               override_in="asm" if in_asm else "database", **context)
        forced = rules.evaluate(logical, physical, bs, True, min_io=min_io, group=group, via=via,
                                override_in="both" if in_asm else "database", **context)
        redo.append({"blocksize": bs, "allowed": plain.allowed,
                     "needs_override": forced.allowed is True and plain.allowed is False,
                     "error": plain.error, "evidence": rules.weakest(plain.claims.get("allowed", []) + discovered),
                     "error_evidence": rules.weakest(plain.claims.get("error", []) + discovered) if plain.error
                     else None, "warnings": plain.warnings})
    default = rules.evaluate(logical, physical, None, args.override, min_io=min_io, group=group, via=via,
                             override_in=args.override_in, **context)
    files = [asdict(f) | {"evidence": rules.weakest(f.rests_on + discovered)} for f in asmrules.files_in(group)]
    return {"disk": {"name": args.device, "logical": logical, "physical": physical, "min_io": min_io},
            "asm": {"discovery": args.asm_discovery, "version": args.asm_version,
                    "asmlib_logical_block_size": args.asmlib_logical_block_size, "sector_size": group.sector_size,
                    "logical_sector_size": group.logical_sector_size, "reads": list(group.reads or ()),
                    "evidence": rules.weakest(group.rests_on), "rests_on": rules.cited(group.rests_on)},
            "default_blocksize": default.default_blocksize, "redo": redo, "files": files}


def _state(allowed: bool | None) -> str:
    return "not known" if allowed is None else "allowed" if allowed else "refused"


def _print_verdict(verdict: rules.Verdict, wastage) -> None:
    print(f"BLOCKSIZE {verdict.blocksize}: {_state(verdict.allowed)} (default {verdict.default_blocksize}; host "
          f"sector {verdict.host_sector}, media sector {verdict.media_sector}; evidence: {verdict.evidence})")
    others = {claim: verdict.evidence_of(claim) for claim in ("error", "default", "sizes")
              if claim != "error" or verdict.error}
    if any(e not in (None, verdict.evidence) for e in others.values()):
        print("evidence by claim: " + ", ".join(f"{claim} {e}" for claim, e in
                                                 [("allowed", verdict.evidence), *others.items()] if e))
    if wastage:
        print(f"one write of {wastage.redo_bytes} B of redo: {wastage.blocks} blocks, {wastage.bytes_written} B "
              f"written, {wastage.wastage_bytes} B wasted ({wastage.wastage_pct}%)")


def _print_report(out: dict) -> None:
    d, a = out["disk"], out["asm"]
    print(f"{d['name'] or 'disk'}: logical sector {d['logical']}, physical {d['physical']}"
          + (f", minimum I/O {d['min_io']}" if d["min_io"] else ""))
    how = f"through {a['discovery']}" if a["discovery"] else "named"
    logical = f", LOGICAL_SECTOR_SIZE {a['logical_sector_size']}" if a["logical_sector_size"] else ""
    reads = f"; ASM reads {a['reads'][0]}/{a['reads'][1]} from the disk" if a["reads"] else ""
    print(f"ASM {a['version'] or '12.2+'} disk group ({how}): SECTOR_SIZE {a['sector_size']}{logical}{reads} "
          f"(evidence: {a['evidence']})")
    for r in out["redo"]:
        state = "only with _disk_sector_size_override" if r["needs_override"] else _state(r["allowed"])
        default = ", the default" if r["blocksize"] == out["default_blocksize"] else ""
        error_evidence = f"; the error's: {r['error_evidence']}" if r["error_evidence"] not in (None, r["evidence"]) \
            else ""
        print(f"  redo BLOCKSIZE {r['blocksize']:>4}: {state}{default} (evidence: {r['evidence']}{error_evidence})"
              + (f": {r['error']}" if r["error"] and not r["allowed"] else ""))
    for f in out["files"]:
        print(f"  {f['what']}: {f['said']} (evidence: {f['evidence']})")


def main(argv: list[str] | None = None, prog: str = "redo-check", from_host=None) -> int:
    args = build_parser(prog, from_host is not None).parse_args(argv)  # bad flags exit 2 through argparse
    try:
        sizes = sizes_of(args, from_host)
        logical, physical, min_io, via = sizes
        rules.check_sizes(logical, physical, args.blocksize, min_io, args.platform)  # before ASM reads them
        if args.asm_discovery and args.redo_size:
            raise Usage("--redo-size reports the wastage of one BLOCKSIZE: run it without --asm-discovery")
        if args.asm_discovery and args.members_sector:
            raise Usage("--members-sector judges one log member: run it without --asm-discovery (give the group's "
                        "--asm-sector-size instead)")
        group = asm_group_of(args, logical, physical)
        verdict = rules.evaluate(logical, physical, args.blocksize, args.override, min_io=min_io, group=group,
                                 via=via, override_in=args.override_in, members_sector=args.members_sector,
                                 **where(args, via, group))
        if args.asm_discovery and verdict.asm_refusal:  # one line, not a table of refusals
            raise asmrules.AsmError(verdict.error, verdict.claims.get("allowed", []))
        wastage = rules.redo_wastage(args.redo_size, verdict.blocksize) if args.redo_size else None
    except Usage as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return EXIT_USAGE
    except asmrules.AsmError as e:  # the disk cannot be in such a group at all
        # The refusal's evidence and the rules it rests on, as a verdict gives its own (a 16 KiB
        # sector's ORA-59012 is assumed: its text names no size).
        if args.json:
            print(json.dumps({"allowed": False, "error": str(e), "asm": None, "evidence": rules.weakest(e.rules),
                              "rests_on": rules.cited(e.rules)}))
        else:
            print(f"refused (evidence: {rules.weakest(e.rules)}; rests on {', '.join(dict.fromkeys(e.rules))})")
        print(str(e), file=sys.stderr)
        return EXIT_REFUSED
    if args.asm_discovery:
        out = report(args, sizes, group) | {"blocksize": verdict.blocksize, "allowed": verdict.allowed}
        if args.json:
            print(json.dumps(out))
        else:
            _print_report(out)
    elif args.json:
        print(json.dumps(verdict.as_json() | ({"wastage": asdict(wastage)} if wastage else {})))
    else:
        _print_verdict(verdict, wastage)
    for w in verdict.warnings:
        print(f"{prog}: warning: {w}", file=sys.stderr)
    if verdict.error:
        print(verdict.error, file=sys.stderr)
    if verdict.allowed is None:
        return EXIT_NOT_KNOWN
    return EXIT_ALLOWED if verdict.allowed else EXIT_REFUSED


if __name__ == "__main__":
    sys.exit(main())
