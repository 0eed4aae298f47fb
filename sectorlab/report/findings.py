"""The report's statistical text, for document.py: a comparison's tests (the primary metric's verdict
as the headline, the other metrics as a table, each with p, n and the CI), the shape of a
configuration's commit latencies, how the runs were ordered, the control runs beside what they
control (the harness floor) and the seed figures beside the lab's values. See docs/bench-statistics.md.
"""

from __future__ import annotations

from ..analysis import stats
from ..analysis.metrics import METRICS, Disk
from ..analysis.stats import ALPHA, CI_LEVEL
from . import render
from .clock import DevicePath
from .render import one_line


def value_text(name: str, value) -> str:
    """A metric's value in its format and unit."""
    if value is None:
        return "-"
    _, _, unit, fmt = METRICS[name]
    return fmt.format(value) + (f" {unit}" if unit else "")


def _ci_text(t: dict) -> str:
    lo, hi = t["ci"]
    fmt, unit = METRICS[t["metric"]][3], METRICS[t["metric"]][2]
    pct = f" ({t['ci_pct'][0]:+.1f} % to {t['ci_pct'][1]:+.1f} %)" if t["ci_pct"] else ""
    return f"[{fmt.format(lo)}, {fmt.format(hi)}]{'' if unit == '%' else ' ' + unit}{pct}"


def _p_text(t: dict) -> str:
    """A primary test's p: Holm-adjusted over the preset's comparisons where there are several."""
    if (t.get("family") or 1) > 1:
        return (f"{stats.p_text(t['p'])} (Holm-adjusted over the preset's {t['family']} comparisons; "
                f"unadjusted {stats.p_text(t['p_unadjusted'])})")
    return stats.p_text(t["p"])


def _change(t: dict) -> str:
    return "-" if t["change_pct"] is None else f"{t['change_pct']:+.1f} %"


def tests_lines(c: dict, a: str, b: str) -> list[str]:
    """A comparison of two configurations `a` and `b` in words: the headline (the primary metric),
    the note when the runs are too few to reach ALPHA, then every other metric tested."""
    if c.get("not_tested"):
        return [f"- {c['not_tested'][0].upper()}{c['not_tested'][1:]} (no p-value is given)."]
    out = []
    head = c["tests"][0] if c["tests"] and c["tests"][0]["metric"] == c["primary"] else None
    if head is None:
        out.append(f"- Primary metric `{c['primary']}`: {c['verdict']}.")
    else:
        ma, mb = head["medians"]
        out.append(f"- Primary metric, {head['label']} (`{head['metric']}`): median {value_text(head['metric'], ma)} "
                   f"for {a} against {value_text(head['metric'], mb)} for {b} ({_change(head)}); Mann-Whitney "
                   f"{_p_text(head)}, n = {head['n'][0]} + {head['n'][1]} runs; {CI_LEVEL} bootstrap CI of the "
                   f"difference of medians {_ci_text(head)}: **{head['verdict']}**"
                   + (f" ({head['note']})" if head["note"] else "") + ".")
    if c.get("min_p_note"):
        out.append(f"- Note: {c['min_p_note']}.")
    rows = [["metric (secondary)", f"median {a}", f"median {b}", "change", "p", "n", f"{CI_LEVEL} CI of b - a",
             "verdict"]]
    for t in c["tests"][1 if head else 0:]:
        rows.append([t["label"], value_text(t["metric"], t["medians"][0]), value_text(t["metric"], t["medians"][1]),
                     _change(t), stats.p_text(t["p"]), f"{t['n'][0]} + {t['n'][1]}", _ci_text(t),
                     t["verdict"] + (" (CI and p disagree)" if t["verdict"] == "unclear" else "")])
    out += ["", f"Every metric, one value per run, a = {a}, b = {b} (Mann-Whitney, two-sided; a difference is "
                f"significant when p < {ALPHA} and the CI excludes 0; these secondary tests are not adjusted "
                f"for multiplicity: read them as leads, not findings):", ""] + render.table(rows)
    if c.get("untested"):
        out.append("Not tested (not in every run): " + ", ".join(f"`{m}`" for m in c["untested"]) + ".")
    return out


def shape_line(label: str, shape: dict | None) -> list[str]:
    """The shape of a configuration's pooled commit latencies: bimodal (its two modes) or one mode."""
    if not shape:
        return []
    where = f"- {label}: log file sync pooled over {shape['runs']} run(s), {shape['commits']:,} commits: "
    bi = shape["bimodal"]
    if not bi:
        return [where + "one mode (no second peak on a log scale)"]
    (lo, hi), (sa, sb) = bi["modes"], bi["shares"]
    return [where + f"**bimodal**, modes at {lo:.3g} ms ({100 * sa:.0f} % of commits) and {hi:.3g} ms "
                    f"({100 * sb:.0f} %), split at {bi['valley']:.3g} ms; its mean describes neither"]


