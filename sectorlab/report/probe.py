"""A probe's report (report.md and report-probe.png) from its probe.json.

It opens with the picture a DBA would rather see than read (each write size's median, at a 64 KiB
boundary and 512 B past it, with the medians' 95 % intervals, and redo's two log-write sizes), then
the answer for redo on this device (BLOCKSIZE 512 against 4096: medians, their difference with a
bootstrap interval, Mann-Whitney p, n), what the probe found (the write unit, a read before a partial
write, a merge), every figure's distribution, and the calibrated profile with how each value was
found.
"""

from __future__ import annotations

import math
from pathlib import Path

from ..analysis import plots, stats
from ..errors import UsageError
from ..probe import fit
from ..probe.patterns import kind_and_size
from . import render
from .render import cell, one_line

ALPHA = fit.ALPHA
EXPECTED = "expected the probe.json 'sectorlab probe' writes"
SUMMARY_KEYS = ("median", "median_low", "median_high", "p99", "p999", "max", "floor")
MAX_FIGURES, MAX_SAMPLES, MAX_DEPTHS = 64, 100_000, 16
DEPTH_KEYS = ("mean_us", "p50_us", "p99_us")


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _whole(x, low: int, high: int) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and low <= x <= high


def _texts(x) -> bool:
    return isinstance(x, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in x.items())


def _times(x) -> bool:
    return (isinstance(x, dict) and len(x) <= MAX_FIGURES and all(
        isinstance(k, str) and isinstance(v, list) and len(v) <= MAX_SAMPLES and all(map(_number, v))
        for k, v in x.items()))


def checked(doc: dict, where: Path) -> dict:
    """The record's parts the report reads, each of its type; one line naming the first that is not."""
    wants = {"device": lambda x: isinstance(x, str), "date": lambda x: isinstance(x, str),
             "host": lambda x: isinstance(x, str), "samples": lambda x: isinstance(x, int),
             "seed": lambda x: isinstance(x, int), "unit": lambda x: isinstance(x, int),
             "append_run": lambda x: isinstance(x, int) and 1 <= x <= 1000, "net_us": _times,
             "floor": lambda x: x is None or isinstance(x, str),
             "warmup": lambda x: x is None or (isinstance(x, int) and 0 <= x <= 1000),
             "reads_first": lambda x: x is None or isinstance(x, str),
             "merges": lambda x: x is None or isinstance(x, str),
             "steps": lambda x: isinstance(x, list) and all(isinstance(v, str) for v in x),
             "queue": _texts, "params": _texts, "notes": _texts, "times_us": _times,
             "floor_us": lambda x: x is None or _times(x),
             "depths": lambda x: x is None or (isinstance(x, list) and len(x) <= MAX_DEPTHS and all(
                 isinstance(d, dict) and _whole(d.get("depth"), 1, 1024) and _whole(d.get("n"), 0, 10 ** 9)
                 and all(_number(d.get(f)) for f in DEPTH_KEYS)
                 and (d.get("floor_mean_us") is None or _number(d.get("floor_mean_us"))) for d in x)),
             "channels": lambda x: x is None or (isinstance(x, dict) and isinstance(x.get("said"), str)),
             "summaries": lambda x: isinstance(x, dict) and len(x) <= MAX_FIGURES and all(
                 isinstance(k, str) and isinstance(v, dict) and isinstance(v.get("n"), int)
                 and all(_number(v.get(f)) for f in SUMMARY_KEYS) for k, v in x.items())}
    for key, ok in wants.items():
        if not ok(doc.get(key)):
            raise UsageError(f"{where}: {key} = {stats.shown(doc.get(key))} is not what a probe writes; {EXPECTED}")
    return doc


