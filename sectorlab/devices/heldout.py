"""The seeds' device figures that no profile parameter came from, and the model held against them.

A profile's numbers come from datasheets, reviews and physics (profiles.py); a seed that printed
its device's iostat row gives figures none of them was set from: the write rate and request size
are the seed's load, and await, svctm, %util and avgqu-sz what its device made of that load. Each
profile that stands for a seed's device lists those figures in the catalog ("held_out", each with
its quote). Here the model is run at the seed's load in virtual time (devicemodel/simulate: Poisson
arrivals at the seed's writes per second, sequential writes of its average request size, a fixed
seed) and the same four figures are computed as iostat computes them:

- await: the mean time from a request's arrival to its completion (its queue and its service);
- %util: the share of the time with at least one request in flight;
- svctm: %util's busy time over the requests (iostat's own definition, util / IOPS);
- avgqu-sz: the mean number of requests in flight (the in-flight time summed over the span).

The model is run with SEEDS generator seeds (arrivals and draws): its value is the median over
them and its range the smallest to the largest. A figure agrees when that range meets the seed's
figure as printed, widened by half a unit of its last digit ("0.07" stands for 0.065 to 0.075);
otherwise the report and docs/device-models.md give the ratio model / seed. Nothing is tuned toward
these figures: a disagreement is said, not fixed.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

from ..errors import UsageError
from ..geometry import CATALOG
from . import profiles

FIGURES = ("await_ms", "svctm_ms", "util_pct", "avgqu_sz")
LABELS = {"await_ms": "await (ms)", "svctm_ms": "svctm (ms)", "util_pct": "%util", "avgqu_sz": "avgqu-sz"}
REQUESTS = 20_000   # writes simulated at the seed's load, per generator seed
SEEDS = (1, 2, 3, 4, 5)  # the arrivals' and the model's generator seeds: the same profile gives the same figures


@dataclass(frozen=True)
class Load:
    """A seed's write load on its device, from its iostat row."""
    writes_per_s: float
    request_bytes: int


@dataclass(frozen=True)
class HeldOut:
    profile: str
    seed: str
    device: str              # the seed's device name in its iostat row
    load: Load
    figures: dict[str, str]  # figure -> the seed's value as printed ("0.07"), so its precision is kept
    quote: str
    where: str
    derivation: str


def _printed(value) -> str:
    if isinstance(value, str):
        float(value)
        return value
    raise ValueError("a held-out figure is written as the seed printed it, a string such as \"0.07\"")


def held_out(name: str | None = None) -> list[HeldOut]:
    """Every profile's held-out figures (or one profile's), from the catalog."""
    raw = json.loads(CATALOG.read_text()).get("device_profiles", {})
    out = []
    for pname, entry in raw.items():
        if pname.startswith("_") or (name and pname != name):
            continue
        for i, h in enumerate(entry.get("held_out", []), 1):
            where = f"device profile '{pname}' held_out #{i}"
            try:
                figures = {k: _printed(v) for k, v in h["figures"].items()}
                load = Load(float(h["load"]["writes_per_s"]), int(h["load"]["request_bytes"]))
                item = HeldOut(pname, str(h["seed"]), h["device"], load, figures, h["quote"], h["where"],
                               h.get("derivation", ""))
            except (KeyError, TypeError, ValueError) as e:
                raise UsageError(f"{where}: {e}: expected seed, device, load {{writes_per_s, request_bytes}}, "
                                 f"figures {{{', '.join(FIGURES)}}} as printed, quote and where") from e
            unknown = sorted(set(figures) - set(FIGURES))
            if unknown or load.writes_per_s <= 0 or load.request_bytes <= 0:
                raise UsageError(f"{where}: figures {unknown} or load {load}: expected figures among "
                                 f"{', '.join(FIGURES)} and a positive load")
            out.append(item)
    return out


def requests(load: Load, n: int, seed: int) -> str:
    """simulate's input for the load: Poisson arrivals, sequential writes of the request size."""
    rng = random.Random(seed)
    t, lines = 0.0, []
    for i in range(n):
        t += rng.expovariate(load.writes_per_s) * 1e6
        lines.append(f"{t:.3f} write {i * load.request_bytes} {load.request_bytes}\n")
    return "".join(lines)


