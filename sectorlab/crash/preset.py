"""A crash preset (labs/crash/*.toml, `sectorlab crash`): a [crash] table naming device profiles,
geometries and redo BLOCKSIZEs, whose every cell the rules engine allows is run; read whole and
checked before anything runs (load), and `sectorlab crash --list`'s names (preset_names)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .. import fields, geometry, inputs
from ..devices import profiles
from ..errors import UsageError
from ..inguest import rules
from ..paths import REPO
from . import powerloss

PRESETS_DIR = REPO / "labs" / "crash"


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


def _members(where: str, key: str, value, got: dict) -> list:
    if not isinstance(value, list) or not value or any(isinstance(v, bool) or v not in (1, 2) for v in value):
        raise UsageError(f"{where}: {key} = {value!r}: expected a list of 1 (one log member) and 2 (a multiplexed "
                         f"group, each member on a disk of its own)")
    return fields.no_duplicates(where, key, value)


def _wrapping(where: str, key: str, value, got: dict) -> list:
    if not isinstance(value, list) or not value or any(not isinstance(v, bool) for v in value):
        raise UsageError(f"{where}: {key} = {value!r}: expected a list of false (a log that never wraps) and true "
                         f"(one of wrapping_log_kib that wraps several times)")
    return fields.no_duplicates(where, key, value)


def _holds(where: str, key: str, value, got: dict) -> list:
    if not isinstance(value, list) or any(isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 10_000_000
                                          for v in value):
        raise UsageError(f"{where}: {key} = {value!r}: expected a list of whole microseconds from 0 to 10000000 ([] "
                         f"for the profiles' own)")
    return fields.no_duplicates(where, key, value)


def lies_about_flush(profile: str) -> bool:
    """Whether the profile's model acknowledges a flush before what its cache holds is durable (its
    power-loss rules say, as they read the model's parameters)."""
    return powerloss.lies_about_flush(profiles.get(profile).params.get("lies-about", "none"))


def _shares(where: str, key: str, value, got: dict) -> list:
    if not isinstance(value, list) or any(isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1
                                          for v in value):
        raise UsageError(f"{where}: {key} = {value!r}: expected a list of probabilities from 0 to 1 ([] for none)")
    return fields.no_duplicates(where, key, [float(v) for v in value])


