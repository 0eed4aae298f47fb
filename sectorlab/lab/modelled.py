"""A lab's data disks, each served by its device model (`device = "PROFILE"`, or the floor: labdef's
VM.profile): one nbdkit daemon per disk on this host (sectorlab/devices/server.py), in a directory of
the lab's own, /run/sectorlab/devices/<lab>/<disk>/ (its Unix socket, owned by QEMU's user; its pid
and start time, log and trace), started by lab-up before Terraform starts or restores the domains
(whose disks are QEMU's NBD client on the socket; an NVMe disk's is hot-plugged) and stopped by
lab-down after them, each by its recorded identity. The disks hold nothing across a lab-down: they
are throw-away disks in RAM, like a fresh volume. A lab on a remote libvirt host has qcow2 volumes."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from .. import labdef
from ..devices import profiles
from ..devices.server import DeviceServer
from ..errors import SectorlabError, UsageError
from ..host import libvirt
from .record import DiskRecord
from .state import Progress, state_dir

SERVE_DIR = Path("/run/sectorlab/devices")
MEMORY_SHARE = 0.5  # of the host's memory that a lab's model-served disks may take if written through


WRITELOGS = "writelogs"  # in the lab's state directory: the disks' write logs, one directory each


def lab_dir(lab_name: str) -> Path:
    return SERVE_DIR / lab_name


def server(lab_name: str, disk_name: str, size: int = 0, params: dict[str, str] | None = None,
           write_log: bool = False) -> DeviceServer:
    # A write log grows by every byte written: it goes to the lab's state directory, on disk (the
    # models' directory is under /run, in RAM on most hosts), and goes with the lab. A lab's models
    # outlive the `sectorlab lab up` that starts them: not tied to it (the device path's are).
    return DeviceServer(lab_dir(lab_name) / disk_name, size=size, params=params or {}, name="disk",
                        write_log=write_log, log_dir=state_dir(lab_name) / WRITELOGS / disk_name,
                        tied_to_parent=False, floor_switchable=True)


def params(profile: str, logical: int, physical: int) -> dict[str, str]:
    """The model's parameters for a disk of this profile and sectors (DeviceProfile.params_for)."""
    return profiles.get(profile).params_for(logical, physical)


def devices(lab: labdef.Lab) -> dict[str, dict]:
    """What lab.json records of each disk's model, keyed VM/NAME: the profile serving it ("device";
    None: a volume) and, when it keeps one, its write log ("write_log": True)."""
    return {f"{vm.name}/{d.name}": {"device": vm.profile(d), **({"write_log": True} if vm.profile(d) and d.write_log
                                                                else {})}
            for vm, d in lab.disks()}


SOCKET_PATH_MAX = 107  # bytes of a Unix socket's path (sun_path holds 108 with its NUL)


def check(lab: labdef.Lab, host: libvirt.LibvirtHost) -> None:
    """Refuse a lab whose model-served disks could take more than MEMORY_SHARE of the host's memory,
    or whose socket path would be too long for a Unix socket."""
    disks = [d for vm, d in lab.disks() if vm.profile(d)]
    if not disks:
        return
    for d in disks:
        path = str(server(lab.name, d.name).socket)
        if len(path.encode()) > SOCKET_PATH_MAX:
            raise UsageError(f"lab {lab.name} disk {d.name}: its device model's socket {path} is "
                             f"{len(path.encode())} bytes, more than the {SOCKET_PATH_MAX} a Unix socket's path "
                             f"takes; give the disk or the lab a shorter name")
    total = sum(d.size_mib << 20 for d in disks)
    memory = host.memory_bytes()
    if total > MEMORY_SHARE * memory:
        raise UsageError(f"lab {lab.name}: its {len(disks)} model-served disks take {total >> 20} MiB in RAM if "
                         f"written through, more than {MEMORY_SHARE:.0%} of this host's {memory >> 20} MiB; make "
                         f"them smaller (size_mib)")


SERVED = "served.json"  # beside a running model: the size, profile and parameters it was started with


def _served(profile: str, d: labdef.Disk) -> dict:
    g = d.geometry
    return {"size": d.size_mib << 20, "profile": profile,
            "params": params(profile, g.logical_block_size, g.physical_block_size), "write_log": d.write_log}


def _what(served: dict) -> str:
    return (f"{served.get('size', 0) >> 20} MiB as {served.get('profile', '?')}"
            + (" with a write log" if served.get("write_log") else ""))


def changed(lab: labdef.Lab) -> list[str]:
    """The lab's disks whose model runs with another size, profile or parameters than the definition
    now gives it (a converging lab-up then brings the lab up fresh: a running model keeps its disk)."""
    out = []
    for vm, d in lab.disks():
        profile = vm.profile(d)
        s = server(lab.name, d.name)
        if not profile or s.pid() is None:
            continue
        want = _served(profile, d)
        try:
            got = json.loads((s.directory / SERVED).read_text())
        except (OSError, ValueError):
            got = {}
        got.setdefault("write_log", False)  # a model started before disks could keep one
        if got != want:
            out.append(f"disk {d.name}'s device model serves {_what(got)}, the definition asks for {_what(want)}")
    return out


def start(lab: labdef.Lab, qemu_uid: int, progress: Progress) -> list[str]:
    """Start the servers of the lab's model-served disks that do not run; returns the disks started."""
    started = []
    for vm, d in lab.disks():
        profile = vm.profile(d)
        if not profile:
            continue
        served = _served(profile, d)
        s = server(lab.name, d.name, served["size"], served["params"], served["write_log"])
        if s.pid() is not None:
            continue
        for directory in (SERVE_DIR, lab_dir(lab.name), s.directory):
            directory.mkdir(parents=True, exist_ok=True)
            os.chmod(directory, 0o711)  # QEMU's user reaches the socket through them, and lists nothing
        s.start()
        os.chown(s.socket, qemu_uid, -1)
        (s.directory / SERVED).write_text(json.dumps(served))
        started.append(d.name)
    if started:
        progress(f"lab {lab.name}: device models serving {', '.join(started)} ({lab_dir(lab.name)})")
    return started


def dead(lab_name: str, disks: list[DiskRecord]) -> list[str]:
    """The model-served disks whose server does not run (lab status names them)."""
    return [d.name for d in disks if d.device and server(lab_name, d.name).pid() is None]


def stop(lab_name: str, progress: Progress) -> list[str]:
    """Stop every server of the lab (each by its recorded pid and start time) and remove the lab's
    directory and its disks' write logs; returns the disks stopped."""
    root = lab_dir(lab_name)
    shutil.rmtree(state_dir(lab_name) / WRITELOGS, ignore_errors=True)
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
