"""A few queue depths: random 4 KiB reads at depths 1, 2, 4 and 8 (fio, a closed loop as a
database's readers are), each depth's latency, and how many requests the device serves at once.

A device with c channels (the model's `channels`) serves up to c requests at once: in a closed loop
of k with nothing between a reply and the next request, a depth up to c is served at the device's
own time and a deeper one waits, each request k/c times that, the rate staying at c over the time.
So the requests the device is busy with at once, on average, are U = k x S / L at depth k (Little's
law: the rate k / L times the device's own mean time S, the depth-1 mean less the path's), never
more than c, and c where the device, not the path, stops the rate from growing: where the reads
busy at once stay within PLATEAU of those at half the depth, from that depth on, while the path's
floor there carried PATH_ROOM times the device's rate or more (where it did not, the path's own
rate may be what stopped it: this host's device path at depth 8 carried 24,000-35,000 reads a second
on a floor of 100 us, and a P3700's 77 us reads on four channels would take 52,000). A file or a
block device has no floor: a plateau there may be this host's own (said in the profile). Where no
depth gives a plateau, the device serves at least the most found busy at once: said so, and the
profile takes that many, `assumed`.

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

DEPTHS = (1, 2, 4, 8)
SIZE = 4096
GROWS = 1.25        # a depth's rate over the one at half of it: less, and the path may have stopped it (said)
PLATEAU = 1.10      # the reads busy at once from a depth on, over those at half of it: no more, a plateau
# the floor's rate at a depth over the device's: less, and the path may be what stopped it (at 1.25 the
# 512e flash drive's four channels of 77 us on this host's device path were told as 2, its rate stopping
# at depth 8 with the floor's 1.25 times or more: the floor's 100 us reads are not the device's load)
PATH_ROOM = 2.0
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
    path_limited: tuple[int, ...] = ()   # the depths where the path's own rate may have stopped the device's
    device_us: float = 0.0   # the device's own mean time at depth 1 (S)

    def said(self) -> str:
        busy = ", ".join(f"{u:.2f} at {k}" for k, u in self.busy.items())
        where = f"busy with {busy} (the mean number of reads at once, from a {self.device_us:.1f} us mean read)"
        if self.told:
            return (f"{self.value}: the reads busy at once stayed within {100 * (PLATEAU - 1):.0f} % from depth "
                    f"{self.depth // 2} on (the rate stopped growing at depth {self.depth}); {where}")
        limited = (f"; at depth {', '.join(map(str, self.path_limited))} they grew less than {GROWS:g} times, but "
                   f"the path's own floor carried less than {PATH_ROOM:g} times the device's rate there: the path, not "
                   "the device, may have stopped them" if self.path_limited else "")
        return (f"at least {self.value}: the reads busy at once reached no plateau the device made up to depth "
                f"{max(self.busy)}{limited}; {where}")

    def as_dict(self) -> dict:
        return {"value": self.value, "told": self.told, "depth": self.depth,
                "busy": {str(k): v for k, v in self.busy.items()}, "path_limited": list(self.path_limited),
                "device_us": self.device_us, "said": self.said()}


def channels(depths: list[AtDepth]) -> Channels:
    """The channels the depths tell (the module's rule); the path at each depth, where a floor was
    measured, its mean less the floor's sleep, taken from the device's depth-1 mean."""
    by = {d.depth: d for d in depths}
    if 1 not in by or len(by) < 2:
        raise SectorlabError(f"queue depths {sorted(by)}: the channels need depth 1 and a deeper one")
    first = by[1]
    path_1 = first.floor_mean_us - FLOOR_SLEEP_US if first.floor_mean_us is not None else 0.0
    device_us = max(first.mean_us - path_1, 1e-3)
    busy = {k: k * device_us / d.mean_us for k, d in sorted(by.items())}
    # the floor's rate over the device's at each depth (no floor: room enough)
    room = {k: d.mean_us / d.floor_mean_us if d.floor_mean_us is not None else math.inf for k, d in by.items()}
    # told at the least depth k from which the reads busy at once stay within PLATEAU of those at k/2,
    # the path having room at each: the rate stopped there for good (this host's disk, a file probe:
    # busy 1.65 at 2, 2.06 at 4, 2.29 at 8, each step under 1.25 times but no plateau: its 2 cores'
    # fio and kernel, not the disk's channels, a rule on each step alone told 2 and in the next run 3)
    limited = tuple(k for k in by if k > 1 and k // 2 in by and busy[k] < GROWS * busy[k // 2]
                    and room[k] < PATH_ROOM)
    for k in sorted(by):
        if k == 1 or k // 2 not in by:
            continue
        deeper = [j for j in by if j >= k]
        if max(busy[j] for j in deeper) <= PLATEAU * busy[k // 2] and all(room[j] >= PATH_ROOM for j in deeper):
            return Channels(max(1, round(max(busy.values()))), True, k, busy, limited, device_us)
    return Channels(max(1, round(max(busy.values()))), False, None, busy, limited, device_us)


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
    if target.startswith("nbd"):
        return ["--ioengine=nbd", f"--uri={target}"]
    # fio splits a filename at ':' (several files): a device's path under /dev/disk/by-path has them
    return ["--ioengine=libaio", "--direct=1", "--filename=" + target.replace("\\", "\\\\").replace(":", "\\:")]


def fio_reads(target: str, depth: int, n: int, size: int, seed: int, timeout_s: float) -> AtDepth:
    """n random reads of SIZE at `depth` on the first `size` bytes of `target` (an NBD URI, a file
    or a block device, read with O_DIRECT), by fio."""
    if shutil.which("fio") is None:
        raise UsageError("fio is not installed: the probe's queue depths need it (scripts/bootstrap installs it)")
    args = ["fio", "--name=depth", "--rw=randread", f"--bs={SIZE}", f"--iodepth={depth}", f"--number_ios={n}",
            f"--size={size}", f"--randseed={seed}", "--lat_percentiles=1", "--output-format=json",
            *_fio_target(target)]
    fds = (int(target.rsplit("/", 1)[1]),) if target.startswith("/dev/fd/") else ()
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout_s, pass_fds=fds)
    except subprocess.TimeoutExpired:
        raise SectorlabError(f"the probe's reads at queue depth {depth} on {target} took longer than "
                             f"{timeout_s:.0f} s: stopped; give fewer --samples or a larger --max-seconds") from None
    if proc.returncode != 0 or "{" not in proc.stdout:
        why = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        raise SectorlabError(f"fio's reads at queue depth {depth} on {target}: {why}")
    return parse(proc.stdout, depth)


def parse(out: str, depth: int) -> AtDepth:
    """fio's JSON (after any lines it printed first, as its NBD engine's) as one depth's figures."""
    try:
        job = json.loads(out[out.index("{"):])["jobs"][0]
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
    FLOOR_SLEEP_US with FLOOR_CHANNELS channels) right after, where given."""
    out = []
    for k in DEPTHS:
        got = fio_reads(target, k, n, size, seed + k, timeout_s)
        if floor is not None:
            on = fio_reads(floor, k, n, size, seed + k, timeout_s)
            got = AtDepth(k, got.n, got.mean_us, got.p50_us, got.p99_us, on.mean_us)
        out.append(got)
    return out


def floor_params() -> dict[str, str]:
    """The depths' floor model: every request answered FLOOR_SLEEP_US after it arrives, all at once."""
    return {"read": f"fixed:{FLOOR_SLEEP_US:g}", "write": f"fixed:{FLOOR_SLEEP_US:g}", "channels": str(FLOOR_CHANNELS)}


def with_floor(target: str, n: int, size: int, seed: int, timeout_s: float) -> list[AtDepth]:
    """measured() on an NBD export, its floor a model served here for the reads (floor_params)."""
    import tempfile
    from pathlib import Path

    from ..devices.server import DeviceServer
    with tempfile.TemporaryDirectory(prefix="sectorlab-probe-depths.") as tmp:
        server = DeviceServer(Path(tmp) / "floor", size=size, params=floor_params())
        server.start()
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
