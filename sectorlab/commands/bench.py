"""Redo-writer's results and the benches: compare, plot, report, bench, bench-writer, bench-lab-up.

stats, plots and report (with the modules report.py uses) import scipy, numpy, matplotlib and markdown
only inside the functions that need them: those come with the optional analysis extra, and importing
this module, as the CLI does for every command, must not need it.
"""

from __future__ import annotations

import json

from .. import bench
from .. import lab as lab_mod
from ..bench import floor, plots, report, stats, tools
from ..errors import UsageError
from .common import load_lab, progress


def cmd_compare(args) -> int:
    rows, test = stats.compare(args.a, args.b)
    lab_mod.print_table(rows)
    print("Two single runs: the Welch t-test below takes each commit as a sample; it describes these two runs "
          "and is not a test between configurations (sectorlab report tests repeated runs).")
    n_a, n_b = test["n"]
    print(f"log file sync, Welch t-test: t = {test['t']:.3f}, {stats.p_text(test['p'])}, n = {n_a} + {n_b} "
          f"({stats.verdict(test['p'], args.alpha)} at alpha {args.alpha})")
    return 0


def cmd_plot(args) -> int:
    out = plots.plot_events(args.events, args.output, args.title)
    print(out)
    return 0


def cmd_report(args) -> int:
    if args.png:
        report.chromium()  # before the run, not after it
    written = bench.write_report(args.results)
    if args.png:
        written.update(report.render_png(written["html"], progress=progress))
    for path in written.values():
        print(path)
    return 0


def cmd_bench(args) -> int:
    if args.png:
        report.chromium()  # before the run, not after it
    if args.list:
        for name in bench.preset_names():
            p = bench.load_preset(name, suffix=lab_mod.suffix_from_env())
            print(f"{name:<18} seed {p.seed or '-':<4} {len(p.plan()):>2} runs, ~{bench.clock_text(p.estimate_s())} "
                  f"of runs  {p.title}")
        return 0
    preset = bench.load_preset(args.preset, args.duration, args.warmup, args.repeats, lab_mod.suffix_from_env(),
                               args.seed)
    results = bench.run(preset, progress, args.results)
    if args.png:
        for path in report.render_png(results / "report.html", progress=progress).values():
            progress(f"drawn: {path}")
    print(results)
    return 0


def _redo_preset(args, command: str):
    """The redo preset a device-path bench (bench-sweep, bench-load) runs, its run length overridden."""
    preset = bench.load_preset(args.preset, duration_s=args.duration, suffix=lab_mod.suffix_from_env())
    if preset.kind != "redo":
        raise UsageError(f"preset {args.preset!r} is a {preset.kind} bench: {command} runs redo presets")
    return preset


def cmd_bench_sweep(args) -> int:
    from ..bench import sweep
    preset = _redo_preset(args, "bench-sweep")
    for s in sweep.pick(preset, args.param):
        print(sweep.run(preset, s, progress, args.results or bench.RESULTS_DIR, args.repeats, args.seed))
    return 0


def cmd_crash(args) -> int:
    import dataclasses

    from ..crash import run as crash
    if args.png:
        report.chromium()  # before the run, not after it
    preset = crash.load(args.preset)
    preset = dataclasses.replace(preset, seed=preset.seed if args.seed is None else args.seed,
                                 cuts=1 if args.at is not None else args.cuts or preset.cuts, at_ms=args.at)
    results = crash.run(preset, progress, args.results or bench.RESULTS_DIR)
    if args.png:
        for path in report.render_png(results / "report.html", progress=progress).values():
            progress(f"drawn: {path}")
    print(results)
    return 0


def cmd_crash_db(args) -> int:
    if args.png:
        report.chromium()  # before the run, not after it
    from ..crash import databases, dbmatrix
    judges = args.judges or list(databases.JUDGES)  # each a judge, none twice (the parser's type)
    lab = load_lab(args)
    results = dbmatrix.run(lab_mod.read_lab_json(lab.name, lab.path), judges, args.cuts, args.seed, progress,
                           args.results or bench.RESULTS_DIR)
    if args.png:
        for path in report.render_png(results / "report.html", progress=progress).values():
            progress(f"drawn: {path}")
    print(results)
    return 0


def cmd_bench_load(args) -> int:
    from ..bench import load
    preset = _redo_preset(args, "bench-load")
    load.workload(preset)  # one line before anything starts when the preset has no closed loop
    print(load.run(preset, progress, args.results or bench.RESULTS_DIR, args.repeats, args.seed))
    return 0


def cmd_bench_writer(args) -> int:
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


def cmd_bench_lab_up(args) -> int:
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
