"""`sectorlab crash` (make crash PRESET=...): power cuts on the device path, judged by redo-writer.

A crash preset (labs/crash/*.toml) names device profiles, geometries, redo BLOCKSIZEs, log group
members (1, or a multiplexed 2) and logs (one that never wraps, or one that wraps); each cell of
that matrix the rules engine allows is run `runs` times, each run with its own workload seed: a
device model of the profile at the geometry per member (devices/server.py, nbdkit and the project's
filter over a file in /dev/shm, so that what was written can be read after; a wrapping log's model
also keeps a write log), redo-writer on this host writing checked redo blocks through libnbd (`run
--format checked`: a header with the log sequence, block number and a CRC32C; `--mirror` to a
second member), the traces and the disks' final images kept. Then the cuts (crash/powerloss.py
decides from the trace what survives, the tears drawn from the same generator): `cuts` moments
drawn inside the writes' windows, `uniform_cuts` drawn over the whole run, and as many inside the
windows again at each value of the assumed shares swept; each cut's disk image is built from the
final image (a log that never wraps: every byte written once) or from the write log (one that
wraps), and judged by `redo-writer verify` (with `--mirror` for a group), crash recovery on the
image: the end of redo, torn blocks found by the checksum, those a header check alone would have
taken, unreadable blocks, and the acknowledged commits lost (of a wrapping log, those of the pass
the cut found the log writer in). A commit is acknowledged when its log write was answered (with
FUA, or by the flush after it) before the cut, on every member: the trace is written on this host at
the reply, outside the disk that crashes. The exposure of each run comes from its trace exactly;
crash/rates.py makes the rates of the runs.

On the virtual clock (`clock = "virtual"`, `sectorlab crash --clock virtual`) each member's model is
a `model:` member of redo-writer instead (redo-writer/README.md, "Virtual time"): the same parameters
and seed, the same trace, disk and write log written by redo-writer as the filter writes them, each
time the model's own: a cut is a moment of virtual time, and the same preset gives the same cuts
and verdicts on any host.

What this method can and cannot produce (docs/crash.md): any cut of one run's writes, cheaply (no
guest, no reboot); not a database's recovery (those judges run in a lab). Cells the rules engine
forbids are listed as forbidden and not run; a profile that does not state its power loss, or its
media rate, is one line before anything."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import random
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from .. import geometry, redowriter
from ..devices import build, trace
from ..devices.server import DeviceServer, write_ranges
from ..errors import SectorlabError, UsageError
from ..paths import new_results_dir, write_atomic
from . import atomic, powerloss, writelog
from .preset import Cell, CrashPreset
from .redolog import WORK_DIR, RedoLog, disk_after


def run_cell(preset: CrashPreset, cell: Cell, work: Path, rng: random.Random, keep: Path | None = None) -> dict:
    """The cell's runs (`preset.runs`, each with its own workload seed) and their cuts, each judged;
    what the report shows of it. Each run's trace is copied into `keep` (a results directory)."""
    g = geometry.get(cell.geometry)
    rules_ = powerloss.Rules.at(cell.profile, g.logical_block_size, g.physical_block_size)
    runs, cuts, rules_said = [], [], set()
    for r in range(preset.runs):
        run, run_cuts, rule = _run_once(preset, cell, rules_, work, rng, r)
        runs.append(run)
        cuts += run_cuts
        rules_said.add(rule)
        for j in range(cell.members) if keep is not None else ():
            shutil.copy(work / f"model{j or ''}" / "disk.trace",
                        keep / f"{cell.key.replace('/', '-')}.run{r + 1}{f'.member{j + 1}' if j else ''}.trace.csv")
    (by_rule,) = rules_said if len(rules_said) == 1 else (None,)
    return {"cell": cell.key, "profile": cell.profile, "geometry": cell.geometry, "blocksize": cell.blocksize,
            "members": cell.members, "wrapping": cell.wrapping, "log_size": preset.log_of(cell),
            **({} if cell.hold_us is None else {"hold_us": cell.hold_us}),
            **({"lies_about": rules_.lies_about} if rules_.lies_about != "none" else {}),
            "override": preset.override(cell),
            "power_loss": rules_.power_loss, "write_cache": rules_.write_cache, "atomic_unit": rules_.unit,
            "cannot_lose": by_rule, "runs": runs, "cuts": cuts}


