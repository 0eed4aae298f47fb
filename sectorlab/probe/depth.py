"""A few queue depths: random 4 KiB reads at depths 1, 2, 4 and 8 (fio, a closed loop as a
database's readers are), each depth's latency, and how many requests the device serves at once.

A device with c channels (the model's `channels`) serves up to c requests at once: in a closed loop
of k with nothing between a reply and the next request, a depth up to c is served at the device's
own time and a deeper one waits, each request k/c times that, the rate staying at c over the time.
So the requests the device is busy with at once, on average, are U = k x S / L at depth k (Little's
law: the rate k / L times the device's own mean time S, the depth-1 mean less the path's), never
more than c, and c where the device, not the path, stops the rate from growing: where the reads
busy at once stay within PLATEAU of those at half the depth, from that depth on, while the path's
own time (a floor model's, 100 us a read on 64 channels, at the same depths) grew from depth 1 by
no more than PATH_SHARE of what the reads' did. Where the path's time grew with them it may be what stopped
them: this host's device path carried 24,000-34,000 reads a second at depth 8 on that floor, and a
P3700's 77 us reads on four channels would take 52,000. A file or a block device has no floor: a
plateau there may be this host's own (said in the profile). The channels are the most found busy at
once over TOLERANCE, rounded up (the busy counts read a little high); where no depth gives a
plateau the device made, at least that many, said, and the profile takes that many, `assumed`.
Where the device's own depth-1 time is 5 % of the reads' or less (the path's is all of it) or a
depth's mean is not positive, nothing is counted: at least 1, `assumed`, said why.

The requests' rate is taken as k / L, the loop's own time between a reply and the next request
(fio's, a few microseconds a request on this host) left out: U is a little high by that share.
Virtual time (simulated): the same reads through the model's closed loop (devicemodel/simulate
--depth), no path: exact.
"""

from __future__ import annotations

import json
import math
import random
import shutil
import subprocess
from dataclasses import dataclass

from ..errors import SectorlabError, UsageError
from .measure import handed_fds, sleeping
from .target import NBD_URI

DEPTHS = (1, 2, 4, 8)
SIZE = 4096
PLATEAU = 1.10      # the reads busy at once from a depth on, over those at half of it: no more, a plateau
# How far the busy counts read over the channels busy: a one-channel model (the 7,200 rpm disk) read 1.02-1.08
# busy at depths 2 to 8 on this host's device path (its depth-1 time carries the path's rise with a long
# sleep, which the depths' 100 us floor does not take away); the channels are the most busy over this,
# rounded up (at 1.05 that disk came out as 2)
TOLERANCE = 1.10
# The path's own time's growth from depth 1 to a depth, over the reads' there: more, and the plateau may be
# the path's. On this host's device path a floor of 100 us took 136-151 us at depth 1 and 233-336 at depth
# 8, while the P3700's reads grew from 116 to 323-366: the path, not four channels, stopped their rate. (A
# first rule held the floor's rate at twice the device's: a fast device of many channels, whose reads at
# depth 8 take less than twice the floor's 100 us, could never be told by it, on any path.)
PATH_SHARE = 0.10
FLOOR_SLEEP_US = 100.0
FLOOR_CHANNELS = 64  # the floor model serves every request of a depth at once (the model's most)
MAX_DEPTH_READS = 4000


@dataclass(frozen=True)
class AtDepth:
    """One depth's reads: their number, mean, median and p99 (us), on the target, and where a floor
    was measured, its mean there (its sleep in it)."""
    depth: int
    n: int
    mean_us: float
    p50_us: float
    p99_us: float
    floor_mean_us: float | None = None

    def as_dict(self) -> dict:
        return {"depth": self.depth, "n": self.n, "mean_us": self.mean_us, "p50_us": self.p50_us,
                "p99_us": self.p99_us, "floor_mean_us": self.floor_mean_us}


@dataclass(frozen=True)
class Channels:
    """How many requests the device serves at once: `value` where the reads busy at once reached a
    plateau at `depth` (told), else at least `value` (the most found busy at once); `busy` per depth (U)."""
    value: int
    told: bool
    depth: int | None
    busy: dict[int, float]
    path_limited: tuple[int, ...] = ()   # the depths where the path's own time grew with a plateau's reads
    device_us: float = 0.0   # the device's own mean time at depth 1 (S)
    why: str = ""   # why nothing was counted (the device's time not told from the path's)

    def said(self) -> str:
        if self.why:
            return f"at least {self.value}: {self.why}"
        busy = ", ".join(f"{u:.2f} at {k}" for k, u in self.busy.items())
        where = f"busy with {busy} (the mean number of reads at once, from a {self.device_us:.1f} us mean read)"
        if self.told:
            return (f"{self.value}: the reads busy at once stayed within {100 * (PLATEAU - 1):.0f} % from depth "
                    f"{self.depth // 2} on (the rate stopped growing at depth {self.depth}); {where}")
        limited = (f"; at depth {', '.join(map(str, self.path_limited))} the path's own time (its floor's) grew from "
                   f"depth 1 by more than {100 * PATH_SHARE:.0f} % of what the reads' did: the path, not the device, "
                   "may have stopped them" if self.path_limited else "")
        return (f"at least {self.value}: the reads busy at once reached no plateau the device made up to depth "
                f"{max(self.busy)}{limited}; {where}")

    def as_dict(self) -> dict:
        return {"value": self.value, "told": self.told, "depth": self.depth,
                "busy": {str(k): v for k, v in self.busy.items()}, "path_limited": list(self.path_limited),
                "device_us": self.device_us, "why": self.why, "said": self.said()}


