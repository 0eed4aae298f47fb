"""The redo bench's preset (a lab definition with a [bench] table): its [bench] table read and
checked before anything starts (from_table, the redo kind's load in kinds.py), and the design of
its runs: every configuration (a target at a BLOCKSIZE the rules engine allows, with the override
where the target asks for it) repeated, in a random order of complete rounds (order), so that the
host's drift over the bench falls on every configuration alike. Its [[bench.sweep]] tables are
read by sweeps.py, its fields' kinds are in fields.py.
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass, field
from pathlib import Path

from ... import fields, labdef, redowriter
from ...analysis.compare import no_twice
from ...errors import UsageError
from ...inguest import rules
from . import sweeps as sweep_tables
from .fields import (
    ASM_FIELDS,
    BENCH_FIELDS,
    CLOSED_LOOP_FIELDS,
    COMPARE_FIELDS,
    NULL_TARGET,
    SEED_FIGURE_FIELDS,
    TARGET_FIELDS,
)

# Seconds a run costs beyond its warm-up and measured time (two SSH round trips, fetching its
# files): the estimate before the first run has finished, replaced by what the runs take.
RUN_OVERHEAD_S = 4.0


@dataclass(frozen=True)
class Workload:
    sessions: int
    redo_per_txn: int
    rate: int                 # commits/s offered in all; 0: closed loop
    arrival: str              # closed, fixed or poisson
    cpu_us_per_txn: int
    warmup_s: int
    duration_s: int
    log_size: int

    @property
    def mode(self) -> str:
        return "closed" if self.arrival == "closed" else "open"

    def describe(self) -> str:
        load = ("closed loop (each session commits as soon as its last commit is written)" if self.mode == "closed"
                else f"open loop, {self.rate:,} commits/s offered ({self.arrival} arrivals)")
        cpu = f", {self.cpu_us_per_txn} us of CPU per transaction" if self.cpu_us_per_txn else ""
        return f"{self.sessions} sessions, {self.redo_per_txn:,} B of redo per commit, {load}{cpu}"

    def as_json(self) -> dict:
        return {"sessions": self.sessions, "redo_per_txn": self.redo_per_txn, "rate": self.rate,
                "arrival": self.arrival, "mode": self.mode, "cpu_us_per_txn": self.cpu_us_per_txn,
                "warmup_s": self.warmup_s, "duration_s": self.duration_s, "log_size": self.log_size}


@dataclass(frozen=True)
class Target:
    name: str
    disk: labdef.Disk | None          # None: null: (writes nothing)
    second: labdef.Disk | None = None  # the log group's second member (race or mirror)
    second_null: bool = False         # the second member is null: (race = "null:" or mirror = "null:")
    pairing: str | None = None        # "race" (done at the first write) or "mirror" (at both); None: one member
    reformat_lbads: int | None = None
    override: bool = False
    control: bool = False
    blocksizes: tuple[int, ...] = ()
    repeats: int = 1

    @property
    def is_null(self) -> bool:
        return self.disk is None

    def expected_sectors(self) -> tuple[int, int] | None:
        """(logical, physical) the guest should show when this target runs; None for null:."""
        if self.disk is None:
            return None
        g = self.disk.geometry
        if self.reformat_lbads:
            return self.reformat_lbads, max(self.reformat_lbads, g.logical_block_size)
        return g.logical_block_size, g.physical_block_size

    def verdict(self, bs: int, sectors: tuple[int, int] | None = None,
                file: str = "redo01.log") -> rules.Verdict | None:
        """The rules engine on these sectors (the expected ones by default), with the override when
        the target asks for it and only the override allows `bs`; None for null: (no device)."""
        sectors = sectors or self.expected_sectors()
        if sectors is None:
            return None
        plain = rules.evaluate(*sectors, bs, file=file)
        if plain.allowed or not self.override:
            return plain
        return rules.evaluate(*sectors, bs, override=True, file=file)

    def needs_override(self, bs: int, sectors: tuple[int, int] | None = None) -> bool:
        """Whether only _disk_sector_size_override allows `bs` on these sectors (the expected ones)."""
        sectors = sectors or self.expected_sectors()
        return (sectors is not None and not rules.evaluate(*sectors, bs).allowed
                and rules.evaluate(*sectors, bs, override=True).allowed)


@dataclass(frozen=True)
class Config:
    """One configuration: a target at a BLOCKSIZE (with the override when only it allows that)."""
    target: Target
    blocksize: int
    override: bool

    @property
    def key(self) -> str:
        return f"{self.target.name}@{self.blocksize}"


@dataclass(frozen=True)
class Slot:
    """One run of the bench's order: a configuration's `repeat`-th run, `slot`-th in time."""
    config: Config
    repeat: int
    slot: int

    @property
    def run_id(self) -> str:
        return f"{self.config.target.name}-bs{self.config.blocksize}-{self.repeat}"


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
    seed_figures: list[dict] = field(default_factory=list)
    order_seed: int | None = None
    sweeps: list = field(default_factory=list)     # sweep.Sweep: [[bench.sweep]]
    closed_loop: dict | None = None                 # [bench.closed_loop], its figures read as seed figures
    kind: str = field(default="redo", init=False)   # its entry in kinds.KINDS

    def configs(self) -> list[Config]:
        """Every configuration the rules engine allows on the sectors the targets should show
        (null: at each of its BLOCKSIZEs); what the guest really shows decides at run time."""
        out = []
        for t in self.targets:
            for bs in t.blocksizes:
                v = t.verdict(bs)
                if v is None or v.allowed:
                    out.append(Config(t, bs, t.override and t.needs_override(bs)))
        return out

    def refused(self) -> list[tuple[Target, int]]:
        return [(t, bs) for t in self.targets for bs in t.blocksizes
                if (v := t.verdict(bs)) is not None and not v.allowed]

    def order(self, seed: int) -> list[Slot]:
        """Every run, in complete rounds (each configuration once per round, while it has repeats
        left), each round in its own random order drawn from `seed`: the order is interleaved,
        random and the same for the same seed."""
        rng = random.Random(seed)
        configs = self.configs()
        out: list[Slot] = []
        for r in range(1, max((c.target.repeats for c in configs), default=0) + 1):
            round_ = [c for c in configs if c.target.repeats >= r]
            rng.shuffle(round_)
            out += [Slot(c, r, len(out) + i + 1) for i, c in enumerate(round_)]
        return out

    def plan(self) -> list[tuple[Target, int, int]]:
        """(target, BLOCKSIZE, repeat) of every run, configuration by configuration."""
        return [(c.target, c.blocksize, r) for c in self.configs() for r in range(1, c.target.repeats + 1)]

    def estimate_s(self) -> float:
        """Every run's warm-up, its measured time on the guest path and on the device path (its twin
        on this host, bench/redo/twin.py), and its overhead."""
        w = self.workload
        return len(self.plan()) * (w.warmup_s + 2 * w.duration_s + RUN_OVERHEAD_S)


def from_table(path: Path, data: dict, lab: labdef.Lab, duration_s: int | None = None,
               warmup_s: int | None = None, repeats: int | None = None, order_seed: int | None = None) -> Preset:
    """The redo bench of the preset file `path` (its TOML `data`, its `lab` already read), checked
    before anything starts; `duration_s`, `warmup_s`, `repeats` and `order_seed` override the
    file's (make bench DURATION=...)."""
    where = f"{path} [bench]"
    b = data["bench"]
    fields.known_keys(where, b, BENCH_FIELDS.keys())
    given = {"duration_s": duration_s, "warmup_s": warmup_s, "order_seed": order_seed}
    b = BENCH_FIELDS.read(where, {**b, **{k: v for k, v in given.items() if v is not None}}, stem=path.stem)
    workload = Workload(b["sessions"], b["redo_per_txn"], b["rate"], b["arrival"], b["cpu_us_per_txn"],
                        b["warmup_s"], b["duration_s"], b["log_size_mib"] << 20)
    if repeats is not None:
        b["repeats"] = fields.whole_number("REPEATS", "repeats", repeats, 1, 50)
    if len(lab.vms) != 1:
        raise UsageError(f"{path}: {len(lab.vms)} VMs: a bench preset runs on one VM (two TCG guests beside each "
                         f"other on this host's cores would measure each other)")
    disks = {d.name: d for vm in lab.vms for d in vm.disks}
    targets = _targets(where, b, disks, repeats is not None)
    for t in targets:
        for d in (t.disk, t.second):
            if d is not None and b["log_size_mib"] > d.size_mib:
                raise UsageError(f"{where}: log_size_mib = {b['log_size_mib']}: larger than disk {d.name} "
                                 f"({d.size_mib} MiB) that target {t.name!r} writes its redo log to; expected at "
                                 f"most {d.size_mib}, or a larger size_mib for the disk")
    context = {"targets": {t.name for t in targets}, "blocksizes": {t.name: t.blocksizes for t in targets}}
    compares = [_compare(f"{where} [[bench.compare]] #{i}", c, context, targets)
                for i, c in enumerate(b["compare"], 1)]
    no_twice(f"{where} [[bench.compare]]", compares)
    asm = [ASM_FIELDS.read(f"{where} [[bench.asm]] #{i}", a, **context) for i, a in enumerate(b["asm"], 1)]
    figures = _seed_figures(f"{where} [[bench.seed_figure]]", b["seed_figure"], context)
    sweeps = [sweep_tables.read(f"{where} [[bench.sweep]] #{i}", s, disks) for i, s in enumerate(b["sweep"], 1)]
    # SWEEP=PARAM picks a sweep by its parameter, and its results directory is named after it
    fields.no_duplicates(f"{where} [[bench.sweep]]", "param", [s.param for s in sweeps])
    closed = None
    if b["closed_loop"] is not None:
        closed = _closed_loop(f"{where} [bench.closed_loop]", b["closed_loop"], context)
    return Preset(path.stem, path, lab, b["seed"], b["title"], workload, b["blocksizes"], targets, compares, asm,
                  figures, b["order_seed"], sweeps, closed)


