"""A device model's trace (one line per request: the nbdkit filter's, or simulate's decisions),
read back, and what a report shows of it per operation: count, bytes per request, the model's
service time, the service as it was served (the filter's sleep included), the queue wait, the
channels' utilisation, cache hits, read-modify-writes, errors."""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass, fields
from pathlib import Path

from ..errors import SectorlabError

INT_FIELDS = ("offset", "length", "fua", "channel", "cached", "rmw_reads", "unit_reads", "error")
# Absent from a trace written before the model had a write buffer, or a flash log.
OPTIONAL_INT_FIELDS = ("buffer_hits", "flashlog_first")
FLOAT_FIELDS = ("t_us", "queue_us", "service_us", "served_us")
# The flash log's own times, beside the disk's (empty: no flash log, or it failed the request).
# When a write's data survives a power cut, and when its bytes start going onto the medium, from its
# arrival (empty: not a write, or it failed; media_us absent from a trace written before the model
# said it).
OPTIONAL_FLOAT_FIELDS = ("flashlog_queue_us", "flashlog_service_us", "durable_us", "media_us")


@dataclass(frozen=True)
class Request:
    t_us: float
    op: str
    offset: int
    length: int
    fua: int
    channel: int
    queue_us: float
    service_us: float
    served_us: float        # the reply, from its medium's start (nan in simulate's output: only a real run is served)
    cached: int
    rmw_reads: int
    unit_reads: int
    error: int
    buffer_hits: int = 0
    flashlog_first: int = -1  # with a flash log: 1 when it completed first, 0 when the disk did; -1: none
    flashlog_queue_us: float = float("nan")
    flashlog_service_us: float = float("nan")
    durable_us: float = float("nan")   # a write: from arrival until it survives a power cut (devicemodel/model.h)
    media_us: float = float("nan")     # a write: from arrival until its bytes start going onto the medium

    @property
    def answer_us(self) -> float:
        """From arrival to the reply: the disk's queue and service, or the flash log's when it was
        first (the disk's own columns are its medium's, busy whoever answers)."""
        return answer(self.flashlog_first, self.queue_us, self.service_us, self.flashlog_queue_us,
                      self.flashlog_service_us)

    @property
    def answer_service_us(self) -> float:
        """The service time of the medium that answered: what served_us is held against."""
        return self.flashlog_service_us if self.flashlog_first == 1 else self.service_us


def answer(flashlog_first: int, queue_us: float, service_us: float, flashlog_queue_us: float,
           flashlog_service_us: float) -> float:
    """A request's time from arrival to the reply: the flash log's queue and service when it answered
    first, the disk's otherwise (Request.answer_us, answers())."""
    if flashlog_first == 1:
        return flashlog_queue_us + flashlog_service_us
    return queue_us + service_us


_NAN = float("nan")
_REQUIRED = object()


def _same(value):
    return value


def _columns(header: list[str]) -> list[tuple[int | None, type, object]]:
    """Per field of Request, in its order: (the header's column, or None when the trace has none;
    its type; what an empty or absent value gives: _REQUIRED when nothing may stand in)."""
    where = {name: i for i, name in enumerate(header)}
    plan = []
    for f in fields(Request):
        if f.name == "op" or f.name in INT_FIELDS:
            plan.append((where[f.name], int if f.name != "op" else _same, _REQUIRED))  # KeyError: not a trace
        elif f.name in OPTIONAL_INT_FIELDS:
            plan.append((where.get(f.name), int, f.default))
        else:
            plan.append((where.get(f.name), float, _NAN))
    return plan


def parse(text: str) -> list[Request]:
    """A trace's text (its header line first) as requests. The columns are found once from the
    header and each row converted by position (a lab's trace has hundreds of thousands of rows)."""
    reader = csv.reader(text.splitlines())
    header = next(reader, None)
    if header is None:
        return []
    plan, width, rows = None, len(header), []
    for row in reader:
        if not row:
            continue  # a blank line
        plan = plan or _columns(header)
        if len(row) < width:
            row += [None] * (width - len(row))  # as csv.DictReader: a missing value is None
        values = []
        for i, kind, absent in plan:
            v = None if i is None else row[i]
            if absent is _REQUIRED:
                values.append(kind(v))
            elif v is None or v == "":
                values.append(float("nan") if absent is _NAN else absent)  # a NaN of its own, as before
            else:
                values.append(kind(v))
        rows.append(Request(*values))
    return rows


