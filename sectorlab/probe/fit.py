"""A probe's figures as distributions, what they tell of the device, and the model's parameters.

Every figure is summarised with its n, median (and the median's 95 % interval from the order
statistics), p99, p99.9 and maximum; where the path has a measured floor, the path's own time is
taken from each sample (measure.Floor.less: the figure's floor median, and the path's rise with the
device's time; what was taken away at the median is always shown). From those:

- the write unit: the smallest size from which on a write 512 B past a 64 KiB boundary is slower
  than the same size at the boundary, at every size measured (Mann-Whitney, one-sided, p < STEP_ALPHA
  over the sizes, by more than MIN_STEP): below the unit both are partial, from it on only the
  misaligned one is (two sizes at least: a 64 KiB unit, the largest measured, is not found);
- whether a partial write reads its unit first (a 512-byte write into a cold unit against a whole
  unit written at a boundary), and whether a buffer merges one into the unit just written (against
  a cold one; only where a read first is found: what a merge spares), each at p < STEP_ALPHA;
  each step judged on the times less their figure's path at the first floor (the path's rise with
  the device's time only adds to a step: it is taken from the times, not from the verdict);
- the media rates, from how the medians grow with the size (a least-squares line, kept when its
  slope is positive, its p said);
- each time as the model's percentile points (pct:), from the samples less the floor and the
  transfer time, and the path's own spread (the floor's) taken out of them (deconvolved_pct), or
  `fixed:` at the median where the device's own spread is not told from the path's.

What a queue-depth-1 probe cannot tell (power-loss protection, whether a cache lies) stays assumed,
and says so; so do the channels, until the queue depths (depth.py) tell them (depth.into).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from .patterns import kind_and_size

ALPHA = 0.01
# A step (the write unit's sizes together, the read first, the merge) is claimed at p below this: a
# round trip compares both probes' three, and at ALPHA a device with none of them had one found by
# chance in 3 round trips of 300 (a lognormal tail, 200 samples, virtual time); a drive's real steps
# come at p of 1e-13 to 1e-50 in a guest's 200 samples
STEP_ALPHA = 0.001
MIN_STEP_US = 10.0        # a step smaller than this, or than MIN_STEP_SHARE of the time, is not one
MIN_STEP_SHARE = 0.10
# the pct: points a fitted time keeps (the model takes 16): the body in tenths, a deconvolved time is
# matched at these very points (between them the model draws on a line)
POINTS = (1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.5, 99.9, 100)


@dataclass(frozen=True)
class Summary:
    n: int
    median: float
    median_low: float
    median_high: float
    p99: float
    p999: float
    max: float
    floor: float            # the path's time taken away, at the median (0: none measured)
    p99_low: float = 0.0    # the p99's 95 % interval (order statistics)
    p99_high: float = 0.0

    def as_dict(self) -> dict:
        return {k: round(v, 3) if isinstance(v, float) else v for k, v in self.__dict__.items()}


def quantile_interval(xs, q: float, confidence: float = 0.95) -> tuple[float, float]:
    """The q-quantile's interval from the order statistics (the binomial ranks around n q)."""
    import numpy as np
    from scipy import stats
    s = np.sort(np.asarray(xs, dtype=float))
    n = len(s)
    lo, hi = stats.binom.interval(confidence, n, q)
    return float(s[max(0, int(lo) - 1)]), float(s[min(n - 1, int(hi))])


def median_interval(xs, confidence: float = 0.95) -> tuple[float, float]:
    """The median's interval from the order statistics (the binomial ranks around n/2)."""
    return quantile_interval(xs, 0.5, confidence)


def summary(net, floor: float = 0.0) -> Summary:
    """A figure's times, the path's own already taken away (`floor`: what was, at the median)."""
    import numpy as np
    a = np.asarray(net, dtype=float)
    low, high = median_interval(a)
    p99_low, p99_high = quantile_interval(a, 0.99)
    return Summary(len(a), float(np.median(a)), low, high, float(np.percentile(a, 99)),
                   float(np.percentile(a, 99.9)), float(a.max()), floor, p99_low, p99_high)


