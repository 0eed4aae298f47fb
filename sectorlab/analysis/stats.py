"""Reading redo-writer's results, and the statistics the bench report uses.

`sectorlab compare A.json B.json` prints two single runs side by side with the change in percent
and a Welch t-test on their commit latencies ("log file sync", from each run's count, mean and
standard deviation), the way the smart flash logging seed compared its runs. That test treats every
commit as a sample, although the commits of one log write share its latency and one run is one
draw of the run-to-run noise: it describes two runs, it does not test a difference between
configurations. read_events reads an --events file (`sectorlab plot` draws it: plots.py).

The bench report tests one value per run (compare.py): mann_whitney (two-sided), median_shift_ci
(a bootstrap CI of the difference of medians, resampling runs), min_p (the smallest p an exact
Mann-Whitney test can reach for its run counts), bimodal (two modes of a latency distribution on a
log scale) and quantiles. scipy and numpy are imported inside the functions: they are slow to
import.
"""

from __future__ import annotations

import csv
import os
import re
import stat
from array import array
from pathlib import Path

from .. import inputs
from ..errors import UsageError
from ..paths import write_atomic

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

# Every number the report computes with is finite and at most 2**63 in size (conform checks it,
# inputs.read_json has refused NaN, Infinity and 1e400): the counters are 64-bit in redo-writer and
# the host, no latency, rate or byte count of a bench comes near, and an integer of hundreds of
# digits would overflow the first float it meets.
NUMBER_MAX = 2 ** 63
# A difference is claimed below ALPHA, and every interval beside a test is at the same level
# (1 - ALPHA): a 99 % CI beside p < 0.01, so the test and its interval answer the same question.
ALPHA = 0.01
CONFIDENCE = 1 - ALPHA
CI_LEVEL = f"{100 * CONFIDENCE:.0f} %"


def load_json(path: Path, what: str, limit: int, expected: str):
    """A JSON file of a results directory through the project's one bounded reader
    (inputs.read_json: regular, within `limit`, no NaN or Infinity); `expected` says what it should
    have been ("expected ...")."""
    return inputs.read_json(path, what, limit, expected.removeprefix("expected "))


# The shapes of what a results directory holds, for conform(): a type (str; int: a whole number;
# float: any number; bool; object: anything), NUMBER and COUNT (a number, a number >= 0), a tuple
# (any of its members; None there allows null), a one-item list (a list of that), a dict (a table:
# a key ending in '?' may be missing, '*' stands for every other key) and the classes below.
NUMBER, COUNT = "a number of at most 2**63", "a number from 0 to 2**63"
SCALAR = (str, float, bool, None)


class Whole:
    """A whole number in [low, high]."""

    def __init__(self, low: int, high: int):
        self.low, self.high = low, high

    def describe(self) -> str:
        return f"a whole number from {self.low} to {self.high}"


class OneOf:
    def __init__(self, *values):
        self.values = values

    def describe(self) -> str:
        return "one of " + ", ".join(map(str, self.values))


class Text:
    """A string of at most `longest` characters; with `line`, no control characters (a name that
    heads a section or a picture)."""

    def __init__(self, longest: int, line: bool = True):
        self.longest, self.line = longest, line

    def describe(self) -> str:
        return f"text of at most {self.longest} characters" + (" on one line" if self.line else "")


class MapOf:
    """A table of any keys, each value of `value`'s shape."""

    def __init__(self, value):
        self.value = value

    def describe(self) -> str:
        return "a table"


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def on_one_line(text: str, longest: int) -> bool:
    """Whether `text` is at most `longest` characters with no control character: a name or a title
    that a line or a picture shows as it is."""
    return len(text) <= longest and not _CONTROL.search(text)


def _describe(schema) -> str:
    if schema is None:
        return "null"
    if isinstance(schema, str):
        return schema
    if isinstance(schema, tuple):
        return " or ".join(_describe(s) for s in schema)
    if isinstance(schema, list):
        return "a list"
    if isinstance(schema, dict):
        return "a table"
    if isinstance(schema, type):
        return {str: "text", int: "a whole number of at most 2**63", float: "a number of at most 2**63",
                bool: "true or false", object: "anything"}[schema]
    return schema.describe()


