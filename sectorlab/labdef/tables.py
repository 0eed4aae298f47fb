"""The field tables of a lab definition (sectorlab/fields.py): [lab], [[vm]], [[vm.disk]] and
[geometry.NAME], each key with its kind, default and help, and the checks of single values (a
name, a URI, a guest, a bus, a catalog entry). labdef reads a file through them and adds the rules
that tie fields together; `sectorlab lab fields` prints them (docs/lab-definition.md).
"""

from __future__ import annotations

import re

from .. import fields, images
from .. import geometry as geo
from ..devices import profiles
from ..errors import UsageError
from ..fields import whole_number
from ..host import remote

DEFAULT_URI = "qemu:///system"
NAME_RE = re.compile(r"[a-z][a-z0-9-]{0,30}")
SERIAL_RE = re.compile(r"[A-Za-z0-9_-]{1,20}")  # virtio-blk serials are at most 20 bytes
# XFS is a cross-check filesystem (labtests/databases/test_cross_checks.py) and xfsprogs 5.19+ refuses filesystems
# under 300 MB; a disk is sparse (in RAM behind its device model, or a thin qcow2 volume on a
# remote libvirt host), so a larger disk costs only what is written to it.
DEFAULT_DISK_MIB = 512
MIN_DISK_MIB = 16
MAX_DISK_MIB = 1 << 20
DEFAULT_MEMORY_MIB = 768
MAX_MEMORY_MIB = 65536
DISK_NAME_RE = re.compile(r"[a-z0-9][a-z0-9_.-]{0,62}")
# Not a limit of the machine: a lab of more VMs is several labs (each VM is a QEMU process with
# one vCPU; under TCG two or three already fill this host's two cores).
MAX_VMS = 16
URI_RE = re.compile(r"qemu(\+[a-z]+)?://[^/\s]*/(system|session)(\?\S*)?")


def name_field(where: str, key: str, value, got: dict | None = None) -> str:
    if not isinstance(value, str) or not NAME_RE.fullmatch(value):
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
    if not isinstance(value, str) or not URI_RE.fullmatch(value):
        raise UsageError(f"{where}: libvirt_uri = {value!r}: expected a QEMU URI such as qemu:///system or "
                         f"qemu+ssh://host/system")
    try:
        remote.ssh_host(value)  # a remote one: qemu+ssh, a host, a port, key files that exist
    except UsageError as e:
        raise UsageError(f"{where}: {e}") from e
    return value


def text_value(where: str, key: str, value) -> str:
    """`value` if it is a string; a list, table, number or boolean where a name is due is one line
    (a list as a dict key would be a TypeError)."""
    if not isinstance(value, str):
        raise UsageError(f"{where}: {key} = {value!r}: expected a string (a name, in quotes)")
    return value


def _guest(where: str, key: str, value, got: dict) -> str:
    text_value(where, key, value)
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
    text_value(where, key, value)
    if value not in geo.buses():
        raise UsageError(f"{where}: unknown bus {value!r}: expected one of {', '.join(geo.buses())}")
    return value


def _geometry(where: str, key: str, value, got: dict) -> geo.Geometry:
    known = got["geometries"]
    text_value(where, key, value)
    if value not in known:
        raise UsageError(f"{where}: unknown geometry {value!r}: expected one of {', '.join(known)} "
                         f"(or define it in a [geometry.NAME] table)")
    g = known[value]
    geo.check_bus(got["bus"], g, where)
    return g


def _catalog_name(where: str, key: str, value, known, what: str, tail: str) -> str:
    """`value` if the catalog knows it, else one line naming it and the names it knows."""
    text_value(where, key, value)
    if value not in known:
        raise UsageError(f"{where}: {key} = {value!r}: {what}; expected one of {', '.join(known)}{tail}")
    return value


def _device_name(where: str, key: str, value, got: dict) -> str:
    if profiles.is_file(value):  # a probe's profile file (docs/probe.md): read and checked as the catalog's
        text_value(where, key, value)
        try:
            profiles.get(value)
        except UsageError as e:
            raise UsageError(f"{where}: {key} = {value!r}: {e}") from None
        return value
    return _catalog_name(where, key, value, profiles.profiles(), "not a device profile of the catalog",
                         " (docs/device-models.md), or a profile file ending in .toml (docs/probe.md)")


