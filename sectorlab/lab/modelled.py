"""A lab's model-served data disks (`device = "PROFILE"`): one nbdkit daemon per disk on this host
(sectorlab/devices/server.py), in a directory of the lab's own, /run/sectorlab/devices/<lab>/<disk>/
(its Unix socket, owned by QEMU's user; its pid and start time, log and trace), started by lab-up
before it hot-plugs the disks and stopped by lab-down, each by its recorded identity. The disks hold
nothing across a lab-down: they are throw-away disks in RAM, like a fresh volume."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .. import labdef, libvirt
from ..devices import profiles
from ..devices.server import DeviceServer
from ..errors import SectorlabError, UsageError
from .record import DiskRecord
from .state import Progress

SERVE_DIR = Path("/run/sectorlab/devices")
MEMORY_SHARE = 0.5  # of the host's memory that a lab's model-served disks may take if written through


def lab_dir(lab_name: str) -> Path:
    return SERVE_DIR / lab_name


def server(lab_name: str, disk_name: str, size: int = 0, params: dict[str, str] | None = None) -> DeviceServer:
    return DeviceServer(lab_dir(lab_name) / disk_name, size=size, params=params or {}, name="disk")


def params(d: DiskRecord) -> dict[str, str]:
    """The model's parameters for this disk: its profile's, and the physical sector of its geometry
    when larger than the logical one (a 512e disk reads a partly written 4 KiB sector first, whatever
    drive it is; the profile's write unit, when it has one, holds it)."""
    out = dict(profiles.get(d.device).params)
    if int(d.physical_block_size) > int(d.logical_block_size):
        out["physical-sector"] = str(d.physical_block_size)
    return out


def records(lab: labdef.Lab) -> dict[str, dict]:
    """lab.json's entries of the model-served disks (Terraform does not make them), keyed VM/NAME."""
    out = {}
    for vm in lab.vms:
        for d in vm.disks:
            if not d.device:
                continue
            g = d.geometry
            out[f"{vm.name}/{d.name}"] = {
                "backing_serial": None, "bus": d.bus, "geometry": g.name,
                "logical_block_size": g.logical_block_size, "min_io_size": g.min_io_size,
                "name": d.name, "opt_io_size": g.opt_io_size, "physical_block_size": g.physical_block_size,
                "serial": d.serial, "size_bytes": d.size_mib << 20,
                "volume": str(server(lab.name, d.name).socket), "vm": vm.name,
                "device": d.device}
    return out


def check_memory(lab: labdef.Lab, host: libvirt.LibvirtHost) -> None:
    """Refuse a lab whose model-served disks could take more than MEMORY_SHARE of the host's memory."""
    disks = [(vm.name, d) for vm in lab.vms for d in vm.disks if d.device]
    if not disks:
        return
    total = sum(d.size_mib << 20 for _, d in disks)
    memory = host.memory_bytes()
    if total > MEMORY_SHARE * memory:
        raise UsageError(f"lab {lab.name}: its {len(disks)} model-served disks take {total >> 20} MiB in RAM if "
                         f"written through, more than {MEMORY_SHARE:.0%} of this host's {memory >> 20} MiB; make "
                         f"them smaller (size_mib)")


def start(lab_name: str, disks: list[DiskRecord], qemu_uid: int, progress: Progress) -> list[str]:
    """Start the servers of these model-served disks that do not run; returns the disks started."""
    started = []
    for d in disks:
        if not d.device:
            continue
        s = server(lab_name, d.name, int(d.size_bytes), params(d))
        if s.pid() is not None:
            continue
        for directory in (SERVE_DIR, lab_dir(lab_name), s.directory):
            directory.mkdir(parents=True, exist_ok=True)
            os.chmod(directory, 0o711)  # QEMU's user reaches the socket through them, and lists nothing
        s.start()
        os.chown(s.socket, qemu_uid, -1)
        started.append(d.name)
    if started:
        progress(f"lab {lab_name}: device models serving {', '.join(started)} ({lab_dir(lab_name)})")
    return started


def dead(lab_name: str, disks: list[DiskRecord]) -> list[str]:
    """The model-served disks whose server does not run (lab status names them)."""
    return [d.name for d in disks if d.device and server(lab_name, d.name).pid() is None]


def stop(lab_name: str, progress: Progress) -> list[str]:
    """Stop every server of the lab (each by its recorded pid and start time) and remove the lab's
    directory; returns the disks stopped."""
    root = lab_dir(lab_name)
    if not root.is_dir():
        return []
    stopped = []
    for sub in sorted(p for p in root.iterdir() if p.is_dir()):
        try:
            if server(lab_name, sub.name).stop():
                stopped.append(sub.name)
        except SectorlabError as e:
            progress(f"lab {lab_name}: {e}")
    shutil.rmtree(root, ignore_errors=True)
    if stopped:
        progress(f"lab {lab_name}: device models stopped ({', '.join(stopped)})")
    return stopped