def answers(text: str, op: str) -> list[tuple[float, float]]:
    """(t_us, answer_us) of a trace's requests of one operation, in the trace's order: what parse()
    gives as Request.t_us and Request.answer_us (an empty or absent time a NaN, a short row's missing
    cells empty), read from only the columns they need (an iostat of a model's 100,000 requests,
    devices/heldout.py, spent three quarters of its time making Requests)."""
    reader = csv.reader(text.splitlines())
    header = next(reader, None)
    if header is None:
        return []
    where = {name: i for i, name in enumerate(header)}
    kind = where["op"]  # KeyError: not a trace, as parse() says it
    t, queue, service, first, fqueue, fservice = (where.get(n) for n in (
        "t_us", "queue_us", "service_us", "flashlog_first", "flashlog_queue_us", "flashlog_service_us"))
    width, out = len(header), []

    def time(row: list[str], i: int | None) -> float:
        return float(row[i]) if i is not None and row[i] else float("nan")

    for row in reader:
        if not row:
            continue
        if len(row) < width:
            row += [""] * (width - len(row))
        if row[kind] != op:
            continue
        out.append((time(row, t), answer(int(row[first]) if first is not None and row[first] else -1,
                                         time(row, queue), time(row, service), time(row, fqueue),
                                         time(row, fservice))))
    return out


def end(path: Path) -> int:
    """Where the trace's last whole line ends, in bytes (0: no trace yet). read(path, since=end(path))
    after a run gives that run's requests alone, without parsing the thousands the model served
    before it (the lab's models run from lab-up to lab-down)."""
    try:
        with open(path, "rb") as f:
            pos = f.seek(0, os.SEEK_END)
            while pos > 0:
                step = min(1 << 16, pos)
                f.seek(pos - step)
                newline = f.read(step).rfind(b"\n")
                if newline >= 0:
                    return pos - step + newline + 1
                pos -= step
    except FileNotFoundError:
        pass
    return 0


def lines(path: Path, since: int = 0) -> tuple[str, str]:
    """The trace's header line and its whole lines from byte `since` on (end() of an earlier moment;
    0: all of them). A trace now shorter than `since` was emptied since (its model started again):
    one line, rather than another model's requests read as this one's."""
    with open(path, "rb") as f:
        header = f.readline().decode()
        size = f.seek(0, os.SEEK_END)
        if since > size:
            raise SectorlabError(f"{path}: {size} bytes, fewer than the {since} it had: its device model started "
                                 "again since, and the requests in between are not in it")
        f.seek(max(since, len(header.encode())))
        text = f.read().decode()
    return header, text[: text.rfind("\n") + 1]


def read(path: Path, since: int = 0) -> list[Request]:
    """The requests of the trace's whole lines (from byte `since` on: see end())."""
    header, text = lines(path, since)
    return parse(header + text)


def summary(requests: list[Request], op: str, channels: int = 1) -> dict:
    """What the report shows of one operation's requests (times in microseconds)."""
    import numpy as np  # here: the command line reads traces without it
    rows = [r for r in requests if r.op == op]
    if not rows:
        return {"op": op, "count": 0}
    service = np.array([r.service_us for r in rows])
    served = np.array([r.served_us for r in rows])
    queue = np.array([r.queue_us for r in rows])
    span = max(r.t_us + r.queue_us + r.service_us for r in requests) - min(r.t_us for r in requests)
    busy = sum(r.service_us for r in rows if r.channel >= 0)
    out = {
        "op": op, "count": len(rows), "bytes_per_request": float(np.mean([r.length for r in rows])),
        "service_p50_us": float(np.percentile(service, 50)), "service_p99_us": float(np.percentile(service, 99)),
        "queue_p50_us": float(np.percentile(queue, 50)), "queue_p99_us": float(np.percentile(queue, 99)),
        "await_p50_us": float(np.percentile([r.answer_us for r in rows], 50)),
        "utilisation": busy / (span * channels) if span > 0 else 0.0,
        "cached": sum(r.cached for r in rows), "rmw_reads": sum(r.rmw_reads for r in rows),
        "unit_reads": sum(r.unit_reads for r in rows), "errors": sum(1 for r in rows if r.error),
        "buffer_hits": sum(r.buffer_hits for r in rows),
    }
    raced = [r.flashlog_first for r in rows if r.flashlog_first >= 0]
    if raced:  # a cell with a flash log: who completed the requests first
        out |= {"flashlog_races": len(raced), "flashlog_first": sum(raced)}
    if not np.isnan(served).all():
        out |= {"served_p50_us": float(np.nanpercentile(served, 50)),
                "served_p99_us": float(np.nanpercentile(served, 99))}
    return out