def _closed_loop(where: str, raw: dict, context: dict) -> dict:
    closed = CLOSED_LOOP_FIELDS.read(where, raw)
    closed["figure"] = _seed_figures(f"{where} [[figure]]", closed["figure"], context)
    return closed


def with_closed_loop(preset: Preset, raw: dict, where: str) -> Preset:
    """The preset with its [bench.closed_loop] replaced by `raw` (the same table from another
    source: an AWR report, awr/load.py), read as the preset file's own would be."""
    targets = preset.targets
    context = {"targets": {t.name for t in targets}, "blocksizes": {t.name: t.blocksizes for t in targets}}
    return dataclasses.replace(preset, closed_loop=_closed_loop(where, raw, context))


def _target(wt: str, t: dict, raw: dict, b: dict, repeats_given: bool) -> Target:
    d = t["disk"]
    given = [k for k in ("race", "mirror") if t[k] is not None or raw.get(k) == NULL_TARGET]
    if len(given) > 1:
        raise UsageError(f"{wt}: race and mirror on {t['name']!r}: a log group's second member is raced (the commit "
                         f"done at the first write) or mirrored (done at both): give one")
    pairing = given[0] if given else None
    second = t[pairing] if pairing else None
    second_null = pairing is not None and raw.get(pairing) == NULL_TARGET
    if d is None and pairing:
        raise UsageError(f"{wt}: {pairing} on {t['name']!r}, a null: target: pair two disks, or a disk and null:")
    if second is not None and second.name == d.name:
        raise UsageError(f"{wt}: {pairing} = {second.name!r} is the target's own disk: give a second disk")
    if second is not None and second.geometry != d.geometry:
        raise UsageError(f"{wt}: {pairing} = {second.name!r} has geometry {second.geometry.name}, the disk "
                         f"{d.geometry.name}: the members of a log group need one sector size")
    blocksizes = tuple(t["blocksizes"] or b["blocksizes"])
    target = Target(t["name"], d, second, second_null, pairing, t["reformat_lbads"], t["override"], t["control"],
                    blocksizes, b["repeats"] if repeats_given or t["repeats"] is None else t["repeats"])
    if target.override and not any(target.needs_override(bs) for bs in blocksizes):
        sectors = target.expected_sectors()
        shown = f"{sectors[0]}/{sectors[1]} B sectors" if sectors else "no device (null:)"
        raise UsageError(f"{wt}: override = true on {target.name!r} ({shown}): none of its BLOCKSIZEs "
                         f"{list(blocksizes)} needs _disk_sector_size_override; remove it, or add a BLOCKSIZE "
                         f"above the disk's physical sector")
    return target


