"""Reading redo-writer's results: `sectorlab compare A.json B.json` and `sectorlab plot EVENTS.csv`.

compare prints the two runs side by side with the change in percent and a Welch t-test on the
commit latencies ("log file sync"), from each run's count, mean and standard deviation, the way
the smart flash logging seed compared its runs. plot draws a log-scale latency histogram and the
latency over time from an --events file.
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


def p_text(p: float) -> str:
    """A p-value as the project prints it; below 1e-16 a double cannot tell it from 0."""
    return "p < 1e-16" if p < 1e-16 else f"p = {p:.3g}"


def verdict(p: float, alpha: float) -> str:
    """What a difference with this p-value may be called: a difference is claimed only below alpha."""
    return "significant" if p < alpha else "within noise"


def compare(path_a: Path, path_b: Path) -> tuple[list[list[str]], dict]:
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