class _VirtualModel:
    """A member's model on the virtual clock, with what the run reads of a DeviceServer: redo-writer's
    model: member of the same parameters, writing the trace (`directory`/disk.trace), the disk it
    serves (`backing`, made `size` bytes at start) and, for a wrapping log, the write log
    (`directory`/disk.writelog), as the filter does. Nothing to start or stop but its files."""

    def __init__(self, directory: Path, size: int, params: dict[str, str], backing: Path, write_log: bool):
        self.directory, self.size, self.params = directory, size, params
        self.backing, self.write_log = backing, write_log
        self.trace, self.writelog = directory / "disk.trace", directory / "disk.writelog"

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        with open(self.backing, "xb") as disk:
            disk.truncate(self.size)

    def stop(self) -> None:
        return None

    def uri(self) -> str:
        files = {"trace": self.trace, "image": self.backing, **({"writelog": self.writelog} if self.write_log else {})}
        for path in files.values():
            if ";" in str(path):  # the separator of a model: member's keys
                raise SectorlabError(f"{path}: a model: member's file may not have ';' in its path")
        return "model:" + ";".join(f"{k}={v}" for k, v in (self.params | files).items())


@dataclass
class _Member:
    """A member of the cell's log group: its model, the disk it served, and after the run its trace
    and its log."""
    server: DeviceServer | _VirtualModel
    image: Path
    requests: list = field(default_factory=list)
    log: RedoLog | None = None


def _members(cell: Cell, preset: CrashPreset, work: Path, rng: random.Random) -> list[_Member]:
    """The models of the cell's members, each over a disk of its own with a seed of its own (two
    disks position independently), the run before's files removed (the cell's own directory)."""
    params = cell.params()
    out = []
    for j in range(cell.members):
        model, image = work / f"model{j or ''}", work / f"disk{j or ''}.img"
        shutil.rmtree(model, ignore_errors=True)
        image.unlink(missing_ok=True)
        args = (model, preset.log_of(cell) + (1 << 20), {**params, "seed": str(rng.getrandbits(63))})
        out.append(_Member(_VirtualModel(*args, image, cell.wrapping) if preset.clock == "virtual" else
                           DeviceServer(*args, backing=image, write_log=cell.wrapping), image))
    return out


def _write(preset: CrashPreset, cell: Cell, members: list[_Member], seed: int) -> tuple[dict, list[str]]:
    """redo-writer's run through the members' models (a second one as run --mirror: a write is
    complete when both are); its report and command line."""
    command = [str(build.built(build.REDO_WRITER)), *redowriter.run_args(
        members[0].server.uri(), cell.blocksize, sessions=preset.sessions, redo_per_txn=preset.redo_per_txn,
        seconds=preset.seconds, log_size=preset.log_of(cell), arrival="poisson", rate=preset.rate, seed=seed,
        second=members[1].server.uri() if len(members) > 1 else None, pairing="mirror", checked=True,
        max_write=preset.max_write(cell), transactions=preset.transactions or None)[1:], "--output", "json"]
    started = []
    try:
        for m in members:
            m.server.start()
            started.append(m)
        proc = subprocess.run(command, capture_output=True, text=True, timeout=preset.seconds + 120)
    finally:
        for m in started:
            m.server.stop()
    if proc.returncode != 0:
        raise SectorlabError(f"{cell.key}: redo-writer exited {proc.returncode}: {proc.stderr.strip()[-300:]}")
    report = json.loads(proc.stdout)
    if report["wraps"] and not cell.wrapping:
        raise UsageError(f"{cell.key}: the log wrapped {report['wraps']} times in {preset.seconds} s: a cut's state "
                         f"is built from each byte written once; give log_size_mib more than "
                         f"{report['bytes_written'] >> 20} or fewer seconds")
    if cell.wrapping and report["wraps"] < 2:
        raise UsageError(f"{cell.key}: the wrapping log of {preset.wrapping_log >> 10} KiB wrapped "
                         f"{report['wraps']} times in {preset.seconds} s ({report['bytes_written'] >> 10} KiB "
                         f"written): expected at least 2; give wrapping_log_kib less or more seconds")
    for m in members:
        m.requests = trace.read(m.server.trace)
        if cell.wrapping:
            m.log = RedoLog.wrapping(m.requests, cell.blocksize, preset.wrapping_log, cell.key)
            m.log.positions_logged(m.requests, m.server.writelog)
        else:
            m.log = RedoLog.of(m.requests, cell.blocksize, cell.key)
            m.log.positions(m.image)
    return report, command


