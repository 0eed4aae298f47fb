"""Power cuts judged by real databases in a lab (crash/databases.py has the judges; docs/crash.md).

One run per database disk, all of a VM's at once: the database made on its disk (whose device
model keeps a write log), its workload started, each "ack ID" taken on the host's CLOCK_MONOTONIC
(the trace's clock) as it arrives; once every workload has MIN_ACKS acknowledgements and a seeded
moment more, the guest's QEMU is killed: the real cut. What the cut left of each disk is built from
its model's write log and trace (crash/writelog.py, crash/powerloss.py) and written into it; the
guest boots again and each database recovers from its own disk. Then `copies` more moments of the
same run, drawn uniformly from the disk's write windows between the first acknowledgement and the
real cut (moments at which a write's bytes are going onto the medium: a cut anywhere else tears
nothing; the run's exposure, the share of that time the windows cover, is kept beside), are each
built the same way and written to the judge disk (a disk of the same geometry), where the database recovers
from them in the guest, which stays up: many crash states from one run, as dm-log-writes and ALICE
build them. A copy is any state the power-loss rules give at that moment; what no copy can be is a
state the rules do not give (a reordering inside the drive beyond them, a firmware's own failure).

Each judged state is one row: the judge, the moment, what the cut did to the disk's writes, and the
database's verdict (crash/databases.Verdict.row)."""

from __future__ import annotations

import random
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .. import lab as lab_mod
from ..devices import trace
from ..errors import SectorlabError, UsageError
from ..lab import modelled
from ..lab.record import DiskRecord, LabRecord
from . import databases, labcut, powerloss, writelog

MIN_ACKS = 150          # acknowledged commits of every workload before the cut's moment is drawn
MAX_WAIT_S = 600        # for them
EXTRA_S = (0.0, 3.0)    # the cut: a seeded moment this many seconds after that
MOUNT = "/mnt/sectorlab-crash"
RUN = "/run/sectorlab-crash"


@dataclass
class Target:
    """A database disk of the run, its judge, and the disk of the same sectors in the same VM that
    the copies are written to."""
    disk: DiskRecord
    judge: str
    judge_disk: DiskRecord
    acks: list[tuple[float, int]] = field(default_factory=list)  # (host CLOCK_MONOTONIC us, id) as read
    requests: list[trace.Request] = field(default_factory=list)
    log: Path | None = None         # the write log, kept from the cut on

    @property
    def name(self) -> str:
        return self.disk.name

    def acknowledged_at(self, at_us: float) -> int:
        """The acknowledged ids before `at_us` (one session: 1..N)."""
        return max((i for t, i in self.acks if t < at_us), default=0)


def _device(record: LabRecord, guest, disk: DiskRecord) -> str:
    found = lab_mod.probe(guest, record.disks_of(disk.vm))["disks"].get(disk.serial)
    if found is None:
        raise SectorlabError(f"{disk.vm}: disk {disk.name} (serial {disk.serial}) is not in the guest")
    return found.path


def _root(guest, script: str, *args, timeout: float = 900.0) -> str:
    result = guest.run("sudo -n sh -c", script, "crash", *args, timeout=timeout)
    if not result.ok:
        raise SectorlabError(f"{guest.name}: exited {result.rc}: {(result.stderr or result.stdout).strip()[-800:]}")
    return result.stdout


def _write_into(record: LabRecord, disk: DiskRecord, image: Path, unreadable: tuple) -> None:
    """`image` written over the whole of `disk` through its model's socket, then its unreadable
    ranges given to the model (a whole write rewrites them)."""
    server = modelled.server(record.lab, disk.name)
    server.write_image(image)
    server.set_unreadable(unreadable)


def _rules(disk: DiskRecord) -> powerloss.Rules:
    return powerloss.Rules.at(disk.device, disk.logical_block_size, disk.physical_block_size)


def check(record: LabRecord, targets: list[Target]) -> None:
    """One line for what the run cannot do: a judge that is not one, a disk without a write log or
    whose profile does not say what a power cut does, a judge disk of another geometry or smaller."""
    for t in targets:
        databases.judge_of(t.judge)
        _rules(t.disk)
        if not t.disk.write_log:
            raise SectorlabError(f"disk {t.disk.name}: its device model keeps no write log: set write_log = true "
                                 f"in its [[vm.disk]] and bring the lab up again")
        g, j = t.disk, t.judge_disk
        if (g.logical_block_size, g.physical_block_size) != (j.logical_block_size, j.physical_block_size) or \
                j.size_bytes < g.size_bytes or j.vm != g.vm:
            raise SectorlabError(f"judge disk {j.name} ({j.logical_block_size}/{j.physical_block_size}, "
                                 f"{int(j.size_bytes) >> 20} MiB, VM {j.vm}) cannot take {g.name}'s states "
                                 f"({g.logical_block_size}/{g.physical_block_size}, {int(g.size_bytes) >> 20} MiB, "
                                 f"VM {g.vm}): expected the same sectors and VM, at least its size")


