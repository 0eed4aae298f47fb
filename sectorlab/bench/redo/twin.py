"""The device path of a bench run: the same redo-writer run on this host against the run's device
models, without the guest, its kernel and the emulated CPU in the way, on one of two clocks
(bench/clock.py):

- real (the default): straight to the lab's running models over their Unix sockets (redo-writer's
  NBD target, libnbd): the guest's command with its device replaced by
  `nbd+unix:///?socket=<the model's socket, percent-encoded>`. It has no warm-up of its own: the
  guest's run has just written the same offsets of the same model (whose memory is then allocated),
  and a host process has no caches to fill. The log writer polls the socket for each reply for up
  to REPLY_SPIN_US before sleeping (redo-writer --reply-spin-us): the path's latency is then its
  own floor plus the model's service time (docs/performance.md, "The device path"), and the floor's
  share the report gives is that floor's own time.
- virtual: the same models' parameters (the lab's disk's profile and sectors, as its running model
  has them) linked into redo-writer as `model:` members, in the models' own time: nothing of this
  host's in the figures; what a host adds is the clock's modelled host (its wake-up, cores and the log
  writer's CPU), said in the report. Each model starts empty and writes its trace beside the run's;
  a target raced against or written only to null: has no virtual twin (null: writes nothing, and in
  virtual time there is no harness to measure).

Every measured run of a target whose members are all served by a model on this host is followed at
once by its twin: the same workload, BLOCKSIZE, duration and seed, so both paths share the run's slot
in the random order. The guest path answers what the OS and Oracle's rules do (EINVAL, flushes,
alignment, the kernel's read-modify-write); the device path what the device's timing does. The
guest sits idle during its run's twin (its own run has ended), and a model serves both paths one
after the other, never at once. A lab whose disks are volumes (a remote libvirt host) has no device
path: `missing()` says why in one line, and the bench records it.
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

from ...analysis import devicerows
from ...devices import build
from ...errors import SectorlabError
from ...lab import modelled
from ...lab.record import DiskRecord
from ...paths import write_atomic
from ..clock import REAL, REPLY_SPIN_US, Clock, model_member
from .fields import NULL_TARGET
from .preset import Target, Workload, redo_writer_args

# A run's twin has this long beyond its own duration before it is called hung; in virtual time, its
# duration of the models' time may take longer than that on this host (at most VIRTUAL_SLOWER times).
SLACK_S = 120
VIRTUAL_SLOWER = 10


def missing(members: list[DiskRecord], target: Target | None = None, clock: Clock = REAL) -> str | None:
    """Why these members (of `target`) have no device path on this clock (None: they have one): a
    member that is a volume, not a disk served by a model on this host; in virtual time, a target
    that writes only to null: or races or mirrors null:."""
    volumes = [m.name for m in members if not m.device]
    if volumes:
        return (f"disk(s) {', '.join(volumes)} are volumes, not served by a device model on this host (a remote "
                f"libvirt host's lab): the device path runs on this host's models only")
    if clock.virtual and target is not None and (target.is_null or target.second_null):
        return (f"target {target.name} writes to null:, which has no model: in virtual time there is no harness "
                f"to measure (its figures would be the modelled host's wake-ups alone)")
    return None


def uri(lab: str, disk: str) -> str:
    """The NBD URI of a lab disk's model, as QEMU reaches it (its default export; the socket's path
    percent-encoded, DeviceServer.uri)."""
    return modelled.server(lab, disk).uri()


def twin(guest_args: list[str], target: str, second: str | None) -> list[str]:
    """The guest's redo-writer command with its target (and its second member, raced or mirrored)
    replaced by the device path's and the reply polling added; every other option as the guest's
    run had it."""
    out, i = [], 0
    while i < len(guest_args):
        arg = guest_args[i]
        if arg in ("--target", "--race", "--mirror"):
            out += [arg, target if arg == "--target" else second]
            i += 2
            continue
        out.append(arg)
        i += 1
    if second and "--race" not in guest_args and "--mirror" not in guest_args:
        raise SectorlabError(f"a second member for the device path, but the guest's command has none: {guest_args}")
    return out + ["--reply-spin-us", str(REPLY_SPIN_US)]


class Twin:
    """The device-path runs of a bench on `clock`: `run()` makes one run's twin and returns what its
    entry in bench.json gets (its report, events, command and the models' traces of it)."""

    def __init__(self, lab: str, results: Path, workload: Workload, clock: Clock = REAL):
        self.lab, self.results, self.workload, self.clock = lab, results, workload, clock
        self.writer = build.built(build.REDO_WRITER)  # with libnbd and the model linked in

    def run(self, run_id: str, members: list[DiskRecord], target: Target, blocksize: int, seed: int,
            command: list[str]) -> dict:
        """`command` is the guest's redo-writer argv (its events and output left out), `seed` its
        seed; `members` the lab disks `target` writes."""
        runs_dir = self.results / "runs"
        runs_dir.mkdir(exist_ok=True)
        report, events = runs_dir / f"{run_id}.device.json", runs_dir / f"{run_id}.device.csv"
        if self.clock.virtual:
            argv, kept = self.virtual(run_id, members, target, blocksize, seed)
            out = call([str(self.writer), *argv, "--events", str(events.relative_to(self.results)),
                        "--output", "json"], self.workload.duration_s * VIRTUAL_SLOWER,
                       f"{run_id}: the device path's run in virtual time", cwd=self.results)
            trace = devicerows.rows(members, kept, self.results, race=target.pairing == "race")
            where = ["redo-writer", *argv, "--events", str(events.relative_to(self.results))]
        else:
            argv = self.real(members, target.is_null, command)
            models = devicerows.Window(self.lab, members, race="--race" in command) if members else None
            out = call([str(self.writer), *argv, "--events", str(events), "--output", "json"],
                       self.workload.duration_s, f"{run_id}: the device path's run")
            if models:
                models.check_alive(run_id + " (device path)")
            trace = models.rows(runs_dir, f"{run_id}.device", self.results) if models else None
            where = ["redo-writer", *argv, "--events", str(events)]
        write_atomic(report, devicerows.with_flash_log(out, trace))
        entry = {"report": str(report.relative_to(self.results)), "events": str(events.relative_to(self.results)),
                 "command": shlex.join([*where, "--output", "json"]), **self.clock.as_json()}
        if not self.clock.virtual:
            entry["reply_spin_us"] = REPLY_SPIN_US
        if trace:
            entry["device_trace"] = trace
        return entry

    def real(self, members: list[DiskRecord], null: bool, command: list[str]) -> list[str]:
        """The real clock's command: the guest's with its devices replaced by the models' sockets."""
        if null:
            target, race = NULL_TARGET, None
        else:
            target = uri(self.lab, members[0].name)
            race = uri(self.lab, members[1].name) if len(members) > 1 else None
        if not null and ("--race" in command or "--mirror" in command) and race is None:
            race = NULL_TARGET  # a race with null:, as the guest ran it
        return twin(command, target, race)[1:]

    def virtual(self, run_id: str, members: list[DiskRecord], target: Target, blocksize: int,
                seed: int) -> tuple[list[str], dict[str, Path]]:
        """The virtual clock's command (paths relative to the results directory, where it runs) and
        each member's trace file: the run's workload on model: members with the parameters the
        lab's models serve (modelled.params of each disk's profile and sectors), drawing from the
        run's seed (CPU and wake-ups, and each model's own draws)."""
        kept = {m.name: self.results / "runs" / f"{run_id}.device.{m.name}.trace.csv" for m in members}
        uris = [model_member(modelled.params(m.device, m.logical_block_size, m.physical_block_size), seed,
                             second=i > 0, trace=str(kept[m.name].relative_to(self.results)))
                for i, m in enumerate(members)]
        w = self.workload
        args = redo_writer_args(w, uris[0], blocksize, w.duration_s, uris[1] if len(uris) > 1 else None, seed,
                                target.pairing, self.clock.cpu_dist, seeded=True)
        return [*args[1:], *self.clock.args()], kept


def call(argv: list[str], seconds: int, what: str, cwd: Path | None = None) -> str:
    """Run a device-path command (redo-writer on this host) and return its output; one line naming
    `what` and the command when it fails or runs past its time and SLACK_S."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + SLACK_S, cwd=cwd)
    except subprocess.TimeoutExpired as e:
        raise SectorlabError(f"{what} '{shlex.join(argv)}' did not end within {seconds + SLACK_S} s") from e
    if proc.returncode != 0:
        raise SectorlabError(f"{what} '{shlex.join(argv)}' exited {proc.returncode}: {proc.stderr.strip()[-400:]}")
    return proc.stdout