def _targets(where: str, b: dict, disks: dict, repeats_given: bool) -> list[Target]:
    targets: list[Target] = []
    for i, raw in enumerate(b["target"] or [{"name": n, "disk": n} for n in disks], 1):
        wt = f"{where} [[bench.target]] #{i}"
        t = TARGET_FIELDS.read(wt, raw, disks=disks)
        if any(x.name == t["name"] for x in targets):
            raise UsageError(f"{wt}: duplicate target name {t['name']!r}")
        targets.append(_target(wt, t, raw, b, repeats_given))
    return targets


def _compare(where: str, c: dict, context: dict, targets: list[Target]) -> dict:
    c = COMPARE_FIELDS.read(where, c, **context)
    by_name = {t.name: t for t in targets}
    for side in ("a", "b"):
        t = by_name[c[side]["disk"]]
        if t.repeats < 2:
            raise UsageError(f"{where}: {side} = '{t.name}@{c[side]['blocksize']}' runs {t.repeats} time(s): a "
                             f"comparison tests run against run and needs repeats >= 2 on both sides (make bench "
                             f"REPEATS=)")
    title = c["title"] or f"{c['a']['disk']}@{c['a']['blocksize']} against {c['b']['disk']}@{c['b']['blocksize']}"
    return {"title": title, "a": c["a"], "b": c["b"], "primary": c["primary"]}


