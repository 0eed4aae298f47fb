"""`sectorlab lab from-host FILE`: a lab definition whose disks reproduce a server's.

FILE is what scripts/collect-host-geometry wrote on the server, or the bare JSON of
`lsblk -J -b -d -o NAME,LOG-SEC,PHY-SEC,MIN-IO,OPT-IO,ALIGNMENT,SIZE,ROTA,TRAN,MODEL` (any superset of
those columns). Each whole disk becomes a lab disk: the bus from its transport, the geometry from the
catalog when one matches (else a [geometry.NAME] table of the lab with its sector sizes and the
minimum/optimal I/O sizes it advertises), on a bus that can present it, the latency
profile from ROTA, a size scaled down, and the source disk's name and model in a comment. What the lab
cannot present is listed in the file's header and returned, never dropped in silence. The result is
checked with the lab-definition validator before it is written.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import tomli_w

from .. import fields, inputs
from .. import geometry as geo
from ..devices import profiles as device_profiles
from ..errors import SectorlabError, UsageError, one_line
from ..guest import disks as guestdisks
from ..inguest import nvmeformat, rules
from . import definition as labdef
from . import tables as labtables

COLUMNS = ("name", "log-sec", "phy-sec", "min-io", "opt-io", "alignment", "size", "rota", "tran", "model")
LSBLK_COMMAND = "lsblk -J -b -d -o NAME,LOG-SEC,PHY-SEC,MIN-IO,OPT-IO,ALIGNMENT,SIZE,ROTA,TRAN,MODEL"
# Not disks a lab reproduces: loop, optical, RAM-backed, device-mapper, software RAID, network block.
NOT_DISKS = re.compile(r"(loop|sr|zram|ram|dm-|md|nbd|fd)\d*")
BUS_OF_TRANSPORT = {"nvme": "nvme", "sas": "scsi", "sata": "scsi", "ata": "scsi", "scsi": "scsi", "spi": "scsi",
                    "fc": "scsi", "iscsi": "scsi", "srp": "scsi", "usb": "scsi", "virtio": "virtio"}
DEFAULT_SIZE_MIB = 256
MIN_SIZE_MIB, MAX_SIZE_MIB = labtables.MIN_DISK_MIB, labtables.MAX_DISK_MIB


@dataclass
class HostDisk:
    name: str
    logical: int
    physical: int
    min_io: int
    opt_io: int
    alignment: int
    size: int
    rotational: bool
    transport: str | None
    model: str | None
    lba_formats: list[int] | None = None  # NVMe: the data sizes the namespace's LBA formats offer
    lba_in_use: int | None = None  # NVMe: the data size of the format in use


@dataclass
class Plan:
    toml: str
    disks: int
    not_reproduced: list[str] = field(default_factory=list)


def _bad(path: Path, why: str) -> UsageError:
    return UsageError(f"{path}: {why}; expected the output of scripts/collect-host-geometry or of "
                      f"'{LSBLK_COMMAND}'")


def _number(path: Path, entry: dict, column: str) -> int:
    try:
        value = guestdisks.int_field(entry, column, "lsblk", "")
    except guestdisks.GuestOutputError:
        value = -1
    if value < 0:
        raise _bad(path, f"disk {entry.get('name')!r}: {column} = {entry.get(column)!r} is not a whole number of bytes")
    return value


def _flag(path: Path, disk: str, value) -> bool:
    if value in (True, False):
        return bool(value)
    if value in ("1", "0", 1, 0):
        return value in ("1", 1)
    raise _bad(path, f"disk {disk!r}: rota = {value!r} is not true/false or 1/0")


def read(path: Path) -> tuple[list[HostDisk], dict[str, str]]:
    """The whole disks in FILE, and what was left out as not a disk (its kernel name: why)."""
    path = Path(path)
    data = inputs.read_json(path, "collector file", inputs.COLLECTOR_MAX,
                            f"the output of scripts/collect-host-geometry or of '{LSBLK_COMMAND}'")
    nvme = {}
    if isinstance(data, dict) and "lsblk" in data:
        nvme = data.get("nvme_id_ns") or {}
        data = data["lsblk"]
    if not isinstance(data, dict) or not isinstance(data.get("blockdevices"), list):
        raise _bad(path, "no 'blockdevices' list")
    disks, names, seen = [], [], set()
    skipped: dict[str, str] = {}
    for entry in data["blockdevices"]:
        if not isinstance(entry, dict):
            raise _bad(path, f"a block device that is not an object: {entry!r}")
        missing = [c for c in COLUMNS if c not in entry]
        if missing:
            raise _bad(path, f"device {entry.get('name')!r} lacks the column(s) {', '.join(missing)}")
        name = entry["name"]
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9._:-]{1,64}", name):
            raise _bad(path, f"a device name {name!r} that is not a kernel name")
        names.append(name)  # a device is named once: which of two would a disk of the lab be?
        if name in seen:
            fields.no_duplicates(f"collector file {path}", "blockdevices' names", names)
        seen.add(name)
        num = {c: _number(path, entry, c) for c in ("log-sec", "phy-sec", "min-io", "opt-io", "size")}
        if NOT_DISKS.fullmatch(name) or num["size"] == 0:
            skipped[name] = "not a disk the lab reproduces (loop, optical, RAM, device-mapper, RAID, network or empty)"
            continue
        formats, in_use = None, None
        ns = nvme.get(name) if isinstance(nvme, dict) else None
        if ns is not None:
            try:  # the guest tools' parser of nvme id-ns, which checks every field
                index, parsed = nvmeformat.parse_lba_formats(json.dumps(ns), f"nvme id-ns /dev/{name} -o json")
            except nvmeformat.UnexpectedOutput as e:
                raise _bad(path, f"nvme_id_ns of {name}: {e.why}") from e
            formats = sorted({f["data_size"] for f in parsed if f["data_size"] >= 512})
            in_use = parsed[index]["data_size"]
        disks.append(HostDisk(name, num["log-sec"], num["phy-sec"], num["min-io"], num["opt-io"],
                              _number(path, entry, "alignment") if entry["alignment"] is not None
                              else 0, num["size"], _flag(path, name, entry["rota"]),
                              entry["tran"] if isinstance(entry["tran"], str) else None,
                              str(entry["model"]).strip() if entry["model"] is not None else None, formats,
                              in_use))
    if not disks:
        raise _bad(path, "no whole disk in it" + (f" ({'; '.join(left_out(skipped))})" if skipped else ""))
    return disks, skipped


def redo_check_sizes(path: str, name: str) -> tuple[int, int, int | None]:
    """`sectorlab redo-check --from-host FILE DISK`: (logical, physical, minimum I/O) of DISK in FILE."""
    try:
        disks, _ = read(Path(path))
    except UsageError as e:
        raise rules.RulesUsageError(str(e)) from None
    for d in disks:
        if d.name == name:
            return d.logical, d.physical, d.min_io or None
    raise rules.RulesUsageError(f"{path}: no disk {name!r} in it: expected one of {', '.join(d.name for d in disks)}")


def _bus(d: HostDisk, g: geo.Geometry, notes: list[str]) -> str:
    if d.transport in BUS_OF_TRANSPORT:
        bus = BUS_OF_TRANSPORT[d.transport]
    elif d.transport is None and d.name.startswith(("vd", "xvd")):
        bus = "virtio"
    else:
        bus = "virtio"
        notes.append(f"{d.name}: transport {d.transport or 'none'}: presented as a virtio disk")
    # The catalog's own rules: emulated NVMe shows no physical sector above the logical one and no
    # minimum/optimal I/O size; an NVMe/TCP namespace shows the former, not the latter.
    refused = []
    for fallback in ("nvme-tcp", "virtio") if bus == "nvme" else ():
        why = geo.bus_refuses(bus, g)
        if not why:
            break
        refused.append(f"{bus}: {re.split(r'[.;:] [Uu]se bus', why)[0]}")
        bus = fallback
    if refused:
        notes.append(f"{d.name}: NVMe {g.topology}: on bus {bus} ({'; '.join(refused)})")
    return bus


def _kib(n: int) -> str:
    return f"{n >> 20}m" if n % (1 << 20) == 0 else f"{n >> 10}k" if n % 1024 == 0 else str(n)


def _advertised(d: HostDisk) -> tuple[int, int]:
    """What the device advertises beyond its sectors: a minimum I/O above the physical sector, an
    optimal I/O (an NVMe namespace with no optimal write size of its own shows one LBA: nothing)."""
    return (d.min_io if d.min_io > d.physical else 0,
            d.opt_io if d.opt_io and not (d.transport == "nvme" and d.opt_io == d.logical) else 0)


def _why(e: UsageError) -> str:
    """A geometry check's reason without the disk name it starts with."""
    return str(e).split(": ", 1)[1]