def design_lines(bench: dict, disks: list[Disk]) -> list[str]:
    """How the runs were ordered (bench.json "design"), and the open-loop runs' arrivals."""
    d = bench.get("design")
    counts = sorted({len([r for r in runs if r.report]) for disk in disks for runs in disk.by_blocksize().values()}
                    - {0})
    per = "/".join(str(n) for n in counts) or "0"
    if not isinstance(d, dict):
        out = [f"Run order: not recorded in bench.json (an older bench); {per} run(s) per configuration, "
               f"each configuration's runs one after another, so a drift over time is not told apart from a "
               f"difference between configurations."]
    else:
        how = (f"randomized with seed {d.get('seed')}, configurations interleaved" if d.get("randomized")
               else "in a fixed order")
        order = [one_line(x) for x in d.get("order") or []]
        shown = ", ".join(order[:40]) + (f", ... ({len(order)} in all)" if len(order) > 40 else "")
        reps = d.get("repeats", per)
        if isinstance(reps, dict):  # runs per configuration, by target
            values = sorted(set(reps.values()))
            reps = "/".join(map(str, values)) if len(values) > 1 else str(values[0]) if values else per
        out = [f"Run order: {how}; {reps} run(s) per configuration"
               + (f"; in execution order: {shown}" if order else "") + "."]
    entries = [r.entry for disk in disks for r in disk.runs if r.entry.get("mode") == "open"]
    if entries:
        kinds = sorted({f"{e.get('arrival', '?')} arrivals at {e.get('rate', '?')} commits/s" for e in entries})
        out.append(f"Open-loop runs ({len(entries)}): {'; '.join(kinds)}; each run's offered and achieved rate "
                   f"are in its table, and a run that did not keep up is marked so.")
    return out + [""]


def controls_section(controls: list[dict], path: str = "guest path") -> list[str]:
    """Each control configuration's medians beside those of what it controls: the harness floor,
    on one path."""
    if not controls:
        return []
    out = [f"## Controls on the {path}: the harness floor", "",
           "A control run (a `null:` target, a control race) measures what the harness itself costs; the "
           "configurations it controls are shown beside it (medians of their runs).", ""]
    for c in controls:
        names = [c["control"], *c["controls"]]
        rows = [["", *(f"{n} (control)" if n == c["control"] else n for n in names)]]
        metrics = next(iter(c["medians"].values()))
        rows += [[METRICS[m][0], *(value_text(m, c["medians"][n][m]) for n in names)] for m in metrics]
        out += render.table(rows)
    return out


def _path_line(path: str, line: dict | None, why_not: str | None) -> str:
    """One path of a headline: a -> b of the primary metric, change, p, n, CI, verdict, floor share."""
    if line is None:
        return f"{path}: not tested" + (f" ({why_not})" if why_not else "")
    m = line["metric"]
    (ma, mb), (fa, fb) = line["medians"], line["floor"]
    ci = _ci_text({"metric": m, "ci": line["ci"],
                   "ci_pct": [100.0 * c / ma for c in line["ci"]] if ma else None})
    shares = line["floor_share_pct"]
    if fa is None and fb is None:
        floor = "no floor run at this BLOCKSIZE"
    elif fa and fb and fa["config"] == fb["config"]:
        floor = (f"floor {value_text(m, fa['median'])} ({fa['config']}) = {shares[0]:.0f} % of a and "
                 f"{shares[1]:.0f} % of b")
    else:
        floor = "; ".join(f"floor {value_text(m, f['median'])} ({f['config']}) = {s:.0f} % of {k}" if f else
                          f"no floor run at {k}'s BLOCKSIZE" for f, s, k in zip((fa, fb), shares, ("a", "b")))
    return (f"{path}: {value_text(m, ma)} → {value_text(m, mb)} ({_change(line)}), "
            f"{_p_text(line)}, n = {line['n'][0]} + {line['n'][1]}, {CI_LEVEL} CI {ci}: "
            f"**{line['verdict']}**; {floor}")


