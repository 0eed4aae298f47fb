"""Hot-plug over QEMU's monitor: the devices a lab's domains get after their guest is up, on the
cold and the warm path alike (the guest's ACPI PCI hot-plug finds them), in PCI slots of their own:
NVMe controllers from 0x18 up (libvirt fills slots from 0x2 up; virtio-net sits at 0x17).

- The emulated NVMe controllers: QEMU 7.2's cannot be saved ("non-migratable device"), so none is
  in the domain, whose state sectorlab/lab/warm.py saves; `hotplug_nvme` adds each, with its sector
  sizes; `unplug_nvme` takes one away (a namespace formatted in the guest is then back at its
  declared geometry when it is added again).
- An NVMe disk's block node is QEMU's NBD client on its device model's Unix socket
  (sectorlab/lab/modelled.py), or on a remote libvirt host its qcow2 volume.

QEMU's monitor is reached through virsh (LibvirtHost.qmp of the domain's libvirt host).
"""

from __future__ import annotations

import time

from .. import labdef
from ..errors import SectorlabError
from ..host import libvirt
from .record import DiskRecord

NVME_FIRST_SLOT = 0x18


def qmp(uri: str, domain: str, execute: str, **arguments) -> object:
    """QEMU's monitor of `domain`, on the libvirt host of `uri`."""
    return libvirt.get_host(uri).qmp(domain, execute, **arguments)


def nvme_plan(disks: list[DiskRecord]) -> list[tuple[str, str, DiskRecord]]:
    """The VM's NVMe controllers in a fixed order, each as (its id, its PCI slot (0x18 up), the disk)."""
    nvme = sorted((d for d in disks if d.bus == "nvme"), key=lambda d: d.name)
    if len(nvme) > labdef.MAX_NVME_PER_VM:
        raise SectorlabError(f"{len(nvme)} NVMe disks on one VM; at most {labdef.MAX_NVME_PER_VM} fit its PCI slots")
    return [(f"nvme{i}", f"0x{NVME_FIRST_SLOT + i:x}", d) for i, d in enumerate(nvme)]


def hotplug_nvme(uri: str, domain: str, disks: list[DiskRecord]) -> list[str]:
    """Add the NVMe controllers the running domain lacks; returns the ids added."""
    present = peripherals(uri, domain)
    added = []
    for dev, addr, d in nvme_plan(disks):
        if dev in present:
            continue
        node = f"{dev}-drive"
        qmp(uri, domain, "blockdev-add", **{"node-name": node, **_backing(d)})
        qmp(uri, domain, "device_add", driver="nvme", id=dev, drive=node, serial=d.serial,
            logical_block_size=d.logical_block_size, physical_block_size=d.physical_block_size,
            bus="pci.0", addr=addr)
        added.append(dev)
    return added


def nvme_controller_id(disks: list[DiskRecord], serial: str) -> str:
    """The QEMU device id of the NVMe controller of the disk with `serial` (nvme_plan's order)."""
    plan = {d.serial: dev for dev, _, d in nvme_plan(disks)}
    if serial not in plan:
        raise SectorlabError(f"no emulated NVMe disk has serial {serial!r} (they are: "
                             f"{', '.join(sorted(plan)) or 'none'})")
    return plan[serial]


def unplug_nvme(uri: str, domain: str, disks: list[DiskRecord], serial: str, timeout: float = 60.0) -> str:
    """Hot-unplug the NVMe controller of the disk with `serial` (the guest ejects it through ACPI
    PCI hot-plug) and drop its block node; returns its id. `hotplug_nvme` then adds it anew, as
    QEMU creates it at the declared sector sizes: a format done in the guest is gone, as after a
    QEMU restart.

    Safe to call again after a failure part-way: a controller already gone is not deleted twice,
    and a node already dropped is not looked for. The controller can leave the device tree before
    QEMU lets go of its block node (a CI run on a busy host got "Node nvme0-drive is in use" right
    after it): blockdev-del is tried again until the node is gone or the timeout runs out."""
    dev_id = nvme_controller_id(disks, serial)
    node = f"{dev_id}-drive"
    if dev_id in peripherals(uri, domain):
        qmp(uri, domain, "device_del", id=dev_id)
    deadline = time.monotonic() + timeout
    while dev_id in peripherals(uri, domain):
        if time.monotonic() > deadline:
            raise SectorlabError(f"{domain}: the guest did not release NVMe controller {dev_id} within {timeout:.0f} s "
                                 f"of device_del")
        time.sleep(0.2)
    while node in _block_nodes(uri, domain):
        try:
            qmp(uri, domain, "blockdev-del", **{"node-name": node})
        except SectorlabError as e:
            if time.monotonic() > deadline:
                raise SectorlabError(f"{domain}: NVMe controller {dev_id} is gone but its block node could not be "
                                     f"dropped within {timeout:.0f} s: {e}") from e
            time.sleep(0.2)
    return dev_id


def _backing(d: DiskRecord) -> dict:
    """The block node of a hot-plugged NVMe disk (without its name): QEMU's NBD client on its device
    model's Unix socket; or, on a remote libvirt host, its volume, a qcow2 file opened with O_DIRECT."""
    if d.device:
        return {"driver": "raw", "file": {"driver": "nbd", "server": {"type": "unix", "path": d.volume}}}
    return {"driver": "qcow2", "cache": {"direct": True},
            "file": {"driver": "file", "filename": d.volume, "aio": "threads", "cache": {"direct": True}}}


def peripherals(uri: str, domain: str) -> set[str]:
    """The ids of the devices added with an id (-device or device_add) the domain has now."""
    return {p["name"] for p in qmp(uri, domain, "qom-list", path="/machine/peripheral") or []}


def _block_nodes(uri: str, domain: str) -> set[str]:
    return {n["node-name"] for n in qmp(uri, domain, "query-named-block-nodes", flat=True) or []}
