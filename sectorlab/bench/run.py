"""`sectorlab bench PRESET` (`make bench PRESET=...`): a seed's experiment from one command.

A preset is a lab definition under labs/bench/ with a [bench] table: the workload (sessions, redo
per commit, rate: the same for every run of the preset), the redo BLOCKSIZEs to try, and the
targets, each a declared disk (optionally formatted to another LBA size first, or raced against a
second disk as smart flash logging does). `run()` brings the preset's own lab up (never the
default lab), and for each target and each BLOCKSIZE the rules engine allows on the sectors the
guest shows runs redo-writer twice: a warm-up, then the measured run with its events file. A
refused BLOCKSIZE is recorded with its verdict (ORA-01378) and not run. Everything goes under
results/<timestamp>-<preset>/: bench.json (written after every run, so that an interrupted bench
leaves what it did), lab.json, the exact commands, and the runs' JSON and events; then
report.write() makes the report. The lab comes down at the end, also on an error or Ctrl-C.
"""

from __future__ import annotations

import contextlib
import json
import shlex
import statistics
import time
from datetime import datetime, timezone
from pathlib import Path

from .. import guestdisks, images, rmw
from .. import lab as lab_mod
from ..errors import SectorlabError
from ..inguest import rules
from ..lab.record import LabRecord
from . import report
from .preset import RESULTS_DIR, RUN_OVERHEAD_S, Preset, Progress, Target, Workload, _clock

GUEST_DIR = "/var/tmp/sectorlab-bench"