def _greater(a, b) -> float:
    """One-sided Mann-Whitney p that `a` is stochastically greater than `b`."""
    from scipy import stats
    return float(stats.mannwhitneyu(a, b, alternative="greater").pvalue)


@dataclass(frozen=True)
class Step:
    """Whether `slow` is slower than `fast` by a step: p, the medians' difference, and the verdict."""
    slow: str
    fast: str
    p: float
    difference_us: float
    found: bool
    unless: str = ""   # why a step that the test found is not one (said)
    least_us: float = 0.0   # the least difference that is a step (MIN_STEP_US, MIN_STEP_SHARE, the floors' error)
    alpha: float = 0.0

    def said(self) -> str:
        under = (self.p < self.alpha and not self.found and self.difference_us <= self.least_us)
        verdict = (f"no step: {self.unless}" if self.unless else "a step" if self.found else
                   f"no step: under the least step, {self.least_us:.1f} us" if under else "no step")
        return (f"{self.slow} vs {self.fast}: {self.difference_us:+.1f} us at the median, Mann-Whitney one-sided "
                f"p = {self.p:.2g}: {verdict}")


def step(times: dict[str, list[float]], slow: str, fast: str, alpha: float = STEP_ALPHA,
         unsure: dict[str, float] | None = None, measured: dict[str, list[float]] | None = None) -> Step | None:
    """`slow` slower than `fast` at p < alpha (`times`: fit() gives each less its figure's path at the
    first floor), by more than MIN_STEP_US, MIN_STEP_SHARE of `fast` as
    measured (`measured`: its times with the path's own in them: a path differs between figures by
    a few per cent of its own time in ways its floor does not show, 12-20 us on a guest's 270-300
    us between a write into the unit just written and one into a cold unit, on a model that has no
    such step, when only the first came after a short write: the path's cost depends on the request
    before, so both now do, patterns.layout) and what the path's time taken from each is unsure by
    (`unsure`: per figure, the floor median's 95 % interval's half-width; the two combined: each
    figure had its own floor median taken away,
    and a step within their error is the floor's sampling, not the device's). The path's drift
    between turns falls on both figures alike (their requests take turns), so it is not counted."""
    import numpy as np
    a, b = times.get(slow), times.get(fast)
    if not a or not b:
        return None
    diff = float(np.median(a) - np.median(b))
    p = _greater(a, b)
    least = max(MIN_STEP_US, MIN_STEP_SHARE * float(np.median((measured or times)[fast])),
                float(np.hypot(*((unsure or {}).get(x, 0.0) for x in (slow, fast)))))
    return Step(slow, fast, p, diff, p < alpha and diff > least, least_us=least, alpha=alpha)


@dataclass
class Fit:
    summaries: dict[str, Summary]
    net: dict[str, list[float]]       # each figure's times less the path's own (as issued)
    unit: int                         # bytes; 0: no size at which misaligned writes step up
    unit_steps: list[Step]
    reads_first: Step | None          # partial-cold against a whole unit at a boundary
    merges: Step | None               # partial-after-whole against partial-after-other
    write_mbps: float                 # 0: not told apart from the noise
    read_mbps: float
    params: dict[str, str]
    notes: dict[str, str] = field(default_factory=dict)   # per parameter: how it was found, or why assumed


def _line(sizes: list[int], medians: list[float]) -> tuple[float, float | None]:
    """MB/s (bytes per microsecond) from the medians' least-squares line against size, and the
    slope's p (None from two points); 0 when the slope is not positive. A positive slope is kept
    at any p: the line is the best estimate there is, and 0 (no transfer time) would drop what the
    sizes cost from every large write (in a guest, a lognormal drive's 131 us on a 64 KiB write,
    whose slope the path's noise left at p = 0.04)."""
    from scipy import stats
    if len(sizes) < 2:
        return 0.0, None
    fit = stats.linregress(sizes, medians)
    p = float(fit.pvalue) if len(sizes) > 2 else None
    return (1.0 / fit.slope if fit.slope > 0 else 0.0), p