def _matches(value, schema) -> bool:
    """Whether `value` has the shape's outer form (its insides are checked by conform)."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) <= NUMBER_MAX
    if schema is None:
        return value is None
    if isinstance(schema, tuple):
        return any(_matches(value, s) for s in schema)
    if schema is object:
        return True
    if schema is bool:
        return isinstance(value, bool)
    if schema is int:
        return number and isinstance(value, int)
    if schema in (float, NUMBER):
        return number
    if schema == COUNT:
        return number and value >= 0
    if schema is str:
        return isinstance(value, str)
    if isinstance(schema, Text):
        return isinstance(value, str) and (on_one_line(value, schema.longest) if schema.line
                                           else len(value) <= schema.longest)
    if isinstance(schema, Whole):
        return number and isinstance(value, int) and schema.low <= value <= schema.high
    if isinstance(schema, OneOf):
        return not isinstance(value, bool) and value in schema.values
    if isinstance(schema, list):
        return isinstance(value, list)
    return isinstance(value, dict)  # a dict schema or a MapOf


def shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _key(field: str, key) -> str:
    """A table's key in a field's name: as it is when it is a plain name, else quoted (a key of
    JSON may hold a line break or be of any length)."""
    text = key if isinstance(key, str) and re.fullmatch(r"[\w.@-]{1,64}", key, re.ASCII) else shown(key)
    return f"{field}.{text}" if field else text


def conform(value, schema, source: str, expected: str, field: str = "") -> None:
    """`value` (read from JSON in `source`) has `schema`'s shape, or one UsageError line names the
    first field where it does not, what is there and what was expected."""
    if not _matches(value, schema):
        raise UsageError(f"{source}: {field + ' ' if field else ''}{shown(value)} is not {_describe(schema)}; "
                         f"{expected}")
    if isinstance(schema, tuple):
        schema = next(s for s in schema if _matches(value, s))
    if isinstance(schema, list):
        for i, item in enumerate(value):
            conform(item, schema[0], source, expected, f"{field}[{i}]")
    elif isinstance(schema, MapOf):
        for key, item in value.items():
            conform(item, schema.value, source, expected, _key(field, key))
    elif isinstance(schema, dict):
        for key, sub in schema.items():
            name = key.rstrip("?")
            if key == "*":
                for other, item in value.items():
                    if other not in schema and f"{other}?" not in schema:
                        conform(item, sub, source, expected, _key(field, other))
            elif name in value:
                conform(value[name], sub, source, expected, _key(field, name))
            elif not key.endswith("?"):
                raise UsageError(f"{source}: {field + ': ' if field else ''}no '{name}'; {expected}")


# A redo-writer --output json report: what the report, compare and the metrics read of it.
_EVENT = {k: COUNT for k in ("count", "mean_us", "stddev_us", "p50_us", "p99_us", "max_us", "over_1ms_pct",
                             "over_10ms_pct", "over_20ms_pct")} | {"p99_9_us?": (COUNT, None)}
REPORT = {**{k: COUNT for k in ("tps", "elapsed_s", "transactions", "redo_bytes", "wastage_pct", "writes",
                                "writes_under_4k", "write_mb_s", "bytes_written")},
          "log_file_sync": _EVENT, "log_file_parallel_write": _EVENT, "commit_response?": (_EVENT, None),
          "members?": ([{"path": str, "wins?": (COUNT, None),
                         "device?": (None, {"avg_request_bytes?": (COUNT, None)})}], None),
          "offered_rate?": (COUNT, None), "achieved_rate?": (COUNT, None), "kept_up?": (bool, None),
          "arrival?": (str, None), "commits_per_write?": (COUNT, None),
          "cpu_measured?": (None, {"sessions_us_per_txn?": (COUNT, None), "log_writer_us_per_write?": (COUNT, None)})}
_REPORT_EXPECTED = "expected a redo-writer --output json report"


def load_report(path: Path) -> dict:
    data = load_json(path, "redo-writer report", inputs.REPORT_JSON_MAX, _REPORT_EXPECTED)
    if not isinstance(data, dict) or "log_file_sync" not in data or "writes" not in data:
        raise UsageError(f"{path}: no 'log_file_sync' and 'writes': not a redo-writer --output json report")
    conform(data, REPORT, str(path), _REPORT_EXPECTED)
    return data


def write_file(path: Path, data: str | bytes) -> Path:
    """A file sectorlab writes into a directory it was given: whole, never through a symbolic link
    or into a FIFO or device in its place (paths.write_atomic); a directory that is not there or
    not writable is one UsageError line."""
    path = Path(path)
    try:
        write_atomic(path, data)
    except OSError as e:
        raise UsageError(f"{path}: {e.strerror or e}; expected a file in a directory sectorlab may write "
                         f"(does {path.parent} exist?)") from e
    return path


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
        raise UsageError(f"a Welch t-test needs at least 2 {event} samples in each run "
                         f"(got {sa['count']} and {sb['count']}); expected runs of more than one commit")
    if sa["stddev_us"] == 0 and sb["stddev_us"] == 0:
        raise UsageError(f"{event} has a standard deviation of 0 in both runs: a t-test has nothing to weigh "
                         f"the difference of the means against; expected runs whose latencies vary")
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


def holm(ps: list[float]) -> list[float]:
    """Holm's step-down adjustment of a family of p-values (each comparison's primary test of one
    preset), in the given order: the k-th smallest times (m - k + 1), never below the one before,
    at most 1. A difference is claimed where the adjusted p is below ALPHA, which keeps the chance
    of any false claim in the family at ALPHA. (scipy has Benjamini-Hochberg only, and statsmodels'
    multipletests would bring pandas for these lines.)"""
    m = len(ps)
    order = sorted(range(m), key=lambda i: ps[i])
    out, running = [0.0] * m, 0.0
    for k, i in enumerate(order):
        running = max(running, min(1.0, (m - k) * ps[i]))
        out[i] = running
    return out


def min_p(n_a: int, n_b: int) -> float:
    """The smallest two-sided p an exact Mann-Whitney test can give for n_a and n_b runs: the two
    complete separations out of the C(n_a + n_b, n_a) orders of the runs."""
    from math import comb
    return min(1.0, 2 / comb(n_a + n_b, n_a))


def _bootstrap(samples: tuple, statistic) -> tuple[float, float]:
    """A CONFIDENCE (99 %) percentile bootstrap CI of statistic(*samples, axis), resampling each sample (runs)
    on its own, with the fixed seed; BCa is unstable with a handful of runs."""
    import numpy as np
    from scipy import stats as scipy_stats
    result = scipy_stats.bootstrap(tuple(np.asarray(s, dtype=float) for s in samples), statistic,
                                   n_resamples=BOOTSTRAP_RESAMPLES, method="percentile", vectorized=True,
                                   confidence_level=CONFIDENCE, rng=np.random.default_rng(BOOTSTRAP_SEED))
    ci = result.confidence_interval
    return float(ci.low), float(ci.high)


def median_shift_ci(a: list[float], b: list[float]) -> tuple[float, float]:
    """The CONFIDENCE bootstrap CI of median(b) - median(a), the two samples resampled independently."""
    import numpy as np
    return _bootstrap((a, b), lambda x, y, axis: np.median(y, axis=axis) - np.median(x, axis=axis))


def median_ratio_ci(a: list[float], b: list[float]) -> tuple[float, float]:
    """The CONFIDENCE bootstrap CI of median(a) / median(b), the two samples resampled independently."""
    import numpy as np

    def ratio(x, y, axis):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.median(x, axis=axis) / np.median(y, axis=axis)
    return _bootstrap((a, b), ratio)


def median_ci(a: list[float]) -> tuple[float, float]:
    """The CONFIDENCE bootstrap CI of the median of one sample (runs)."""
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


# An events file's bounds beyond its size (inputs.EVENTS_CSV_MAX): redo-writer writes three events
# (log_file_sync, log_file_parallel_write, commit_response), so 16 names leave room and keep a
# picture's legend readable (3,000 names took over a minute to draw); a name is an identifier of at
# most 64 characters; a time or latency is 0 to 1e15 us (31 years).
EVENT_NAMES_MAX = 16
EVENT_NAME_MAX = 64
EVENT_US_MAX = 1e15
_EVENTS_EXPECTED = "expected event,end_us,latency_us (a redo-writer --events file)"


class Events(dict):
    """A redo-writer --events file: per event name, its (end_us, latency_us) pairs as two arrays of
    doubles (16 bytes an event, where a list of tuples takes 112)."""

    def pairs(self, name: str) -> list[tuple[float, float]]:
        ends, lats = self.get(name, (array("d"), array("d")))
        return list(zip(ends, lats))

    def latencies(self, name: str) -> array:
        return self[name][1] if name in self else array("d")

    def ends(self, name: str) -> array:
        return self[name][0] if name in self else array("d")


def _open_events(path: Path):
    """The events file opened for reading as text: a regular file of at most the bound, checked on
    the open file (a FIFO put in its place after a check is not waited on)."""
    inputs.check_regular(path, "redo-writer events file", inputs.EVENTS_CSV_MAX)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UsageError(f"{path}: not a regular file any more; {_EVENTS_EXPECTED}")
    return os.fdopen(fd, encoding="utf-8", newline="")


def _lines(f, path: Path):
    """The file's lines, each read at most 4 KiB at a time (a row of an events file is under 100
    bytes), and not past the events file's bound if it grows while it is read."""
    total = 0
    while True:
        line = f.readline(4096)
        if not line:
            return
        total += len(line)
        if total > inputs.EVENTS_CSV_MAX:
            raise UsageError(f"{path}: grew past the bound of an events file while it was read; {_EVENTS_EXPECTED}")
        yield line


