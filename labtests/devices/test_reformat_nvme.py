"""reformat-nvme on every emulated NVMe disk (seed 000: a P3700 switched from 512-byte to 4 KiB
sectors with `isdct ... LBAFormat=3`; here `nvme format --lbaf=N`): to the other LBA data size and
back, and what follows from it.

After the format, every view switches: sysfs, `blockdev`, the LBA format in use (`nvme id-ns`), the
rules engine's default redo BLOCKSIZE, and O_DIRECT (a 512-byte write fails with EINVAL on 4 KiB
sectors). A redo log written with 512-byte blocks before the switch to 4 KiB is refused after it
(ORA-01378: its blocks are smaller than the sector the disk now has). The format erases the
namespace (seed 000: "destructive of any existing data"): what was written at its start, where ASM
keeps a disk's header, reads back as zeros, so a disk group made on it before has lost the member;
ORA-15085 (a disk that reports another sector size than the group recorded) is what a disk that
keeps its header meets (new firmware, ASMLib's logical-size flag), not this one. Formatting back
restores the geometry. QEMU forgets a format when it creates the controller anew, as
at every lab-up (the saved guest state never holds NVMe): after a hot re-plug from the host the
namespace is back at its declared geometry. Guards sectorlab/inguest/nvmeformat.py and
sectorlab/lab/hotplug.py.
These tests erase the NVMe data disks (QEMU zeroes a namespace on format).
"""

from __future__ import annotations

import json

import pytest

from labtests.support.lab import disk_params, guest_tool, one_block_write, resolve_disk
from sectorlab import lab as lab_mod
from sectorlab.guest import disks as guestdisks
from sectorlab.inguest import rules
from sectorlab.lab import hotplug
from sectorlab.lab.record import LabRecord

pytestmark = pytest.mark.lab


def _other_size(declared) -> int:
    """The LBA data size the scenario formats to: 4096 on a 512-byte namespace, 512 on a 4Kn one."""
    return 4096 if declared.geometry.logical_block_size == 512 else 512


def _recreate_controller(guest, lab_state: LabRecord, serial: str) -> str:
    """Hot-unplug the NVMe controller from the host and add it again as every lab-up does
    (hotplug.hotplug_nvme); wait, as lab-up does (the guest probe), until the guest shows the serial,
    and give the new namespace its write cache as lab-up does; its device path."""
    declared = lab_state.disk_with_serial(serial)
    vm = lab_state.vm(declared.vm)
    disks = lab_state.disks_of(declared.vm)
    hotplug.unplug_nvme(lab_state.libvirt_uri, vm.domain, disks, serial)
    assert serial not in guest.check_output("lsblk -d -n -o SERIAL").split(), \
        f"serial {serial} still in the guest after device_del"
    assert hotplug.hotplug_nvme(lab_state.libvirt_uri, vm.domain, disks) == [hotplug.nvme_controller_id(disks, serial)]
    seen = lab_mod.probe(guest, [declared], wait=lab_mod.NVME_APPEAR_TIMEOUT, settle=True)["disks"]
    assert serial in seen, f"serial {serial} not back {lab_mod.NVME_APPEAR_TIMEOUT:.0f} s after the hot-plug"
    return seen[serial].path


@pytest.fixture(params=disk_params(buses=("nvme",)))
def nvme_disk(request, lab_state, lab_guests, guest_devices):
    """An emulated NVMe disk; at its declared LBA data size again after the test, whatever it did."""
    guest, declared, dev = resolve_disk(request.param, lab_state, lab_guests, guest_devices)
    yield guest, declared, dev
    back = guest_tool(guest, "reformat-nvme", dev.path, "--lbads", declared.geometry.logical_block_size, "--force")
    if not back.ok:  # the guest could not: QEMU's controller, created anew, has the declared format
        _recreate_controller(guest, lab_state, declared.serial)
        pytest.fail(f"{dev.path}: reformat-nvme back to {declared.geometry.logical_block_size} failed "
                    f"({back.stderr.strip()}); re-plugged the controller instead", pytrace=False)


