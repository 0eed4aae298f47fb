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


@dataclass(frozen=True)
class Geometry:
    name: str
    logical_block_size: int
    physical_block_size: int
    description: str = ""

    def as_dict(self) -> dict:
        return {"name": self.name, "logical_block_size": self.logical_block_size,
                "physical_block_size": self.physical_block_size, "description": self.description}


def check_block_sizes(where: str, logical, physical) -> None:
    """Raise a UsageError naming `where` unless logical/physical are sane sector sizes."""
    for what, value in (("logical_block_size", logical), ("physical_block_size", physical)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise UsageError(f"{where}: {what} = {value!r}: expected a whole number of bytes (512, 4096, ...)")
        if value < MIN_BLOCK_SIZE or value > MAX_BLOCK_SIZE or value & (value - 1):
            raise UsageError(f"{where}: {what} = {value}: expected a power of two from {MIN_BLOCK_SIZE} "
                             f"to {MAX_BLOCK_SIZE}")
    if logical > physical:
        raise UsageError(f"{where}: logical_block_size {logical} > physical_block_size {physical}: a disk's "
                         f"logical sector cannot be larger than its physical sector")


@cache
def _catalog() -> dict:
    return json.loads(CATALOG.read_text())


def geometries() -> dict[str, Geometry]:
    out = {}
    for name, g in _catalog()["geometries"].items():
        check_block_sizes(f"{CATALOG.name}: {name}", g["logical_block_size"], g["physical_block_size"])
        out[name] = Geometry(name, g["logical_block_size"], g["physical_block_size"], g.get("description", ""))
    return out


def buses() -> dict[str, dict]:
    return _catalog()["buses"]


def get(name: str) -> Geometry:
    catalog = geometries()
    if name not in catalog:
        raise UsageError(f"unknown geometry {name!r}: expected one of {', '.join(catalog)}")
    return catalog[name]


def check_bus(bus: str, geometry_name: str, where: str) -> None:
    known = buses()
    if bus not in known:
        raise UsageError(f"{where}: unknown bus {bus!r}: expected one of {', '.join(known)}")
    why = known[bus]["unsupported"].get(geometry_name)
    if why:
        raise UsageError(f"{where}: bus {bus!r} cannot present {geometry_name}: {why}")