def _geometry(d: HostDisk, min_io: int, opt_io: int, custom: dict[str, geo.Geometry]) -> geo.Geometry:
    sizes = (d.logical, d.physical, min_io, opt_io)
    for g in geo.geometries().values():
        if (g.logical_block_size, g.physical_block_size, g.min_io_size, g.opt_io_size) == sizes:
            return g
    name = f"host-{d.logical}-{d.physical}" + (f"-min{_kib(min_io)}" if min_io else "") + \
        (f"-opt{_kib(opt_io)}" if opt_io else "")
    custom[name] = geo.Geometry(name, d.logical, d.physical, "", min_io, opt_io)
    return custom[name]


def comment(text: str) -> str:
    """`text` as one TOML comment line: what a collector file says (a disk's model, transport, the
    file's own name) may hold a newline or another control character, which would end the comment
    and start a line of TOML; each such character is written as its escape (\\n, \\x1b)."""
    return "# " + one_line(text)


def left_out(skipped: dict[str, str]) -> list[str]:
    """What read() left out, a line each: "NAME: why"."""
    return [f"{name}: {why}" for name, why in skipped.items()]


def plan(disks: list[HostDisk], skipped: dict[str, str], source: str, lab_name: str, size_mib: int) -> Plan:
    if isinstance(size_mib, bool) or not isinstance(size_mib, int) or not MIN_SIZE_MIB <= size_mib <= MAX_SIZE_MIB:
        raise UsageError(f"--size-mib {size_mib}: expected a whole number of MiB per lab disk from {MIN_SIZE_MIB} "
                         f"to {MAX_SIZE_MIB}")
    notes = left_out(skipped)
    custom: dict[str, geo.Geometry] = {}
    blocks: list[tuple[str, LabDisk]] = []  # (bus, the disk's table and its comment)
    profiles = set(device_profiles.profiles())
    names: set[str] = set()
    for d in disks:
        block = _disk_block(d, size_mib, custom, profiles, notes, names)
        if block is not None:
            blocks.append(block)
    if not blocks:
        raise UsageError(f"{source}: none of its disks can be reproduced: {'; '.join(notes)}")
    notes.append(f"sizes: every disk is {size_mib} MiB (--size-mib), not its own size (in the comment above it)")
    vms = _vms(blocks, source)
    doc, text = _lab_toml(source, lab_name, notes, custom, vms)
    # What lab-up will read must be what was meant, and valid: a failure here is sectorlab's own.
    if inputs.toml(text, "lab definition from", source) != doc:  # pragma: no cover
        raise AssertionError(f"from-host wrote a lab definition of {source} that reads back otherwise")
    try:
        labdef.validate(doc, Path(f"{lab_name}.toml"))
    except UsageError as e:  # pragma: no cover (every value above is one the lab definition takes)
        raise SectorlabError(f"{source}: the lab definition from-host made of it is refused ({e}); this is "
                             f"sectorlab's fault: please report it with the file") from e
    return Plan(text, len(blocks), notes)


