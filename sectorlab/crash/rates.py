"""What a crash cell's runs say, as rates that say what they are (docs/crash.md, "Rates"):

- the **exposure**: the share of a run's time in which a cut finds a write in its window (its bytes
  going onto the medium), exact per run from the model's trace (powerloss.windows);
- the **conditional** rate: the share of cuts drawn inside the windows that did a thing (lost
  acknowledged commits, left a torn block): the cuts are put there on purpose, so that an event
  that needs a cut mid-write gets cuts enough to be measured;
- the rate **per cut** at a uniformly random moment: their product (outside the windows a cut tears
  nothing, so it does nothing: the uniform cuts check that);
- the commits lost per cut at a random moment: the exposure times the commits a window cut lost.

Each over a cell's runs (at least three, each with its own workload seed) as their mean, with a 95 %
interval that takes the **run** as the unit (cuts of one run share its load and timing: they are not
independent trials): Student's t over the runs' own values, widened to the exact (Clopper-Pearson)
interval of the pooled cuts where that is wider (a run-level interval of runs that all saw 0 is 0 to
0, which says nothing of the cuts' number)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass

CONFIDENCE = 0.95


@dataclass(frozen=True)
class Estimate:
    value: float
    low: float
    high: float
    runs: int
    k: int = 0          # pooled events (a share's), 0 for the exposure
    n: int = 0          # pooled cuts (a share's), 0 for the exposure

    def percent(self, digits: int = 1) -> str:
        """'12.3 % (8.1-16.0)'; small values in their own digits ('0.0093 % (0.0021-0.017)')."""
        f = _number(digits)
        return f"{f(100 * self.value)} % ({f(100 * self.low)}-{f(100 * self.high)})"


def _number(digits: int) -> Callable[[float], str]:
    def f(x: float) -> str:
        if x == 0:
            return "0"
        return f"{x:.{digits}f}" if abs(x) >= 10 ** -digits * 10 else f"{x:.2g}"
    return f


def over_runs(values: list[float], k: int = 0, n: int = 0, scale: float = 1.0) -> Estimate:
    """The mean of the runs' values and its 95 % interval, the run as the unit: t over the runs,
    widened to `scale` times the exact binomial interval of k events in n pooled cuts where that is
    wider (n = 0: the runs alone)."""
    from scipy import stats  # here: scipy is slow to import and most commands never need it
    mean = statistics.fmean(values)
    low = high = mean
    if len(values) > 1 and statistics.stdev(values) > 0:
        half = stats.t.ppf(0.5 + CONFIDENCE / 2, len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
        low, high = mean - half, mean + half
    if n:
        ci = stats.binomtest(k, n).proportion_ci(CONFIDENCE, method="exact")
        low, high = min(low, scale * ci.low), max(high, scale * ci.high)
    return Estimate(mean, max(0.0, low), min(1.0, high), len(values), k, n)


@dataclass(frozen=True)
class CellRates:
    exposure: Estimate
    conditional: Estimate          # of the cuts inside the windows
    per_cut: Estimate              # at a uniformly random moment: exposure x conditional, per run
    uniform_k: int                 # the cuts drawn uniformly over the runs that did it, directly
    uniform_n: int
    lost_per_cut: float            # acknowledged commits lost per cut at a random moment (mean over runs)


def of_cell(cell: dict, did: Callable[[dict], bool], shares: dict | None = None) -> CellRates | None:
    """The rates of what `did` says of a cut, over a cell's runs: of its cuts inside the windows at
    the assumed shares, or at the swept `shares` ({name: value}). None: a cell cut at a chosen
    moment only (--at), or not swept at those shares."""
    runs = cell["runs"]
    if shares is None:
        window = [[c for c in cell["cuts"] if c["run"] == r and c["kind"] == "window"] for r in range(len(runs))]
    else:
        window = [[c for c in cell["cuts"] if c["run"] == r and c["kind"] == "sweep" and c["shares"] == shares]
                  for r in range(len(runs))]
    if not all(window):
        return None
    exposure = [r["exposure"] for r in runs]
    conditional = [sum(map(did, w)) / len(w) for w in window]
    k, n = sum(sum(map(did, w)) for w in window), sum(map(len, window))
    uniform = [c for c in cell["cuts"] if c["kind"] == "uniform"]
    lost = [e * statistics.fmean(c["lost_commits"] for c in w) for e, w in zip(exposure, window)]
    return CellRates(over_runs(exposure), over_runs(conditional, k, n),
                     over_runs([e * c for e, c in zip(exposure, conditional)], k, n, scale=statistics.fmean(exposure)),
                     sum(map(did, uniform)), len(uniform), statistics.fmean(lost))


def losing(cut: dict) -> bool:
    return cut["lost_commits"] > 0


def tearing(cut: dict) -> bool:
    return cut["torn_blocks"] > 0
