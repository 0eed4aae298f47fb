#!/bin/sh
# A crash judge's workload (sectorlab/crash/databases.py, workload_script): one session; the ids
# 1..N, each inserted into log in a transaction that adds 1 to k of a row drawn from an LCG of the
# seed; "ack ID" once its COMMIT returned; PostgreSQL also runs a CHECKPOINT every EVERY commits.
# Arguments: RUN DB N SEED ROWS EVERY.
# shellcheck source-path=SCRIPTDIR source=databases.sh
. "${0%/*}/databases.sh"

run=$1; db=$2; n=$3; seed=$4; rows=$5; every=$6
gen() {
  i=0; r=$seed
  while [ "$i" -lt "$n" ]; do
    i=$((i + 1)); r=$(( (r * 1103515245 + 12345) % 2147483648 ))
    echo "BEGIN; INSERT INTO log VALUES ($i); UPDATE t SET k = k + 1 WHERE id = $(( r % rows + 1 )); COMMIT;"
    if [ "$db" = mariadb ]; then echo "SELECT CONCAT('ack ', $i);"
    else echo "SELECT 'ack ' || $i;"; [ $((i % every)) -ne 0 ] || echo "CHECKPOINT;"; fi
  done
}
case $db in
  mariadb) gen | stdbuf -oL mariadb --socket="$run/mariadb.sock" -uroot -N -B -n crash ;;
  postgres) gen | stdbuf -oL runuser -u postgres -- "$pgbin/psql" -X -q -A -t -h "$run" -U postgres -d crash \
              -v ON_ERROR_STOP=1 ;;
esac
