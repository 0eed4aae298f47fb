"""Read-modify-write disks (`rmw = true`): a 512e disk on which a write that does not cover whole
physical sectors costs a real read first, as on a drive whose firmware must read-modify-write.

QEMU does it below the guest, in three block nodes that libvirt 9.0 cannot express, so the disk
is not in the domain: lab-up hot-plugs it over QEMU's monitor (sectorlab/lab/hotplug.py, like the
NVMe controllers, on the cold and the warm path alike), as a virtio-blk device with the disk's
serial and sector sizes, in the slot and with the device id plan() gives it:

    virtio-blk (logical/physical from the geometry)
      blkdebug, align = the physical sector: a write that does not start and end on it is padded,
        reading the rest of the sector (one read, or two when both ends are apart), then written
      throttle, in a group of `read_iops` reads per second: every read waits its turn
        qcow2 -> file (the volume Terraform created)

The reads QEMU does for the padding are its own, not the guest's, so QEMU's block statistics
(`query-blockstats`) do not count them: they count requests at the device, and a node's entry
there has only its highest write offset. What does see them is QEMU's trace event
`bdrv_co_preadv_part`, one line per read a node asks of its child in the domain's log: the
reads the throttle node is asked for, minus the ones its parent, the blkdebug node, was asked
for (the guest's), are the read-modify-write reads. The nodes are told apart by their addresses,
which `bdrv_open_common` traces when they are opened (hot-plug turns that trace on for it); lab-up
keeps them in lab.json with the QEMU process they belong to (`trace_nodes`), as virtlogd rotates
the log (at 2 MiB, keeping 3) and the lines that named them go.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from . import labdef, libvirt
from .errors import SectorlabError
from .lab.record import DiskRecord, RmwNodes

FIRST_SLOT = 0x16  # downwards: libvirt fills slots from 0x2 up; virtio-net sits at 0x17, NVMe from 0x18
LOG_DIR = Path("/var/log/libvirt/qemu")
RUN_DIR = Path("/run/libvirt/qemu")  # <domain>.pid: the domain's QEMU process
LOG_BACKUPS = 3  # virtlogd's max_backups: <domain>.log.0 (newest) .. .log.2
READ_EVENT = "bdrv_co_preadv_part"
OPEN_EVENT = "bdrv_open_common"  # traced while lab/hotplug.py opens the nodes
_OPEN_RE = re.compile(r':bdrv_open_common bs (0x[0-9a-f]+) filename "(.*)" flags 0x[0-9a-f]+ format_name "([^"]*)"$')
_READ_RE = re.compile(r":bdrv_co_preadv_part bs (0x[0-9a-f]+) offset (\d+) bytes (\d+) flags 0x[0-9a-f]+$")
START_LINE = "starting up"  # libvirt writes it to the domain's log at each QEMU start


def plan(disks: list[DiskRecord]) -> list[tuple[str, str, DiskRecord]]:
    """The VM's read-modify-write disks in a fixed order, each as (its device id, its PCI slot, the disk)."""
    rmw = sorted((d for d in disks if d.rmw), key=lambda d: d.name)
    if len(rmw) > labdef.MAX_RMW_PER_VM:
        raise SectorlabError(f"{len(rmw)} disks with rmw = true on one VM; at most {labdef.MAX_RMW_PER_VM} fit "
                             f"its PCI slots")
    return [(f"rmw{i}", f"0x{FIRST_SLOT - i:x}", d) for i, d in enumerate(rmw)]


def domain_log(uri: str, domain: str) -> Path:
    """The domain's QEMU log (its stderr, where the trace events go), on this host's qemu:///system."""
    if uri != "qemu:///system":
        raise SectorlabError(f"counting read-modify-write reads reads QEMU's log on this host; {domain} runs on "
                             f"{uri}, whose log sectorlab does not reach")
    return LOG_DIR / f"{domain}.log"


def qemu_pid(domain: str) -> int:
    try:
        return int((RUN_DIR / f"{domain}.pid").read_text().strip())
    except (OSError, ValueError) as e:
        raise SectorlabError(f"{domain}: cannot tell its QEMU process ({RUN_DIR / domain}.pid: {e}); is it running?") \
            from e


def _log_files(log: Path) -> list[Path]:
    """The domain's log and its rotated copies, oldest first."""
    rotated = [log.with_name(f"{log.name}.{i}") for i in reversed(range(LOG_BACKUPS))]
    return [f for f in rotated + [log] if f.exists()]


