"""How scenarios find the lab: the declared disks (from the lab definition, at collection time,
so test ids exist even before the lab is up) and the running lab (lab.json written by lab-up)."""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path

import pytest

from sectorlab import lab as lab_mod
from sectorlab import labdef
from sectorlab.lab.record import LabRecord


@cache
def definition() -> labdef.Lab:
    return lab_mod.load_lab(lab_mod.lab_file_from_env())


def declared_disks() -> list[tuple[labdef.VM, labdef.Disk]]:
    return list(definition().disks())


def disk_params(buses: tuple[str, ...] | None = None):
    """One pytest param per declared disk (on `buses`, when given), id = disk name (e.g. nvme-sector4k)."""
    return [pytest.param((vm.name, disk), id=disk.name) for vm, disk in declared_disks()
            if buses is None or disk.bus in buses]


def covering(*keys) -> list:
    """The disk_params() of the disks that, in declaration order, are the first with some value of
    one of `keys` (functions of a declared disk): the fewest disks of the lab that meet every bus,
    say, and every geometry (covering(bus, geometry)); with one key, the first disk of each value."""
    chosen, seen = [], [set() for _ in keys]
    for p in disk_params():
        disk = p.values[0][1]
        values = [key(disk) for key in keys]
        if any(v not in s for v, s in zip(values, seen)):
            chosen.append(p)
        for v, s in zip(values, seen):
            s.add(v)
    return chosen


def bus(disk) -> str:
    return disk.bus


def geometry(disk) -> str:
    return disk.geometry.name


def resolve_disk(param, lab_state: LabRecord, lab_guests: dict, guest_devices: dict):
    """(guest, declared disk, the guest's BlockDevice) for a disk_params() param; a declared disk the
    guest does not show is a failure that names what the guest has and where its console log is."""
    vm_name, declared = param
    dev = guest_devices[vm_name].get(declared.serial)
    if dev is None:
        seen = ", ".join(f"{d.path}={s}" for s, d in sorted(guest_devices[vm_name].items())) or "none"
        pytest.fail(f"{vm_name}: declared disk {declared.name} (bus {declared.bus}, serial {declared.serial}) is "
                    f"not in the guest; disks with serials there: {seen}; console log: "
                    f"{lab_state.vm(vm_name).console_log}", pytrace=False)
    return lab_guests[vm_name], declared, dev


def unwatched_paths(disks, lab_guests: dict, guest_devices: dict) -> dict[str, str]:
    """{disk name: its path in the guest} for recorded disks (lab.json's), each guest's udev re-probe
    turned off for them at once (sectorlab.guest.disks.unwatch: no re-probe's reads after one run,
    in the next one's way); a disk its guest does not show is a failure naming it."""
    from sectorlab.guest import disks as guestdisks
    paths = {}
    for d in disks:
        dev = guest_devices[d.vm].get(d.serial)
        if dev is None:
            pytest.fail(f"{d.vm}: disk {d.name} (serial {d.serial}) is not in the guest", pytrace=False)
        paths[d.name] = dev.path
    for vm in sorted({d.vm for d in disks}):
        guestdisks.unwatch(lab_guests[vm], [paths[d.name] for d in disks if d.vm == vm])
    return paths


def expected_alignment(declared) -> int:
    """alignment_offset the guest kernel reports for a correctly presented disk (and for a partition
    on it that starts on a physical-sector boundary).

    0 everywhere, except on the NVMe native-multipath head of an NVMe/TCP namespace whose physical
    sector is larger than its logical one: the Debian 12 guest kernel (6.1) stacks the path's limits
    into the head device (nvmeXnY) as "misaligned" (-1), while the path device (nvmeXcYnZ) reports
    0; a partition of such a head reports -1 too, wherever it starts. Measured in the lab; asserted
    exactly so that a kernel that changes it is noticed.
    """
    g = declared.geometry
    if declared.bus == "nvme-tcp" and g.physical_block_size > g.logical_block_size:
        return -1
    return 0


def expected_optimal_io(declared) -> int:
    """optimal_io_size the guest kernel reports for a correctly presented disk: the geometry's own
    opt_io_size when it has one; else 0, except on QEMU's emulated NVMe, whose namespaces set the
    optimal-performance feature with an optimal write size of one LBA (NOWS = 0, zero-based), which
    the Debian 12 guest kernel (6.1) reports as the logical sector. Measured in the lab; asserted
    exactly so that a QEMU or kernel that changes it is noticed."""
    g = declared.geometry
    if g.opt_io_size:
        return g.opt_io_size
    return g.logical_block_size if declared.bus == "nvme" else 0


def guest_tool(guest, tool: str, *args, timeout: float = 120.0):
    """Run a lab tool in the guest as root (provision-redo-disk, reformat-nvme, redo-check); with
    --json among the args, the result's `json` attribute holds the parsed output (None otherwise)."""
    result = guest.run(f"sudo -n {tool}", *args, timeout=timeout)
    result.json = None
    if "--json" in args and result.rc == 0:
        try:
            result.json = json.loads(result.stdout)
        except ValueError:
            pytest.fail(f"{guest.name}: '{result.cmd}' printed no JSON: {result.stdout[:300]!r}", pytrace=False)
    return result


