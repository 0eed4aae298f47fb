#!/usr/bin/python3
"""The DBA's procedures for a new redo disk, as seed 000 walks through them on a P3700: reformat an
NVMe namespace to another LBA data size (`reformat-nvme`), then give the disk a GPT label and one
partition at sector 2048, check its alignment with `parted align-check`, and hand the partition to
the database's owner with a udev rule matched by the disk's serial (`provision-redo-disk`). Both end
with what the guest now sees and the redo BLOCKSIZE the rules engine (rules.py) picks for it.

Standard library only: installed into the lab's guest images as /usr/local/lib/sectorlab/inguest/redodisk.py
beside rules.py, byte-compiled, and run by the launchers /usr/local/sbin/provision-redo-disk and
/usr/local/sbin/reformat-nvme (main() dispatches on the name it was run by; `python3 redodisk.py
COMMAND ...` works too). It also runs on a database server with python3, parted, util-linux and
udev (and nvme-cli for reformat-nvme).

Exit status: 0 done (or nothing to do), 1 the work failed part-way (the message says where it
stands), 2 refused: bad input or an unsafe disk, and nothing was written.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import grp
import json
import os
import pwd
import re
import stat
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field

try:
    from . import rules
except ImportError:  # run as a script in a guest: rules.py sits beside this file
    import rules

EXIT_DONE, EXIT_FAILED, EXIT_REFUSED = 0, 1, 2
UDEV_RULES_DIR = "/etc/udev/rules.d"
PARTITION_NAME = "redo"
DEFAULT_START = "2048s"  # seed 000: `mkpart primary 2048s 100%` (1 MiB on 512-byte sectors, 8 MiB on 4Kn)
# GPT: the protective MBR and the header take a sector each, then 16 KiB of partition entries
# (LBA 34 is the first usable sector on 512-byte sectors, LBA 6 on 4 KiB); the backup at the end.
GPT_ENTRIES_BYTES = 16384
# How long the kernel may take to show a reformatted namespace's new sector size (measured ~1 s).
RESCAN_WAIT_S = 10.0


class Refused(Exception):
    """Bad input or an unsafe disk: exit 2, nothing written."""


class Failed(Exception):
    """The work itself failed: exit 1."""


def run(cmd: list[str], check: bool = True) -> subprocess.CompletedProcess:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True)
    except FileNotFoundError as e:
        raise Failed(f"'{cmd[0]}' is not installed: {e.strerror}") from e
    if check and proc.returncode != 0:
        detail = (proc.stderr.strip() or proc.stdout.strip()).replace("\n", " | ")
        raise Failed(f"'{' '.join(cmd)}' exited {proc.returncode}: {detail}")
    return proc


# ---------------------------------------------------------------------------------------------
# The disk, and whether it is safe to write

@dataclass
class Disk:
    path: str  # /dev/vdb as given (resolved)
    name: str  # kernel name: vdb, sda, nvme0n1
    sysfs: str  # /sys/devices/.../block/vdb
    logical_block_size: int
    physical_block_size: int
    minimum_io_size: int
    size_bytes: int

    def attr(self, leaf: str) -> str:
        with open(os.path.join(self.sysfs, leaf)) as f:
            return f.read().strip()


def _sysfs_of(st: os.stat_result) -> str:
    return os.path.realpath(f"/sys/dev/block/{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}")


def whole_disk(path: str) -> Disk:
    """The whole disk at `path`, or Refused naming what it is instead."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise Refused(f"{path}: {e.strerror}: expected a whole disk such as /dev/vdb ('lsblk -d' lists them)") from e
    if not stat.S_ISBLK(st.st_mode):
        raise Refused(f"{path} is not a block device: expected a whole disk such as /dev/vdb")
    sysfs = _sysfs_of(st)
    if os.path.exists(os.path.join(sysfs, "partition")):
        parent = os.path.basename(os.path.dirname(sysfs))
        raise Refused(f"{path} is a partition of /dev/{parent}: give the whole disk, /dev/{parent}")
    disk = Disk(path, os.path.basename(sysfs), sysfs, 0, 0, 0, 0)
    disk.logical_block_size = int(disk.attr("queue/logical_block_size"))
    disk.physical_block_size = int(disk.attr("queue/physical_block_size"))
    disk.minimum_io_size = int(disk.attr("queue/minimum_io_size"))
    disk.size_bytes = int(disk.attr("size")) * 512  # sysfs counts 512-byte units on every disk
    if disk.size_bytes == 0:
        raise Refused(f"{path} has no medium (size 0)")
    return disk