def _rate_said(rate: float, p: float | None) -> str:
    if rate < 1:
        return ": no positive slope: 0"
    return "" if p is None else f" (the slope's p = {p:.2g}{'' if p < ALPHA else f', not below {ALPHA}: said'})"


def pct(samples, less: float = 0.0) -> str:
    """The model's percentile points of `samples` less `less` microseconds (never below 0)."""
    import numpy as np
    values = np.maximum(np.percentile(np.asarray(samples, dtype=float) - less, POINTS), 0.0)
    values = np.maximum.accumulate(values)
    return "pct:" + ",".join(f"{p}={v:.1f}" for p, v in zip(POINTS, values))


@dataclass(frozen=True)
class Spread:
    """The path's spread at each sleep of its floors: a device's time draws its path's noise from
    the sleep nearest to it."""
    sleeps: tuple[float, ...]
    pools: tuple  # of numpy arrays, one a sleep (kept sorted)

    def __post_init__(self):
        import numpy as np
        object.__setattr__(self, "pools", tuple(np.sort(np.asarray(p, dtype=float)) for p in self.pools))

    def near(self, device_us):
        """The index of the sleep nearest each device time."""
        import numpy as np
        x = np.atleast_1d(np.asarray(device_us, dtype=float))
        return np.abs(np.asarray(self.sleeps)[:, None] - x[None, :]).argmin(axis=0)

    def draw(self, device_us, r):
        """The path's noise for each device time, each at the quantile `r` (in [0, 1)) of its sleep's pool
        (r drawn once: the same draws for the same times)."""
        import numpy as np
        k = self.near(device_us)
        out = np.empty(len(k))
        for i, pool in enumerate(self.pools):
            at = k == i
            if at.any():
                out[at] = pool[np.minimum((np.asarray(r)[at] * len(pool)).astype(int), len(pool) - 1)]
        return out

    def at(self, device_us: float):
        """The pool at the sleep nearest one device time."""
        return self.pools[int(self.near(device_us)[0])]


GRID = POINTS   # the percentiles a deconvolution matches: the profile's own (matched on a finer grid and
                # then kept at these, a lognormal's median came out 8 % high)
DECONVOLVE_DRAWS = 20_000


