"""Bad input to provision-redo-disk and reformat-nvme in a lab guest: each is refused with one line
that names the value, what was expected and what to do, exit status 2, and nothing written: the
disk's first and last MiB, its partition table and the udev rules are as they were, and no user or
group was created.

Guards the checks of sectorlab/inguest/redodisk.py, nvmeformat.py and blockdev.py against the
guest's real devices (missing device, a partition, the root disk, a mounted disk, a partition table
without --force, a filesystem put into the redo partition since it was provisioned, an unknown owner
with --no-create-user, a bad start; reformat: a non-NVMe disk, an NVMe/TCP namespace, a data size
the namespace does not list). Where a case needs a disk prepared (mounted, partitioned), that disk
is blanked afterwards.
"""

from __future__ import annotations

import pytest

from labtests.support.lab import blank_disk, guest_tool
from labtests.support.requires import first_disk_of, require

pytestmark = pytest.mark.lab


def _first_disk(lab_state, guest_devices, lab_guests, bus: str):
    """(guest, declared disk, device) of the lab's first plain disk on `bus`, or a skip saying the lab has none."""
    declared = require(first_disk_of(lab_state, bus), f"the lab has no {bus} disk without a device model")
    dev = guest_devices[declared.vm].get(declared.serial)
    if dev is None:
        pytest.fail(f"{declared.vm}: declared disk {declared.name} (serial {declared.serial}) is not in the guest",
                    pytrace=False)
    return lab_guests[declared.vm], declared, dev


@pytest.fixture
def virtio(lab_state, guest_devices, lab_guests):
    """The first virtio disk, for a refusal: the test's fingerprints show it unchanged."""
    return _first_disk(lab_state, guest_devices, lab_guests, "virtio")


@pytest.fixture
def scratch_virtio(virtio):
    """The first virtio disk for a test that prepares it (mounts, partitions): blanked afterwards."""
    guest, declared, dev = virtio
    yield virtio
    guest.run("sudo -n umount /mnt/sectorlab-bad-input")
    blank_disk(guest, dev, declared.serial)


# Runs the tool between two fingerprints of the disk, in one round trip: checksums of the device's
# first and last MiB, its partition table (or none) and the udev rules directory, and the
# passwd/group entries a run could add. Prints the fingerprints, the tool's exit status and its
# stderr, each after a line of its own.
_REFUSED = r'''
path=$1; shift
fingerprint() {
  size=$(blockdev --getsize64 "$path")
  dd if="$path" bs=1M count=1 iflag=direct status=none | sha256sum
  dd if="$path" bs=1M skip=$((size / 1048576 - 1)) count=1 iflag=direct status=none | sha256sum
  sfdisk --dump "$path" 2>&1 | sha256sum
  ls -l --time-style=+%s.%N /etc/udev/rules.d/ | sha256sum
  getent passwd nosuchdba; getent group nosuchgrp; true
}
echo "--- before"; fingerprint
"$@" >/tmp/sectorlab-refused.out 2>/tmp/sectorlab-refused.err
rc=$?
echo "--- rc"; echo $rc
echo "--- stderr"; cat /tmp/sectorlab-refused.err
echo "--- stdout"; cat /tmp/sectorlab-refused.out
echo "--- after"; fingerprint
'''


def _refused(guest, path: str, tool: str, *args, expect: list[str]) -> None:
    """Run the tool; it must exit 2 with one stderr line holding every text in `expect`, and leave
    `path` as it was."""
    out = guest.check_output("sudo -n sh -c", _REFUSED, "refused", path, tool, *args, timeout=120)
    parts = dict(chunk.split("\n", 1) for chunk in out.split("--- ")[1:])
    rc, stderr = int(parts["rc"]), parts["stderr"].strip()
    cmd = f"{tool} {' '.join(map(str, args))}"
    lines = stderr.splitlines()
    assert rc == 2, f"'{cmd}': exit {rc}, expected 2 (refused): {stderr} {parts['stdout']}"
    assert len(lines) == 1 and lines[0].startswith(f"{tool}: "), f"'{cmd}': expected one line: {lines}"
    for text in expect:
        assert text in lines[0], f"'{cmd}': {text!r} not in {lines[0]!r}"
    assert parts["after"].strip() == parts["before"].strip(), f"'{cmd}' was refused but changed {path}"


def _root_disk(guest) -> tuple[str, str]:
    """(root partition or device, its whole disk)."""
    source = guest.check_output("findmnt -n -o SOURCE /")
    parent = guest.check_output("lsblk -n -d -o PKNAME", source).strip()
    return source, (f"/dev/{parent}" if parent else source)


def test_provision_refuses_a_missing_device(virtio):
    guest, _, dev = virtio
    _refused(guest, dev.path, "provision-redo-disk", "/dev/sectorlab-no-such-disk",
             expect=["/dev/sectorlab-no-such-disk", "No such file or directory", "expected a whole disk"])


