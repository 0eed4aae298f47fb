"""lab.json, the record of a running lab: what lab-up wrote for status, hot-plug, the bench and the
scenarios (SSH endpoints, keys, pinned host keys, every declared disk), read as typed records:
LabRecord, its VMRecord per VM and DiskRecord per declared disk (with Timing below them). It
carries a format number; `LabRecord.load` refuses another format or a file of another shape in one
line, naming the field, instead of an AttributeError or KeyError in whichever reader meets it first.

A record's fields are lab.json's keys, in the order lab-up writes them, and their annotations are
the JSON types each may have (str, int, float, bool, None, dict, or a record of the level below):
`from_json` checks a file against them, so the names and types are written once. A field with a
default may be absent (lab-up adds it later: the timing, what hot-plug learnt); `to_json` leaves it
out while it is None. Terraform's outputs give most fields (terraform/outputs.tf), lab-up adds the
login, the timing and the model-served disks (sectorlab/lab/modelled.py). The records are frozen: a
change is a new record (`dataclasses.replace`), written back whole by lab-up.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from .. import geometry as geo
from .. import inputs
from ..errors import SectorlabError, UsageError

FORMAT = 1
MAX_BYTES = 4 << 20  # a lab at every bound of labdef (16 VMs, 496 disks) writes well under 1 MiB
_JSON_TYPES = {"str": str, "int": int, "float": float, "bool": bool, "None": type(None), "dict": dict}


def _short(value) -> str:
    """A value as lab.json spells it, cut short."""
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _alternatives(annotation: str) -> list[str]:
    """'str | None' -> ['str', 'None']; a '|' inside brackets (dict[str, int | float]) is not split."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(annotation):
        depth += (c == "[") - (c == "]")
        if c == "|" and depth == 0:
            parts.append(annotation[start:i].strip())
            start = i + 1
    return parts + [annotation[start:].strip()]


@cache
def _schema(cls: type) -> dict[str, tuple[tuple[type, ...], type | None, bool]]:
    """Per field of a record class: the JSON types its value may have, the record class its value
    (or each value of its object, when `many`) is read as, and `many`."""
    out = {}
    for f in dataclasses.fields(cls):
        types, record, many = [], None, False
        for alt in _alternatives(f.type):
            base, _, inner = alt.partition("[")
            target = _JSON_TYPES.get(base) or _RECORDS.get(base)
            if target is dict and inner:  # dict[str, X]: an object whose values are X
                value = _RECORDS.get(inner.rstrip("]").rpartition(",")[2].strip())
                record, many = value, value is not None
            elif target in _RECORDS.values():
                record, target = target, dict
            if target is None:
                raise TypeError(f"{cls.__name__}.{f.name}: {alt!r} is not a JSON type")
            types.append(target)
        out[f.name] = (tuple(types), record, many)
    return out


class _Record:
    """What the records share: read from and written to their JSON object."""
    LEVEL = ""  # how a message names an entry of this level

    @classmethod
    def from_json(cls, table, where: str):
        """The record of `table` (a JSON object as lab-up writes it), or one UsageError line naming
        the field that is missing or of another type."""
        if not isinstance(table, dict):
            raise UsageError(f"{where}: {_short(table)} is not an object; expected a {cls.LEVEL} entry")
        values = {}
        for f in dataclasses.fields(cls):
            if f.name not in table:
                if f.default is dataclasses.MISSING:
                    raise UsageError(f"{where}: no '{f.name}'")
                continue
            types, record, many = _schema(cls)[f.name]
            value = table[f.name]
            if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
                raise UsageError(f"{where}: {f.name} = {_short(value)}: expected "
                                 + " or ".join("null" if t is type(None) else t.__name__ for t in types))
            if record is not None and value is not None:
                value = ({k: record.from_json(v, f"{where}: {f.name}.{k}") for k, v in value.items()} if many
                         else record.from_json(value, f"{where}: {f.name}"))
            values[f.name] = value
        return cls(**values)

    def to_json(self) -> dict:
        """The JSON object of this record, keys in lab-up's order; an optional field still None is left out."""
        out = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is None and f.default is None:
                continue
            if isinstance(value, _Record):
                value = value.to_json()
            elif isinstance(value, dict):
                value = {k: v.to_json() if isinstance(v, _Record) else v for k, v in value.items()}
            out[f.name] = value
        return out


@dataclass(frozen=True)
class Timing(_Record):
    """How the last lab-up went: its path (cold, warm, converge), its total and each phase, in seconds."""
    LEVEL = "timing"
    path: str
    total_s: int | float
    phases: dict[str, int | float]


