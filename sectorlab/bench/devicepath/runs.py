"""Runs on the device path alone, on this host: no lab, no guest. A preset's configurations (a
target at a BLOCKSIZE) are served by device models started here (devices/server.py: nbdkit and the
project's filter, a disk in RAM, one per disk, its sectors as the target shows them, and variant),
and redo-writer writes to them through libnbd as a bench run's device-path twin does
(bench/clock.py's REPLY_SPIN_US). bench-sweep runs one variant per value of a parameter; bench-load one
variant, the profiles as they are, at the seed's own closed-loop load.

Every (variant, configuration) runs `repeats` times in complete rounds, each round in its own
random order over all variants alike, so the host's drift falls on every variant the same; each
model gets one unmeasured run of the preset's warm-up first (its memory allocated).

On the virtual clock (`clock="virtual"`, redo-writer/README.md "Virtual time") the same runs write
to model: members instead: the same models' parameters, linked into redo-writer and answering in the
model's time, no server, no warm-up and nothing of this host's in the figures; each run draws from a
model seed of its own (the run's), so that the repeats are independent draws of the model and the
same order seed gives the same numbers on any host. What the host would add is given, not measured:
`wakeup_us` and `cpus` (the modelled host's), recorded with the runs.
"""

from __future__ import annotations

import json
import random
import shlex
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ...analysis import devicerows, stats
from ...devices import build, trace
from ...devices.server import DeviceServer
from ...lab import modelled
from ...lab.state import Progress
from ...paths import new_results_dir, write_atomic
from ..clock import REAL, Clock, model_member
from ..redo.fields import NULL_TARGET
from ..redo.preset import Preset, Target, Workload, redo_writer_args
from ..redo.twin import call

# Memory each model serves (nbdkit's sparse memory plugin): the preset's log and room.
MIN_DISK_BYTES = 64 << 20


@dataclass(frozen=True)
class Config:
    target: Target
    blocksize: int

    @property
    def key(self) -> str:
        return f"{self.target.name}@{self.blocksize}"


def configs(preset: Preset, extra: list | None = None) -> list[Config]:
    """The configurations the preset's comparisons need (and the selectors in `extra`), in order."""
    by_name = {t.name: t for t in preset.targets}
    out: list[Config] = []
    sides = [c[s] for c in preset.compares for s in ("a", "b")] + list(extra or [])
    for side in sides:
        cfg = Config(by_name[side["disk"]], side["blocksize"])
        if cfg not in out:
            out.append(cfg)
    return out


def repeats_for(comparisons: int) -> int:
    """The fewest runs per configuration with which each of `comparisons` (a family, Holm) can reach
    ALPHA at all: Holm's smallest adjusted p is `comparisons` times the exact test's smallest."""
    n = 2
    while stats.min_p(n, n) * max(comparisons, 1) > stats.ALPHA:
        n += 1
    return n


def results_dir(root: Path, name: str) -> Path:
    out = new_results_dir(root, name)
    (out / "runs").mkdir()
    return out


class Models:
    """One model per (disk, its sectors as the target shows them, variant), started on first use;
    a variant's overrides ({profile: {param: value}}) apply to the disks of that profile. They run
    in a directory of their own under the system's temporary directory (a Unix socket's path is at
    most 107 bytes, a results directory's can be longer); at the end each model's directory (its
    trace, log and parameters) moves to `directory` and that temporary directory is removed."""

    def __init__(self, directory: Path, variants: dict[str, dict], log_size: int):
        self.directory, self.variants = directory, variants
        self.size = max(MIN_DISK_BYTES, 2 * log_size)
        self.servers: dict[tuple, DeviceServer] = {}
        self.work = Path(tempfile.mkdtemp(prefix="sectorlab-models-"))

    def model(self, disk, sectors: tuple[int, int], variant: str) -> tuple[str, dict[str, str]]:
        """A model's name (its directory's) and its parameters: the profile's for these sectors, with
        the variant's overrides."""
        return (f"{disk.name}-{sectors[0]}-{sectors[1]}-v{list(self.variants).index(variant)}",
                modelled.params(disk.device, *sectors) | self.variants[variant].get(disk.device, {}))

    def uri(self, disk, sectors: tuple[int, int], variant: str, second: bool = False) -> str:
        key = (disk.name, *sectors, variant)
        if key not in self.servers:
            name, params = self.model(disk, sectors, variant)
            # tied to this process: a sectorlab killed mid-run leaves no model behind
            server = DeviceServer(self.work / name, self.size, params, name="disk", tied_to_parent=True)
            server.start()
            write_atomic(server.directory / "params.json", json.dumps(params, indent=2))
            self.servers[key] = server
        return self.servers[key].uri()

    def target(self, t: Target, variant: str) -> tuple[str, str | None]:
        """The URIs of a target's log member and its second member (or null:, or None)."""
        if t.disk is None:
            return NULL_TARGET, None
        sectors = t.expected_sectors()
        target = self.uri(t.disk, sectors, variant)
        if t.second is not None:
            return target, self.uri(t.second, sectors, variant, second=True)
        return target, NULL_TARGET if t.second_null else None

    def traces(self, t: Target, variant: str) -> dict[Path, int]:
        """The traces of a target's models (started by target()), each with where its lines end now."""
        sectors = t.expected_sectors()
        keys = [(d.name, *sectors, variant) for d in (t.disk, t.second) if d is not None]
        return {self.servers[k].trace: trace.end(self.servers[k].trace) for k in keys if k in self.servers}

    def stop(self) -> None:
        try:
            for s in self.servers.values():
                s.stop()
        finally:
            self.directory.mkdir(parents=True, exist_ok=True)
            for s in self.servers.values():
                for stale in (s.socket, s.pidfile, s.identity_file):
                    stale.unlink(missing_ok=True)
                shutil.move(str(s.directory), str(self.directory / s.directory.name))
            shutil.rmtree(self.work, ignore_errors=True)


