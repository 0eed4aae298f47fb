#!/bin/sh
# A crash judge's database stopped at once and its disk unmounted (sectorlab/crash/databases.py,
# stop_script), whatever state a run left them in. Arguments: MNT RUN DB.
# shellcheck source-path=SCRIPTDIR source=databases.sh
. "${0%/*}/databases.sh"

mnt=$1; run=$2; db=$3
set +e
case $db in
  mariadb) mariadb_kill "$run" ;;
  postgres) [ -d "$mnt/pg" ] &&
              runuser -u postgres -- "$pgbin/pg_ctl" -D "$mnt/pg" -m immediate -w -t 60 stop >/dev/null 2>&1 ;;
esac
cd /
if mountpoint -q "$mnt"; then umount "$mnt" || { fuser -km "$mnt" 2>/dev/null; sleep 1; umount "$mnt"; }; fi
rm -rf "$run"
exit 0
