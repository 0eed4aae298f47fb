"""What the device models saw of one measured run: the model-served disks' host traces cut to the
run (the byte offset of each trace before the run; the model writes one line per request as it
answers it), kept beside the run's files and summed up per operation (devices/trace.summary):
writes, bytes per write, the model's service time, the queue wait, await, utilisation, cache hits,
read-modify-write and unit reads, errors; flushes apart, never counted as writes. A model that died
during the run fails it, naming the disk and the model's log."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from ..devices import trace
from ..errors import SectorlabError
from ..lab import modelled
from ..lab.record import DiskRecord
from ..paths import write_atomic

OPS = ("write", "flush", "read")


class Window:
    """The traces of these model-served disks from now on (their byte offsets now); `race`: the two
    disks are a race's members (their arrivals are paired in rows())."""

    def __init__(self, lab: str, disks: list[DiskRecord], race: bool = False):
        self.lab, self.disks, self.race = lab, disks, race
        self.servers = {d.name: modelled.server(lab, d.name) for d in disks}
        self.offsets = {name: trace.end(s.trace) for name, s in self.servers.items()}

    def check_alive(self, run_id: str) -> None:
        for name, s in self.servers.items():
            if s.pid() is None:
                last = (s.log.read_text(errors="replace").strip().splitlines() or ["(empty)"])[-1] \
                    if s.log.exists() else "(no log)"
                raise SectorlabError(f"{run_id}: the device model serving disk {name} is not running (died during "
                                     f"the run?); its log {s.log} ends: {last}")

    def requests(self, name: str) -> list[trace.Request]:
        """What the model of disk `name` has served since the window opened, as its trace has it."""
        return trace.read(self.servers[name].trace, since=self.offsets[name])

    def rows(self, runs_dir: Path, run_id: str, results: Path) -> dict:
        """Per disk: its profile, its trace of the run (kept in runs_dir) and the summary per
        operation; for a race of two model-served members, also when each member got the writes."""
        kept = {}
        for d in self.disks:
            header, text = trace.lines(self.servers[d.name].trace, self.offsets[d.name])
            kept[d.name] = runs_dir / f"{run_id}.{d.name}.trace.csv"
            write_atomic(kept[d.name], header + text)  # never through a link planted under the run's name
        return rows(self.disks, kept, results, self.race)


def rows(disks: list[DiskRecord], kept: dict[str, Path], results: Path, race: bool = False) -> dict:
    """Per disk: its profile, its trace of one run (kept[disk's name], a file under `results`) and
    the summary per operation; for a race of two model-served members, also when each member got the
    writes (Window.rows on the real clock; on the virtual one the traces redo-writer's model: members
    wrote)."""
    out, writes = {}, {}
    for d in disks:
        requests = trace.parse(kept[d.name].read_text())
        writes[d.name] = [r for r in requests if r.op == "write"]
        channels = int(modelled.params(d.device, d.logical_block_size, d.physical_block_size).get("channels", "1"))
        out[d.name] = {"profile": d.device, "trace": str(kept[d.name].relative_to(results)),
                       **{op: trace.summary(requests, op, channels) for op in OPS}}
    if race and len(disks) == 2:
        first, second = (writes[d.name] for d in disks)
        out[disks[0].name]["race"] = arrivals(first, second)
    return out


def flash_log(device_trace: dict) -> dict | None:
    """Smart flash logging inside the cells (a model with a flash log, devices/profiles.py): of the
    writes of a run, over every cell it wrote, how many the flash log completed first (the cells'
    FL_FLASH_FIRST against FL_DISK_FIRST); None when no disk of the run had a flash log."""
    cells = [d["write"] for d in device_trace.values() if d.get("write", {}).get("flashlog_races")]
    if not cells:
        return None
    return {"writes": sum(c["flashlog_races"] for c in cells), "flash_first": sum(c["flashlog_first"] for c in cells),
            "source": "the device models' traces (the harness adds this to redo-writer's report)"}


def writes_since(traces: dict[Path, int]) -> dict:
    """The write summary of the requests these traces got since their byte offsets, per trace, as
    rows() has them (a run on the device path without a lab: its models' traces, {trace: offset
    before the run})."""
    out = {}
    for path, offset in traces.items():
        out[str(path)] = {"write": trace.summary(trace.read(path, since=offset), "write")}
    return out


