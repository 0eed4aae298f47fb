"""A bench preset (labs/bench/*.toml, or any lab definition with a [bench] table): read and
checked before anything starts (load_preset).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .. import inputs, labdef
from ..errors import UsageError
from ..inguest import rules
from ..labdef import known_keys, name_field, whole_number
from ..paths import REPO

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


Progress = Callable[[str], None]


PRESETS_DIR = REPO / "labs" / "bench"
RESULTS_DIR = REPO / "results"


DEFAULT_PRESET = "vsphere-512e"
BENCH_KEYS = {"seed", "title", "sessions", "redo_per_txn", "rate", "warmup_s", "duration_s", "log_size_mib",
              "blocksizes", "repeats", "target", "compare", "asm"}


TARGET_KEYS = {"name", "disk", "race", "reformat_lbads", "repeats"}
COMPARE_KEYS = {"title", "a", "b"}


ASM_KEYS = {"target", "sector_size"}
# Seconds a run costs beyond its warm-up and measured time (two SSH round trips, fetching its
# files): the estimate before the first run has finished, replaced by what the runs take.
RUN_OVERHEAD_S = 4.0


@dataclass(frozen=True)
class Workload:
    sessions: int
    redo_per_txn: int
    rate: int
    warmup_s: int
    duration_s: int
    log_size: int

    def as_json(self) -> dict:
        return {"sessions": self.sessions, "redo_per_txn": self.redo_per_txn, "rate": self.rate,
                "warmup_s": self.warmup_s, "duration_s": self.duration_s, "log_size": self.log_size}


@dataclass(frozen=True)
class Target:
    name: str
    disk: labdef.Disk
    race: labdef.Disk | None = None
    reformat_lbads: int | None = None
    repeats: int = 1

    def expected_sectors(self) -> tuple[int, int]:
        """(logical, physical) the guest should show when this target runs."""
        g = self.disk.geometry
        if self.reformat_lbads:
            return self.reformat_lbads, max(self.reformat_lbads, g.logical_block_size)
        return g.logical_block_size, g.physical_block_size


@dataclass
class Preset:
    name: str
    path: Path
    lab: labdef.Lab
    seed: str
    title: str
    workload: Workload
    blocksizes: list[int]
    targets: list[Target]
    compares: list[dict] = field(default_factory=list)
    asm: list[dict] = field(default_factory=list)

    def plan(self) -> list[tuple[Target, int, int]]:
        """(target, BLOCKSIZE, repeat) of every run the rules engine will allow on the sectors the
        targets should show; what the guest really shows decides at run time."""
        out = []
        for t in self.targets:
            logical, physical = t.expected_sectors()
            for bs in self.blocksizes:
                if rules.evaluate(logical, physical, bs).allowed:
                    out += [(t, bs, r) for r in range(1, t.repeats + 1)]
        return out

    def estimate_s(self) -> float:
        w = self.workload
        return len(self.plan()) * (w.warmup_s + w.duration_s + RUN_OVERHEAD_S)


def preset_names() -> list[str]:
    return sorted(p.stem for p in PRESETS_DIR.glob("*.toml"))


def preset_path(name: str) -> Path:
    """A preset's file: a name from labs/bench/, or the path of a TOML file with a [bench] table."""
    if name.endswith(".toml") or "/" in name:
        path = Path(name)
        if not path.exists():  # anything else there is refused when it is read (inputs.read_text)
            raise UsageError(f"preset file {name} does not exist")
        return path
    path = PRESETS_DIR / f"{name}.toml"
    if not path.is_file():
        raise UsageError(f"unknown preset {name!r}: expected one of {', '.join(preset_names())} "
                         f"(labs/bench/*.toml), or the path of a lab definition with a [bench] table")
    return path


