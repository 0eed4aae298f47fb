"""A power cut of a lab's disk, for the guest to recover from: the guest's QEMU is killed (its pid
from libvirt's pid file of that very domain), the moment taken on the host's clock, which the
model's trace shares; the disk's model keeps running. What the cut left (crash/powerloss.py, on the
trace of the disk's model) is then written into the model's disk through its socket (qemu-img, an
NBD client), so that the guest, started again, reads the disk a power cut would have left. The
ranges a cut leaves unreadable go to the model's `unreadable=` file: from then on it answers them
with EIO, as a drive with a medium error does. What the cut decided is kept beside the trace
(cut.json).

The disk's log must not wrap (each byte written once, as the device path's crash runs need: the
cut's state is built from the final image and zeros)."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ..devices import trace
from ..errors import SectorlabError
from ..host import libvirt
from ..lab import modelled
from ..lab.record import DiskRecord, LabRecord
from ..paths import write_atomic
from . import powerloss
from .redolog import WORK_DIR, RedoLog, cut_in_place, disk_after


@dataclass(frozen=True)
class Cut:
    at_us: float                  # the host's CLOCK_MONOTONIC, as the trace's t_us
    state: powerloss.State
    log: RedoLog
    acknowledged: int             # the redo position every commit acknowledged before the cut lies within
    image: Path                   # the disk the cut left, as written back into the model (its log's extent)


def kill(record: LabRecord, vm: str) -> float:
    """SIGKILL to the QEMU of the lab's domain of `vm`: a power cut as the guest sees it. Returns the
    moment (us, CLOCK_MONOTONIC) just before the signal."""
    domain = record.vm(vm).domain
    pid = libvirt.qemu_pid(domain)
    at_us = time.monotonic_ns() / 1000
    os.kill(pid, signal.SIGKILL)
    host = libvirt.get_host(record.libvirt_uri)
    deadline = time.monotonic() + 30
    while host.virsh("domstate", domain, check=False).strip() == "running":
        if time.monotonic() > deadline:
            raise SectorlabError(f"{domain}: still running 30 s after its QEMU (pid {pid}) was killed")
        time.sleep(0.2)
    return at_us


def running(record: LabRecord, vm: str) -> bool:
    """Whether libvirt says the lab's domain of `vm` runs."""
    host = libvirt.get_host(record.libvirt_uri)
    return host.virsh("domstate", record.vm(vm).domain, check=False).strip() == "running"


def start(record: LabRecord, vm: str) -> None:
    """The domain started again, booting afresh (a saved state of it is not a power-on)."""
    host = libvirt.get_host(record.libvirt_uri)
    host.virsh("start", "--force-boot", record.vm(vm).domain)


def apply(record: LabRecord, disk: DiskRecord, at_us: float, blocksize: int, rng: random.Random) -> Cut:
    """What the cut at `at_us` left of the redo on `disk`, written into its model's disk."""
    server = modelled.server(record.lab, disk.name)
    requests = trace.read(server.trace)
    log = RedoLog.of([r for r in requests if r.t_us <= at_us or r.op != "write"], blocksize, f"{disk.vm}/{disk.name}")
    rules = powerloss.Rules.at(disk.device, disk.logical_block_size, disk.physical_block_size)
    work = Path(tempfile.mkdtemp(prefix="sectorlab-cut-", dir=WORK_DIR))
    try:
        whole = work / "final.img"  # sparse: qemu-img leaves what was never written a hole
        server.read_image(whole)
        log.positions(whole)
        state = powerloss.cut(requests, rules, at_us, rng)
        size = whole.stat().st_size
        cut_in_place(whole, state)  # the final image becomes the disk the cut left (no copy of it)
        server.write_image(whole, timeout=300)
        # the medium errors after the disk's bytes: a write that covers a range whole rewrites it
        server.set_unreadable(state.unreadable)
        write_atomic(server.directory / "cut.json", json.dumps(
            {"at_us": at_us, "landed": state.landed, "unreadable": state.unreadable, "durable": state.writes_durable,
             "torn": state.writes_torn, "lost": state.writes_lost}, indent=1))
        fd, name = tempfile.mkstemp(prefix="sectorlab-cut-", suffix=".img", dir=WORK_DIR)
        image = Path(name)
        try:
            disk_after(whole, state, fd, min(log.extent, size))  # the log's extent of the same disk
        except BaseException:
            image.unlink(missing_ok=True)
            raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return Cut(at_us, state, log, log.acknowledged(at_us), image)
