"""A crash state of a disk whose bytes were overwritten, built from one run: the device model's
write log (the filter's `writelog=`: every write and zero whose data landed, with its arrival and
its bytes; the model's disk is blank when it starts, so the log is the disk's whole history) and
what a cut leaves of those writes (crash/powerloss.py, on the same model's trace). The state is the
blank disk with each landed range of each write laid down in arrival order: a write lost at the cut
leaves what was there before it, a torn one only its units that landed. This is how dm-log-writes
replays a log: any moment of the run can be built without running it again, the database's own
files, its filesystem's journal and everything else on the disk included.

What it cannot build: the bytes a trim dropped (not logged: the state keeps them, as a drive may),
and an order of landing other than arrival for two writes in flight over the same bytes at once."""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

from .. import inputs
from ..devices.trace import Request
from ..errors import SectorlabError
from . import powerloss

MAGIC = b"sectorlab-writelog 1\n"
HEAD = struct.Struct("<QQQ")  # arrival (ns, CLOCK_MONOTONIC), offset, length | op << 32
OPS = {1: "write", 4: "zero"}  # devicemodel/model.h's enum op
COPY = 1 << 20


@dataclass(frozen=True)
class Record:
    arrival_ns: int
    op: str
    offset: int
    length: int
    data_at: int  # where its bytes start in the log (a zero has none)


def open_log(path: Path) -> tuple[int, int]:
    """(descriptor, size) of the write log, opened by the one reader's rules (a regular file, not
    waited on); its size as it is now: what is read, however it grows."""
    fd, st = inputs.open_regular(path, "write log", "the device model's write log")
    return fd, st.st_size


def records(path: Path) -> list[Record]:
    """The log's records, in arrival order (the filter writes each once its data landed); one line
    when it is not a whole write log, or not a regular file (a FIFO is not waited on). Only its
    heads are read, and only up to the size it had when it was opened."""
    out = []
    fd, size = open_log(path)
    with os.fdopen(fd, "rb") as f:
        if f.read(len(MAGIC)) != MAGIC:
            raise SectorlabError(f"{path}: not a device model's write log (it starts {MAGIC!r})")
        pos = len(MAGIC)
        while pos < size:
            head = f.read(HEAD.size)
            if len(head) < HEAD.size:
                raise SectorlabError(f"{path}: cut short at byte {pos} of {size} (a record's head)")
            arrival, offset, packed = HEAD.unpack(head)
            op, length = OPS.get(packed >> 32), packed & 0xFFFFFFFF
            if op is None:
                raise SectorlabError(f"{path}: byte {pos}: op {packed >> 32}, expected 1 (write) or 4 (zero)")
            pos += HEAD.size
            out.append(Record(arrival, op, offset, length, pos))
            if op == "write":
                pos += length
                f.seek(pos)
        if pos != size:
            raise SectorlabError(f"{path}: cut short: its last write's bytes end at {pos}, the file at {size}")
    return sorted(out, key=lambda r: (r.arrival_ns, r.offset, r.length))


def match(requests: list[Request], log: list[Record]) -> dict[int, Record]:
    """Each write and zero of the trace that the model let through (by its index in `requests`), with
    its record: the two in arrival order, the same op, place and length, arrivals within 1 us (the
    trace prints them to the ns)."""
    index = sorted((i for i, r in enumerate(requests) if r.op in ("write", "zero") and not r.error and r.length),
                   key=lambda i: (round(requests[i].t_us * 1000), requests[i].offset, requests[i].length))
    logged = [r for r in log if r.length]
    if len(index) != len(logged):
        raise SectorlabError(f"the write log has {len(logged)} writes and zeros, the trace {len(index)}: they are "
                             f"not of the same run of the model")
    out = {}
    for i, rec in zip(index, logged):
        r = requests[i]
        if (r.op, r.offset, r.length) != (rec.op, rec.offset, rec.length) or abs(r.t_us * 1000 - rec.arrival_ns) > 1000:
            raise SectorlabError(f"the trace's {r.op} of {r.length} bytes at {r.offset} (t {r.t_us:.3f} us) is not the "
                                 f"write log's {rec.op} of {rec.length} at {rec.offset} (t {rec.arrival_ns / 1000:.3f} "
                                 f"us): they are not of the same run of the model")
        out[i] = rec
    return out


def build(log_path: Path, requests: list[Request], state: powerloss.State, size: int, out: Path) -> None:
    """The disk `state` left, written to `out` (a new sparse file of `size` bytes): the landed
    ranges of each write, from the log, in arrival order."""
    matched = match(requests, records(log_path))
    order = sorted(range(len(state.landed)), key=lambda k: requests[state.sources[k]].t_us)
    fd, _ = open_log(log_path)
    with os.fdopen(fd, "rb") as log, open(out, "xb") as disk:
        disk.truncate(size)
        src, dst = log.fileno(), disk.fileno()
        for k in order:
            offset, length = state.landed[k]
            rec = matched[state.sources[k]]
            if offset < rec.offset or offset + length > rec.offset + rec.length or offset + length > size:
                raise SectorlabError(f"a landed range {offset}+{length} is not within its write "
                                     f"{rec.offset}+{rec.length} or the disk's {size} bytes")
            if rec.op == "zero":
                _zero(dst, offset, length)
                continue
            at = rec.data_at + offset - rec.offset
            done = 0
            while done < length:
                chunk = os.pread(src, min(COPY, length - done), at + done)
                if not chunk:
                    raise SectorlabError(f"{log_path}: cut short at byte {at + done}")
                os.pwrite(dst, chunk, offset + done)
                done += len(chunk)


def _zero(fd: int, offset: int, length: int) -> None:
    done = 0
    while done < length:
        n = min(COPY, length - done)
        os.pwrite(fd, bytes(n), offset + done)
        done += n