def test_provision_refuses_a_partition(virtio):
    guest = virtio[0]
    source, disk = _root_disk(guest)
    if source == disk:
        pytest.skip(f"the guest's root file system is on a whole disk ({disk}), not a partition")
    _refused(guest, disk, "provision-redo-disk", source, expect=[source, f"is a partition of {disk}",
                                                                 f"give the whole disk, {disk}"])


def test_provision_refuses_the_root_disk(virtio):
    guest = virtio[0]
    _, disk = _root_disk(guest)
    _refused(guest, disk, "provision-redo-disk", disk, "--force", expect=[disk, "is the root disk", "data disk"])


def test_provision_refuses_a_mounted_disk(scratch_virtio):
    guest, _, dev = scratch_virtio
    # noinit_itable: the kernel's lazy inode-table zeroing would write to the disk between the two
    # fingerprints on its own (a make test run saw the first MiB change under a refused command).
    guest.check_output("sudo -n sh -c", 'mkfs.ext4 -q -F "$1" && mkdir -p /mnt/sectorlab-bad-input && '
                       'mount -o noinit_itable "$1" /mnt/sectorlab-bad-input', "mount", dev.path)
    _refused(guest, dev.path, "provision-redo-disk", dev.path, "--force",
             expect=[dev.path, "mounted at /mnt/sectorlab-bad-input", "unmount it"])


def test_provision_refuses_a_partition_table_without_force(scratch_virtio):
    guest, _, dev = scratch_virtio
    guest.check_output("sudo -n parted -s", dev.path, "mklabel gpt mkpart data 1MiB 50%")
    _refused(guest, dev.path, "provision-redo-disk", dev.path,
             expect=[dev.path, "gpt partition table with 1 partition(s)", "expected an empty disk", "--force"])


def test_provision_refuses_a_filesystem_in_its_own_partition(scratch_virtio):
    """A re-run on a redo partition that has since been given a filesystem does not reuse it."""
    guest, _, dev = scratch_virtio
    first = guest_tool(guest, "provision-redo-disk", dev.path, "--json")
    assert first.rc == 0, first.stderr
    partition = first.json["partition"]
    guest.check_output("sudo -n mkfs.ext4 -q -F", partition)
    _refused(guest, dev.path, "provision-redo-disk", dev.path,
             expect=[dev.path, f"{partition} holds ext4", "expected an empty disk", "--force"])


def test_provision_refuses_an_unknown_owner_with_no_create_user(virtio):
    guest, _, dev = virtio
    _refused(guest, dev.path, "provision-redo-disk", dev.path, "--owner", "nosuchdba", "--group", "nosuchgrp",
             "--no-create-user", expect=["'nosuchgrp' does not exist", "groupadd nosuchgrp", "--no-create-user"])
    guest.check_output("sudo -n groupadd --system nosuchgrp")
    try:
        _refused(guest, dev.path, "provision-redo-disk", dev.path, "--owner", "nosuchdba", "--group", "nosuchgrp",
                 "--no-create-user", expect=["user 'nosuchdba' does not exist", "useradd", "--no-create-user"])
    finally:
        guest.check_output("sudo -n groupdel nosuchgrp")


@pytest.mark.parametrize("start, expect", [
    ("1.5MiB", ["--start '1.5MiB'", "expected sectors like 2048s"]),
    ("2s", ["sector 2 is outside the usable area", "sectors 34 to"]),
], ids=["unparsable", "inside-gpt"])
def test_provision_refuses_a_bad_start(virtio, start, expect):
    guest, declared, dev = virtio
    if declared.logical_block_size != 512:
        expect = [e.replace("sectors 34 to", "sectors 6 to") for e in expect]
    _refused(guest, dev.path, "provision-redo-disk", dev.path, "--start", start, expect=expect)


def test_reformat_refuses_a_disk_that_is_not_nvme(virtio):
    guest, _, dev = virtio
    _refused(guest, dev.path, "reformat-nvme", dev.path, "--lbads", 4096,
             expect=[dev.path, "is not an NVMe namespace (virtio disk)", "expected /dev/nvmeXnY"])


def test_reformat_refuses_an_nvme_tcp_namespace(lab_state, guest_devices, lab_guests):
    guest, _, dev = _first_disk(lab_state, guest_devices, lab_guests, "nvme-tcp")
    _refused(guest, dev.path, "reformat-nvme", dev.path, "--lbads", 4096,
             expect=[dev.path, "NVMe/TCP namespace", "target's backing disk"])


def test_reformat_refuses_an_unlisted_data_size(lab_state, guest_devices, lab_guests):
    guest, _, dev = _first_disk(lab_state, guest_devices, lab_guests, "nvme")
    _refused(guest, dev.path, "reformat-nvme", dev.path, "--lbads", 16384,
             expect=[dev.path, "no LBA format with 16384-byte data", "it lists 0: 512 B", "4096 B"])


def test_reformat_refuses_a_missing_device(lab_state, guest_devices, lab_guests):
    guest, _, dev = _first_disk(lab_state, guest_devices, lab_guests, "nvme")
    _refused(guest, dev.path, "reformat-nvme", "/dev/nvme99n1", "--lbads", 4096,
             expect=["/dev/nvme99n1", "No such file or directory"])
