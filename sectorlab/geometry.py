"""The geometry catalog (sectorlab/geometries.json): sector sizes by name, and what each bus can present."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from .errors import UsageError

CATALOG = Path(__file__).with_name("geometries.json")
MIN_BLOCK_SIZE = 512
MAX_BLOCK_SIZE = 65536
# The guest kernel's block layer takes logical sectors up to its page size (4 KiB).
MAX_LOGICAL_BLOCK_SIZE = 4096
# QEMU's virtio-blk carries the minimum I/O size as a 16-bit count of logical sectors: 256 MiB at
# 4 KiB; the lab stops well below either limit of its buses.
MAX_IO_SIZE = 64 << 20


@dataclass(frozen=True)
class Geometry:
    name: str
    logical_block_size: int
    physical_block_size: int
    description: str = ""
    # What the device advertises besides its sectors (0: nothing): its minimum I/O size (a QLC
    # drive's indirection unit, a RAID chunk) and optimal I/O size (a RAID stripe).
    min_io_size: int = 0
    opt_io_size: int = 0

    @property
    def guest_min_io(self) -> int:
        """The minimum I/O size the guest must show (guest_min_io()): for a disk of the lab
        definition and for its entry in lab.json alike (DiskRecord.sizes)."""
        return guest_min_io(self.physical_block_size, self.min_io_size)

    @property
    def topology(self) -> str:
        """What the guest must show of a disk of these sizes, as lab-up's table shows it (topology())."""
        return topology(self.logical_block_size, self.physical_block_size, self.guest_min_io, self.opt_io_size)

    @property
    def io_hints(self) -> bool:
        """Whether the device advertises a minimum or optimal I/O size of its own."""
        return bool(self.min_io_size or self.opt_io_size)

    def as_dict(self) -> dict:
        return {"name": self.name, "logical_block_size": self.logical_block_size,
                "physical_block_size": self.physical_block_size, "min_io_size": self.min_io_size,
                "opt_io_size": self.opt_io_size, "description": self.description}


def guest_min_io(physical: int, min_io: int) -> int:
    """The guest kernel's minimum_io_size: the advertised one, never below the physical sector."""
    return max(min_io, physical)


def topology(logical: int, physical: int, min_io: int, opt_io: int) -> str:
    """'4096/4096' (logical/physical), with ', minimum I/O 16384' when it is not the physical sector
    and ', optimal I/O 65536' when there is one: how lab-up's table shows a disk."""
    return (f"{logical}/{physical}" + (f", minimum I/O {min_io}" if min_io != physical else "")
            + (f", optimal I/O {opt_io}" if opt_io else ""))


def _whole(where: str, what: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(f"{where}: {what} = {value!r}: expected a whole number of bytes (512, 4096, ...)")
    return value


def check_block_sizes(where: str, logical, physical, min_io=0, opt_io=0) -> None:
    """Raise a UsageError naming `where` unless these are sane sector and I/O sizes (min_io/opt_io
    0: not advertised)."""
    for what, value in (("logical_block_size", logical), ("physical_block_size", physical)):
        _whole(where, what, value)
        if value < MIN_BLOCK_SIZE or value > MAX_BLOCK_SIZE or value & (value - 1):
            raise UsageError(f"{where}: {what} = {value}: expected a power of two from {MIN_BLOCK_SIZE} "
                             f"to {MAX_BLOCK_SIZE}")
    if logical > physical:
        raise UsageError(f"{where}: logical_block_size {logical} > physical_block_size {physical}: a disk's "
                         f"logical sector cannot be larger than its physical sector")
    if logical > MAX_LOGICAL_BLOCK_SIZE:
        raise UsageError(f"{where}: logical_block_size = {logical}: the guest kernel takes logical sectors up to "
                         f"its page size, {MAX_LOGICAL_BLOCK_SIZE}; use {MAX_LOGICAL_BLOCK_SIZE} with "
                         f"physical_block_size = {physical}")
    for what, value in (("min_io_size", min_io), ("opt_io_size", opt_io)):
        _whole(where, what, value)
        if value and (value < logical or value % logical or value > MAX_IO_SIZE):
            raise UsageError(f"{where}: {what} = {value}: expected a multiple of the logical sector ({logical}) up "
                             f"to {MAX_IO_SIZE}, or leave it out")
    if min_io and min_io < physical:
        raise UsageError(f"{where}: min_io_size = {min_io} is below physical_block_size {physical}: the kernel "
                         f"raises it to the physical sector; leave it out or give at least {physical}")
    if opt_io and opt_io < max(min_io, physical):
        raise UsageError(f"{where}: opt_io_size = {opt_io} is below the minimum I/O size {max(min_io, physical)}: "
                         f"an optimal I/O is a whole number of minimum I/Os; give at least that, or leave it out")


def make(where: str, name: str, entry: dict, default_description: str = "") -> Geometry:
    """The Geometry of a catalog entry or a lab's [geometry.NAME] table, checked."""
    logical, physical = entry.get("logical_block_size"), entry.get("physical_block_size")
    min_io, opt_io = entry.get("min_io_size", 0), entry.get("opt_io_size", 0)
    check_block_sizes(where, logical, physical, min_io, opt_io)
    return Geometry(name, logical, physical, entry.get("description", default_description), min_io, opt_io)


@cache
def _catalog() -> dict:
    return json.loads(CATALOG.read_text())


def geometries() -> dict[str, Geometry]:
    return {name: make(f"{CATALOG.name}: {name}", name, g) for name, g in _catalog()["geometries"].items()}


def buses() -> dict[str, dict]:
    return _catalog()["buses"]


def get(name: str) -> Geometry:
    catalog = geometries()
    if name not in catalog:
        raise UsageError(f"unknown geometry {name!r}: expected one of {', '.join(catalog)}")
    return catalog[name]


def bus_refuses(bus: str, g: Geometry) -> str | None:
    """Why `bus` cannot present geometry `g` (the catalog's reason), or None. A bus may refuse a
    geometry by name or, whatever its name (a lab's own [geometry.NAME] too), any geometry whose
    physical sector is larger than its logical one, or that advertises a minimum or optimal I/O size."""
    info = buses()[bus]
    if g.physical_block_size > g.logical_block_size and info.get("physical_above_logical"):
        return info["physical_above_logical"]
    if g.io_hints and info.get("io_hints"):
        return info["io_hints"]
    return info["unsupported"].get(g.name)


def check_bus(bus: str, g: Geometry, where: str) -> None:
    known = buses()
    if bus not in known:
        raise UsageError(f"{where}: unknown bus {bus!r}: expected one of {', '.join(known)}")
    why = bus_refuses(bus, g)
    if why:
        raise UsageError(f"{where}: bus {bus!r} cannot present {g.name} ({g.topology}): {why}")