def redo_answer(doc: dict) -> dict | None:
    """BLOCKSIZE 512 against 4096 on this device, from the appends less the path's own time. The
    appends come in runs (a log writer's stream), whose writes are not independent of each other:
    each run's median is the unit, tested (Mann-Whitney) and resampled (bootstrap) run by run."""
    import numpy as np
    from scipy import stats as sstats
    net, run = doc["net_us"], doc["append_run"]
    if len(net.get("append-512", [])) < 2 * run or len(net.get("append-4096", [])) < 2 * run:
        return None
    a, b = ([float(np.median(xs[i:i + run])) for i in range(0, len(xs) - run + 1, run)]
            for xs in (net["append-512"], net["append-4096"]))
    p = float(sstats.mannwhitneyu(a, b, alternative="two-sided").pvalue)
    boot = sstats.bootstrap((a, b), lambda x, y, axis=-1: np.median(x, axis=axis) - np.median(y, axis=axis),
                            n_resamples=2000, method="percentile", rng=np.random.default_rng(doc["seed"]),
                            vectorized=True)
    low, high = boot.confidence_interval
    return {"m512": float(np.median(a)), "m4096": float(np.median(b)), "diff": float(np.median(a) - np.median(b)),
            "low": float(low), "high": float(high), "p": p, "n": (len(a), len(b)),
            "writes": (len(net["append-512"]), len(net["append-4096"])), "run": run}


def picture(doc: dict, path: Path) -> Path:
    plt = plots.pyplot()
    s = doc["summaries"]
    fig, ax = plt.subplots(figsize=(6, 4))
    for kind, marker in (("aligned", "o"), ("misaligned", "s")):
        sizes = sorted(size for k, size in map(kind_and_size, s) if k == kind and size)
        if not sizes:
            continue
        med = [s[f"{kind}-{z}"]["median"] for z in sizes]
        err = [[m - s[f"{kind}-{z}"]["median_low"] for m, z in zip(med, sizes)],
               [s[f"{kind}-{z}"]["median_high"] - m for m, z in zip(med, sizes)]]
        label = "at a 64 KiB boundary" if kind == "aligned" else "512 B past it"
        ax.errorbar(sizes, med, yerr=err, marker=marker, capsize=3, label=f"durable write {label}")
    for name, style in (("append-512", ":"), ("append-4096", "--")):
        if name in s:
            ax.axhline(s[name]["median"], linestyle=style, color="grey",
                       label=f"redo at BLOCKSIZE {name.split('-')[1]} (appends), median")
    ax.set_xscale("log", base=2)
    ax.set_xticks([512, 1024, 2048, 4096, 8192, 16384, 32768, 65536])
    ax.set_xticklabels(["512", "1K", "2K", "4K", "8K", "16K", "32K", "64K"])
    floor = " less the path's floor" if doc.get("floor") else ""
    ax.set(xlabel="write size (bytes)", ylabel=f"median latency (us){floor}, 95 % CI",
           title=f"{doc['device']}: write latency by size and alignment")
    ax.legend(fontsize=7)
    return plots._save(plots._framed(fig), path)


def _p(p: float) -> str:
    return stats.p_text(p)


