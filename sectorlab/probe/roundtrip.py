"""The round trip: a model probed, a profile fitted from the probe, that profile served and probed
again; the second probe must find what the first did. In virtual time (probe_simulated: the
model's own answers, what make test holds), on this host's device path over NBD (probe_model:
the path measured and taken away; a benchmark's, make bench-timing, as every check of the host's
time is) or in a lab's guest (probe_guest: the guest's whole path measured on the probed disk
itself, its model answering as a floor in the floor's turns, and taken away; make test-probe-guest).

Held per figure: the medians (less the path's own time) within MEDIAN_SHARE or MEDIAN_US, or, where
one is more, how well each probe knew its path's time, added (how far the path's own median moved
between the probe's turns at the first floor, and how well its rise at the figure's time is known:
measured in the same runs; that much of a difference is the host's, not the profile's; or, where
more, the turns' moves and how far the two probes' rise curves lie apart at the figure: path_known)
or the two medians' sampling error (their intervals' half-widths, combined, and where a floor was taken away,
its median's too); the p99s within P99_SHARE (or their sampling error, as the medians') where at
least P99_BEYOND samples lie above it (one spike of the
host is not a device's tail) and the device's tail is its own (its p99 above its median by more
than twice the path's largest time above its own median, in the same run: the host's tail hides a
device's below it; said, not compared); the write unit, the read before a partial write and the
merge found or not found alike. The sampling errors are intervals at the round trip's family
confidence: FAMILY_ALPHA shared over every median and p99 it compares (Bonferroni), because a
round trip compares some 23 to 46 of them, and at 95 % each two probes of one lognormal-tailed
model differed somewhere by chance in 9 of 10 round trips (virtual time, 200 samples a figure).
A probe's medians have a sampling error of their own: a device with a wide spread needs more
samples a figure for the 10 % to be the profile's and not the sample's (probe_model's `samples`,
and `only` fewer figures).
"""

from __future__ import annotations

import dataclasses
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..devices.server import DeviceServer
from . import depth, fit, measure, patterns

MEDIAN_SHARE, MEDIAN_US, P99_SHARE = 0.10, 10.0, 0.25
# the chance that a round trip of one model fails by its samples alone, all its comparisons together
FAMILY_ALPHA = 0.001
P99_BEYOND = 10   # a p99 is compared only with this many samples above it: one spike of the host is not a tail


@dataclass
class Probe:
    fit: fit.Fit
    floor_tail: dict[str, float]   # per figure: the path's own largest time above its median (us)
    drift: dict[str, float]   # per figure: how far the path's own median moved between the probe's turns, and
                              # how well its rise at the figure's time is known (Floor.unsure) (us)
    floor: measure.Floor | None = None   # the path measured (None: virtual time)
    channels: depth.Channels | None = None   # from the queue depths (None: not measured, as in a guest)


def served(params: dict[str, str], layout: patterns.Layout, timeout_s: float = 900, reads: int = 0, seed: int = 1
           ) -> tuple[measure.Times, measure.Floor, list[depth.AtDepth]]:
    """The layout on a model with `params` served on this host over NBD, the floor's models beside:
    each figure's times and the path (also devices/tails.py's, on the device path), and `reads` at
    each queue depth (none: not measured)."""
    with tempfile.TemporaryDirectory(prefix="sectorlab-probe.") as tmp:
        server = DeviceServer(Path(tmp) / "model", size=layout.size, params=params)
        server.start()
        try:
            times, floor = measure.with_floor(server.uri(), layout, timeout_s)
            deep = depth.with_floor(server.uri(), reads, layout.size, seed, timeout_s) if reads else []
            return times, floor, deep
        finally:
            server.stop()


def probe_model(params: dict[str, str], samples: int, logical: int = 512, seed: int = 1,
                timeout_s: float = 900, only: frozenset[str] | None = None, depths: bool = True) -> Probe:
    """A model with `params` served on this host and probed over NBD, with the floor's models beside
    (and at the queue depths, with a floor model of their own, unless `depths` is false)."""
    layout = patterns.layout(samples, logical, patterns.needed_bytes(samples, logical, only), seed, only)
    reads = depth.samples(samples) if depths else 0
    times, floor, deep = served(params, layout, timeout_s, reads, seed)
    return _with_channels(_probed(times, floor, logical), deep, reads)


def _with_channels(probe: Probe, deep: list[depth.AtDepth], reads: int) -> Probe:
    if not deep:
        return probe
    found = depth.channels(deep)
    return dataclasses.replace(probe, fit=depth.into(probe.fit, found, reads), channels=found)