def read_events(path: Path) -> Events:
    """A redo-writer --events CSV file: per event, the end times and the latencies (us) of each; a
    file that is not one is one UsageError line naming the line that is wrong."""
    out = Events()
    reader = None
    try:
        with _open_events(path) as f:
            reader = csv.reader(_lines(f, path))
            header = next(reader, None)
            if header != ["event", "end_us", "latency_us"]:
                raise UsageError(f"{path}: header {str(header)[:80]}, {_EVENTS_EXPECTED}")
            for row in reader:
                event, end_us, latency_us = row
                pair = out.get(event)
                if pair is None:
                    if (len(out) >= EVENT_NAMES_MAX or not event or len(event) > EVENT_NAME_MAX
                            or _CONTROL.search(event)):
                        raise ValueError(f"event {event[:EVENT_NAME_MAX]!r}: at most {EVENT_NAMES_MAX} event names "
                                         f"of 1 to {EVENT_NAME_MAX} characters on one line are read")
                    pair = out[event] = (array("d"), array("d"))
                end, latency = float(end_us), float(latency_us)
                if not (0 <= end <= EVENT_US_MAX and 0 <= latency <= EVENT_US_MAX):  # also refuses nan
                    raise ValueError(f"end_us {end_us[:30]}, latency_us {latency_us[:30]}: expected 0 to "
                                     f"{EVENT_US_MAX:g}")
                pair[0].append(end)
                pair[1].append(latency)
    except OSError as e:
        raise UsageError(f"{path}: {e.strerror}; expected a redo-writer --events CSV file") from e
    except (ValueError, csv.Error) as e:  # a row of another shape, not a number, not UTF-8
        line = reader.line_num if reader is not None else 1
        raise UsageError(f"{path}: line {line}: {str(e)[:160]}; {_EVENTS_EXPECTED}") from e
    return out
