"""What a power cut at one moment leaves of a run's writes, decided from the device model's trace
(devices/trace.py: each write's arrival, its start on the media, when it was answered and when it
became durable) and the profile's power-loss rules (docs/crash.md has them with their sources):

- a write durable before the cut survives: on the media, in a protected cache, or destaged or
  flushed from a volatile one (a volatile cache the model sizes drains in order: its trace says
  when; one it does not size, a flush-only volatile disk, keeps a write until a flush completes);
- a write not yet on the media at the cut (in a queue, or only in a volatile cache) is lost whole;
- a write on the media at the cut (between its start there and its durability) lands torn at the
  device's atomic unit (its physical sector, or its flash write unit when larger): each unit whole
  or not at all, drawn from a seeded generator; on a profile whose power loss is `unprotected`, a
  unit the write covers only in part (a read-modify-write, a partial program) is old, new or
  unreadable, its neighbours' bytes included.

A state is a list of byte ranges that landed, each with the write it is of (its bytes: the run's
final image where no byte was written twice, else the write log's, crash/writelog.py), and a list of
unreadable ranges. Nothing here reads a disk."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from ..devices import profiles
from ..devices.trace import Request
from ..errors import UsageError

OUTCOMES = ("old", "new", "unreadable")


@dataclass(frozen=True)
class Rules:
    """A disk's power-loss behaviour: its profile's, at its geometry."""
    profile: str
    power_loss: str          # protected | unprotected
    write_cache: str         # none | protected | volatile
    sized_cache: bool        # the model sizes the cache (its trace says when a write is destaged)
    unit: int                # the atomic unit: bytes that land whole or not at all
    destage_mbps: float = 0  # how fast a sized cache drains

    @classmethod
    def of(cls, profile: str, params: dict[str, str], logical: int) -> Rules:
        """The rules of a disk served by `profile` with these model parameters (modelled.params:
        the physical sector of its geometry included); one line when the profile does not say what
        a power cut does."""
        p = profiles.get(profile)
        if p.flash_log:
            raise UsageError(f"device profile {profile!r} is a cell with a flash log: its power loss (two media) is "
                             f"not modelled; pick a disk of one medium")
        if p.power_loss is None:
            stated = sorted(n for n, q in profiles.profiles().items() if q.power_loss)
            raise UsageError(f"device profile {profile!r} does not state its power_loss (protected or unprotected): "
                             f"a crash run needs it; profiles that do: {', '.join(stated)}")
        unit = max(int(logical), profiles.size_bytes(params.get("physical-sector", "0")),
                   profiles.size_bytes(params.get("write-unit", "0")))
        return cls(profile, p.power_loss, p.write_cache, "cache-size" in params, unit,
                   float(params.get("cache-destage-mbps", "0")))

    @classmethod
    def at(cls, profile: str, logical: int, physical: int) -> Rules:
        """The rules of a disk served by `profile` at these sectors: the one way from a profile and a
        geometry to what a power cut does (the model's parameters are the profile's at them,
        DeviceProfile.params_for, as the lab and the device path serve it)."""
        return cls.of(profile, profiles.get(profile).params_for(logical, physical), logical)


@dataclass(frozen=True)
class State:
    """What survives a cut at `cut_us`: the byte ranges of writes that landed (offset, length), and
    the ranges a medium error makes unreadable; and per write what became of it."""
    cut_us: float
    landed: tuple[tuple[int, int], ...]
    unreadable: tuple[tuple[int, int], ...]
    writes_durable: int      # durable before the cut
    writes_lost: int         # submitted, not on the media at the cut (nothing of them landed)
    writes_torn: int         # on the media at the cut: landed unit by unit
    units_unreadable: int
    sources: tuple[int, ...] = ()  # per landed range, the index in the requests given of the write it is of


def timeline(writes: list[Request], flushes: list[Request], rules: Rules) -> list[tuple[float, float]]:
    """Per write, when it is on the media (from then until it is durable, a cut tears it) and when
    it is durable (us, on the trace's clock; inf: never in the run):
    - a volatile cache the model sizes drains in order: the model says when the drain has passed
      the write; it was on the media for the time its own bytes take to drain;
    - a volatile disk whose cache the model does not size keeps a write in its cache until a flush
      that arrived after the write was answered writes it out: on the media while that flush runs;
    - otherwise the write is on the media from the end of its queue until the model's durability."""
    flush_times = _flushes(flushes)
    out = []
    for w in writes:
        durable = w.t_us + w.durable_us if not math.isnan(w.durable_us) else math.inf
        if rules.write_cache == "volatile" and not rules.sized_cache:
            out.append(_flush_after(flush_times, w.t_us + w.answer_us))
        elif w.cached and rules.write_cache == "volatile" and math.isfinite(durable):
            out.append((max(w.t_us, durable - w.length / rules.destage_mbps), durable))  # bytes at MB/s: us
        else:
            out.append((w.t_us + w.queue_us, durable))
    return out


def cut(requests: list[Request], rules: Rules, cut_us: float, rng: random.Random) -> State:
    """The state a cut at `cut_us` leaves (the trace's clock), the tears drawn from `rng`."""
    index = [i for i, r in enumerate(requests) if r.op in ("write", "zero") and not r.error and r.length]
    writes = [requests[i] for i in index]
    flushes = [r for r in requests if r.op == "flush"]
    landed, unreadable, sources = [], [], []
    n_durable = n_lost = n_torn = n_bad = 0
    for i, w, (on_media, durable) in zip(index, writes, timeline(writes, flushes, rules)):
        if w.t_us > cut_us:
            continue
        if durable <= cut_us:
            landed.append((w.offset, w.length))
            sources.append(i)
            n_durable += 1
        elif on_media > cut_us:
            n_lost += 1
        else:
            n_torn += 1
            for start, length, partial in _units(w.offset, w.length, rules.unit):
                outcome = rng.choice(OUTCOMES if partial and rules.power_loss == "unprotected" else OUTCOMES[:2])
                if outcome == "new":
                    landed.append((start, length))
                    sources.append(i)
                elif outcome == "unreadable":
                    unit_start = start - start % rules.unit
                    unreadable.append((unit_start, rules.unit))
                    n_bad += 1
    return State(cut_us, tuple(landed), tuple(unreadable), n_durable, n_lost, n_torn, n_bad, tuple(sources))


def _units(offset: int, length: int, unit: int) -> list[tuple[int, int, bool]]:
    """The write cut at the unit's boundaries: (offset, length, covers its unit only in part)."""
    out, pos, end = [], offset, offset + length
    while pos < end:
        stop = min(end, (pos // unit + 1) * unit)
        out.append((pos, stop - pos, stop - pos < unit))
        pos = stop
    return out


def acknowledged_at(writes: list[Request], flushes: list[Request]) -> list[float]:
    """When each write was acknowledged to the writer (us, the trace's clock, which the filter writes
    on the host at the reply: outside the disk that crashes): its reply when it was a FUA write, else
    the reply of the first flush that arrived after its reply; inf when none did."""
    flush_times = _flushes(flushes)
    return [w.t_us + w.answer_us if w.fua else _flush_after(flush_times, w.t_us + w.answer_us)[1] for w in writes]


def _flushes(flushes: list[Request]) -> list[tuple[float, float, float]]:
    """The flushes that succeeded: (arrival, start, reply), us on the trace's clock, in arrival order."""
    return sorted((f.t_us, f.t_us + f.queue_us, f.t_us + f.answer_us) for f in flushes if not f.error)


def _flush_after(flush_times: list[tuple[float, float, float]], answered: float) -> tuple[float, float]:
    """(start, reply) of the first flush that arrived after a write's reply: the one that makes it
    durable and acknowledges it; (inf, inf) when none did."""
    return next(((start, done) for arrived, start, done in flush_times if arrived >= answered), (math.inf, math.inf))