def _disks_under(sysfs: str) -> set[str]:
    """The whole disks a block device lives on: through partitions and device-mapper/md slaves."""
    if os.path.exists(os.path.join(sysfs, "partition")):
        sysfs = os.path.dirname(sysfs)
    slaves = os.path.join(sysfs, "slaves")
    below = os.listdir(slaves) if os.path.isdir(slaves) else []
    if not below:
        return {os.path.basename(sysfs)}
    found: set[str] = set()
    for name in below:
        found |= _disks_under(os.path.realpath(os.path.join(slaves, name)))
    return found


def _dev_disks(major_minor: str) -> set[str]:
    path = f"/sys/dev/block/{major_minor}"
    return _disks_under(os.path.realpath(path)) if os.path.exists(path) else set()


def root_disks() -> set[str]:
    st = os.stat("/")
    return _dev_disks(f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}")


def uses_of(disk: Disk) -> list[str]:
    """Mounts, swap and device-mapper/md holders on the disk or its partitions."""
    uses = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if disk.name in _dev_disks(fields[2]):
                uses.append(f"mounted at {fields[4]}")
    try:
        with open("/proc/swaps") as f:
            for line in f.readlines()[1:]:
                dev = line.split()[0]
                if os.path.exists(dev) and disk.name in _dev_disks(_major_minor(dev)):
                    uses.append(f"swap on {dev}")
    except OSError:
        pass
    for sysfs in [disk.sysfs] + partitions_of(disk):
        holders = os.path.join(sysfs, "holders")
        for holder in sorted(os.listdir(holders)) if os.path.isdir(holders) else []:
            uses.append(f"held by /dev/{holder}")
    return uses


def _major_minor(dev: str) -> str:
    st = os.stat(dev)
    return f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"


def partitions_of(disk: Disk) -> list[str]:
    """sysfs directories of the disk's partitions as the kernel has them."""
    return sorted(os.path.join(disk.sysfs, e) for e in os.listdir(disk.sysfs)
                  if os.path.exists(os.path.join(disk.sysfs, e, "partition")))


def signatures(device: str) -> list[dict]:
    """What wipefs finds on the device (partition tables and filesystem/RAID/LVM signatures)."""
    proc = run(["wipefs", "--no-act", "--json", device])
    if not proc.stdout.strip():
        return []
    try:
        return json.loads(proc.stdout).get("signatures", [])
    except ValueError as e:
        raise Failed(f"unexpected output of 'wipefs --no-act --json {device}': {proc.stdout[:200]!r}") from e


def refuse_if_in_use(disk: Disk, prog: str) -> None:
    """Never forced: the root disk, a mounted disk, one that swap or device-mapper use."""
    if disk.name in root_disks():
        raise Refused(f"{disk.path} is the root disk (/ is on it): expected a data disk; 'lsblk' lists the others")
    uses = uses_of(disk)
    if uses:
        raise Refused(f"{disk.path} is in use ({'; '.join(uses)}): unmount it or stop what holds it before "
                      f"running {prog} on it")


