"""`sectorlab crash` (make crash PRESET=...): power cuts on the device path, judged by redo-writer.

A crash preset (labs/crash/*.toml) names device profiles, geometries and redo BLOCKSIZEs; each cell
of that matrix the rules engine allows is run once: a device model of the profile at the geometry
(devices/server.py, nbdkit and the project's filter over a file in /dev/shm, so that what was
written can be read after), redo-writer on this host writing checked redo blocks through libnbd
(`run --format checked`: a header with the log sequence, block number and a CRC32C), its trace and
the disk's final image kept. Then `cuts` moments drawn from a seeded generator over the run, each a
power cut (crash/powerloss.py decides from the trace what survives, the tears drawn from the same
generator): its disk image is built from the final image (every byte of the log is written once:
the log must not wrap) and judged by `redo-writer verify`, crash recovery on the image: the end of
redo, torn blocks found by the checksum, those a header check alone would have taken, unreadable
blocks, and the acknowledged commits lost. A commit is acknowledged when its log write was answered
(with FUA, or by the flush after it) before the cut: the trace is written on this host at the reply,
outside the disk that crashes.

What this method can and cannot produce (docs/crash.md): any cut of one run's writes, cheaply (no
guest, no reboot); not a database's recovery (those judges run in a lab) and not a write that
overwrites an earlier one (the log here never wraps). Cells the rules engine forbids are listed as
forbidden and not run; a profile that does not state its power loss is one line before anything."""

from __future__ import annotations

import json
import math
import os
import random
import re
import shutil
import struct
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from .. import fields, geometry, inputs
from ..devices import build, profiles, trace
from ..devices.server import DeviceServer
from ..errors import SectorlabError, UsageError
from ..inguest import rules
from ..paths import REPO, new_results_dir, write_atomic
from . import atomic, powerloss

PRESETS_DIR = REPO / "labs" / "crash"
WORK_DIR = Path("/dev/shm")   # the disks' files: a flush of the file plugin costs nothing on tmpfs
HEADER = struct.Struct("<BBHIII")  # type, version, used, block number, sequence, checksum (redo-writer/redoblock.h)
# The most bytes of a disk image held in memory at once: a cut's disk is built and its log read in
# pieces of this, never whole (a log of 2 GiB read whole took 2.1 GB; 4 GiB was a MemoryError).
CHUNK = 1 << 20
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # a preset's name in labs/crash/


def _names(kind: str, known):
    """A list of names each of which `known` takes (profiles.get, geometry.get: one line otherwise),
    none given twice (the cell would run twice, its second trace over the first's)."""
    def check(where: str, key: str, value, got: dict) -> list:
        if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
            raise UsageError(f"{where}: {key} = {value!r}: expected a list of {kind} names")
        for v in value:
            known(v)
        return fields.no_duplicates(where, key, value)
    return fields.custom(f"list of {kind} names", check)


def _blocksizes(where: str, key: str, value, got: dict) -> list:
    if not isinstance(value, list) or not value or any(
            isinstance(v, bool) or not isinstance(v, int) or v not in (512, 1024, 4096) for v in value):
        raise UsageError(f"{where}: {key} = {value!r}: expected a list of redo BLOCKSIZEs 512, 1024 or 4096")
    return fields.no_duplicates(where, key, value)


CRASH_FIELDS = fields.Table("[crash]", "A crash preset (labs/crash/*.toml, make crash): power cuts on the device "
                            "path, per cell of profiles x geometries x BLOCKSIZEs (docs/crash.md).", (
    fields.Field("title", fields.TEXT, "what the matrix shows", default=fields.REQUIRED),
    fields.Field("profiles", _names("device profile", profiles.get),
                 "device profiles that state their power_loss", default=fields.REQUIRED),
    fields.Field("geometries", _names("geometry", geometry.get), "geometries of the catalog", default=fields.REQUIRED),
    fields.Field("blocksizes", fields.custom("list of 512, 1024, 4096", _blocksizes), "redo BLOCKSIZEs",
                 default=fields.REQUIRED),
    fields.Field("cuts", fields.number(1, 10000), "power cuts per cell, each judged by redo-writer verify",
                 default=200),
    fields.Field("sessions", fields.number(1, 64), "redo-writer's sessions", default=4),
    fields.Field("redo_per_txn", fields.number(1, 1 << 20), "bytes of redo a commit", default=512),
    fields.Field("rate", fields.number(1, 100000), "commits per second offered (Poisson): a load every profile "
                 "writes into a log that does not wrap", default=300),
    fields.Field("seconds", fields.number(1, 600), "the run's length", default=3),
    fields.Field("log_size_mib", fields.number(1, 4096), "the log (it must not wrap)", default=64),
    fields.Field("seed", fields.number(0, 2**31 - 1), "of the cells' order, the loads' arrivals, the cuts and the "
                 "tears", default=fields.REQUIRED),
))


