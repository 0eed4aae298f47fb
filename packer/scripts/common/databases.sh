#!/bin/sh -eu
# The real databases and the second filesystem the cross-check scenarios run
# (labtests/databases/test_cross_checks.py): MariaDB, PostgreSQL's pg_test_fsync, sysbench and XFS, installed
# as lab tools (images/lab-tools.toml; lab-guest.sh has checked their commands). No database runs
# at boot: a scenario starts one by hand on a lab data disk and stops it after. Safe to re-run.

# Debian enables the servers it installs (Oracle Linux does not); a lab guest starts none of them
# (each would cost the boot seconds under TCG and write to the root disk). On Debian this runs in
# the base disk's chroot (scripts/build-debian-base), where systemctl only edits the unit links
# and no server was started (mmdebstrap keeps services from starting); on Oracle Linux in the
# booted build guest.
for unit in mariadb.service postgresql.service; do
  systemctl stop "$unit" >/dev/null 2>&1 || true
  systemctl disable "$unit" >/dev/null 2>&1 || true
  state=$(systemctl is-enabled "$unit" 2>/dev/null || true)
  [ "$state" = disabled ] || { echo "databases: $unit is '$state' at boot, expected disabled" >&2; exit 1; }
done
# Debian's postinst made a PostgreSQL cluster (15/main); the scenarios run no PostgreSQL server.
if [ -d /etc/postgresql/15/main ] && command -v pg_dropcluster >/dev/null; then pg_dropcluster --stop 15 main; fi

# A MariaDB data directory made once here, copied onto the disk under test by each scenario:
# mariadb-install-db under TCG takes far longer than a copy. Its log is small (8 MiB; Debian's
# default is 96 MiB) so that the copy is quick; the scenarios start the server with the same size.
template=/usr/local/share/sectorlab/mariadb-datadir
rm -rf "$template"
install -d -m 0755 /usr/local/share/sectorlab
if ! mariadb-install-db --user=mysql --datadir="$template" --skip-test-db --auth-root-authentication-method=socket \
       --innodb-log-file-size=8M --innodb-buffer-pool-size=16M >/tmp/mariadb-install-db.log 2>&1; then
  tail -20 /tmp/mariadb-install-db.log >&2
  echo "databases: mariadb-install-db failed (log above)" >&2
  exit 1
fi
rm -f /tmp/mariadb-install-db.log
echo "databases: MariaDB data directory template $(du -sh "$template" | cut -f1)"

# Debian keeps pg_test_fsync in PostgreSQL's own bin directory, Oracle Linux on the PATH.
pg_test_fsync=$(command -v pg_test_fsync || find /usr/lib/postgresql -path '*/bin/pg_test_fsync' | sort -V | tail -1)
[ -x "$pg_test_fsync" ] || { echo "databases: no pg_test_fsync in the guest" >&2; exit 1; }
# /etc/sectorlab-image: the lines of this script replaced, the others (lab-guest.sh's) kept.
touch /etc/sectorlab-image
sed -i -E '/^(mariadb|pg_test_fsync|sysbench|xfsprogs)=/d' /etc/sectorlab-image
cat >> /etc/sectorlab-image <<INFO
mariadb=$(mariadbd --version)
pg_test_fsync=$("$pg_test_fsync" --version)
sysbench=$(sysbench --version)
xfsprogs=$(mkfs.xfs -V)
INFO
