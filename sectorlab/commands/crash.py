"""Power cuts: crash (on the device path, judged by redo-writer verify; crash/devicepath.py) and
crash-db (in the running lab, judged by real databases; crash/labdb.py)."""

from __future__ import annotations

import dataclasses

from .. import bench
from .. import lab as lab_mod
from ..errors import UsageError
from .common import load_lab, png_too, progress


def cmd_crash(args) -> int:
    from ..crash import devicepath
    from ..crash import preset as crash_preset
    if args.list:
        if args.preset is not None:
            raise UsageError(f"sectorlab crash --list {args.preset}: --list checks every preset of labs/crash/ and "
                             f"takes none; run 'sectorlab crash {args.preset}' to run it")
        for name in crash_preset.preset_names():
            p = crash_preset.load(name)
            print(f"{name:<14} {len(p.runnable()):>2} of {len(p.cells)} cells run, {p.runs} runs each, {p.cuts} cuts "
                  f"in windows and {p.uniform_cuts} at random moments a run  {p.title}")
        return 0
    if args.preset is None:
        raise UsageError("sectorlab crash: expected a crash preset (labs/crash/NAME.toml or a path), or --list")
    preset = crash_preset.load(args.preset)
    preset = dataclasses.replace(preset, seed=preset.seed if args.seed is None else args.seed,
                                 cuts=1 if args.at is not None else args.cuts or preset.cuts,
                                 uniform_cuts=0 if args.at is not None else preset.uniform_cuts,
                                 runs=args.runs or preset.runs, at_ms=args.at, clock=args.clock)
    print(png_too(args, lambda: devicepath.run(preset, progress, args.results or bench.RESULTS_DIR)))
    return 0


def cmd_crash_db(args) -> int:
    from ..crash import databases, labdb
    judges = args.judges or list(databases.JUDGES)  # each a judge, none twice (the parser's type)
    lab = load_lab(args)
    print(png_too(args, lambda: labdb.run(lab_mod.read_lab_json(lab.name, lab.path), judges, args.cuts, args.seed,
                                          progress, args.results or bench.RESULTS_DIR, runs=args.runs)))
    return 0