@dataclass(frozen=True)
class VMRecord(_Record):
    """A VM of the lab (lab.json's vms.NAME): its domain and volumes, and how to log in."""
    LEVEL = "vm"
    # Terraform's outputs, in the order Terraform writes them (by name), then lab-up's login.
    console_log: str | None
    domain: str
    guest: str
    root_volume: str
    ssh_host: str
    ssh_port: int
    uuid: str
    user: str
    key_file: str
    host_key: str


@dataclass(frozen=True)
class DiskRecord(_Record):
    """A declared data disk of the lab (lab.json's disks.VM/NAME), as Terraform made it."""
    LEVEL = "disk"
    # Terraform's outputs, in the order Terraform writes them (by name), then what hot-plug learnt.
    backing_serial: str | None
    bus: str
    geometry: str
    logical_block_size: int
    min_io_size: int
    name: str
    opt_io_size: int
    physical_block_size: int
    serial: str
    size_bytes: int | float
    volume: str
    vm: str
    write_cache: str  # the guest's queue/write_cache: "write through" or "write back" (devices/profiles.py)
    device: str | None = None  # a device profile: served by the device model (volume: its socket)
    write_log: bool | None = None  # True: its model keeps every write's bytes (write_log = true; crash-db)

    @property
    def key(self) -> str:
        """Its key in lab.json's disks: VM/NAME."""
        return f"{self.vm}/{self.name}"

    @property
    def sizes(self) -> geo.Geometry:
        """Its sector and I/O sizes as a Geometry (named as its geometry), the shape labdef's
        disks have: what the guest must show (`.guest_min_io`, `.topology`) is computed there once."""
        return geo.Geometry(self.geometry, self.logical_block_size, self.physical_block_size,
                            min_io_size=self.min_io_size, opt_io_size=self.opt_io_size)

    @property
    def guest_min_io(self) -> int:
        """The minimum I/O size the guest must show (Geometry.guest_min_io)."""
        return self.sizes.guest_min_io



@dataclass(frozen=True)
class LabRecord(_Record):
    """lab.json: the lab, its VMs by name and its declared disks by VM/NAME."""
    LEVEL = "lab"
    format: int
    lab: str
    lab_file: str
    libvirt_uri: str
    vms: dict[str, VMRecord]
    disks: dict[str, DiskRecord]
    timing: Timing | None = None

    @classmethod
    def from_json(cls, data, where: str) -> LabRecord:
        """`data` as lab.json must be, or one UsageError line naming what is not."""
        if not isinstance(data, dict):
            raise UsageError(f"{where}: not an object; expected lab.json as lab-up writes it")
        if data.get("format") != FORMAT:
            raise UsageError(f"{where}: format {data.get('format')!r}, this sectorlab reads format {FORMAT} (written "
                             f"by another version of sectorlab); 'make lab-up' brings the lab up afresh")
        record = super().from_json(data, where)
        for key, disk in record.disks.items():
            if disk.vm not in record.vms:
                raise UsageError(f"{where}: disks.{key}: vm {disk.vm!r} is not one of the lab's VMs")
        return record

    @classmethod
    def load(cls, path: Path) -> LabRecord:
        """The lab.json at `path`, checked (from_json); read within inputs' bounds."""
        return cls.from_json(inputs.read_json(path, "lab record", MAX_BYTES), str(path))

    def text(self) -> str:
        """lab.json's text, as lab-up writes it."""
        return json.dumps(self.to_json(), indent=2)

    def vm(self, name: str) -> VMRecord:
        if name not in self.vms:
            raise SectorlabError(f"lab {self.lab} has no VM {name!r} (it has {', '.join(self.vms)})")
        return self.vms[name]

    def disk(self, vm: str, name: str) -> DiskRecord:
        key = f"{vm}/{name}"
        if key not in self.disks:
            raise SectorlabError(f"lab {self.lab} has no disk {name!r} on VM {vm!r}")
        return self.disks[key]

    def disks_of(self, vm: str) -> list[DiskRecord]:
        """The VM's declared disks, in lab.json's order."""
        return [d for d in self.disks.values() if d.vm == vm]

    def disk_with_serial(self, serial: str) -> DiskRecord:
        found = next((d for d in self.disks.values() if d.serial == serial), None)
        if found is None:
            raise SectorlabError(f"lab {self.lab} has no disk with serial {serial!r}")
        return found


_RECORDS = {cls.__name__: cls for cls in (Timing, VMRecord, DiskRecord, LabRecord)}
for _cls in _RECORDS.values():
    _schema(_cls)  # an annotation that is not a JSON type fails the import, not the first lab.json read