def markdown(doc: dict, answer: dict | None) -> str:
    s = doc["summaries"]
    floor = doc.get("floor")
    lines = [f"# Probe: {one_line(doc['device'])}", "",
             "![write latency by size and alignment](report-probe.png)", ""]
    if answer:
        verdict = ("within noise" if answer["p"] >= ALPHA else
                   "BLOCKSIZE 4096 is faster" if answer["diff"] > 0 else "BLOCKSIZE 512 is faster")
        lines += [f"**Redo on this device**: log writes at BLOCKSIZE 512 take {answer['m512']:.1f} us at the median, "
                  f"at 4096 {answer['m4096']:.1f} us: a difference of {answer['diff']:+.1f} us (95 % CI "
                  f"{answer['low']:+.1f} to {answer['high']:+.1f}, bootstrap over runs), Mann-Whitney two-sided "
                  f"{_p(answer['p'])}, n = {answer['n'][0]} and {answer['n'][1]} runs of {answer['run']} appends "
                  f"({answer['writes'][0]} and {answer['writes'][1]} writes; a run's median is the unit): {verdict}"
                  + (" (the path's floor subtracted)." if floor else " (this host's own path included)."), ""]
    unit = doc["unit"]
    lines += ["## What the probe found", "",
              f"- **Write unit**: {f'{unit} B' if unit else 'none found'} ({one_line('; '.join(doc['steps']))}).",
              f"- **A read before a partial write**: {one_line(doc['reads_first'] or 'not measured')}.",
              f"- **A merge into the unit just written**: {one_line(doc['merges'] or 'not measured')}.",
              "- **The floor**: " + (one_line(floor) if floor else "not measured apart: a file or a block device is "
                                     "timed through this host's kernel, whose cost is in every figure") + ".",
              f"- Queue-depth-1 requests, {doc['samples']} a figure, interleaved (seed {doc['seed']}), on "
              f"{one_line(doc['date'])} on {one_line(doc['host'])}; the kernel's queue: "
              + (one_line(", ".join(f"{k} {v}" for k, v in doc["queue"].items() if v)) or "none (an NBD export)")
              + "." + (f" The first {doc['warmup']} requests of each run issued and not timed." if doc.get("warmup")
                       else ""), "",
              "## Every figure (microseconds" + (", less the path's own time" if floor else "") + ")", "",
              "| figure | n | median (95 % CI) | p99 | p99.9 | max | floor median |", "|---|---|---|---|---|---|---|"]
    for name in sorted(s, key=kind_and_size):
        x = s[name]
        lines.append(f"| {cell(name)} | {x['n']} | {x['median']:.1f} ({x['median_low']:.1f}-{x['median_high']:.1f}) | "
                     f"{x['p99']:.1f} | {x['p999']:.1f} | {x['max']:.1f} | {x['floor']:.1f} |")
    if doc.get("depths"):
        lines += ["", "## Queue depths (random 4 KiB reads, microseconds"
                  + (", the path's own time in each" if floor else "") + ")", "",
                  "| depth | n | mean | median | p99 | reads a second (depth / mean) | floor's mean |",
                  "|---|---|---|---|---|---|---|"]
        for d in doc["depths"]:
            shown = "-" if d.get("floor_mean_us") is None else f"{d['floor_mean_us']:.1f}"
            lines.append(f"| {d['depth']} | {d['n']} | {d['mean_us']:.1f} | {d['p50_us']:.1f} | {d['p99_us']:.1f} | "
                         f"{d['depth'] / d['mean_us'] * 1e6 if d['mean_us'] > 0 else 0:,.0f} | {shown} |")
        if doc.get("channels"):
            lines += ["", f"**Requests served at once (channels)**: {one_line(doc['channels']['said'])}"
                      + ("" if floor else " (no floor: this host's own path is in each read's time, and a plateau "
                         "may be its)") + "."]
    lines += ["", "## The calibrated profile (profile.toml)", "", "| parameter | value | how |", "|---|---|---|"]
    for key, value in doc["params"].items():
        # a percentile list breaks after each point (one unbroken token of 16 points widened the
        # column past the page and squeezed the notes beside it into a column a word wide)
        shown = cell(value).replace(",", ", ")
        lines.append(f"| {cell(key)} | {shown} | {cell(doc['notes'].get(key, ''))} |")
    lines += ["", "What a probe cannot tell stays assumed and says so: whether a power cut keeps what the device "
              "acknowledged, whether its cache lies about a flush, and how many requests it serves at once where the "
              "depths reached no plateau the device made (said above as at least so many).", ""]
    return "\n".join(lines)


def write(results: Path) -> dict[str, Path]:
    """report.md, report.html and report-probe.png of probe.json."""
    doc = checked(render.read_results(results, "probe.json", "probe record", EXPECTED), results / "probe.json")
    out = {"png": picture(doc, results / "report-probe.png")}
    return {**render.write(results, markdown(doc, redo_answer(doc))), **out}
