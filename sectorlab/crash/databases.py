"""Real databases as the judges of a power cut (docs/crash.md): MariaDB (InnoDB crash recovery, its
doublewrite buffer on or off) and PostgreSQL (WAL replay, data checksums on, full_page_writes on or
off; and with full_page_writes off and its data checksums off, initdb's default: nothing then checks
a page), each on an ext4 filesystem of a lab data disk, in the guest.

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
from ..guest.scripts import guest_script

ROWS = 20000
CHECKPOINT_EVERY = 50



# Which databases and settings a run can be judged by: name -> (database, setting, value).
JUDGES = {
    "mariadb-doublewrite-on": ("mariadb", "innodb_doublewrite", "ON"),
    "mariadb-doublewrite-off": ("mariadb", "innodb_doublewrite", "OFF"),
    "postgres-fpw-on": ("postgres", "full_page_writes", "on"),
    "postgres-fpw-off": ("postgres", "full_page_writes", "off"),
    # nothing checks a page: what a torn page does when no data checksum is there to catch it
    "postgres-fpw-off-checksums-off": ("postgres", "full_page_writes", "off"),
}
# The judges made without PostgreSQL's data checksums (initdb without --data-checksums, its default);
# every other PostgreSQL judge has them on.
CHECKSUMS_OFF = {"postgres-fpw-off-checksums-off"}


def checksums(judge: str) -> str:
    """'on' or 'off': the judge's data checksums (a MariaDB judge's InnoDB checksums are always on)."""
    return "off" if judge in CHECKSUMS_OFF else "on"

# The scripts the guest runs, files of sectorlab/inguest/sh/ (each says what it does and takes):
# databases.sh, what they share with the cross-check scenarios (labtests/support/dbs.py), first.
_SETUP = guest_script("crash-setup.sh")
_WORKLOAD = guest_script("crash-workload.sh")
_JUDGE = guest_script("crash-judge.sh")
_STOP = guest_script("crash-stop.sh")


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
    checksums: str = "on"           # PostgreSQL's data checksums when the judge made the database

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

    @property
    def detector(self) -> str:
        """What found the failure, the first of: the filesystem, the database's start (its crash
        recovery), its own checks, its log's errors, pg_checksums; then the lab's own checks, which a
        database in service does not have: acknowledged commits missing, SUM(k) against the
        commits; '' when nothing is wrong."""
        if not self.mounted:
            return "ext4: the filesystem did not mount"
        if not self.started:
            return "crash recovery: the database did not come up"
        if self.check:
            return "the database's checks (CHECK TABLE; amcheck)"
        if self.checksum_failures:
            return "pg_checksums (data checksums)"
        if self.errors:
            return "the database's log (errors while it came up)"
        if self.lost:
            return "the lab: acknowledged commits missing"
        if self.consistent is False:
            return "the lab: SUM(k) against the commits in log"
        return ""

    def row(self) -> dict:
        return {"judge": self.judge, "checksums": self.checksums, "detector": self.detector,
                "mounted": self.mounted, "started": self.started,
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
                   "ids" in said and ids_ok, "off" if said.get("checksums") == "off" else "on")


def setup_script() -> str:
    return _SETUP


def workload_script() -> str:
    return _WORKLOAD


def judge_script() -> str:
    return _JUDGE


def stop_script() -> str:
    return _STOP