def run(record: LabRecord, guest, targets: list[Target], copies: int, seed: int,
        progress: Callable[[str], None] = print) -> list[dict]:
    """The run (a real cut and `copies` more states per target), every state judged; its rows."""
    check(record, targets)
    if len({t.disk.vm for t in targets}) != 1:
        raise SectorlabError(f"a run's disks are of one VM (the one whose QEMU is killed): "
                             f"{', '.join(f'{t.disk.vm}/{t.name}' for t in targets)}")
    rng = random.Random(seed)
    vm = targets[0].disk.vm
    # the logs' copies and the states built from them: on disk, beside the lab's write logs
    work = Path(tempfile.mkdtemp(prefix="dbcut-", dir=modelled.server(record.lab, targets[0].name).writelog.parent))
    rows: list[dict] = []
    for t in targets:
        databases.require(guest, record.vm(vm).guest, t.judge)
    try:
        for t in targets:
            db, _, value = databases.judge_of(t.judge)
            progress(f"{t.name}: {t.judge}: making the filesystem and the database")
            _root(guest, databases.setup_script(), _device(record, guest, t.disk), f"{MOUNT}/{t.name}",
                  f"{RUN}/{t.name}", db, value, databases.ROWS, databases.checksums(t.judge))
        at = _workloads_then_kill(record, guest, targets, vm, rng, progress)
        for t in targets:  # what the run wrote, kept before anything else is written to the disk
            server = modelled.server(record.lab, t.disk.name)
            t.log = work / f"{t.name}.writelog"
            t.requests = _settled(server, t.log)
            state = powerloss.cut(t.requests, _rules(t.disk), at, rng)
            image = _build(work, t, state)
            _write_into(record, t.disk, image, state.unreadable)
            image.unlink()
            rows.append(_row(t, "real", at, state))
        labcut.start(record, vm)
        guest.wait_until_up(300)
        for t, row in zip(targets, rows):
            row |= _judge(record, guest, t, t.disk, row["acknowledged"], progress).row()
        first = min(min(a for a, _ in t.acks) for t in targets)
        spans = {t.name: _windows(t, first, at) for t in targets}
        for row, t in zip(rows, targets):
            row["exposure"] = powerloss.exposure(spans[t.name], first, at)
        for k in range(copies):
            for t in targets:
                # inside a write's window: a cut anywhere else tears nothing and leaves what a
                # flushed, acknowledged database would recover (the exposure says how often a
                # cut at a random moment finds one)
                moment = powerloss.inside(spans[t.name], rng) if spans[t.name] else rng.uniform(first, at)
                state = powerloss.cut(t.requests, _rules(t.disk), moment, rng)
                image = _build(work, t, state)
                _write_into(record, t.judge_disk, image, state.unreadable)
                image.unlink()
                row = _row(t, f"copy {k + 1}", moment, state) | {"exposure": rows[targets.index(t)]["exposure"],
                                                                  "in_window": bool(spans[t.name])}
                row |= _judge(record, guest, t, t.judge_disk, row["acknowledged"], progress).row()
                rows.append(row)
    finally:
        _clean_up(record, guest, targets, vm, progress)
        shutil.rmtree(work, ignore_errors=True)
    return rows


SETTLE_S = 120


def _settled(server, copy: Path) -> list[trace.Request]:
    """The model's trace once it has a row for every record of its write log (the dead QEMU's last
    requests are still being served: the log has a write when its data lands, the trace once its
    modelled time is over), and the log copied to `copy`."""
    def traced(requests: list[trace.Request]) -> int:
        return sum(1 for r in requests if r.op in ("write", "zero") and not r.error and r.length)

    def logged(path: Path) -> int:
        try:
            return sum(1 for r in writelog.records(path) if r.length)
        except UsageError:
            raise  # not a write log at all (a FIFO, a directory): waiting would not make it one
        except SectorlabError:
            return -1  # a record still being written

    deadline = time.monotonic() + SETTLE_S
    while True:  # the live log's heads are counted while it settles; it is copied once, when it has
        before = traced(trace.read(server.trace))
        n = logged(server.writelog)
        requests = trace.read(server.trace)
        if before == traced(requests) == n:
            shutil.copyfile(server.writelog, copy)
            if logged(copy) == n:  # and nothing came in while it was copied
                return requests
        if time.monotonic() > deadline:
            raise SectorlabError(f"{server.trace}: {traced(requests)} writes traced, {n} in its write log "
                                 f"{SETTLE_S} s after the cut: the model is stuck")
        time.sleep(0.2)