def load_preset(name: str, duration_s: int | None = None, warmup_s: int | None = None,
                repeats: int | None = None) -> Preset:
    """The preset `name` (labs/bench/NAME.toml or a path), checked before anything starts;
    `duration_s`, `warmup_s` and `repeats` override the file's (make bench DURATION=...)."""
    path = preset_path(name)
    try:
        data = tomllib.loads(inputs.read_text(path, "bench preset", inputs.LAB_DEFINITION_MAX))
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{path}: not valid TOML ({e})") from e
    lab = labdef.with_suffix(labdef.validate(data, path))
    where = f"{path} [bench]"
    b = data.get("bench")
    if b is None:
        raise UsageError(f"{path}: no [bench] table: a preset is a lab definition with a [bench] table "
                         f"(see labs/bench/)")
    known_keys(where, b, BENCH_KEYS)
    if duration_s is not None:
        b = {**b, "duration_s": duration_s}
    if warmup_s is not None:
        b = {**b, "warmup_s": warmup_s}
    workload = Workload(
        sessions=whole_number(where, "sessions", b.get("sessions", 4), 1, 256),
        redo_per_txn=whole_number(where, "redo_per_txn", b.get("redo_per_txn", 512), 1, 64 << 20),
        rate=whole_number(where, "rate", b.get("rate", 0), 0, 10_000_000),
        warmup_s=whole_number(where, "warmup_s", b.get("warmup_s", 3), 1, 3600),
        duration_s=whole_number(where, "duration_s (DURATION)", b.get("duration_s", 15), 1, 3600),
        log_size=whole_number(where, "log_size_mib", b.get("log_size_mib", 64), 1, 1 << 20) << 20)
    blocksizes = b.get("blocksizes", list(rules.VALID_BLOCKSIZES))
    if (not isinstance(blocksizes, list) or not blocksizes
            or any(bs not in rules.VALID_BLOCKSIZES for bs in blocksizes) or len(set(blocksizes)) != len(blocksizes)):
        raise UsageError(f"{where}: blocksizes = {blocksizes!r}: expected a list of distinct redo BLOCKSIZEs from "
                         f"{', '.join(map(str, rules.VALID_BLOCKSIZES))}")
    default_repeats = whole_number(where, "repeats", b.get("repeats", 1), 1, 20)
    if repeats is not None:
        default_repeats = whole_number("REPEATS", "repeats", repeats, 1, 20)
    disks = {d.name: d for vm in lab.vms for d in vm.disks}
    if len(lab.vms) != 1:
        raise UsageError(f"{path}: {len(lab.vms)} VMs: a bench preset runs on one VM (two TCG guests beside each "
                         f"other on this host's cores would measure each other)")

    def disk(where_t: str, key: str, value) -> labdef.Disk:
        if value not in disks:
            raise UsageError(f"{where_t}: {key} = {value!r}: no such disk in this lab; expected one of "
                             f"{', '.join(disks)}")
        return disks[value]

    targets: list[Target] = []
    for i, t in enumerate(b.get("target") or [{"name": n, "disk": n} for n in disks], 1):
        wt = f"{where} [[bench.target]] #{i}"
        known_keys(wt, t, TARGET_KEYS)
        tname = name_field(wt, "name", t.get("name", t.get("disk")))
        if any(x.name == tname for x in targets):
            raise UsageError(f"{wt}: duplicate target name {tname!r}")
        d = disk(wt, "disk", t.get("disk"))
        race = disk(wt, "race", t["race"]) if "race" in t else None
        if race is not None and race.name == d.name:
            raise UsageError(f"{wt}: race = {race.name!r} is the target's own disk: race a second disk")
        if race is not None and race.geometry != d.geometry:
            raise UsageError(f"{wt}: race = {race.name!r} has geometry {race.geometry.name}, the disk "
                             f"{d.geometry.name}: the members of a log group need one sector size")
        lbads = t.get("reformat_lbads")
        if lbads is not None:
            if d.bus != "nvme":
                raise UsageError(f"{wt}: reformat_lbads on disk {d.name} (bus {d.bus}): only an emulated NVMe "
                                 f"namespace can be formatted to another LBA size (bus = \"nvme\")")
            if lbads not in (512, 4096):
                raise UsageError(f"{wt}: reformat_lbads = {lbads!r}: expected 512 or 4096 (the LBA formats "
                                 f"QEMU's NVMe namespace offers)")
        reps = default_repeats
        if "repeats" in t and repeats is None:
            reps = whole_number(wt, "repeats", t["repeats"], 1, 20)
        targets.append(Target(tname, d, race, lbads, reps))
    names = {t.name for t in targets}

    def selector(wc: str, key: str, value) -> dict:
        tname, _, bs = str(value).partition("@")
        if tname not in names or not bs.isdigit() or int(bs) not in blocksizes:
            raise UsageError(f"{wc}: {key} = {value!r}: expected TARGET@BLOCKSIZE with a target of "
                             f"{', '.join(sorted(names))} and a BLOCKSIZE of {blocksizes}")
        return {"disk": tname, "blocksize": int(bs)}

    compares = []
    for i, c in enumerate(b.get("compare", []), 1):
        wc = f"{where} [[bench.compare]] #{i}"
        known_keys(wc, c, COMPARE_KEYS)
        compares.append({"title": str(c.get("title", f"{c.get('a')} against {c.get('b')}")),
                         "a": selector(wc, "a", c.get("a")), "b": selector(wc, "b", c.get("b"))})
    asm = []
    for i, a in enumerate(b.get("asm", []), 1):
        wa = f"{where} [[bench.asm]] #{i}"
        known_keys(wa, a, ASM_KEYS)
        if a.get("target") not in names:
            raise UsageError(f"{wa}: target = {a.get('target')!r}: expected one of {', '.join(sorted(names))}")
        size = a.get("sector_size")
        if size not in (512, 4096):
            raise UsageError(f"{wa}: sector_size = {size!r}: expected an ASM disk group SECTOR_SIZE of 512 or 4096")
        asm.append({"target": a["target"], "sector_size": size})
    return Preset(path.stem, path, lab, str(b.get("seed", "")), str(b.get("title", path.stem)), workload,
                  blocksizes, targets, compares, asm)


def _clock(seconds: float) -> str:
    seconds = max(0, round(seconds))
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"
