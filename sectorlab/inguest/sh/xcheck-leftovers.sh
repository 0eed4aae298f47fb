#!/bin/sh
# What the cross-checks could have left in the guest (labtests/support/dbs.py, leftovers): their
# processes, sockets and mounts, one "name=..." line each.

# One pgrep per name: a pattern longer than 15 characters (a process name's limit) matches nothing.
echo "processes=$(for p in mariadbd sysbench pg_test_fsync; do pgrep -l -x "$p"; done | tr '\n' ' ')"
echo "sockets=$(find /run/sectorlab-xcheck -name '*.sock' 2>/dev/null | tr '\n' ' ')"
echo "mounts=$(findmnt -n -l -o TARGET | grep '^/mnt/sectorlab-xcheck' | tr '\n' ' ')"