def _clean_up(record: LabRecord, guest, targets: list[Target], vm: str, progress: Callable[[str], None]) -> None:
    """Whatever the run came to: the guest running, no database or mount of the run left in it, no
    medium error left on any of its disks. A failure here is said, not raised over the run's own."""
    for t in targets:
        for d in (t.disk, t.judge_disk):
            modelled.server(record.lab, d.name).unreadable.unlink(missing_ok=True)
    try:
        if not labcut.running(record, vm):
            labcut.start(record, vm)
            guest.wait_until_up(300)
        for t in targets:
            db, _, _ = databases.judge_of(t.judge)
            for name in (t.name, f"judge-{t.name}"):
                _root(guest, databases.stop_script(), f"{MOUNT}/{name}", f"{RUN}/{name}", db, timeout=300)
    except SectorlabError as e:
        progress(f"clean-up after the run: {e}")


def _workloads_then_kill(record: LabRecord, guest, targets: list[Target], vm: str, rng: random.Random,
                         progress: Callable[[str], None]) -> float:
    """Every target's workload streamed (its acks taken as they arrive), then QEMU killed; the moment."""
    threads = []
    for t in targets:
        db, _, _ = databases.judge_of(t.judge)
        # a connection of its own per workload: paramiko's channels of one client would share its lock
        g = lab_mod.guests_from_lab_json(record)[vm]

        def on_line(line: str, t: Target = t) -> None:
            now = time.monotonic_ns() / 1000
            if line.startswith("ack ") and line[4:].isdigit():
                t.acks.append((now, int(line[4:])))

        th = threading.Thread(target=g.stream, args=("sudo -n sh -c", databases.workload_script(), "workload",
                                                     f"{RUN}/{t.name}", db, 10 ** 7, rng.randrange(1, 2 ** 31),
                                                     databases.ROWS, databases.CHECKPOINT_EVERY),
                              kwargs={"on_line": on_line}, daemon=True)
        th.start()
        threads.append((th, g))
    deadline = time.monotonic() + MAX_WAIT_S
    while any(len(t.acks) < MIN_ACKS for t in targets):
        if time.monotonic() > deadline or not all(th.is_alive() for th, _ in threads):
            raise SectorlabError(f"the workloads did not each acknowledge {MIN_ACKS} commits "
                                 f"({', '.join(f'{t.name}: {len(t.acks)}' for t in targets)})")
        time.sleep(0.2)
    time.sleep(rng.uniform(*EXTRA_S))
    progress(f"cut: QEMU of {vm} killed after {', '.join(f'{t.name} {len(t.acks)} acks' for t in targets)}")
    at = labcut.kill(record, vm)
    guest.close()
    for th, g in threads:
        th.join(60)
        g.close()
    return at


def _windows(t: Target, start: float, end: float) -> list[tuple[float, float]]:
    """The moments between `start` and `end` at which a cut finds one of the disk's writes in its window."""
    writes = [r for r in t.requests if r.op in ("write", "zero") and not r.error and r.length]
    return powerloss.windows(writes, [r for r in t.requests if r.op == "flush"], _rules(t.disk), start, end)


def _build(work: Path, t: Target, state: powerloss.State) -> Path:
    image = work / f"{t.name}.img"
    image.unlink(missing_ok=True)
    writelog.build(t.log, t.requests, state, int(t.disk.size_bytes), image)
    return image


def _row(t: Target, kind: str, moment: float, state: powerloss.State) -> dict:
    first = min(a for a, _ in t.acks)
    during = [r for r in t.requests if r.op == "write" and not r.error and first <= r.t_us <= moment]
    unit = _rules(t.disk).unit
    return {"disk": t.name, "profile": t.disk.device, "geometry": t.disk.geometry,
            "sectors": f"{t.disk.logical_block_size}/{t.disk.physical_block_size}", "kind": kind,
            "writes": len(during), "atomic_unit": unit,
            "partial_unit_writes": sum(bool(r.offset % unit or r.length % unit) for r in during),
            "moment_s": round((moment - min(a for a, _ in t.acks)) / 1e6, 3),
            "acknowledged": t.acknowledged_at(moment), "writes_durable": state.writes_durable,
            "writes_torn": state.writes_torn, "writes_lost": state.writes_lost,
            "units_unreadable": state.units_unreadable}


def _judge(record: LabRecord, guest, t: Target, disk: DiskRecord, acknowledged: int,
           progress: Callable[[str], None]) -> databases.Verdict:
    db, _, value = databases.judge_of(t.judge)
    out = _root(guest, databases.judge_script(), _device(record, guest, disk), f"{MOUNT}/judge-{t.name}",
                f"{RUN}/judge-{t.name}", db, value, databases.checksums(t.judge))
    verdict = databases.parse(t.judge, out, acknowledged)
    progress(f"{t.name} on {disk.name}: {t.judge}: {acknowledged} acknowledged, {verdict.lost} lost, "
             f"{'came up' if verdict.started else 'did not come up'}"
             + (f" in {verdict.recovery_s:.1f} s" if verdict.recovery_s is not None else "")
             + (f"; found by {verdict.detector}" if verdict.detector else "")
             + (f"; it said: {verdict.check or verdict.why}" if verdict.detected else "")
             + ("; inconsistent" if verdict.consistent is False else ""))
    return verdict
