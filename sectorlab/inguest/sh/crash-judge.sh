#!/bin/sh
# A crash judge (sectorlab/crash/databases.py, judge_script; its output read by parse): the disk a
# cut left mounted, the database started on it (its crash recovery, timed), what it found as
# "key value" lines (ids: all of them on one line). Always exits 0: the lines say what happened.
# Arguments: DEV MNT RUN DB VALUE [CHECKSUMS] (off: PostgreSQL was made without data checksums, and
# pg_checksums has nothing to check).
# shellcheck source-path=SCRIPTDIR source=databases.sh
. "${0%/*}/databases.sh"

dev=$1; mnt=$2; run=$3; db=$4; value=$5; checksums=${6:-on}
set +e
mkdir -p "$mnt" "$run"
blockdev --flushbufs "$dev"
if ! mount "$dev" "$mnt" 2>"$run/mount.err"; then
  echo "mounted 0"; echo "why $(tr '\n' ' ' < "$run/mount.err")"; exit 0
fi
echo "mounted 1"
case $db in
  mariadb)
    chown mysql:mysql "$run"
    mariadb_cnf "$mnt" "$run" "$value"
    if s=$(mariadb_start "$run"); then echo "started 1"; echo "recovery_s $s"; else echo "started 0"; fi
    if [ "${s:-}" ]; then
      echo "ids $(sql 'SELECT id FROM log ORDER BY id' 2>&1 | tr '\n' ' ')"
      echo "sum_k $(sql 'SELECT COALESCE(SUM(k), -1) FROM t' 2>&1 | tr '\n' ' ')"
      echo "count_log $(sql 'SELECT COUNT(*) FROM log' 2>&1 | tr '\n' ' ')"
      echo "check $(sql 'CHECK TABLE t, log EXTENDED' 2>&1 | awk -F'\t' '$3 != "status" || $4 != "OK"' |
        tr '\n\t' '; ')"
    fi
    mariadb_kill "$run"
    echo "errors $(grep -c '\[ERROR\]' "$run/error.log" 2>/dev/null)"
    echo "restored $(grep -c -i 'from the doublewrite buffer' "$run/error.log" 2>/dev/null)"
    echo "why $(grep -E '\[ERROR\]' "$run/error.log" 2>/dev/null | head -3 | cut -c1-200 | tr '\n' ' ')" ;;
  postgres)
    chown postgres "$run"
    if s=$(pg_start "$mnt/pg" "$run"); then echo "started 1"; echo "recovery_s $s"; else echo "started 0"; fi
    if [ "${s:-}" ]; then
      echo "ids $(psql_ -c 'SELECT id FROM log ORDER BY id' 2>&1 | tr '\n' ' ')"
      echo "sum_k $(psql_ -c 'SELECT COALESCE(SUM(k), -1) FROM t' 2>&1 | tr '\n' ' ')"
      echo "count_log $(psql_ -c 'SELECT COUNT(*) FROM log' 2>&1 | tr '\n' ' ')"
      # amcheck: the heap's tuples, then each index against its heap (bt_index_check returns void: an
      # empty line each when all is well, an ERROR when not)
      echo "check $(psql_ -c "CREATE EXTENSION IF NOT EXISTS amcheck" -c "SELECT 'heap ' || count(*)
          FROM (SELECT * FROM verify_heapam('t') UNION ALL SELECT * FROM verify_heapam('log')) c
          HAVING count(*) > 0" -c "SELECT bt_index_check('t_pkey', true)" \
          -c "SELECT bt_index_check('log_pkey', true)" 2>&1 | tr '\n' ' ')"
      runuser -u postgres -- "$pgbin/pg_ctl" -D "$mnt/pg" -m fast -w -t 120 stop >/dev/null 2>&1
      if [ "$checksums" = off ]; then
        echo "checksums off"
      else
        bad=$(runuser -u postgres -- "$pgbin/pg_checksums" --check -D "$mnt/pg" 2>&1)
        n=$(echo "$bad" | sed -n 's/^Bad checksums: *//p')
        if [ -n "$n" ]; then echo "checksum_failures $n"
        else echo "checksum_error pg_checksums did not check: $(echo "$bad" | tail -2 | tr '\n' ' ')"; fi
      fi
    fi
    runuser -u postgres -- "$pgbin/pg_ctl" -D "$mnt/pg" -m immediate -w -t 60 stop >/dev/null 2>&1
    echo "errors $(grep -c -E '(ERROR|FATAL|PANIC):' "$run/postgres.log" 2>/dev/null)"
    echo "why $(grep -E '(ERROR|FATAL|PANIC):' "$run/postgres.log" 2>/dev/null | head -3 | cut -c1-200 |
      tr '\n' ' ')" ;;
esac
cd /
umount "$mnt" 2>/dev/null || { fuser -km "$mnt" 2>/dev/null; sleep 1; umount "$mnt"; }
rm -rf "$run"
exit 0
