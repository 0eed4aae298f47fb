#!/bin/sh
# MariaDB and PostgreSQL started and stopped by hand on a mounted lab disk, in the guest: what the
# crash judges (crash-*.sh, sectorlab/crash/databases.py) and the cross-check scenarios' MariaDB
# (xcheck-mariadb-*.sh, labtests/support/dbs.py) share, the one wait for mariadbd among them. A
# script that needs it sources it in its header; the host sends its text before that script's own.
#
# Every file of this folder: its header, the lines up to the first blank one (#!, what it is,
# the directives to ShellCheck, the files it sources), is not sent to the guest; the rest is, as text
# (sudo -n sh -c SCRIPT NAME ARGS...), after the text of each file its header sources.
#
# mariadb_start RUN starts mariadbd with RUN/my.cnf (mariadb_cnf writes the crash judges' one) and
# waits until it answers, RECOVERY_S seconds at most: prints the seconds it took; 1 when it exited
# first or did not answer in time (then an [ERROR] line in RUN/error.log says so). mariadb_kill RUN
# kills it and waits 10 s at most for it to go. pg_start DATADIR RUN starts PostgreSQL (pg_conf
# writes the crash judges' settings), prints the seconds it took; 1 when it did not start.
# sql and psql_ run SQL in the database crash of the server of $run, which the script after this one
# sets.
# shellcheck disable=SC2012,SC2154
# SC2012: the one ls below lists PostgreSQL's bin directories (fixed paths) to take the newest by
# sort -V, which a glob's order cannot. SC2154: $run, set by the script sent after this one.

set -eu
RECOVERY_S=180  # a recovery that takes longer is counted as not coming up
pgbin=$(dirname "$(ls -d /usr/lib/postgresql/*/bin/initdb /usr/pgsql-*/bin/initdb 2>/dev/null | sort -V | tail -1)")
mariadb_cnf() {  # mnt run setting
  cat > "$2/my.cnf" <<EOF
[mariadbd]
user=mysql
datadir=$1/mysql
socket=$2/mariadb.sock
pid-file=$2/mariadb.pid
log-error=$2/error.log
skip-networking
skip-name-resolve
innodb_log_file_size=8M
innodb_buffer_pool_size=32M
innodb_flush_log_at_trx_commit=1
innodb_max_dirty_pages_pct=0
innodb_max_dirty_pages_pct_lwm=0
innodb_doublewrite=$3
EOF
}
mariadb_start() {  # run: waits until it answers; prints the seconds it took; 1 when it did not in time
  t0=$(date +%s.%N); deadline=$(( $(date +%s) + RECOVERY_S ))
  setsid mariadbd --defaults-file="$1/my.cnf" </dev/null >"$1/stdout.log" 2>&1 &
  echo $! > "$1/launched.pid"
  until mariadb-admin --socket="$1/mariadb.sock" -uroot ping >/dev/null 2>&1; do
    kill -0 "$(cat "$1/launched.pid")" 2>/dev/null || return 1
    if [ "$(date +%s)" -ge "$deadline" ]; then echo "[ERROR] no answer in $RECOVERY_S s" >> "$1/error.log"; return 1; fi
    sleep 0.1
  done
  awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f\n", b - a }'
}
mariadb_kill() {  # run
  pid=$(cat "$1/launched.pid" 2>/dev/null || true)
  [ -z "$pid" ] || kill -KILL "$pid" 2>/dev/null || true
  i=0; while [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && [ "$i" -lt 100 ]; do i=$((i + 1)); sleep 0.1; done
}
sql() { mariadb --socket="$run/mariadb.sock" -uroot -N -B crash -e "$1"; }
pg_conf() {  # datadir setting
  cat >> "$1/postgresql.conf" <<EOF
listen_addresses = ''
shared_buffers = 16MB
fsync = on
synchronous_commit = on
full_page_writes = $2
checkpoint_timeout = 1h
max_wal_size = 64MB
restart_after_crash = off
min_wal_size = 32MB
EOF
}
pg_start() {  # datadir run: prints the seconds it took; 1 when it did not start
  t0=$(date +%s.%N)
  runuser -u postgres -- "$pgbin/pg_ctl" -D "$1" -l "$2/postgres.log" -w -t "$RECOVERY_S" -o "-k $2" start \
    >/dev/null || return 1
  awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f\n", b - a }'
}
psql_() { runuser -u postgres -- "$pgbin/psql" -X -q -A -t -h "$run" -U postgres -d crash -v ON_ERROR_STOP=1 "$@"; }
