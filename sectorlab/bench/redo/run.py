"""`sectorlab bench PRESET` (`make bench PRESET=...`) of a redo preset: a seed's experiment from one
command.

A preset is a lab definition under labs/bench/ with a [bench] table: the workload (sessions, redo
per commit, a closed loop or an open loop at an offered rate, CPU per transaction: the same for
every run of the preset), the redo BLOCKSIZEs to try, and the targets: declared disks (formatted
to another LBA size first, raced against a second disk as smart flash logging does, run with
_disk_sector_size_override where asked) and controls (null:, which writes nothing, or a race of
equal members): what the harness costs by itself. `run()` brings the preset's own lab up (never
the default lab) and makes every run of the preset's order (preset.order: each configuration
`repeats` times, in complete rounds, each round in a random order drawn from a seed recorded in
bench.json): a warm-up, then the measured run with its events file. A refused BLOCKSIZE is
recorded with its verdict (ORA-01378) and not run. Everything goes under
results/<timestamp>-<preset>/: bench.json (written after every run, so that an interrupted bench
leaves what it did), lab.json, the exact commands, and the runs' JSON and events; then
report.write() makes the report. The lab comes down at the end, also on an error or Ctrl-C.
"""

from __future__ import annotations

import json
import secrets
import shlex
import statistics
import time
from datetime import datetime, timezone
from pathlib import Path

from ... import images
from ... import lab as lab_mod
from ...analysis import devicerows
from ...errors import SectorlabError
from ...guest import disks as guestdisks
from ...inguest import rules
from ...lab.record import LabRecord
from ...lab.state import Progress
from ...paths import new_results_dir, write_atomic
from ...report import redo as report
from ..clock import REAL, REPLY_SPIN_US, Clock, check
from ..presets import RESULTS_DIR, clock_text
from . import twin
from .fields import NULL_TARGET
from .preset import RUN_OVERHEAD_S, Preset, Slot, Target, redo_writer_args

GUEST_DIR = "/var/tmp/sectorlab-bench"
PAIRED = {"race": "raced", "mirror": "mirrored"}  # a target's second member, as the entry says it


def asm_verdicts(preset: Preset, sectors: dict[str, tuple[int, int]]) -> list[dict]:
    """The rules engine inside an ASM disk group, for each [[bench.asm]]: every BLOCKSIZE of the
    preset with and without _disk_sector_size_override, on the sectors the guest showed."""
    out = []
    for a in preset.asm:
        if a["target"] not in sectors:
            continue
        logical, physical = sectors[a["target"]]
        for bs in preset.blocksizes:
            for override in (False, True):
                v = rules.evaluate(logical, physical, bs, override=override, asm_sector_size=a["sector_size"],
                                   file="+REDO", disk=a["target"])
                out.append({"target": a["target"], "asm_sector_size": a["sector_size"], "blocksize": bs,
                            "override": override, "verdict": v.as_json()})
    return out


