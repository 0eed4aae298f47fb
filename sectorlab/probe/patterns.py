"""What a probe issues: each figure's requests, laid out on the target and interleaved.

A figure is one kind of timed request (a 512-byte durable write into a unit not written lately, a
64 KiB read, ...). Requests that set a figure up (the whole unit written before a partial write into
it, the write before a flush) are issued and not timed into it. Every write goes to a slot of its own
(SLOT bytes, never written again in the probe) but the appends, which follow each other as a log
writer's do; reads go anywhere on the target. Each figure's batches (one request, a set-up and its
request, or a run of appends) are spread evenly over the probe, in an order drawn from the seed, so
that a drift of the host or the device over the probe falls on every figure alike.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

SIZES = (512, 1024, 2048, 4096, 8192, 16384, 32768, 65536)
SLOT = 128 << 10           # a fresh slot per timed write: room for 64 KiB misaligned
MISALIGN = 512             # a misaligned write starts this far past a 64 KiB boundary
APPEND_RUN = 10            # appends follow each other in runs of this many (a log writer's stream)
READ_SIZES = (4096, 65536)


@dataclass(frozen=True)
class Figure:
    name: str
    op: str          # write-durable | write | read | flush: the timed request
    size: int        # bytes (0: a flush)
    what: str        # what it stands for, for the report

    @property
    def is_write(self) -> bool:
        return self.op.startswith("write")


def figures(logical: int, only: frozenset[str] | None = None) -> list[Figure]:
    """The figures for a target whose logical block is `logical` bytes: sizes below it are not
    issued (the device refuses them); `only` these when given."""
    return [f for f in _figures(logical) if only is None or f.name in only]


def _figures(logical: int) -> list[Figure]:
    out = [Figure(f"append-{b}", "write-durable", b, f"redo's log writes at BLOCKSIZE {b}: QD1 appends of {b} B, "
                  "durable (O_DSYNC, FUA)") for b in (512, 4096) if b >= logical]
    if logical < 4096:
        out += [Figure("partial-cold", "write-durable", logical, f"{logical} B written {MISALIGN} B into a 4 KiB "
                       "unit not written lately: does the device read the unit first"),
                Figure("partial-after-whole", "write-durable", logical, f"{logical} B into the unit just written "
                       "whole: does a buffer merge it without a read"),
                Figure("partial-after-other", "write-durable", logical, f"{logical} B into a cold unit right after a "
                       "whole 4 KiB write elsewhere: what the one into the unit just written is held against")]
    for size in SIZES:
        if size >= logical:
            out.append(Figure(f"aligned-{size}", "write-durable", size, f"{size} B at a 64 KiB boundary"))
            if MISALIGN % logical == 0:
                out.append(Figure(f"misaligned-{size}", "write-durable", size,
                                  f"{size} B {MISALIGN} B past a 64 KiB boundary"))
    out.append(Figure("flush", "flush", 0, "a flush after a 4 KiB write that was not durable"))
    out += [Figure(f"read-{size}", "read", size, f"random {size} B reads") for size in READ_SIZES]
    return out


def kind_and_size(name: str) -> tuple[str, int]:
    """A figure's name as its kind and size in bytes ("aligned-4096": ("aligned", 4096); "flush":
    ("flush", 0)): the one reading of the names figures() gives, for a name from anywhere (a record
    read back included: a name that is not one reads as its whole self, size 0)."""
    kind, _, size = name.rpartition("-")
    return (kind, int(size)) if kind and size.isdigit() and len(size) <= 9 else (name, 0)


@dataclass(frozen=True)
class Layout:
    requests: list[str]          # redo-writer io's lines
    labels: list[str | None]     # the figure each request is timed into (None: set-up)
    size: int                    # bytes of the target the layout uses

    def chunks(self, k: int) -> list[Layout]:
        """The layout in k consecutive parts (a set-up never parted from its request): a probe and
        its floor take turns part by part, so that a drift of the host falls on both alike."""
        cuts = [0]
        for i in range(1, k):
            at = len(self.requests) * i // k
            while at < len(self.requests) and self.labels[at - 1] is None:
                at += 1
            cuts.append(max(at, cuts[-1]))
        cuts.append(len(self.requests))
        return [Layout(self.requests[a:b], self.labels[a:b], self.size) for a, b in zip(cuts, cuts[1:]) if b > a]


def needed_bytes(samples: int, logical: int, only: frozenset[str] | None = None) -> int:
    """The target's bytes a probe of `samples` a figure uses: a slot per timed write (and the
    appends' runs), rounded to MiB."""
    figs = figures(logical, only)
    slots = sum(samples for f in figs if f.is_write and not f.name.startswith("append"))
    slots += samples  # the flush's writes
    slots += samples * any(f.name == "partial-after-other" for f in figs)  # its set-ups
    appends = sum(samples * f.size for f in figs if f.name.startswith("append"))
    total = slots * SLOT + appends + SLOT
    return (total + (1 << 20) - 1) >> 20 << 20


