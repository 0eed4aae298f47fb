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

from . import geometry as geo
from . import images, inputs, libvirt, remote
from .errors import SectorlabError, UsageError

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

LAB_KEYS = {"name", "libvirt_uri"}
VM_KEYS = {"name", "guest", "memory_mib", "ssh_port", "libvirt_uri", "disk"}
DISK_KEYS = {"name", "bus", "geometry", "size_mib", "serial", "latency", "write_latency_us", "rmw"}
GEOMETRY_KEYS = {"logical_block_size", "physical_block_size", "min_io_size", "opt_io_size", "description"}
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


def known_keys(where: str, table: dict, allowed: set[str]) -> None:
    if not isinstance(table, dict):
        raise UsageError(f"{where}: expected a table, got {table!r}")
    extra = sorted(set(table) - allowed)
    if extra:
        raise UsageError(f"{where}: unknown key {extra[0]!r}: expected one of {', '.join(sorted(allowed))}")


def whole_number(where: str, key: str, value, minimum: int, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(f"{where}: {key} = {value!r}: expected a whole number")
    if value < minimum or (maximum is not None and value > maximum):
        upper = f" and at most {maximum}" if maximum is not None else ""
        raise UsageError(f"{where}: {key} = {value}: expected at least {minimum}{upper}")
    return value


def name_field(where: str, key: str, value) -> str:
    if not isinstance(value, str) or not NAME_RE.match(value):
        raise UsageError(f"{where}: {key} = {value!r}: expected lower-case letters, digits and '-', "
                         f"starting with a letter, at most 31 characters")
    return value


def _uri(where: str, value) -> str:
    if not isinstance(value, str) or not URI_RE.match(value):
        raise UsageError(f"{where}: libvirt_uri = {value!r}: expected a QEMU URI such as qemu:///system or "
                         f"qemu+ssh://host/system")
    try:
        remote.ssh_host(value)  # a remote one: qemu+ssh, a host, a port, key files that exist
    except UsageError as e:
        raise UsageError(f"{where}: {e}") from e
    return value


def validate(data: dict, path: Path | None = None) -> Lab:
    src = str(path) if path else "lab definition"
    # [bench] makes a lab definition a bench preset (labs/bench/); sectorlab/bench/preset.py reads it.
    known_keys(src, data, {"lab", "vm", "geometry", "bench"})
    lab_table = data.get("lab", {})
    known_keys(f"{src} [lab]", lab_table, LAB_KEYS)
    lab_name = name_field(f"{src} [lab]", "name", lab_table.get("name", "default"))
    if lab_name == "images":
        raise UsageError(f"{src} [lab]: name = 'images' is taken by the pool that holds the guest images "
                         f"(sectorlab-images); choose another name")
    default_uri = _uri(f"{src} [lab]", lab_table.get("libvirt_uri", DEFAULT_URI))

    catalog = geo.geometries()
    extra: dict[str, geo.Geometry] = {}
    for gname, g in data.get("geometry", {}).items():
        where = f"{src} [geometry.{gname}]"
        name_field(where, "name", gname)
        if gname in catalog:
            raise UsageError(f"{where}: {gname} is already in the geometry catalog; give it another name")
        known_keys(where, g, GEOMETRY_KEYS)
        extra[gname] = geo.make(where, gname, g, "defined by the lab")
    known_geometries = {**catalog, **extra}

    vm_tables = data.get("vm", [])
    if not isinstance(vm_tables, list) or not vm_tables:
        raise UsageError(f"{src}: no [[vm]]: expected at least one VM with its [[vm.disk]] entries")
    if len(vm_tables) > MAX_VMS:
        raise UsageError(f"{src}: {len(vm_tables)} [[vm]] tables: a lab has at most {MAX_VMS} VMs; split it into "
                         f"several labs")
    vms: list[VM] = []
    seen_vms: set[str] = set()
    seen_disks: dict[str, str] = {}
    seen_serials: dict[str, str] = {}
    seen_ports: dict[int, str] = {}
    for i, vt in enumerate(vm_tables, 1):
        where = f"{src} [[vm]] #{i}"
        known_keys(where, vt, VM_KEYS)
        name = name_field(where, "name", vt.get("name", f"vm{i}"))
        where = f"{src} vm {name}"
        if name in seen_vms:
            raise UsageError(f"{where}: duplicate VM name {name!r}: VM names must be unique in a lab")
        seen_vms.add(name)
        guest = vt.get("guest", "debian12")
        if guest not in images.guest_names():
            raise UsageError(f"{where}: unknown guest {guest!r}: expected one of {', '.join(images.guest_names())}")
        spec = images.load_guest(guest)
        if spec.firmware != "bios":
            raise UsageError(f"{where}: guest {guest} boots by {spec.firmware.upper()} (firmware in "
                             f"{spec.vars_file.name}); lab VMs boot it through its own boot loader under SeaBIOS, "
                             f"so lab-up cannot run it yet; use a guest whose template boots by BIOS")
        minimum = spec.lab_min_memory_mib
        memory = vt.get("memory_mib", max(minimum, 768))
        if isinstance(memory, int) and not isinstance(memory, bool) and memory < minimum:
            raise UsageError(f"{where}: memory_mib = {memory}: {guest} needs at least {minimum} MiB; raise memory_mib")
        memory = whole_number(where, "memory_mib", memory, minimum, 65536)
        port = whole_number(where, "ssh_port", vt.get("ssh_port", 0), 0, 65535)
        if 0 < port < 1024:
            raise UsageError(f"{where}: ssh_port = {port}: expected 0 (chosen at lab-up) or 1024-65535")
        if port and port in seen_ports:
            raise UsageError(f"{where}: ssh_port {port} is also the port of VM {seen_ports[port]}")
        if port:
            seen_ports[port] = name
        uri = _uri(where, vt.get("libvirt_uri", default_uri))
        vm = VM(name, guest, memory, port, uri)
        disk_tables = vt.get("disk", [])
        if not disk_tables:
            raise UsageError(f"{where}: no [[vm.disk]]: a lab VM exists to show data disks; add at least one")
        for j, dt in enumerate(disk_tables, 1):
            vm.disks.append(_disk(f"{where} disk #{j}", dt, known_geometries, seen_disks, seen_serials, name))
        problem = layout_problem([(d.bus, d.rmw is not None) for d in vm.disks])
        if problem:
            raise UsageError(f"{where}: {problem}; put the others on another VM")
        rmw = sum(1 for d in vm.disks if d.rmw)
        if rmw and remote.is_remote(uri):
            raise UsageError(f"{where}: rmw = true on libvirt_uri {uri}: a read-modify-write disk's reads are "
                             f"counted in QEMU's log and process on this host; put that disk in a lab on "
                             f"qemu:///system")
        vms.append(vm)
    return Lab(lab_name, path, vms, extra)


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


def _disk(where: str, dt: dict, known: dict[str, geo.Geometry], seen_disks: dict[str, str],
          seen_serials: dict[str, str], vm_name: str) -> Disk:
    known_keys(where, dt, DISK_KEYS)
    bus = dt.get("bus")
    gname = dt.get("geometry")
    if bus not in geo.buses():
        raise UsageError(f"{where}: unknown bus {bus!r}: expected one of {', '.join(geo.buses())}")
    if gname not in known:
        raise UsageError(f"{where}: unknown geometry {gname!r}: expected one of {', '.join(known)} "
                         f"(or define it in a [geometry.NAME] table)")
    g = known[gname]
    geo.check_bus(bus, g, where)
    latency = _latency(where, dt)
    rmw = _rmw(where, dt, bus, g)
    name = dt.get("name", f"{bus}-{gname}" + (f"-{latency.name}" if latency else "") + ("-rmw" if rmw else ""))
    if not isinstance(name, str) or not re.match(r"^[a-z0-9][a-z0-9_.-]{0,62}$", name):
        raise UsageError(f"{where}: name = {name!r}: expected lower-case letters, digits, '-', '_' and '.'")
    where = f"{where} ({name})"
    if name in seen_disks:
        raise UsageError(f"{where}: duplicate disk name {name!r} (also in VM {seen_disks[name]}): disk names "
                         f"are test ids and must be unique in the lab")
    seen_disks[name] = vm_name
    size = whole_number(where, "size_mib", dt.get("size_mib", DEFAULT_DISK_MIB), MIN_DISK_MIB, 1 << 20)
    serial = dt.get("serial", default_serial(bus, gname, len(seen_serials)))
    if not isinstance(serial, str) or not SERIAL_RE.match(serial):
        raise UsageError(f"{where}: serial = {serial!r}: expected 1-20 characters of letters, digits, '-' and '_'")
    if serial in seen_serials:
        raise UsageError(f"{where}: duplicate serial {serial!r} (also disk {seen_serials[serial]}): the guest "
                         f"finds disks by serial, so serials must be unique in the lab")
    seen_serials[serial] = name
    return Disk(name, bus, g, size, serial, latency, rmw)


def _rmw(where: str, dt: dict, bus: str, g: geo.Geometry) -> geo.ReadModifyWrite | None:
    """The disk's read-modify-write cost (`rmw = true`), None without one."""
    value = dt.get("rmw", False)
    if not isinstance(value, bool):
        raise UsageError(f"{where}: rmw = {value!r}: expected true or false")
    if not value:
        return None
    geo.check_rmw(where, bus, g)
    return geo.read_modify_write()


def _latency(where: str, dt: dict) -> geo.LatencyProfile | None:
    """The disk's latency profile (`latency = "hdd-7200"` or `write_latency_us = N`), None for none."""
    if "latency" in dt and "write_latency_us" in dt:
        raise UsageError(f"{where}: latency = {dt['latency']!r} and write_latency_us = {dt['write_latency_us']!r}: "
                         f"give a named profile or a custom latency, not both")
    if "write_latency_us" in dt:
        return geo.custom_latency(where, dt["write_latency_us"])
    name = dt.get("latency", "none")
    profiles = geo.latency_profiles()
    if name not in profiles:
        raise UsageError(f"{where}: latency = {name!r}: unknown latency profile; expected one of "
                         f"{', '.join(profiles)} (sectorlab geometries lists them), or write_latency_us = N")
    return profiles[name] if profiles[name].write_delay_ms else None


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
