#!/bin/sh
# A crash judge's setup (sectorlab/crash/databases.py, setup_script): ext4 made on the disk DEV and
# mounted on MNT, the database DB (mariadb or postgres) made on it with its setting VALUE
# (innodb_doublewrite, full_page_writes), a table t of ROWS rows whose k is 0 and an empty table log;
# PostgreSQL with data checksums when CHECKSUMS is on (the default), without when off.
# Arguments: DEV MNT RUN DB VALUE ROWS [CHECKSUMS].
# shellcheck source-path=SCRIPTDIR source=databases.sh
. "${0%/*}/databases.sh"

dev=$1; mnt=$2; run=$3; db=$4; value=$5; rows=$6; checksums=${7:-on}
if [ -n "$(lsblk -n -o MOUNTPOINTS "$dev" | tr -d '[:space:]')" ]; then echo "$dev is mounted" >&2; exit 1; fi
mkfs.ext4 -q -F -b 4096 -E lazy_journal_init=1 "$dev"  # 4 KiB blocks: a small disk would get 1 KiB
mkdir -p "$mnt" "$run"
mount -o noinit_itable "$dev" "$mnt"
case $db in
  mariadb)
    cp -a /usr/local/share/sectorlab/mariadb-datadir "$mnt/mysql"
    chown mysql:mysql "$run"
    mariadb_cnf "$mnt" "$run" "$value"
    mariadb_start "$run" >/dev/null || { tail -n 15 "$run/error.log" >&2; exit 1; }
    mariadb --socket="$run/mariadb.sock" -uroot -e "CREATE DATABASE crash"
    sql "CREATE TABLE t (id INT PRIMARY KEY, k INT NOT NULL, pad CHAR(200) NOT NULL) ENGINE=InnoDB;
         CREATE TABLE log (id INT PRIMARY KEY) ENGINE=InnoDB;
         INSERT INTO t SELECT seq, 0, REPEAT('x', 200) FROM seq_1_to_$rows;" ;;
  postgres)
    install -d -o postgres "$mnt/pg" && chown postgres "$run"
    set -- -D "$mnt/pg" -U postgres -A trust --no-sync --no-instructions
    [ "$checksums" = off ] || set -- "$@" --data-checksums  # off: initdb's own default (PostgreSQL 15)
    runuser -u postgres -- "$pgbin/initdb" "$@" >/dev/null
    pg_conf "$mnt/pg" "$value"
    pg_start "$mnt/pg" "$run" >/dev/null || { tail -n 15 "$run/postgres.log" >&2; exit 1; }
    runuser -u postgres -- "$pgbin/createdb" -h "$run" -U postgres crash
    psql_ -c "CREATE TABLE t (id INT PRIMARY KEY, k INT NOT NULL, pad CHAR(200) NOT NULL);
              CREATE TABLE log (id INT PRIMARY KEY);
              INSERT INTO t SELECT g, 0, repeat('x', 200) FROM generate_series(1, $rows) g;
              CHECKPOINT;" ;;
esac
sync