class VirtualModels(Models):
    """The same models as Models, on the virtual clock: each a model: member of redo-writer (its
    parameters and the run's model seed, `seed`; a second member's another), no server. Each
    model's parameters are kept in `directory`/NAME/params.json, as Models keeps them."""

    def __init__(self, directory: Path, variants: dict[str, dict], log_size: int):
        self.directory, self.variants = directory, variants
        self.params: dict[str, dict] = {}
        self.seed = 1

    def uri(self, disk, sectors: tuple[int, int], variant: str, second: bool = False) -> str:
        name, params = self.model(disk, sectors, variant)
        self.params[name] = params
        return model_member(params, self.seed, second)

    def traces(self, t: Target, variant: str) -> dict[Path, int]:
        return {}

    def stop(self) -> None:
        for name, params in self.params.items():
            (self.directory / name).mkdir(parents=True, exist_ok=True)
            write_atomic(self.directory / name / "params.json", json.dumps(params, indent=2))


@dataclass
class Done:
    runs: list[dict]
    order_seed: int
    wall_s: int


def device_runs(preset: Preset, w: Workload, cfgs: list[Config], variants: dict[str, dict], repeats: int,
                seed: int | None, results: Path, progress: Progress, what: str, clock: Clock = REAL) -> Done:
    """Every (variant, configuration) `repeats` times in random rounds; each run's report kept in
    results/runs/, and its entry (variant, config, repeat, slot, report, command). On the virtual
    clock each run's models draw from the run's own seed, and no model is warmed up."""
    writer = build.built(build.REDO_WRITER)
    seed = seed if seed is not None else random.SystemRandom().randrange(2**31)
    rng = random.Random(seed)
    slots = []
    for r in range(1, repeats + 1):
        round_ = [(v, c) for v in variants for c in cfgs]
        rng.shuffle(round_)
        slots += [(v, c, r) for v, c in round_]
    estimate = len(slots) * w.duration_s + len(variants) * len(cfgs) * w.warmup_s
    where = (f"in virtual time ({w.duration_s} s of the models' time a run, as fast as this host computes it)"
             if clock.virtual else f"about {estimate // 60} min {estimate % 60} s on the device path")
    progress(f"{what}: {len(slots)} runs ({len(cfgs)} configurations x {len(variants)} x {repeats}), {where}; "
             f"results in {results}")
    models = (VirtualModels if clock.virtual else Models)(results / "models", variants, w.log_size)
    runs, warm = [], set()
    started = time.monotonic()
    try:
        for i, (variant, cfg, rep) in enumerate(slots, 1):
            if clock.virtual:
                models.seed = seed + i
            target, race = models.target(cfg.target, variant)
            cpu_dist = clock.cpu_dist if clock.virtual else "fixed"
            base = [str(writer), *redo_writer_args(w, target, cfg.blocksize, w.duration_s, race, seed + i,
                                                    cfg.target.pairing, cpu_dist, seeded=clock.virtual)[1:],
                    *clock.args(), "--output", "json"]
            at = f"{cfg.key} ({variant})" if len(variants) > 1 else cfg.key
            if (variant, cfg.key) not in warm and not clock.virtual:
                d = base.index("--duration")
                call(base[:d + 1] + [str(w.warmup_s)] + base[d + 2:], w.warmup_s, f"warm-up of {at}")
                warm.add((variant, cfg.key))
            traces = models.traces(cfg.target, variant)
            out = call(base, w.duration_s, f"{at} #{rep}")
            out = devicerows.with_flash_log(out, devicerows.writes_since(traces))
            report = json.loads(out)
            name = f"v{list(variants).index(variant)}-{cfg.target.name}-bs{cfg.blocksize}-{rep}.json"
            write_atomic(results / "runs" / name, out)
            runs.append({"value": variant, "config": cfg.key, "repeat": rep, "slot": i, "report": f"runs/{name}",
                         "command": shlex.join(["redo-writer", *base[1:]])})
            took = f", {report['real_s']:.1f} s to compute" if clock.virtual else ""
            progress(f"{i}/{len(slots)} {at} #{rep}: log file sync p50 {report['log_file_sync']['p50_us']:.0f} us, "
                     f"{report['tps']:,.0f} commits/s{took} ({time.monotonic() - started:.0f} s)")
    finally:
        models.stop()
    return Done(runs, seed, round(time.monotonic() - started))

