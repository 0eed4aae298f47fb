"""A probe's requests issued through `redo-writer io`, and each figure's times (microseconds).

The target is a file the probe made (the default: on the filesystem under test), a block device
or an NBD export (a lab's model), or, through a GuestRunner, a block device of a lab's guest;
redo-writer times each request from its call to its completion. The path of an NBD export or a
guest's disk has a floor that is measured apart (with_floor): the same layout on floor models that
sleep a set time a request, served and stopped here for an NBD export; for a lab's disk in a guest,
the disk's own model answering as each floor in the floor's turns (OwnFloor).
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..devices import build
from ..devices.server import DeviceServer
from ..errors import SectorlabError, UsageError
from .patterns import Layout

if TYPE_CHECKING:
    from .fit import Spread

IO_TIMEOUT_S = 30      # redo-writer io's wait for any one NBD reply (a modelled device's longest is 10 s)
# An NBD reply is polled for, not slept for, up to this long: a client asleep in poll() wakes 10-50 us
# after a reply that took 20 us or more (this host, measured against the floor's model, whose replies
# come before it sleeps), and that would be counted as the device's.
REPLY_SPIN_US = 100_000


@dataclass
class Times:
    """Each figure's request times in microseconds, in the order they were issued."""
    us: dict[str, list[float]] = field(default_factory=dict)
    transport: str = ""

    def of(self, name: str) -> list[float]:
        return self.us.get(name, [])


class HostRunner:
    """redo-writer io run on this host (its own build): a path, a /dev/fd/N target (the probe's own
    open file, handed down) or an NBD URI."""
    where = "this host"

    def __call__(self, target: str, requests: str, timeout_s: float) -> tuple[int, str, str]:
        fds = handed_fds(target)
        try:
            proc = subprocess.run([str(build.built(build.REDO_WRITER)), "io", "--target", target, "--requests", "-",
                                   "--nbd-timeout", str(IO_TIMEOUT_S), "--reply-spin-us", str(REPLY_SPIN_US)],
                                  input=requests, capture_output=True, text=True, timeout=timeout_s, pass_fds=fds)
        except subprocess.TimeoutExpired:
            return -1, "", ""
        return proc.returncode, proc.stdout, proc.stderr


class GuestRunner:
    """redo-writer io run in a lab's guest (the redo-writer of its image) on one of its block
    devices: the requests copied in as a file of the guest's /tmp, the times read back from its
    output. The guest's block layer, its virtio or NVMe driver, QEMU and the device model's path
    are all in each time: the same disk, its model answering as a floor (OwnFloor), measures them."""

    def __init__(self, guest, scratch: Path):
        self.guest, self.scratch = guest, scratch
        self.where = f"guest {guest.name}"

    def __call__(self, target: str, requests: str, timeout_s: float) -> tuple[int, str, str]:
        from ..guest.client import GuestUnreachable
        local = self.scratch / "probe-requests"
        local.write_text(requests)
        remote = "/tmp/sectorlab-probe-requests"
        try:
            self.guest.put(local, remote)
            result = self.guest.run("sudo -n timeout", f"{timeout_s:.0f}", "redo-writer", "io", "--target", target,
                                    "--requests", remote, timeout=timeout_s + 60)
        except GuestUnreachable as e:
            return 1, "", str(e)
        return (-1 if result.rc == 124 else result.rc), result.stdout, result.stderr


# The first requests of every run of redo-writer io are issued and not timed (fio's ramp_time): in a
# guest under TCG a run's first three took 200-500 us more at the median than its requests from the
# 30th on, the next seven 20-130 us more (a new process's first faults, its code paths' first
# translations), at every floor of the twenty; counted, they were a sixth of each further floor's
# short turn of some 60 requests, and the tail of the path's spread.
WARMUP = 10


def _one(target: str, layout: Layout, timeout_s: float, into: Times, less_us: float = 0.0,
         runner=None) -> None:
    """The layout's requests through redo-writer io (runner: where it runs, this host by default),
    each timed one into its figure, less `less_us`, but the run's first WARMUP."""
    runner = runner or HostRunner()
    rc, out, err = runner(target, "\n".join(layout.requests) + "\n", timeout_s)
    if rc == -1:
        raise SectorlabError(f"the probe's requests on {target} ({runner.where}) took longer than {timeout_s:.0f} s: "
                             "stopped; give fewer --samples or a larger --max-seconds")
    if rc != 0:
        why = (err.strip().splitlines() or [f"exit {rc}"])[-1]
        raise (UsageError if rc == 2 else SectorlabError)(f"the probe's requests on {target}: {why}")
    doc = json.loads(out)
    if len(doc["ns"]) != len(layout.requests):
        raise SectorlabError(f"redo-writer io timed {len(doc['ns'])} of {len(layout.requests)} requests on {target}")
    into.transport = doc["transport"]
    for i, (label, ns) in enumerate(zip(layout.labels, doc["ns"])):
        if label is not None and i >= WARMUP:
            into.us.setdefault(label, []).append(ns / 1000.0 - less_us)