CRASH_FIELDS = fields.Table("[crash]", "A crash preset (labs/crash/*.toml, make crash): power cuts on the device "
                            "path, per cell of profiles x geometries x BLOCKSIZEs (docs/crash.md).", (
    fields.Field("title", fields.TEXT, "what the matrix shows", default=fields.REQUIRED),
    fields.Field("profiles", _names("device profile", profiles.get),
                 "device profiles that state their power_loss", default=fields.REQUIRED),
    fields.Field("geometries", _names("geometry", geometry.get), "geometries of the catalog", default=fields.REQUIRED),
    fields.Field("blocksizes", fields.custom("list of 512, 1024, 4096", _blocksizes), "redo BLOCKSIZEs",
                 default=fields.REQUIRED),
    fields.Field("members", fields.custom("list of 1, 2", _members), "members of the log group: 1, and 2 for a "
                 "multiplexed group (redo-writer run --mirror: every log write to both, complete when both are; "
                 "each member a disk of its own, cut at the same moment, tearing on its own draws; verify "
                 "recovers block by block from whichever member is good)", default=[1]),
    fields.Field("wrapping", fields.custom("list of false, true", _wrapping), "the log: false, one that never "
                 "wraps (its states built from the final image); true, one of wrapping_log_kib that wraps several "
                 "times in the run (its states built from the model's write log; recovery ends at the previous "
                 "pass's blocks, as Oracle's does)", default=[False]),
    fields.Field("wrapping_log_kib", fields.number(64, 1 << 20), "the wrapping log's size, KiB: at least 64 and "
                 "four of redo-writer's largest write (max-write: a quarter of it, at most 1 MiB); small enough that "
                 "the slowest cell's run writes it twice (an unprotected 512e disk at BLOCKSIZE 512 writes some 180 "
                 "KiB in 3 s at the matrix's load)", default=64),
    fields.Field("cache_hold_us", fields.custom("list of microseconds", _holds), "for each profile that lies "
                 "about a flush (its model's lies-about), a cell per value of its cache-hold-us: how long it keeps an "
                 "acknowledged write in its cache before the drain takes it (no drive publishes it: assumed, swept); "
                 "[] keeps the profile's own", default=[]),
    fields.Field("runs", fields.number(3, 100), "independent runs per cell, each with its own workload seed: the "
                 "intervals take the run as the unit (cuts of one run are not independent trials)", default=3),
    fields.Field("cuts", fields.number(1, 10000), "power cuts per run drawn inside the writes' windows (a write's "
                 "bytes going onto the medium: what a cut that tears finds), each judged by redo-writer verify",
                 default=100),
    fields.Field("uniform_cuts", fields.number(0, 10000), "power cuts per run at moments drawn uniformly over it: "
                 "what a cut at a random moment finds, measured directly", default=20),
    fields.Field("sweep_unreadable", fields.custom("list of probabilities", _shares), "the assumed share of an "
                 "unprotected drive's partly written units left unreadable, swept (the run's cuts take 1/3): in the "
                 "cells that can lose acknowledged commits, `cuts` more cuts a run inside the windows at each",
                 default=[0.01, 0.1, 0.9]),
    fields.Field("sweep_new", fields.custom("list of probabilities", _shares), "the assumed odds of a torn write's "
                 "unit landing new, swept (the run's cuts take 1/2): in the cells whose log blocks span several "
                 "units (a block can tear), `cuts` more cuts a run inside the windows at each",
                 default=[0.1, 0.9]),
    fields.Field("sessions", fields.number(1, 64), "redo-writer's sessions", default=4),
    fields.Field("redo_per_txn", fields.number(1, 1 << 20), "bytes of redo a commit", default=512),
    fields.Field("rate", fields.number(1, 100000), "commits per second offered (Poisson): a load every profile "
                 "writes into a log that does not wrap", default=300),
    fields.Field("seconds", fields.number(1, 600), "the run's length", default=3),
    fields.Field("transactions", fields.number(0, 10_000_000), "commits a run, when it ends on a count: whichever "
                 "of it and seconds comes first (0: seconds alone); a count makes a run the same on a busy host",
                 default=0),
    fields.Field("log_size_mib", fields.number(1, 4096), "the log (it must not wrap)", default=64),
    fields.Field("seed", fields.number(0, 2**31 - 1), "of the cells' order, the loads' arrivals, the cuts and the "
                 "tears", default=fields.REQUIRED),
))


@dataclass(frozen=True)
class Cell:
    profile: str
    geometry: str
    blocksize: int
    members: int = 1         # 2: a multiplexed log group, each member on a disk of its own
    wrapping: bool = False   # a log small enough to wrap several times in the run
    hold_us: int | None = None  # a lying drive's cache-hold-us, over the profile's own

    @property
    def key(self) -> str:
        return (f"{self.profile}/{self.geometry}@{self.blocksize}{'x2' if self.members == 2 else ''}"
                f"{'+wrap' if self.wrapping else ''}{'' if self.hold_us is None else f'+hold{self.hold_us}us'}")

    def params(self) -> dict[str, str]:
        """The model's parameters of a disk of this cell: its profile's at its geometry, the hold swept over
        the profile's own."""
        g = geometry.get(self.geometry)
        out = profiles.get(self.profile).params_for(g.logical_block_size, g.physical_block_size)
        return out if self.hold_us is None else {**out, "cache-hold-us": str(self.hold_us)}


