"""Device tails: a service time given as its source's percentiles, and the model held to them.

A review or datasheet that publishes a device's latency percentiles (AnandTech's table of the
P3700's QD1 random reads: median 76 us, 99th 96 us, 99.999th 2,768 us) is entered in the catalog
as those figures (`quantiles`: parameter -> {percentile: microseconds}, and the source's mean where
it gives one, which no parameter is made from), not as a shape fitted to them. expand() makes the
model's `pct:` points from them, each published point exactly, and between them:

- the body, from the median up to the highest published point at or below the 99th: the lognormal
  through those two (the shape the catalog's lognormal:MEDIAN,P99 had; assumed: a review gives no
  more of it), at BODY's percentiles;
- the tail, between two published points above that: a power law in the exceedance (log time
  linear in log(1 - P), a straight line on the log-log plot of a tail; assumed: between 99 and
  99.999 no review gives a figure), at TAIL's percentiles;
- above the last published point, its time (the model's 100 = MAXIMUM; no source gives a maximum).

Where the source's curve is itself a line in the percentile (`"shape": "linear"`: a disk's
rotational wait, uniform over one revolution, is exactly linear in P), the points are joined by
lines, as the model draws, and the points below the median are the source's too (an HDD's
percentiles: the seek's time at 1, the average seek plus half a revolution at 50, plus a whole one
at 100).

The model draws linearly between the points (devicemodel/model.h): at the points it is the curve
above, between them within DRAWN_SHARE of it (a line under a convex tail lies above it). Below the
lowest body point (the 0.1th) it draws that point's time.

check() holds the model to the source: each published percentile and the 99.9th (the source's, or
the interpolation's where it publishes none) measured from the model, in virtual time (the model's
own answers: exact for its draws) or on this host's device path over NBD (the path's own time taken
from each sample as `sectorlab probe` takes it, from floor models served beside: its median and its
rise with the device's time), each within TAIL_SHARE of the figure; a percentile is compared only
with at least BEYOND samples above it. The path's tail is not taken away (a sum's percentile is not
the sum of its parts'): what the path's own times reach above their median at that percentile is
said beside, and where it is more than TAIL_SHARE of the figure the percentile is not told from it.
The source's mean, which no point was made from, is set beside the model's (held out, not held).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import UsageError

BODY = (0.1, 10, 50, 90, 99)   # the lognormal body's percentiles (at most the body's top): nearly a line between
# the power law's, between published points: dense enough that the model's line between two lies within
# DRAWN_SHARE of the curve (labtests/unit/devices/test_tails.py measures it), 16 points in all with the body's
TAIL = (99.3, 99.6, 99.8, 99.9, 99.95, 99.98, 99.99, 99.995, 99.998, 99.999, 99.9995)
DRAWN_SHARE = 0.08
TAIL_SHARE = 0.25      # a tail percentile held within this share of its figure
BEYOND = 10            # a percentile is compared only with this many samples above it
FIGURE = {"read": "read-4096", "write": "aligned-4096"}   # the probe's figure that times a parameter
HELD = 99.9            # the percentile every tailed profile is held at (the source's or the interpolation's)
SECONDS = 60           # on the device path a time gets at most this long (at its median), but never fewer
MIN_SAMPLES = 10_000   # samples than the 99.9th needs (BEYOND above it)
SAMPLES = 200_000      # requests a time gets by default: the 99.99th compared (20 above it)


def samples_for(q: Quantiles, samples: int) -> int:
    """How many requests time a parameter on the device path: `samples`, fewer for a slow device
    (a disk's 6 ms a request would take 20 minutes for 200,000), but not below MIN_SAMPLES for it
    (a `samples` below MIN_SAMPLES is taken as given)."""
    return min(samples, max(MIN_SAMPLES, int(SECONDS * 1e6 / q.points[50.0])))


SHAPES = ("lognormal-power", "linear")


@dataclass(frozen=True)
class Quantiles:
    """A parameter's source percentiles (P -> us), the curve between them (SHAPES: a lognormal body
    and a power-law tail, or lines) and, where the source gives it, its mean."""
    points: dict[float, float]
    mean: float | None = None
    shape: str = SHAPES[0]


def parse(where: str, raw) -> Quantiles:
    """A catalog entry's `quantiles` of one parameter: {"percentiles": {"50": 76, ...}, "mean": 77.9,
    "shape": "linear"} (mean and shape optional)."""
    try:
        pts = {float(p): float(v) for p, v in raw["percentiles"].items()}
        mean = float(raw["mean"]) if raw.get("mean") is not None else None
        if mean is not None and not (mean > 0 and math.isfinite(mean)):
            raise ValueError(f"mean {mean}: expected positive microseconds")
        shape = raw.get("shape", SHAPES[0])
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise UsageError(f"{where}: {e}: expected {{\"percentiles\": {{\"50\": US, \"99\": US, ...}}, \"mean\": US "
                         f"(optional), \"shape\": {' or '.join(SHAPES)} (optional)}}") from None
    if shape not in SHAPES:
        raise UsageError(f"{where}: shape {shape!r}: expected one of {', '.join(SHAPES)}")
    if 50.0 not in pts or not any(p > 50 for p in pts) or any(not 0 < p <= 100 for p in pts):
        raise UsageError(f"{where}: percentiles {sorted(pts)}: expected the median (50) and at least one above it, "
                         f"each above 0 and at most 100")
    ordered = sorted(pts.items())
    times = [v for _, v in ordered]
    if any(v <= 0 or not math.isfinite(v) for v in times) or times != sorted(times):
        raise UsageError(f"{where}: times {times}: expected positive microseconds that rise with "
                         f"the percentile")
    if min(pts) < 50 and shape != "linear":
        raise UsageError(f"{where}: a percentile below the median ({min(pts):g}): the body below it is the "
                         f"lognormal's; give the median and the points above it (or \"shape\": \"linear\")")
    if shape == "linear" and 100.0 not in pts:
        raise UsageError(f"{where}: a linear shape ends at its maximum: expected a point at 100")
    return Quantiles(dict(ordered), mean, shape)


def _z(p: float) -> float:
    from statistics import NormalDist
    return NormalDist().inv_cdf(p / 100)


def value_at(q: Quantiles, p: float) -> float:
    """The expanded curve's time at percentile p (the points expand() gives lie on it)."""
    pts = sorted(q.points.items())
    if p in q.points:
        return q.points[p]
    if q.shape == "linear":
        if p <= pts[0][0]:
            return pts[0][1]
        lo = max((x, v) for x, v in pts if x < p)
        hi = min((x, v) for x, v in pts if x > p)
        return lo[1] + (hi[1] - lo[1]) * (p - lo[0]) / (hi[0] - lo[0])
    top_body = max(x for x, _ in pts if x <= 99) if any(50 < x <= 99 for x, _ in pts) else 50.0
    median = q.points[50.0]
    if p <= top_body:
        if top_body == 50.0:
            return median
        sigma = math.log(q.points[top_body] / median) / _z(top_body)
        return median * math.exp(sigma * _z(p))
    above = [(x, v) for x, v in pts if x > p]
    if not above:
        return pts[-1][1]
    lo = max((x, v) for x, v in pts if x < p)
    hi = above[0]
    if hi[0] >= 100:   # a published maximum: linear to it (no exceedance at 100)
        return lo[1] + (hi[1] - lo[1]) * (p - lo[0]) / (hi[0] - lo[0])
    f = (math.log(100 - lo[0]) - math.log(100 - p)) / (math.log(100 - lo[0]) - math.log(100 - hi[0]))
    return lo[1] * (hi[1] / lo[1]) ** f


