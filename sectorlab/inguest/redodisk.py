#!/usr/bin/python3
"""provision-redo-disk, the DBA's procedure for a new redo disk as seed 000 walks through it on a
P3700: give the disk a GPT label and one partition at sector 2048, check its alignment with `parted
align-check`, and hand the partition to the database's owner with a udev rule matched by the disk's
serial. It ends with what the guest now sees and the redo BLOCKSIZE the rules engine (rules.py) picks
for it. reformat-nvme (nvmeformat.py) may come first, to switch an NVMe namespace's sector size.

Standard library only: installed into the lab's guest images as /usr/local/lib/sectorlab/redodisk.py
beside blockdev.py (the block-device helpers and the exit status both commands share) and rules.py,
byte-compiled, and run by the launcher /usr/local/sbin/provision-redo-disk (`python3 redodisk.py
ARGS` works too). It also runs on a database server with python3, parted, util-linux and udev.
Exit status: see blockdev.py (0 done, 1 failed part-way, 2 refused).
"""

from __future__ import annotations

import argparse
import grp
import json
import os
import pwd
import re
import stat
import sys
import time
from dataclasses import dataclass, field

try:
    from . import blockdev, redocheck, rules
except ImportError:  # flat in a guest (see __init__.py)
    import blockdev
    import redocheck
    import rules

COMMAND = "provision-redo-disk"
PARTITION_NAME = "redo"
DEFAULT_START = "2048s"  # seed 000: `mkpart primary 2048s 100%` (1 MiB on 512-byte sectors, 8 MiB on 4Kn)
# GPT: the protective MBR and the header take a sector each, then 16 KiB of partition entries
# (LBA 34 is the first usable sector on 512-byte sectors, LBA 6 on 4 KiB); the backup at the end.
GPT_ENTRIES_BYTES = 16384


@dataclass
class Layout:
    label: str
    partitions: list[dict]


def read_layout(disk: blockdev.Disk) -> Layout | None:
    """The disk's partition table as sfdisk reads it, or None without one."""
    proc = blockdev.run(["sfdisk", "--json", disk.path], check=False)
    if proc.returncode != 0 or not proc.stdout.strip():
        return None
    try:
        table = json.loads(proc.stdout)["partitiontable"]
    except (ValueError, KeyError) as e:
        raise blockdev.Failed(f"unexpected output of 'sfdisk --json {disk.path}': {proc.stdout[:200]!r}") from e
    return Layout(table.get("label", "?"), table.get("partitions", []))


