#!/bin/sh
# XFS on each disk in turn (labtests/support/dbs.py, xfs_on_each): made and mounted as any filesystem
# of the cross-checks (a disk that is not blank is refused), xfs_info, one O_DIRECT redo write of each
# block size to a file in it (its exit status and redo-writer's first line of error after
# "write BS="), unmounted and wiped. Each disk's output follows a "=== NAME EXIT_STATUS" line (that of
# the mount). Arguments: MOUNT_SH UNMOUNT_SH SIZES, then NAME DEV MNT for each disk.

set -u
mount_sh=$1; unmount_sh=$2; sizes=$3; shift 3
while [ $# -ge 3 ]; do
  n=$1; dev=$2; mnt=$3; shift 3
  out=$(sh -c "$mount_sh" mount "$dev" xfs "$mnt" 2>&1); rc=$?
  echo "=== $n $rc"; [ -n "$out" ] && echo "$out"
  [ "$rc" = 0 ] || continue
  xfs_info "$mnt"
  for bs in $sizes; do
    redo-writer run --target "$mnt/redo.log" --blocksize "$bs" --sessions 1 --transactions 1 --redo-per-txn 1 \
      --log-size 1048576 --output json >/dev/null 2>"$mnt/err"
    echo "write $bs=$? $(head -1 "$mnt/err")"
  done
  sh -c "$unmount_sh" unmount "$dev" "$mnt" || echo "unmount failed"
done
