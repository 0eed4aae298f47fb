"""What a power cut at one moment leaves of a run's writes, decided from the device model's trace
(devices/trace.py: each write's arrival, when its bytes start going onto the medium, when it was
answered and when it became durable) and the profile's power-loss rules (docs/crash.md has them
with their sources):

- a write durable before the cut survives: on the media, in a protected cache, or destaged or
  flushed from a volatile one (a volatile cache the model sizes drains in order: its trace says
  when; one it does not size, a flush-only volatile disk, keeps a write until a flush completes);
- a write whose bytes had not started onto the medium at the cut (in a queue, positioning, reading
  the sector it modifies, or only in a volatile cache) is lost whole: its old bytes stay as they were;
- a write in its **window** at the cut (its bytes going onto the medium: the model's media_us to
  its durability, the units it writes at the medium's rate) lands torn at the device's atomic unit
  (its physical sector, or its flash write unit when larger): each unit whole or not at all, drawn
  from a seeded generator; on a profile whose power loss is `unprotected`, a unit the write covers
  only in part (a read-modify-write, a partial program) is old, new or unreadable, its neighbours'
  bytes included (the odds: Shares, assumed, and swept by `sectorlab crash`).

A drive that lies (its model's `lies-about`) acknowledges a flush or a FUA write before the write is
durable: a cut between the acknowledgement and the window loses the write whole, its commit
acknowledged.

So a cut outside every window tears nothing and, on a drive that does not lie, loses nothing
acknowledged: `windows` gives them (merged, with a lying drive's spans from acknowledgement to
durability), `exposure` the share of a span they cover, `inside` a moment drawn uniformly from them
(how a rare tear is sampled on purpose), and `cannot_lose` the rule, when there is one, by which no
cut of a cell loses an acknowledged commit.

A state is a list of byte ranges that landed, each with the write it is of (its bytes: the run's
final image where no byte was written twice, else the write log's, crash/writelog.py), and a list of
unreadable ranges. Nothing here reads a disk."""

from __future__ import annotations

import bisect
import math
import random
from dataclasses import dataclass

from ..devices import profiles
from ..devices.trace import Request
from ..errors import SectorlabError, UsageError