def _run_once(preset: CrashPreset, cell: Cell, rules_: powerloss.Rules, work: Path, rng: random.Random,
              index: int) -> tuple[dict, list[dict], str | None]:
    """One run of the cell (its members' models, redo-writer with a seed of its own) and its cuts:
    `preset.cuts` drawn inside the writes' windows (what a cut that tears finds; a group's: either
    member's), `preset.uniform_cuts` at moments drawn uniformly over the run (what a cut at a random
    moment finds), or the one at `preset.at_ms`. A cut cuts every member at the same moment, each
    tearing on its own draws."""
    members = _members(cell, preset, work, rng)
    seed = rng.getrandbits(31)
    report, command = _write(preset, cell, members, seed)
    writes = [w for m in members for w in m.log.writes]
    t0 = min(r.t_us for r in writes)
    t1 = max(r.t_us + max(r.answer_us, 0 if math.isnan(r.durable_us) else r.durable_us) for r in writes)
    spans = powerloss.merged([s for m in members for s in powerloss.windows(m.log.writes, m.log.flushes, rules_,
                                                                             t0, t1)])
    if preset.at_ms is not None and not 0 <= preset.at_ms * 1000 <= t1 - t0:
        raise UsageError(f"--at {preset.at_ms:g}: {cell.key}'s run wrote from 0 to {(t1 - t0) / 1000:.1f} ms: expected "
                         f"a moment inside it")
    if preset.at_ms is not None:
        moments = [("at", t0 + preset.at_ms * 1000)]
    else:
        moments = [("window", powerloss.inside(spans, rng)) for _ in range(preset.cuts)]
        moments += [("uniform", rng.uniform(t0, t1)) for _ in range(preset.uniform_cuts)]
    rule = powerloss.cannot_lose(rules_, members[0].log.writes, members[0].log.flushes)
    if preset.at_ms is None:  # the assumed shares swept: as many cuts inside the windows at each value
        moments += [(("sweep", name, value), powerloss.inside(spans, rng))
                    for name, value in preset.sweeps(cell, rule is None) for _ in range(preset.cuts)]
    drawn = []  # every cut's state drawn first, in order: the generator's draws do not depend on the judging
    for kind, at in moments:
        shares = {}
        if isinstance(kind, tuple):
            kind, name, value = kind
            shares = {name: value}
        rules_at = dataclasses.replace(rules_, shares=powerloss.Shares(**shares))
        states = [powerloss.cut(m.requests, rules_at, at, rng) for m in members]
        position = min(m.log.acknowledged(at) for m in members)  # a write is complete when every member's is
        # a wrapping log's recovery starts at the pass the cut found the writer in: earlier passes were
        # checkpointed (in a database's other log groups) before the log was reused
        pass_start = members[0].log.pass_start(at) if cell.wrapping else None
        checkpoint = min(pass_start, position) if cell.wrapping else None  # verify's is at most the acknowledged
        drawn.append((kind, shares, at, states, position, pass_start, checkpoint))
    verdicts = judged(lambda i, d: _judge(work, members, d[3], cell.blocksize, preset, d[4], d[6], f"cut{i}"), drawn)
    cuts = []
    for (kind, shares, at, states, position, pass_start, checkpoint), verdict in zip(drawn, verdicts):
        cuts.append({"run": index, "kind": kind, **({"shares": shares} if shares else {}),
                     "cut_us": round(at - t0, 3), "acknowledged": position,
                     **{k: sum(getattr(s, f) for s in states) for k, f in STATE_KEYS.items()},
                     **{k: verdict[k] for k in VERDICT_KEYS},
                     **({"blocks_from_mirror": verdict["blocks_from_mirror"]} if len(members) > 1 else {}),
                     **({"pass_start": pass_start, "checkpoint": checkpoint} if cell.wrapping else {})})
    first = members[0].log
    run = {"seed": seed, "wraps": report["wraps"], "writes": len(first.writes),
           "fua_writes": sum(w.fua for w in first.writes),
           "flushes": len(first.flushes), "transactions": report["transactions"], "span_us": round(t1 - t0, 3),
           "window_us": round(sum(b - a for a, b in spans), 3), "exposure": powerloss.exposure(spans, t0, t1),
           "partial_unit_writes": powerloss.partial_unit_writes(first.writes, rules_),
           "acknowledged_early": powerloss.acknowledged_early(first.writes, first.flushes, rules_), "command": command}
    return run, cuts, rule


# What a cut did to the writes, summed over a group's members.
STATE_KEYS = {"durable": "writes_durable", "lost": "writes_lost", "torn": "writes_torn",
              "units_unreadable": "units_unreadable"}


VERDICT_KEYS = ("recovered_to", "end_reason", "torn_blocks", "torn_header_ok", "unreadable_blocks",
                "valid_after_end", "lost_bytes", "lost_commits", "corrupt_undetected")


