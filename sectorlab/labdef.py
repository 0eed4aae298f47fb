"""Lab definitions: which VMs, which data disks on which bus with which geometry.

A lab definition is a TOML file (labs/default.toml is the default lab). `validate()` checks
everything that can be checked before a VM starts and raises a UsageError whose one line names
the value, what was expected and what to do. `check_environment()` adds what depends on this
host: free SSH ports and a reachable libvirt URI.
"""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from . import fields, images, inputs, libvirt, remote
from . import geometry as geo
from .errors import SectorlabError, UsageError
from .fields import known_keys, whole_number  # noqa: F401 (bench/preset reads them from here)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DEFAULT_URI = "qemu:///system"
NAME_RE = re.compile(r"^[a-z][a-z0-9-]{0,30}$")
SERIAL_RE = re.compile(r"^[A-Za-z0-9_-]{1,20}$")  # virtio-blk serials are at most 20 bytes
# XFS is a cross-check filesystem (labtests/test_xfs.py) and xfsprogs 5.19+ refuses filesystems
# under 300 MB; the volumes are thin qcow2, so a larger disk costs only what is written to it.
DEFAULT_DISK_MIB = 512
MIN_DISK_MIB = 16
MAX_DISK_MIB = 1 << 20
DEFAULT_MEMORY_MIB = 768
MAX_MEMORY_MIB = 65536
DISK_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,62}$")
# What one VM's machine takes (QEMU's i440fx "pc" machine: one PCI bus of 32 slots, 0x00 the host
# bridge, 0x01 the PIIX3 with IDE, USB and ACPI; docs/reliability.md has the measurements):
MAX_NVME_PER_VM = 8  # one PCI slot each, from 0x18 up
MAX_RMW_PER_VM = 4  # hot-plugged virtio-blk, one PCI slot each, from 0x16 down (libvirt fills slots from 0x2 up)
# libvirt 9.0 addresses SCSI disks 7 to a controller (units 0-6) and adds an lsilogic controller,
# in another PCI slot, for each further 7; the domain has the one virtio-scsi controller.
MAX_SCSI_PER_VM = 7
# Slots 0x02-0x16 are libvirt's to fill from 0x02 up (0x17 is the user-mode network's, 0x18-0x1f
# the NVMe controllers'), and the read-modify-write disks take them from 0x16 down: the root disk,
# the seed, the virtio-serial controller and virtio-rng the libvirt provider adds, one per
# virtio-blk disk (virtio, and the virtio disk under each nvme-tcp namespace), the virtio-scsi
# controller when there are SCSI disks, and the read-modify-write disks share them.
PCI_SLOTS_SHARED = 0x16 - 0x02 + 1
PCI_SLOTS_FIXED = 4  # root disk, seed, virtio-serial, virtio-rng
# Not a limit of the machine: a lab of more VMs is several labs (each VM is a QEMU process with
# one vCPU; under TCG two or three already fill this host's two cores).
MAX_VMS = 16
URI_RE = re.compile(r"^qemu(\+[a-z]+)?://[^/\s]*/(system|session)(\?\S*)?$")

BUS_CODES = {"nvme": "nvme", "nvme-tcp": "ntcp", "virtio": "vblk", "scsi": "scsi"}


@dataclass
class Disk:
    name: str
    bus: str
    geometry: geo.Geometry
    size_mib: int
    serial: str
    latency: geo.LatencyProfile | None = None  # None: no delay added
    rmw: geo.ReadModifyWrite | None = None  # None: no read-modify-write below the guest

    @property
    def mapper(self) -> str | None:
        """A disk with added latency is used through this device-mapper device (dm-delay over the
        disk found by serial), named after the disk."""
        return f"/dev/mapper/{self.name}" if self.latency else None

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