def run(target: str, layout: Layout, timeout_s: float) -> Times:
    """The layout's requests on `target` (a path or an NBD URI), each figure's times."""
    times = Times()
    _one(target, layout, timeout_s, times)
    return times


# The device path's own time is measured, not assumed, as a curve against the device's: floor
# models that sleep FLOOR_SLEEPS_US for every request (reads, writes, flushes, no transfer time), on
# the same path, the same requests. On this host the path adds about 60 us at a 100 us sleep and
# about 1.2 % of the sleep beyond (10 ms: 185 us; docs/probe.md), and a model that answers at once
# would leave out both. A guest's path under TCG is no line against the device's time but steps:
# measured on one disk's own floor (this host, a virtio disk, two probes alike within 10 us), about
# 208 us at sleeps of 1 and 10 us, 90-96 more at 25-75 us, 146 more at 100-250, 166 at 500, 203 at
# 2 ms (a reply that comes before the guest's vCPU has halted is cheaper). Its floors are
# GUEST_FLOOR_SLEEPS_US: every 10 us up to 100 (where the flash drives' times are, and the steps),
# then wider, spanning the times of the devices it probes. Each figure's path time at the first
# sleep, and the path's rise at each further one, between them a line.
FLOOR_SLEEPS_US = (100.0, 5000.0)
GUEST_FLOOR_SLEEPS_US = (1.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 100.0, 120.0, 150.0, 200.0,
                         300.0, 500.0, 1000.0, 2000.0, 5000.0, 20000.0)
SLOPE_SAMPLES = 10      # a figure's requests on each further floor (the rise at each is one number)
RISE_TURN_SAMPLES = 20  # a turn's requests on a further floor, at least, for its rise to count in how far it moved
CHUNKS = 4


def _reaches(last_us: float, sleeps: tuple[float, ...]) -> bool:
    """Whether a figure's requests reached the floor's model: at the last sleep they took at least
    half of it, less it (a flush a guest's kernel never sends to a write-through disk takes none)."""
    return last_us >= -sleeps[-1] / 2