def with_flash_log(report_text: str, device_trace: dict | None) -> str:
    """redo-writer's JSON report with the cells' flash log counts of its run added (unchanged when
    no disk of the run had a flash log)."""
    counts = flash_log(device_trace) if device_trace else None
    if counts is None:
        return report_text
    return json.dumps(json.loads(report_text) | {"flash_log": counts}, indent=2)


def arrivals(first: list, second: list) -> dict:
    """A race's log writes as the host saw them: each write of the first member paired with the same
    write (offset and length, in order) of the second; the share that reached the first member's
    model first, and the arrival gap (the second's minus the first's, microseconds of the run's
    clock: a served model's trace line's t_us is the host's CLOCK_MONOTONIC, a model: member's the
    virtual clock)."""
    queues: dict[tuple[int, int], list[float]] = {}
    for r in second:
        queues.setdefault((r.offset, r.length), []).append(r.t_us)
    gaps = []
    taken: dict[tuple[int, int], int] = {}
    for r in first:
        key = (r.offset, r.length)
        i = taken.get(key, 0)
        if i < len(queues.get(key, [])):
            gaps.append(queues[key][i] - r.t_us)
            taken[key] = i + 1
    if not gaps:
        return {"pairs": 0}
    return {"pairs": len(gaps), "first_arrived_first_pct": 100.0 * sum(g > 0 for g in gaps) / len(gaps),
            "gap_p50_us": statistics.median(gaps), "abs_gap_p50_us": statistics.median(abs(g) for g in gaps)}


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
    ("writes the flash log completed first %", lambda d, r: 100.0 * d["write"]["flashlog_first"]
     / d["write"]["flashlog_races"] if d["write"].get("flashlog_races") else None, "{:.1f}"),
    ("flushes/s", _per_s("flush"), "{:,.0f}"),
    ("errors", lambda d, r: d["write"].get("errors", 0) + d["flush"].get("errors", 0), "{:,.0f}"),
]


ONLY_WHERE_GIVEN = {"writes the flash log completed first %"}  # rows a table has only for a disk that gives them


def table(runs: list) -> list[list[str]]:
    """The device table of one configuration's runs (metrics.Run with a device_trace): a header
    naming each model-served disk (a race has two) and its profile, then one row per column of
    COLUMNS with the medians of the runs (rows, as the AWR-like tables: it stays narrow); [] when
    no run was traced."""
    traced = [r for r in runs if r.report and r.entry.get("device_trace")]
    if not traced:
        return []
    disks = list(traced[0].entry["device_trace"].items())
    out = [["the model's trace", *(f"{disk} ({first['profile']})" for disk, first in disks)]]
    for label, get, fmt in COLUMNS:
        row = [label, *(_median_text([_value(get, r.entry["device_trace"].get(disk), r.report)
                                      for r in traced], fmt) for disk, _ in disks)]
        if label not in ONLY_WHERE_GIVEN or set(row[1:]) != {"-"}:
            out.append(row)
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


_RACE_KEYS = {"pairs", "first_arrived_first_pct", "gap_p50_us", "abs_gap_p50_us"}


def race_lines(bs: int, runs: list) -> list[str]:
    """For a race of two model-served members: which member's model each log write reached first
    (medians of the runs), beside the wins redo-writer counted in the guest."""
    traced = [r for r in runs if r.report and len(r.entry.get("device_trace") or {}) == 2]
    races = [(next(iter(r.entry["device_trace"])), r) for r in traced
             if _RACE_KEYS <= set(next(iter(r.entry["device_trace"].values())).get("race", {}))
             and next(iter(r.entry["device_trace"].values()))["race"]["pairs"]]
    if not races:
        return []
    first = races[0][0]
    other = [name for name in races[0][1].entry["device_trace"] if name != first][0]
    got = [r.entry["device_trace"][name]["race"] for name, r in races if name == first]
    share = statistics.median(g["first_arrived_first_pct"] for g in got)
    gap = statistics.median(g["gap_p50_us"] for g in got)
    size = statistics.median(g["abs_gap_p50_us"] for g in got)
    return [f"- BLOCKSIZE {bs}: a log write reached `{first}`'s model before `{other}`'s in {share:.1f} % of the "
            f"pairs (medians of {len(got)} run{'s' if len(got) > 1 else ''}); `{other}` got it {gap:,.0f} us "
            f"later at the median, {size:,.0f} us apart either way", ""]