class Bench:
    """One bench: the preset's lab is up; `run_all()` makes every run of the order and keeps
    bench.json current."""

    def __init__(self, preset: Preset, results: Path, data: LabRecord, progress: Progress, order_seed: int,
                 clock: Clock = REAL):
        self.preset, self.results, self.data, self.progress, self.clock = preset, results, data, progress, clock
        self.vm = preset.lab.vms[0].name
        self.guest = lab_mod.guests_from_lab_json(data)[self.vm]
        self.entries = {d.name: d for d in data.disks_of(self.vm)}
        self.domain = data.vm(self.vm).domain
        self.order = preset.order(order_seed)
        self.order_seed = order_seed
        self.runs: list[dict] = []
        self.commands: list[str] = []
        self.sectors: dict[str, tuple[int, int]] = {}
        self.lbads: dict[str, int] = {}       # an NVMe disk's LBA size now, once a target reformatted it
        self.paths_now: dict[str, str] = {}
        self.refusals_recorded: set[str] = set()
        self.durations: list[float] = []
        self.host_commands: list[str] = []
        served = [t for t in preset.targets if t.disk and twin.missing(self.members(t), t, clock) is None]
        self.twin = twin.Twin(data.lab, results, preset.workload, clock) if served else None
        self.bench = {"preset": preset.name, "seed": preset.seed, "title": preset.title, "lab": preset.lab.name,
                      "lab_file": str(preset.path), "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                      "image": None, "workload": {**preset.workload.as_json(), "describe": preset.workload.describe()},
                      "design": {"seed": order_seed, "randomized": True, "interleaved": "complete rounds",
                                 "repeats": {t.name: t.repeats for t in preset.targets},
                                 "order": [s.run_id for s in self.order]},
                      "controls": [t.name for t in preset.targets if t.control],
                      "comparisons": preset.compares, "seed_figures": preset.seed_figures,
                      "rules": [], "commands": self.commands, "runs": self.runs,
                      "device_path": {**clock.as_json(), "commands": self.host_commands,
                                      **({} if clock.virtual else {"reply_spin_us": REPLY_SPIN_US}),
                                      "why_not": None if self.twin else _no_device_path(preset, self)}}

    # -- the guest --------------------------------------------------------------------------------
    def paths(self) -> dict[str, str]:
        """Each declared disk's device in the guest."""
        declared = list(self.entries.values())
        seen = lab_mod.probe(self.guest, declared)["disks"]
        out = {}
        for name, d in self.entries.items():
            dev = seen.get(d.serial)
            if dev is None:
                raise SectorlabError(f"{self.vm}: declared disk {name} (serial {d.serial}) is not in the guest")
            out[name] = dev.path
        return out

    def sectors_of(self, path: str) -> tuple[int, int]:
        command = f"sudo -n blockdev --getss --getpbsz {shlex.quote(path)}"
        return guestdisks.parse_blockdev_sizes(self.guest.check_output(command), command)

    def reformat(self, target: Target, disk: str, lbads: int) -> None:
        path = self.paths_now[disk]
        self.progress(f"{target.name}: formatting {path} to {lbads}-byte LBAs (reformat-nvme)")
        command = ["reformat-nvme", path, "--lbads", str(lbads), "--force"]
        result = self.guest.run("sudo -n", *command, timeout=300)
        if not result.ok:
            raise SectorlabError(f"{target.name}: '{shlex.join(command)}' exited {result.rc}: "
                                 f"{result.stderr.strip()[-400:]}")
        self.commands.append(shlex.join(command))
        self.lbads[disk] = lbads
        self.paths_now = self.paths()

    def ready(self, target: Target) -> tuple[str, str | None]:
        """The target's device (formatted as it needs: a namespace another target reformatted is
        formatted back) and its race member's, after checking the sectors the guest shows."""
        if target.is_null:
            return NULL_TARGET, None
        disk = target.disk.name
        want = target.reformat_lbads or target.disk.geometry.logical_block_size
        if self.lbads.get(disk, target.disk.geometry.logical_block_size) != want:
            self.reformat(target, disk, want)
        path = self.paths_now[disk]
        race = NULL_TARGET if target.second_null else self.paths_now[target.second.name] if target.second else None
        logical, physical = self.sectors_of(path)
        if (logical, physical) != target.expected_sectors():
            want_l, want_p = target.expected_sectors()
            raise SectorlabError(f"{target.name}: {path} shows {logical}/{physical} B sectors, the preset "
                                 f"expects {want_l}/{want_p} (lab-up verified the declared geometry: what "
                                 f"changed it?)")
        if race and race != NULL_TARGET and self.sectors_of(race) != (logical, physical):
            raise SectorlabError(f"{target.name}: the race member {race} shows other sectors than {path} "
                                 f"({logical}/{physical} B)")
        self.sectors[target.name] = (logical, physical)
        if target.name not in self.refusals_recorded:
            self.record_refusals(target, path)
        return path, race

    def measured(self, slot: Slot, path: str, race: str | None) -> dict:
        """A warm-up run, then the measured one with its events; both files fetched into runs/. Then
        its device-path twin on this host, where its members are served by models here."""
        w, target, bs = self.preset.workload, slot.config.target, slot.config.blocksize
        rid = slot.run_id
        remote = f"{GUEST_DIR}/{rid}"
        seed = (self.order_seed * 1009 + slot.slot) % 2**31
        args = redo_writer_args(w, path, bs, w.duration_s, race, seed, target.pairing)
        warmup = redo_writer_args(w, path, bs, w.warmup_s, race, seed, target.pairing) + ["--output", "json"]
        command = args + ["--events", f"{remote}.csv", "--output", "json"]
        script = f"mkdir -p {GUEST_DIR} && {shlex.join(warmup)} >/dev/null"
        result = self.guest.run("sudo -n sh -c", script, timeout=w.warmup_s + 300)
        if not result.ok:
            raise SectorlabError(f"{rid}: the warm-up '{shlex.join(warmup)}' exited {result.rc}: "
                                 f"{result.stderr.strip()[-400:]}")
        members = self.members(target)
        models = devicerows.Window(self.data.lab, [e for e in members if e.device], race=target.pairing == "race")
        result = self.guest.run("sudo -n sh -c", f"{shlex.join(command)} > {remote}.json", timeout=w.duration_s + 300)
        models.check_alive(rid)  # a model that died: that is why the run failed, or its results are void
        if not result.ok:
            raise SectorlabError(f"{rid}: '{shlex.join(command)}' exited {result.rc}: {result.stderr.strip()[-400:]}")
        runs_dir = self.results / "runs"
        runs_dir.mkdir(exist_ok=True)
        for ext in ("json", "csv"):
            self.guest.get(f"{remote}.{ext}", runs_dir / f"{rid}.{ext}")
        self.commands += [shlex.join(warmup) + "  # warm-up", shlex.join(command)]
        out = {"report": f"runs/{rid}.json", "events": f"runs/{rid}.csv", "command": shlex.join(command),
               "warmup_command": shlex.join(warmup)}
        if models.disks:
            out["device_trace"] = models.rows(runs_dir, rid, self.results)
            report = runs_dir / f"{rid}.json"
            write_atomic(report, devicerows.with_flash_log(report.read_text(), out["device_trace"]))
        if self.has_twin(target):
            out["device_path"] = self.twin.run(rid, members, target, bs, seed, args)
            self.host_commands.append(out["device_path"]["command"])
        return out

    def members(self, target: Target) -> list:
        """The lab disks a target writes (its disk and its race member's); none for null:."""
        return [self.entries[d.name] for d in (target.disk, target.second) if d]

    def has_twin(self, target: Target) -> bool:
        """Whether the target's runs get a device-path twin: the bench has a device path and all
        the target's disks are served by models on this host (null: writes none)."""
        return self.twin is not None and twin.missing(self.members(target), target, self.clock) is None

    def save(self) -> None:
        write_atomic(self.results / "bench.json", json.dumps(self.bench, indent=2) + "\n")

    def base(self, target: Target, bs: int, path: str, race: str | None, override: bool) -> dict:
        """What a run's entry says besides its results: the target, its device and the verdict."""
        w = self.preset.workload
        e = self.entries[target.disk.name] if target.disk else None
        logical, physical = self.sectors.get(target.name, (None, None))
        verdict = target.verdict(bs, (logical, physical), file=path) if e else None
        return {"disk": target.name, "vm": self.vm, "bus": e.bus if e else None,
                "geometry": e.geometry if e else None, "declared_disk": target.disk.name if e else None,
                "model": e.device if e else None,  # the device profile that serves the disk, or None
                **{k: (NULL_TARGET if target.second_null else target.second.name) if target.pairing == k else None
                   for k in ("race", "mirror")},
                "device": path + (f" {PAIRED[target.pairing]} with {race}" if race else ""),
                "logical": logical, "physical": physical,
                "blocksize": bs, "override": override, "control": target.control, "mode": w.mode, "rate": w.rate,
                "arrival": w.arrival, "cpu_us_per_txn": w.cpu_us_per_txn,
                "verdict": verdict.as_json() if verdict else _null_verdict(bs)}

    def record_refusals(self, target: Target, path: str) -> None:
        """The BLOCKSIZEs the rules engine refuses on the sectors the guest shows for this target
        (recorded once, with the ORA- error, when the target is first ready: after its format)."""
        for bs in target.blocksizes:
            base = self.base(target, bs, path, None, False)
            if base["verdict"]["allowed"]:
                continue
            self.progress(f"{target.name} BLOCKSIZE {bs}: refused by the rules engine, not run: "
                          f"{base['verdict']['error']}")
            self.runs.append({**base, "repeat": 1})
        self.refusals_recorded.add(target.name)
        self.save()

    def one(self, slot: Slot) -> None:
        w, target, bs = self.preset.workload, slot.config.target, slot.config.blocksize
        total = len(self.order)
        path, race = self.ready(target)
        base = self.base(target, bs, path, race, slot.config.override)
        if not base["verdict"]["allowed"]:
            raise SectorlabError(f"{slot.run_id}: the guest shows {base['logical']}/{base['physical']} B sectors, "
                                 f"on which BLOCKSIZE {bs} is refused: {base['verdict']['error']}")
        left = total - slot.slot + 1
        per_run = statistics.median(self.durations) if self.durations else w.warmup_s + w.duration_s + RUN_OVERHEAD_S
        self.progress(f"run {slot.slot}/{total}: {target.name} BLOCKSIZE {bs}"
                      + (" (override)" if slot.config.override else "") + f" #{slot.repeat}"
                      + f" ({w.warmup_s} s warm-up + {w.duration_s} s"
                      + ("" if not self.has_twin(target) else ", then its twin in virtual time"
                          if self.clock.virtual else f", then {w.duration_s} s on the device path")
                      + f"); {left - 1} left after it, "
                        f"about {clock_text(per_run * left)} to go")
        t0 = time.monotonic()
        files = self.measured(slot, path, race)
        self.durations.append(time.monotonic() - t0)
        self.runs.append({**base, "repeat": slot.repeat, "slot": slot.slot, **files})
        self.save()

    def run_all(self) -> None:
        record = images.find_cached(images.load_guest(self.preset.lab.vms[0].guest))
        self.bench["image"] = Path(record.image).stem if record else None
        self.paths_now = self.paths()
        guestdisks.unwatch(self.guest, list(self.paths_now.values()))  # no re-probe inside a run
        self.progress(f"run order: {len(self.order)} runs in {max(s.repeat for s in self.order)} rounds, each "
                      f"round in a random order (--seed {self.order_seed} repeats it)")
        for slot in self.order:
            self.one(slot)
        for target in self.preset.targets:  # a target none of whose BLOCKSIZEs may run
            if target.name not in self.refusals_recorded:
                self.ready(target)
        self.bench["rules"] = asm_verdicts(self.preset, self.sectors)
        self.bench["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self.save()


def _no_device_path(preset: Preset, bench: Bench) -> str:
    reasons = {twin.missing(bench.members(t), t, bench.clock) for t in preset.targets if t.disk}
    return next(iter(sorted(r for r in reasons if r)), "no target writes a disk")


def _null_verdict(bs: int) -> dict:
    return {"allowed": True, "blocksize": bs, "default_blocksize": None, "error": None,
            "warnings": ["null: writes nothing: no device, no rule applies (a control)"], "host_sector": 0,
            "media_sector": 0}


def _other_labs_up(own: str) -> list[str]:
    base = lab_mod.state_dir(own).parent
    return sorted(p.parent.name for p in base.glob("*/lab.json") if p.parent.name != own)


def run(preset: Preset, progress: Progress, results_root: Path = RESULTS_DIR, clock: Clock = REAL) -> Path:
    """The whole redo bench (the redo kind's run in kinds.py): lab-up, every run (its device-path
    twin on `clock`), lab-down (whatever happened), the report. The results directory; after an
    error or Ctrl-C it holds what was done, and the error is raised."""
    check(preset, preset.workload, clock)
    others = _other_labs_up(preset.lab.name)
    if others:
        progress(f"warning: lab(s) {', '.join(others)} also up: their guests share this host's cores with the "
                 f"bench's and make its numbers noisier ('make lab-down' first for numbers to quote)")
    results = new_results_dir(results_root, preset.name)
    runs = len(preset.plan())
    order_seed = preset.order_seed if preset.order_seed is not None else secrets.randbelow(2**31)
    progress(f"bench {preset.name} (seed {preset.seed or '-'}): {runs} runs of {preset.workload.describe()}, about "
             f"{clock_text(preset.estimate_s())} of runs after lab-up; results in {results}")
    t0 = time.monotonic()
    bench = None
    try:
        data = lab_mod.up(preset.lab, progress)
        write_atomic(results / "lab.json", data.text() + "\n")
        bench = Bench(preset, results, data, progress, order_seed, clock)
        bench.bench["commands"][:0] = [f"sectorlab bench {preset.name}  # lab-up, these runs, lab-down",
                                       f"# in the guest ({bench.vm}), as root:"]
        bench.run_all()
    except KeyboardInterrupt:
        progress("interrupted: bringing the lab down; the runs done so far are in " + str(results))
        raise
    finally:
        try:
            lab_mod.down(preset.lab, progress)
        finally:
            if bench is not None:
                bench.bench["wall_s"] = round(time.monotonic() - t0, 1)
                bench.save()
            elif not any(results.iterdir()):
                results.rmdir()  # lab-up failed: nothing ran
    written = report.write(results)
    progress(f"bench {preset.name} done in {clock_text(time.monotonic() - t0)} (lab-up and lab-down included); "
             f"report: {written['html']}")
    return results