def expand(q: Quantiles, where: str = "percentiles") -> str:
    """The model's pct: points for the source's percentiles (the module's docstring says how);
    `where` names them in the one line that refuses too many."""
    if q.shape == "linear":
        return "pct:" + ",".join(f"{p:g}={_us(v)}" for p, v in sorted(q.points.items()))
    top_body = max((x for x in q.points if x <= 99), default=50.0)
    last_law = max(x for x in q.points if x < 100)   # beyond it a line to a published maximum, or flat
    at = set(q.points) | {p for p in BODY if p <= top_body} | {p for p in TAIL if top_body < p < last_law}
    at.add(100.0)
    pts = sorted(at)
    if len(pts) > 16:
        raise UsageError(f"{where}: percentiles {[f'{x:g}' for x in sorted(q.points)]} expand to {len(pts)} points "
                         f"and the model takes 16: give fewer percentiles above the 99th")
    return "pct:" + ",".join(f"{p:g}={_us(value_at(q, p))}" for p in pts)


def _us(v: float) -> str:
    """A time as the model reads it: to 0.1 us, a whole number without its ".0" (3940, not 3940.0)."""
    text = f"{v:.1f}"
    return text.removesuffix(".0")


def held_figures(q: Quantiles) -> dict[float, tuple[float, str]]:
    """The percentiles a model is held at: each published one, and HELD (interpolated where unpublished)."""
    out = {p: (v, "the source's") for p, v in q.points.items() if p < 100}
    if HELD not in out:
        out[HELD] = (value_at(q, HELD), "interpolated (a line between the source's points, as its physics)"
                     if q.shape == "linear" else "interpolated (a power law between the source's points, assumed)")
    return dict(sorted(out.items()))