# Every view of the namespace in one round trip (each is parsed on the host): sysfs, blockdev, the
# LBA format in use, the rules engine's default BLOCKSIZE, and one O_DIRECT+O_DSYNC write of one
# redo byte at BLOCKSIZE 512 and at 4096 (redo-writer: one transaction, one block).
_VIEWS = r'''
dev=$1; q=/sys/block/${dev#/dev/}/queue
echo "sysfs=$(cat $q/logical_block_size $q/physical_block_size | tr '\n' ' ')"
echo "blockdev=$(blockdev --getss --getpbsz "$dev" | tr '\n' ' ')"
echo "id_ns=$(nvme id-ns "$dev" -o json | tr -d '\n')"
echo "redo_check=$(redo-check "$dev" --json)"
for bs in 512 4096; do
  redo-writer run --target "$dev" --blocksize $bs --sessions 1 --transactions 1 --redo-per-txn 1 \
    --log-size 1048576 --output json >/dev/null 2>/tmp/sectorlab-write.err
  echo "write$bs=$? $(tr '\n' ' ' < /tmp/sectorlab-write.err)"
done
'''


def _views(guest, dev) -> dict:
    """What the guest shows for the namespace, by independent routes."""
    out = dict(line.split("=", 1) for line in guest.check_output("sudo -n sh -c", _VIEWS, "views", dev.path,
                                                                 timeout=120).splitlines())
    ns = guestdisks.parse_nvme_id_ns(out["id_ns"], f"nvme id-ns {dev.path} -o json")
    writes = {bs: out[f"write{bs}"].split(" ", 1) for bs in (512, 4096)}
    return {"sysfs": tuple(int(v) for v in out["sysfs"].split()),
            "blockdev": guestdisks.parse_blockdev_sizes(out["blockdev"], f"blockdev --getss --getpbsz {dev.path}"),
            "lba_data_size": ns["data_size"], "metadata": ns["metadata_size"],
            "redo_default": json.loads(out["redo_check"])["default_blocksize"],
            "writes": {bs: (int(rc), err.strip()) for bs, (rc, err) in writes.items()}}


def _assert_geometry(guest, dev, size: int, when: str) -> None:
    views = _views(guest, dev)
    writes = views.pop("writes")
    want = {"sysfs": (size, size), "blockdev": (size, size), "lba_data_size": size, "metadata": 0,
            "redo_default": rules.evaluate(size, size).default_blocksize}
    assert views == want, f"{dev.path} {when}: the guest shows {views}, expected {want}"
    rc, err = writes[512]
    if size > 512:
        assert rc == 1 and "pwrite: Invalid argument" in err, \
            f"{dev.path} {when}: a 512-byte O_DIRECT write should fail with EINVAL: rc {rc} {err}"
    else:
        assert rc == 0, f"{dev.path} {when}: a 512-byte O_DIRECT write failed: {err}"
    assert writes[4096][0] == 0, f"{dev.path} {when}: a 4096-byte O_DIRECT write failed: {writes[4096][1]}"


