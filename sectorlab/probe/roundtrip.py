"""The round trip: a model probed, a profile fitted from the probe, that profile served and probed
again; the second probe must find what the first did.

Held per figure: the medians (less the floor) within MEDIAN_SHARE or MEDIAN_US, whichever is more;
the p99s within P99_SHARE where the device's tail is its own (the probed p99 above the floor's p99:
the path's own tail, the host's, hides a device's below it, and is said); the write unit, the read
before a partial write and the merge found or not found alike.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..devices.server import DeviceServer
from . import fit, measure, patterns

MEDIAN_SHARE, MEDIAN_US, P99_SHARE = 0.10, 10.0, 0.25


@dataclass
class Probe:
    fit: fit.Fit
    floor_p99: dict[str, float]
    drift: float = 0.0       # how far the path's own median moved between the probe's turns (us)


def probe_model(params: dict[str, str], samples: int, logical: int = 512, seed: int = 1,
                timeout_s: float = 900) -> Probe:
    """A model with `params` served on this host and probed over NBD, with the floor's model beside."""
    import numpy as np
    layout = patterns.layout(samples, logical, patterns.needed_bytes(samples, logical), seed)
    with tempfile.TemporaryDirectory(prefix="sectorlab-probe.") as tmp:
        server = DeviceServer(Path(tmp) / "model", size=layout.size, params=params)
        server.start()
        try:
            times, floor = measure.with_floor(server.uri(), layout, timeout_s)
        finally:
            server.stop()
    return Probe(fit.fit(times.us, floor, logical),
                 {k: float(np.percentile(v, 99) - np.median(v)) for k, v in floor.times.us.items()}, floor.drift)


def differences(first: Probe, second: Probe) -> tuple[list[str], list[str]]:
    """What the second probe found unlike the first (empty: the round trip holds), and what was not
    compared and why."""
    problems, unsaid = [], []
    a, b = first.fit, second.fit
    for name, x in a.summaries.items():
        y = b.summaries.get(name)
        if y is None:
            problems.append(f"{name}: not measured the second time")
            continue
        if abs(y.median - x.median) > max(MEDIAN_SHARE * abs(x.median), MEDIAN_US):
            problems.append(f"{name}: median {x.median:.1f} us, then {y.median:.1f} us")
        path_tail = max(first.floor_p99.get(name, 0.0), second.floor_p99.get(name, 0.0))
        if x.p99 - x.median > path_tail:
            if abs(y.p99 - x.p99) > P99_SHARE * x.p99:
                problems.append(f"{name}: p99 {x.p99:.1f} us, then {y.p99:.1f} us")
        else:
            unsaid.append(f"{name}: p99 not compared (its spread {x.p99 - x.median:.0f} us is within the path's own "
                          f"{path_tail:.0f} us)")
    if a.unit != b.unit:
        problems.append(f"write unit {a.unit} B, then {b.unit} B")
    for what, x, y in (("a read before a partial write", a.reads_first, b.reads_first),
                       ("a merge into the unit just written", a.merges, b.merges)):
        if (x and x.found) != (y and y.found):
            problems.append(f"{what}: {'found' if x and x.found else 'not found'}, then "
                            f"{'found' if y and y.found else 'not found'}")
    return problems, unsaid
