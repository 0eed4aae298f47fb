#!/bin/sh
# The cross-checks' MariaDB server stopped and its run directory RUN removed (labtests/support/dbs.py,
# MariaDB.stop); its error log is printed first (the scenario keeps it). The server is killed
# (databases.sh's mariadb_kill, as the crash judges do), not shut down: its data is thrown away with
# the filesystem right after, and a clean shutdown costs ~1.7 s a disk under TCG. Exit 1 when it is
# still running after. Arguments: RUN.
# shellcheck source-path=SCRIPTDIR source=databases.sh
. "${0%/*}/databases.sh"

set +e
run=$1
cat "$run/error.log" 2>/dev/null
mariadb_kill "$run"
pid=$(cat "$run/launched.pid" 2>/dev/null || true)
if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then echo "mariadbd $pid is still running" >&2; exit 1; fi
rm -rf "$run"
