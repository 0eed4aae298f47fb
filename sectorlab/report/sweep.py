"""The report of a sweep's results directory (sweep.json, written by bench/devicepath/sweep.py): per
comparison, its test at every value of the swept parameter (Holm over the preset's comparisons at
that value) and whether its verdict holds over the range or flips, and between which values."""

from __future__ import annotations

import json
from pathlib import Path

from ..analysis import compare
from ..paths import write_atomic
from . import clock, render


def analyse(doc: dict, reports: dict[str, dict]) -> list[dict]:
    """Per comparison: its test at every value (Holm over the comparisons at that value) and whether
    its verdict holds over the range or flips (and between which values)."""
    def key(side):
        return f"{side['disk']}@{side['blocksize']}"
    out = []
    per_value = {}
    for value in doc["sweep"]["values"]:
        items = []
        for c in doc["comparisons"]:
            side = {s: [reports[r["report"]] for r in doc["runs"] if r["value"] == value and r["config"] == key(c[s])]
                    for s in ("a", "b")}
            items.append(compare.compare_runs(side["a"], side["b"], c.get("primary")))
        compare.adjust_family(items)
        per_value[value] = items
    for i, c in enumerate(doc["comparisons"]):
        cells = []
        for value in doc["sweep"]["values"]:
            item = per_value[value][i]
            head = item["tests"][0] if item.get("tests") and item["tests"][0]["metric"] == item["primary"] else None
            cells.append({"value": value, "verdict": item["verdict"], "n": item["n"],
                          "medians": head["medians"] if head else None,
                          "change_pct": head["change_pct"] if head else None, "p": head["p"] if head else None,
                          "ci": head["ci"] if head else None, "label": head["label"] if head else item["primary"],
                          "unit": head["unit"] if head else "", "direction": _direction(head)})
        directions = [x["direction"] for x in cells]
        flips = [(cells[j]["value"], cells[j + 1]["value"]) for j in range(len(cells) - 1)
                 if directions[j] != directions[j + 1]]
        too_few = next((per_value[v][i].get("min_p_note") for v in doc["sweep"]["values"]
                        if per_value[v][i].get("min_p_note") or per_value[v][i].get("not_tested")), None)
        out.append({"title": c.get("title"), "a": key(c["a"]), "b": key(c["b"]), "primary": c.get("primary"),
                    "cells": cells, "flips": flips, "holds": not flips and not too_few,
                    "too_few": too_few or (per_value[doc["sweep"]["values"][0]][i].get("not_tested"))})
    return out


def _direction(head: dict | None) -> str:
    """'b higher', 'b lower' or 'no difference' (within noise, unclear, not tested)."""
    if not head or head["verdict"] != "significant":
        return "no difference"
    return "b higher" if head["medians"][1] > head["medians"][0] else "b lower"


def _row(x: dict) -> list[str]:
    """A value's row of a comparison's table: the medians, the change, p, the CI and the verdict."""
    if x["medians"] is None:
        return [f"`{x['value']}`", "-", "-", "-", "-", "-", x["verdict"]]
    ma, mb = x["medians"]
    change = "-" if x["change_pct"] is None else f"{x['change_pct']:+.1f} %"  # none from a median of 0
    return [f"`{x['value']}`", f"{ma:.4g} {x['unit']}", f"{mb:.4g} {x['unit']}", change,
            f"{x['p']:.2g}", f"[{x['ci'][0]:+.3g}, {x['ci'][1]:+.3g}]", x["verdict"]]


def _value_text(value: str, own: str) -> str:
    return f"`{value}`" + (" (the profile's own)" if value == own else "")


EXPECTED = "expected the sweep.json 'sectorlab bench-sweep' writes"


def write(results: Path) -> dict[str, Path]:
    """report.md, report.html and summary.json of sweep.json and the runs' reports it names."""
    doc = render.read_results(results, "sweep.json", "sweep record", EXPECTED)
    reports = render.read_runs(results, doc, EXPECTED)
    found = analyse(doc, reports)
    s, w = doc["sweep"], doc["workload"]
    lines = [f"# Sweep of `{s['param']}` on `{s['profile']}`: {doc['title']}", "",
             f"Preset `{doc['preset']}` (seed {doc['seed'] or '-'}), "
             + (clock.where(doc) if clock.virtual(doc) else
                f"on the device path only (redo-writer on this host straight to the models, polling for replies "
                f"{doc['reply_spin_us']} us)") + ". Values: "
             f"{', '.join(_value_text(v, s['own']) for v in s['values'])}"
             + (f", on the disks of {', '.join(f'`{p}` (`{k}`)' for p, k in s['profiles'].items())} (the "
                "profiles built on it that keep its value)" if len(s.get("profiles", {})) > 1 else "") + ". "
             f"Why this range: {s['range']}", "",
             f"Workload: {w['sessions']} session(s), {w['redo_per_txn']:,} B of redo per commit, "
             + (f"{w['rate']:,} commits/s ({w['arrival']})" if w["rate"] else "closed loop")
             + f"; {clock.warmup(doc, w)}, {w['duration_s']} s a run, {doc['repeats']} runs of each "
             f"(value, configuration) in random rounds (order seed {doc['order_seed']}); {doc['wall_s']} s in all.",
             "", "Each comparison's primary metric at every value (Mann-Whitney on one value per run, Holm over the "
             "preset's comparisons at that value, 99 % bootstrap CI): a headline whose verdict is not the same at "
             "every value **depends on the parameter** and is not a result on its own.", ""]
    for item in found:
        if item["flips"]:
            verdict = ("**depends on `" + s["param"] + "`**: flips between " +
                       "; ".join(f"`{a}` and `{b}`" for a, b in item["flips"]))
        elif item["too_few"]:
            verdict = f"**not told**: {item['too_few']}"
        else:
            verdict = "**holds over the range**"
        lines += [f"## {item['title']} ({item['a']} → {item['b']})", "", f"Verdict over the range: {verdict}.", "",
                  *render.table([[f"`{s['param']}`", "median a", "median b", "change", "p (Holm)",
                                  "99 % CI of b - a", "verdict"], *(_row(x) for x in item["cells"])], align="-rrrr--")]
    lines += ["## How to run it again", "", "```",
              f"sectorlab bench-sweep --param {s['param']} --repeats {doc['repeats']} --duration {w['duration_s']} "
              f"--seed {doc['order_seed']}{clock.again(doc)} -- {doc['preset']}", "```", ""]
    write_atomic(results / "summary.json", json.dumps({"sweep": s, "comparisons": found}, indent=2))
    return {**render.write(results, "\n".join(lines)), "summary": results / "summary.json"}