def load(path: Path, suffix: str | None = None) -> Lab:
    """The lab definition at PATH, its name followed by `suffix` ($SECTORLAB_LAB_SUFFIX when None)."""
    path = Path(path)
    text = inputs.read_text(path, "lab definition", inputs.LAB_DEFINITION_MAX)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"lab definition {path}: not valid TOML: {e}") from e
    return with_suffix(validate(data, path), suffix)


def with_suffix(lab: Lab, suffix: str | None = None) -> Lab:
    """The lab named with `suffix` ($SECTORLAB_LAB_SUFFIX when None)."""
    suffix = os.environ.get(SUFFIX_ENV, "") if suffix is None else suffix
    if not suffix:
        return lab
    name = lab.name + suffix
    if not suffix.startswith("-") or not NAME_RE.match(name) or name == "images":
        raise UsageError(f"{SUFFIX_ENV}={suffix!r}: lab {lab.name!r} would be named {name!r}: expected '-' and "
                         f"lower-case letters, digits and '-', the whole name at most 31 characters "
                         f"(for example LAB_SUFFIX=-job2)")
    return dataclasses.replace(lab, name=name)


def name_field(where: str, key: str, value, got: dict | None = None) -> str:
    if not isinstance(value, str) or not NAME_RE.match(value):
        raise UsageError(f"{where}: {key} = {value!r}: expected lower-case letters, digits and '-', "
                         f"starting with a letter, at most 31 characters")
    return value


def _lab_name(where: str, key: str, value, got: dict) -> str:
    name_field(where, key, value)
    if value == "images":
        raise UsageError(f"{where}: name = 'images' is taken by the pool that holds the guest images "
                         f"(sectorlab-images); choose another name")
    return value


def _uri(where: str, key: str, value, got: dict) -> str:
    if not isinstance(value, str) or not URI_RE.match(value):
        raise UsageError(f"{where}: libvirt_uri = {value!r}: expected a QEMU URI such as qemu:///system or "
                         f"qemu+ssh://host/system")
    try:
        remote.ssh_host(value)  # a remote one: qemu+ssh, a host, a port, key files that exist
    except UsageError as e:
        raise UsageError(f"{where}: {e}") from e
    return value


def _guest(where: str, key: str, value, got: dict) -> str:
    if value not in images.guest_names():
        raise UsageError(f"{where}: unknown guest {value!r}: expected one of {', '.join(images.guest_names())}")
    spec = images.load_guest(value)
    if spec.firmware != "bios":
        raise UsageError(f"{where}: guest {value} boots by {spec.firmware.upper()} (firmware in "
                         f"{spec.vars_file.name}); lab VMs boot it through its own boot loader under SeaBIOS, "
                         f"so lab-up cannot run it yet; use a guest whose template boots by BIOS")
    return value


def _memory(where: str, key: str, value, got: dict) -> int:
    guest = got["guest"]
    minimum = images.load_guest(guest).lab_min_memory_mib
    if isinstance(value, int) and not isinstance(value, bool) and value < minimum:
        raise UsageError(f"{where}: memory_mib = {value}: {guest} needs at least {minimum} MiB; raise memory_mib")
    return whole_number(where, key, value, minimum, MAX_MEMORY_MIB)


def _port(where: str, key: str, value, got: dict) -> int:
    port = whole_number(where, key, value, 0, 65535)
    if 0 < port < 1024:
        raise UsageError(f"{where}: ssh_port = {port}: expected 0 (chosen at lab-up) or 1024-65535")
    return port


def _bus(where: str, key: str, value, got: dict) -> str:
    if value not in geo.buses():
        raise UsageError(f"{where}: unknown bus {value!r}: expected one of {', '.join(geo.buses())}")
    return value


def _geometry(where: str, key: str, value, got: dict) -> geo.Geometry:
    known = got["geometries"]
    if value not in known:
        raise UsageError(f"{where}: unknown geometry {value!r}: expected one of {', '.join(known)} "
                         f"(or define it in a [geometry.NAME] table)")
    g = known[value]
    geo.check_bus(got["bus"], g, where)
    return g