def _disk_block(d: HostDisk, size_mib: int, custom: dict[str, geo.Geometry],
                profiles: set[str], notes: list[str], names: set[str]) -> tuple[str, LabDisk] | None:
    """One host disk as a lab disk: its bus and table, or None (and why in `notes`) when the lab
    cannot present its sectors. `names` holds the lab disk names taken so far."""
    # The lab definition's own checks (geometry.check_block_sizes), by what they would refuse.
    try:
        geo.check_block_sizes(d.name, d.logical, d.physical)
    except UsageError as e:
        notes.append(f"{d.name}: logical sector {d.logical} B, physical sector {d.physical} B: not "
                     f"reproduced ({_why(e)}); the disk is left out")
        return None
    min_io, opt_io = _io_sizes(d, notes)
    g = _geometry(d, min_io, opt_io, custom)
    bus = _bus(d, g, notes)
    if d.alignment:
        notes.append(f"{d.name}: alignment offset {d.alignment} B: not reproduced (lab disks start aligned)")
    disk = _disk(d, bus, g, size_mib, names, notes)
    device = _device(d, bus, profiles, notes)
    if device:
        disk.table["device"] = device
        disk.comment.append(f"# device {device}: ROTA=1, a 7,200 rpm disk without cache (docs/device-models.md)")
    return bus, disk