def headline_section(items: list[dict], why_no_device: str | None, device: DevicePath | None = None,
                     picture: list[str] | None = None) -> list[str]:
    """The first screen: the picture of the findings (`picture`, its markdown lines), then each
    comparison of the preset, its verdict on each path in one line and the path its difference is
    read from (headlines.py); `device` names the device path by its clock."""
    if not items:
        return []
    device = device or DevicePath(None)
    out = ["## Findings", *(picture or []), "", device.intro(), ""]
    for i, h in enumerate(items, 1):
        a, b = _selector_text(h["a"]), _selector_text(h["b"])
        title = one_line(h.get("title") or f"comparison {i}")
        if h.get("not_compared"):
            out += [f"{i}. **{title}** (a = {a}, b = {b}): not compared: {', '.join(h['not_compared'])} did not run.",
                    ""]
            continue
        label = (h["guest"] or h["device"] or {}).get("label", h.get("primary"))
        where = f"read from the **{h['read_from']} path**" if h["read_from"] else "not read"
        out += [f"{i}. **{title}** (a = {a}, b = {b}; {label}): {where}, as {h['why']}.",
                f"    - {_path_line('guest path', h['guest'], None)}",
                f"    - {_path_line(device.name, h['device'], why_no_device)}", ""]
    return out


GUEST_PATH = "These are the guest path's; the first screen has the device path's beside them."


def seed_section(rows: list[dict], compact: bool = False, device: list[dict] | None = None,
                 path: str = GUEST_PATH) -> list[str]:
    """The seed figures beside the lab's values: seed | lab | agreement, with each quote's source
    (compact: without the sources and derivations, for the first screen, and with the device
    path's value beside the guest path's where `device`, the same table on the device path, has
    one)."""
    if not rows:
        return []
    if compact:
        both = bool(device) and any(d.get("lab_value") is not None for d in device)
        head = ["the seed's figure", "seed", f"lab, guest path ({CI_LEVEL} CI)", "agreement"]
        table = [head + [f"lab, device path ({CI_LEVEL} CI)", "agreement"] if both else head]
        for i, r in enumerate(rows):
            row = [str(r.get("what")), f"{r.get('seed_value')} {r.get('unit') or ''}".strip(), _lab_text(r),
                   r["agreement"]]
            if both:
                d = device[i] if i < len(device) else {}
                row += [_lab_text(d), d.get("agreement", "-") if d.get("lab_value") is not None else "-"]
            table.append(row)
        return ["### The seed's figures beside the lab's (sources below)", ""] + render.table(table, numbers=False)
    out = ["## The seed's figures beside the lab's", "",
           f"A ratio is median(a) / median(b) over the runs, a value the median over a's runs; the CI is a "
           f"{CI_LEVEL} bootstrap over runs. A seed figure agrees when it lies inside the CI and the CI is "
           "narrower than the figure's distance from the value it must be told apart from (1 for a ratio: no "
           "difference; a preset's `tell_apart` otherwise); a CI that also holds that value is too wide to tell. "
           + path, ""]
    table = [["figure", "seed", f"lab ({CI_LEVEL} CI)", "agreement", "source", "derivation"]]
    for r in rows:
        unit = r.get("unit") or ""
        lab = _lab_text(r)
        sides = " / ".join(_selector_text(r.get(k)) for k in ("a", "b")
                           if r.get(k) and (k == "a" or r["lab"] == "ratio"))
        what = f"{r.get('what')}" + (f" (`{r['metric']}`, {sides})" if r.get("metric") else "")
        table.append([what, f"{r.get('seed_value')} {unit}".strip(), lab, r["agreement"],
                      f"{r.get('where') or '-'}: \"{r.get('quote') or ''}\"", r.get("derivation") or "-"])
    return out + render.table(table, numbers=False)


def held_out_section(rows: list[dict]) -> list[str]:
    """The disks' device models at their seeds' loads against the seeds' iostat figures that no
    profile parameter came from (devices/heldout.py)."""
    if not rows:
        return []
    from ..devices import heldout
    return ["## The device models against the seeds' held-out figures", "",
            "Figures the seed's iostat printed for its device that no parameter of the profile came from, beside "
            "the model run at the seed's own load in virtual time (Poisson arrivals at its writes per second, its "
            f"average request size, {rows[0]['requests']:,} writes for each of {rows[0]['seeds']} generator seeds; "
            "the median and the range over the seeds). A figure agrees when the range meets the seed's as printed, "
            "widened by its rounding; a disagreement is the profile's, said and not tuned away "
            "(docs/device-models.md reads each).", ""] + heldout.table(rows) + [""]


def _lab_text(r: dict) -> str:
    lab = "-" if r.get("lab_value") is None else f"{r['lab_value']:.3g}"
    if r.get("ci"):
        lab += f" [{r['ci'][0]:.3g}, {r['ci'][1]:.3g}]"
    return lab


def _selector_text(selector) -> str:
    """A configuration as a preset names it: TARGET@BLOCKSIZE."""
    if isinstance(selector, dict):
        return f"{selector.get('disk')}@{selector.get('blocksize')}"
    return str(selector)