@dataclass(frozen=True)
class Cell:
    profile: str
    geometry: str
    blocksize: int

    @property
    def key(self) -> str:
        return f"{self.profile}/{self.geometry}@{self.blocksize}"


@dataclass(frozen=True)
class CrashPreset:
    name: str
    title: str
    cells: tuple[Cell, ...]
    cuts: int
    sessions: int
    redo_per_txn: int
    rate: int            # commits per second offered (Poisson), so that every profile writes a log that fits
    seconds: int
    log_size: int
    seed: int
    at_ms: float | None = None  # one cut at this moment of each run (ms from its first write), not drawn
    path: Path | None = None    # the file it was read from

    def forbidden(self, cell: Cell) -> str | None:
        """The rules engine's refusal of the cell's BLOCKSIZE on its geometry, with
        _disk_sector_size_override as a DBA would set it to get there (ORA-01378 below the logical
        sector), or None."""
        g = geometry.get(cell.geometry)
        v = rules.evaluate(g.logical_block_size, g.physical_block_size, cell.blocksize, override=True)
        return None if v.allowed else (v.error or "not allowed")

    @staticmethod
    def override(cell: Cell) -> bool:
        """Whether the cell's BLOCKSIZE needs _disk_sector_size_override on its geometry (4096 on 512n)."""
        g = geometry.get(cell.geometry)
        return not rules.evaluate(g.logical_block_size, g.physical_block_size, cell.blocksize).allowed

    def runnable(self) -> list[Cell]:
        """The cells the rules engine allows; one line naming each cell and why when it allows none
        (a run of none would end, exit 0, with an empty report)."""
        allowed = [c for c in self.cells if self.forbidden(c) is None]
        if not allowed:
            why = "; ".join(f"{c.key}: {self.forbidden(c)}" for c in self.cells)
            raise UsageError(f"crash preset {self.path or self.name}: every cell is forbidden by the rules engine "
                             f"({why}); expected at least one cell it allows: add a BLOCKSIZE at or above a "
                             f"geometry's logical sector, or such a geometry")
        return allowed


def preset_names() -> list[str]:
    return sorted(p.stem for p in PRESETS_DIR.glob("*.toml"))


def preset_path(name: str) -> Path:
    """A crash preset's file: a name of labs/crash/, or the path of a TOML file (one with a '/' or
    ending .toml). A name is a name: never '..', a leading '-', a NUL or another path's part."""
    if "\0" not in name and (name.endswith(".toml") or "/" in name):
        return Path(name)  # anything but a regular file there is refused when it is read (inputs.read_toml)
    path = PRESETS_DIR / f"{name}.toml"
    if not NAME.fullmatch(name) or not path.is_file():
        raise UsageError(f"crash preset {name!r}: expected one of {', '.join(preset_names())} (labs/crash/*.toml), "
                         f"or the path of a .toml file")
    return path


