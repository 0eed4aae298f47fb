"""A run's redo log as its disk's trace has it (RedoLog: the log writes in log order, the flushes,
each write's end in redo bytes, the redo acknowledged at any moment), and the disk a cut leaves of
the final image: a new sparse file (disk_after) or the image itself, its unlanded bytes punched out
(cut_in_place). Each read a piece (CHUNK) at a time, never the whole disk."""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

from ..devices import trace
from ..errors import SectorlabError
from . import powerloss

WORK_DIR = Path("/dev/shm")   # the disks' files: a flush of the file plugin costs nothing on tmpfs

HEADER = struct.Struct("<BBHIII")  # type, version, used, block number, sequence, checksum (redo-writer/redoblock.h)


# The most bytes of a disk image held in memory at once: a cut's disk is built and its log read in
# pieces of this, never whole (a log of 2 GiB read whole took 2.1 GB; 4 GiB was a MemoryError).
CHUNK = 1 << 20


@dataclass
class RedoLog:
    """A run's log as its disk's trace has it: the log writes in log order (each byte written once:
    the log did not wrap), the flushes, and what the writes reach in whole blocks (the image a cut
    leaves, and what verify reads)."""
    writes: list[trace.Request]
    flushes: list[trace.Request]
    blocksize: int
    extent: int
    ends: list[int] | None = None      # per write, the redo byte position at its end (positions())
    pass_of: list[int] | None = None   # per write of a wrapping log, where its pass began (positions_logged())

    @classmethod
    def wrapping(cls, requests: list[trace.Request], blocksize: int, log_size: int, what: str) -> RedoLog:
        """A log that wraps (its blocks overwritten pass after pass): its writes in arrival order, the
        order the log writer issued them in; positions_logged reads what they carried."""
        writes = sorted((r for r in requests if r.op == "write" and not r.error), key=lambda r: r.t_us)
        if not writes:
            raise SectorlabError(f"{what}: the disk's trace has no write: nothing to cut")
        return cls(writes, [r for r in requests if r.op == "flush"], blocksize, log_size)

    def positions_logged(self, requests: list[trace.Request], log_path: Path) -> None:
        """Each write's end in redo bytes, as positions() finds them, read from the model's write log
        (the bytes each write carried, whatever overwrote them after): one block header at a time."""
        from . import writelog
        matched = writelog.match(requests, writelog.records(log_path))
        record = {id(requests[i]): rec for i, rec in matched.items()}
        self.ends, pos = [], 0
        fd, _ = writelog.open_log(log_path)
        try:
            for w in self.writes:
                rec = record[id(w)]
                for k in range(0, w.length, self.blocksize):
                    head = os.pread(fd, HEADER.size, rec.data_at + k)
                    if len(head) < HEADER.size:
                        raise SectorlabError(f"{log_path}: cut short within the write at {w.offset}")
                    pos += HEADER.unpack(head)[2]
                self.ends.append(pos)
        finally:
            os.close(fd)
        self._acked = powerloss.acknowledged_at(self.writes, self.flushes)
        # per write, where its pass over the log began, in redo bytes (a pass begins at a write that
        # went back to an earlier place in the log)
        self.pass_of, start = [], 0
        for i, w in enumerate(self.writes):
            if i and w.offset < self.writes[i - 1].offset:
                start = self.ends[i - 1]
            self.pass_of.append(start)

    def pass_start(self, at_us: float) -> int:
        """The redo position at which the pass over the log that the cut at `at_us` finds the log
        writer in began (that of the last write that arrived before it; a log that never wrapped:
        0). A single file that wraps stands for a database's log groups, used in turn: redo of the
        passes before it was in another group, which a database does not reuse before its
        checkpoint has written that redo to the datafiles; a cut can lose only this pass's."""
        if not self.pass_of:
            return 0
        arrived = [s for w, s in zip(self.writes, self.pass_of) if w.t_us <= at_us]
        return arrived[-1] if arrived else 0

    @classmethod
    def of(cls, requests: list[trace.Request], blocksize: int, what: str) -> RedoLog:
        writes = sorted((r for r in requests if r.op == "write" and not r.error), key=lambda r: r.offset)
        if not writes:
            raise SectorlabError(f"{what}: the disk's trace has no write: nothing to cut")
        for a, b in zip(writes, writes[1:]):
            if a.offset + a.length > b.offset:
                raise SectorlabError(f"{what}: bytes {b.offset}-{a.offset + a.length} were written twice: a cut's "
                                     f"state is built from each byte written once")
        extent = -(-max(w.offset + w.length for w in writes) // blocksize) * blocksize
        return cls(writes, [r for r in requests if r.op == "flush"], blocksize, extent)

    def positions(self, image: Path) -> None:
        """Each write's end in redo bytes: the redo its blocks carry (each block header's `used`)
        added up from the log's start, read from the final image a piece (CHUNK) at a time."""
        self.ends, pos = [], 0
        with open(image, "rb", buffering=0) as f:
            for w in self.writes:
                for data, blocks in _pieces(f.fileno(), image, w.offset, w.length, self.blocksize):
                    pos += sum(HEADER.unpack_from(data, k)[2] for k in blocks)
                self.ends.append(pos)
        self._acked = powerloss.acknowledged_at(self.writes, self.flushes)

    def acknowledged(self, at_us: float) -> int:
        """The redo position every commit acknowledged before `at_us` lies within."""
        return max([e for e, a in zip(self.ends, self._acked) if a <= at_us], default=0)


def _pieces(fd: int, path: Path, offset: int, length: int, blocksize: int):
    """The blocks of `length` bytes at `offset`, read CHUNK (whole blocks) at a time: (a piece's
    bytes, the offsets in them of its blocks' headers)."""
    step = max(CHUNK // blocksize, 1) * blocksize
    for start in range(offset, offset + length, step):
        n = min(step, offset + length - start)
        blocks = range(0, n, blocksize)
        want = max(n, blocks[-1] + HEADER.size)
        data = os.pread(fd, want, start)
        if len(data) < want:
            raise SectorlabError(f"{path}: ends at byte {start + len(data)}, before the log write at {offset} "
                                 f"(+{length}) that its disk's trace has")
        yield data, blocks


def disk_after(final: Path, state: powerloss.State, out: Path | int, size: int) -> None:
    """The disk a cut left, written to `out` (a path made new, or a new file's descriptor) as a
    sparse file of `size` bytes: the landed bytes copied from the final image a piece (CHUNK) at a
    time, the rest as never written (zeros; the unreadable ranges are the state's, for verify to be
    told). Every byte of the log is written once, so the landed ranges' order does not matter:
    they are copied merged, in disk order."""
    merged = _landed(state, size)
    with open(final, "rb", buffering=0) as src, open(out, "xb" if not isinstance(out, int) else "wb",
                                                     buffering=0) as dst:
        dst.truncate(size)
        for off, end in merged:
            while off < end:
                data = os.pread(src.fileno(), min(CHUNK, end - off), off)
                if not data:
                    raise SectorlabError(f"{final}: ends at byte {off}, within bytes the cut left landed "
                                         f"(up to {end})")
                off += os.pwrite(dst.fileno(), data, off)


def _landed(state: powerloss.State, size: int) -> list[list[int]]:
    """The cut's landed ranges within `size` bytes, merged, in disk order ([start, end) each)."""
    merged: list[list[int]] = []
    for off, length in sorted(state.landed):
        end = min(off + length, size)
        if end <= off:
            continue
        if merged and off <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([off, end])
    return merged


_FALLOC_FL_KEEP_SIZE, _FALLOC_FL_PUNCH_HOLE = 0x01, 0x02


def cut_in_place(image: Path, state: powerloss.State) -> None:
    """The disk a cut left, made of the final image in its own place (no second copy of the disk
    in /dev/shm, which is memory): every byte that did not land is punched out, a hole that reads
    as zeros, as never written. Where the filesystem cannot punch holes, zeros are written a piece
    (CHUNK) at a time."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
    with open(image, "r+b", buffering=0) as f:
        size = os.fstat(f.fileno()).st_size
        pos = 0
        for start, end in [*_landed(state, size), [size, size]]:
            if start > pos and libc.fallocate(f.fileno(), _FALLOC_FL_PUNCH_HOLE | _FALLOC_FL_KEEP_SIZE,
                                              pos, start - pos) != 0:
                for off in range(pos, start, CHUNK):
                    os.pwrite(f.fileno(), bytes(min(CHUNK, start - off)), off)
            pos = max(pos, end)
