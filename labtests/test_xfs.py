"""XFS as a cross-check, on every declared disk (-k xfs): mkfs.xfs takes its sector size from the
disk's physical sector (xfs_info's sectsz), and redo-writer's O_DIRECT redo writes to a file in
it succeed and fail (EINVAL below the logical sector) at the same block sizes as on the raw disk:
as the rules engine's O_DIRECT rule (rules.direct_io_ok) predicts, which labtests/test_redo_blocksize.py
checks on the raw disk. The filesystem is made, used and removed in one guest command: unmounted
and wiped after, whatever happened.
"""

from __future__ import annotations

import re

import pytest

from labtests import dbs
from labtests.lab import disk_params, resolve_disk
from sectorlab import rules

pytestmark = [pytest.mark.lab, pytest.mark.crosscheck]
BLOCK_SIZES = (512, 1024, 4096)

# mkfs.xfs, xfs_info, one O_DIRECT redo write of each block size to a file in it (the exit status
# and redo-writer's error after "write BS="), then the filesystem unmounted and its signature wiped.
_XFS = r'''
dev=$1; mnt=$2; shift 2
set -e
mkfs.xfs -q -f "$dev"
mkdir -p "$mnt"; mount "$dev" "$mnt"
set +e
xfs_info "$mnt"
for bs in "$@"; do
  redo-writer run --target "$mnt/redo.log" --blocksize "$bs" --sessions 1 --transactions 1 --redo-per-txn 1 \
    --log-size 1048576 --output json >/dev/null 2>"$mnt/err"
  echo "write $bs=$? $(head -1 "$mnt/err")"
done
umount "$mnt" && rmdir "$mnt" && wipefs --all --quiet "$dev"
'''


@pytest.fixture(params=disk_params())
def blank(request, lab_state, lab_guests, guest_devices):
    guest, declared, dev = resolve_disk(request.param, lab_state, lab_guests, guest_devices)
    yield guest, declared, dev
    dbs.assert_nothing_left(guest, f"XFS on {declared.name}")


def test_xfs_sector_size_and_direct_io(blank, record_property):
    guest, declared, dev = blank
    g = declared.geometry
    out = dbs.root(guest, _XFS, dev.path, f"{dbs.MOUNT_ROOT}/xfs", *BLOCK_SIZES)
    sectsz = sorted({int(x) for x in re.findall(r"sectsz=(\d+)", out)})
    writes = {int(bs): (int(rc), err.strip()) for bs, rc, err in re.findall(r"^write (\d+)=(\d+) ?(.*)$", out, re.M)}
    said = (f"{dev.path} ({declared.name}, {g.logical_block_size}/{g.physical_block_size}): xfs_info sectsz "
            f"{'/'.join(map(str, sectsz))}; one O_DIRECT redo write to a file in it: "
            + ", ".join(f"{bs} B " + ("ok" if rc == 0 else f"exit {rc} ({err.rsplit(': ', 1)[-1]})")
                       for bs, (rc, err) in writes.items()))
    record_property("xfs", said)
    print(said)
    assert sectsz == [g.physical_block_size], f"{said}; expected sectsz={g.physical_block_size} (physical sector)"
    assert sorted(writes) == list(BLOCK_SIZES), f"{said}; the guest printed:\n{out}"
    for bs, (rc, err) in writes.items():
        if rules.direct_io_ok(bs, g.logical_block_size):
            assert rc == 0, f"{said}; a {bs}-byte O_DIRECT write fits the {g.logical_block_size}-byte logical sector"
        else:
            assert rc == 1 and "Invalid argument" in err, \
                f"{said}; expected EINVAL for {bs} B, below the {g.logical_block_size}-byte logical sector"
