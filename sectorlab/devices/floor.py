"""The lab's floor with model-served disks, side by side with today's data disks, in a running lab:
`sectorlab device-floor` (make bench-device-floor).

For each device profile asked for ("floor": the memory plugin under the filter with no parameters;
or any other of the catalog), a disk is served on this host (sectorlab/devices/server.py) and
hot-plugged into the lab's first VM as a virtio-blk device over QEMU's NBD client; then redo-writer
(one session, 4 KiB O_DIRECT+O_DSYNC) runs on it and on one of the lab's own virtio disks (a qcow2
volume), in turn, round after round (the order rotated each round), and each run's log file
parallel write p50 and p99 are kept. The report gives, per disk, the median of the runs' p50 and
p99 with their spread, and for each modelled disk against the qcow2 disk the ratio of the medians
and the Mann-Whitney p of the runs' p50s; and what the host's trace saw of the same writes (their
served time). The disks are unplugged and their servers stopped at the end, whatever happened.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import libvirt
from ..bench import stats
from ..errors import SectorlabError, UsageError
from ..guest import Guest
from ..lab.diskcheck import guests_from_lab_json, wait_for
from ..lab.record import LabRecord
from . import profiles, trace
from .server import DeviceServer

SERVE_DIR = Path("/run/sectorlab/device-floor")  # not a lab's own directory: lab-down leaves it
FLOOR = "floor"


@dataclass
class Target:
    label: str
    path: str                      # the guest's device
    server: DeviceServer | None = None
    p50: list[float] = field(default_factory=list)
    p99: list[float] = field(default_factory=list)


def _serve(lab: str, index: int, name: str, params: dict[str, str], uid: int) -> DeviceServer:
    directory = SERVE_DIR / lab / f"floor{index}"
    directory.mkdir(parents=True, exist_ok=True)
    os.chmod(directory.parent, 0o711)
    os.chmod(directory, 0o711)
    server = DeviceServer(directory, size=256 << 20, params=params, name=name)
    server.start()
    os.chown(server.socket, uid, -1)  # QEMU runs as its own user and must write to the socket
    return server


def _plug(uri: str, domain: str, index: int, server: DeviceServer) -> str:
    host = libvirt.get_host(uri)
    node, dev, serial = f"sl-floor{index}-node", f"sl-floor{index}", f"sl-floor{index}"
    host.qmp(domain, "blockdev-add", **{"node-name": node, "driver": "raw", "file": {
        "driver": "nbd", "server": {"type": "unix", "path": str(server.socket)}}})
    host.qmp(domain, "device_add", driver="virtio-blk-pci", id=dev, drive=node, serial=serial,
             logical_block_size=512, physical_block_size=512)
    return f"/dev/disk/by-id/virtio-{serial}"


def _unplug(uri: str, domain: str, index: int) -> None:
    host = libvirt.get_host(uri)
    with contextlib.suppress(SectorlabError):
        host.qmp(domain, "device_del", id=f"sl-floor{index}")
    for _ in range(100):  # the guest ejects the device through ACPI; the node is free after that
        try:
            host.qmp(domain, "blockdev-del", **{"node-name": f"sl-floor{index}-node"})
            return
        except SectorlabError as e:
            if "not found" in str(e).lower() or "cannot find" in str(e).lower():
                return
            time.sleep(0.1)


def _run(guest: Guest, path: str, seconds: int) -> tuple[float, float]:
    out = guest.check_output("sudo -n redo-writer run --target", path, "--blocksize", 4096, "--sessions", 1,
                             "--duration", seconds, "--log-size", 64 << 20, "--output", "json")
    lat = json.loads(out)["log_file_parallel_write"]
    return lat["p50_us"], lat["p99_us"]


def measure(record: LabRecord, models: list[str], rounds: int, seconds: int, progress) -> list[Target]:
    vm_name, vm = next(iter(record.vms.items()))
    guest = guests_from_lab_json(record)[vm_name]
    guest.connect()
    qcow = next((d for d in record.disks.values() if d.vm == vm_name and d.bus == "virtio"
                 and not d.device and d.logical_block_size == 512 and d.physical_block_size == 512), None)
    if qcow is None:
        raise UsageError(f"lab {record.lab}: no plain 512n virtio disk on {vm_name} to compare with")
    targets = [Target(f"qcow2 volume ({qcow.name})", f"/dev/disk/by-id/virtio-{qcow.serial}")]
    uid = libvirt.get_host(record.libvirt_uri).qemu_uid()
    try:
        for i, name in enumerate(models):
            params = profiles.get(name).params
            server = _serve(record.lab, i, name, params, uid)
            targets.append(Target(f"model {name}", _plug(record.libvirt_uri, vm.domain, i, server), server))
            if not wait_for(lambda t=targets[-1]: guest.run("test -b", t.path).ok, 30):
                raise SectorlabError(f"{targets[-1].path} did not appear in {vm_name} within 30 s")
        for r in range(rounds):
            order = targets[r % len(targets):] + targets[:r % len(targets)]
            for t in order:
                p50, p99 = _run(guest, t.path, seconds)
                t.p50.append(p50)
                t.p99.append(p99)
                progress(f"round {r + 1}/{rounds}: {t.label}: p50 {p50:.0f} us, p99 {p99:.0f} us")
    finally:
        for i, t in enumerate(x for x in targets if x.server):
            _unplug(record.libvirt_uri, vm.domain, i)
            t.server.stop()
    return targets


def report(targets: list[Target]) -> str:
    base = targets[0]
    lines = ["| disk | runs | log file parallel write p50: median (min-max) | p99: median (min-max) | "
             "p50 vs the qcow2 volume | host trace: served p50 / p99 |", "|---|---|---|---|---|---|"]
    for t in targets:
        spread50 = f"{statistics.median(t.p50):.0f} us ({min(t.p50):.0f}-{max(t.p50):.0f})"
        spread99 = f"{statistics.median(t.p99):.0f} us ({min(t.p99):.0f}-{max(t.p99):.0f})"
        versus = "" if t is base else (
            f"{statistics.median(t.p50) / statistics.median(base.p50):.2f}x, Mann-Whitney p = "
            f"{stats.mann_whitney(t.p50, base.p50):.3g}")
        served = ""
        if t.server is not None and t.server.trace.exists():
            w = trace.summary(trace.read(t.server.trace), "write")
            served = f"{w.get('served_p50_us', 0):.0f} / {w.get('served_p99_us', 0):.0f} us ({w['count']} writes)"
        lines.append(f"| {t.label} | {len(t.p50)} | {spread50} | {spread99} | {versus} | {served} |")
    return "\n".join(lines)