def deconvolved_pct(samples, noise, less: float = 0.0) -> str:
    """The model's percentile points of a time X whose samples came with the path's own spread
    added (`samples` = X + noise, `noise`: the path's times on the floor, less their median, one
    pool or a Spread, a pool at each of the floor's sleeps, each of X's draws taking its noise
    from the sleep nearest it): each of the samples' percentiles less what the noise adds to it
    (the percentiles of the samples with draws of the noise added, less the samples'; a fixed
    seed: the same probe fits the same profile). Without it a profile served on the same path has
    the path's spread twice: a guest's path under TCG, tens of microseconds wide and skewed, moved a
    fitted lognormal's medians by a quarter on the second probe. That correction once, not iterated
    to where X plus the noise has the samples' percentiles: deconvolution is ill-posed, and the
    iteration (100 rounds of half a step, until 2026-12-01) ran into steps: a lognormal disk's 5th
    to 60th percentiles fitted as one value, 122.8 us, in a guest (its model's trace: 201 us at the
    median), and [86, 86, 217, 388, 718] us at the 10th, 30th, 50th, 70th and 90th for a 200 us
    lognormal's [58, 119, 204, 347, 725] under a gamma's spread, where once gives [44, 112, 201,
    348, 706]. No noise: pct() of the samples."""
    import numpy as np
    if noise is not None and not isinstance(noise, Spread):
        noise = Spread((0.0,), (np.asarray(noise, dtype=float),))
    if noise is None or min(len(p) for p in noise.pools) < 2:
        return pct(samples, less)
    x = np.asarray(samples, dtype=float) - less
    # X's own spread, where the samples' is not told from the noise's at X's median, is not measured:
    # X is its median (a device's fixed time under a path's wider spread; moving percentiles there
    # fits the noise's differences between the target's runs and the floor's, not the device). Told
    # by the samples' distances from their median against the noise's (Mann-Whitney, one-sided at
    # ALPHA): a test of means (Brown-Forsythe, and the standard deviations, until 2026-12-01) was
    # carried by a few of the noise's outliers: a guest's floor pool of 185 times, a few of them
    # 2-4 ms over its median (a run with this host's CPUs held busy by idle-priority spinners, which
    # stalled some requests: an experiment, not kept), made a lognormal disk's 8,000
    # writes, an interquartile range of 299 us against the pool's 54, `fixed:` (p = 0.007 beside
    # standard deviations of 690 and 604 us)
    there = noise.at(float(np.median(x)))
    if not _greater(np.abs(x - np.median(x)), np.abs(there - np.median(there))) < ALPHA:
        return f"fixed:{max(0.0, float(np.median(x))):.1f}"
    y = np.percentile(x, GRID)
    rng = np.random.default_rng(0)
    drawn = np.interp(rng.uniform(GRID[0], GRID[-1], DECONVOLVE_DRAWS), GRID, y)
    summed = np.percentile(drawn + noise.draw(drawn, rng.uniform(0.0, 1.0, DECONVOLVE_DRAWS)), GRID)
    q = np.maximum.accumulate(np.maximum(2 * y - summed, 0.0))
    values = np.interp(POINTS, GRID, q)
    return "pct:" + ",".join(f"{p}={v:.1f}" for p, v in zip(POINTS, values))


