"""A bench preset (labs/bench/*.toml, or any lab definition with a [bench] table): read and
checked before anything starts (load_preset).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .. import fields, inputs, labdef
from ..errors import UsageError
from ..inguest import rules
from ..paths import REPO

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


Progress = Callable[[str], None]


PRESETS_DIR = REPO / "labs" / "bench"
RESULTS_DIR = REPO / "results"


DEFAULT_PRESET = "vsphere-512e"
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


def _blocksizes(where: str, key: str, value, got: dict) -> list[int]:
    if (not isinstance(value, list) or not value or any(bs not in rules.VALID_BLOCKSIZES for bs in value)
            or len(set(value)) != len(value)):
        raise UsageError(f"{where}: blocksizes = {value!r}: expected a list of distinct redo BLOCKSIZEs from "
                         f"{', '.join(map(str, rules.VALID_BLOCKSIZES))}")
    return value


def _disk(where: str, key: str, value, got: dict) -> labdef.Disk:
    disks = got["disks"]
    if value not in disks:
        raise UsageError(f"{where}: {key} = {value!r}: no such disk in this lab; expected one of {', '.join(disks)}")
    return disks[value]


def _lbads(where: str, key: str, value, got: dict) -> int:
    d = got["disk"]
    if d.bus != "nvme":
        raise UsageError(f"{where}: reformat_lbads on disk {d.name} (bus {d.bus}): only an emulated NVMe "
                         f"namespace can be formatted to another LBA size (bus = \"nvme\")")
    if value not in (512, 4096):
        raise UsageError(f"{where}: reformat_lbads = {value!r}: expected 512 or 4096 (the LBA formats "
                         f"QEMU's NVMe namespace offers)")
    return value


def _selector(where: str, key: str, value, got: dict) -> dict:
    names, blocksizes = got["targets"], got["blocksizes"]
    tname, _, bs = str(value).partition("@")
    if tname not in names or not bs.isdigit() or int(bs) not in blocksizes:
        raise UsageError(f"{where}: {key} = {value!r}: expected TARGET@BLOCKSIZE with a target of "
                         f"{', '.join(sorted(names))} and a BLOCKSIZE of {blocksizes}")
    return {"disk": tname, "blocksize": int(bs)}


def _target_name(where: str, key: str, value, got: dict) -> str:
    if value not in got["targets"]:
        raise UsageError(f"{where}: target = {value!r}: expected one of {', '.join(sorted(got['targets']))}")
    return value


def _asm_sector(where: str, key: str, value, got: dict) -> int:
    if value not in (512, 4096):
        raise UsageError(f"{where}: sector_size = {value!r}: expected an ASM disk group SECTOR_SIZE of 512 or 4096")
    return value


REPEATS = fields.number(1, 20)
BENCH_FIELDS = fields.Table("[bench]", "What a bench preset runs: the workload of redo-writer and its runs.", (
    fields.Field("seed", fields.TEXT, "the seed the preset reproduces (shared/seeds/NNN)", default=""),
    fields.Field("title", fields.TEXT, "the report's title", default=lambda got: got["stem"],
                 default_text="the file's name"),
    fields.Field("sessions", fields.number(1, 256), "redo-writer's sessions (committing threads)", default=4),
    fields.Field("redo_per_txn", fields.number(1, 64 << 20), "bytes of redo per commit", default=512),
    fields.Field("rate", fields.number(0, 10_000_000), "commits per second in all (0: as fast as it goes)",
                 default=0),
    fields.Field("warmup_s", fields.number(1, 3600), "seconds run before measuring", default=3),
    fields.Field("duration_s", fields.number(1, 3600), "seconds measured (make bench DURATION=)", default=15,
                 label="duration_s (DURATION)"),
    fields.Field("log_size_mib", fields.number(1, 1 << 20), "the redo log's size in MiB", default=64),
    fields.Field("blocksizes", fields.custom("list of " + ", ".join(map(str, rules.VALID_BLOCKSIZES)), _blocksizes),
                 "the redo BLOCKSIZEs to run (those the rules engine refuses for a target are left out)",
                 default=lambda got: list(rules.VALID_BLOCKSIZES),
                 default_text=", ".join(map(str, rules.VALID_BLOCKSIZES))),
    fields.Field("repeats", REPEATS, "runs of each target and BLOCKSIZE (make bench REPEATS=)", default=1),
    fields.Field("target", fields.tables("[[bench.target]]"), "[[bench.target]]: what to run on",
                 default_text="every disk"),
    fields.Field("compare", fields.tables("[[bench.compare]]"), "[[bench.compare]]: pairs of runs the report compares",
                 default=lambda got: [], default_text="none"),
    fields.Field("asm", fields.tables("[[bench.asm]]"), "[[bench.asm]]: ASM disk groups to evaluate",
                 default=lambda got: [], default_text="none"),
))
TARGET_FIELDS = fields.Table("[[bench.target]]", "One target: a disk of the lab, run as a redo log.", (
    fields.Field("disk", fields.custom("a disk of the lab", _disk), "the disk", default=fields.REQUIRED),
    fields.Field("name", fields.custom("name", labdef.name_field), "the target's name in the report",
                 default=lambda got: got["disk"].name, default_text="the disk's name"),
    fields.Field("race", fields.custom("a disk of the lab", _disk),
                 "a second disk of the same geometry written as the log group's other member"),
    fields.Field("reformat_lbads", fields.custom("512 or 4096", _lbads),
                 "format the NVMe namespace to this LBA size first (bus nvme only)"),
    fields.Field("repeats", REPEATS, "runs of each BLOCKSIZE on this target", default_text="[bench]'s"),
))
COMPARE_FIELDS = fields.Table("[[bench.compare]]", "Two runs the report compares.", (
    fields.Field("a", fields.custom("TARGET@BLOCKSIZE", _selector), "the first", default=fields.REQUIRED),
    fields.Field("b", fields.custom("TARGET@BLOCKSIZE", _selector), "the second", default=fields.REQUIRED),
    fields.Field("title", fields.TEXT, "the comparison's title", default_text='"A against B"'),
))
ASM_FIELDS = fields.Table("[[bench.asm]]", "An ASM disk group on a target, checked by the rules engine.", (
    fields.Field("target", fields.custom("a target's name", _target_name), "the target", default=fields.REQUIRED),
    fields.Field("sector_size", fields.custom("512 or 4096", _asm_sector), "the disk group's SECTOR_SIZE",
                 default=fields.REQUIRED),
))
TABLES = (BENCH_FIELDS, TARGET_FIELDS, COMPARE_FIELDS, ASM_FIELDS)


def load_preset(name: str, duration_s: int | None = None, warmup_s: int | None = None,
                repeats: int | None = None, suffix: str = "") -> Preset:
    """The preset `name` (labs/bench/NAME.toml or a path), checked before anything starts;
    `duration_s`, `warmup_s` and `repeats` override the file's (make bench DURATION=...); `suffix`
    follows the lab's name (make's LAB_SUFFIX)."""
    path = preset_path(name)
    try:
        data = tomllib.loads(inputs.read_text(path, "bench preset", inputs.LAB_DEFINITION_MAX))
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{path}: not valid TOML ({e})") from e
    lab = labdef.with_suffix(labdef.validate(data, path), suffix)
    where = f"{path} [bench]"
    b = data.get("bench")
    if b is None:
        raise UsageError(f"{path}: no [bench] table: a preset is a lab definition with a [bench] table "
                         f"(see labs/bench/)")
    fields.known_keys(where, b, BENCH_FIELDS.keys())
    overrides = {"duration_s": duration_s, "warmup_s": warmup_s}
    b = BENCH_FIELDS.read(where, {**b, **{k: v for k, v in overrides.items() if v is not None}}, stem=path.stem)
    workload = Workload(b["sessions"], b["redo_per_txn"], b["rate"], b["warmup_s"], b["duration_s"],
                        b["log_size_mib"] << 20)
    if repeats is not None:
        b["repeats"] = fields.whole_number("REPEATS", "repeats", repeats, 1, 20)
    if len(lab.vms) != 1:
        raise UsageError(f"{path}: {len(lab.vms)} VMs: a bench preset runs on one VM (two TCG guests beside each "
                         f"other on this host's cores would measure each other)")
    disks = {d.name: d for vm in lab.vms for d in vm.disks}
    targets = _targets(where, b, disks, repeats is not None)
    context = {"targets": {t.name for t in targets}, "blocksizes": b["blocksizes"]}
    compares = []
    for i, c in enumerate(b["compare"], 1):
        c = COMPARE_FIELDS.read(f"{where} [[bench.compare]] #{i}", c, **context)
        c["title"] = c["title"] or (f"{c['a']['disk']}@{c['a']['blocksize']} against "
                                    f"{c['b']['disk']}@{c['b']['blocksize']}")
        compares.append({"title": c["title"], "a": c["a"], "b": c["b"]})
    asm = [ASM_FIELDS.read(f"{where} [[bench.asm]] #{i}", a, **context) for i, a in enumerate(b["asm"], 1)]
    return Preset(path.stem, path, lab, b["seed"], b["title"], workload, b["blocksizes"], targets, compares, asm)


def _targets(where: str, b: dict, disks: dict, repeats_given: bool) -> list[Target]:
    targets: list[Target] = []
    for i, t in enumerate(b["target"] or [{"name": n, "disk": n} for n in disks], 1):
        wt = f"{where} [[bench.target]] #{i}"
        t = TARGET_FIELDS.read(wt, t, disks=disks)
        d, race = t["disk"], t["race"]
        if any(x.name == t["name"] for x in targets):
            raise UsageError(f"{wt}: duplicate target name {t['name']!r}")
        if race is not None and race.name == d.name:
            raise UsageError(f"{wt}: race = {race.name!r} is the target's own disk: race a second disk")
        if race is not None and race.geometry != d.geometry:
            raise UsageError(f"{wt}: race = {race.name!r} has geometry {race.geometry.name}, the disk "
                             f"{d.geometry.name}: the members of a log group need one sector size")
        reps = b["repeats"] if repeats_given or t["repeats"] is None else t["repeats"]
        targets.append(Target(t["name"], d, race, t["reformat_lbads"], reps))
    return targets


def _clock(seconds: float) -> str:
    seconds = max(0, round(seconds))
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"
