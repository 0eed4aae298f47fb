#!/bin/sh
# The cross-checks' filesystem (labtests/support/dbs.py, filesystem): FS (ext4 or xfs) made on the
# whole disk DEV and mounted on MNT; a disk that is mounted or holds a signature is refused.
# Arguments: DEV FS MNT.

set -eu
dev=$1; fs=$2; mnt=$3
fresh="the cross-checks use only blank lab data disks: 'make lab-down lab-up' gives fresh ones"
if [ -n "$(lsblk -n -o MOUNTPOINTS "$dev" | tr -d '[:space:]')" ]; then echo "$dev is mounted; $fresh" >&2; exit 1; fi
sig=$(wipefs --noheadings "$dev" | head -3 | tr '\n' ' ')
if [ -n "$sig" ]; then echo "$dev holds a signature (wipefs: $sig); $fresh" >&2; exit 1; fi
case $fs in
  ext4) mkfs.ext4 -q -F -E lazy_journal_init=1 "$dev"  # the journal is not zeroed first: 16 MiB less to write
        opts=noinit_itable ;;  # nor the inode tables later, by the kernel, in the middle of a measurement
  xfs)  mkfs.xfs -q -f "$dev"; opts=defaults ;;
  *) echo "no filesystem '$fs'" >&2; exit 2 ;;
esac
mkdir -p "$mnt"
mount -o "$opts" "$dev" "$mnt"
