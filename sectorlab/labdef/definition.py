"""Lab definitions: which VMs, which data disks on which bus with which geometry.

A lab definition is a TOML file (labs/default.toml is the default lab). `validate()` checks
everything that can be checked before a VM starts and raises a UsageError whose one line names
the value, what was expected and what to do; its tables (sectorlab/labdef/tables.py) are printed
by `sectorlab lab fields`. What depends on the libvirt hosts (their URIs answer, free SSH ports,
disk space and memory) is sectorlab/lab/hostcheck.py's.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from .. import fields, inputs
from .. import geometry as geo
from ..devices import profiles
from ..errors import UsageError
from ..host import remote
from .tables import (
    DISK_FIELDS,
    GEOMETRY_FIELDS,
    LAB_FIELDS,
    MAX_VMS,
    NAME_RE,
    RETIRED_DISK_FIELDS,
    VM_FIELDS,
    name_field,
)

# What one VM's machine takes (QEMU's i440fx "pc" machine: one PCI bus of 32 slots, 0x00 the host
# bridge, 0x01 the PIIX3 with IDE, USB and ACPI; docs/reliability.md has the measurements):
MAX_NVME_PER_VM = 8  # one PCI slot each, from 0x18 up
# libvirt 9.0 addresses SCSI disks 7 to a controller (units 0-6) and adds an lsilogic controller,
# in another PCI slot, for each further 7; the domain has the one virtio-scsi controller.
MAX_SCSI_PER_VM = 7
# Slots 0x02-0x16 are libvirt's to fill from 0x02 up (0x17 is the user-mode network's, 0x18-0x1f
# the NVMe controllers'): the root disk, the seed, the virtio-serial controller and virtio-rng the
# libvirt provider adds, one per virtio-blk disk (virtio, and the virtio disk under each nvme-tcp
# namespace) and the virtio-scsi controller when there are SCSI disks share them.
PCI_SLOTS_SHARED = 0x16 - 0x02 + 1
PCI_SLOTS_FIXED = 4  # root disk, seed, virtio-serial, virtio-rng

FLOOR = "floor"  # the device profile of a disk that asks for none: no behaviour of its own

BUS_CODES = {"nvme": "nvme", "nvme-tcp": "ntcp", "virtio": "vblk", "scsi": "scsi"}


@dataclass
class Disk:
    name: str
    bus: str
    geometry: geo.Geometry
    size_mib: int
    serial: str
    device: str | None = None  # the device profile asked for (devices/); None: the lab's floor
    write_log: bool = False    # its model keeps every write's bytes (crash states from one run)


    @property
    def backing_serial(self) -> str | None:
        """nvme-tcp disks are backed by a virtio disk in the guest; this is that disk's serial."""
        return f"{self.serial[:17]}-bk" if self.bus == "nvme-tcp" else None  # serials are <= 17 chars for these


@dataclass
class VM:
    name: str
    guest: str
    memory_mib: int
    ssh_port: int  # 0: chosen at lab-up
    libvirt_uri: str
    disks: list[Disk] = field(default_factory=list)

    def profile(self, disk: Disk) -> str | None:
        """The device profile that serves `disk` (sectorlab/lab/modelled.py): the one it asks for, or
        FLOOR; None on a remote libvirt host, where sectorlab serves nothing and the disk is a qcow2
        volume of the lab's pool."""
        if remote.is_remote(self.libvirt_uri):
            return None
        return disk.device or FLOOR

    def write_cache(self, disk: Disk) -> str:
        """What the guest's queue/write_cache must say of `disk`: its device profile's write cache
        as the lab presents it (devices/profiles.py), or "write back", QEMU's own, for a qcow2
        volume on a remote host."""
        profile = self.profile(disk)
        return profiles.get(profile).presented if profile else "write back"


@dataclass
class Lab:
    name: str
    path: Path | None
    vms: list[VM]
    extra_geometries: dict[str, geo.Geometry]

    def disks(self):
        for vm in self.vms:
            for disk in vm.disks:
                yield vm, disk