def _io_sizes(d: HostDisk, notes: list[str]) -> tuple[int, int]:
    """The minimum and optimal I/O sizes the lab disk advertises: the host disk's, or none when the
    lab definition's checks would refuse them."""
    min_io, opt_io = _advertised(d)
    try:
        geo.check_block_sizes(d.name, d.logical, d.physical, min_io, opt_io)
    except UsageError as e:
        notes.append(f"{d.name}: minimum I/O {d.min_io} B, optimal I/O {d.opt_io} B: not reproduced "
                     f"({_why(e)}); the guest sees minimum I/O = physical sector, no optimal I/O")
        return 0, 0
    return min_io, opt_io


@dataclass
class LabDisk:
    """One [[vm.disk]] table of the lab and the comment written above it."""
    table: dict
    comment: list[str]


def _disk_name(d: HostDisk, bus: str, taken: set[str], notes: list[str]) -> str:
    """The lab disk's name: bus and kernel name in the characters a disk name may have, cut to 31;
    a name another disk already has (sdA and sda, or two names cut alike) gets -2, -3, ..."""
    base = re.sub(r"[^a-z0-9-]", "-", f"{bus}-{d.name}".lower())[:31]
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base[:31 - len(str(n)) - 1]}-{n}"
    if name != base:
        notes.append(f"{d.name}: named {name} in the lab ({base} is another disk's)")
    taken.add(name)
    return name


def _disk(d: HostDisk, bus: str, g: geo.Geometry, size_mib: int, taken: set[str], notes: list[str]) -> LabDisk:
    """The disk's [[vm.disk]] table, and a comment that describes the source disk."""
    size_gib = d.size / (1 << 30)
    about = (f"{d.name}: {d.model or 'model unknown'}, {d.transport or 'no transport'}, "
             f"{d.logical}/{d.physical} B sectors, minimum/optimal I/O {d.min_io}/{d.opt_io} B, "
             f"{size_gib:,.1f} GiB, {'rotational' if d.rotational else 'non-rotational'}"
             + (f"; its LBA formats offer {' and '.join(map(str, d.lba_formats))} B data (in use: "
                f"{d.lba_in_use} B)" if d.lba_formats else ""))
    table = {"name": _disk_name(d, bus, taken, notes), "bus": bus, "geometry": g.name, "size_mib": size_mib}
    return LabDisk(table, [comment(about)])