def load(name: str) -> CrashPreset:
    """A crash preset by name (labs/crash/NAME.toml) or path, checked whole before anything runs:
    read within the lab definition's bound (inputs.read_toml), only a [crash] table, no name given
    twice, and at least one cell the rules engine allows."""
    path = preset_path(name)
    doc = inputs.read_toml(path, "crash preset", inputs.LAB_DEFINITION_MAX)
    outside = sorted(set(doc) - {"crash"})
    if outside:
        raise UsageError(f"crash preset {path}: {outside[0]!r} is outside [crash]: expected only a [crash] table "
                         f"(its keys: {', '.join(sorted(CRASH_FIELDS.keys()))}); move it into [crash] or remove it")
    raw = doc.get("crash")
    if not isinstance(raw, dict):
        raise UsageError(f"crash preset {path}: no [crash] table: expected one, holding "
                         f"{', '.join(f.name for f in CRASH_FIELDS.fields if f.default is fields.REQUIRED)}")
    raw = CRASH_FIELDS.read(f"{path} [crash]", raw)
    cells = tuple(Cell(p, g, bs) for p in raw["profiles"] for g in raw["geometries"] for bs in raw["blocksizes"])
    for c in cells:  # one line now, not after the first cells ran
        g = geometry.get(c.geometry)
        powerloss.Rules.of(c.profile, profiles.get(c.profile).params_for(g.logical_block_size,
                                                                         g.physical_block_size), g.logical_block_size)
    preset = CrashPreset(path.stem, raw["title"], cells, raw["cuts"], raw["sessions"], raw["redo_per_txn"],
                         raw["rate"], raw["seconds"], raw["log_size_mib"] << 20, raw["seed"], path=path)
    preset.runnable()
    return preset


