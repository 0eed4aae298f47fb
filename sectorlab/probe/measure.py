"""A probe's requests issued through `redo-writer io`, and each figure's times (microseconds).

The target is a file the probe made (the default: on the filesystem under test), a block device
or an NBD export; redo-writer times each request from its call to its completion. An NBD export's
path has a floor that can be measured apart: the same layout on a model of this host that adds no
time of its own (the catalog's `floor`), served and stopped here.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..devices import build
from ..devices.server import DeviceServer
from ..errors import SectorlabError, UsageError
from .patterns import Layout

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


def _one(target: str, layout: Layout, timeout_s: float, into: Times, less_us: float = 0.0) -> None:
    """The layout's requests through redo-writer io (a /dev/fd/N target: the probe's own open file,
    handed down), each timed one into its figure, less `less_us`."""
    fds = (int(target.rsplit("/", 1)[1]),) if target.startswith("/dev/fd/") else ()
    try:
        proc = subprocess.run([str(build.built(build.REDO_WRITER)), "io", "--target", target, "--requests", "-",
                               "--nbd-timeout", str(IO_TIMEOUT_S), "--reply-spin-us", str(REPLY_SPIN_US)],
                              input="\n".join(layout.requests) + "\n", capture_output=True, text=True,
                              timeout=timeout_s, pass_fds=fds)
    except subprocess.TimeoutExpired:
        raise SectorlabError(f"the probe's requests on {target} took longer than {timeout_s:.0f} s: stopped; give "
                             "fewer --samples or a larger --max-seconds") from None
    if proc.returncode != 0:
        why = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        raise (UsageError if proc.returncode == 2 else SectorlabError)(f"the probe's requests on {target}: {why}")
    doc = json.loads(proc.stdout)
    if len(doc["ns"]) != len(layout.requests):
        raise SectorlabError(f"redo-writer io timed {len(doc['ns'])} of {len(layout.requests)} requests on {target}")
    into.transport = doc["transport"]
    for label, ns in zip(layout.labels, doc["ns"]):
        if label is not None:
            into.us.setdefault(label, []).append(ns / 1000.0 - less_us)


def run(target: str, layout: Layout, timeout_s: float) -> Times:
    """The layout's requests on `target` (a path or an NBD URI), each figure's times."""
    times = Times()
    _one(target, layout, timeout_s, times)
    return times


# The device path's own time is measured, not assumed, as a line against the device's: two floor
# models that sleep FLOOR_SLEEPS_US for every request (reads, writes, flushes, no transfer time), on
# the same path, the same requests. On this host the path adds about 60 us at a 100 us sleep and
# about 1.2 % of the sleep beyond (10 ms: 185 us; docs/probe.md), and a model that answers at once
# would leave out both. Each figure's path time at the first sleep, and the slope from the second.
FLOOR_SLEEPS_US = (100.0, 5000.0)
SLOPE_SAMPLES = 10      # a figure's requests on the second floor (the slope is one number)
CHUNKS = 4


@dataclass
class Floor:
    """The path: each figure's time at the first sleep (less it), the slope against the sleep, and
    the times themselves (less their sleeps)."""
    at: dict[str, float]
    slope: float
    times: Times
    drift: dict[str, float] = field(default_factory=dict)   # per figure: how far the path's own median moved
                                                             # between the turns (us)

    def less(self, name: str, us: float) -> float:
        """A time on the path less the path's own: the device's time x with us = x + c + slope * x."""
        c = self.at.get(name, 0.0) - self.slope * FLOOR_SLEEPS_US[0]
        return (us - c) / (1.0 + self.slope)


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


def floor_seconds(layout: Layout) -> float:
    """About how long with_floor's floors take: every request on the first (its sleep and about 100 us
    of the path), the short layout on the second."""
    per_figure = max(layout.labels.count(x) for x in set(layout.labels) if x)
    second = len(layout.requests) / max(1, per_figure // SLOPE_SAMPLES)
    return len(layout.requests) * (FLOOR_SLEEPS_US[0] + 100) / 1e6 + second * (FLOOR_SLEEPS_US[1] + 100) / 1e6


def _sleeping(directory: Path, size: int, sleep_us: float) -> DeviceServer:
    sleep = f"fixed:{sleep_us:g}"
    server = DeviceServer(directory, size=size, params={"write": sleep, "read": sleep, "flush": sleep})
    server.start()
    return server


def with_floor(target: str, layout: Layout, timeout_s: float) -> tuple[Times, Floor]:
    """The layout on `target` (an NBD export) and on the first floor's model, in CHUNKS turns each
    (target, floor, target, ...), and a short layout on the second: each figure's times, and the floor."""
    import numpy as np
    times, first, second = Times(), Times(), Times()
    per_figure = max(layout.labels.count(x) for x in set(layout.labels) if x)
    short = layout.chunks(max(1, per_figure // SLOPE_SAMPLES))[0]  # every figure's, spread as the layout is
    with tempfile.TemporaryDirectory(prefix="sectorlab-probe-floor.") as tmp:
        servers: list[DeviceServer] = []
        try:
            for i, sleep_us in enumerate(FLOOR_SLEEPS_US):
                servers.append(_sleeping(Path(tmp) / f"floor{i}", layout.size, sleep_us))
            turns = []
            for part in layout.chunks(CHUNKS):
                _one(target, part, timeout_s, times)
                turn = Times()
                _one(servers[0].uri(), part, timeout_s, turn, FLOOR_SLEEPS_US[0])
                turns.append(turn)
                for k, v in turn.us.items():
                    first.us.setdefault(k, []).extend(v)
            _one(servers[1].uri(), short, timeout_s, second, FLOOR_SLEEPS_US[1])
        finally:
            for server in servers:
                server.stop()
    at = {k: float(np.median(v)) for k, v in first.us.items()}
    rises = [float(np.median(second.us[k])) - at[k] for k in second.us if k in at]
    slope = max(0.0, float(np.median(rises)) / (FLOOR_SLEEPS_US[1] - FLOOR_SLEEPS_US[0])) if rises else 0.0
    moved = {k: max(m) - min(m) for k in at
             if len(m := [float(np.median(t.us[k])) for t in turns if len(t.us.get(k, [])) >= 5]) > 1}
    return times, Floor(at, slope, first, moved)