def model_at(profile: str, load: Load, n: int = REQUESTS, seed: int = SEEDS[0]) -> dict[str, float]:
    """The four iostat figures the profile's model gives at the load (virtual time), one seed."""
    return at_load({**profiles.get(profile).params, "seed": str(seed)}, load, n, seed, f"device profile '{profile}'")


def at_load(params: dict[str, str], load: Load, n: int, seed: int, what: str = "the model") -> dict[str, float]:
    """The model with these parameters at the load: simulate's trace, read as iostat reads a device."""
    from . import trace
    proc = profiles.simulate(params, requests(load, n, seed))
    if proc.returncode != 0:
        raise UsageError(f"{what} at {load}: {proc.stderr.strip()}")
    return iostat(trace.answers(proc.stdout, "write"))


def iostat(requests: list[tuple[float, float]]) -> dict[str, float]:
    """await, svctm, %util and avgqu-sz of requests ((arrival t_us, answer_us to the reply), as
    trace.answers gives them), as the host's iostat computes them over the span from the first
    arrival to the last reply."""
    spans = sorted((t, t + answer) for t, answer in requests)
    start, end = spans[0][0], max(e for _, e in spans)
    busy, (cur_s, cur_e) = 0.0, spans[0]
    for s, e in spans[1:]:
        if s > cur_e:
            busy, cur_s, cur_e = busy + (cur_e - cur_s), s, e
        else:
            cur_e = max(cur_e, e)
    busy += cur_e - cur_s
    in_flight = sum(e - s for s, e in spans)
    span = end - start
    return {"await_ms": in_flight / len(requests) / 1000, "svctm_ms": busy / len(requests) / 1000,
            "util_pct": 100 * busy / span, "avgqu_sz": in_flight / span, "requests": len(requests)}


def half_unit(printed: str) -> float:
    """Half a unit of the printed figure's last digit: what its rounding hides."""
    decimals = len(printed.split(".")[1]) if "." in printed else 0
    return 0.5 * 10 ** -decimals


def agrees(low: float, high: float, printed: str) -> bool:
    """The model's range over its seeds meets the seed's figure as printed, widened by its rounding."""
    v, h = float(printed), half_unit(printed)
    return low <= v + h and high >= v - h


def check(items: list[HeldOut] | None = None) -> list[dict]:
    """Each held-out figure beside the model's value at the seed's load (median and range over
    SEEDS): agrees, or the ratio model / seed."""
    import statistics
    out = []
    for h in held_out() if items is None else items:
        runs = [model_at(h.profile, h.load, seed=s) for s in SEEDS]
        for fig, printed in h.figures.items():
            values = [r[fig] for r in runs]
            value, low, high = statistics.median(values), min(values), max(values)
            ratio = value / float(printed) if float(printed) else None
            verdict = ("agrees" if agrees(low, high, printed) else
                       f"differs: model / seed = {ratio:.2g}" if ratio is not None else "differs")
            out.append({"profile": h.profile, "seed": h.seed, "device": h.device, "figure": fig,
                        "label": LABELS[fig], "seed_value": printed, "model_value": value,
                        "model_range": [low, high], "ratio": ratio, "verdict": verdict,
                        "writes_per_s": h.load.writes_per_s, "request_bytes": h.load.request_bytes,
                        "requests": runs[0]["requests"], "seeds": len(SEEDS), "quote": h.quote, "where": h.where})
    return out


def table(rows: list[dict]) -> list[str]:
    """Markdown rows: profile, the seed's device and load, figure, seed, model, verdict."""
    out = ["| profile | seed's device and load | figure | seed | model at that load (range) | verdict |",
           "|---|---|---|---:|---:|---|"]
    for r in rows:
        load = f"seed {r['seed']} `{r['device']}`: {r['writes_per_s']:,.0f} writes/s of {r['request_bytes']:,} B"
        low, high = r["model_range"]
        out.append(f"| `{r['profile']}` | {load} | {r['label']} | {r['seed_value']} | {r['model_value']:.3g} "
                   f"({low:.3g}-{high:.3g}) | {r['verdict']} |")
    return out
