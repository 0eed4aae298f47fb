"""What the guests show: one probe per guest (sectorlab/inguest/guestprobe.py) and every declared
disk checked by serial at its declared sector and I/O sizes.
"""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path
from typing import Callable

from .. import geometry as geo
from .. import labdef
from ..guest import Guest
from ..guest import disks as guestdisks
from ..host import libvirt
from ..inguest import guestprobe
from .record import DiskRecord, LabRecord
from .state import Progress


def guests_from_lab_json(data: LabRecord) -> dict[str, Guest]:
    via = libvirt.get_host(data.libvirt_uri).via
    return {name: Guest(name, vm.ssh_host, vm.ssh_port, vm.user, Path(vm.key_file), vm.host_key, vm.console_log, via)
            for name, vm in data.vms.items()}


def wait_for(check: Callable[[], bool], timeout: float, interval: float = 0.2) -> bool:
    """Whether check() became true within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)
    return True


PROBE = Path(guestprobe.__file__)
PRISTINE_BYTES = 65536


# The buses whose write cache the guest sets itself: QEMU 7.2's NVMe device presents a volatile
# write cache whatever its write-cache property says (and the in-guest NVMe/TCP target does too);
# virtio and SCSI disks are told by their device (terraform/domain.xsl.tftpl).
GUEST_SET_CACHE_BUSES = ("nvme", "nvme-tcp")


def probe(guest: Guest, declared: list[DiskRecord], wait: float = 0.0, clock: bool = False,
          pristine: bool = False, settle: bool = False) -> dict:
    """One round trip to the guest (sectorlab/inguest/guestprobe.py as root): optionally step its clock,
    start its NVMe/TCP targets if their namespaces are not visible, wait up to `wait` s for the
    declared serials, list its disks and their write caches, and with `pristine` name the declared
    disks whose first or last 64 KiB are not zeros (where partition tables, signatures and the
    scenarios' first redo blocks go). With `settle` (lab-up), the NVMe disks' write cache is set to
    what their device profile says first."""
    request = {"clock": clock,
               "nvme_tcp": sorted(d.serial for d in declared if d.bus == "nvme-tcp"),
               "serials": sorted(d.serial for d in declared), "wait": wait,
               "pristine_bytes": PRISTINE_BYTES if pristine else 0, "lsblk": guestdisks.LSBLK_COMMAND.split(),
               "set_write_cache": {d.serial: d.write_cache for d in declared
                                   if settle and d.bus in GUEST_SET_CACHE_BUSES}}
    command = f"sudo -n python3 -c {shlex.quote(PROBE.read_text())} {shlex.quote(json.dumps(request))}"
    text = guest.check_output(command, timeout=wait + 120,
                              answer=(guestprobe.CLOCK_QUESTION, lambda: repr(time.time())))
    try:
        result = json.loads(text)
    except ValueError as e:
        raise guestdisks.GuestOutputError("sectorlab guest probe", f"not JSON ({e})", text) from e
    result["disks"] = guestdisks.by_serial(guestdisks.parse_lsblk(result["lsblk"]))
    return result


def verify(data: LabRecord, guests: dict[str, Guest], progress: Progress, wait: float = 0.0, clock: bool = False,
           pristine: bool = False, settle: bool = False) -> tuple[list[list[str]], list[str]]:
    """Every declared disk, by serial, at its declared sector sizes and write cache. With `wait`,
    give disks that are still appearing (hot-plugged NVMe) up to that many seconds before calling
    them missing; with `clock`, step the guests' clocks first (after a restore); with `pristine`,
    fail disks that hold data (a fresh lab must not show a previous run's writes); with `settle`,
    set the write cache of the disks whose guest sets it (probe)."""
    rows = [["VM", "disk", "serial", "bus", "geometry", "guest device", "logical/physical seen", "write cache"]]
    problems = []
    for vm_name, guest in guests.items():
        declared = data.disks_of(vm_name)
        result = probe(guest, declared, wait, clock, pristine, settle)
        if result["behind_s"] is not None:
            behind = result["behind_s"]
            progress(f"{vm_name}: clock stepped {abs(behind):.1f} s {'forward' if behind >= 0 else 'back'}")
        if wait:
            progress(f"{vm_name}: every declared disk visible after {result['waited_s']:.1f} s")
        seen = result["disks"]
        for d in sorted(declared, key=lambda d: d.name):
            dev = seen.get(d.serial)
            # The minimum I/O size the guest must show (the advertised one, never below the physical
            # sector), and the optimal one where the geometry advertises it.
            want = d.sizes.topology
            if dev is None:
                rows.append([vm_name, d.name, d.serial, d.bus, d.geometry, "MISSING", f"- (want {want})", "-"])
                problems.append(f"{vm_name}/{d.name} (serial {d.serial}) not in the guest")
                continue
            got = geo.topology(dev.logical_block_size, dev.physical_block_size, dev.minimum_io_size,
                               dev.optimal_io_size if d.opt_io_size else 0)
            mark = "" if got == want else f" (want {want})"
            if mark:
                problems.append(f"{dev.path}: {got}, expected {want} ({d.geometry})")
            path = dev.path + (f" (device model {d.device})" if d.device not in (None, labdef.FLOOR) else "")
            cache = result["write_cache"].get(d.serial) or "unknown"
            if cache != d.write_cache:
                problems.append(f"{dev.path}: queue/write_cache is {cache}, expected {d.write_cache} (device profile "
                                f"{d.device or 'none'}; docs/device-models.md)")
            rows.append([vm_name, d.name, d.serial, d.bus, d.geometry, path, got + mark,
                         cache + ("" if cache == d.write_cache else f" (want {d.write_cache})")])
        problems += [f"{path}: not empty at lab-up (expected a fresh disk)" for path in result["dirty"]]
    return rows, problems


def print_table(rows: list[list[str]]) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
