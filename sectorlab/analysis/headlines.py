"""The report's first screen, as AWR opens with its top events: each comparison's verdict on each
path in one line (the change of its primary metric, p (Holm-adjusted), n, the 99 % CI, the floor's share and the
path it is read from), computed here for document.py and summary.json.

The floor of a path is what the same run costs on that path when the device costs nothing: the
bench's configuration served by the `floor` model (no parameters) at the same BLOCKSIZE, on the
same bus where there is one. Its share of a side is the floor's median over the side's median of
the primary metric: the part of that latency that is the lab's own path (the guest, its kernel and
the emulated CPU on the guest path; the NBD round trip on the device path), not the modelled
device. A difference is read from the guest path unless it is smaller than the spread of the guest
path's floor (the range of its runs' values: what the lab's own path varies by from run to run),
and then from the device path, where the bench has one; the line says which and why.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from .metrics import METRICS, Disk, metric, side

PATHS = ("guest", "device")


@dataclass
class Floor:
    label: str            # the floor configuration, "DISK@BLOCKSIZE"
    median: float
    low: float            # its runs' range
    high: float
    n: int

    @property
    def spread(self) -> float:
        return self.high - self.low


def _values(runs, name: str) -> list[float]:
    out = []
    for r in runs:
        v = metric(r.report, name) if r.report else None
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out.append(float(v))
    return out


def floor_of(disks: list[Disk], selector, primary: str) -> Floor | None:
    """The floor configuration for a comparison side: the `floor` model's disk at the side's
    BLOCKSIZE, on the side's bus where the bench has one there; None when the bench has none."""
    label, runs = side(disks, selector)
    if not runs:
        return None
    bus, blocksize = runs[0].entry.get("bus"), runs[0].blocksize
    floors = [d for d in disks if d.entry.get("model") == "floor"]
    floors.sort(key=lambda d: d.entry.get("bus") != bus)
    for d in floors:
        values = _values([r for r in d.runs if r.blocksize == blocksize], primary)
        if values:
            return Floor(f"{d.name}@{blocksize}", statistics.median(values), min(values), max(values), len(values))
    return None


def _path(c: dict | None, disks: list[Disk]) -> dict | None:
    """One path of a comparison: its primary test and the floor of each side; None when the
    comparison did not run on this path."""
    if not c or c.get("not_compared") or not c.get("tests"):
        return None
    head = c["tests"][0]
    if head["metric"] != c["primary"]:
        return None
    floors = [floor_of(disks, c[k], c["primary"]) for k in ("a", "b")]
    shares = [100.0 * f.median / m if f and m else None for f, m in zip(floors, head["medians"])]
    return {"metric": head["metric"], "label": head["label"], "unit": head["unit"], "medians": head["medians"],
            "change_pct": head["change_pct"], "p": head["p"], "n": head["n"], "ci": head["ci"],
            "p_unadjusted": head.get("p_unadjusted", head["p"]), "family": head.get("family", 1),
            "verdict": head["verdict"], "note": head["note"],
            "floor": [None if f is None else {"config": f.label, "median": f.median, "range": [f.low, f.high],
                                              "n": f.n} for f in floors],
            "floor_share_pct": shares}


def headlines(guest: list[dict], device: list[dict], guest_disks: list[Disk], device_disks: list[Disk],
              why_no_device: str | None = None) -> list[dict]:
    """Per comparison of the preset (guest: cross_comparisons of the guest path; device: the same
    comparisons on the device path, in the same order, or [] without one): both paths' lines and
    the path the difference is read from, with why."""
    out = []
    for i, g in enumerate(guest):
        d = device[i] if i < len(device) else None
        lines = {"guest": _path(g, guest_disks), "device": _path(d, device_disks)}
        item = {"title": g.get("title"), "a": g["a"], "b": g["b"], "primary": g.get("primary"), **lines}
        if g.get("not_compared"):
            item["not_compared"] = g["not_compared"]
        item["read_from"], item["why"] = _read_from(lines, why_no_device)
        out.append(item)
    return out


def _read_from(lines: dict, why_no_device: str | None) -> tuple[str | None, str]:
    g, d = lines["guest"], lines["device"]
    if g is None:
        return ("device", "the guest path did not test it") if d else (None, "neither path tested it")
    floor = g["floor"][0] or g["floor"][1]
    if floor is None:
        return "guest", "the bench has no floor configuration at this BLOCKSIZE to weigh it against"
    diff = abs(g["medians"][1] - g["medians"][0])
    spread = floor["range"][1] - floor["range"][0]
    unit = METRICS[g["metric"]][2]
    if diff >= spread:
        return "guest", (f"its difference ({diff:.3g} {unit}) is at least the spread of the guest path's floor "
                         f"({spread:.3g} {unit} over {floor['n']} runs of {floor['config']})")
    if d is None:
        return "guest", (f"its difference ({diff:.3g} {unit}) is within the spread of the guest path's floor "
                         f"({spread:.3g} {unit}), and this bench has no device path"
                         + (f" ({why_no_device})" if why_no_device else ""))
    return "device", (f"its difference on the guest path ({diff:.3g} {unit}) is within the spread of the guest "
                      f"path's floor ({spread:.3g} {unit} over {floor['n']} runs of {floor['config']})")