def channels(depths: list[AtDepth]) -> Channels:
    """The channels the depths tell (the module's rule). The device's own mean read S is the depth-1
    mean less the path's there (the floor's mean less its sleep), where a floor was measured."""
    by = {d.depth: d for d in depths}
    if 1 not in by or len(by) < 2:
        raise SectorlabError(f"queue depths {sorted(by)}: the channels need depth 1 and a deeper one")
    first = by[1]
    path_1 = first.floor_mean_us - FLOOR_SLEEP_US if first.floor_mean_us is not None else 0.0
    device_us = first.mean_us - path_1
    floored = {d.floor_mean_us is not None for d in by.values()}
    if len(floored) > 1:
        raise SectorlabError(f"queue depths {sorted(by)}: a floor measured at some and not at others: expected at "
                             "every depth or at none")
    if device_us <= 0.05 * first.mean_us:
        return Channels(1, False, None, {}, (), max(device_us, 0.0),
                        why=f"the device's own mean read at depth 1 ({device_us:.1f} us of {first.mean_us:.1f}) is "
                            "not told from the path's: no channels counted")
    if (flat := next((k for k, d in sorted(by.items()) if d.mean_us <= 0), None)) is not None:
        return Channels(1, False, None, {}, (), device_us,
                        why=f"a mean read of {by[flat].mean_us:.1f} us at depth {flat}: no channels counted")
    busy = {k: k * device_us / d.mean_us for k, d in sorted(by.items())}

    def path_grew(k: int) -> bool:
        """Whether the path's own time grew from depth 1 to k by more than PATH_SHARE of the reads'."""
        d = by[k]
        if d.floor_mean_us is None or first.floor_mean_us is None:
            return False
        return d.floor_mean_us - first.floor_mean_us > PATH_SHARE * max(d.mean_us - first.mean_us, 0.0)

    # told at the least depth k from which the reads busy at once stay within PLATEAU of those at k/2,
    # the path's own time not growing with them: the rate stopped there for good (this host's disk, a
    # file probe: busy 1.65 at 2, 2.06 at 4, 2.29 at 8, each step under 1.25 times but no plateau: a rule
    # on each step alone told 2 in one probe and 3 in the next)
    # c >= U in truth; the busy counts read up to TOLERANCE high: the most of them over it, rounded up
    least = max(1, math.ceil(max(busy.values()) / TOLERANCE - 1e-9))
    vetoed: set[int] = set()   # the depths whose path's growth stood in a plateau's way (said)
    for k in sorted(by):
        if k == 1 or k // 2 not in by:
            continue
        deeper = [j for j in by if j >= k]
        if max(busy[j] for j in deeper) <= PLATEAU * busy[k // 2]:
            grew = [j for j in deeper if path_grew(j)]
            if not grew:
                return Channels(least, True, k, busy, (), device_us)
            vetoed.update(grew)
    return Channels(least, False, None, busy, tuple(sorted(vetoed)), device_us)


def _offsets(n: int, size: int, seed: int) -> list[int]:
    rng = random.Random(seed)
    return [rng.randrange(0, size // SIZE) * SIZE for _ in range(n)]


def simulated(params: dict[str, str], n: int, size: int, seed: int = 1) -> list[AtDepth]:
    """The reads at each depth through the model's closed loop in virtual time (no path)."""
    import numpy as np

    from ..devices import profiles, trace
    out = []
    for k in DEPTHS:
        lines = "".join(f"read {at} {SIZE}\n" for at in _offsets(n, size, seed + k))
        proc = profiles.simulate(params, lines, depth=k)
        if proc.returncode != 0:
            raise UsageError(f"the device model in virtual time with {params} at depth {k}: {proc.stderr.strip()}")
        us = np.asarray([r.answer_us for r in trace.parse(proc.stdout)])
        out.append(AtDepth(k, len(us), float(us.mean()), float(np.median(us)), float(np.percentile(us, 99))))
    return out


def _fio_target(target: str) -> list[str]:
    if NBD_URI.match(target):
        return ["--ioengine=nbd", f"--uri={target}"]
    # fio splits a filename at ':' (several files) and takes '\:' for one: a device's path under
    # /dev/disk/by-path has them (it undoes no other escape: a backslash goes as it is)
    return ["--ioengine=libaio", "--direct=1", "--filename=" + target.replace(":", "\\:")]


def require_fio(nbd: bool = False) -> None:
    """fio (with its NBD engine for an export), or one line saying what is missing (the probe asks
    before it writes anything)."""
    if shutil.which("fio") is None:
        raise UsageError("fio is not installed: the probe's queue depths need it (scripts/bootstrap installs it)")
    if nbd:
        engines = subprocess.run(["fio", "--enghelp"], capture_output=True, text=True).stdout.split()
        if "nbd" not in engines:
            raise UsageError("this fio has no NBD engine: the probe's queue depths on an NBD export need it "
                             "(Debian's fio has it; scripts/bootstrap installs that)")


def fio_reads(target: str, depth: int, n: int, size: int, seed: int, timeout_s: float) -> AtDepth:
    """n random reads of SIZE at `depth` on the first `size` bytes of `target` (an NBD URI, a file
    or a block device, read with O_DIRECT), by fio."""
    require_fio()
    args = ["fio", "--name=depth", "--rw=randread", f"--bs={SIZE}", f"--iodepth={depth}", f"--number_ios={n}",
            f"--size={size}", f"--randseed={seed}", "--lat_percentiles=1", "--output-format=json",
            *_fio_target(target)]
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout_s, pass_fds=handed_fds(target))
    except subprocess.TimeoutExpired:
        raise SectorlabError(f"the probe's reads at queue depth {depth} on {target} took longer than "
                             f"{timeout_s:.0f} s: stopped; give fewer --samples or a larger --max-seconds") from None
    if proc.returncode != 0:
        why = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        raise SectorlabError(f"fio's reads at queue depth {depth} on {target}: {why}")
    return parse(proc.stdout, depth)


def parse(out: str, depth: int) -> AtDepth:
    """fio's JSON (from its first line that opens it, after any it printed first, as its NBD engine's
    "fio: connected to NBD server") as one depth's figures."""
    lines = out.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.startswith("{")), None)
    try:
        if start is None:
            raise ValueError("no line opens a JSON object")
        job = json.JSONDecoder().raw_decode("".join(lines[start:]))[0]["jobs"][0]
        read, lat = job["read"], job["read"]["lat_ns"]
        pct = lat["percentile"]
        n = int(read["total_ios"])
        figures = (float(lat["mean"]) / 1e3, float(pct["50.000000"]) / 1e3, float(pct["99.000000"]) / 1e3)
    except (ValueError, KeyError, IndexError, TypeError) as e:
        raise SectorlabError(f"fio's output at queue depth {depth} is not what its JSON gives ({e!r})") from None
    if int(job.get("error", 0)) or n <= 0:
        raise SectorlabError(f"fio's reads at queue depth {depth} ended with error {job.get('error')} after {n} reads")
    return AtDepth(depth, n, *figures)