def _device(d: HostDisk, bus: str, profiles: set[str], notes: list[str]) -> str | None:
    """A 7,200 rpm disk's device model for a rotational disk, when it means something."""
    if not d.rotational:
        return None
    if bus == "virtio":
        notes.append(f"{d.name}: ROTA=1 on a virtual disk says nothing of what backs it: no device model")
    elif "hdd-7200" in profiles:
        return "hdd-7200"
    return None


def _vms(blocks: list[tuple[str, LabDisk]], source: str) -> list[list[LabDisk]]:
    """The disks by lab VM: one VM until it holds as many disks of a bus as a VM can
    (labdef.layout_problem); then the next."""
    vms: list[list[LabDisk]] = [[]]
    buses: list[str] = []
    for bus, disk in blocks:
        if labdef.layout_problem(buses + [bus]):
            vms.append([])
            buses = []
        buses.append(bus)
        vms[-1].append(disk)
    if len(vms) > labdef.MAX_VMS:
        raise UsageError(f"{source}: its {len(blocks)} disks would need {len(vms)} lab VMs, and a lab has at most "
                         f"{labdef.MAX_VMS}; remove from the file the disks you do not need (whole entries of its "
                         f"'blockdevices' list) and run from-host again")
    return vms


def _lab_toml(source: str, lab_name: str, notes: list[str], custom: dict[str, geo.Geometry],
              vms: list[list[LabDisk]]) -> tuple[dict, str]:
    """The lab definition as a table and as text: a header with what is not as on the source, then
    the tables ([lab], the host's own geometries, the VMs with their disks), each disk's comment
    above its [[vm.disk]] header. Every key and value is written by tomli-w and every comment line
    by comment(): nothing from the collector file is TOML of its own; plan() reads the text back
    and requires it to be exactly `doc`."""
    geometries = {}
    for name, g in sorted(custom.items()):
        table = {"logical_block_size": g.logical_block_size, "physical_block_size": g.physical_block_size}
        table.update({k: v for k, v in (("min_io_size", g.min_io_size), ("opt_io_size", g.opt_io_size)) if v})
        table["description"] = f"{g.topology} as on {source}"
        geometries[name] = table
    doc: dict = {"lab": {"name": lab_name}}
    if geometries:
        doc["geometry"] = geometries
    doc["vm"] = [{"name": f"vm{i}", "guest": "debian12", "disk": [disk.table for disk in disks]}
                 for i, disks in enumerate(vms, 1)]
    header = [comment(f"A lab whose disks reproduce those of {source}"),
              "# (sectorlab lab from-host; edit as you like).", "#", "# Not as on the source:",
              *[comment(f"- {n}") for n in notes], ""]
    # Section by section, so that each disk's comment sits above its own table (tomli-w would write
    # a VM's disks as one inline array): the keys and values of each are tomli-w's; the headers
    # are constants of this function.
    body = ["[lab]", tomli_w.dumps(doc["lab"])]
    if geometries:
        body.append(tomli_w.dumps({"geometry": geometries}))
    for vm, disks in zip(doc["vm"], vms):
        body += ["[[vm]]", tomli_w.dumps({k: v for k, v in vm.items() if k != "disk"})]
        for disk in disks:
            body += disk.comment + ["[[vm.disk]]", tomli_w.dumps(disk.table)]
    return doc, "\n".join(header + body).rstrip("\n") + "\n"


def lab_name_for(output: Path | None) -> str:
    if output is None:
        return "from-host"
    name = re.sub(r"[^a-z0-9-]", "-", output.stem.lower()).strip("-")[:31]
    if not labdef.NAME_RE.fullmatch(name or "-"):
        raise UsageError(f"-o {output}: the lab would be named {name!r}: expected a file name that starts with "
                         f"a letter (lower-case letters, digits and '-'), such as labs/prod-db1.toml")
    return name