@dataclass(frozen=True)
class CrashPreset:
    name: str
    title: str
    cells: tuple[Cell, ...]
    cuts: int                # per run, inside the writes' windows
    sessions: int
    redo_per_txn: int
    rate: int            # commits per second offered (Poisson), so that every profile writes a log that fits
    seconds: int
    log_size: int
    seed: int
    runs: int = 3
    uniform_cuts: int = 0    # per run, at moments drawn uniformly over it
    sweep_unreadable: tuple[float, ...] = ()  # the assumed shares swept, each with `cuts` more cuts a run
    sweep_new: tuple[float, ...] = ()
    wrapping_log: int = 64 << 10
    transactions: int = 0       # a run ends after this many commits, or at `seconds` (0: at `seconds`)
    at_ms: float | None = None  # one cut at this moment of each run (ms from its first write), not drawn
    path: Path | None = None    # the file it was read from
    clock: str = "real"         # virtual: redo-writer's model: members in the models' time (crash/devicepath.py)

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

    def sweeps(self, cell: Cell, can_lose: bool) -> list[tuple[str, float]]:
        """The assumed shares swept in this cell: the unreadable share where a cut can lose
        acknowledged commits, the odds of a unit landing new where a log block spans several units
        (a block can tear)."""
        g = geometry.get(cell.geometry)
        unit = powerloss.Rules.at(cell.profile, g.logical_block_size, g.physical_block_size).unit
        return ([("unreadable", v) for v in self.sweep_unreadable] if can_lose else []) + \
            ([("new", v) for v in self.sweep_new] if cell.blocksize > unit else [])

    def log_of(self, cell: Cell) -> int:
        """The cell's log size: the wrapping log's, or the one that never wraps."""
        return self.wrapping_log if cell.wrapping else self.log_size

    def max_write(self, cell: Cell) -> int | None:
        """redo-writer's log buffer for the cell: a quarter of a wrapping log, in whole blocks (at most
        its default 1 MiB), so that a write never covers the log; its default otherwise."""
        return min(1 << 20, self.wrapping_log // 4 // cell.blocksize * cell.blocksize) if cell.wrapping else None

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
    lying = [p for p in raw["profiles"] if lies_about_flush(p)]
    if raw["cache_hold_us"] and not lying:
        raise UsageError(f"crash preset {path}: cache_hold_us = {raw['cache_hold_us']!r} sweeps the hold of a drive "
                         f"that lies about a flush, and none of its profiles does: expected one such profile (as "
                         f"ssd-client-tlc-lying), or cache_hold_us = []")
    if lying and True in raw["wrapping"]:
        raise UsageError(f"crash preset {path}: wrapping = {raw['wrapping']!r} with {lying[0]!r}, which lies about a "
                         f"flush: a wrapping log's recovery takes the passes before as checkpointed, which a lying "
                         f"drive may not have made durable (not modelled); expected wrapping = [false] with it")
    cells = tuple(Cell(p, g, bs, n, w, h) for p in raw["profiles"] for g in raw["geometries"]
                  for bs in raw["blocksizes"] for n in raw["members"] for w in raw["wrapping"]
                  for h in (raw["cache_hold_us"] if lies_about_flush(p) and raw["cache_hold_us"] else [None]))
    for c in cells:  # one line now, not after the first cells ran
        g = geometry.get(c.geometry)
        powerloss.Rules.at(c.profile, g.logical_block_size, g.physical_block_size)
    preset = CrashPreset(path.stem, raw["title"], cells, raw["cuts"], raw["sessions"], raw["redo_per_txn"],
                         raw["rate"], raw["seconds"], raw["log_size_mib"] << 20, raw["seed"], raw["runs"],
                         raw["uniform_cuts"], tuple(raw["sweep_unreadable"]), tuple(raw["sweep_new"]),
                         raw["wrapping_log_kib"] << 10, raw["transactions"], path=path)
    preset.runnable()
    return preset
