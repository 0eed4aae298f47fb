"""The benches: bench, bench-sweep, bench-load, bench-writer, bench-floor, bench-host, bench-lab-up.

The analysis and the reports import scipy, numpy, matplotlib and markdown only inside the functions
that need them: those come with the optional analysis extra, and importing this module, as the CLI
does for every command, must not need it.
"""

from __future__ import annotations

import json

from .. import bench
from .. import lab as lab_mod
from ..errors import UsageError
from .common import load_lab, png_too, progress


def cmd_bench(args) -> int:
    if args.list:
        for name in bench.preset_names():
            p = bench.load_preset(name, suffix=lab_mod.suffix_from_env())
            print(f"{name:<18} seed {p.seed or '-':<4} {len(p.plan()):>2} runs, ~{bench.clock_text(p.estimate_s())} "
                  f"of runs  {p.title}")
        return 0
    preset = bench.load_preset(args.preset, args.duration, args.warmup, args.repeats, lab_mod.suffix_from_env(),
                               args.seed)
    clock = _clock(args)
    print(png_too(args, lambda: bench.run(preset, progress, args.results, clock)))
    return 0


def _redo_preset(args, command: str):
    """The redo preset a device-path bench (bench-sweep, bench-load) runs, its run length overridden."""
    preset = bench.load_preset(args.preset, duration_s=args.duration, suffix=lab_mod.suffix_from_env())
    if preset.kind != "redo":
        raise UsageError(f"preset {args.preset!r} is a {preset.kind} bench: {command} runs redo presets")
    return preset


def _clock(args):
    """The runs' clock from --clock and the modelled host's options (only on the virtual one); a
    time given as 'host' is measured on this host first (bench/cost/host.py) and its source kept."""
    from ..bench.clock import Clock
    from ..bench.cost import host
    for name in ("wakeup_us", "cpus", "cpu_dist", "wakeup_dist", "log_writer_cpu_us"):
        if getattr(args, name) is not None and args.clock != "virtual":
            raise UsageError(f"--{name.replace('_', '-')} {getattr(args, name)}: the modelled host's, in virtual "
                             f"time: give --clock virtual with it (a real run's is this host's own)")
    times, sources = {}, {}
    measured = host.measure(progress=progress) if "host" in (args.wakeup_us, args.log_writer_cpu_us) else None
    for name in ("wakeup_us", "log_writer_cpu_us"):
        times[name] = getattr(args, name) or 0
        if times[name] == "host":
            times[name] = round(measured[name]["median"])
            sources[name] = host.source(measured, name)
            progress(f"--{name.replace('_', '-')} host: {times[name]} us, {sources[name]}")
    return Clock(args.clock, times["wakeup_us"], args.cpus or 0, args.cpu_dist or "exponential",
                 args.wakeup_dist or "exponential", times["log_writer_cpu_us"], sources)


def cmd_bench_sweep(args) -> int:
    from ..bench.devicepath import sweep
    preset = _redo_preset(args, "bench-sweep")
    clock = _clock(args)
    for s in sweep.pick(preset, args.param):
        print(sweep.run(preset, s, progress, args.results or bench.RESULTS_DIR, args.repeats, args.seed, clock))
    return 0


def cmd_bench_load(args) -> int:
    from ..bench.devicepath import load
    awr = None
    if args.awr is not None:
        from ..awr import parse
        awr = parse.read(args.awr)  # a report that is not one: one line before the preset is read
    preset = _redo_preset(args, "bench-load")
    if awr is not None:
        preset = load.with_awr(preset, awr)
    load.workload(preset)  # one line before anything starts (a host measurement too) without a closed loop
    clock = _clock(args)
    print(load.run(preset, progress, args.results or bench.RESULTS_DIR, args.repeats, args.seed, clock, args.awr))
    return 0


def cmd_bench_writer(args) -> int:
    from ..bench.cost import tools
    r = tools.bench_writer(args.dir, args.rounds, args.seconds, spin_us=args.spin_us)
    if args.json:
        print(json.dumps(r, indent=2))
        return 0
    for name in ("redo_writer", "fio"):
        s = r[name]
        print(f"{name:<12} write IOPS median {s['iops_median']:8.0f} (min {s['iops_min']:.0f}, "
              f"max {s['iops_max']:.0f}), CPU {s['cpu_us_per_write_median']:.1f} us/write, "
              f"p99 {s['p99_us_median']:.0f} us")
    print(f"redo-writer / fio: IOPS {r['iops_ratio']:.3f}x, CPU per write {r['cpu_ratio']:.3f}x "
          f"({r['rounds']} alternating rounds of {r['seconds']} s on {r['directory']})")
    return 0


def cmd_bench_floor(args) -> int:
    lab = load_lab(args)
    from ..bench.cost import floor  # with the lab's and the guests' modules: only where a lab is measured
    r = floor.bench_floor(lab_mod.read_lab_json(lab.name, lab.path), args.disk or [], args.rounds, args.seconds,
                          progress)
    if args.json:
        print(json.dumps(r, indent=2))
        return 0
    for name, s in r["disks"].items():
        print(f"{name:<22} {s['bus']:<8} {s['device']:<12} guest reads {s['write_cache']:<13} "
              f"p50 {s['p50_us']['median']:.0f} us ({s['p50_us']['min']:.0f}-{s['p50_us']['max']:.0f}), "
              f"p99 {s['p99_us']['median']:.0f} us ({s['p99_us']['min']:.0f}-{s['p99_us']['max']:.0f}); "
              f"the model served p50 {s['model_p50_us']['median']:.1f} us; "
              f"{s['flushes_per_write']:.2f} flushes per write")
    print(f"({r['rounds']} rounds of {r['seconds']} s per disk, the order reversed every other round; lab {r['lab']})")
    return 0


def cmd_bench_host(args) -> int:
    from ..bench.cost import host
    m = host.measure(args.rounds, args.seconds, progress)
    if args.json:
        print(json.dumps(m, indent=2))
        return 0
    w, c = m["wakeup_us"], m["log_writer_cpu_us"]
    print(f"this host's wake-up from a post: {w['median']:.1f} us (median of {m['rounds']} runs of {m['seconds']} s, "
          f"{w['min']:.1f}-{w['max']:.1f}); the log writer's CPU per write: {c['median']:.1f} us "
          f"({c['min']:.1f}-{c['max']:.1f})")
    print(f"for the virtual clock: WAKEUP_US={round(w['median'])} LOG_WRITER_CPU_US={round(c['median'])} (or "
          f"WAKEUP_US=host LOG_WRITER_CPU_US=host to measure them before the runs)")
    print(f"({m['what']['wakeup_us']}; {m['what']['log_writer_cpu_us'].removeprefix(host.HOW + ': ')})")
    return 0


def cmd_bench_lab_up(args) -> int:
    from ..bench.cost import tools
    r = tools.bench_lab_up(load_lab(args), args.rounds, progress)
    if args.json:
        print(json.dumps(r, indent=2))
        return 0
    for path in ("cold", "warm"):
        s = r[path]
        phases = ", ".join(f"{p} {v:.1f}" for p, v in s["phase_medians_s"].items())
        print(f"{path:<5} lab-up to every disk verified: median {s['median_s']:.1f} s "
              f"(runs {', '.join(f'{t:.1f}' for t in s['totals_s'])}); phase medians (s): {phases}")
    print(f"warm/cold: {r['warm_over_cold']:.2f}x")
    return 0
