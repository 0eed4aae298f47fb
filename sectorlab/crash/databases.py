"""Real databases as the judges of a power cut (docs/crash.md): MariaDB (InnoDB crash recovery, its
doublewrite buffer on or off) and PostgreSQL (WAL replay, data checksums on, full_page_writes on or
off), each on an ext4 filesystem of a lab data disk, in the guest.

A run: `setup` makes the filesystem and the database on the disk (a table `t` of ROWS rows whose
`k` starts at 0, and an empty table `log`); `workload` commits transactions from one session, each
inserting the next id into `log` and adding 1 to `k` of a row drawn from a seeded generator, and
prints "ack ID" once its COMMIT returned (the host takes the moment it reads the line: an
acknowledgement recorded outside the disks that crash). PostgreSQL also runs a CHECKPOINT every
CHECKPOINT_EVERY commits (a run is too short for its own), so that data pages are written during
the run, after which the first change of a page goes to the WAL whole when full_page_writes is on;
InnoDB's page cleaner writes its dirty pages continuously (innodb_max_dirty_pages_pct = 0).

`judge` mounts a disk a cut left (ext4's journal replayed), starts the database on it (its crash
recovery, timed), and says what it found: the ids in `log`; SUM(k) against COUNT(*) of `log`
(every committed transaction did both: unequal means a change lost or applied twice that the
database did not notice, corruption not detected); the database's own checks (MariaDB's CHECK
TABLE and the [ERROR] lines of its log, the pages it restored from the doublewrite buffer;
PostgreSQL's amcheck verify_heapam and bt_index_check, and pg_checksums after a clean stop);
whether the filesystem mounted and the server started."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import SectorlabError, UsageError

ROWS = 20000
CHECKPOINT_EVERY = 50

# Which databases and settings a run can be judged by: name -> (database, setting, value).
JUDGES = {
    "mariadb-doublewrite-on": ("mariadb", "innodb_doublewrite", "ON"),
    "mariadb-doublewrite-off": ("mariadb", "innodb_doublewrite", "OFF"),
    "postgres-fpw-on": ("postgres", "full_page_writes", "on"),
    "postgres-fpw-off": ("postgres", "full_page_writes", "off"),
}

_COMMON = r'''
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
'''

_SETUP = _COMMON + r'''
dev=$1; mnt=$2; run=$3; db=$4; value=$5; rows=$6
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
    runuser -u postgres -- "$pgbin/initdb" -D "$mnt/pg" --data-checksums -U postgres -A trust --no-sync \
      --no-instructions >/dev/null
    pg_conf "$mnt/pg" "$value"
    pg_start "$mnt/pg" "$run" >/dev/null || { tail -n 15 "$run/postgres.log" >&2; exit 1; }
    runuser -u postgres -- "$pgbin/createdb" -h "$run" -U postgres crash
    psql_ -c "CREATE TABLE t (id INT PRIMARY KEY, k INT NOT NULL, pad CHAR(200) NOT NULL);
              CREATE TABLE log (id INT PRIMARY KEY);
              INSERT INTO t SELECT g, 0, repeat('x', 200) FROM generate_series(1, $rows) g;
              CHECKPOINT;" ;;
esac
sync
'''

# One session; the ids 1..N; the row each adds 1 to from an LCG of the seed. "ack ID" after COMMIT.
_WORKLOAD = _COMMON + r'''
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
'''

# What a judge prints: "key value" lines (ids: all of them on one line).
_JUDGE = _COMMON + r'''
dev=$1; mnt=$2; run=$3; db=$4; value=$5
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
      bad=$(runuser -u postgres -- "$pgbin/pg_checksums" --check -D "$mnt/pg" 2>&1)
      n=$(echo "$bad" | sed -n 's/^Bad checksums: *//p')
      if [ -n "$n" ]; then echo "checksum_failures $n"
      else echo "checksum_error pg_checksums did not check: $(echo "$bad" | tail -2 | tr '\n' ' ')"; fi
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
'''

_STOP = _COMMON + r'''
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
'''


# What each database needs in the guest image (packer/scripts/common/databases.sh installs them).
NEEDS = {
    "mariadb": ("command -v mariadbd && test -d /usr/local/share/sectorlab/mariadb-datadir",
                "MariaDB server (mariadbd) with its data directory template"),
    "postgres": ("ls -d /usr/lib/postgresql/*/bin/initdb /usr/pgsql-*/bin/initdb 2>/dev/null | grep -q .",
                 "PostgreSQL server (initdb, pg_ctl)"),
}


def require(guest, image: str, judge: str) -> None:
    """One line when the guest's image lacks the judge's database."""
    db = judge_of(judge)[0]
    test, what = NEEDS[db]
    if not guest.run("sudo -n sh -c", test).ok:  # as root: /usr/sbin on the PATH
        raise UsageError(f"judge {judge}: the guest image {image} has no {what}: use a Debian 12 image "
                         f"(packer/scripts/common/databases.sh installs them)")


def judge_of(name: str) -> tuple[str, str, str]:
    """(database, setting, value) of a judge; one line naming the judges when it is not one."""
    if name not in JUDGES:
        raise UsageError(f"judge {name!r}: expected one of {', '.join(JUDGES)}")
    return JUDGES[name]


@dataclass
class Verdict:
    """What a database recovered from one disk a cut left, and what that means for the ids
    acknowledged before the cut."""
    judge: str
    mounted: bool
    started: bool
    recovery_s: float | None
    ids: set[int] = field(default_factory=set)
    sum_k: int | None = None
    count_log: int | None = None
    check: str = ""                 # the database's own checks: what they reported (empty: all well)
    checksum_failures: int = 0
    errors: int = 0                 # ERROR/FATAL/PANIC lines of its log (MariaDB: [ERROR])
    restored: int = 0               # pages InnoDB restored from its doublewrite buffer
    why: str = ""
    acknowledged: int = 0           # ids 1..acknowledged were acknowledged before the cut
    ids_read: bool = False          # the ids in `log` were read (the database answered the query)

    @property
    def lost(self) -> int:
        """Acknowledged commits the recovered database does not have (all of them when it did not
        come up)."""
        if not self.started or not self.ids_read:
            return self.acknowledged
        return sum(1 for i in range(1, self.acknowledged + 1) if i not in self.ids)

    @property
    def holes(self) -> int:
        """Ids missing below the highest one there: with one session, each of them had committed
        before the next began (acknowledged to the client, whether or not the host had the line
        yet), so a hole is a commit lost while a later one survived."""
        if not self.ids:
            return 0
        return max(self.ids) - len(self.ids)

    @property
    def detected(self) -> bool:
        """The database (or its filesystem) said something is wrong: no mount, no start, an error in
        its log or a check, a checksum failure."""
        return not self.mounted or not self.started or bool(self.check) or self.checksum_failures > 0 \
            or self.errors > 0

    @property
    def consistent(self) -> bool | None:
        """Every committed transaction both inserted its id and added 1 to k, and no commit is missing
        below one that survived (None: not read)."""
        if self.sum_k is None or self.count_log is None:
            return None
        return self.sum_k == self.count_log and self.holes == 0

    @property
    def undetected(self) -> bool:
        """Wrong without a word from the database: an acknowledged commit missing or the tables
        inconsistent, while the database came up and its checks found nothing."""
        return not self.detected and (self.lost > 0 or self.consistent is False)

    def row(self) -> dict:
        return {"judge": self.judge, "mounted": self.mounted, "started": self.started,
                "recovery_s": self.recovery_s, "acknowledged": self.acknowledged, "recovered": len(self.ids),
                "ids_read": self.ids_read, "lost": self.lost, "holes": self.holes, "consistent": self.consistent,
                "detected": self.detected,
                "undetected": self.undetected, "check": self.check, "checksum_failures": self.checksum_failures,
                "errors": self.errors, "restored": self.restored, "why": self.why}


def parse(judge: str, text: str, acknowledged: int) -> Verdict:
    """A judge's output, read; one line naming what is missing when it is not a judge's."""
    said: dict[str, str] = {}
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        said[key] = value.strip()
    if "mounted" not in said:
        raise SectorlabError(f"judge {judge}: its output has no 'mounted' line: {text.strip()[-300:]!r}")

    def number(key: str) -> int | None:
        return int(said[key]) if re.fullmatch(r"-?\d+", said.get(key, "")) else None

    ids_text = said.get("ids", "")
    ids_ok = bool(re.fullmatch(r"[\d ]*", ids_text))
    ids = {int(i) for i in ids_text.split()} if ids_ok else set()
    check = said.get("check", "")
    if ids_text and not re.fullmatch(r"[\d ]*", ids_text):
        check = f"reading log: {ids_text[:200]}; {check}".strip("; ")
    if said.get("checksum_error"):
        check = f"{said['checksum_error'][:200]}; {check}".strip("; ")
    for key in ("sum_k", "count_log"):
        if said.get(key) and number(key) is None:
            check = f"{key}: {said[key][:200]}; {check}".strip("; ")
    recovery = said.get("recovery_s")
    return Verdict(judge, said["mounted"] == "1", said.get("started") == "1",
                   float(recovery) if recovery and re.fullmatch(r"[\d.]+", recovery) else None, ids,
                   number("sum_k"), number("count_log"), check, number("checksum_failures") or 0,
                   number("errors") or 0, number("restored") or 0, said.get("why", ""), acknowledged,
                   "ids" in said and ids_ok)


def setup_script() -> str:
    return _SETUP


def workload_script() -> str:
    return _WORKLOAD


def judge_script() -> str:
    return _JUDGE


def stop_script() -> str:
    return _STOP
