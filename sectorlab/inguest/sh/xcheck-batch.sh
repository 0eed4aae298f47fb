#!/bin/sh
# One guest command for a VM's disks (labtests/support/dbs.py, cross_check_batch): a filesystem made
# and mounted on each; then pg_test_fsync on the chosen ones, all at once (it spends a fixed second
# on each of its 16 tests; started only when every mkfs is done: a mkfs beside running pg_test_fsyncs
# took 5-8 s instead of about 0.8, docs/cross-checks.md); then MariaDB started on each chosen disk in
# turn (the template copied in, the server asked until it answers), its error log kept, the server
# killed; every filesystem unmounted and wiped. (MariaDB started beside pg_test_fsync gained nothing
# under TCG, where the one vCPU is the bottleneck: 80 s for nine disks, against ~74 s for the two run
# alone.) Each step's output follows a "=== NAME STEP EXIT_STATUS" line. The trap undoes everything
# (servers, pg_test_fsync, mounts, signatures) whatever happened, and the exit status is 0 even when
# a step failed: each disk's own steps say what happened to it.
# Arguments: OUT SECONDS PG_TEST_FSYNC TEMPLATE FS MOUNT_SH UNMOUNT_SH START_SH STOP_SH, then NAME DEV
# MNT RUN PG MARIADB for each disk (the four scripts are the texts of xcheck-mount.sh,
# xcheck-unmount.sh, xcheck-mariadb-start.sh and xcheck-mariadb-stop.sh as sent).

set -u
out=$1; secs=$2; pg_test_fsync=$3; template=$4; fs=$5; mount_sh=$6; unmount_sh=$7; start_sh=$8; stop_sh=$9
shift 9
rm -rf "$out"; mkdir -p "$out"
names=""; pgpids=""
cleanup() {
  for p in $pgpids; do kill "$p" 2>/dev/null; done
  wait
  for n in $names; do
    [ -e "$out/$n.run" ] && sh -c "$stop_sh" stop "$(cat "$out/$n.run")" >/dev/null 2>&1
    # Only a filesystem this command made is unmounted and wiped: a disk it refused is left alone.
    [ "$(cat "$out/$n.mount.rc" 2>/dev/null)" = 0 ] || continue
    [ -e "$out/$n.unmount.rc" ] && continue
    sh -c "$unmount_sh" unmount "$(cat "$out/$n.dev")" "$(cat "$out/$n.mnt")" >"$out/$n.unmount.txt" 2>&1
    echo $? >"$out/$n.unmount.rc"
  done
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM
while [ $# -ge 6 ]; do
  n=$1; dev=$2; mnt=$3; run=$4; pg=$5; maria=$6; shift 6
  names="$names $n"; echo "$dev" >"$out/$n.dev"; echo "$mnt" >"$out/$n.mnt"
  sh -c "$mount_sh" mount "$dev" "$fs" "$mnt" >"$out/$n.mount.txt" 2>&1; echo $? >"$out/$n.mount.rc"
  [ "$(cat "$out/$n.mount.rc")" = 0 ] || continue
  [ "$maria" = 1 ] && echo "$run" >"$out/$n.todo"
  [ "$pg" = 1 ] && : >"$out/$n.pg"
done
for n in $names; do
  [ -e "$out/$n.pg" ] || continue
  ( "$pg_test_fsync" -s "$secs" -f "$(cat "$out/$n.mnt")/pg_test_fsync.out" >"$out/$n.pg_test_fsync.txt" 2>&1
    echo $? >"$out/$n.pg_test_fsync.rc" ) &
  pgpids="$pgpids $!"
done
wait; pgpids=""
for n in $names; do
  [ -e "$out/$n.todo" ] || continue
  run=$(cat "$out/$n.todo"); echo "$run" >"$out/$n.run"
  sh -c "$start_sh" start "$(cat "$out/$n.mnt")" "$run" "" "$template" >"$out/$n.mariadb.txt" 2>&1
  echo $? >"$out/$n.mariadb.rc"
  # The stop prints the server's error log (the block size line is in it) and removes its run directory.
  sh -c "$stop_sh" stop "$run" >>"$out/$n.mariadb.txt" 2>&1 && rm -f "$out/$n.run"
done
trap - EXIT
cleanup
for n in $names; do
  for step in mount pg_test_fsync mariadb unmount; do
    [ -e "$out/$n.$step.rc" ] || continue
    echo "=== $n $step $(cat "$out/$n.$step.rc")"; cat "$out/$n.$step.txt"
  done
done
rm -rf "$out"
