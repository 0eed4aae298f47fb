#!/bin/sh
# The cross-checks' filesystem undone (labtests/support/dbs.py): unmounted (its users killed if it
# is busy), its mount point removed and the disk's signatures wiped. Arguments: DEV MNT.

dev=$1; mnt=$2; rc=0
if mountpoint -q "$mnt"; then umount "$mnt" || { fuser -km "$mnt" 2>/dev/null; sleep 1; umount "$mnt"; } || rc=1; fi
rmdir "$mnt" 2>/dev/null || true
wipefs --all --quiet "$dev" || rc=1
exit $rc