def verify(image: Path, unreadable: list[tuple[int, int]], blocksize: int, acknowledged: int,
           redo_per_txn: int, mirror: tuple[Path, list[tuple[int, int]]] | None = None,
           checkpoint: int | None = None) -> dict:
    """redo-writer verify on this host on a disk image (and a multiplexed group's second member's),
    the unreadable ranges of each named in a file beside it (IMAGE.unreadable, removed after)."""
    ranges = image.with_name(image.name + ".unreadable")
    second = second_ranges = None
    if mirror is not None:
        second, second_ranges = mirror[0], mirror[0].with_name(mirror[0].name + ".unreadable")
    try:
        write_ranges(ranges, unreadable)
        if mirror is not None:
            write_ranges(second_ranges, mirror[1])
        proc = subprocess.run([str(build.built(build.REDO_WRITER)), *redowriter.verify_args(
            str(image), blocksize, image.stat().st_size, acknowledged, redo_per_txn, str(ranges),
            str(second) if second else None, str(second_ranges) if second_ranges else None, checkpoint)[1:]],
                              capture_output=True, text=True, timeout=60)
    finally:
        for written in filter(None, (ranges, second_ranges)):
            written.unlink(missing_ok=True)
    if proc.returncode != 0:
        raise SectorlabError(f"redo-writer verify exited {proc.returncode}: {proc.stderr.strip()[-300:]}")
    return json.loads(proc.stdout)


# Cuts judged at once: each is a disk image built and redo-writer verify on it, on this host's cores
# (nothing of a run's measurement: the run and its trace are over).
JUDGES = max(1, min(4, os.cpu_count() or 1))


def judged(judge, items: list) -> list:
    """judge(i, item) of every item, JUDGES at a time; the verdicts in the items' order, or the first
    failure raised (those already running finish, the rest are not started)."""
    if JUDGES == 1 or len(items) < 2:
        return [judge(i, item) for i, item in enumerate(items)]
    with ThreadPoolExecutor(JUDGES) as pool:
        return list(pool.map(judge, range(len(items)), items))


def _judge(work: Path, members: list[_Member], states: list[powerloss.State], blocksize: int,
           preset: CrashPreset, acknowledged: int, checkpoint: int | None = None, name: str = "cut") -> dict:
    """redo-writer verify on the disks the cut left (the log's extent of each): one, or a group's two;
    the images are WORK/NAME.img (and NAME-1.img), removed after."""
    images = []
    for j, (m, state) in enumerate(zip(members, states)):
        image = work / f"{name}{f'-{j}' if j else ''}.img"
        image.unlink(missing_ok=True)
        if m.server.write_log:  # bytes written over: the blank disk, each landed range in arrival order
            writelog.build(m.server.writelog, m.requests, state, m.log.extent, image)
        else:
            disk_after(m.image, state, image, max(x.log.extent for x in members))
        images.append(image)
    mirror = (images[1], list(states[1].unreadable)) if len(images) > 1 else None
    try:
        return verify(images[0], list(states[0].unreadable), blocksize, acknowledged, preset.redo_per_txn, mirror,
                      checkpoint)
    finally:
        for image in images:  # tmpfs: a run's hundreds of cuts would hold their images in memory
            image.unlink(missing_ok=True)


def run(preset: CrashPreset, progress, results_root: Path) -> Path:
    """Every cell of the preset (forbidden ones listed), in a random order from the preset's seed;
    the results directory (crash.json, report.md)."""
    runnable = preset.runnable()  # before a results directory is made
    results = new_results_dir(results_root, f"crash-{preset.name}")
    lacking = atomic.line()
    if lacking:
        progress(lacking)
    rng = random.Random(preset.seed)
    order = rng.sample(runnable, len(runnable))
    started, cells = time.monotonic(), []
    for i, cell in enumerate(order, 1):
        work = Path(tempfile.mkdtemp(prefix="sectorlab-crash-", dir=WORK_DIR))
        try:
            out = run_cell(preset, cell, work, random.Random(rng.getrandbits(64)), keep=results)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        cells.append(out)
        lost = sum(c["lost_commits"] > 0 for c in out["cuts"])
        progress(f"{i}/{len(order)} {cell.key}: {len(out['runs'])} runs, "
                 f"{sum(r['writes'] for r in out['runs'])} log writes, {len(out['cuts'])} cuts, acknowledged "
                 f"commits lost in {lost} ({time.monotonic() - started:.0f} s)")
    doc = {"preset": preset.name, "title": preset.title, "seed": preset.seed, "runs": preset.runs,
           "cuts": preset.cuts, "uniform_cuts": preset.uniform_cuts, "at_ms": preset.at_ms,
           "shares": dataclasses.asdict(powerloss.DEFAULT_SHARES),
           "sweep": {"unreadable": list(preset.sweep_unreadable), "new": list(preset.sweep_new)},
           "load": {"sessions": preset.sessions, "redo_per_txn": preset.redo_per_txn, "rate": preset.rate,
                    "seconds": preset.seconds, "transactions": preset.transactions, "log_size": preset.log_size},
           "forbidden": [{"cell": c.key, "why": preset.forbidden(c)} for c in preset.cells if preset.forbidden(c)],
           "cells": cells, "wall_s": round(time.monotonic() - started), "atomic": lacking, "clock": preset.clock}
    write_atomic(results / "crash.json", json.dumps(doc, indent=2))
    from ..report import crash as report
    report.write(results)
    return results