def fit(times: dict[str, list[float]], floor, logical: int) -> Fit:
    """The figures' summaries (less the path's own time, where `floor` measured it: measure.Floor)
    and the parameters they give."""
    import numpy as np
    net = {k: [floor.less(k, x) for x in v] if floor else list(v) for k, v in times.items() if v}
    summaries = {k: summary(net[k], float(np.median(times[k]) - np.median(net[k]))) for k in net}
    sizes = sorted(size for kind, size in map(kind_and_size, net) if kind == "aligned" and f"misaligned-{size}" in net)
    # Each size tested at STEP_ALPHA over the sizes (Bonferroni); the unit is the smallest size from which
    # every larger one steps too (a write that leaves part of a unit reads it, at any size above it).
    unsure = floor.at_error if floor else None
    # A step is judged on each time less its figure's path at the first floor only, not on the
    # device's times (`net`): the path's rise with the device's time never falls (measure._monotone),
    # so it adds to a device's step and makes none where the device has none; what it is at a device
    # time is a curve a guest under TCG knows to tens of microseconds at 10-30 us (its rise at 20 us
    # 27-119 us from one probe to another), where a flash drive's 22 us write is: taken away, it
    # shrank the DRAM drive's read first (77 us) to 33.5 us, under its least step
    onpath = {k: [x - floor.at.get(k, 0.0) for x in v] for k, v in times.items() if v} if floor else net
    steps = [step(onpath, f"misaligned-{size}", f"aligned-{size}", STEP_ALPHA / max(1, len(sizes)), unsure, times)
             for size in sizes]
    # (at least two sizes: one step alone at the largest size measured is not told from chance)
    unit = next((size for i, size in enumerate(sizes[:-1]) if all(s.found for s in steps[i:])), 0)
    base = unit or max(4096, logical)
    reads_first = step(onpath, "partial-cold", f"aligned-{base}", unsure=unsure, measured=times)
    # against a cold partial write after a write, as its own comes after its set-up (patterns.layout);
    # without that figure no verdict (against partial-cold, whose request comes after anything, a
    # guest's path made a merge of a drive that has none)
    merges = step(onpath, "partial-after-other", "partial-after-whole", unsure=unsure, measured=times)
    # A merge spares the read a partial write makes of its unit: where none is found, a partial write
    # into the unit just written faster than into a cold one is chance (a wide tail's), not a buffer
    if merges and merges.found and not (reads_first and reads_first.found):
        merges = dataclasses.replace(merges, found=False, unless="no read before a partial write for a buffer to spare")
    whole = [s for s in sizes if s >= base]
    write_mbps, write_p = _line(whole, [float(np.median(net[f"aligned-{s}"])) for s in whole])
    reads = [s for s in (4096, 65536) if f"read-{s}" in net]
    read_mbps, read_p = _line(reads, [float(np.median(net[f"read-{s}"])) for s in reads])
    # A time's distribution from every figure that has it whole, each less its own transfer: the
    # writes of whole units at a boundary (of the unit's size and above), the reads of each size.
    def pooled(names: list[str], rate: float) -> list[float]:
        return [x - (kind_and_size(n)[1] / rate if rate else 0.0) for n in names for x in net[n]]

    # and the path's own spread, at the floor's sleep nearest each of the device's times, taken out
    def spread(names: list[str]) -> Spread | None:
        return floor.spread(names) if floor else None
    writes, read_names = [f"aligned-{s}" for s in whole], [f"read-{s}" for s in reads]
    # A flush the path does not send (a guest's kernel sends none to a write-through disk) took the
    # floor less than half its model's longest sleep: what is left after the floor is taken away is not a flush's
    flushed = "flush" in net and (floor is None or floor.reached("flush"))
    params = {
        "write": deconvolved_pct(pooled(writes, write_mbps), spread(writes)),
        "write-mbps": f"{write_mbps:.0f}" if write_mbps >= 1 else "0",
        "read": deconvolved_pct(pooled(read_names, read_mbps), spread(read_names)),
        "read-mbps": f"{read_mbps:.0f}" if read_mbps >= 1 else "0",
        "flush": deconvolved_pct(net["flush"], spread(["flush"])) if flushed else "fixed:0",
        "write-unit": str(unit),
        "write-buffer": str(unit) if unit and merges and merges.found else "0",
        "channels": "1",
    }
    notes = {
        "write": f"durable writes of whole units at a 64 KiB boundary, {whole[0]} to {whole[-1]} B "
                 f"(n={sum(len(net[n]) for n in writes)}), each less the floor and its bytes at write-mbps",
        "write-mbps": ("the least-squares line of the aligned writes' medians from " f"{whole[0]} B to {whole[-1]} B"
                       if whole else "no aligned sizes") + _rate_said(write_mbps, write_p),
        "read": f"random reads of {' and '.join(map(str, reads))} B (n={sum(len(net[f'read-{s}']) for s in reads)}), "
                f"each less the floor and its bytes at read-mbps",
        "read-mbps": "the 4096- and 65536-byte reads' medians" + _rate_said(read_mbps, read_p),
        "flush": ("a flush after a 4 KiB write that was not durable" if flushed else
                  "assumed: the flushes never reached the floor's model (at its longest sleep they took less than half "
                  "of it: a write-through disk in a guest, to which the kernel sends none): 0" if "flush" in net
                  else "assumed: no flush was measured: 0"),
        "write-unit": ("; ".join(s.said() for s in steps) + (f": the unit is {unit} B" if unit else
                                                             ": no size at which a misaligned write steps up")
                       if steps else "assumed: no misaligned writes were measured: 0"),
        "write-buffer": (merges.said() + ("; one unit is the least that merges it, how far beyond the unit just "
                                          "written is not measured" if params["write-buffer"] != "0" else "")
                         if merges else "assumed: no partial write into the unit just written and none into a cold "
                         "unit after a write were measured (a logical block of a whole unit): 0"),
        "channels": "assumed: no reads at queue depth were measured (a probe at depth 1 alone cannot tell how many "
                    "requests the device serves at once): 1",
    }
    return Fit(summaries, net, unit, steps, reads_first, merges, write_mbps, read_mbps, params, notes)