# Appended to every lab's name (its domains, pool, volumes, state directory and lock follow the
# name): two checkouts on one host, such as two CI jobs on one runner, run the same lab files as
# labs of their own (`make test LAB_SUFFIX=-job2`).
SUFFIX_ENV = "SECTORLAB_LAB_SUFFIX"


def load(path: Path, suffix: str = "") -> Lab:
    """The lab definition at PATH, its name followed by `suffix` (make's LAB_SUFFIX, which the
    caller reads: lab.state.suffix_from_env)."""
    path = Path(path)
    data = inputs.read_toml(path, "lab definition", inputs.LAB_DEFINITION_MAX)
    return with_suffix(validate(data, path), suffix)


def with_suffix(lab: Lab, suffix: str) -> Lab:
    """The lab named with `suffix` ('' for none)."""
    if not suffix:
        return lab
    name = lab.name + suffix
    if not suffix.startswith("-") or not NAME_RE.fullmatch(name) or name == "images":
        raise UsageError(f"{SUFFIX_ENV}={suffix!r}: lab {lab.name!r} would be named {name!r}: expected '-' and "
                         f"lower-case letters, digits and '-', the whole name at most 31 characters "
                         f"(for example LAB_SUFFIX=-job2)")
    return dataclasses.replace(lab, name=name)


def validate(data: dict, path: Path | None = None) -> Lab:
    src = str(path) if path else "lab definition"
    # [bench] or [appliance] makes a lab definition a bench preset (labs/bench/);
    # sectorlab/bench/kinds.py reads it by its kind.
    fields.known_keys(src, data, {"lab", "vm", "geometry", "bench", "appliance"})
    lab = LAB_FIELDS.read(f"{src} [lab]", data.get("lab", {}))
    extra = _geometries(src, data.get("geometry", {}))
    vm_tables = data.get("vm", [])
    if not isinstance(vm_tables, list) or not vm_tables:
        raise UsageError(f"{src}: no [[vm]]: expected at least one VM with its [[vm.disk]] entries")
    if len(vm_tables) > MAX_VMS:
        raise UsageError(f"{src}: {len(vm_tables)} [[vm]] tables: a lab has at most {MAX_VMS} VMs; split it into "
                         f"several labs")
    seen = _Seen()
    context = {"lab_uri": lab["libvirt_uri"], "geometries": {**geo.geometries(), **extra}}
    vms = [_vm(src, i, vt, context, seen) for i, vt in enumerate(vm_tables, 1)]
    return Lab(lab["name"], path, vms, extra)


def _geometries(src: str, tables) -> dict[str, geo.Geometry]:
    if not isinstance(tables, dict):
        raise UsageError(f"{src}: geometry = {tables!r}: expected [geometry.NAME] tables")
    catalog = geo.geometries()
    extra: dict[str, geo.Geometry] = {}
    for gname, g in tables.items():
        where = f"{src} [geometry.{gname}]"
        name_field(where, "name", gname)
        if gname in catalog:
            raise UsageError(f"{where}: {gname} is already in the geometry catalog; give it another name")
        extra[gname] = geo.make(where, gname, GEOMETRY_FIELDS.read(where, g))
    return extra


@dataclass
class _Seen:
    """What earlier VMs and disks of the lab took: names, serials, ports must be unique."""
    vms: set[str] = field(default_factory=set)
    disks: dict[str, str] = field(default_factory=dict)
    serials: dict[str, str] = field(default_factory=dict)
    ports: dict[int, str] = field(default_factory=dict)