def _disk_name(where: str, key: str, value, got: dict) -> str:
    if not isinstance(value, str) or not DISK_NAME_RE.fullmatch(value):
        raise UsageError(f"{where}: name = {value!r}: expected lower-case letters, digits, '-', '_' and '.'")
    return value


def _serial(where: str, key: str, value, got: dict) -> str:
    if not isinstance(value, str) or not SERIAL_RE.fullmatch(value):
        raise UsageError(f"{where}: serial = {value!r}: expected 1-20 characters of letters, digits, '-' and '_'")
    return value


def _block_size(where: str, key: str, value, got: dict) -> int:
    return value  # geometry.check_block_sizes checks the four together, as it checks the catalog's


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
    fields.Field("disk", fields.tables("[[vm.disk]]"), "the VM's data disks, [[vm.disk]] (at least one)",
                 default=lambda got: [], default_text="required"),
))
# Fields a lab definition may no longer have, and what to write instead (labdef refuses them).
RETIRED_DISK_FIELDS = {
    key: "dm-delay in the guest is retired (it served whole milliseconds on the guest kernel's 4 ms timer "
         "ticks: 1, 2 and 4 ms all cost 7.9 ms); give the disk a device profile instead, e.g. device = "
         "\"hdd-7200\" (sectorlab geometries lists them; docs/device-models.md)"
    for key in ("latency", "write_latency_us")
} | {
    "rmw": "QEMU's paced read-modify-write reads are retired (a budget of 120 reads/s, not a cost per "
           "read); give the disk a device profile: on a 512e geometry the model reads a partly written "
           "physical sector first, at the profile's read time, e.g. device = \"hdd-7200\" (a 512e "
           "spinning disk) or \"nvme-512e\" (docs/device-models.md)",
}
DISK_FIELDS = fields.Table("[[vm.disk]]", "One data disk of a VM.", (
    fields.Field("bus", fields.custom("nvme, nvme-tcp, virtio or scsi", _bus),
                 "how the guest sees it (sectorlab/geometries.json: buses)", default=fields.REQUIRED),
    fields.Field("geometry", fields.custom("a geometry of the catalog or the lab", _geometry),
                 "its sectors and I/O sizes: sectorlab/geometries.json, or a [geometry.NAME] of the lab",
                 default=fields.REQUIRED),
    fields.Field("device", fields.custom("a device profile", _device_name),
                 "the catalog's device profile whose model serves the disk from this host, a throw-away "
                 "disk in RAM, on any bus, or a profile file (a path ending in .toml: sectorlab probe's "
                 "profile.toml, docs/probe.md); none: \"floor\", no behaviour of its own (on a remote "
                 "libvirt host: none may be given, and the disk is a qcow2 volume; docs/device-models.md)"),
    fields.Field("name", fields.custom("a-z, 0-9, '-', '_', '.', at most 63", _disk_name),
                 "the disk's name, unique in the lab: the scenarios' test id",
                 default_text="BUS-GEOMETRY[-DEVICE]"),
    fields.Field("size_mib", fields.number(MIN_DISK_MIB, MAX_DISK_MIB),
                 "its size in MiB: at most this much of the host's RAM, as it is written (a thin qcow2 "
                 "volume on a remote libvirt host)",
                 default=DEFAULT_DISK_MIB),
    fields.Field("serial", fields.custom("1-20 of A-Z, a-z, 0-9, '-', '_'", _serial),
                 "the serial the guest finds it by, unique in the lab", default_text="slNN-BUS-GEOMETRY"),
    fields.Field("write_log", fields.BOOLEAN,
                 "its device model keeps every write's bytes on the host, from which a power cut's state "
                 "at any moment of a run is built (docs/crash.md); as much host disk as is written (none on a "
                 "remote libvirt host, where no model serves it)",
                 default=False),
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