def test_reformat_and_back(nvme_disk):
    guest, declared, dev = nvme_disk
    declared_size, other = declared.geometry.logical_block_size, _other_size(declared)
    _assert_geometry(guest, dev, declared_size, "before the format")

    # A redo log with blocks of the declared sector size, written before the format; and the disk
    # group CREATE DISKGROUP would make of the disk (udev discovery: ASM reads the kernel's sizes).
    log_blocksize = declared_size
    assert one_block_write(guest, dev, log_blocksize).rc == 0
    group = _asm_group_sector_size(guest, dev)
    assert group == declared_size, f"{dev.path}: a disk group of SECTOR_SIZE {group} on a {declared_size}-byte disk"

    assert not _start_is_blank(guest, dev, declared_size), f"{dev.path}: the redo block written at its start is gone"

    out = guest_tool(guest, "reformat-nvme", dev.path, "--lbads", other, "--json")
    assert out.rc == 0, f"{dev.path}: reformat-nvme --lbads {other} exited {out.rc}: {out.stderr}"
    r = out.json
    assert r["changed"] is True and (r["lbads"], r["logical_block_size"], r["physical_block_size"]) == (
        other, other, other), r
    # Erased: ASM's disk header, at the start, went with the rest; the group made before lost this member.
    assert _start_is_blank(guest, dev, other), f"{dev.path}: its start survived reformat-nvme --lbads {other}"
    _assert_geometry(guest, dev, other, f"after reformat-nvme --lbads {other}")

    check = guest_tool(guest, "redo-check", dev.path, "--blocksize", log_blocksize, "--json")
    verdict = json.loads(check.stdout)
    if log_blocksize < other:  # seed 000's direction: the 512-byte redo log on a 4Kn namespace
        assert check.rc == 1 and verdict["allowed"] is False, verdict
        assert verdict["error"].startswith(f"ORA-01378: The logical block size ({log_blocksize})") and \
            f"media sector size is {other} and host sector size is {other}" in verdict["error"], verdict["error"]
    else:  # 4096-byte redo blocks on 512n need _disk_sector_size_override (seeds 000, 002)
        assert check.rc == 1 and "ORA-01378" in verdict["error"], verdict
        override = guest_tool(guest, "redo-check", dev.path, "--blocksize", log_blocksize, "--override", "--json")
        assert override.rc == 0, override.stderr

    # The disk's own I/O at the group's size: from 512 to 4096 it refuses 512-byte writes (EINVAL, in
    # _assert_geometry); from 4096 to 512 a 4096-byte write still succeeds.
    if group > other:
        assert one_block_write(guest, dev, group).rc == 0, f"{dev.path}: a {group}-byte write failed on {other}"

    again = guest_tool(guest, "reformat-nvme", dev.path, "--lbads", other, "--json")
    assert again.rc == 0 and again.json["changed"] is False, f"a second reformat to {other}: {again.stdout}"

    back = guest_tool(guest, "reformat-nvme", dev.path, "--lbads", declared_size, "--json")
    assert back.rc == 0 and back.json["changed"] is True, f"reformat back to {declared_size}: {back.stderr}"
    _assert_geometry(guest, dev, declared_size, f"after reformat-nvme --lbads {declared_size}")


def _asm_group_sector_size(guest, dev) -> int:
    """SECTOR_SIZE of the disk group CREATE DISKGROUP would make of the disk (udev discovery, ASM 19)."""
    out = guest_tool(guest, "redo-check", dev.path, "--asm-discovery", "udev", "--asm-version", "19", "--json")
    assert out.rc == 0, f"{dev.path}: redo-check --asm-discovery udev exited {out.rc}: {out.stdout} {out.stderr}"
    return out.json["asm"]["sector_size"]


def _start_is_blank(guest, dev, size: int) -> bool:
    """Whether the disk's first `size` bytes read back as zeros (O_DIRECT: the disk's, not a cache's).
    A read that fails or comes back short fails the test: it is no answer."""
    script = ('f=$(mktemp) && dd if="$1" of="$f" bs="$2" count=1 iflag=direct status=none && '
              '[ "$(stat -c %s "$f")" -eq "$2" ] && tr -d "\\000" < "$f" | wc -c; rc=$?; rm -f "$f"; exit $rc')
    out = guest.run("sudo -n sh -c", script, "blank", dev.path, size)
    assert out.ok and out.stdout.strip().isdigit(), f"{dev.path}: reading its first {size} bytes: {out.stderr}"
    return out.stdout.strip() == "0"


def test_reformat_forgotten_when_qemu_recreates_the_controller(nvme_disk, lab_state):
    guest, declared, dev = nvme_disk
    other = _other_size(declared)
    out = guest_tool(guest, "reformat-nvme", dev.path, "--lbads", other, "--json")
    assert out.rc == 0 and out.json["logical_block_size"] == other, out.stderr
    path = _recreate_controller(guest, lab_state, declared.serial)
    assert path == dev.path, f"serial {declared.serial} came back as {path}, not {dev.path}"
    _assert_geometry(guest, dev, declared.geometry.logical_block_size, "after QEMU created the controller anew")