def redo_writer_args(w: Workload, target: str, blocksize: int, seconds: int, race: str | None = None) -> list[str]:
    args = ["redo-writer", "run", "--target", target]
    if race:
        args += ["--race", race]
    return args + ["--blocksize", str(blocksize), "--sessions", str(w.sessions), "--redo-per-txn",
                   str(w.redo_per_txn), "--rate", str(w.rate), "--log-size", str(w.log_size),
                   "--duration", str(seconds)]


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
    """One bench: the preset's lab is up; `run_all()` makes every run and keeps bench.json current."""

    def __init__(self, preset: Preset, results: Path, data: LabRecord, progress: Progress):
        self.preset, self.results, self.data, self.progress = preset, results, data, progress
        self.vm = preset.lab.vms[0].name
        self.guest = lab_mod.guests_from_lab_json(data)[self.vm]
        self.entries = {d.name: d for d in data.disks_of(self.vm)}
        self.domain = data.vm(self.vm).domain
        self.runs: list[dict] = []
        self.commands: list[str] = []
        self.sectors: dict[str, tuple[int, int]] = {}
        self.durations: list[float] = []
        self.bench = {"preset": preset.name, "seed": preset.seed, "title": preset.title, "lab": preset.lab.name,
                      "lab_file": str(preset.path), "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                      "image": None, "workload": preset.workload.as_json(), "comparisons": preset.compares,
                      "rules": [], "commands": self.commands, "runs": self.runs}

    # -- the guest --------------------------------------------------------------------------------
    def paths(self) -> dict[str, str]:
        """Each declared disk's device in the guest (its dm-delay device for a disk with latency)."""
        declared = list(self.entries.values())
        seen = lab_mod.probe(self.guest, declared)["disks"]
        out = {}
        for name, d in self.entries.items():
            dev = seen.get(d.serial)
            if dev is None:
                raise SectorlabError(f"{self.vm}: declared disk {name} (serial {d.serial}) is not in the guest")
            out[name] = d.mapper or dev.path
        return out

    def sectors_of(self, path: str) -> tuple[int, int]:
        command = f"sudo -n blockdev --getss --getpbsz {shlex.quote(path)}"
        return guestdisks.parse_blockdev_sizes(self.guest.check_output(command), command)

    def reformat(self, target: Target, path: str) -> None:
        self.progress(f"{target.name}: formatting {path} to {target.reformat_lbads}-byte LBAs (reformat-nvme)")
        command = ["reformat-nvme", path, "--lbads", str(target.reformat_lbads), "--force"]
        result = self.guest.run("sudo -n", *command, timeout=300)
        if not result.ok:
            raise SectorlabError(f"{target.name}: '{shlex.join(command)}' exited {result.rc}: "
                                 f"{result.stderr.strip()[-400:]}")
        self.commands.append(shlex.join(command))

    def measured(self, target: Target, path: str, race: str | None, bs: int, repeat: int) -> dict:
        """A warm-up run, then the measured one with its events; both files fetched into runs/."""
        w = self.preset.workload
        rid = f"{target.name}-bs{bs}-{repeat}"
        remote = f"{GUEST_DIR}/{rid}"
        warmup = redo_writer_args(w, path, bs, w.warmup_s, race) + ["--output", "json"]
        command = redo_writer_args(w, path, bs, w.duration_s, race) + ["--events", f"{remote}.csv", "--output",
                                                                         "json"]
        script = f"mkdir -p {GUEST_DIR} && {shlex.join(warmup)} >/dev/null"
        result = self.guest.run("sudo -n sh -c", script, timeout=w.warmup_s + 300)
        if not result.ok:
            raise SectorlabError(f"{rid}: the warm-up '{shlex.join(warmup)}' exited {result.rc}: "
                                 f"{result.stderr.strip()[-400:]}")
        entry = self.entries[target.disk.name]
        traced = entry.rmw
        # On a read-modify-write disk QEMU's reads are traced from the host for the measured run.
        with (rmw.ReadTrace(self.data.libvirt_uri, self.domain) if traced else contextlib.nullcontext()) as trace:
            result = self.guest.run("sudo -n sh -c", f"{shlex.join(command)} > {remote}.json",
                                    timeout=w.duration_s + 300)
        if not result.ok:
            raise SectorlabError(f"{rid}: '{shlex.join(command)}' exited {result.rc}: {result.stderr.strip()[-400:]}")
        runs_dir = self.results / "runs"
        runs_dir.mkdir(exist_ok=True)
        for ext in ("json", "csv"):
            self.guest.get(f"{remote}.{ext}", runs_dir / f"{rid}.{ext}")
        self.commands += [shlex.join(warmup) + "  # warm-up", shlex.join(command)]
        out = {"report": f"runs/{rid}.json", "events": f"runs/{rid}.csv", "command": shlex.join(command),
               "warmup_command": shlex.join(warmup)}
        if traced:
            out["rmw"] = trace.reads(entry).as_dict()
        return out

    def save(self) -> None:
        (self.results / "bench.json").write_text(json.dumps(self.bench, indent=2) + "\n")

    def run_all(self) -> None:
        preset, w = self.preset, self.preset.workload
        record = images.find_cached(images.load_guest(preset.lab.vms[0].guest))
        self.bench["image"] = Path(record.image).stem if record else None
        paths = self.paths()
        total = len(preset.plan())
        done = 0
        for target in preset.targets:
            path = paths[target.disk.name]
            if target.reformat_lbads:
                self.reformat(target, path)
                path = self.paths()[target.disk.name]
            race = paths[target.race.name] if target.race else None
            logical, physical = self.sectors_of(path)
            want = target.expected_sectors()
            if (logical, physical) != want:
                raise SectorlabError(f"{target.name}: {path} shows {logical}/{physical} B sectors, the preset "
                                     f"expects {want[0]}/{want[1]} (lab-up verified the declared geometry: what "
                                     f"changed it?)")
            race_sectors = self.sectors_of(race) if race else (logical, physical)
            if race_sectors != (logical, physical):
                raise SectorlabError(f"{target.name}: the race member {race} shows {race_sectors[0]}/{race_sectors[1]} "
                                     f"B sectors, the target {logical}/{physical}")
            self.sectors[target.name] = (logical, physical)
            e = self.entries[target.disk.name]
            device = path + (f" raced with {race}" if race else "")
            for bs in preset.blocksizes:
                verdict = rules.evaluate(logical, physical, bs, file=path).as_json()
                base = {"disk": target.name, "vm": self.vm, "bus": e.bus, "geometry": e.geometry,
                        "declared_disk": target.disk.name, "race": target.race.name if target.race else None,
                        "device": device, "logical": logical, "physical": physical, "blocksize": bs,
                        "verdict": verdict}
                if not verdict["allowed"]:
                    self.progress(f"{target.name} BLOCKSIZE {bs}: refused by the rules engine, not run: "
                                  f"{verdict['error']}")
                    self.runs.append({**base, "repeat": 1})
                    self.save()
                    continue
                for repeat in range(1, target.repeats + 1):
                    left = total - done
                    per_run = (statistics.median(self.durations) if self.durations
                               else w.warmup_s + w.duration_s + RUN_OVERHEAD_S)
                    self.progress(f"run {done + 1}/{total}: {target.name} BLOCKSIZE {bs}"
                                  + (f" #{repeat}" if target.repeats > 1 else "")
                                  + f" ({w.warmup_s} s warm-up + {w.duration_s} s); {left - 1} left after it, "
                                    f"about {_clock(per_run * left)} to go")
                    t0 = time.monotonic()
                    files = self.measured(target, path, race, bs, repeat)
                    self.durations.append(time.monotonic() - t0)
                    self.runs.append({**base, "repeat": repeat, **files})
                    done += 1
                    self.save()
        self.bench["rules"] = asm_verdicts(preset, self.sectors)
        self.bench["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self.save()


def _other_labs_up(own: str) -> list[str]:
    base = lab_mod.state_dir(own).parent
    return sorted(p.parent.name for p in base.glob("*/lab.json") if p.parent.name != own)


def run(preset: Preset, progress: Progress, results_root: Path = RESULTS_DIR) -> Path:
    """The whole bench: lab-up, every run, lab-down (whatever happened), the report. The results
    directory; after an error or Ctrl-C it holds what was done, and the error is raised."""
    others = _other_labs_up(preset.lab.name)
    if others:
        progress(f"warning: lab(s) {', '.join(others)} also up: their guests share this host's cores with the "
                 f"bench's and make its numbers noisier ('make lab-down' first for numbers to quote)")
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    results = results_root / f"{stamp}-{preset.name}"
    results.mkdir(parents=True, exist_ok=False)
    runs = len(preset.plan())
    progress(f"bench {preset.name} (seed {preset.seed or '-'}): {runs} runs, about "
             f"{_clock(preset.estimate_s())} of runs after lab-up; results in {results}")
    t0 = time.monotonic()
    bench = None
    try:
        data = lab_mod.up(preset.lab, progress)
        (results / "lab.json").write_text(data.text() + "\n")
        bench = Bench(preset, results, data, progress)
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
    progress(f"bench {preset.name} done in {_clock(time.monotonic() - t0)} (lab-up and lab-down included); "
             f"report: {written['html']}")
    return results