@contextlib.contextmanager
def locked(disk: Disk):
    """An exclusive BSD lock on the whole disk (systemd's "locking block device access"): while it
    is held, udevd does not process the disk's events, and when a writer closes the disk it does
    not re-read the partition table. parted opens the disk read-write even for align-check; without
    the lock, udev's re-read on that close removed and re-added the partition while this tool (or
    the next command) looked at it. Not held while parted writes the table: parted then waits for
    udev itself (udevadm settle), which would wait for the events the lock holds back."""
    fd = os.open(disk.path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


# ---------------------------------------------------------------------------------------------
# provision-redo-disk

@dataclass
class Layout:
    label: str
    partitions: list[dict]


def read_layout(disk: Disk) -> Layout | None:
    """The disk's partition table as sfdisk reads it, or None without one."""
    proc = run(["sfdisk", "--json", disk.path], check=False)
    if proc.returncode != 0 or not proc.stdout.strip():
        return None
    try:
        table = json.loads(proc.stdout)["partitiontable"]
    except (ValueError, KeyError) as e:
        raise Failed(f"unexpected output of 'sfdisk --json {disk.path}': {proc.stdout[:200]!r}") from e
    return Layout(table.get("label", "?"), table.get("partitions", []))


def parse_start(text: str, logical: int) -> int:
    """The partition start in logical sectors, from '2048s' (sectors) or '1MiB', '8MiB', '4096B' (bytes)."""
    m = re.fullmatch(r"\s*(\d+)\s*(s|B|KiB|MiB|GiB)\s*", text)
    if not m:
        raise Refused(f"--start {text!r}: expected sectors like 2048s or a size like 1MiB (B, KiB, MiB, GiB)")
    value, unit = int(m.group(1)), m.group(2)
    if unit == "s":
        return value
    nbytes = value * {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[unit]
    if nbytes % logical:
        raise Refused(f"--start {text} is {nbytes} bytes, not a whole number of {logical}-byte logical sectors; "
                      f"give a multiple of {logical} B or a sector count like 2048s")
    return nbytes // logical


def parse_mode(text: str) -> int:
    if not re.fullmatch(r"[0-7]{3,4}", text):
        raise Refused(f"--mode {text!r}: expected an octal mode such as 0660")
    return int(text, 8)


# The udev properties lsblk takes a disk's SERIAL from, in its order: ID_SCSI_SERIAL (VPD page
# 0x80) for SCSI, whose ID_SERIAL_SHORT is the NAA identifier; ID_SERIAL_SHORT for NVMe;
# ID_SERIAL for virtio. Partitions inherit them (60-persistent-storage.rules imports ID_*).
SERIAL_KEYS = ("ID_SCSI_SERIAL", "ID_SERIAL_SHORT", "ID_SERIAL")


def udev_serial(disk: Disk) -> tuple[str, str]:
    """(udev property, serial): the serial lsblk shows for the disk and the property that holds it."""
    props = dict(line.split("=", 1) for line in
                 run(["udevadm", "info", "--query=property", f"--name={disk.path}"]).stdout.splitlines() if "=" in line)
    for key in SERIAL_KEYS:
        if props.get(key):
            return key, props[key]
    raise Refused(f"{disk.path} has no serial in udev ({', '.join(SERIAL_KEYS)} are all empty): the udev rule "
                  f"matches the disk by serial, so it needs one")


def rule_path(serial: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", serial)
    return os.path.join(UDEV_RULES_DIR, f"99-sectorlab-redo-{safe}.rules")


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
    run(["udevadm", "control", "--reload"])
    return True


def _wanted_layout(layout: Layout | None, start: int) -> bool:
    return (layout is not None and layout.label == "gpt" and len(layout.partitions) == 1
            and layout.partitions[0].get("start") == start and layout.partitions[0].get("name") == PARTITION_NAME)


def partition_node(disk: Disk, number: int = 1) -> str:
    sep = "p" if disk.name[-1].isdigit() else ""
    return f"/dev/{disk.name}{sep}{number}"


def wait_for_node(path: str, timeout: float = 10.0) -> None:
    run(["udevadm", "settle", f"--timeout={int(timeout)}"], check=False)
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise Failed(f"{path} did not appear within {timeout:.0f} s of writing the partition table")
        time.sleep(0.1)


def parted_align_check(disk: Disk, kind: str) -> bool:
    """`parted align-check KIND 1`. Interactively parted says '1 aligned' or '1 not aligned'; in
    script mode (parted 3.5) it prints nothing and exits 0 or 1, and an error has a message."""
    proc = run(["parted", "-s", disk.path, "align-check", kind, "1"], check=False)
    text = (proc.stdout + proc.stderr).strip()
    if "not aligned" in text or (proc.returncode == 1 and not text):
        return False
    if proc.returncode == 0:
        return True
    raise Failed(f"unexpected answer of 'parted -s {disk.path} align-check {kind} 1' "
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
            raise Refused(f"group {group!r} does not exist: create it (groupadd {group}) or drop --no-create-user") \
                from None
        run(["groupadd", "--system", group])
        made.append(f"group {group}")
    try:
        pwd.getpwnam(owner)
    except KeyError:
        if not create:
            raise Refused(f"user {owner!r} does not exist: create it (useradd -g {group} {owner}) or drop "
                          f"--no-create-user") from None
        run(["useradd", "--system", "--gid", group, "--no-create-home", "--shell", "/usr/sbin/nologin", owner])
        made.append(f"user {owner}")
    return made


def provision(args, prog: str) -> Provisioned:
    disk = whole_disk(args.device)
    refuse_if_in_use(disk, prog)
    start = parse_start(args.start, disk.logical_block_size)
    mode = parse_mode(args.mode)
    first_usable = 2 + -(-GPT_ENTRIES_BYTES // disk.logical_block_size)
    last_usable = disk.size_bytes // disk.logical_block_size - first_usable
    if start < first_usable or start >= last_usable:
        raise Refused(f"--start {args.start}: sector {start} is outside the usable area of {disk.path} "
                      f"(GPT on {disk.logical_block_size}-byte sectors: sectors {first_usable} to {last_usable - 1})")
    for name in (args.owner, args.group):
        if not re.fullmatch(r"[a-z_][a-z0-9_-]{0,31}", name):
            raise Refused(f"{name!r} is not a valid user or group name (lower case letters, digits, _ and -)")
    run(["udevadm", "settle", "--timeout=10"], check=False)  # a previous writer's events first
    key, serial = udev_serial(disk)
    if not args.create_user:
        ensure_owner(args.owner, args.group, create=False)  # refuses before anything is written

    layout = read_layout(disk)
    found = signatures(disk.path)
    # Already provisioned as asked (a re-run): the same table, and nothing written into the partition.
    inside = signatures(partition_node(disk)) if os.path.exists(partition_node(disk)) else []
    keep = _wanted_layout(layout, start) and os.path.exists(partition_node(disk)) and not inside
    if not keep and (layout is not None or found or partitions_of(disk)):
        what = (f"a {layout.label} partition table with {len(layout.partitions)} partition(s)"
                + (f" (the first at sector {layout.partitions[0].get('start')})" if layout.partitions else "")
                if layout else "signature(s) " + ", ".join(s.get("type", "?") for s in found))
        if inside:
            what += f", and {partition_node(disk)} holds " + ", ".join(s.get("type", "?") for s in inside)
        if not args.force:
            raise Refused(f"{disk.path} holds {what}: expected an empty disk; --force replaces it (its data is lost)")

    changed = ensure_owner(args.owner, args.group, create=True)
    rule = rule_path(serial)
    if write_rule(rule, rule_text(key, serial, args.owner, args.group, mode, disk.path)):
        changed.append(f"udev rule {rule}")

    part = partition_node(disk)
    if not keep:
        for old in partitions_of(disk):
            run(["wipefs", "--all", "--quiet", f"/dev/{os.path.basename(old)}"], check=False)
        if layout is not None or found:
            run(["wipefs", "--all", "--quiet", disk.path])
        # -a none: the start is exactly the sector asked for (the misaligned case too); the
        # alignment is then checked, not silently fixed. parted waits for udev itself (settle).
        run(["parted", "-s", "-a", "none", disk.path, "mklabel", "gpt", "mkpart", PARTITION_NAME, f"{start}s",
             "100%"])
        changed.append(f"partition table (gpt, partition 1 at sector {start})")
    with locked(disk):
        checks = {kind: parted_align_check(disk, kind) for kind in ("optimal", "minimal")}
    # A change event for the disk and its partition applies the rule (also one that changed while
    # the table did not); the settle in wait_for_node also waits for what the lock held back.
    run(["udevadm", "trigger", "--action=change", f"--parent-match={disk.sysfs}"])
    wait_for_node(part)
    return summarize(disk, serial, part, checks, args.owner, args.group, mode, rule, changed)


def summarize(disk: Disk, serial: str, part: str, checks: dict, owner: str, group: str, mode: int, rule: str,
              changed: list[str]) -> Provisioned:
    st_part = os.stat(part)
    part_sysfs = _sysfs_of(st_part)
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
    logical, physical = rules.device_sectors(part)
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
        raise Failed(f"udev did not apply {rule}: {part} is {have_owner}:{have_group} "
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
# reformat-nvme

NVME_NAMESPACE = re.compile(r"nvme(\d+)n(\d+)")


def nvme_transport(disk: Disk) -> str:
    """'pcie', 'tcp', 'rdma', 'fc' or 'loop', from the controller (or, for a multipath head, its paths)."""
    device = os.path.realpath(os.path.join(disk.sysfs, "device"))
    candidates = [device] + sorted(os.path.join(device, e) for e in os.listdir(device) if re.fullmatch(r"nvme\d+", e))
    for ctrl in candidates:
        try:
            with open(os.path.join(ctrl, "transport")) as f:
                return f.read().strip()
        except OSError:
            continue
    raise Failed(f"{disk.path}: cannot tell its NVMe transport (no 'transport' under {device})")


def nvme_controller(disk: Disk) -> str:
    return "/dev/" + os.path.basename(os.path.realpath(os.path.join(disk.sysfs, "device")))


class UnexpectedOutput(Failed):
    """A tool printed something this module cannot read; `why` says what was wrong with it."""

    def __init__(self, command: str, why: str, text: str):
        self.why = why
        super().__init__(f"unexpected output of '{command}': {why}: {text.strip()[:200]!r}")


def _whole(value, lo: int, hi: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and lo <= value <= hi


def parse_lba_formats(text: str, command: str) -> tuple[int, list[dict]]:
    """(index in use, [{"index", "data_size", "metadata_size"}] of the formats the namespace lists)
    from `nvme id-ns -o json`. The one parser of that output: sectorlab.guestdisks wraps it. Whatever
    the text, it returns or raises UnexpectedOutput naming the command (fuzzed in the unit tests)."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise UnexpectedOutput(command, f"not JSON ({e})", text) from e
    if not isinstance(data, dict) or "flbas" not in data or not isinstance(data.get("lbafs"), list):
        raise UnexpectedOutput(command, "no 'flbas' and 'lbafs'", text)
    nlbaf, flbas = data.get("nlbaf", len(data["lbafs"]) - 1), data["flbas"]
    if not _whole(nlbaf, 0, 63) or not _whole(flbas, 0, 255):
        raise UnexpectedOutput(command, f"nlbaf {nlbaf!r} and flbas {flbas!r}: expected small whole numbers",
                               text)
    formats = []
    for i, f in enumerate(data["lbafs"][:nlbaf + 1]):
        # LBADS is a power of two's exponent (2^9 = 512 B and up; 0: a format not in use).
        if not isinstance(f, dict) or not _whole(f.get("ds"), 0, 31) or not _whole(f.get("ms", 0), 0, 1 << 16):
            raise UnexpectedOutput(command, f"LBA format {i} is {f!r}: expected 'ds' (0-31) and 'ms' whole "
                                            f"numbers", text)
        formats.append({"index": i, "data_size": 1 << f["ds"], "metadata_size": f.get("ms", 0)})
    in_use = flbas & 0x0F
    if in_use >= len(formats):
        raise UnexpectedOutput(command, f"flbas selects LBA format {in_use} of {len(formats)}", text)
    return in_use, formats


def lba_formats(disk: Disk) -> tuple[int, list[dict]]:
    cmd = ["nvme", "id-ns", disk.path, "-o", "json"]
    return parse_lba_formats(run(cmd).stdout, " ".join(cmd))


def describe_formats(formats: list[dict]) -> str:
    return ", ".join(f"{f['index']}: {f['data_size']} B" + (f" + {f['metadata_size']} B metadata"
                                                               if f["metadata_size"] else "") for f in formats)


@dataclass
class Reformatted:
    device: str
    controller: str
    lba_format: int
    lbads: int
    logical_block_size: int
    physical_block_size: int
    previous_lba_format: int
    previous_logical_block_size: int
    changed: bool
    rescan: str  # "kernel" (it saw the change by itself), "ns-rescan", or "" (nothing to do)
    redo_blocksize: int


def reformat(args, prog: str) -> Reformatted:
    disk = whole_disk(args.device)
    if not NVME_NAMESPACE.fullmatch(disk.name):
        kind = ("virtio disk" if disk.name.startswith("vd") else "SCSI disk" if disk.name.startswith("sd")
                else "not NVMe")
        raise Refused(f"{disk.path} is not an NVMe namespace ({kind}): expected /dev/nvmeXnY on a PCIe NVMe "
                      f"controller ('nvme list' lists them)")
    transport = nvme_transport(disk)
    if transport != "pcie":
        raise Refused(f"{disk.path} is an NVMe/{transport.upper()} namespace: its sector sizes come from the "
                      f"target's backing disk, which decides them; change that disk (in the lab: the nvme-tcp "
                      f"disk's geometry in the lab definition), not the namespace")
    refuse_if_in_use(disk, prog)
    in_use, formats = lba_formats(disk)
    wanted = [f for f in formats if f["data_size"] == args.lbads and f["metadata_size"] == 0]
    if not wanted:
        raise Refused(f"{disk.path} lists no LBA format with {args.lbads}-byte data and no metadata; it lists "
                      f"{describe_formats(formats)}")
    target = wanted[0]["index"]
    controller = nvme_controller(disk)
    previous = formats[in_use]
    if in_use == target:
        return Reformatted(disk.path, controller, target, args.lbads, disk.logical_block_size,
                           disk.physical_block_size, in_use, previous["data_size"], False, "",
                           rules.evaluate(disk.logical_block_size, disk.physical_block_size).default_blocksize)
    found = signatures(disk.path)
    if (found or partitions_of(disk)) and not args.force:
        what = ", ".join(s.get("type", "?") for s in found) or "partitions"
        raise Refused(f"{disk.path} holds {what}: a format erases the namespace; --force formats it anyway")
    for part in partitions_of(disk):  # the kernel must not keep partitions of the old format
        run(["wipefs", "--all", "--quiet", f"/dev/{os.path.basename(part)}"], check=False)
    if found:
        run(["wipefs", "--all", "--quiet", disk.path], check=False)
    run(["nvme", "format", disk.path, f"--lbaf={target}", "--ses=0", "--force"])
    how = "kernel"
    if not _wait_logical(disk, args.lbads, RESCAN_WAIT_S):
        how = "ns-rescan"
        run(["nvme", "ns-rescan", controller])
        if not _wait_logical(disk, args.lbads, RESCAN_WAIT_S):
            raise Failed(f"{disk.path}: formatted to LBA format {target} ({args.lbads} B), but the kernel still "
                         f"shows {disk.attr('queue/logical_block_size')}-byte sectors after 'nvme ns-rescan "
                         f"{controller}'; a controller reset (echo 1 > /sys/class/nvme/"
                         f"{os.path.basename(controller)}/reset_controller) or a reboot should show it")
    run(["udevadm", "settle", "--timeout=10"], check=False)
    logical = int(disk.attr("queue/logical_block_size"))
    physical = int(disk.attr("queue/physical_block_size"))
    now, _ = lba_formats(disk)
    if now != target:
        raise Failed(f"{disk.path}: after the format the namespace uses LBA format {now}, not {target}")
    return Reformatted(disk.path, controller, target, args.lbads, logical, physical, in_use,
                       previous["data_size"], True, how, rules.evaluate(logical, physical).default_blocksize)


def _wait_logical(disk: Disk, size: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while int(disk.attr("queue/logical_block_size")) != size:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def print_reformatted(r: Reformatted) -> None:
    if not r.changed:
        print(f"{r.device}: already LBA format {r.lba_format} ({r.lbads} B); nothing to do")
    else:
        seen = "the kernel saw it at once" if r.rescan == "kernel" else "after 'nvme ns-rescan'"
        print(f"{r.device}: LBA format {r.previous_lba_format} ({r.previous_logical_block_size} B) -> "
              f"{r.lba_format} ({r.lbads} B); {seen}")
    print(f"{r.device}: sectors {r.logical_block_size}/{r.physical_block_size} (logical/physical); "
          f"redo BLOCKSIZE {r.redo_blocksize}")


# ---------------------------------------------------------------------------------------------
# Command lines

def _lbads(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of bytes (expected 512 or 4096)") from None
    if value < 512 or value & (value - 1):
        raise argparse.ArgumentTypeError(f"{value} is not a power of two of at least 512 (expected 512 or 4096)")
    return value


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


def reformat_parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description="Switch an NVMe namespace to the LBA format with this "
                                "data size and no metadata (nvme format; erases the namespace).")
    p.add_argument("device", help="the namespace, e.g. /dev/nvme0n1")
    p.add_argument("--lbads", type=_lbads, required=True, help="LBA data size in bytes: 512 or 4096")
    p.add_argument("--force", action="store_true", help="format a namespace that holds a partition table or signature")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    return p


COMMANDS = {"provision-redo-disk": (provision_parser, provision, print_provisioned),
            "reformat-nvme": (reformat_parser, reformat, print_reformatted)}


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    prog = prog or os.path.basename(sys.argv[0])
    if prog not in COMMANDS:  # run as redodisk.py: the command is the first argument
        if not argv or argv[0] not in COMMANDS:
            print(f"usage: {prog} {{{','.join(COMMANDS)}}} ...", file=sys.stderr)
            return EXIT_REFUSED
        prog, argv = argv[0], argv[1:]
    make_parser, work, show = COMMANDS[prog]
    args = make_parser(prog).parse_args(argv)  # bad flags exit 2 through argparse
    if os.geteuid() != 0:
        print(f"{prog}: must run as root (it writes the disk and {UDEV_RULES_DIR}): sudo {prog} ...", file=sys.stderr)
        return EXIT_REFUSED
    try:
        result = work(args, prog)
    except Refused as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return EXIT_REFUSED
    except (Failed, rules.RulesUsageError, OSError) as e:
        print(f"{prog}: failed: {e}", file=sys.stderr)
        return EXIT_FAILED
    for warning in getattr(result, "warnings", []):
        print(f"{prog}: warning: {warning}", file=sys.stderr)
    if args.json:
        print(json.dumps(asdict(result)))
    else:
        show(result)
    return EXIT_DONE


if __name__ == "__main__":
    sys.exit(main())
