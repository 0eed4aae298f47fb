"""`sectorlab probe TARGET`: a pilot, the bound checked, the probe, the floor, the fit, the results.

The pilot (PILOT_SAMPLES a figure, on the probe's own file or the device) gives the mean time of a
request; a probe whose requests would take longer than max_seconds is refused before it starts,
naming both. Results go to results/<time>-probe-NAME/: probe.json (every figure's times and
summaries, the fit, the device and its queue), profile.toml (the calibrated profile), report.md and
report-probe.png.
"""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path

from .. import paths
from ..devices import build
from ..errors import UsageError
from . import depth as depths
from . import fit as fitting
from . import measure, patterns, profile, target

PILOT_SAMPLES = 3
DEFAULT_SAMPLES = 100


def _write_cache(t: target.Target) -> tuple[str, str]:
    """The profile's write_cache and its source, from the kernel's queue/write_cache."""
    said = t.queue.get("write_cache", "")
    if said == "write back":
        return "volatile", f"measured: the kernel's queue/write_cache of {t.device} says write back"
    if said == "write through":
        return "none", (f"assumed: the kernel's queue/write_cache of {t.device} says write through, which is no "
                        "cache or a power-loss protected one: a probe cannot tell them apart")
    return "none", "assumed: the path gives no word of a write cache (an NBD export): none taken"


def run(given: str, *, samples: int, seed: int, name: str, results_root: Path | str, destroy_data: bool,
        max_seconds: float, progress) -> Path:
    t = target.resolve(given, destroy_data)
    logical = t.logical
    need = patterns.needed_bytes(samples, logical)
    pilot_need = patterns.needed_bytes(PILOT_SAMPLES, logical)
    build.built(build.REDO_WRITER)  # what issues the requests, made (or one line why not) before anything is written
    depths.require_fio(t.kind == "nbd")  # and what reads at the queue depths
    try:
        size = target.block_size(t) if t.kind == "block" else None
        if size is not None and size < need + pilot_need:
            raise UsageError(f"probe target {given} has {size >> 20} MiB: {samples} samples a figure and the pilot "
                             f"need {(need + pilot_need) >> 20} MiB; give fewer --samples")
        target.prepare(t, need + pilot_need)
        pilot = patterns.layout(PILOT_SAMPLES, logical, pilot_need, seed + 1, base=need)  # past the probe's own
        started = time.monotonic()
        measure.run(t.path, pilot, max_seconds)
        per_request = (time.monotonic() - started) / len(pilot.requests)
        layout = patterns.layout(samples, logical, need, seed)
        reads = depths.samples(samples)
        # the depths' reads at no more than a depth-1 request's time each (deeper, the device serves more
        # at once or as many), on the floor too for an NBD export
        at_depths = per_request * reads * len(depths.DEPTHS) * (2 if t.kind == "nbd" else 1)
        projected = (per_request * len(layout.requests) + at_depths
                     + (measure.floor_seconds(layout) if t.kind == "nbd" else 0))
        if projected > max_seconds:
            raise UsageError(f"the probe of {given} would take about {projected:.0f} s ({len(layout.requests)} "
                             f"requests and {reads} reads at each of {len(depths.DEPTHS)} queue depths, at "
                             f"{per_request * 1e3:.2f} ms, the pilot's mean): over --max-seconds "
                             f"{max_seconds:.0f}; give fewer --samples or a larger --max-seconds")
        progress(f"probe: {len(layout.requests)} requests on {t.device}, about {projected:.0f} s")
        if t.kind == "nbd":
            times, floors = measure.with_floor(t.path, layout, max_seconds)
        else:
            times, floors = measure.run(t.path, layout, max_seconds), None
        progress(f"probe: random {depths.SIZE} B reads at queue depths {', '.join(map(str, depths.DEPTHS))}, "
                 f"{reads} each" + (" (and on a floor model)" if t.kind == "nbd" else ""))
        deep = (depths.with_floor if t.kind == "nbd" else depths.measured)(t.path, reads, need, seed, max_seconds)
    finally:
        target.cleanup(t)
    channels = depths.channels(deep)
    found = depths.into(fitting.fit(times.us, floors, logical), channels, reads,
                        "" if t.kind == "nbd" else depths.NO_FLOOR)
    date = time.strftime("%Y-%m-%d")
    cache, cache_source = _write_cache(t)
    description = (f"{t.device}, probed by sectorlab probe on {date} ({samples} samples a figure at queue depth 1, "
                   f"{reads} reads at each of depths {', '.join(map(str, depths.DEPTHS))}"
                   + (", the floor's model subtracted)" if floors else ", this host's own path not subtracted)"))
    entry = profile.entry(found, t.device, date, cache, cache_source, description)
    results = paths.new_results_dir(results_root, f"probe-{name}")
    profile.write(results / "profile.toml", name, entry)
    doc = {"target": given, "kind": t.kind, "device": t.device, "queue": t.queue, "logical": logical,
           "samples": samples, "seed": seed, "date": date, "host": platform.node(),
           "warmup": measure.WARMUP,
           "floor": (f"this host's device path, measured on models that sleep {floors.sleeps[0]:g} us "
                     f"(the same requests, in {measure.CHUNKS} turns with the probe's) and "
                     f"{' and '.join(f'{x:g}' for x in floors.sleeps[1:])} us a request: each figure's path time "
                     f"at the first, and {100 * floors.slope:.2f} % of the device's time beyond it")
           if floors else None,
           "floor_slope": floors.slope if floors else None,
           "summaries": {k: v.as_dict() for k, v in found.summaries.items()},
           "unit": found.unit, "steps": [s.said() for s in found.unit_steps],
           "reads_first": found.reads_first.said() if found.reads_first else None,
           "merges": found.merges.said() if found.merges else None,
           "params": found.params, "notes": found.notes,
           "times_us": times.us, "net_us": found.net, "floor_us": floors.times.us if floors else None,
           "append_run": patterns.APPEND_RUN,
           "depths": [d.as_dict() for d in deep], "channels": channels.as_dict()}
    paths.write_atomic(results / "probe.json", json.dumps(doc, indent=1) + "\n")
    from ..report import probe as report
    report.write(results)
    return results
