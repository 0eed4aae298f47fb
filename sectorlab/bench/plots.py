"""The report's pictures, drawn with matplotlib from the runs' events files: per disk a log-scale
histogram of log file sync and log file parallel write over time (plot_disk), and per comparison
across disks one histogram of both sides (plot_comparison) and the shift function of log file sync
(plot_shift: per quantile of a, the difference b - a of the run medians with its 95 % CI).

matplotlib and numpy are imported inside the functions that draw, as stats.plot does: they are
slow to import and come with the optional 'analysis' extra (pyproject.toml), which reading a
results directory (or refusing one) does not need.
"""

from __future__ import annotations

from pathlib import Path

from . import stats
from .metrics import _LFPW, _LFS, Disk, _first_run


def _sync_ms(events_path: Path):
    """A run's log file sync latencies (ms, clipped at 1 us for the log scale) and its log writes."""
    import numpy as np
    events = stats.read_events(events_path)
    return (np.clip(np.array([p[1] for p in events.get(_LFS, [])]) / 1000, 1e-3, None),
            events.get(_LFPW, []))


def _histogram(series: list[tuple[str, object]], title: str, path: Path) -> Path | None:
    """A log-scale histogram of log file sync, one step line per (label, latencies in ms)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    everything = np.concatenate([sync for _, sync in series])
    if not everything.size:
        return None
    bins = np.logspace(np.log10(everything.min()), np.log10(everything.max() * 1.01), 60)
    fig, ax = plt.subplots(figsize=(6, 4))
    for label, sync in series:
        ax.hist(sync, bins=bins, histtype="step", linewidth=1.5, label=f"{label} (n={len(sync):,})")
    _log_x(ax)
    ax.set(xlabel="log file sync (ms, log scale)", ylabel="commits", title=title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def _log_x(ax) -> None:
    """A log-scale x axis whose ticks are labelled at 1, 2 and 5 of every decade in plain numbers (a
    range within one decade otherwise shows a single "10^0" and no value a reader can use)."""
    from matplotlib.ticker import FuncFormatter, LogLocator
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_minor_locator(LogLocator(base=10, subs=tuple(range(1, 10))))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    ax.xaxis.set_minor_formatter(FuncFormatter(lambda v, _pos: ""))


def plot_disk(disk: Disk, stem: Path) -> list[Path]:
    """Two pictures of a disk's first run at each BLOCKSIZE, from their events files: a log-scale
    histogram of log file sync (as seed 002) and log file parallel write over time (as seed 000);
    STEM-histogram.png and STEM-over-time.png, side by side on a wide screen, one above the other
    on a phone. Empty when no run kept events."""
    runs = [r for r in sorted(disk.runs, key=lambda r: (r.blocksize, r.repeat)) if r.events and r.repeat == 1]
    if not runs:
        return []
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    per_run = [(r, *_sync_ms(r.events)) for r in runs]
    g = disk.entry
    where = f"{disk.name} ({g.get('logical')}/{g.get('physical')} B)"
    hist = _histogram([(f"BLOCKSIZE {r.blocksize}", sync) for r, sync, _ in per_run], f"{where}: commit latency",
                      stem.with_name(f"{stem.name}-histogram.png"))
    if hist is None:
        return []
    fig, ax = plt.subplots(figsize=(6, 4))
    for r, _, writes in per_run:
        ax.scatter([t / 1e6 for t, _ in writes], [lat / 1000 for _, lat in writes], s=3, alpha=0.5,
                   label=f"BLOCKSIZE {r.blocksize} (n={len(writes):,})")
    ax.set_yscale("log")
    ax.set(xlabel="seconds since the run started", ylabel="log file parallel write (ms, log scale)",
           title=f"{where}: log writes over time")
    ax.legend(fontsize=8, markerscale=4)
    fig.tight_layout()
    over_time = stem.with_name(f"{stem.name}-over-time.png")
    fig.savefig(over_time, dpi=90)
    plt.close(fig)
    return [hist, over_time]


def plot_comparison(c: dict, disks: list[Disk], path: Path) -> Path | None:
    """A comparison across disks as one log-scale histogram of both sides' commit latency (the
    first run of each: a picture of one run's shape; the test is on every run), as seed 002 drew
    flash logging on and off."""
    series = []
    for k in ("a", "b"):
        run = _first_run(disks, c[k]["disk"], int(c[k]["blocksize"]))
        if run is None or run.events is None:
            return None
        series.append((f"{c[k]['disk']} at {c[k]['blocksize']}, run {run.repeat}", _sync_ms(run.events)[0]))
    return _histogram(series, "commit latency, one run of each side", path)



def plot_shift(c: dict, path: Path) -> Path | None:
    """The shift function of a comparison (compare.shift): x the quantile of a's log file sync (the
    median of its runs, ms, log scale), y the difference b - a in ms with its 95 % bootstrap CI as
    bars, a line at 0. None when the comparison has no shift function (fewer than 2 runs a side
    with events)."""
    s = c.get("shift")
    if not s:
        return None
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    x, diff, ci = np.array(s["a_ms"]), np.array(s["diff_ms"]), np.array(s["ci_ms"])
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.axhline(0, color="grey", linewidth=1)
    ax.errorbar(np.clip(x, 1e-3, None), diff, yerr=[diff - ci[:, 0], ci[:, 1] - diff], fmt="o-", capsize=3)
    for q, xi, yi in zip(s["quantiles"], x, diff):
        ax.annotate(f"p{round(q * 100)}", (max(xi, 1e-3), yi), textcoords="offset points", xytext=(4, 4), fontsize=7)
    _log_x(ax)
    a, b = (f"{c[k]['disk']}@{c[k]['blocksize']}" if isinstance(c[k], dict) else str(c[k]) for k in ("a", "b"))
    ax.set(xlabel=f"log file sync quantile of {a} (ms, log scale)", ylabel=f"{b} - {a} (ms)",
           title=f"shift function, {s['n'][0]} + {s['n'][1]} runs, 95 % CI")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