def one_block_write(guest, dev, blocksize: int):
    """One redo-writer transaction of one redo byte: one O_DIRECT+O_DSYNC write of one `blocksize`
    block at offset 0. Fails with EINVAL (exit 1, 'pwrite: Invalid argument') below the logical
    sector."""
    return guest.run("sudo -n redo-writer run --target", dev.path, "--blocksize", blocksize, "--sessions", 1,
                     "--transactions", 1, "--redo-per-txn", 1, "--log-size", 1 << 20, "--output", "json")


# Gives a scenario's disk back blank: no partition (kernel or on disk), no signature, no udev rule
# of provision-redo-disk for its serial. Later scenarios (redo-writer) refuse a disk that holds a
# partition table, as they should.
_BLANK = r'''
set -eu
dev=$1; serial=$2
for part in $(lsblk -n -l -o PATH,TYPE "$dev" | awk '$2 == "part" {print $1}'); do wipefs --all --quiet "$part"; done
wipefs --all --quiet "$dev"  # and re-reads the partition table
rule=/etc/udev/rules.d/99-sectorlab-redo-$(printf %s "$serial" | tr -c 'A-Za-z0-9._-' _).rules
if [ -e "$rule" ]; then rm -f "$rule"; udevadm control --reload; fi
udevadm settle --timeout=10
if lsblk -n -l -o TYPE "$dev" | grep -qx part; then echo "$dev still has partitions" >&2; exit 1; fi
'''


def blank_disk(guest, dev, serial: str) -> None:
    guest.check_output("sudo -n sh -c", _BLANK, "blank", dev.path, serial)


# A re-plug of a disk as the guest sees it: the driver lets go of the device and binds it again
# (virtio-blk, SCSI disk, PCIe NVMe controller), or the NVMe/TCP host disconnects and connects
# again; the disk and its partitions are removed and created anew, with "remove" and "add" events.
_REPLUG = r'''
set -eu
name=${1#/dev/}; serial=$2
dev=$(readlink -f "/sys/block/$name/device")
case $name in
  vd*) id=${dev##*/}; drv=/sys/bus/virtio/drivers/virtio_blk ;;
  sd*) id=${dev##*/}; drv=/sys/bus/scsi/drivers/sd ;;
  nvme*)
    if [ -e "$dev/transport" ]; then pci=$(readlink -f "$dev/device"); id=${pci##*/}; drv=/sys/bus/pci/drivers/nvme
    else nqn=$(cat "$dev/subsysnqn"); drv=""; fi ;;
  *) echo "no re-plug for $name" >&2; exit 2 ;;
esac
if [ -n "$drv" ]; then
  # udev settled before the unbind and again before the bind: the Debian 12 guest kernel (6.1)
  # panics in blk-throttle's timer (throtl_pending_timer_fn, a NULL pointer) when a SCSI disk is
  # bound again while udev still holds the old one open (its queue outlives it; docs/reliability.md).
  udevadm settle --timeout=30; echo "$id" > "$drv/unbind"; udevadm settle --timeout=30; echo "$id" > "$drv/bind"
else nvme disconnect -n "$nqn" >/dev/null; nvme connect -t tcp -a 127.0.0.1 -s 4420 -n "$nqn" >/dev/null; fi
i=0
while :; do
  now=$(lsblk -d -n -o PATH,SERIAL | awk -v s="$serial" '$2 == s {print $1}')
  if [ -n "$now" ] && lsblk -n -l -o TYPE "$now" | grep -qx part; then break; fi
  i=$((i + 1)); [ "$i" -lt 300 ] || { echo "serial $serial not back with its partition after 30 s" >&2; exit 1; }
  sleep 0.1
done
udevadm settle --timeout=10
part=$(lsblk -n -l -o PATH,TYPE "$now" | awk '$2 == "part" {print $1; exit}')
echo "$now $part $(stat -c '%U:%G:%a' "$part")"
'''


def replug(guest, dev, serial: str) -> str:
    """Re-plug the disk in the guest (see _REPLUG): 'DISK PARTITION OWNER:GROUP:MODE' afterwards
    (found by serial: the disk's name may change)."""
    return guest.check_output("sudo -n sh -c", _REPLUG, "replug", dev.path, serial, timeout=120)


def project_domains(uri: str = "qemu:///system") -> list[str]:
    """The domains libvirt has that a lab of this cache made, by their sectorlab identity
    (sectorlab/lab/ownership.py), not by a name prefix."""
    from sectorlab.lab import ownership
    from sectorlab.paths import cache_dir
    return [d.name for d in ownership.scan(uri) if d.owner is not None and d.owner.cache == str(cache_dir())]


def qemu_guest(domain: str) -> str:
    """The exact mark of `domain`'s QEMU on its command line (libvirt's -name guest=NAME,...)."""
    return f"guest={domain},"


def qemu_processes(marker: str) -> list[str]:
    """QEMU processes on this host whose command line has `marker` (qemu_guest(domain)), read from
    /proc, as 'PID: command line'."""
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if "qemu-system" in cmdline and marker in cmdline:
                found.append(f"{pid}: {cmdline[:160]}")
    return found
