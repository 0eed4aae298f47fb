"""The pictures, drawn with matplotlib from the runs' events files (read by stats.read_events). The
report's: per disk a log-scale histogram of log file sync and log file parallel write over time
(plot_disk), and per comparison across disks one histogram of both sides (plot_comparison) and the
shift function of log file sync (plot_shift: per quantile of a, the difference b - a of the run
medians with its 99 % CI). `sectorlab plot`'s (plot_events): a log-scale latency histogram and the
latency over time of every event of one --events file.

matplotlib and numpy are imported inside the functions that draw: they are slow to import and
come with the optional 'analysis' extra (pyproject.toml), which reading a results directory (or
refusing one) does not need.

Every text of a picture is drawn as it is: pyplot() turns matplotlib's mathtext off for every figure,
so a disk name, a title or an event name with '$' in it is neither formatted nor an error. Every
picture is written whole by stats.write_file, never through a symbolic link in its place.
"""

from __future__ import annotations

import functools
import io
from pathlib import Path

from ..errors import UsageError
from . import stats
from .metrics import LFPW, LFS, Disk, first_run


def pyplot():
    """matplotlib.pyplot on the Agg backend, with text drawn as plain text: `text.parse_math` off, so
    that no string from a results directory or the command line is parsed as mathtext."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    matplotlib.rcParams["text.parse_math"] = False
    matplotlib.rcParams["text.usetex"] = False
    # A title at a fixed height: matplotlib otherwise measures the x axis's whole tick layout at every
    # draw to lift the title above tick labels on top, and no picture here has any there.
    matplotlib.rcParams["axes.titley"] = 1.0
    return plt


def figure_bytes(fig, path: Path, dpi: int = 90) -> bytes:
    """The figure as the file `path` names (its suffix the format; none: PNG), in memory; closed."""
    plt = pyplot()
    fmt = Path(path).suffix[1:].lower() or "png"
    try:
        if fmt not in fig.canvas.get_supported_filetypes():
            raise UsageError(f"{path}: '.{fmt}' is not a picture format matplotlib writes; expected one of "
                                   f"{', '.join(sorted(fig.canvas.get_supported_filetypes()))}")
        out = io.BytesIO()
        fig.savefig(out, format=fmt, dpi=dpi)
        return out.getvalue()
    finally:
        plt.close(fig)


# The report's 6 x 4 in pictures keep fixed margins, wide enough for their labels: a tick label of up
# to six characters ("0.0005") with the axis label beside it in up to two lines, a title of up to two
# lines above. matplotlib's tight_layout would lay out every tick once to measure it and again to
# draw (a third of each picture's time), and it neither wraps a long title nor keeps a long axis
# label inside the picture: _framed wraps them.
_MARGINS = {"left": 0.16, "right": 0.97, "bottom": 0.12, "top": 0.87}
_TITLE_CHARS, _YLABEL_CHARS = 60, 44


def _framed(fig):
    import textwrap
    for ax in fig.axes:
        ax.set_title(textwrap.fill(ax.get_title(), _TITLE_CHARS, break_on_hyphens=False), fontsize=11)
        ax.set_ylabel(textwrap.fill(ax.get_ylabel(), _YLABEL_CHARS, break_on_hyphens=False))
    fig.subplots_adjust(**_MARGINS)
    return fig


def _save(fig, path: Path) -> Path:
    return stats.write_file(path, figure_bytes(fig, path))


def _sync_ms(events_path: Path):
    """A run's log file sync latencies (ms, clipped at 1 us for the log scale) and its log writes
    (end times and latencies, us)."""
    import numpy as np
    events = stats.read_events(events_path)
    return (np.clip(np.frombuffer(events.latencies(LFS), dtype=float) / 1000, 1e-3, None),
            (np.frombuffer(events.ends(LFPW), dtype=float), np.frombuffer(events.latencies(LFPW), dtype=float)))


def _histogram(series: list[tuple[str, object]], title: str, path: Path) -> Path | None:
    """A log-scale histogram of log file sync, one step line per (label, latencies in ms)."""
    import numpy as np
    plt = pyplot()

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
    return _save(_framed(fig), path)


def log_axis(ax, which: str) -> None:
    """A log-scale axis of `ax` ("x" or "y") whose ticks are labelled at 1, 2 and 5 of every
    decade in plain numbers: a range within one decade otherwise shows a single "10^0" and no value
    a reader can use, and matplotlib's own labels of a log axis are mathtext, which pyplot() turns
    off."""
    from matplotlib.ticker import FuncFormatter, NullFormatter
    getattr(ax, f"set_{which}scale")("log")
    axis = getattr(ax, f"{which}axis")
    axis.set_major_locator(_in_view(subs=(1.0, 2.0, 5.0)))
    axis.set_minor_locator(_in_view(subs=(3.0, 4.0, 6.0, 7.0, 8.0, 9.0)))  # the others are major
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def _in_view(subs: tuple[float, ...]):
    """A decade locator at `subs` that gives only the ticks inside the axis's view. matplotlib's
    LogLocator also gives a decade below the view and two above, and the axis makes a tick (two
    lines and two texts) for each before it draws only those in view: the same picture, made with a
    third of the ticks (the report's pictures took half their time making ticks)."""
    return _in_view_locator()(base=10, subs=subs)


@functools.cache
def _in_view_locator():
    """The locator class of _in_view, made once (matplotlib is imported only when a picture is drawn)."""
    from matplotlib.ticker import LogLocator

    class InView(LogLocator):
        def tick_values(self, vmin, vmax):
            low, high = sorted((vmin, vmax))
            ticks = super().tick_values(vmin, vmax)
            return ticks[(ticks >= low * (1 - 1e-6)) & (ticks <= high * (1 + 1e-6))]  # a superset of those drawn

    return InView


def _log_x(ax) -> None:
    log_axis(ax, "x")


def plot_disk(disk: Disk, stem: Path) -> list[Path]:
    """Two pictures of a disk's first run at each BLOCKSIZE, from their events files: a log-scale
    histogram of log file sync (as seed 002) and log file parallel write over time (as seed 000);
    STEM-histogram.png and STEM-over-time.png, side by side on a wide screen, one above the other
    on a phone. Empty when no run kept events."""
    runs = [r for r in sorted(disk.runs, key=lambda r: (r.blocksize, r.repeat)) if r.events and r.repeat == 1]
    if not runs:
        return []
    plt = pyplot()

    per_run = [(r, *_sync_ms(r.events)) for r in runs]
    g = disk.entry
    where = f"{disk.name} ({g.get('logical')}/{g.get('physical')} B)"
    hist = _histogram([(f"BLOCKSIZE {r.blocksize}", sync) for r, sync, _ in per_run],
                      f"{where}: commit latency (guest path)", stem.with_name(f"{stem.name}-histogram.png"))
    if hist is None:
        return []
    fig, ax = plt.subplots(figsize=(6, 4))
    for r, _, (ends, lats) in per_run:
        ax.scatter(ends / 1e6, lats / 1000, s=3, alpha=0.5, label=f"BLOCKSIZE {r.blocksize} (n={len(lats):,})")
    if any(len(lats) for _, _, (_, lats) in per_run):
        log_axis(ax, "y")
    ax.set(xlabel="seconds since the run started", ylabel="log file parallel write (ms, log scale)",
           title=f"{where}: log writes over time (guest path)")
    ax.legend(fontsize=8, markerscale=4)
    return [hist, _save(_framed(fig), stem.with_name(f"{stem.name}-over-time.png"))]


def plot_comparison(c: dict, disks: list[Disk], path: Path) -> Path | None:
    """A comparison across disks as one log-scale histogram of both sides' commit latency (the
    first run of each: a picture of one run's shape; the test is on every run), as seed 002 drew
    flash logging on and off."""
    series = []
    for k in ("a", "b"):
        run = first_run(disks, c[k]["disk"], int(c[k]["blocksize"]))
        if run is None or run.events is None:
            return None
        series.append((f"{c[k]['disk']} at {c[k]['blocksize']}, run {run.repeat}", _sync_ms(run.events)[0]))
    return _histogram(series, "commit latency, one run of each side (guest path)", path)


def plot_shift(c: dict, path: Path) -> Path | None:
    """The shift function of a comparison (compare.shift): x the quantile of a's log file sync (the
    median of its runs, ms, log scale), y the difference b - a in ms with its 99 % bootstrap CI as
    bars, a line at 0. None when the comparison has no shift function (fewer than 2 runs a side
    with events)."""
    s = c.get("shift")
    if not s:
        return None
    import numpy as np
    plt = pyplot()

    x, diff, ci = np.array(s["a_ms"]), np.array(s["diff_ms"]), np.array(s["ci_ms"])
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.axhline(0, color="grey", linewidth=1)
    ax.errorbar(np.clip(x, 1e-3, None), diff, yerr=[diff - ci[:, 0], ci[:, 1] - diff], fmt="o-", capsize=3)
    for q, xi, yi in zip(s["quantiles"], x, diff):
        ax.annotate(f"p{round(q * 100)}", (max(xi, 1e-3), yi), textcoords="offset points", xytext=(4, 4), fontsize=7)
    _log_x(ax)
    a, b = (f"{c[k]['disk']}@{c[k]['blocksize']}" if isinstance(c[k], dict) else str(c[k]) for k in ("a", "b"))
    ax.set(xlabel=f"log file sync quantile of {a} (ms, log scale)", ylabel=f"{b} - {a} (ms)",
           title=f"shift function (guest path), {s['n'][0]} + {s['n'][1]} runs, {stats.CI_LEVEL} CI")
    return _save(_framed(fig), path)


def plot_crash(rows: list[dict], path: Path) -> Path:
    """The crash report's first picture: per cell (rows: label, by_rule, and per measure a (value,
    low, high) or None), two panels side by side with their 95 % intervals: a power cut at a random
    moment (left) and a cut inside a write's window (right), each the share that lost acknowledged
    commits (filled) and that left torn blocks (open). A cell that cannot lose by rule says so."""
    plt = pyplot()
    n = len(rows)
    fig, axes = plt.subplots(1, 2, figsize=(12, 1.6 + 0.32 * n), sharey=True)
    ys = list(range(n))[::-1]
    for ax, key, title in ((axes[0], "per_cut", "a power cut at a random moment"),
                           (axes[1], "conditional", "a cut inside a write's window")):
        for y, r in zip(ys, rows):
            for what, marker, fill, dy in (("lose", "o", None, 0.12), ("tear", "s", "none", -0.12)):
                got = r[what][key]
                if got is None:
                    continue
                v, lo, hi = (100 * x for x in got)
                ax.errorbar([v], [y + dy], xerr=[[v - lo], [hi - v]], fmt=marker, color="C3" if what == "lose"
                            else "C0", mfc=fill, capsize=2, markersize=5)
            if r["by_rule"]:
                ax.annotate("cannot lose, by rule", (0, y + 0.12), textcoords="offset points", xytext=(4, -3),
                            fontsize=7, color="grey")
        ax.set_xlim(left=0)
        ax.set_xlabel(f"% of cuts: {title}")
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(ys, [r["label"] for r in rows], fontsize=8)
    axes[0].set_ylim(-0.7, n - 0.3)
    axes[1].plot([], [], "o", color="C3", label="lost acknowledged commits")
    axes[1].plot([], [], "s", color="C0", mfc="none", label="left torn blocks (the checksum found)")
    height = 1.6 + 0.32 * n
    fig.set_size_inches(12, height)
    fig.suptitle("power cuts: shares of cuts with their 95 % intervals (the run as the unit)", fontsize=11)
    fig.legend(loc="upper center", ncol=2, fontsize=8, frameon=False, bbox_to_anchor=(0.6, 1 - 0.35 / height))
    fig.subplots_adjust(left=0.25, right=0.98, bottom=0.65 / height, top=1 - 0.75 / height, wspace=0.08)
    return _save(fig, path)


def plot_findings(items: list[dict], device_path: str, path: Path) -> Path | None:
    """A bench report's first picture: per comparison (headlines.headlines' items), its primary
    metric's b over a (the ratio of the medians, on a log scale, so that 0.5x and 2x are as far from
    1x) with its 99 % CI, on the guest path (circles) and the device path (squares, named
    `device_path`: its clock); a filled marker is significant, an open one within noise or unclear.
    None when no comparison was tested on either path."""
    # numbered as the text numbers them: by place among all the comparisons, drawn or not
    rows = [{**h, "title": h.get("title") or f"comparison {i}"} for i, h in enumerate(items, 1)
            if not h.get("not_compared") and (h.get("guest") or h.get("device"))]
    drawn = []
    for h in rows:
        for key in ("guest", "device"):
            line = h.get(key)
            a = line["medians"][0] if line else None
            if line and a and line["medians"][1] and a + line["ci"][0] > 0:
                drawn.append((h, key, line, line["medians"][1] / a, (a + line["ci"][0]) / a,
                              (a + line["ci"][1]) / a))
    if not drawn:
        return None
    import textwrap
    plt = pyplot()
    n = len(rows)
    height = 1.9 + 0.75 * n
    fig, ax = plt.subplots(figsize=(9, height))
    ys = {id(h): y for h, y in zip(rows, range(n - 1, -1, -1))}
    ax.axvline(1, color="grey", linewidth=1)
    for h, key, line, v, lo, hi in drawn:
        marker, colour, dy = ("o", "C0", 0.15) if key == "guest" else ("s", "C1", -0.15)
        y = ys[id(h)] + dy
        ax.errorbar([v], [y], xerr=[[max(v - lo, 0)], [max(hi - v, 0)]], fmt=marker, color=colour, capsize=3,
                    mfc=colour if line["verdict"] == "significant" else "none", markersize=6)
        ax.annotate(f"{v:.2f}x ({line['change_pct']:+.1f} %)", (v, y), textcoords="offset points", xytext=(0, 6),
                    fontsize=7, ha="center", color=colour)
    log_axis(ax, "x")
    low = min(lo for *_, lo, _ in drawn)
    high = max(hi for *_, hi in drawn)
    ax.set_xlim(min(low, 1) / 1.5, max(high, 1) * 1.6)  # room for the labels at either end
    labels = [textwrap.fill(str(h["title"]), 42, break_on_hyphens=False) for h in rows]
    ax.set_yticks(list(range(n - 1, -1, -1)), labels, fontsize=8)
    ax.set_ylim(-0.6, n - 0.4)
    ax.grid(axis="x", alpha=0.3)
    ax.set_xlabel("primary metric, b over a (ratio of the medians, log scale; below 1: b is faster)")
    if any(key == "guest" for _, key, *_ in drawn):   # a closed loop has no guest path to name
        ax.plot([], [], "o", color="C0", label="guest path")
    ax.plot([], [], "s", color="C1", label=device_path)
    ax.plot([], [], "o", color="grey", mfc="none", label="open: within noise")
    fig.suptitle(f"each comparison with its {stats.CI_LEVEL} CI (filled: significant after Holm)", fontsize=11)
    fig.legend(loc="upper center", ncol=3, fontsize=8, frameon=False, bbox_to_anchor=(0.62, 1 - 0.4 / height))
    fig.subplots_adjust(left=0.36, right=0.97, bottom=0.75 / height, top=1 - 0.8 / height)
    return _save(fig, path)


TITLE_MAX = 200


def plot_events(events_path: Path, out: Path, title: str | None = None) -> Path:
    """`sectorlab plot`: a log-scale latency histogram and the latency over time of every event of
    an --events file, into `out` (its suffix names the format: png, svg, pdf, ...)."""
    if title is not None and not stats.on_one_line(title, TITLE_MAX):
        raise UsageError(f"--title {title[:40]!r}...: expected one line of at most {TITLE_MAX} characters")
    events = stats.read_events(events_path)
    if not any(len(lats) for _, lats in events.values()):
        raise UsageError(f"{events_path}: no events; expected a redo-writer --events file of a run that wrote")
    import numpy as np
    plt = pyplot()
    fig, (hist, scatter) = plt.subplots(1, 2, figsize=(12, 4.5))
    for name in sorted(events):
        ends, lat = (np.frombuffer(a, dtype=float) for a in events[name])
        lat = np.clip(lat, 0.1, None)
        bins = np.logspace(np.log10(lat.min()), np.log10(lat.max() * 1.01), 50)
        hist.hist(lat, bins=bins, histtype="step", label=f"{name.replace('_', ' ')} (n={len(lat)})")
        scatter.scatter(ends / 1e6, lat, s=2, label=name.replace("_", " "))
    log_axis(hist, "x")
    hist.set_xlabel("latency (us, log scale)")
    hist.set_ylabel("count")
    hist.set_title("latency histogram")
    hist.legend()
    log_axis(scatter, "y")
    scatter.set_xlabel("time since start (s)")
    scatter.set_ylabel("latency (us, log scale)")
    scatter.set_title("latency over time")
    scatter.legend(markerscale=4)
    fig.suptitle(title or Path(events_path).name)
    fig.tight_layout()
    return stats.write_file(out, figure_bytes(fig, out, dpi=100))