def measured(target: str, n: int, size: int, seed: int, timeout_s: float, floor: str | None = None
             ) -> list[AtDepth]:
    """Each depth's reads on `target`, and on `floor` (an NBD URI of a model that sleeps
    FLOOR_SLEEP_US with FLOOR_CHANNELS channels) right after, where given: all of them within
    `timeout_s`, each fio given what is left of it."""
    import time
    deadline = time.monotonic() + timeout_s

    def left() -> float:
        return max(1.0, deadline - time.monotonic())

    out = []
    for k in DEPTHS:
        got = fio_reads(target, k, n, size, seed + k, left())
        if floor is not None:
            on = fio_reads(floor, k, n, size, seed + k, left())
            got = AtDepth(k, got.n, got.mean_us, got.p50_us, got.p99_us, on.mean_us)
        out.append(got)
    return out


def with_floor(target: str, n: int, size: int, seed: int, timeout_s: float) -> list[AtDepth]:
    """measured() on an NBD export, its floor a model served here for the reads (FLOOR_SLEEP_US a
    read on FLOOR_CHANNELS channels: it never queues)."""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory(prefix="sectorlab-probe-depths.") as tmp:
        server = sleeping(Path(tmp) / "floor", size, FLOOR_SLEEP_US, FLOOR_CHANNELS)
        try:
            return measured(target, n, size, seed, timeout_s, floor=server.uri())
        finally:
            server.stop()


def samples(figure_samples: int) -> int:
    """The reads at each depth: four times a figure's samples (a mean at depth 8 is over fewer
    turns of the loop), at most MAX_DEPTH_READS."""
    return max(1, min(MAX_DEPTH_READS, 4 * figure_samples))


NO_FLOOR = ("; no floor (a file or a block device): this host's own path is in each read's time, and a plateau "
            "may be its")


def into(found, ch: Channels, n: int, path_said: str = ""):
    """The fit with its channels from the depths: measured where told, `assumed` at the least found
    where not; `path_said` after (NO_FLOOR where the path was not measured)."""
    import dataclasses
    how = f"random {SIZE} B reads at queue depths {', '.join(map(str, DEPTHS))} (n={n} each): "
    note = how + ch.said() + path_said if ch.told else f"assumed: {how}{ch.said()}{path_said}: taken as {ch.value}"
    return dataclasses.replace(found, params={**found.params, "channels": str(ch.value)},
                               notes={**found.notes, "channels": note})
