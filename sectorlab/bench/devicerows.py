"""What the device models saw of one measured run: the model-served disks' host traces cut to the
run (the byte offset of each trace before the run; the model writes one line per request as it
answers it), kept beside the run's files and summed up per operation (devices/trace.summary):
writes, bytes per write, the model's service time, the queue wait, await, utilisation, cache hits,
read-modify-write and unit reads, errors; flushes apart, never counted as writes. A model that died
during the run fails it, naming the disk and the model's log."""

from __future__ import annotations

import statistics
from pathlib import Path

from ..devices import trace
from ..errors import SectorlabError
from ..lab import modelled
from ..lab.record import DiskRecord

OPS = ("write", "flush", "read")


class Window:
    """The traces of these model-served disks from now on (their byte offsets now)."""

    def __init__(self, lab: str, disks: list[DiskRecord]):
        self.lab, self.disks = lab, disks
        self.servers = {d.name: modelled.server(lab, d.name) for d in disks}
        self.offsets = {name: _size(s.trace) for name, s in self.servers.items()}

    def check_alive(self, run_id: str) -> None:
        for name, s in self.servers.items():
            if s.pid() is None:
                last = (s.log.read_text(errors="replace").strip().splitlines() or ["(empty)"])[-1] \
                    if s.log.exists() else "(no log)"
                raise SectorlabError(f"{run_id}: the device model serving disk {name} is not running (died during "
                                     f"the run?); its log {s.log} ends: {last}")

    def rows(self, runs_dir: Path, run_id: str, results: Path) -> dict:
        """Per disk: its profile, its trace of the run (kept in runs_dir) and the summary per operation."""
        out = {}
        for d in self.disks:
            s = self.servers[d.name]
            header, text = _since(s.trace, self.offsets[d.name])
            kept = runs_dir / f"{run_id}.{d.name}.trace.csv"
            kept.write_text(header + text)
            requests = trace.parse(header + text)
            channels = int(modelled.params(d).get("channels", "1"))
            out[d.name] = {"profile": d.device, "trace": str(kept.relative_to(results)),
                           **{op: trace.summary(requests, op, channels) for op in OPS}}
        return out


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


def _since(path: Path, offset: int) -> tuple[str, str]:
    """The trace's header line and its lines from byte `offset` on (whole lines only)."""
    with open(path, "rb") as f:
        header = f.readline().decode()
        f.seek(max(offset, len(header.encode())))
        text = f.read().decode()
    return header, text[: text.rfind("\n") + 1] if text else ""


# (label, function of one disk's summary in one run and that run's redo-writer report, format): the
# device table's columns, each the median over a configuration's runs.
def _per_s(op: str):
    return lambda d, r: d[op]["count"] / r["elapsed_s"] if r.get("elapsed_s") else None


def _get(op: str, key: str, scale: float = 1.0):
    return lambda d, r: d[op][key] * scale if key in d[op] else None


def _per_write(key: str):
    return lambda d, r: d["write"][key] / d["write"]["count"] if d["write"]["count"] else None


def _cached_pct(d: dict, r: dict) -> float | None:
    return 100.0 * d["write"]["cached"] / d["write"]["count"] if d["write"]["count"] else None


COLUMNS = [
    ("writes/s", _per_s("write"), "{:,.0f}"),
    ("bytes per write", _get("write", "bytes_per_request"), "{:,.0f}"),
    ("write await p50 (us)", _get("write", "await_p50_us"), "{:,.0f}"),
    ("service p50 / p99 (us)", lambda d, r: (d["write"]["service_p50_us"], d["write"]["service_p99_us"])
     if d["write"]["count"] else None, "{:,.0f} / {:,.0f}"),
    ("queue p50 (us)", _get("write", "queue_p50_us"), "{:,.0f}"),
    ("served p50 (us)", _get("write", "served_p50_us"), "{:,.0f}"),
    ("utilisation %", _get("write", "utilisation", 100.0), "{:.1f}"),
    ("cache hits %", _cached_pct, "{:.1f}"),
    ("RMW reads per write", _per_write("rmw_reads"), "{:.2f}"),
    ("unit reads per write", _per_write("unit_reads"), "{:.2f}"),
    ("flushes/s", _per_s("flush"), "{:,.0f}"),
    ("errors", lambda d, r: d["write"].get("errors", 0) + d["flush"].get("errors", 0), "{:,.0f}"),
]


def table(runs: list) -> list[list[str]]:
    """The device table of one configuration's runs (metrics.Run with a device_trace): a header,
    then one row per model-served disk (a race has two), the medians of its runs; [] when no run
    was traced."""
    traced = [r for r in runs if r.report and r.entry.get("device_trace")]
    if not traced:
        return []
    out = [["disk (profile)", *(label for label, _, _ in COLUMNS)]]
    for disk, first in traced[0].entry["device_trace"].items():
        cells = [f"{disk} ({first['profile']})"]
        for _, get, fmt in COLUMNS:
            values = [_value(get, r.entry["device_trace"][disk], r.report) for r in traced]
            cells.append(_median_text(values, fmt))
        out.append(cells)
    return out


def _value(get, d: dict, r: dict):
    try:
        return get(d, r)
    except (KeyError, TypeError, ZeroDivisionError):
        return None


def _median_text(values: list, fmt: str) -> str:
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    if isinstance(values[0], tuple):
        return fmt.format(*(statistics.median(v[i] for v in values) for i in range(len(values[0]))))
    return fmt.format(statistics.median(values))