def parse_start(text: str, logical: int) -> int:
    """The partition start in logical sectors, from '2048s' (sectors) or '1MiB', '8MiB', '4096B' (bytes)."""
    m = re.fullmatch(r"\s*(\d+)\s*(s|B|KiB|MiB|GiB)\s*", text)
    if not m:
        raise blockdev.Refused(f"--start {text!r}: expected sectors like 2048s or a size like 1MiB "
                               f"(B, KiB, MiB, GiB)")
    value, unit = int(m.group(1)), m.group(2)
    if unit == "s":
        return value
    nbytes = value * {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[unit]
    if nbytes % logical:
        raise blockdev.Refused(f"--start {text} is {nbytes} bytes, not a whole number of {logical}-byte logical "
                               f"sectors; give a multiple of {logical} B or a sector count like 2048s")
    return nbytes // logical


def parse_mode(text: str) -> int:
    if not re.fullmatch(r"[0-7]{3,4}", text):
        raise blockdev.Refused(f"--mode {text!r}: expected an octal mode such as 0660")
    return int(text, 8)


# The udev properties lsblk takes a disk's SERIAL from, in its order: ID_SCSI_SERIAL (VPD page
# 0x80) for SCSI, whose ID_SERIAL_SHORT is the NAA identifier; ID_SERIAL_SHORT for NVMe;
# ID_SERIAL for virtio. Partitions inherit them (60-persistent-storage.rules imports ID_*).
SERIAL_KEYS = ("ID_SCSI_SERIAL", "ID_SERIAL_SHORT", "ID_SERIAL")


def udev_serial(disk: blockdev.Disk) -> tuple[str, str]:
    """(udev property, serial): the serial lsblk shows for the disk and the property that holds it."""
    out = blockdev.run(["udevadm", "info", "--query=property", f"--name={disk.path}"]).stdout
    props = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    for key in SERIAL_KEYS:
        if props.get(key):
            return key, props[key]
    raise blockdev.Refused(f"{disk.path} has no serial in udev ({', '.join(SERIAL_KEYS)} are all empty): the udev "
                           f"rule matches the disk by serial, so it needs one")


def rule_path(serial: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", serial)
    return os.path.join(blockdev.UDEV_RULES_DIR, f"99-sectorlab-redo-{safe}.rules")


def rule_text(key: str, serial: str, owner: str, group: str, mode: int, disk_path: str) -> str:
    return (f"# Written by provision-redo-disk: partition 1 of the disk with serial {serial} (was {disk_path})\n"
            f"# is the redo disk. Matched by serial, not by kernel name, so it holds when the disk comes back\n"
            f"# under another name.\n"
            f'ACTION=="add|change", SUBSYSTEM=="block", ENV{{DEVTYPE}}=="partition", ENV{{{key}}}=="{serial}", '
            f'ATTR{{partition}}=="1", OWNER="{owner}", GROUP="{group}", MODE="{mode:04o}"\n')


def write_rule(path: str, text: str) -> bool:
    """Write the rule file unless it already says exactly that (a re-run leaves it untouched, time
    included), then have udev read it; whether it was written."""
    try:
        with open(path) as f:
            if f.read() == text:
                return False
    except FileNotFoundError:
        pass
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)
    blockdev.run(["udevadm", "control", "--reload"])
    return True


def _wanted_layout(layout: Layout | None, start: int) -> bool:
    return (layout is not None and layout.label == "gpt" and len(layout.partitions) == 1
            and layout.partitions[0].get("start") == start and layout.partitions[0].get("name") == PARTITION_NAME)


def partition_node(disk: blockdev.Disk, number: int = 1) -> str:
    sep = "p" if disk.name[-1].isdigit() else ""
    return f"/dev/{disk.name}{sep}{number}"


def wait_for_node(path: str, timeout: float = 10.0) -> None:
    blockdev.run(["udevadm", "settle", f"--timeout={int(timeout)}"], check=False)
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise blockdev.Failed(f"{path} did not appear within {timeout:.0f} s of writing the partition table")
        time.sleep(0.1)


def parted_align_check(disk: blockdev.Disk, kind: str) -> bool:
    """`parted align-check KIND 1`. Interactively parted says '1 aligned' or '1 not aligned'; in
    script mode (parted 3.5) it prints nothing and exits 0 or 1, and an error has a message."""
    proc = blockdev.run(["parted", "-s", disk.path, "align-check", kind, "1"], check=False)
    text = (proc.stdout + proc.stderr).strip()
    if "not aligned" in text or (proc.returncode == 1 and not text):
        return False
    if proc.returncode == 0:
        return True
    raise blockdev.Failed(f"unexpected answer of 'parted -s {disk.path} align-check {kind} 1' "
                          f"(exit {proc.returncode}): {text!r}")


@dataclass
class Provisioned:
    device: str
    serial: str
    logical_block_size: int
    physical_block_size: int
    minimum_io_size: int
    partition: str
    start_sectors: int
    start_bytes: int
    size_bytes: int
    aligned: bool  # the start is a multiple of the physical sector and the minimum I/O size
    alignment_offset: int  # the kernel's /sys/block/<disk>/<partition>/alignment_offset
    parted_align_check: dict
    owner: str
    group: str
    mode: str
    udev_rule: str
    redo_blocksize: int
    redo_check: dict
    changed: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def ensure_owner(owner: str, group: str, create: bool) -> list[str]:
    """Check (and with `create`, make) the group and user; returns what was created."""
    made = []
    try:
        grp.getgrnam(group)
    except KeyError:
        if not create:
            raise blockdev.Refused(f"group {group!r} does not exist: create it (groupadd {group}) or drop "
                                   f"--no-create-user") from None
        blockdev.run(["groupadd", "--system", group])
        made.append(f"group {group}")
    try:
        pwd.getpwnam(owner)
    except KeyError:
        if not create:
            raise blockdev.Refused(f"user {owner!r} does not exist: create it (useradd -g {group} {owner}) or drop "
                                   f"--no-create-user") from None
        blockdev.run(["useradd", "--system", "--gid", group, "--no-create-home", "--shell", "/usr/sbin/nologin",
                      owner])
        made.append(f"user {owner}")
    return made


def provision(args, prog: str) -> Provisioned:
    disk = blockdev.whole_disk(args.device)
    blockdev.refuse_if_in_use(disk, prog)
    start, mode = _checked_request(args, disk)
    blockdev.run(["udevadm", "settle", "--timeout=10"], check=False)  # a previous writer's events first
    key, serial = udev_serial(disk)
    if not args.create_user:
        ensure_owner(args.owner, args.group, create=False)  # refuses before anything is written
    layout, found, keep = _what_is_there(disk, start, args.force)

    changed = ensure_owner(args.owner, args.group, create=True)
    rule = rule_path(serial)
    if write_rule(rule, rule_text(key, serial, args.owner, args.group, mode, disk.path)):
        changed.append(f"udev rule {rule}")

    part = partition_node(disk)
    if not keep:
        for old in blockdev.partitions_of(disk):
            blockdev.run(["wipefs", "--all", "--quiet", f"/dev/{os.path.basename(old)}"], check=False)
        if layout is not None or found:
            blockdev.run(["wipefs", "--all", "--quiet", disk.path])
        # -a none: the start is exactly the sector asked for (the misaligned case too); the
        # alignment is then checked, not silently fixed. parted waits for udev itself (settle).
        blockdev.run(["parted", "-s", "-a", "none", disk.path, "mklabel", "gpt", "mkpart", PARTITION_NAME,
                      f"{start}s", "100%"])
        changed.append(f"partition table (gpt, partition 1 at sector {start})")
    with blockdev.locked(disk):
        checks = {kind: parted_align_check(disk, kind) for kind in ("optimal", "minimal")}
    # A change event for the disk and its partition applies the rule (also one that changed while
    # the table did not); the settle in wait_for_node also waits for what the lock held back.
    blockdev.run(["udevadm", "trigger", "--action=change", f"--parent-match={disk.sysfs}"])
    wait_for_node(part)
    return summarize(disk, serial, part, checks, args.owner, args.group, mode, rule, changed)


def _checked_request(args, disk: blockdev.Disk) -> tuple[int, int]:
    """(start in logical sectors, mode) from the command line, or Refused: a start outside the
    GPT's usable sectors, an owner or group that is no valid name."""
    start = parse_start(args.start, disk.logical_block_size)
    mode = parse_mode(args.mode)
    first_usable = 2 + -(-GPT_ENTRIES_BYTES // disk.logical_block_size)
    last_usable = disk.size_bytes // disk.logical_block_size - first_usable
    if start < first_usable or start >= last_usable:
        raise blockdev.Refused(f"--start {args.start}: sector {start} is outside the usable area of {disk.path} "
                               f"(GPT on {disk.logical_block_size}-byte sectors: sectors {first_usable} to "
                               f"{last_usable - 1})")
    for name in (args.owner, args.group):
        if not re.fullmatch(r"[a-z_][a-z0-9_-]{0,31}", name):
            raise blockdev.Refused(f"{name!r} is not a valid user or group name "
                                   f"(lower case letters, digits, _ and -)")
    return start, mode


def _what_is_there(disk: blockdev.Disk, start: int, force: bool) -> tuple[Layout | None, list[dict], bool]:
    """(partition table, signatures on the disk, whether to keep the table as it is); Refused when
    the disk holds anything but the table asked for, unless `force`."""
    layout = read_layout(disk)
    found = blockdev.signatures(disk.path)
    # Already provisioned as asked (a re-run): the same table, and nothing written into the partition.
    inside = blockdev.signatures(partition_node(disk)) if os.path.exists(partition_node(disk)) else []
    keep = _wanted_layout(layout, start) and os.path.exists(partition_node(disk)) and not inside
    if not keep and (layout is not None or found or blockdev.partitions_of(disk)):
        what = (f"a {layout.label} partition table with {len(layout.partitions)} partition(s)"
                + (f" (the first at sector {layout.partitions[0].get('start')})" if layout.partitions else "")
                if layout else "signature(s) " + ", ".join(s.get("type", "?") for s in found))
        if inside:
            what += f", and {partition_node(disk)} holds " + ", ".join(s.get("type", "?") for s in inside)
        if not force:
            raise blockdev.Refused(f"{disk.path} holds {what}: expected an empty disk; "
                                   f"--force replaces it (its data is lost)")
    return layout, found, keep


def summarize(disk: blockdev.Disk, serial: str, part: str, checks: dict, owner: str, group: str, mode: int,
              rule: str, changed: list[str]) -> Provisioned:
    st_part = os.stat(part)
    part_sysfs = blockdev.sysfs_of(st_part)
    with open(os.path.join(part_sysfs, "start")) as f:
        start_bytes = int(f.read()) * 512
    with open(os.path.join(part_sysfs, "size")) as f:
        size_bytes = int(f.read()) * 512
    with open(os.path.join(part_sysfs, "alignment_offset")) as f:
        # Kernel 6.1 prints a partition's offset unsigned: -1 ("misaligned") shows as 4294967295.
        alignment_offset = int(f.read())
    if alignment_offset >= 1 << 31:
        alignment_offset -= 1 << 32
    granule = max(disk.physical_block_size, disk.minimum_io_size)
    aligned = start_bytes % granule == 0
    logical, physical = redocheck.device_sectors(part)
    verdict = rules.evaluate(logical, physical, file=part, min_io=disk.minimum_io_size)
    have_owner = pwd.getpwuid(st_part.st_uid).pw_name
    have_group = grp.getgrgid(st_part.st_gid).gr_name
    result = Provisioned(
        device=disk.path, serial=serial, logical_block_size=disk.logical_block_size,
        physical_block_size=disk.physical_block_size, minimum_io_size=disk.minimum_io_size, partition=part,
        start_sectors=start_bytes // disk.logical_block_size, start_bytes=start_bytes, size_bytes=size_bytes,
        aligned=aligned, alignment_offset=alignment_offset, parted_align_check=checks, owner=have_owner,
        group=have_group, mode=f"{stat.S_IMODE(st_part.st_mode):04o}", udev_rule=rule,
        redo_blocksize=verdict.default_blocksize, redo_check=verdict.as_json(), changed=changed)
    into = start_bytes % granule
    if not aligned:
        result.warnings.append(
            f"{part} starts at byte {start_bytes}, {into} bytes into a {granule}-byte {_unit_name(disk)} "
            f"(kernel alignment_offset {alignment_offset}): every write to it that is aligned to the partition "
            f"straddles physical sectors and costs the disk a read-modify-write")
    elif not checks["optimal"]:
        result.warnings.append(
            f"{part} starts at byte {start_bytes}: aligned to the {granule}-byte {_unit_name(disk)}, but not on "
            f"parted's optimal boundary (1 MiB unless the disk reports an optimal I/O size), so 'align-check "
            f"optimal' fails")
    if alignment_offset == -1:
        result.warnings.append(
            f"the kernel marks {disk.path}'s I/O limits as misaligned (alignment_offset -1), whatever the "
            f"partition's start; the start itself is {'aligned' if aligned else 'not aligned'}")
    result.warnings += verdict.warnings
    if (have_owner, have_group, stat.S_IMODE(st_part.st_mode)) != (owner, group, mode):
        raise blockdev.Failed(f"udev did not apply {rule}: {part} is {have_owner}:{have_group} "
                              f"{stat.S_IMODE(st_part.st_mode):04o}, expected {owner}:{group} {mode:04o}")
    return result


def _unit_name(disk) -> str:
    """What a partition start must be a multiple of, by name: the physical sector, or the minimum I/O
    size a device advertises above it (a QLC drive's indirection unit)."""
    return "minimum I/O size" if disk.minimum_io_size > disk.physical_block_size else "physical sector"


def print_provisioned(p: Provisioned) -> None:
    aligned = "aligned" if p.aligned else "NOT aligned"
    checks = ", ".join(f"{k} {'ok' if v else 'fails'}" for k, v in p.parted_align_check.items())
    print(f"device      {p.device} (serial {p.serial}), sectors {p.logical_block_size}/{p.physical_block_size} "
          f"(logical/physical), minimum I/O {p.minimum_io_size}")
    print(f"partition   {p.partition}: starts at sector {p.start_sectors} = byte {p.start_bytes}, "
          f"{p.size_bytes} bytes")
    print(f"alignment   {aligned} to the {_unit_name(p)}; kernel alignment_offset {p.alignment_offset}; "
          f"parted align-check: {checks}")
    print(f"owner       {p.owner}:{p.group} mode {p.mode}, by {p.udev_rule}")
    print(f"redo        BLOCKSIZE {p.redo_blocksize} (what the rules engine picks for {p.partition})")
    print("changed     " + ("; ".join(p.changed) if p.changed else "nothing (already provisioned as asked)"))


# ---------------------------------------------------------------------------------------------
# Command line

def provision_parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description="GPT label, one aligned partition, a udev rule for its "
                                "owner; then the alignment and the redo BLOCKSIZE the rules engine picks.")
    p.add_argument("device", help="the whole disk, e.g. /dev/nvme0n1")
    p.add_argument("--owner", default="oracle", help="owner of the partition (default oracle)")
    p.add_argument("--group", default="dba", help="group of the partition (default dba)")
    p.add_argument("--mode", default="0660", help="mode of the partition (default 0660)")
    p.add_argument("--start", default=DEFAULT_START,
                   help="partition start: sectors (2048s, the default) or bytes (1MiB)")
    p.add_argument("--no-create-user", dest="create_user", action="store_false",
                   help="refuse instead of creating a missing owner or group")
    p.add_argument("--force", action="store_true",
                   help="replace a partition table or signature on the disk (its data is lost)")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    return p


def main(argv: list[str] | None = None) -> int:
    return blockdev.run_tool(COMMAND, sys.argv[1:] if argv is None else argv, provision_parser, provision,
                             print_provisioned)


if __name__ == "__main__":
    sys.exit(main())
