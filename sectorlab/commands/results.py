"""What reads results: compare (two single redo-writer runs), plot (an --events file), report
(any results directory the project writes, re-rendered by its kind: report/kinds.py) and awr (what
the lab reads of an AWR report: awr/)."""

from __future__ import annotations

import json

from .. import lab as lab_mod
from ..analysis import plots, stats
from ..report import kinds, render
from .common import progress


def cmd_compare(args) -> int:
    rows, test = stats.compare(args.a, args.b)
    lab_mod.print_table(rows)
    print("Two single runs: the Welch t-test below takes each commit as a sample; it describes these two runs "
          "and is not a test between configurations (sectorlab report tests repeated runs).")
    n_a, n_b = test["n"]
    print(f"log file sync, Welch t-test: t = {test['t']:.3f}, {stats.p_text(test['p'])}, n = {n_a} + {n_b} "
          f"({stats.verdict(test['p'], args.alpha)} at alpha {args.alpha})")
    return 0


def cmd_awr(args) -> int:
    from ..awr import load, parse
    derived = load.load(parse.read(args.report))
    if args.json:
        print(json.dumps({k: d.as_json() for k, d in derived.items()}, indent=2))
        return 0
    for key, d in derived.items():
        print(f"{key:<34} {d.value:>14,.2f} {d.unit:<15} {d.how}")
    return 0


def cmd_plot(args) -> int:
    out = plots.plot_events(args.events, args.output, args.title)
    print(out)
    return 0


def cmd_report(args) -> int:
    written = kinds.write(args.results)
    if args.png:
        written.update(render.render_png(written["html"], progress=progress))
    for path in written.values():
        print(path)
    return 0