@dataclass(frozen=True)
class Shares:
    """The assumed odds of a tear's outcomes (no vendor publishes them; docs/crash.md): a unit the
    write covers only in part, on an unprotected drive, is unreadable with `unreadable`; any other
    unit of a torn write lands new with `new`, else old."""
    unreadable: float = 1 / 3
    new: float = 0.5

    def __post_init__(self):
        for name in ("unreadable", "new"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
                raise UsageError(f"the share {name} = {v!r}: expected a probability from 0 to 1")

    def outcome(self, rng: random.Random, may_be_unreadable: bool) -> str:
        """One unit's outcome, drawn from `rng`."""
        if may_be_unreadable and rng.random() < self.unreadable:
            return "unreadable"
        return "new" if rng.random() < self.new else "old"


DEFAULT_SHARES = Shares()


def lies_about_flush(lies_about: str) -> bool:
    """Whether a model's lies-about (fua, flush, fua,flush or none; the model refuses any other)
    makes it acknowledge a flush before what its cache holds is durable."""
    return "flush" in lies_about.split(",")


@dataclass(frozen=True)
class Rules:
    """A disk's power-loss behaviour: its profile's, at its geometry."""
    profile: str
    power_loss: str          # protected | unprotected
    write_cache: str         # none | protected | volatile
    sized_cache: bool        # the model sizes the cache (its trace says when a write is destaged)
    unit: int                # the atomic unit: bytes that land whole or not at all
    destage_mbps: float = 0  # how fast a sized cache drains
    shares: Shares = DEFAULT_SHARES
    lies_about: str = "none"  # the model's lies-about: what the drive acknowledges before it is durable

    @property
    def lies_about_flush(self) -> bool:
        return lies_about_flush(self.lies_about)

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
        rate = params.get("write-mbps", "0")
        try:
            rated = float(rate) > 0
        except ValueError:
            rated = False
        if not rated:
            raise UsageError(f"device profile {profile!r}: write-mbps = {rate!r}: a crash run needs the rate at which "
                             f"the medium takes a write's bytes (its window, the only time a cut can tear it), "
                             f"expected MB/s above 0; give the profile its media rate, with its source")
        unit = max(int(logical), profiles.size_bytes(params.get("physical-sector", "0")),
                   profiles.size_bytes(params.get("write-unit", "0")))
        return cls(profile, p.power_loss, p.write_cache, "cache-size" in params, unit,
                   float(params.get("cache-destage-mbps", "0")), lies_about=params.get("lies-about", "none"))

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
    """Per write, its window: when its bytes start going onto the medium (from then until it is
    durable a cut tears it; before, the write is lost whole) and when it is durable (us, on the
    trace's clock; inf: never in the run):
    - a volatile disk whose cache the model does not size keeps a write in its cache until a flush
      that arrived after the write was answered writes it out: in its window while that flush runs
      (the model does not say where in the flush its bytes go: the whole flush, an upper bound);
    - otherwise the model's own: its media_us (the units it writes at the medium's rate, the last
      stretch before durable: after positioning and any read of a read-modify-write; for a volatile
      cache the model sizes, the drain's transfer of them) until its durable_us."""
    flush_times = _flushes(flushes)
    out = []
    for w in writes:
        durable = w.t_us + w.durable_us if not math.isnan(w.durable_us) else math.inf
        if rules.write_cache == "volatile" and not rules.sized_cache:
            out.append(_flush_after(flush_times, w.t_us + w.answer_us))
        elif math.isnan(w.media_us):
            if math.isfinite(durable):
                raise SectorlabError(f"the write at {w.t_us:.3f} us has a durability but no media_us: the trace was "
                                     f"written by a device model older than its write windows; run again with the "
                                     f"model this checkout builds (a lab: make lab-up again)")
            out.append((math.inf, math.inf))
        else:
            out.append((w.t_us + w.media_us, durable))
    return out


# The trace's times are written to 0.001 us; a flush answered at the very moment its last write is
# durable can read back a rounding below it, which is not an acknowledgement before durability.
TIME_RESOLUTION_US = 0.001


def _early(ack: float, durable: float) -> bool:
    """Whether an acknowledgement came before durability, by more than the trace's rounding."""
    return ack < durable - TIME_RESOLUTION_US / 2


def exposed(writes: list[Request], flushes: list[Request], rules: Rules) -> list[tuple[float, float]]:
    """Per write, the span in which a cut can hurt it: its window (timeline), from its
    acknowledgement when that came first (a drive that lies about a flush or a FUA write,
    `lies-about`: a cut between the acknowledgement and the window loses the write whole, its
    commit acknowledged)."""
    return [(min(a, ack), b) if _early(ack, b) else (a, b)
            for (a, b), ack in zip(timeline(writes, flushes, rules), acknowledged_at(writes, flushes))]


def windows(writes: list[Request], flushes: list[Request], rules: Rules, start: float = -math.inf,
            end: float = math.inf) -> list[tuple[float, float]]:
    """The moments between `start` and `end` at which a cut finds a write in its window, or
    acknowledged and not yet durable (exposed), as merged, sorted (from, to) intervals: a cut
    anywhere else tears nothing and loses nothing acknowledged."""
    return merged([(max(a, start), min(b, end)) for a, b in exposed(writes, flushes, rules)
                   if math.isfinite(a) and max(a, start) < min(b, end)])


def acknowledged_early(writes: list[Request], flushes: list[Request], rules: Rules) -> int:
    """How many writes were acknowledged (their FUA reply, or the flush after them) before they were
    durable: 0 on a drive that does not lie."""
    return sum(_early(ack, b) for (_, b), ack in zip(timeline(writes, flushes, rules),
                                                     acknowledged_at(writes, flushes)))


def merged(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Intervals (from, to) merged where they overlap, sorted: a moment in any is in one."""
    out: list[tuple[float, float]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def exposure(spans: list[tuple[float, float]], start: float, end: float) -> float:
    """The share of the time from `start` to `end` that the windows `spans` (windows()) cover."""
    return sum(b - a for a, b in spans) / (end - start) if end > start else 0.0


def inside(spans: list[tuple[float, float]], rng: random.Random) -> float:
    """A moment drawn uniformly from the windows `spans` (windows()): a cut that finds a write in
    flight onto the medium, so that a rare tear gets cuts enough to be measured."""
    total = sum(b - a for a, b in spans)
    if not total:
        raise SectorlabError("no write was in its window at any moment of the run: no cut can tear one")
    u = rng.uniform(0, total)
    for a, b in spans:
        if u <= b - a:
            return a + u
        u -= b - a
    return spans[-1][1]


def cannot_lose(rules: Rules, writes: list[Request], flushes: list[Request]) -> str | None:
    """The rule by which no cut loses an acknowledged write's bytes, or None when one can. An
    acknowledged write is durable (its FUA reply, or the flush after it, comes after the model made
    it durable: on a drive that lies about them it does not, and no rule holds); only a later write
    that covers the same atomic unit in part can take its bytes with it, and only on a drive whose
    power loss leaves such a unit unreadable."""
    if acknowledged_early(writes, flushes, rules):
        return None
    partial = partial_unit_writes(writes, rules)
    if rules.power_loss == "protected":
        return ("a protected drive leaves a unit a write covers in part old or new, never unreadable: the bytes "
                "already durable in it survive")
    if not partial:
        return (f"every write covered whole {rules.unit}-byte atomic units: no write shares a unit with bytes "
                f"acknowledged before it")
    return None


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
                outcome = rules.shares.outcome(rng, partial and rules.power_loss == "unprotected")
                if outcome == "new":
                    landed.append((start, length))
                    sources.append(i)
                elif outcome == "unreadable":
                    unit_start = start - start % rules.unit
                    unreadable.append((unit_start, rules.unit))
                    n_bad += 1
    return State(cut_us, tuple(landed), tuple(unreadable), n_durable, n_lost, n_torn, n_bad, tuple(sources))


def partial_unit_writes(writes: list[Request], rules: Rules) -> int:
    """How many of the writes cover an atomic unit only in part (a read-modify-write, a partial program)."""
    return sum(any(p for _, _, p in _units(w.offset, w.length, rules.unit)) for w in writes)


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
    durable and acknowledges it; (inf, inf) when none did. A binary search of the flushes in arrival
    order (a database's trace has thousands of each: a scan per write was 1.6 s a call at 20,000)."""
    i = bisect.bisect_left(flush_times, (answered, -math.inf, -math.inf))
    return flush_times[i][1:] if i < len(flush_times) else (math.inf, math.inf)