@dataclass
class RedoLog:
    """A run's log as its disk's trace has it: the log writes in log order (each byte written once:
    the log did not wrap), the flushes, and what the writes reach in whole blocks (the image a cut
    leaves, and what verify reads)."""
    writes: list[trace.Request]
    flushes: list[trace.Request]
    blocksize: int
    extent: int
    ends: list[int] | None = None      # per write, the redo byte position at its end (positions())

    @classmethod
    def of(cls, requests: list[trace.Request], blocksize: int, what: str) -> RedoLog:
        writes = sorted((r for r in requests if r.op == "write" and not r.error), key=lambda r: r.offset)
        if not writes:
            raise SectorlabError(f"{what}: the disk's trace has no write: nothing to cut")
        for a, b in zip(writes, writes[1:]):
            if a.offset + a.length > b.offset:
                raise SectorlabError(f"{what}: bytes {b.offset}-{a.offset + a.length} were written twice: a cut's "
                                     f"state is built from each byte written once")
        extent = -(-max(w.offset + w.length for w in writes) // blocksize) * blocksize
        return cls(writes, [r for r in requests if r.op == "flush"], blocksize, extent)

    def positions(self, image: Path) -> None:
        """Each write's end in redo bytes: the redo its blocks carry (each block header's `used`)
        added up from the log's start, read from the final image a piece (CHUNK) at a time."""
        self.ends, pos = [], 0
        with open(image, "rb", buffering=0) as f:
            for w in self.writes:
                for data, blocks in _pieces(f.fileno(), image, w.offset, w.length, self.blocksize):
                    pos += sum(HEADER.unpack_from(data, k)[2] for k in blocks)
                self.ends.append(pos)
        self._acked = powerloss.acknowledged_at(self.writes, self.flushes)

    def acknowledged(self, at_us: float) -> int:
        """The redo position every commit acknowledged before `at_us` lies within."""
        return max([e for e, a in zip(self.ends, self._acked) if a <= at_us], default=0)


def _pieces(fd: int, path: Path, offset: int, length: int, blocksize: int):
    """The blocks of `length` bytes at `offset`, read CHUNK (whole blocks) at a time: (a piece's
    bytes, the offsets in them of its blocks' headers)."""
    step = max(CHUNK // blocksize, 1) * blocksize
    for start in range(offset, offset + length, step):
        n = min(step, offset + length - start)
        blocks = range(0, n, blocksize)
        want = max(n, blocks[-1] + HEADER.size)
        data = os.pread(fd, want, start)
        if len(data) < want:
            raise SectorlabError(f"{path}: ends at byte {start + len(data)}, before the log write at {offset} "
                                 f"(+{length}) that its disk's trace has")
        yield data, blocks


def run_cell(preset: CrashPreset, cell: Cell, work: Path, rng: random.Random) -> dict:
    """The cell's run and its cuts, each judged; what the report shows of it."""
    g = geometry.get(cell.geometry)
    params = profiles.get(cell.profile).params_for(g.logical_block_size, g.physical_block_size)
    rules_ = powerloss.Rules.of(cell.profile, params, g.logical_block_size)
    writer = build.built(build.REDO_WRITER)
    server = DeviceServer(work / "model", preset.log_size + (1 << 20), params, backing=work / "disk.img")
    command = [str(writer), "run", "--format", "checked", "--target", server.uri(), "--blocksize",
               str(cell.blocksize), "--sessions", str(preset.sessions), "--redo-per-txn", str(preset.redo_per_txn),
               "--rate", str(preset.rate), "--arrival", "poisson", "--seed", str(rng.getrandbits(31)),
               "--log-size", str(preset.log_size), "--duration", str(preset.seconds), "--output", "json"]
    server.start()
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=preset.seconds + 120)
    finally:
        server.stop()
    if proc.returncode != 0:
        raise SectorlabError(f"{cell.key}: redo-writer exited {proc.returncode}: {proc.stderr.strip()[-300:]}")
    report = json.loads(proc.stdout)
    if report["wraps"]:
        raise UsageError(f"{cell.key}: the log wrapped {report['wraps']} times in {preset.seconds} s: a cut's state "
                         f"is built from each byte written once; give log_size_mib more than "
                         f"{report['bytes_written'] >> 20} or fewer seconds")
    requests = trace.read(server.trace)
    log = RedoLog.of(requests, cell.blocksize, cell.key)
    image = work / "disk.img"
    log.positions(image)
    writes, flushes = log.writes, log.flushes
    t0 = min(r.t_us for r in writes)
    t1 = max(r.t_us + max(r.answer_us, 0 if math.isnan(r.durable_us) else r.durable_us) for r in writes)
    if preset.at_ms is not None and not 0 <= preset.at_ms * 1000 <= t1 - t0:
        raise UsageError(f"--at {preset.at_ms:g}: {cell.key}'s run wrote from 0 to {(t1 - t0) / 1000:.1f} ms: expected "
                         f"a moment inside it")
    moments = ([t0 + preset.at_ms * 1000] if preset.at_ms is not None
               else [rng.uniform(t0, t1) for _ in range(preset.cuts)])
    cuts = []
    for at in moments:
        state = powerloss.cut(requests, rules_, at, rng)
        position = log.acknowledged(at)
        verdict = _judge(work, image, log.extent, state, cell.blocksize, preset, position)
        cuts.append({"cut_us": round(at - t0, 3), "acknowledged": position, "durable": state.writes_durable,
                     "lost": state.writes_lost, "torn": state.writes_torn, "units_unreadable": state.units_unreadable,
                     **{k: verdict[k] for k in VERDICT_KEYS}})
    return {"cell": cell.key, "profile": cell.profile, "geometry": cell.geometry, "blocksize": cell.blocksize,
            "override": preset.override(cell),
            "power_loss": rules_.power_loss, "write_cache": rules_.write_cache, "atomic_unit": rules_.unit,
            "writes": len(writes), "fua_writes": sum(w.fua for w in writes), "flushes": len(flushes),
            "transactions": report["transactions"], "command": command, "cuts": cuts}


VERDICT_KEYS = ("recovered_to", "end_reason", "torn_blocks", "torn_header_ok", "unreadable_blocks",
                "valid_after_end", "lost_bytes", "lost_commits", "corrupt_undetected")


def disk_after(final: Path, state: powerloss.State, out: Path | int, size: int) -> None:
    """The disk a cut left, written to `out` (a path made new, or a new file's descriptor) as a
    sparse file of `size` bytes: the landed bytes copied from the final image a piece (CHUNK) at a
    time, the rest as never written (zeros; the unreadable ranges are the state's, for verify to be
    told). Every byte of the log is written once, so the landed ranges' order does not matter:
    they are copied merged, in disk order."""
    merged = _landed(state, size)
    with open(final, "rb", buffering=0) as src, open(out, "xb" if not isinstance(out, int) else "wb",
                                                     buffering=0) as dst:
        dst.truncate(size)
        for off, end in merged:
            while off < end:
                data = os.pread(src.fileno(), min(CHUNK, end - off), off)
                if not data:
                    raise SectorlabError(f"{final}: ends at byte {off}, within bytes the cut left landed "
                                         f"(up to {end})")
                off += os.pwrite(dst.fileno(), data, off)


def _landed(state: powerloss.State, size: int) -> list[list[int]]:
    """The cut's landed ranges within `size` bytes, merged, in disk order ([start, end) each)."""
    merged: list[list[int]] = []
    for off, length in sorted(state.landed):
        end = min(off + length, size)
        if end <= off:
            continue
        if merged and off <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([off, end])
    return merged


_FALLOC_FL_KEEP_SIZE, _FALLOC_FL_PUNCH_HOLE = 0x01, 0x02


def cut_in_place(image: Path, state: powerloss.State) -> None:
    """The disk a cut left, made of the final image in its own place (no second copy of the disk
    in /dev/shm, which is memory): every byte that did not land is punched out, a hole that reads
    as zeros, as never written. Where the filesystem cannot punch holes, zeros are written a piece
    (CHUNK) at a time."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
    with open(image, "r+b", buffering=0) as f:
        size = os.fstat(f.fileno()).st_size
        pos = 0
        for start, end in [*_landed(state, size), [size, size]]:
            if start > pos and libc.fallocate(f.fileno(), _FALLOC_FL_PUNCH_HOLE | _FALLOC_FL_KEEP_SIZE,
                                              pos, start - pos) != 0:
                for off in range(pos, start, CHUNK):
                    os.pwrite(f.fileno(), bytes(min(CHUNK, start - off)), off)
            pos = max(pos, end)


def verify_args(blocksize: int, log_size: int, acknowledged: int, redo_per_txn: int,
                unreadable: str | None = None) -> list[str]:
    """redo-writer verify's options (after --target), as the host and a guest run it; `unreadable`:
    a file naming the ranges a read would fail on (a device answers them with EIO itself)."""
    return ["--blocksize", str(blocksize), "--log-size", str(log_size), "--acknowledged", str(acknowledged),
            "--redo-per-txn", str(redo_per_txn), *(["--unreadable", unreadable] if unreadable else []),
            "--output", "json"]


def verify(image: Path, unreadable: list[tuple[int, int]], blocksize: int, acknowledged: int,
           redo_per_txn: int) -> dict:
    """redo-writer verify on this host on a disk image, its unreadable ranges named in a file beside it."""
    ranges = image.with_name(image.name + ".unreadable")
    ranges.write_text("".join(f"{off} {length}\n" for off, length in unreadable))
    proc = subprocess.run([str(build.built(build.REDO_WRITER)), "verify", "--target", str(image),
                           *verify_args(blocksize, image.stat().st_size, acknowledged, redo_per_txn, str(ranges))],
                          capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise SectorlabError(f"redo-writer verify exited {proc.returncode}: {proc.stderr.strip()[-300:]}")
    return json.loads(proc.stdout)


def _judge(work: Path, final: Path, extent: int, state: powerloss.State, blocksize: int, preset: CrashPreset,
           acknowledged: int) -> dict:
    """redo-writer verify on the disk the cut left (the log's extent of it)."""
    image = work / "cut.img"
    image.unlink(missing_ok=True)
    disk_after(final, state, image, extent)
    return verify(image, list(state.unreadable), blocksize, acknowledged, preset.redo_per_txn)


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
            out = run_cell(preset, cell, work, random.Random(rng.getrandbits(64)))
            shutil.copy(work / "model" / "disk.trace", results / f"{cell.key.replace('/', '-')}.trace.csv")
        finally:
            shutil.rmtree(work, ignore_errors=True)
        cells.append(out)
        lost = sum(c["lost_commits"] > 0 for c in out["cuts"])
        progress(f"{i}/{len(order)} {cell.key}: {out['writes']} log writes, {len(out['cuts'])} cuts, acknowledged "
                 f"commits lost in {lost} ({time.monotonic() - started:.0f} s)")
    doc = {"preset": preset.name, "title": preset.title, "seed": preset.seed, "cuts": preset.cuts,
           "at_ms": preset.at_ms,
           "load": {"sessions": preset.sessions, "redo_per_txn": preset.redo_per_txn, "rate": preset.rate,
                    "seconds": preset.seconds, "log_size": preset.log_size},
           "forbidden": [{"cell": c.key, "why": preset.forbidden(c)} for c in preset.cells if preset.forbidden(c)],
           "cells": cells, "wall_s": round(time.monotonic() - started), "atomic": lacking}
    write_atomic(results / "crash.json", json.dumps(doc, indent=2))
    from . import report
    report.write(results)
    return results