def _latency_name(where: str, key: str, value, got: dict) -> str:
    profiles = geo.latency_profiles()
    if value not in profiles:
        raise UsageError(f"{where}: latency = {value!r}: unknown latency profile; expected one of "
                         f"{', '.join(profiles)} (sectorlab geometries lists them), or write_latency_us = N")
    return value


def _disk_name(where: str, key: str, value, got: dict) -> str:
    if not isinstance(value, str) or not DISK_NAME_RE.match(value):
        raise UsageError(f"{where}: name = {value!r}: expected lower-case letters, digits, '-', '_' and '.'")
    return value


def _serial(where: str, key: str, value, got: dict) -> str:
    if not isinstance(value, str) or not SERIAL_RE.match(value):
        raise UsageError(f"{where}: serial = {value!r}: expected 1-20 characters of letters, digits, '-' and '_'")
    return value


def _block_size(where: str, key: str, value, got: dict) -> int:
    return value  # geometry.check_block_sizes checks the four together, as it checks the catalog's


def _write_latency(where: str, key: str, value, got: dict) -> geo.LatencyProfile:
    if got["latency"] is not None:
        raise UsageError(f"{where}: latency = {got['latency']!r} and write_latency_us = {value!r}: give a named "
                         f"profile or a custom latency, not both")
    return geo.custom_latency(where, value)