def _seed_figures(where: str, raw: list, context: dict) -> list[dict]:
    """An array of seed figures, each read, none given twice (by what it is)."""
    figures = [_seed_figure(f"{where} #{i}", f, context) for i, f in enumerate(raw, 1)]
    fields.no_duplicates(where, "what", [f["what"] for f in figures], same=lambda w: " ".join(w.split()).lower())
    return figures


def _seed_figure(where: str, f: dict, context: dict) -> dict:
    f = SEED_FIGURE_FIELDS.read(where, f, **context)
    if f["lab"] == "ratio" or f["unit"] == "ratio":
        # A ratio of two medians of times, rates or counts is above 0: 0 or below is no seed's ratio,
        # and a CI could never be told apart from it.
        for key in ("seed_value", "tell_apart"):
            if f[key] is not None and not f[key] > 0:
                raise UsageError(f"{where}: {key} = {f[key]!r} of a ratio: expected a number above 0 (a ratio of "
                                 f"two medians; 1 is no difference)")
    if f["lab"] == "none":
        if not f["reason"]:
            raise UsageError(f"{where}: lab = \"none\" without a reason: say why the lab cannot give this number")
        return f
    need = ("metric", "a", "b") if f["lab"] == "ratio" else ("metric", "a")
    missing = [k for k in need if f[k] is None]
    if missing:
        raise UsageError(f"{where}: lab = {f['lab']!r} without {missing[0]}: a {f['lab']} needs "
                         f"{', '.join(need)}")
    return f


def redo_writer_args(w: Workload, target: str, blocksize: int, seconds: int, second: str | None = None,
                     seed: int = 1, pairing: str | None = None, cpu_dist: str = "fixed",
                     seeded: bool = False) -> list[str]:
    """redo-writer's command for a run of the workload `w` (redowriter.run_args); `second` is the log
    group's other member, written as `pairing` says (race or mirror)."""
    return redowriter.run_args(target, blocksize, sessions=w.sessions, redo_per_txn=w.redo_per_txn, seconds=seconds,
                               log_size=w.log_size, arrival=w.arrival, rate=w.rate, seed=seed,
                               cpu_us_per_txn=w.cpu_us_per_txn, second=second, pairing=pairing, cpu_dist=cpu_dist,
                               seeded=seeded)
