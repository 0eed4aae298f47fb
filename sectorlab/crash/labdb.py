"""`sectorlab crash-db` (make crash-db): the databases' power-cut matrix, in a running lab
(labs/crash-databases.toml): every disk whose model keeps a write log is a cell's disk, with a judge
disk of the same sectors in the same VM; each judge (crash/databases.JUDGES: MariaDB with the
doublewrite buffer on and off, PostgreSQL with full_page_writes on and off) in a seeded order runs
once on all those disks at once (crash/labrun.run): a real cut and `cuts - 1` more moments of the
same run, each recovered by the database in the guest. crash-db.json keeps every judged cut;
report.md and report.html (report/crashdb.py) give per cell the counts and intervals."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Callable

from .. import fields
from .. import lab as lab_mod
from ..errors import UsageError
from ..lab.record import DiskRecord, LabRecord
from ..paths import new_results_dir, write_atomic
from . import atomic, databases, labrun


def pairs(record: LabRecord) -> list[tuple[DiskRecord, DiskRecord]]:
    """(database disk, judge disk) of the lab: each disk whose model keeps a write log, with the
    first disk of the same VM and sectors, at least its size, that keeps none."""
    disks = sorted(record.disks.values(), key=lambda d: d.name)
    logged = [d for d in disks if d.device and d.write_log]
    if not logged:
        raise UsageError(f"lab {record.lab}: no disk keeps a write log (write_log = true): labs/crash-databases.toml "
                         f"is a lab for this (lab.json records it at lab-up: a lab brought up by an older sectorlab "
                         f"is brought up again by 'sectorlab lab up')")
    out = []
    for d in logged:
        judge = next((j for j in disks if j not in logged and j.vm == d.vm and j.size_bytes >= d.size_bytes
                      and (j.logical_block_size, j.physical_block_size) ==
                      (d.logical_block_size, d.physical_block_size)), None)
        if judge is None:
            raise UsageError(f"lab {record.lab}: disk {d.name} ({d.logical_block_size}/{d.physical_block_size}) has no "
                             f"judge disk: add one to VM {d.vm} with the same sectors, at least its size, and no "
                             f"write log")
        out.append((d, judge))
    if len({d.vm for d, _ in out}) != 1:
        raise UsageError(f"lab {record.lab}: its database disks are in more than one VM; a run kills one VM's QEMU")
    return out


def check_judges(judges: list[str]) -> list[str]:
    """Each a judge (crash/databases.JUDGES), at least one, none given twice (it would run twice and
    its cuts be counted twice); one line otherwise."""
    if not judges:
        raise UsageError(f"crash-db: no judge: expected one or more of {', '.join(databases.JUDGES)}")
    for j in judges:
        databases.judge_of(j)
    return fields.no_duplicates("crash-db", "judges", judges)


def run(record: LabRecord, judges: list[str], cuts: int, seed: int, progress: Callable[[str], None],
        results_root: Path, runs: int = 1) -> Path:
    """The matrix, `runs` times over (each run every judge once, in an order of its own, a real cut
    and its copies); its results directory."""
    check_judges(judges)
    cells = pairs(record)
    vm = cells[0][0].vm
    results = new_results_dir(results_root, f"crash-db-{record.lab}")
    rng = random.Random(seed)
    release = lab_mod.guests_from_lab_json(record)[vm].run("uname -r").stdout.strip()
    lacking = atomic.line(release)
    if lacking:
        progress(lacking)
    started, rows = time.monotonic(), []
    order = [(r, judge) for r in range(runs) for judge in rng.sample(judges, len(judges))]
    for i, (r, judge) in enumerate(order, 1):
        guest = lab_mod.guests_from_lab_json(record)[vm]
        targets = [labrun.Target(d, judge, j) for d, j in cells]
        progress(f"{i}/{len(order)} run {r + 1} {judge}: on {', '.join(d.name for d, _ in cells)}; {cuts} cuts each")
        rows += [row | {"run": r} for row in labrun.run(record, guest, targets, cuts - 1, rng.getrandbits(31),
                                                         progress)]
        guest.close()
        write_atomic(results / "crash-db.json",
                     json.dumps(_doc(record, judges, cuts, seed, rows, started) | {"atomic": lacking, "runs": runs},
                                indent=1))
    from ..report import crashdb
    crashdb.write(results)
    return results


def _doc(record: LabRecord, judges: list[str], cuts: int, seed: int, rows: list[dict], started: float) -> dict:
    return {"lab": record.lab, "judges": judges, "cuts": cuts, "seed": seed, "rows_per_table": databases.ROWS,
            "checkpoint_every": databases.CHECKPOINT_EVERY, "min_acks": labrun.MIN_ACKS, "rows": rows,
            "wall_s": round(time.monotonic() - started)}
