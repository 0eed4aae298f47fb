"""Reading redo-writer's results, and the statistics the bench report uses.

`sectorlab compare A.json B.json` prints two single runs side by side with the change in percent
and a Welch t-test on their commit latencies ("log file sync", from each run's count, mean and
standard deviation), the way the smart flash logging seed compared its runs. That test treats every
commit as a sample, although the commits of one log write share its latency and one run is one
draw of the run-to-run noise: it describes two runs, it does not test a difference between
configurations. `sectorlab plot` draws a log-scale latency histogram and the latency over time from
an --events file.

The bench report tests one value per run (compare.py): mann_whitney (two-sided), median_shift_ci
(a bootstrap CI of the difference of medians, resampling runs), min_p (the smallest p an exact
Mann-Whitney test can reach for its run counts), bimodal (two modes of a latency distribution on a
log scale) and quantiles. scipy and numpy are imported inside the functions: they are slow to
import.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from .. import inputs
from ..errors import SectorlabError, UsageError

ROWS = [  # (label, path in the report, format)
    ("transactions/s", ("tps",), "{:.1f}"),
    ("redo bytes", ("redo_bytes",), "{:.0f}"),
    ("redo wastage %", ("wastage_pct",), "{:.2f}"),
    ("writes", ("writes",), "{:.0f}"),
    ("writes < 4 KiB", ("writes_under_4k",), "{:.0f}"),
    ("write MB/s", ("write_mb_s",), "{:.3f}"),
    ("log file parallel write mean us", ("log_file_parallel_write", "mean_us"), "{:.1f}"),
    ("log file parallel write p99 us", ("log_file_parallel_write", "p99_us"), "{:.1f}"),
    ("log file sync mean us", ("log_file_sync", "mean_us"), "{:.1f}"),
    ("log file sync p50 us", ("log_file_sync", "p50_us"), "{:.1f}"),
    ("log file sync p99 us", ("log_file_sync", "p99_us"), "{:.1f}"),
    ("log file sync max us", ("log_file_sync", "max_us"), "{:.1f}"),
    ("log file sync > 1 ms %", ("log_file_sync", "over_1ms_pct"), "{:.3f}"),
]


def load_report(path: Path) -> dict:
    try:
        data = json.loads(inputs.read_text(path, "redo-writer report", inputs.REPORT_JSON_MAX))
    except (ValueError, RecursionError) as e:
        raise UsageError(f"{path}: not JSON ({e}); expected a redo-writer --output json report") from e
    if not isinstance(data, dict) or "log_file_sync" not in data or "writes" not in data:
        raise UsageError(f"{path}: no 'log_file_sync' and 'writes': not a redo-writer --output json report")
    return data


def _get(report: dict, path: tuple[str, ...]) -> float:
    value = report
    for key in path:
        value = value[key]
    return float(value)


def welch(a: dict, b: dict, event: str = "log_file_sync", alternative: str = "two-sided") -> dict:
    """Welch's t-test on two runs' latencies of one event ("log_file_sync": commits,
    "log_file_parallel_write": log writes), from their summaries; `alternative` as scipy has it
    ("less": a's mean is below b's)."""
    from scipy import stats
    sa, sb = a[event], b[event]
    if sa["count"] < 2 or sb["count"] < 2:
        raise SectorlabError(f"a Welch t-test needs at least 2 {event} samples in each run "
                             f"(got {sa['count']} and {sb['count']})")
    t, p = stats.ttest_ind_from_stats(sa["mean_us"], sa["stddev_us"], sa["count"],
                                      sb["mean_us"], sb["stddev_us"], sb["count"], equal_var=False,
                                      alternative=alternative)
    return {"t": float(t), "p": float(p), "n": [sa["count"], sb["count"]]}


# The bootstrap's resamples and the constant seed of its generator: the same runs give the same CI.
BOOTSTRAP_RESAMPLES = 9999
BOOTSTRAP_SEED = 20240611


def mann_whitney(a: list[float], b: list[float]) -> float:
    """The two-sided p-value of the Mann-Whitney U test of two samples (one value per run): exact
    when no value repeats; with ties, from the permutation distribution of U (exact while the
    orders of the runs number at most BOOTSTRAP_RESAMPLES, else that many at random with the fixed
    seed), never the normal approximation, which with a few runs gives a p below what the runs can
    show. Two samples of one repeated value give p = 1."""
    import numpy as np
    from scipy import stats as scipy_stats
    values = list(a) + list(b)
    if len(set(values)) == 1:
        return 1.0
    method = "exact" if len(set(values)) == len(values) else scipy_stats.PermutationMethod(
        n_resamples=BOOTSTRAP_RESAMPLES, rng=np.random.default_rng(BOOTSTRAP_SEED))
    return float(scipy_stats.mannwhitneyu(a, b, alternative="two-sided", method=method).pvalue)


def min_p(n_a: int, n_b: int) -> float:
    """The smallest two-sided p an exact Mann-Whitney test can give for n_a and n_b runs: the two
    complete separations out of the C(n_a + n_b, n_a) orders of the runs."""
    from math import comb
    return min(1.0, 2 / comb(n_a + n_b, n_a))


def _bootstrap(samples: tuple, statistic) -> tuple[float, float]:
    """A 95 % percentile bootstrap CI of statistic(*samples, axis), resampling each sample (runs)
    on its own, with the fixed seed; BCa is unstable with a handful of runs."""
    import numpy as np
    from scipy import stats as scipy_stats
    result = scipy_stats.bootstrap(tuple(np.asarray(s, dtype=float) for s in samples), statistic,
                                   n_resamples=BOOTSTRAP_RESAMPLES, method="percentile", vectorized=True,
                                   confidence_level=0.95, rng=np.random.default_rng(BOOTSTRAP_SEED))
    ci = result.confidence_interval
    return float(ci.low), float(ci.high)


def median_shift_ci(a: list[float], b: list[float]) -> tuple[float, float]:
    """The 95 % bootstrap CI of median(b) - median(a), the two samples resampled independently."""
    import numpy as np
    return _bootstrap((a, b), lambda x, y, axis: np.median(y, axis=axis) - np.median(x, axis=axis))


def median_ratio_ci(a: list[float], b: list[float]) -> tuple[float, float]:
    """The 95 % bootstrap CI of median(a) / median(b), the two samples resampled independently."""
    import numpy as np

    def ratio(x, y, axis):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.median(x, axis=axis) / np.median(y, axis=axis)
    return _bootstrap((a, b), ratio)


def median_ci(a: list[float]) -> tuple[float, float]:
    """The 95 % bootstrap CI of the median of one sample (runs)."""
    import numpy as np
    return _bootstrap((a,), lambda x, axis: np.median(x, axis=axis))


QUANTILES = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.99)


def quantiles(latencies: list[float], qs: tuple[float, ...] = QUANTILES) -> list[float]:
    """The quantiles `qs` of one run's latencies (numpy's default, linear interpolation)."""
    import numpy as np
    return [float(v) for v in np.quantile(np.asarray(latencies, dtype=float), qs)]


# bimodal(): the histogram of log10(latency), its smoothing (at least 1.5 bins and 0.05 decade: a
# narrow distribution's 60 bins are otherwise noise), and what makes two peaks two modes.
BIMODAL_BINS, BIMODAL_SMOOTH_BINS, BIMODAL_SMOOTH_DECADES, BIMODAL_PROMINENCE = 60, 1.5, 0.05, 0.05
BIMODAL_MIN_SHARE, BIMODAL_MAX_VALLEY, BIMODAL_MIN_SAMPLES = 0.05, 0.5, 100


def bimodal(latencies: list[float]) -> dict | None:
    """Two modes of a latency distribution, on a log scale: the histogram of log10(latency) in 60
    bins, smoothed (Gaussian, 1.5 bins or 0.05 decade, the wider), its peaks at least 5 % of the
    highest one in prominence; the two most prominent are modes when each side of the lowest bin
    between them holds >= 5 % of the samples and that bin is below half the lower peak (fewer than
    100 samples: None). {"modes": [low, high] (the latency at each
    peak, the samples' unit), "shares": [low, high], "valley": latency at the valley}, else None."""
    import numpy as np
    from scipy.ndimage import gaussian_filter1d
    from scipy.signal import find_peaks
    x = np.log10(np.clip(np.asarray(latencies, dtype=float), 1e-9, None))
    if x.size < BIMODAL_MIN_SAMPLES or x.min() == x.max():
        return None
    counts, edges = np.histogram(x, bins=BIMODAL_BINS)
    sigma = max(BIMODAL_SMOOTH_BINS, BIMODAL_SMOOTH_DECADES / (edges[1] - edges[0]))
    smooth = gaussian_filter1d(counts.astype(float), sigma, mode="constant")
    padded = np.concatenate(([0.0], smooth, [0.0]))  # a peak in the first or last bin counts too
    peaks, props = find_peaks(padded, prominence=BIMODAL_PROMINENCE * smooth.max())
    if len(peaks) < 2:
        return None
    low, high = sorted(peaks[np.argsort(props["prominences"])[-2:]] - 1)
    valley = low + int(np.argmin(smooth[low:high + 1]))
    cut = edges[valley + 1]
    shares = [float(np.mean(x < cut)), float(np.mean(x >= cut))]
    if min(shares) < BIMODAL_MIN_SHARE or smooth[valley] >= BIMODAL_MAX_VALLEY * min(smooth[low], smooth[high]):
        return None
    centre = (edges[:-1] + edges[1:]) / 2
    return {"modes": [float(10 ** centre[low]), float(10 ** centre[high])], "shares": shares,
            "valley": float(10 ** centre[valley])}


def p_text(p: float) -> str:
    """A p-value as the project prints it; below 1e-16 a double cannot tell it from 0."""
    return "p < 1e-16" if p < 1e-16 else f"p = {p:.3g}"


def verdict(p: float, alpha: float) -> str:
    """What a difference with this p-value may be called: a difference is claimed only below alpha."""
    return "significant" if p < alpha else "within noise"


def compare(path_a: Path, path_b: Path) -> tuple[list[list[str]], dict]:
    """Two single runs side by side and welch() on their commits: a description of two runs, not a
    test between configurations (that needs several runs of each: sectorlab report)."""
    a, b = load_report(path_a), load_report(path_b)
    rows = [["", Path(path_a).name, Path(path_b).name, "change"]]
    for label, path, fmt in ROWS:
        va, vb = _get(a, path), _get(b, path)
        change = f"{100.0 * (vb - va) / va:+.1f}%" if va else "-"
        rows.append([label, fmt.format(va), fmt.format(vb), change])
    return rows, welch(a, b)


def read_events(path: Path) -> dict[str, list[tuple[float, float]]]:
    """A redo-writer --events CSV file: per event, (end_us, latency_us) of each; a file that is not
    one is one UsageError line naming the line that is wrong."""
    out: dict[str, list[tuple[float, float]]] = {}
    inputs.check_regular(path, "redo-writer events file", inputs.EVENTS_CSV_MAX)
    reader = None
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.reader(f)
            header = next(reader, None)
            if header != ["event", "end_us", "latency_us"]:
                raise UsageError(f"{path}: header {header}, expected event,end_us,latency_us "
                                 f"(a redo-writer --events file)")
            for row in reader:
                event, end_us, latency_us = row
                out.setdefault(event, []).append((float(end_us), float(latency_us)))
    except OSError as e:
        raise UsageError(f"{path}: {e.strerror}; expected a redo-writer --events CSV file") from e
    except (ValueError, csv.Error) as e:  # a row of another shape, not a number, not UTF-8
        line = reader.line_num if reader is not None else 1
        raise UsageError(f"{path}: line {line}: {str(e)[:120]}; expected event,end_us,latency_us "
                         f"(a redo-writer --events file)") from e
    return out


def plot(events_path: Path, png: Path, title: str | None = None) -> Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    events = read_events(events_path)
    if not events:
        raise SectorlabError(f"{events_path}: no events")
    fig, (hist, scatter) = plt.subplots(1, 2, figsize=(12, 4.5))
    for name, points in sorted(events.items()):
        lat = np.array([p[1] for p in points])
        lat = np.clip(lat, 0.1, None)
        bins = np.logspace(np.log10(lat.min()), np.log10(lat.max() * 1.01), 50)
        hist.hist(lat, bins=bins, histtype="step", label=f"{name.replace('_', ' ')} (n={len(lat)})")
        scatter.scatter([p[0] / 1e6 for p in points], lat, s=2, label=name.replace("_", " "))
    hist.set_xscale("log")
    hist.set_xlabel("latency (us, log scale)")
    hist.set_ylabel("count")
    hist.set_title("latency histogram")
    hist.legend()
    scatter.set_yscale("log")
    scatter.set_xlabel("time since start (s)")
    scatter.set_ylabel("latency (us, log scale)")
    scatter.set_title("latency over time")
    scatter.legend(markerscale=4)
    fig.suptitle(title or Path(events_path).name)
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    plt.close(fig)
    return png