NAME = fields.custom("name: a-z, 0-9, '-', at most 31", name_field)
LAB_FIELDS = fields.Table("[lab]", "The lab as a whole (the table may be left out).", (
    fields.Field("name", fields.custom("name: a-z, 0-9, '-', at most 31", _lab_name),
                 "prefix of the lab's libvirt objects; its state is in ~/.cache/sectorlab/labs/NAME/",
                 default="default"),
    fields.Field("libvirt_uri", fields.custom("QEMU URI", _uri),
                 "where the VMs run: qemu:///system, or qemu+ssh://[user@]host[:port]/system[?keyfile=..."
                 "&knownhosts=...]", default=DEFAULT_URI),
))
VM_FIELDS = fields.Table("[[vm]]", f"One VM of the lab (at least one, at most {MAX_VMS}).", (
    fields.Field("name", NAME, "the VM's name, unique in the lab; its domain is sectorlab-LAB-NAME",
                 default=lambda got: f"vm{got['index']}", default_text="vm1, vm2, ... by position"),
    fields.Field("guest", fields.custom("a guest of packer/vars/", _guest),
                 "the guest image: packer/vars/GUEST.pkrvars.hcl", default="debian12"),
    fields.Field("memory_mib", fields.custom(f"integer, the guest's minimum-{MAX_MEMORY_MIB}", _memory),
                 "the VM's memory in MiB",
                 default=lambda got: max(images.load_guest(got["guest"]).lab_min_memory_mib, DEFAULT_MEMORY_MIB),
                 default_text=f"{DEFAULT_MEMORY_MIB}, or the guest's minimum if higher"),
    fields.Field("ssh_port", fields.custom("integer, 0 or 1024-65535", _port),
                 "the SSH forward on the libvirt host's 127.0.0.1; 0: one free port chosen at the first "
                 "lab-up, then kept", default=0),
    fields.Field("libvirt_uri", fields.custom("QEMU URI", _uri), "where this VM runs",
                 default=lambda got: got["lab_uri"], default_text="[lab]'s"),
    fields.Field("disk", fields.TABLES, "the VM's data disks, [[vm.disk]] (at least one)",
                 default=lambda got: [], default_text="required"),
))
DISK_FIELDS = fields.Table("[[vm.disk]]", "One data disk of a VM.", (
    fields.Field("bus", fields.custom("nvme, nvme-tcp, virtio or scsi", _bus),
                 "how the guest sees it (sectorlab/geometries.json: buses)", default=fields.REQUIRED),
    fields.Field("geometry", fields.custom("a geometry of the catalog or the lab", _geometry),
                 "its sectors and I/O sizes: sectorlab/geometries.json, or a [geometry.NAME] of the lab",
                 default=fields.REQUIRED),
    fields.Field("latency", fields.custom("a latency profile", _latency_name),
                 "a latency profile of the catalog added to every write (sectorlab geometries lists them)",
                 default_text='"none"'),
    fields.Field("write_latency_us", fields.custom(f"integer, 1000-{geo.MAX_WRITE_LATENCY_US}, a multiple of 1000",
                                                   _write_latency),
                 "a latency of its own added to every write, in whole milliseconds (not with latency)"),
    fields.Field("rmw", fields.BOOLEAN, "unaligned writes read the physical sector first (512e-like "
                 "geometries on virtio only)", default=False),
    fields.Field("name", fields.custom("a-z, 0-9, '-', '_', '.', at most 63", _disk_name),
                 "the disk's name, unique in the lab: the scenarios' test id",
                 default_text="BUS-GEOMETRY[-LATENCY][-rmw]"),
    fields.Field("size_mib", fields.number(MIN_DISK_MIB, MAX_DISK_MIB), "its size in MiB (a thin qcow2 volume)",
                 default=DEFAULT_DISK_MIB),
    fields.Field("serial", fields.custom("1-20 of A-Z, a-z, 0-9, '-', '_'", _serial),
                 "the serial the guest finds it by, unique in the lab", default_text="slNN-BUS-GEOMETRY"),
))
_POWER = f"integer, a power of two, {geo.MIN_BLOCK_SIZE}"
_MULTIPLE = "integer, a multiple of logical"
GEOMETRY_FIELDS = fields.Table("[geometry.NAME]", "A geometry of the lab's own, beside the catalog's.", (
    fields.Field("logical_block_size", fields.custom(f"{_POWER}-{geo.MAX_LOGICAL_BLOCK_SIZE}", _block_size),
                 "the logical sector in bytes", default=fields.REQUIRED),
    fields.Field("physical_block_size", fields.custom(f"{_POWER}-{geo.MAX_BLOCK_SIZE}, at least logical",
                                                      _block_size),
                 "the physical sector in bytes", default=fields.REQUIRED),
    fields.Field("min_io_size", fields.custom(f"{_MULTIPLE}, at least physical, at most {geo.MAX_IO_SIZE}",
                                              _block_size),
                 "the minimum I/O size advertised (0: none; the kernel takes the physical sector)", default=0),
    fields.Field("opt_io_size", fields.custom(f"{_MULTIPLE}, at least min_io_size, at most {geo.MAX_IO_SIZE}",
                                              _block_size),
                 "the optimal I/O size advertised (0: none)", default=0),
    fields.Field("description", fields.TEXT, "what it models", default="defined by the lab"),
))
TABLES = (LAB_FIELDS, VM_FIELDS, DISK_FIELDS, GEOMETRY_FIELDS)


def validate(data: dict, path: Path | None = None) -> Lab:
    src = str(path) if path else "lab definition"
    # [bench] makes a lab definition a bench preset (labs/bench/); sectorlab/bench/preset.py reads it.
    fields.known_keys(src, data, {"lab", "vm", "geometry", "bench"})
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
    name = VM_FIELDS.field("name").read(f"{src} [[vm]] #{i}", vt if isinstance(vt, dict) else {}, {"index": i})
    where = f"{src} vm {name}"
    if name in seen.vms:
        raise UsageError(f"{where}: duplicate VM name {name!r}: VM names must be unique in a lab")
    seen.vms.add(name)
    v = VM_FIELDS.read(where if isinstance(vt, dict) else f"{src} [[vm]] #{i}", vt, index=i, **context)
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
    problem = layout_problem([(d.bus, d.rmw is not None) for d in vm.disks])
    if problem:
        raise UsageError(f"{where}: {problem}; put the others on another VM")
    if any(d.rmw for d in vm.disks) and remote.is_remote(vm.libvirt_uri):
        raise UsageError(f"{where}: rmw = true on libvirt_uri {vm.libvirt_uri}: a read-modify-write disk's reads "
                         f"are counted in QEMU's log and process on this host; put that disk in a lab on "
                         f"qemu:///system")
    return vm