@dataclass
class Floor:
    """The path: each figure's time at the first sleep (less it), its rise at each further sleep
    (the figures' median; 0 at the first) and how well that rise is known, and the first floor's
    times themselves (less the sleep)."""
    at: dict[str, float]
    times: Times
    sleeps: tuple[float, ...] = FLOOR_SLEEPS_US
    rises: tuple[float, ...] = (0.0, 0.0)
    drift: dict[str, float] = field(default_factory=dict)   # per figure: how far the path's own median moved
                                                             # between the turns (us)
    rise_error: tuple[float, ...] = (0.0, 0.0)   # each rise's 95 % interval's half-width, over the figures (us)
    at_error: dict[str, float] = field(default_factory=dict)   # per figure: its time at the first sleep's 95 %
                                                               # interval's half-width (us)
    last: dict[str, float] = field(default_factory=dict)   # per figure: its median at the last sleep, less it (us)
    # per sleep: the path's spread there, every figure's times less that figure's median there, pooled
    # (a guest's path under TCG is no one noise: at a sleep of 1 us, before its step, its times were
    # skewed, a quarter 55 us and more over its median and a tenth 133 us)
    spreads: tuple[tuple[float, ...], ...] = ()
    # per sleep: how far the path's rise there moved between the turns (each turn's rise against its
    # own first floor, so that a move of the whole path, which `drift` holds, is not counted twice):
    # in a guest under TCG the path at a device's 200 us moved by 40 us between two runs seconds
    # apart while at a fixed floor of 200 us it stayed within 2 (and the other way at 1 ms)
    rise_moved: tuple[float, ...] = ()

    def spread(self, names: list[str]) -> Spread | None:
        """The path's spread against the device's time (fit.Spread): at each sleep, pooled over every
        figure; a floor that kept none (made by hand) has the named figures' at its first sleep."""
        import numpy as np

        from .fit import Spread
        if self.spreads:
            return Spread(self.sleeps, self.spreads)
        first = [x - float(np.median(v)) for n in names if len(v := self.times.us.get(n, [])) for x in v]
        return Spread(self.sleeps[:1], (first,)) if first else None

    def reached(self, name: str) -> bool:
        """Whether the figure's requests reached the floor's model (_reaches)."""
        return _reaches(self.last.get(name, 0.0), self.sleeps)

    @property
    def slope(self) -> float:
        """The path's rise per microsecond of the device's, from the first sleep to the last."""
        return self.rises[-1] / (self.sleeps[-1] - self.sleeps[0])

    def _curve(self):
        import numpy as np
        x = np.asarray(self.sleeps, dtype=float)
        return x, x + np.asarray(self.rises, dtype=float)

    def less(self, name: str, us: float) -> float:
        """A time on the path less the path's own: the device's time x with us = x + c + rise(x),
        rise a line between the sleeps (and the first or last segment's beyond them)."""
        x, y = self._curve()
        m = us - self.at.get(name, 0.0)
        i = 0 if m <= y[0] else len(x) - 2 if m >= y[-1] else int((y <= m).sum()) - 1
        return float(x[i] + (m - y[i]) * (x[i + 1] - x[i]) / (y[i + 1] - y[i]))

    def rise_at(self, device_us: float) -> float:
        """The path's rise at a device time: a line between the sleeps, and the first or last
        segment's beyond them (as less() takes it away)."""
        x, y = self._curve()
        i = 0 if device_us <= x[0] else len(x) - 2 if device_us >= x[-1] else int((x <= device_us).sum()) - 1
        return float(y[i] + (device_us - x[i]) * (y[i + 1] - y[i]) / (x[i + 1] - x[i]) - device_us)

    def unsure(self, device_us: float) -> float:
        """How well the path's rise at a device time is known: its 95 % interval's half-width, or how
        far it moved between the turns where more (a line between the sleeps', the last one's beyond
        them): a probe's path time is known to that besides."""
        import numpy as np
        error = float(np.interp(device_us, self.sleeps, self.rise_error))
        return max(error, float(np.interp(device_us, self.sleeps, self.rise_moved))) if self.rise_moved else error


@dataclass(frozen=True)
class OwnFloor:
    """The floor on the probed disk itself: its model told to answer as a floor (every request
    `sleep` after it arrives, the model bypassed: the filter's floor=, DeviceServer.answer_as_floor)
    for the floor's turns, and to answer as itself again after each. A floor served on another disk
    has a path of its own: in a guest under TCG, a whole probe came out some tens of microseconds off
    against floor disks beside it (docs/probe.md), which no figure of the device's may carry."""
    switch: Callable[[float | None], None]


SIMULATED_GAP_US = 100_000   # a request's arrival after the one before, in virtual time: none queues


def simulated(params: dict[str, str], layout: Layout) -> Times:
    """The layout through the device model in virtual time (devicemodel/simulate): each request's
    time is the model's answer, from its arrival to its reply, with no host in it. The requests
    arrive SIMULATED_GAP_US apart, one at a time as the probe issues them (a model whose state drains
    with time, a volatile cache, would see more idle time than a real probe gives it)."""
    from ..devices import profiles, trace
    ops = {"write": "write", "write-durable": "write", "read": "read", "flush": "flush"}
    lines = []
    for i, line in enumerate(layout.requests):
        op, *rest = line.split()
        where = " ".join(rest) if rest else "0 0"
        lines.append(f"{i * SIMULATED_GAP_US} {ops[op]} {where}{' fua' if op == 'write-durable' else ''}\n")
    proc = profiles.simulate(params, "".join(lines))
    if proc.returncode != 0:
        raise UsageError(f"the device model in virtual time with {params}: {proc.stderr.strip()}")
    rows = trace.parse(proc.stdout)
    if len(rows) != len(layout.requests):
        raise SectorlabError(f"the model in virtual time answered {len(rows)} of {len(layout.requests)} requests")
    times = Times(transport="virtual time")
    for label, row in zip(layout.labels, rows):
        if label is not None:
            times.us.setdefault(label, []).append(row.answer_us)
    return times