def _vm(src: str, i: int, vt, context: dict, seen: _Seen) -> VM:
    fields.known_keys(f"{src} [[vm]] #{i}", vt, VM_FIELDS.keys())
    # Read by position until its name is known, by name after it.
    name = VM_FIELDS.field("name").read(f"{src} [[vm]] #{i}", vt, {"index": i})
    where = f"{src} vm {name}"
    if name in seen.vms:
        raise UsageError(f"{where}: duplicate VM name {name!r}: VM names must be unique in a lab")
    seen.vms.add(name)
    v = VM_FIELDS.read(where, vt, index=i, **context)
    port = v["ssh_port"]
    if port and port in seen.ports:
        raise UsageError(f"{where}: ssh_port {port} is also the port of VM {seen.ports[port]}")
    if port:
        seen.ports[port] = name
    vm = VM(name, v["guest"], v["memory_mib"], port, v["libvirt_uri"])
    if not v["disk"]:
        raise UsageError(f"{where}: no [[vm.disk]]: a lab VM exists to show data disks; add at least one")
    for j, dt in enumerate(v["disk"], 1):
        vm.disks.append(_disk(f"{where} disk #{j}", dt, context, seen, name))
    problem = layout_problem([d.bus for d in vm.disks])
    if problem:
        raise UsageError(f"{where}: {problem}; put the others on another VM")
    if any(d.device for d in vm.disks) and remote.is_remote(vm.libvirt_uri):
        raise UsageError(f"{where}: device = ... on libvirt_uri {vm.libvirt_uri}: a device model is served by "
                         f"nbdkit on the host QEMU runs on, over a Unix socket, and sectorlab starts it on this "
                         f"host only; put that disk in a lab on qemu:///system")
    return vm


def layout_problem(buses: list[str]) -> str | None:
    """Why one VM cannot hold disks on these buses in its machine's slots, or None."""
    count = {bus: buses.count(bus) for bus in ("nvme", "nvme-tcp", "virtio", "scsi")}
    if count["nvme"] > MAX_NVME_PER_VM:
        return f"{count['nvme']} nvme disks: at most {MAX_NVME_PER_VM} per VM (one PCI slot each, 0x18-0x1f)"
    if count["scsi"] > MAX_SCSI_PER_VM:
        return (f"{count['scsi']} scsi disks: at most {MAX_SCSI_PER_VM} per VM (the units of its one virtio-scsi "
                f"controller as libvirt addresses them)")
    slots = PCI_SLOTS_FIXED + count["virtio"] + count["nvme-tcp"] + (1 if count["scsi"] else 0)
    if slots > PCI_SLOTS_SHARED:
        with_them = ", the SCSI controller" if count["scsi"] else ""
        return (f"{count['virtio']} virtio and {count['nvme-tcp']} nvme-tcp disks need {slots} PCI slots with the "
                f"root disk, the seed, the virtio-serial and virtio-rng devices{with_them}: a VM has "
                f"{PCI_SLOTS_SHARED} (0x02-0x16)")
    return None


def _disk(where: str, dt, context: dict, seen: _Seen, vm_name: str) -> Disk:
    retired = [key for key in RETIRED_DISK_FIELDS if isinstance(dt, dict) and key in dt]
    if retired:
        value = dt[retired[0]]
        shown = str(value).lower() if isinstance(value, bool) else repr(value)  # as the TOML says it
        raise UsageError(f"{where}: {retired[0]} = {shown}: {RETIRED_DISK_FIELDS[retired[0]]}")
    d = DISK_FIELDS.read(where, dt, **context)
    g, bus = d["geometry"], d["bus"]
    device = d["device"]
    name = d["name"] or DISK_FIELDS.field("name").check(  # the default, checked as a given name is
        where, "name", f"{bus}-{g.name}" + (f"-{device}" if device else ""), d)
    where = f"{where} ({name})"
    if name in seen.disks:
        raise UsageError(f"{where}: duplicate disk name {name!r} (also in VM {seen.disks[name]}): disk names "
                         f"are test ids and must be unique in the lab")
    seen.disks[name] = vm_name
    serial = d["serial"] or default_serial(bus, g.name, len(seen.serials))
    if serial in seen.serials:
        raise UsageError(f"{where}: duplicate serial {serial!r} (also disk {seen.serials[serial]}): the guest "
                         f"finds disks by serial, so serials must be unique in the lab")
    seen.serials[serial] = name
    return Disk(name, bus, g, d["size_mib"], serial, device, d["write_log"])


def default_serial(bus: str, geometry_name: str, index: int) -> str:
    """A serial that says what the disk is, e.g. sl01-nvme-4k; at most 17 characters so that the
    backing disk of an nvme-tcp namespace can be '<serial>-bk' within virtio's 20."""
    short = geometry_name[len("sector"):] if geometry_name.startswith("sector") else geometry_name
    return f"sl{index:02d}-{BUS_CODES[bus]}-{short}"[:17]