def layout_problem(disks: list[tuple[str, bool]]) -> str | None:
    """Why one VM cannot hold these disks ((bus, rmw) pairs) in its machine's slots, or None."""
    count = {bus: sum(1 for b, rmw in disks if b == bus and not rmw) for bus in ("nvme", "nvme-tcp", "virtio", "scsi")}
    rmw = sum(1 for _, r in disks if r)
    if count["nvme"] > MAX_NVME_PER_VM:
        return f"{count['nvme']} nvme disks: at most {MAX_NVME_PER_VM} per VM (one PCI slot each, 0x18-0x1f)"
    if rmw > MAX_RMW_PER_VM:
        return f"{rmw} disks with rmw = true: at most {MAX_RMW_PER_VM} per VM (one PCI slot each, from 0x16 down)"
    if count["scsi"] > MAX_SCSI_PER_VM:
        return (f"{count['scsi']} scsi disks: at most {MAX_SCSI_PER_VM} per VM (the units of its one virtio-scsi "
                f"controller as libvirt addresses them)")
    slots = PCI_SLOTS_FIXED + count["virtio"] + count["nvme-tcp"] + (1 if count["scsi"] else 0) + rmw
    if slots > PCI_SLOTS_SHARED:
        with_them = ", the SCSI controller" if count["scsi"] else ""
        with_them += " and the read-modify-write disks" if rmw else ""
        return (f"{count['virtio']} virtio and {count['nvme-tcp']} nvme-tcp disks need {slots} PCI slots with the "
                f"root disk, the seed, the virtio-serial and virtio-rng devices{with_them}: a VM has "
                f"{PCI_SLOTS_SHARED} (0x02-0x16)")
    return None


def _disk(where: str, dt, context: dict, seen: _Seen, vm_name: str) -> Disk:
    d = DISK_FIELDS.read(where, dt, **context)
    g, bus = d["geometry"], d["bus"]
    latency = _latency(where, d)
    rmw = _rmw(where, d["rmw"], bus, g)
    name = d["name"] or _disk_name(where, "name", f"{bus}-{g.name}" + (f"-{latency.name}" if latency else "")
                                   + ("-rmw" if rmw else ""), d)
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
    return Disk(name, bus, g, d["size_mib"], serial, latency, rmw)


def _rmw(where: str, rmw: bool, bus: str, g: geo.Geometry) -> geo.ReadModifyWrite | None:
    """The disk's read-modify-write cost (`rmw = true`), None without one."""
    if not rmw:
        return None
    geo.check_rmw(where, bus, g)
    return geo.read_modify_write()


def _latency(where: str, d: dict) -> geo.LatencyProfile | None:
    """The disk's latency profile (`latency = "hdd-7200"` or `write_latency_us = N`), None for none."""
    if d["write_latency_us"] is not None:
        return d["write_latency_us"]
    profile = geo.latency_profiles()[d["latency"] or "none"]
    return profile if profile.write_delay_ms else None


def default_serial(bus: str, geometry_name: str, index: int) -> str:
    """A serial that says what the disk is, e.g. sl01-nvme-4k; at most 17 characters so that the
    backing disk of an nvme-tcp namespace can be '<serial>-bk' within virtio's 20."""
    short = geometry_name[len("sector"):] if geometry_name.startswith("sector") else geometry_name
    return f"sl{index:02d}-{BUS_CODES[bus]}-{short}"[:17]


def port_in_use(port: int) -> bool:
    """Whether something listens on this host's 127.0.0.1:port."""
    return libvirt.get_host("qemu:///system").port_in_use(port)