def layout(samples: int, logical: int, size: int, seed: int, only: frozenset[str] | None = None,
           base: int = 0) -> Layout:
    """`samples` timed requests of each figure (of `only`, when given) on `size` bytes of a target
    from `base` on (a pilot's region apart from the probe's: no slot of the probe is written before)."""
    figs = figures(logical, only)
    need = needed_bytes(samples, logical, only)
    if size < need:
        raise ValueError(f"{samples} samples a figure need {need >> 20} MiB of the target, it has {size >> 20} MiB")
    rng = random.Random(seed)
    slots = iter(range(base, base + size, SLOT))
    append_at = {}
    for f in figs:
        if f.name.startswith("append"):
            start = next(slots)
            for _ in range(-(-samples * f.size // SLOT) - 1):
                next(slots)
            append_at[f.name] = start
    fill_end = size  # reads go anywhere in the target
    # A path's cost depends on the request before (a guest's under TCG was 38-75 us less after a 22 us
    # write than after the probe's others: a drive with no buffer was taken for one that merges, at
    # p = 2e-13, docs/probe.md), so each comparison is between figures whose requests come after
    # alike: a partial write into the unit just written comes after its set-up (a whole 4 KiB write)
    # and is held against one into a cold unit after a whole 4 KiB write elsewhere (partial-after-other:
    # the two differ in the unit alone); the read first is partial-cold against whole writes, each
    # after whatever came before (set after a write instead, its step in a guest fell to p = 0.005).
    # The set-ups of partial-after-other go to slots past all the others' (a disk's head comes to the
    # cold unit from afar).
    other = any(f.name == "partial-after-other" for f in figs)
    setups = iter(range(base + need - SLOT * (samples + 1), base + need, SLOT)) if other else iter(())
    batches: dict[str, list[list[tuple[str, str | None]]]] = {}
    for f in figs:
        runs: list[list[tuple[str, str | None]]] = []
        for i in range(samples):
            if f.name.startswith("append"):
                if i % APPEND_RUN == 0:
                    runs.append([])
                runs[-1].append((f"write-durable {append_at[f.name] + i * f.size} {f.size}", f.name))
            elif f.name == "partial-cold":
                runs.append([(f"write-durable {next(slots) + MISALIGN} {f.size}", f.name)])
            elif f.name == "partial-after-other":
                runs.append([(f"write-durable {next(setups)} 4096", None),
                             (f"write-durable {next(slots) + MISALIGN} {f.size}", f.name)])
            elif f.name == "partial-after-whole":
                at = next(slots)
                runs.append([(f"write-durable {at} 4096", None), (f"write-durable {at + MISALIGN} {f.size}", f.name)])
            elif f.name.startswith(("aligned", "misaligned")):
                at = next(slots) + (MISALIGN if f.name.startswith("mis") else 0)
                runs.append([(f"write-durable {at} {f.size}", f.name)])
            elif f.name == "flush":
                runs.append([(f"write {next(slots)} 4096", None), ("flush", f.name)])
            else:  # a random read, aligned to its size
                at = base + rng.randrange(0, fill_end // f.size) * f.size
                runs.append([(f"read {at} {f.size}", f.name)])
        batches[f.name] = runs
    # Each figure's batches spread evenly over the probe (the k-th of n at (k + u) / n, u drawn per
    # batch), so that the appends' few runs are not all at its start.
    placed = sorted(((k + rng.random()) / len(runs), name, k) for name, runs in batches.items()
                    for k in range(len(runs)))
    requests: list[str] = []
    labels: list[str | None] = []
    for _, name, k in placed:
        for line, label in batches[name][k]:
            requests.append(line)
            labels.append(label)
    return Layout(requests, labels, base + size)