def floor_seconds(layout: Layout, sleeps: tuple[float, ...] = FLOOR_SLEEPS_US) -> float:
    """About how long with_floor's floors take: every request on the first (its sleep and about 100 us
    of the path), the short layout on each further one."""
    per_figure = max(layout.labels.count(x) for x in set(layout.labels) if x)
    short = len(layout.requests) / max(1, per_figure // SLOPE_SAMPLES)
    return (len(layout.requests) * (sleeps[0] + 100) + sum(short * (s + 100) for s in sleeps[1:])) / 1e6


def floor_params(sleep_us: float, channels: int = 1) -> dict[str, str]:
    """A floor model's parameters: every request (read, write, flush) answered after `sleep_us`,
    `channels` of them at once (more than one: the queue depths' floor, depth.py)."""
    sleep = f"fixed:{sleep_us:g}"
    return {"write": sleep, "read": sleep, "flush": sleep, **({"channels": str(channels)} if channels > 1 else {})}


def sleeping(directory: Path, size: int, sleep_us: float, channels: int = 1) -> DeviceServer:
    """A floor model (floor_params) served here, started; the caller stops it."""
    server = DeviceServer(directory, size=size, params=floor_params(sleep_us, channels))
    server.start()
    return server


def handed_fds(target: str) -> tuple[int, ...]:
    """The descriptor a /dev/fd/N target names (the probe's own open file, target.prepare), to hand
    down to the program that opens it; none for any other target."""
    return (int(target.rsplit("/", 1)[1]),) if target.startswith("/dev/fd/") else ()


def with_floor(target: str, layout: Layout, timeout_s: float, runner=None,
               floors: tuple[str, ...] | OwnFloor | None = None, sleeps: tuple[float, ...] = FLOOR_SLEEPS_US
               ) -> tuple[Times, Floor]:
    """The layout on `target` and on the floors, in CHUNKS turns (target, the first floor, a short
    layout on each further floor, again): each figure's times, and the floor. The floors: models
    that sleep `sleeps`, served here for an NBD export on this host (floors None), a guest's devices
    already served so (floors: their paths, on the same bus as the target), or the target's own
    model answering as each floor in turn (an OwnFloor)."""
    if floors is not None:
        return _with_floor(target, layout, timeout_s, runner, floors, sleeps)
    with tempfile.TemporaryDirectory(prefix="sectorlab-probe-floor.") as tmp:
        servers: list[DeviceServer] = []
        try:
            for i, sleep_us in enumerate(sleeps):
                servers.append(sleeping(Path(tmp) / f"floor{i}", layout.size, sleep_us))
            return _with_floor(target, layout, timeout_s, runner, tuple(x.uri() for x in servers), sleeps)
        finally:
            for server in servers:
                server.stop()


def _rises(times: Times, at: dict[str, float]) -> list[float]:
    """Each figure's rise at a further floor: its median there less its time at the first."""
    import numpy as np
    return [float(np.median(v)) - at[k] for k, v in times.us.items() if k in at and v]


def _monotone(rises: list[float], errors: list[float]) -> list[float]:
    """The path's rises as a curve that never falls as the device's time grows: the least-squares
    monotone fit (isotonic regression, each rise weighted by its interval's inverse square; the
    first, 0 by definition, held), which pools neighbours that fall instead of carrying the highest
    up. A running maximum did that: over a guest's 20 floors, flat from 30 to 100 us, one rise
    sampled high (145 us at 30, its interval +-30) stood for every floor up to 100 where the path
    rose 90-118, and a flash drive's 77 us read was fitted as 25."""
    import numpy as np
    from scipy.optimize import isotonic_regression
    # a rise with no interval (one figure or none on its floor) weighs as the least known one
    least = max([e for e in errors[1:] if e > 0], default=1.0)
    weights = [1e9] + [1.0 / max(e if e > 0 else least, 1.0) ** 2 for e in errors[1:]]
    fitted = isotonic_regression(np.asarray(rises, dtype=float), weights=np.asarray(weights)).x
    return [0.0] + [float(x) for x in fitted[1:]]


def _on_floor(floors: tuple[str, ...] | OwnFloor, i: int, target: str, sleeps: tuple[float, ...], part: Layout,
              timeout_s: float, into: Times, runner) -> None:
    """A turn of the layout `part` on the i-th floor (its sleep taken away from each time): the floor
    disk's, or the target's own model answering as that floor for the turn."""
    if not isinstance(floors, OwnFloor):
        _one(floors[i], part, timeout_s, into, sleeps[i], runner=runner)
        return
    floors.switch(sleeps[i])
    try:
        _one(target, part, timeout_s, into, sleeps[i], runner=runner)
    finally:
        floors.switch(None)


def _with_floor(target: str, layout: Layout, timeout_s: float, runner, floors: tuple[str, ...] | OwnFloor,
                sleeps: tuple[float, ...]) -> tuple[Times, Floor]:
    import numpy as np
    if len(sleeps) < 2 or list(sleeps) != sorted(set(sleeps)) or (
            not isinstance(floors, OwnFloor) and len(floors) != len(sleeps)):
        raise UsageError(f"the probe's floors: {'its own' if isinstance(floors, OwnFloor) else len(floors)} targets "
                         f"for sleeps {sleeps}: expected one a sleep, at least two, rising")
    times, first = Times(), Times()
    further = [Times() for _ in sleeps[1:]]
    by_turn: list[list[Times]] = []   # per turn, each further floor's times
    per_figure = max(layout.labels.count(x) for x in set(layout.labels) if x)
    short = layout.chunks(max(1, per_figure // SLOPE_SAMPLES))[0]  # every figure's, spread as the layout is
    turns = []
    parts = layout.chunks(CHUNKS)
    shorts = short.chunks(len(parts))
    for i, part in enumerate(parts):
        short_part = shorts[i] if i < len(shorts) else None
        _one(target, part, timeout_s, times, runner=runner)
        turn = Times()
        _on_floor(floors, 0, target, sleeps, part, timeout_s, turn, runner)
        turns.append(turn)
        for k, v in turn.us.items():
            first.us.setdefault(k, []).extend(v)
        by_turn.append([])
        for j, into in enumerate(further, start=1):
            if short_part is None:
                continue
            there = Times()
            _on_floor(floors, j, target, sleeps, short_part, timeout_s, there, runner)
            by_turn[-1].append(there)
            for k, v in there.us.items():
                into.us.setdefault(k, []).extend(v)
    from .fit import median_interval
    at = {k: float(np.median(v)) for k, v in first.us.items()}
    # Each further floor's rise: the figures' median (each figure's own path taken away by its
    # time at the first), known to that median's 95 % interval over the figures. (Each turn's own
    # rise, from two or three requests a figure, moved between the turns by its sampling: 10-340 us
    # in a guest, taken once as what the path's time was known to; docs/probe.md.)
    # the path's rise, spread and moves are the figures' that reach the floor's model (a flush a
    # guest never sends takes some 7 us at every sleep: counted, it is a rise of minus the sleep)
    last = {k: float(np.median(v)) for k, v in further[-1].us.items() if v}
    reaching = {k for k in at if _reaches(last.get(k, 0.0), sleeps)}
    per_floor = [_rises(x, {k: v for k, v in at.items() if k in reaching}) for x in further]

    def half_width(v: list[float]) -> float:
        lo, hi = median_interval(v)
        return (hi - lo) / 2

    rise_error = [0.0] + [half_width(r) if len(r) > 1 else 0.0 for r in per_floor]
    rises = _monotone([0.0] + [float(np.median(r)) if r else 0.0 for r in per_floor], rise_error)
    moved = {k: max(m) - min(m) for k in at
             if len(m := [float(np.median(t.us[k])) for t in turns if len(t.us.get(k, [])) >= 5]) > 1}
    error = {k: half_width(v) for k, v in first.us.items()}
    spreads = tuple(tuple(x - float(np.median(v)) for k, v in t.us.items() if v and k in reaching for x in v)
                    for t in [first, *further])
    return times, Floor(at, first, tuple(sleeps), tuple(rises), moved, tuple(rise_error), error, last, spreads,
                        _rise_moved(turns, by_turn, len(sleeps), reaching))


def _rise_moved(turns: list[Times], by_turn: list[list[Times]], n_sleeps: int, reaching: set[str]
                ) -> tuple[float, ...]:
    """Per sleep, how far the path's rise there moved between the turns: each turn's rise (every
    sample at the sleep less its figure's median at the first floor in the same turn; their median,
    over the figures `reaching` the floor's model) from the turns with RISE_TURN_SAMPLES samples or
    more, the largest less the smallest (0 at the first)."""
    import numpy as np
    bases = [{k: float(np.median(v)) for k, v in turn.us.items() if v and k in reaching} for turn in turns]
    out = [0.0]
    for j in range(n_sleeps - 1):
        per_turn = []
        for base, further in zip(bases, by_turn):
            if j < len(further):
                own = [x - base[k] for k, v in further[j].us.items() if k in base for x in v]
                if len(own) >= RISE_TURN_SAMPLES:
                    per_turn.append(float(np.median(own)))
        out.append(max(per_turn) - min(per_turn) if len(per_turn) > 1 else 0.0)
    return tuple(out)