def check_environment(lab: Lab, own_ports: set[int] = frozenset(),
                      holder_of: Callable[[int], str | None] = lambda port: None,
                      pool_dir: Callable[[str], str] | None = None) -> None:
    """Host-dependent checks: libvirt URIs answer, the lab fits the host's disk and memory
    (check_capacity, with `pool_dir` naming where its volumes go), fixed SSH ports are free (or
    already this lab's) on the libvirt host's 127.0.0.1. `holder_of` names what holds a port
    (another lab's VM) when it knows."""
    for uri in sorted({vm.libvirt_uri for vm in lab.vms}):
        check_uri(uri)
    if pool_dir is not None:
        check_capacity(lab, pool_dir)
    hosts = {uri: libvirt.get_host(uri) for uri in {vm.libvirt_uri for vm in lab.vms if vm.ssh_port}}
    for vm in lab.vms:
        where = hosts.get(vm.libvirt_uri)
        if vm.ssh_port and vm.ssh_port not in own_ports and where.port_in_use(vm.ssh_port):
            holder = holder_of(vm.ssh_port)
            raise UsageError(f"vm {vm.name}: ssh_port {vm.ssh_port} on 127.0.0.1 is already taken"
                             f"{f' on {where.label}' if where.remote else ''}"
                             f"{f' (by {holder})' if holder else ''}; choose another port or 0 to let lab-up "
                             f"pick one")


def check_capacity(lab: Lab, pool_dir: Callable[[str], str]) -> None:
    """Before anything of the lab is made: its data volumes' full size fits the free space where
    they go (the volumes are thin, but the scenarios and benches may write them whole), counting
    what the lab's pool already holds as free (a running lab's own volumes), and its VMs' memory
    fits the libvirt host's."""
    for uri in sorted({vm.libvirt_uri for vm in lab.vms}):
        vms = [vm for vm in lab.vms if vm.libvirt_uri == uri]
        host = libvirt.get_host(uri)
        where = f" on {host.label}" if host.remote else ""
        want = sum(d.size_mib for vm in vms for d in vm.disks) << 20
        free, own = host.space(pool_dir(lab.name))
        if want > free + own:
            raise UsageError(f"lab {lab.name}: its data disks add up to {want / 2**30:,.1f} GiB, and "
                             f"{pool_dir(lab.name)}{where} has {(free + own) / 2**30:,.1f} GiB free; make "
                             f"size_mib smaller, the lab smaller, or free space there")
        memory = sum(vm.memory_mib for vm in vms) << 20
        total = host.memory_bytes()
        if memory > total:
            raise UsageError(f"lab {lab.name}: its VMs' memory adds up to {memory >> 20} MiB, more than the "
                             f"{total >> 20} MiB of the libvirt host{where}; make memory_mib smaller or the lab "
                             f"smaller")


def check_uri(uri: str) -> None:
    if remote.is_remote(uri):  # the host's key and sectorlab's own SSH first: they name what is wrong
        try:
            remote.client(uri)
        except SectorlabError as e:
            raise UsageError(str(e)) from e
    try:
        proc = subprocess.run(["virsh", "-c", remote.virsh_uri(uri), "uri"], capture_output=True, text=True,
                              timeout=30)
    except FileNotFoundError as e:
        raise UsageError("virsh is not installed; run scripts/bootstrap") from e
    except subprocess.TimeoutExpired as e:
        raise UsageError(f"libvirt URI {uri}: no answer in 30 s; check that libvirtd runs there") from e
    if proc.returncode != 0:
        detail = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "no message"
        if remote.is_remote(uri):
            raise UsageError(f"libvirt URI {uri} is unreachable ({detail}); check that SSH reaches "
                             f"{remote.ssh_host(uri).label} with its key and known_hosts entry and that libvirtd "
                             f"runs there, or fix libvirt_uri")
        raise UsageError(f"libvirt URI {uri} is unreachable ({detail}); start libvirtd (scripts/bootstrap does "
                         f"on this host) or fix libvirt_uri")