def probe_guest(runner: measure.GuestRunner, device: str, floors: tuple[str, ...] | measure.OwnFloor, samples: int,
                logical: int = 512, seed: int = 1, timeout_s: float = 900,
                only: frozenset[str] | None = None,
                sleeps: tuple[float, ...] = measure.GUEST_FLOOR_SLEEPS_US) -> Probe:
    """A guest's block device (a lab disk served by a model) probed in the guest, the guest's floor
    measured on `floors` (the disk's own model answering as each floor in its turns, or disks of the
    same bus whose models sleep `sleeps`): the guest's whole path, its block layer, driver, QEMU and
    the model's path, taken away."""
    layout = patterns.layout(samples, logical, patterns.needed_bytes(samples, logical, only), seed, only)
    return _probed(*measure.with_floor(device, layout, timeout_s, runner, floors, sleeps), logical)


def _probed(times: measure.Times, floor: measure.Floor, logical: int) -> Probe:
    """The fit, and per figure the path's tail and how well its time is known: its move between the
    turns at the first floor, and its rise's interval at the figure's time (Floor.unsure)."""
    import numpy as np
    found = fit.fit(times.us, floor, logical)
    moved = {k: floor.drift.get(k, 0.0) + floor.unsure(x.median) for k, x in found.summaries.items()}
    return Probe(found, {k: float(np.max(v) - np.median(v)) for k, v in floor.times.us.items()}, moved, floor)


def probe_simulated(params: dict[str, str], samples: int, logical: int = 512, seed: int = 1,
                    only: frozenset[str] | None = None) -> Probe:
    """A model with `params` probed in virtual time (the same layout, the model's own answers, no
    host path: nothing to take away and nothing that drifts)."""
    layout = patterns.layout(samples, logical, patterns.needed_bytes(samples, logical, only), seed, only)
    reads = depth.samples(samples)
    return _with_channels(Probe(fit.fit(measure.simulated(params, layout).us, None, logical), {}, {}),
                          depth.simulated(params, reads, layout.size, seed), reads)


def one_medium(fit_: fit.Fit) -> set[str]:
    """The figures whose time is one medium's (no read of a unit first): a partial write that reads
    its unit costs the fitted read and the fitted write, each with the path's residual in it."""
    unit = fit_.unit
    if not unit:
        return set(fit_.summaries)
    out = set()
    for name in fit_.summaries:
        kind, size = patterns.kind_and_size(name)
        if kind in ("read", "flush") or (kind in ("aligned", "append") and size % unit == 0):
            out.add(name)
    if fit_.merges and fit_.merges.found:
        out.add("partial-after-whole")
    return out


def _compared(first: Probe, second: Probe, name: str) -> bool:
    """Whether a figure's p99 is compared: at least P99_BEYOND samples above it, and the device's
    spread its own (above twice the path's largest time over its median, in either probe)."""
    x = first.fit.summaries[name]
    return x.n >= 100 * P99_BEYOND and x.p99 - x.median > 2 * _path_tail(first, second, name)


def _path_tail(first: Probe, second: Probe, name: str) -> float:
    return max(first.floor_tail.get(name, 0.0), second.floor_tail.get(name, 0.0))


def path_known(first: Probe, second: Probe, name: str) -> float:
    """How well the two probes knew the path's own time at a figure (us): each probe's, added (how far
    its time at the first floor moved between its turns, and its rise's interval at the figure's
    time), or, where more, the turns' moves and how far the two probes' rise curves lie apart at
    either figure's median: two measures of the path's rise that differ by that much know it no
    better (in a guest under TCG the rise at 150-300 us came out 153-213 us in one probe and 166-256
    in the next, each known to +-25 by its own interval; a lognormal tail's reads, whose medians lie
    there, moved by 86-94 us between the probes with them)."""
    own = first.drift.get(name, 0.0) + second.drift.get(name, 0.0)
    a, b = first.floor, second.floor
    x, y = first.fit.summaries.get(name), second.fit.summaries.get(name)
    if a is None or b is None or x is None or y is None:
        return own
    apart = max(abs(a.rise_at(t) - b.rise_at(t)) for t in (x.median, y.median))
    return max(own, a.drift.get(name, 0.0) + b.drift.get(name, 0.0) + apart)


def untold(first: Probe, second: Probe) -> list[str]:
    """The figures whose median is not told from the path: the path known to more than half of it
    (path_known); a round trip holds them only within that (said as a count by the guest's test)."""
    return [k for k, x in first.fit.summaries.items() if path_known(first, second, k) > abs(x.median) / 2]


