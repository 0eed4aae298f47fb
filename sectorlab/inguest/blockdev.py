"""What the DBA's procedures (redodisk.py: provision-redo-disk; nvmeformat.py: reformat-nvme) share:
the whole disk named on the command line and whether it is safe to write (the root disk, mounts,
swap and device-mapper/md holders are never overridable), the signatures wipefs finds, the lock
that keeps udev off the disk, running a command, and the command line's contract: run_tool() does
the root check and turns the outcome into the exit status.

Exit status: 0 done (or nothing to do), 1 the work failed part-way (the message says where it
stands), 2 refused: bad input or an unsafe disk, and nothing was written.

Standard library only, installed beside the procedures and rules.py in /usr/local/lib/sectorlab/.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
import subprocess
import sys
from dataclasses import asdict, dataclass

try:
    from . import rules
except ImportError:  # flat in a guest (see __init__.py)
    import rules

EXIT_DONE, EXIT_FAILED, EXIT_REFUSED = 0, 1, 2
UDEV_RULES_DIR = "/etc/udev/rules.d"


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


def sysfs_of(st: os.stat_result) -> str:
    """The sysfs directory of the block device `st` is the stat of (a disk or a partition)."""
    return os.path.realpath(f"/sys/dev/block/{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}")


def whole_disk(path: str) -> Disk:
    """The whole disk at `path`, or Refused naming what it is instead."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise Refused(f"{path}: {e.strerror}: expected a whole disk such as /dev/vdb ('lsblk -d' lists them)") from e
    if not stat.S_ISBLK(st.st_mode):
        raise Refused(f"{path} is not a block device: expected a whole disk such as /dev/vdb")
    sysfs = sysfs_of(st)
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
# The command line

def run_tool(prog: str, argv: list[str], make_parser, work, show) -> int:
    """One procedure as a command: parse `argv` with make_parser(prog) (bad flags exit 2 through
    argparse), refuse without root, then work(args, prog); its result printed by show(result), or
    as one JSON object with --json, after its warnings (if it has any) on stderr. The exit status."""
    args = make_parser(prog).parse_args(argv)
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
