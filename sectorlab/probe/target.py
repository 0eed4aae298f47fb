"""What a probe writes to, and what the kernel says of the device under it.

- A directory (the default and the safe case): the probe makes a file of its own there, fills it
  with zeros (a redo log is written before it is used: a preallocated extent would add the
  filesystem's conversion of unwritten extents to every first write), writes it with O_DIRECT and
  removes it. The device is the block device the filesystem is on.
- A block device: only with destroy_data, and only when it holds no partition table, filesystem,
  RAID, LVM or ASM signature and nothing is mounted from it (redo-writer io checks with lsblk and
  wipefs and refuses otherwise).
- An NBD URI (a lab's device model, the round trip): written over, so only with destroy_data; its
  path's floor is measured on floor models.

Refused in one line, nothing written: an existing regular file (it holds data), a directory on no
block device (tmpfs, overlay: no drive's timing), one without room, one not writable.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..devices import build
from ..errors import UsageError

HEADROOM = 64 << 20   # left free on the filesystem besides the probe's file
NBD_URI = re.compile(r"nbds?(\+[a-z]+)?://")   # as redo-writer's nbd_uri_scheme reads one
QUEUE = ("logical_block_size", "physical_block_size", "minimum_io_size", "optimal_io_size", "write_cache", "fua",
         "rotational")


@dataclass
class Target:
    kind: str                  # file | block | nbd
    given: str                 # what the user named
    path: str = ""             # what redo-writer io gets (made by prepare() for a directory)
    device: str = ""           # the device as the report names it: MODEL SERIAL (/dev/NAME), or the export
    queue: dict = field(default_factory=dict)   # the kernel's queue/ attributes of the device (empty: NBD)
    fd: int | None = None      # the probe's file, open (its name removed as soon as it was made and filled)

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
    if NBD_URI.match(given):
        if not destroy_data:
            raise UsageError(f"probe target {given} is an NBD export: the probe writes over it; expected "
                             "--destroy-data (a lab's device model, say), or a directory instead")
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


def _random_mib() -> bytes:
    """A MiB no drive compresses (a compressing filesystem or SSD would write less of zeros)."""
    return os.urandom(1 << 20)


def prepare(target: Target, size: int) -> None:
    """A directory's file: made, filled (`size` bytes, random), its name removed at once (a probe
    killed leaves nothing behind), kept open for redo-writer io as /dev/fd/N. A block device's first
    `size` bytes: filled through redo-writer io (its checks: nothing mounted, no signature), so that no
    read of the probe finds a block never written (a drive answers those without its media)."""
    if target.kind == "block":
        fill = "".join(f"write {at} {1 << 20}\n" for at in range(0, size, 1 << 20)) + "flush\n"
        proc = subprocess.run([str(build.built(build.REDO_WRITER)), "io", "--target", target.path, "--requests", "-"],
                              input=fill, capture_output=True, text=True)
        if proc.returncode != 0:
            raise UsageError((proc.stderr.strip().splitlines() or [f"redo-writer io: exit {proc.returncode}"])[-1])
        return
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
    try:
        os.unlink(name)
        for _ in range(size >> 20):
            os.write(fd, _random_mib())
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        raise
    target.fd, target.path = fd, f"/dev/fd/{fd}"


def cleanup(target: Target) -> None:
    if target.fd is not None:
        os.close(target.fd)
        target.fd = None


def block_size(target: Target) -> int:
    """The block device's size in bytes (redo-writer probe)."""
    proc = subprocess.run([str(build.built(build.REDO_WRITER)), "probe", target.path, "--output", "json"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise UsageError((proc.stderr.strip().splitlines() or [f"redo-writer probe: exit {proc.returncode}"])[-1])
    return int(json.loads(proc.stdout)["size_bytes"])