def _current_run(text: str) -> list[str]:
    """The log's lines since QEMU last started (a warm restore starts a new QEMU process)."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if START_LINE in line]
    return lines[starts[-1] + 1:] if starts else lines


def node_addresses(log_text: str, volume: str) -> dict[str, str]:
    """The throttle and blkdebug nodes over `volume` in the running QEMU: {"throttle": addr,
    "blkdebug": addr}, from the bdrv_open_common lines hot-plug traced."""
    found: dict[str, str] = {}
    for line in _current_run(log_text):
        m = _OPEN_RE.search(line)
        if not m:
            continue
        addr, filename, driver = m.groups()
        if driver == "throttle" and filename == volume:
            found = {"throttle": addr}
        elif driver == "blkdebug" and "throttle" in found and "blkdebug" not in found:
            found["blkdebug"] = addr  # opened next, over that throttle node (its filename is empty)
    if set(found) != {"throttle", "blkdebug"}:
        raise SectorlabError(f"no trace of the read-modify-write nodes over {volume} since QEMU started (a "
                             f"'{OPEN_EVENT}' line for its throttle node, then its blkdebug node, in the log or its "
                             f"rotated copies); take the lab down and up again to plug it anew")
    return found


def trace_nodes(uri: str, domain: str, disks: list[DiskRecord], timeout: float = 10.0) -> dict[str, RmwNodes]:
    """Per read-modify-write disk of the domain (by name), its nodes' addresses and the QEMU process
    they belong to, for lab.json. A disk whose entry in `disks` already names the running process
    keeps it (a converging lab-up plugs nothing); the others are read from the log, which virtlogd
    may take a moment to write."""
    todo = plan(disks)
    if not todo:
        return {}
    pid = qemu_pid(domain)
    out = {d.name: d.rmw_nodes for _, _, d in todo if d.rmw_nodes and d.rmw_nodes.qemu_pid == pid}
    log = domain_log(uri, domain)
    deadline = time.monotonic() + timeout
    while True:
        text = "".join(f.read_text(errors="replace") for f in _log_files(log))
        try:
            for _, _, d in todo:
                if d.name not in out:
                    out[d.name] = RmwNodes(qemu_pid=pid, **node_addresses(text, d.volume))
            return out
        except SectorlabError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


@dataclass
class Reads:
    """What a traced window saw on one read-modify-write disk."""
    rmw: int = 0  # reads the padding made: asked of the throttle node, not by the guest
    guest: int = 0  # reads the guest asked for
    sizes: Counter = field(default_factory=Counter)  # read-modify-write read sizes -> count
    unaligned: int = 0  # read-modify-write reads not on a physical-sector boundary (there should be none)

    def as_dict(self) -> dict:
        return {"rmw_reads": self.rmw, "guest_reads": self.guest, "rmw_read_sizes": dict(sorted(self.sizes.items())),
                "rmw_reads_unaligned": self.unaligned}


def count_reads(lines: list[str], nodes: dict[str, str], physical: int) -> Reads:
    """The read-modify-write reads among traced `lines`. A guest read is traced at the blkdebug node,
    then at the throttle node (padded to the alignment: at or before the guest's offset); a read the
    padding makes is traced at the throttle node only."""
    out = Reads()
    pending: list[int] = []  # offsets of guest reads not yet seen at the throttle node
    for line in lines:
        m = _READ_RE.search(line)
        if not m:
            continue
        addr, offset, size = m.group(1), int(m.group(2)), int(m.group(3))
        if addr == nodes["blkdebug"]:
            out.guest += 1
            pending.append(offset)
        elif addr == nodes["throttle"]:
            match = next((i for i, o in enumerate(pending) if offset <= o < offset + size), None)
            if match is not None:
                del pending[match]
                continue
            out.rmw += 1
            out.sizes[size] += 1
            out.unaligned += 1 if offset % physical else 0
    return out


class ReadTrace:
    """Trace QEMU's reads while the `with` block runs; then `.reads(disk)` counts the read-modify-write
    reads of a disk (its lab.json entry) in that window."""

    def __init__(self, uri: str, domain: str, settle_s: float = 0.5, timeout: float = 10.0):
        self.uri, self.domain, self.settle_s, self.timeout = uri, domain, settle_s, timeout
        self.log = domain_log(uri, domain)
        self.lines: list[str] = []

    def __enter__(self) -> ReadTrace:
        st = self.log.stat()
        self.start = (st.st_ino, st.st_size)
        libvirt.get_host(self.uri).qmp(self.domain, "trace-event-set-state", name=READ_EVENT, enable=True)
        return self

    def __exit__(self, *exc) -> None:
        libvirt.get_host(self.uri).qmp(self.domain, "trace-event-set-state", name=READ_EVENT, enable=False)
        # virtlogd copies QEMU's stderr into the log: wait until it stops growing.
        size, deadline = -1, time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            now = self.log.stat().st_size
            if now == size:
                break
            size = now
            time.sleep(self.settle_s)
        # From where the window began, through any copies virtlogd rotated it into since.
        files = _log_files(self.log)
        inode, offset = self.start
        first = next((i for i, f in enumerate(files) if f.stat().st_ino == inode), None)
        if first is None:
            raise SectorlabError(f"{self.log}: rotated more than {LOG_BACKUPS} times while reads were traced; "
                                 f"trace a shorter run")
        text = []
        for i, f in enumerate(files[first:]):
            with f.open("rb") as fh:
                fh.seek(offset if i == 0 else 0)
                text.append(fh.read().decode(errors="replace"))
        self.lines = "".join(text).splitlines()

    def reads(self, disk: DiskRecord) -> Reads:
        nodes = disk.rmw_nodes
        if not nodes:
            raise SectorlabError(f"disk {disk.name} has no read-modify-write nodes in lab.json "
                                 f"(rmw = true, brought up by this version of sectorlab?)")
        if nodes.qemu_pid != qemu_pid(self.domain):
            raise SectorlabError(f"{self.domain}: its QEMU is not the one lab-up plugged disk {disk.name} into "
                                 f"(process {nodes.qemu_pid}); run 'make lab-up' again")
        return count_reads(self.lines, {"throttle": nodes.throttle, "blkdebug": nodes.blkdebug},
                           disk.physical_block_size)


def query_device_stats(uri: str, domain: str, dev_id: str) -> dict:
    """QEMU's block statistics of the device `dev_id` (the guest's own requests)."""
    for entry in libvirt.get_host(uri).qmp(domain, "query-blockstats") or []:
        if entry.get("qdev", "").split("/")[3:4] == [dev_id]:
            return entry["stats"]
    raise SectorlabError(f"{domain}: no block statistics for device {dev_id} (is it plugged?)")


def describe(d: DiskRecord) -> str:
    """How lab-up's table says what is under a read-modify-write disk."""
    return (f"read-modify-write to {d.physical_block_size} B, reads paced at {d.rmw_read_iops}/s "
            f"({1000 / d.rmw_read_iops:.1f} ms each)")
