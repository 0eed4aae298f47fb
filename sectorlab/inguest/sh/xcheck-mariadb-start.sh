#!/bin/sh
# The cross-checks' MariaDB server (labtests/support/dbs.py, mariadb): the data directory template
# TEMPLATE copied to MNT/mysql, the server started on a Unix socket in RUN with EXTRA as the last
# lines of its my.cnf, and waited for (databases.sh's mariadb_start, as the crash judges do); one that
# exits first or does not answer in time is said on stderr with the last lines of its error log
# (exit 1). Prints nothing when it answers. Arguments: MNT RUN EXTRA TEMPLATE.
# shellcheck source-path=SCRIPTDIR source=databases.sh
. "${0%/*}/databases.sh"

mnt=$1; run=$2; extra=$3; template=$4
mkdir -p "$run"
cp -a "$template" "$mnt/mysql"
chown mysql:mysql "$run"
cat > "$run/my.cnf" <<EOF
[mariadbd]
user=mysql
datadir=$mnt/mysql
socket=$run/mariadb.sock
pid-file=$run/mariadb.pid
log-error=$run/error.log
skip-networking
skip-name-resolve
innodb_log_file_size=8M
innodb_buffer_pool_size=32M
innodb_flush_log_at_trx_commit=1
$extra
EOF
if ! mariadb_start "$run" >/dev/null; then
  if kill -0 "$(cat "$run/launched.pid")" 2>/dev/null; then
    echo "mariadbd did not answer on $run/mariadb.sock within $RECOVERY_S s; the last lines of its error log:" >&2
    tail -n 15 "$run/error.log" >&2
  else
    echo "mariadbd exited before it answered; the last lines of its error log:" >&2
    tail -n 15 "$run/error.log" "$run/stdout.log" >&2 2>/dev/null
  fi
  exit 1
fi
