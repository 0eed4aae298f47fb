"""The device path of a bench run: the same redo-writer command, run on this host straight to the
run's device models over their Unix sockets (redo-writer's NBD target, libnbd), without the guest,
its kernel and the emulated CPU in the way.

Every measured run of a target whose members are all served by a model on this host (or null:,
which writes nothing: the harness floor on this host) is followed at once by its device-path twin:
the same workload, BLOCKSIZE, duration and Poisson seed, the guest's device replaced by
`nbd+unix:///?socket=<the model's socket, percent-encoded>`, so both paths share the run's slot in the random order
and the host's drift alike. It has no warm-up of its own: the guest's run has just written the same
offsets of the same model (whose memory is then allocated), and a host process has no caches to
fill. The log writer polls the socket for each reply for up to
REPLY_SPIN_US before sleeping (redo-writer --reply-spin-us): the path's latency is then its own
floor plus the model's service time (docs/performance.md, "The device path"), and the floor's
share the report gives is that floor's own time.

The guest path answers what the OS and Oracle's rules do (EINVAL, flushes, alignment, the kernel's
read-modify-write); the device path what the device's timing does. The guest sits idle during its
run's twin (its own run has ended), and the model serves both paths one after the other, never at
once. A lab whose disks are volumes (a remote libvirt host) has no device path: `missing()` says
why in one line, and the bench records it.
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
from .fields import NULL_TARGET

REPLY_SPIN_US = 1000
# A run's twin has this long beyond its own duration before it is called hung.
SLACK_S = 120


def missing(members: list[DiskRecord]) -> str | None:
    """Why these members have no device path (None: they have one): a member that is a volume, not
    a disk served by a model on this host."""
    volumes = [m.name for m in members if not m.device]
    if volumes:
        return (f"disk(s) {', '.join(volumes)} are volumes, not served by a device model on this host (a remote "
                f"libvirt host's lab): the device path runs on this host's models only")
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
    """The device-path runs of a bench: `run()` makes one run's twin and returns what its entry in
    bench.json gets (its report, events, command and the models' traces of it)."""

    def __init__(self, lab: str, results: Path):
        self.lab, self.results = lab, results
        self.writer = build.built(build.REDO_WRITER)  # with libnbd: the device path

    def run(self, run_id: str, members: list[DiskRecord], null: bool, command: list[str], duration_s: int) -> dict:
        """`command` is the guest's redo-writer argv, its events and output left out."""
        if null:
            target, race = NULL_TARGET, None
        else:
            target = uri(self.lab, members[0].name)
            race = uri(self.lab, members[1].name) if len(members) > 1 else None
        if not null and ("--race" in command or "--mirror" in command) and race is None:
            race = NULL_TARGET  # a race with null:, as the guest ran it
        runs_dir = self.results / "runs"
        runs_dir.mkdir(exist_ok=True)
        report, events = runs_dir / f"{run_id}.device.json", runs_dir / f"{run_id}.device.csv"
        measured = [str(self.writer), *twin(command, target, race)[1:], "--events", str(events), "--output", "json"]
        models = devicerows.Window(self.lab, members, race="--race" in command) if members else None
        out = call(measured, duration_s, f"{run_id}: the device path's run")
        if models:
            models.check_alive(run_id + " (device path)")
        trace = models.rows(runs_dir, f"{run_id}.device", self.results) if models else None
        write_atomic(report, devicerows.with_flash_log(out, trace))
        entry = {"report": str(report.relative_to(self.results)), "events": str(events.relative_to(self.results)),
                 "command": shlex.join(["redo-writer", *measured[1:]]), "reply_spin_us": REPLY_SPIN_US}
        if trace:
            entry["device_trace"] = trace
        return entry


def call(argv: list[str], seconds: int, what: str) -> str:
    """Run a device-path command (redo-writer on this host) and return its output; one line naming
    `what` and the command when it fails or runs past its time and SLACK_S."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + SLACK_S)
    except subprocess.TimeoutExpired as e:
        raise SectorlabError(f"{what} '{shlex.join(argv)}' did not end within {seconds + SLACK_S} s") from e
    if proc.returncode != 0:
        raise SectorlabError(f"{what} '{shlex.join(argv)}' exited {proc.returncode}: {proc.stderr.strip()[-400:]}")
    return proc.stdout
