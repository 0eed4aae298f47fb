"""What a probe writes to, and what the kernel says of the device under it.

- A directory (the default and the safe case): the probe makes a file of its own there, fills it
  with zeros (a redo log is written before it is used: a preallocated extent would add the
  filesystem's conversion of unwritten extents to every first write), writes it with O_DIRECT and
  removes it. The device is the block device the filesystem is on.
- A block device: only with destroy_data, and only when it holds no partition table, filesystem,
  RAID, LVM or ASM signature and nothing is mounted from it (redo-writer io checks with lsblk and
  wipefs and refuses otherwise).
- An NBD URI: an export on this host, a lab's device model (the round trip): its path's floor is
  measured on the floor's model.

Refused in one line, nothing written: an existing regular file (it holds data), a directory on no
block device (tmpfs, overlay: no drive's timing), one without room, one not writable.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..devices import build
from ..errors import UsageError

HEADROOM = 64 << 20   # left free on the filesystem besides the probe's file
QUEUE = ("logical_block_size", "physical_block_size", "minimum_io_size", "optimal_io_size", "write_cache", "fua",
         "rotational")


@dataclass
class Target:
    kind: str                  # file | block | nbd
    given: str                 # what the user named
    path: str = ""             # what redo-writer io gets (made by prepare() for a directory)
    device: str = ""           # the device as the report names it: MODEL SERIAL (/dev/NAME), or the export
    queue: dict = field(default_factory=dict)   # the kernel's queue/ attributes of the device (empty: NBD)
    made: Path | None = None   # the file the probe made (removed by cleanup())

    @property
    def logical(self) -> int:
        return int(self.queue.get("logical_block_size", 512))


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace").strip()
    except OSError:
        return ""


def _block_of(dev: int) -> Path | None:
    """/sys/block/NAME of the whole disk holding device number `dev` (a partition's parent)."""
    node = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
    if not node.exists():
        return None
    real = node.resolve()
    return real.parent if (real / "partition").exists() else real


def _describe(block: Path) -> tuple[str, dict]:
    queue = {k: _read(block / "queue" / k) for k in QUEUE}
    model = _read(block / "device" / "model") or _read(block / "device" / "vendor")
    serial = _read(block / "serial") or _read(block / "device" / "serial")
    words = " ".join(w for w in (model, serial) if w) or "a device that gives no model or serial"
    return f"{words} (/dev/{block.name})", queue


def resolve(given: str, destroy_data: bool) -> Target:
    """The target `given` names, checked; nothing is written yet."""
    if given.startswith(("nbd://", "nbds://", "nbd+unix://", "nbds+unix://")):
        return Target("nbd", given, given, f"the NBD export {given}")
    p = Path(given)
    try:
        st = p.stat()
    except OSError as e:
        raise UsageError(f"probe target {given}: {e.strerror}: expected a directory on the filesystem under test "
                         "(the probe makes its own file there), a block device or an NBD URI") from None
    import stat as st_mode
    if st_mode.S_ISBLK(st.st_mode):
        if not destroy_data:
            raise UsageError(f"probe target {given} is a block device: the probe writes over it; expected "
                             "--destroy-data (and a device that holds nothing), or a directory on it instead")
        block = _block_of(st.st_rdev)
        device, queue = _describe(block) if block else (given, {})
        return Target("block", given, given, device, queue)
    if st_mode.S_ISREG(st.st_mode):
        raise UsageError(f"probe target {given} is an existing file: it holds data the probe would overwrite; "
                         "expected a directory (the probe makes, writes and removes a file of its own there)")
    if not st_mode.S_ISDIR(st.st_mode):
        raise UsageError(f"probe target {given} is neither a directory, a block device nor an NBD URI")
    block = _block_of(st.st_dev)
    if block is None:
        raise UsageError(f"probe target {given} is on no block device (tmpfs, overlay, a network filesystem?): "
                         "expected a directory on the disk whose timing you want")
    device, queue = _describe(block)
    return Target("file", given, "", device, queue)


def prepare(target: Target, size: int) -> None:
    """A directory's file made and filled with zeros (its size checked against the room left)."""
    if target.kind != "file":
        return
    room = os.statvfs(target.given)
    free = room.f_bavail * room.f_frsize
    if free < size + HEADROOM:
        raise UsageError(f"probe target {target.given} has {free >> 20} MiB free: the probe's file needs "
                         f"{size >> 20} MiB and {HEADROOM >> 20} MiB left beside it; free some space or give "
                         "fewer --samples")
    try:
        fd, name = tempfile.mkstemp(prefix=".sectorlab-probe.", suffix=".img", dir=target.given)
    except OSError as e:
        raise UsageError(f"probe target {target.given}: cannot make a file there: {e.strerror}") from None
    target.made, target.path = Path(name), name
    zeros = bytes(1 << 20)
    with os.fdopen(fd, "wb") as f:
        for _ in range(size >> 20):
            f.write(zeros)
        f.flush()
        os.fsync(f.fileno())


def cleanup(target: Target) -> None:
    if target.made is not None:
        target.made.unlink(missing_ok=True)
        target.made = None


def block_size(target: Target) -> int:
    """The block device's size in bytes (redo-writer probe)."""
    proc = subprocess.run([str(build.built(build.REDO_WRITER)), "probe", target.path, "--output", "json"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise UsageError((proc.stderr.strip().splitlines() or [f"redo-writer probe: exit {proc.returncode}"])[-1])
    return int(json.loads(proc.stdout)["size_bytes"])