def differences(first: Probe, second: Probe, only: set[str] | None = None) -> tuple[list[str], list[str]]:
    """What the second probe found unlike the first (empty: the round trip holds), and what was not
    compared and why; the medians and p99s of the figures `only` (all when None). The sampling
    errors are the intervals at the family's confidence: FAMILY_ALPHA shared over every median
    and p99 compared (Bonferroni), so that two probes of one model differ in a median or a p99 by
    chance no more often than that, however many figures are compared (the steps, each probe's
    own at fit.STEP_ALPHA, are outside it)."""
    from scipy import stats
    problems, unsaid = [], []
    a, b = first.fit, second.fit
    held = [k for k in a.summaries if (only is None or k in only) and k in b.summaries]
    candidates = [k for k in held if _compared(first, second, k)]
    # a p99 whose interval at the family's confidence reaches the largest sample is not bounded by
    # the samples (at 1,000 a figure it is: 0.99^1000 is more than the family's share); said, not compared
    most = max(1, len(held) + len(candidates))
    tails = [k for k in candidates
             if stats.binom.ppf(1 - FAMILY_ALPHA / most / 2, a.summaries[k].n, 0.99) <= a.summaries[k].n - 2]
    comparisons = max(1, len(held) + len(tails))
    confidence = 1 - FAMILY_ALPHA / comparisons
    widen = float(stats.norm.ppf(1 - FAMILY_ALPHA / comparisons / 2) / stats.norm.ppf(0.975))

    def width(p: Probe, name: str, q: float) -> float:
        low, high = fit.quantile_interval(p.fit.net[name], q, confidence)
        return high - low

    for name, x in a.summaries.items():
        y = b.summaries.get(name)
        if only is not None and name not in only:
            unsaid.append(f"{name}: median {x.median:.1f} us, then {y.median:.1f} us (said, not held)" if y else
                          f"{name}: not measured the second time")
            continue
        if y is None:
            problems.append(f"{name}: not measured the second time")
            continue
        # each median less its floor's: both medians' errors and both floor medians' (their 95 % half-widths
        # widened to the family's confidence, as a normal's)
        floors = [widen * p.floor.at_error.get(name, 0.0) for p in (first, second) if p.floor]
        sampling = (width(first, name, 0.5) ** 2 + width(second, name, 0.5) ** 2
                    + sum((2 * f) ** 2 for f in floors)) ** 0.5 / 2
        path = path_known(first, second, name)
        allowed = max(MEDIAN_SHARE * abs(x.median), MEDIAN_US, path, sampling)
        if abs(y.median - x.median) > allowed:
            problems.append(f"{name}: median {x.median:.1f} us, then {y.median:.1f} us (allowed {allowed:.1f})")
        if name in candidates and name not in tails:
            unsaid.append(f"{name}: p99 not compared ({x.n} samples do not bound it at the round trip's family "
                          f"confidence: its interval reaches the largest sample)")
        elif name in tails:
            tail = (width(first, name, 0.99) ** 2 + width(second, name, 0.99) ** 2) ** 0.5 / 2
            if abs(y.p99 - x.p99) > max(P99_SHARE * x.p99, tail):
                problems.append(f"{name}: p99 {x.p99:.1f} us, then {y.p99:.1f} us (allowed "
                                f"{max(P99_SHARE * x.p99, tail):.1f})")
        else:
            unsaid.append(f"{name}: p99 not compared ({x.n} samples: {P99_BEYOND * 100} give {P99_BEYOND} above it)"
                          if x.n < 100 * P99_BEYOND else
                          f"{name}: p99 not compared (its spread {x.p99 - x.median:.0f} us is within twice the path's "
                          f"own largest, {_path_tail(first, second, name):.0f} us)")
    if a.unit != b.unit:
        problems.append(f"write unit {a.unit} B, then {b.unit} B")
    if first.channels and second.channels and not _channels_agree(first.channels, second.channels):
        problems.append(f"channels: {_range(first.channels)}, then {_range(second.channels)}")
    for what, x, y in (("a read before a partial write", a.reads_first, b.reads_first),
                       ("a merge into the unit just written", a.merges, b.merges)):
        if (x and x.found) != (y and y.found):
            problems.append(f"{what}: {'found' if x and x.found else 'not found'}, then "
                            f"{'found' if y and y.found else 'not found'}")
    return problems, unsaid


def _range(c: depth.Channels) -> str:
    return str(c.value) if c.told else f"at least {c.value}"


def _channels_agree(x: depth.Channels, y: depth.Channels) -> bool:
    """Two probes' channels agree where what each tells can be the same number: a value found where
    the rate stopped, or at least the most found busy at once where it never did."""
    if x.told and y.told:
        return x.value == y.value
    if x.told or y.told:
        told, least = (x, y) if x.told else (y, x)
        return told.value >= least.value
    return True