def judge(q: Quantiles, samples: list[float], path_own: list[float] | None = None) -> list[dict]:
    """Each held percentile of `samples` (the device's times, the path's median taken away) against
    its figure. On a path with a time of its own (`path_own`: the path's times on a floor model),
    what the path adds at that percentile (its own percentile above its median) is said beside, and
    where it is more than TAIL_SHARE of the figure the percentile is not told from the path's tail."""
    import numpy as np
    a = np.asarray(samples, dtype=float)
    own = np.asarray(path_own, dtype=float) if path_own else None
    rows = []
    for p, (figure, how) in held_figures(q).items():
        beyond = int(len(a) * (100 - p) / 100 + 1e-9)   # 10,000 samples have 10 above the 99.9th, not 9.999
        row = {"percentile": p, "figure_us": figure, "figure_is": how, "n": len(a), "beyond": beyond,
               "measured_us": None, "path_adds_us": None}
        if beyond < BEYOND:
            row["verdict"] = f"not compared: {beyond} samples above it, {BEYOND} needed"
            rows.append(row)
            continue
        row["measured_us"] = got = float(np.percentile(a, p))
        row["share"] = got / figure - 1
        if own is not None:
            row["path_adds_us"] = float(np.percentile(own, p) - np.median(own))
        if row["path_adds_us"] is not None and row["path_adds_us"] > TAIL_SHARE * figure:
            row["verdict"] = "not told from the path's own tail"
        else:
            row["verdict"] = "within" if abs(row["share"]) <= TAIL_SHARE else "outside"
        rows.append(row)
    rows.append({"percentile": None, "figure_us": q.mean, "figure_is": "the source's mean (held out: no point "
                 "came from it)" if q.mean is not None else "no mean published", "n": len(a),
                 "measured_us": float(a.mean()), "path_adds_us": None, "verdict": "said, not held"})
    return rows


def tailed() -> dict[str, dict[str, Quantiles]]:
    """Every catalog profile's parameters given as their source's percentiles."""
    from . import profiles
    return {name: p.quantiles for name, p in profiles.profiles().items() if p.quantiles}


def _own(name: str) -> dict[str, Quantiles]:
    """The parameters the profile itself gives as percentiles: a variant inherits its base's, and
    is held where the base is (the same draws)."""
    from . import profiles
    raw = profiles._raw()[name].get("quantiles", {})
    return {k: v for k, v in profiles.get(name).quantiles.items() if k in raw}


def measured(params: dict[str, str], fig: str, path: str, samples: int, seed: int
             ) -> tuple[list[float], float, list[float] | None]:
    """The probe figure's times from a model with `params`, the path's median taken from each, and
    the path's own times (None in virtual time, which has no path): on the device path the model is
    served on this host and probed over NBD with the floor's models beside, and each time taken
    less the path's own as `sectorlab probe` takes it (measure.Floor.less)."""
    import statistics

    from ..probe import measure, patterns, roundtrip
    only = frozenset({fig})
    layout = patterns.layout(samples, 512, patterns.needed_bytes(samples, 512, only), seed, only)
    if path == "virtual":
        return measure.simulated(params, layout).us[fig], 0.0, None
    if path != "device":
        raise UsageError(f"path {path!r}: expected virtual or device")
    times, floor, _ = roundtrip.served(params, layout, timeout_s=max(900, samples / 100))
    raw = times.us[fig]
    net = [floor.less(fig, t) for t in raw]
    return net, statistics.median(raw) - statistics.median(net), floor.times.us[fig]


def check(path: str = "virtual", samples: int = SAMPLES, seed: int = 1) -> list[dict]:
    """Each tailed profile (its own tails) held to its source on `path` (virtual or device)."""
    from . import profiles
    out = []
    for name in tailed():
        for param, q in _own(name).items():
            fig = FIGURE[param]
            params = {**profiles.get(name).params, "seed": str(seed)}
            n = samples_for(q, samples) if path == "device" else samples
            if path == "device":
                import sys
                print(f"tails: {name} {param} ({fig}), {n:,} requests on the device path with the floor's "
                      f"beside...", file=sys.stderr, flush=True)
            times, taken, path_own = measured(params, fig, path, n, seed)
            for row in judge(q, times, path_own):
                out.append({"profile": name, "parameter": param, "figure": fig, "path": path,
                            "path_median_taken_us": taken, **row})
    return out


def table(rows: list[dict]) -> list[str]:
    """Markdown rows: profile, parameter, percentile, the source's figure, the model's, the verdict."""
    out = ["| profile | parameter (probe figure) | path | percentile | source (us) | model (us) | the path's own "
           "there, from its median (us) | verdict |", "|---|---|---|---:|---:|---:|---:|---|"]
    for r in rows:
        pct = "mean" if r["percentile"] is None else f"{r['percentile']:g}"
        src = "-" if r["figure_us"] is None else f"{r['figure_us']:,.1f}"
        if r["figure_is"].startswith("interpolated") and r["percentile"] is not None:
            src += " (interpolated)"
        got = "-" if r["measured_us"] is None else f"{r['measured_us']:,.1f}"
        out_ = "-" if r.get("path_adds_us") is None else f"{r['path_adds_us']:+,.1f}"
        verdict = r["verdict"] + (f" ({r['share']:+.1%})" if "share" in r else "")
        out.append(f"| `{r['profile']}` | {r['parameter']} ({r['figure']}) | {r['path']} | {pct} | {src} | {got} | "
                   f"{out_} | {verdict} |")
    return out
