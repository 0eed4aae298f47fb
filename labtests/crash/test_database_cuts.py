"""Real databases judge a power cut (labs/power-cut.toml, make test-crash; docs/crash.md): MariaDB
with its doublewrite buffer and PostgreSQL with full_page_writes and data checksums, each on its
own 512e disk without power-loss protection of its read-modify-write, committing from one session;
the guest's QEMU killed mid-run (never a clean shutdown); each disk set to what the cut left, built
from its model's write log; the guest booted again and each database recovering from its own disk;
then COPIES more moments of the same run built onto the judge disk, each recovered in the guest.

With their protections on, the databases must never be silently wrong: after each cut, either every
commit acknowledged before it is there and the tables agree (SUM(k) = COUNT(log)), or the database
(or the filesystem under it) says what is wrong. The full matrix, the protections off included, is
`make crash-db`."""

from __future__ import annotations

import json

import pytest

from sectorlab.crash import labrun as dblab

pytestmark = pytest.mark.crash

COPIES = 2
SEED = 20261127


def test_databases_recover_from_a_real_cut_and_from_copies_of_the_run(lab_state, lab_guests, record_property):
    disks = {d.name: d for d in lab_state.disks.values()}
    targets = [dblab.Target(disks["mariadb-512e"], "mariadb-doublewrite-on", disks["judge-512e"]),
               dblab.Target(disks["postgres-512e"], "postgres-fpw-on", disks["judge-512e"])]
    guest = lab_guests["cut1"]
    rows = dblab.run(lab_state, guest, targets, COPIES, SEED)
    for row in rows:
        record_property(f"{row['disk']} {row['kind']}", json.dumps(row))
    assert len(rows) == len(targets) * (1 + COPIES)
    for t in targets:
        assert len(t.acks) >= dblab.MIN_ACKS and [i for _, i in t.acks] == list(range(1, len(t.acks) + 1)), t.name
    real = [r for r in rows if r["kind"] == "real"]
    assert all(r["acknowledged"] >= dblab.MIN_ACKS and r["writes_durable"] > 0 for r in real), real
    # their writes cover whole 4 KiB units (no read-modify-write to tear into a medium error), and with
    # their protections on each database comes back from the real cut by its own recovery
    assert all(r["partial_unit_writes"] == 0 and r["started"] and r["recovery_s"] for r in real), real
    for r in rows:
        said = f"{r['disk']} {r['kind']} ({r['judge']}): {r}"
        assert r["mounted"], said  # ext4's journal always recovers a state the rules give
        assert not r["undetected"], said
        if r["started"] and not r["detected"]:
            assert r["lost"] == 0 and r["consistent"] is True and r["recovered"] >= r["acknowledged"], said
            assert r["recovery_s"] is not None and r["recovery_s"] > 0, said
