"""Device profiles: the catalog's (sectorlab/geometries.json, "device_profiles"), each parameter
with its source and its evidence (datasheet, review, physics, assumed), as the model's key=value
parameters. The model checks them itself: devicemodel/simulate with no requests refuses a bad
parameter in one line, the same line the nbdkit filter would print."""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass, field
from functools import cache

from ..errors import UsageError
from ..geometry import CATALOG
from . import build, tails

EVIDENCE = ("datasheet", "review", "physics", "measured", "assumed")  # measured: a probe of the device
# A device's write cache, and what the guest is shown of it (its queue/write_cache): Linux sends
# flushes and FUA only to a device that says it has a volatile cache, so a device with none, or
# one that power-loss protection makes durable, is presented write-through and gets none.
WRITE_CACHES = {"none": "write through", "protected": "write through", "volatile": "write back"}
# What a power cut does to a write in flight on the media (docs/crash.md): protected, each atomic unit
# (physical sector, or flash write unit) lands whole or not at all, a read-modify-write included;
# unprotected, a unit that a read-modify-write or a partial program had in flight can be left
# unreadable, the logical sectors beside the write included (Dell, "4K Sector HDD FAQ", 2014).
POWER_LOSS = ("protected", "unprotected")


def weaker(a: str, b: str) -> str:
    """Of two media that both answer writes (a cell's disk and its flash log), the cache a host must
    treat the device by: volatile when either is (a write the volatile one answered first is lost
    on a power cut until flushed), else protected when either is, else none."""
    for kind in ("volatile", "protected"):
        if kind in (a, b):
            return kind
    return "none"


@dataclass(frozen=True)
class DeviceProfile:
    name: str
    description: str
    params: dict[str, str]                       # the model's key=value parameters
    write_cache: str                             # none | protected | volatile (WRITE_CACHES); a cell's: the
                                                 # weaker of its disk's and its flash log's
    sources: dict[str, str] = field(default_factory=dict)    # parameter -> where its number comes from
    evidence: dict[str, str] = field(default_factory=dict)   # parameter -> datasheet | physics | assumed
    flash_log: str | None = None                 # the profile whose parameters are its flash log's ("flashlog.")
    base: str | None = None                      # the profile it is a variant of
    power_loss: str | None = None                # protected | unprotected (POWER_LOSS); None: not stated
    quantiles: dict = field(default_factory=dict)  # parameter -> tails.Quantiles: a time given as its
                                                   # source's percentiles, params holding their expansion

    def args(self) -> list[str]:
        return [f"{k}={v}" for k, v in self.params.items()]

    @property
    def presented(self) -> str:
        """The guest's queue/write_cache for a disk this profile serves."""
        return WRITE_CACHES[self.write_cache]

    @property
    def write_unit(self) -> int:
        """The flash write unit its model reads before a partial write (bytes; 0: none: it reads the
        physical sector instead)."""
        return size_bytes(self.params.get("write-unit", "0"))

    def params_for(self, logical: int, physical: int) -> dict[str, str]:
        """The model's parameters for a disk of this profile and sectors: the profile's, and the
        physical sector when larger than the logical one (a 512e disk reads a partly written 4 KiB
        sector first, whatever drive it is; the profile's write unit, when it has one, holds it), on
        each medium of a cell with a flash log (both are written the guest's 512-byte writes)."""
        out = dict(self.params)
        if int(physical) > int(logical):
            out["physical-sector"] = str(physical)
            if self.flash_log:
                out[FLASH_LOG_PREFIX + "physical-sector"] = str(physical)
        return out


SIZE_SUFFIXES = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def size_bytes(text: str) -> int:
    """A model size ("4096", "16k", "1M", as devicemodel/model.c's parse_size reads them: decimal
    digits, one suffix) in bytes; ValueError for what the model would refuse (Python's int() takes
    '+4097', ' 4097' and '4_097')."""
    if not re.fullmatch(r"[0-9]+[kmgtKMGT]?", text):
        raise ValueError(f"{text!r} is not a size: expected decimal digits and at most one of k, M, G, T")
    mult = SIZE_SUFFIXES.get(text[-1:].lower(), 1)
    return int(text[:-1] if mult > 1 else text) * mult


def buffer_problem(params: dict[str, str]) -> str | None:
    """Why a write buffer (write-buffer=BYTES, of write-unit units) is not a whole number of write
    units, on the model or its flash log (flashlog.), with the nearest whole multiples; None when it
    is, or there is none. The model refuses such a buffer too (it held the units that fit and dropped
    the rest unsaid: 6,000 bytes of 4 KiB units held one); this says it before a model starts."""
    for prefix in ("", FLASH_LOG_PREFIX):
        buffer, unit = params.get(prefix + "write-buffer"), params.get(prefix + "write-unit")
        try:
            b, u = size_bytes(str(buffer)), size_bytes(str(unit))
        except ValueError:  # absent or not a size: the model says what is wrong with it
            continue
        if not b or not u or b % u == 0:
            continue
        low = b // u * u
        nearest = " or ".join(f"{m:,} ({m // u} unit{'s' if m // u > 1 else ''})" for m in (low, low + u) if m)
        return (f"{prefix}write-buffer = {buffer!r} is {b:,} bytes, not a whole number of write units of {u:,} bytes "
                f"({prefix}write-unit = {unit!r}): expected a multiple of {u:,}, such as {nearest}"
                + (", or 0 (no buffer)" if not low else ""))
    return None


def simulate(params: dict[str, str], requests: str = "", depth: int | None = None) -> subprocess.CompletedProcess:
    """devicemodel/simulate with these parameters on these requests ("T_US OP OFFSET LENGTH [fua]"
    lines; with `depth`, "OP OFFSET LENGTH [fua]" issued as a closed loop of that many): the model's
    decisions in virtual time, as a trace on stdout (devices/trace.parse)."""
    loop = [f"--depth={depth}"] if depth is not None else []
    return subprocess.run([str(build.built(build.SIMULATE)), *loop, *(f"{k}={v}" for k, v in params.items())],
                          input=requests, capture_output=True, text=True)


def specified_writes(params: dict[str, str], n: int, size: int = 4096) -> list[float]:
    """The service times the model gives n sequential writes of `size` bytes, 100 ms apart (no
    queue): what a profile specifies for a lone writer, to hold a served trace against."""
    proc = simulate(params, "".join(f"{i * 100_000} write {i * size} {size}\n" for i in range(n)))
    if proc.returncode != 0:
        raise UsageError(f"device model parameters {params}: {proc.stderr.strip()}")
    from . import trace  # trace needs numpy; the profiles' checks do not
    return [r.service_us for r in trace.parse(proc.stdout)]


def check(where: str, params: dict[str, str]) -> None:
    """Refuse parameters the model refuses, in its own words, naming where they came from."""
    why = buffer_problem(params)  # with the nearest whole multiples (the model says less)
    if why is None:
        proc = simulate(params)
        why = proc.stderr.strip().removeprefix("simulate: ") if proc.returncode != 0 else None
    if why:
        raise UsageError(f"{where}: {why}: fix the device profile (docs/device-models.md lists the parameters)")


FLASH_LOG_PREFIX = "flashlog."  # the model's keys of a cell's flash log (devicemodel/model.h)


def _plain(raw: dict, name: str) -> bool:
    """A profile of the catalog that builds on none (a base or a flash log is one)."""
    return name in raw and not name.startswith("_") and not {"base", "flash_log"} & set(raw[name])


def _composed(name: str, raw: dict) -> dict:
    """A catalog entry with what it builds on spelled out: `base` (another profile: its parameters,
    sources, evidence, quantiles and write cache, each overridden by the entry's own: a time it gives
    as a parameter replaces the base's percentiles of it, and percentiles the base's parameter) and `flash_log` (a
    profile whose parameters become the model's flash log, under "flashlog.", with their sources
    and evidence), so that a variant of a device states only what differs and where that comes from."""
    entry = raw[name]
    out = {"description": entry.get("description", ""), "params": {}, "sources": {}, "evidence": {},
           "quantiles": {}, "flash_log": entry.get("flash_log"), "base": entry.get("base")}
    for key in ("base", "flash_log"):
        other = entry.get(key)
        if other is None:
            continue
        if other == name or not _plain(raw, other):
            raise UsageError(f"device profile '{name}': {key} {other!r} is not a plain profile of the catalog: "
                             f"expected one of {', '.join(sorted(k for k in raw if _plain(raw, k)))}")
        b = raw[other]
        if key == "base":
            out |= {"params": dict(b["params"]), "sources": dict(b.get("sources", {})),
                    "evidence": dict(b.get("evidence", {})), "quantiles": dict(b.get("quantiles", {})),
                    "write_cache": b.get("write_cache"), "power_loss": b.get("power_loss")}
        else:
            for part in ("params", "sources", "evidence", "quantiles"):
                out[part] |= {FLASH_LOG_PREFIX + k: v for k, v in b.get(part, {}).items() if k != "write_cache"}
            out["flash_log_cache"] = b.get("write_cache")
    for mine, theirs in (("params", "quantiles"), ("quantiles", "params")):  # the entry's own form wins
        for key in entry.get(mine, {}):
            out[theirs].pop(key, None)
    for part in ("params", "sources", "evidence", "quantiles"):
        out[part] |= entry.get(part, {})
    for key in ("write_cache", "power_loss"):
        if key in entry:
            out[key] = entry[key]
    return out


def from_entry(name: str, entry: dict) -> DeviceProfile:
    """A profile from its catalog entry (or a probe's profile file: sectorlab/probe/profile.py),
    checked: every parameter with a source, known evidence, a write cache its parameters agree with."""
    where = f"device profile '{name}'"
    params = {k: str(v) for k, v in entry["params"].items()}
    quantiles = {}
    for key, raw in entry.get("quantiles", {}).items():
        if key in params:
            raise UsageError(f"{where}: '{key}' is given both as a parameter ({params[key]}) and as its source's "
                             f"percentiles: give it once")
        quantiles[key] = tails.parse(f"{where} quantiles of '{key}'", raw)
        params[key] = tails.expand(quantiles[key], f"{where} quantiles of '{key}'")
    for key, value in entry.get("evidence", {}).items():
        if value not in EVIDENCE:
            raise UsageError(f"{where}: evidence of '{key}' is '{value}': expected one of {', '.join(EVIDENCE)}")
    stated = {k for k in ("flash_log", "power_loss") if entry.get(k)}
    missing = sorted((set(params) | {"write_cache"} | stated) - set(entry.get("sources", {})))
    if missing:
        raise UsageError(f"{where}: no source for {', '.join(missing)}: every number names where it comes from")
    cache = entry.get("write_cache")
    if cache not in WRITE_CACHES:
        raise UsageError(f"{where}: write_cache is {cache!r}: expected one of {', '.join(WRITE_CACHES)} (none: no "
                         f"cache; protected: power-loss protected; volatile: lost on a power cut until flushed)")
    if entry.get("power_loss") not in (None, *POWER_LOSS):
        raise UsageError(f"{where}: power_loss is {entry['power_loss']!r}: expected one of {', '.join(POWER_LOSS)} "
                         f"(what a power cut does to a write in flight: docs/crash.md)")
    _cache_agrees(where, cache, {k: v for k, v in params.items() if not k.startswith(FLASH_LOG_PREFIX)})
    if buffer_problem(params):
        raise UsageError(f"{where}: {buffer_problem(params)}")
    if entry.get("flash_log"):  # the flash log's cache was checked as its own profile's
        cache = weaker(cache, entry["flash_log_cache"])
    return DeviceProfile(name, entry["description"], params, cache, dict(entry["sources"]),
                         dict(entry.get("evidence", {})), entry.get("flash_log"), entry.get("base"),
                         entry.get("power_loss"), quantiles)


def _cache_agrees(where: str, cache: str, params: dict[str, str]) -> None:
    """The model's own cache parameters tell the same story as write_cache: a model cache
    (cache-size) is power-loss protected exactly when the profile says protected, and a volatile
    cache is one whose flush costs what the model says (a model cache to destage, or a flush time)."""
    if "cache-size" in params:
        plp = params.get("cache-plp", "false") == "true"
        if plp != (cache == "protected"):
            raise UsageError(f"{where}: write_cache is {cache} but the model's cache-plp is "
                             f"{params.get('cache-plp', 'false')}: make them agree")
    elif cache == "volatile" and "flush" not in params:
        raise UsageError(f"{where}: write_cache is volatile but the model has no cache-size and no flush time: a "
                         f"flush would cost nothing; give it one")


@cache
def _raw() -> dict:
    return json.loads(CATALOG.read_text()).get("device_profiles", {})


@cache
def profiles() -> dict[str, DeviceProfile]:
    raw = _raw()
    return {name: from_entry(name, _composed(name, raw)) for name in raw if not name.startswith("_")}


def sharing(name: str, param: str) -> dict[str, str]:
    """Where the profile's `param` is, in it and in the profiles built on it that do not set it
    themselves: {profile: its key}, the key under "flashlog." in a cell whose flash log it is (a
    variant that sets the parameter, even to the same value, is a different device in that respect)."""
    get(name)
    out = {name: param}
    for p in profiles().values():
        own = {**_raw()[p.name].get("params", {}), **_raw()[p.name].get("quantiles", {})}
        if p.base == name and param not in own:
            out[p.name] = param
        if p.flash_log == name and FLASH_LOG_PREFIX + param not in own:
            out[p.name] = FLASH_LOG_PREFIX + param
    return out


PROFILE_FILE_SUFFIX = ".toml"   # a device named so is a profile file (`sectorlab probe`'s profile.toml)


def is_file(name: str) -> bool:
    """Whether a device's name is a profile file's path (relative to the checkout, or absolute)."""
    return isinstance(name, str) and name.endswith(PROFILE_FILE_SUFFIX)


@cache
def _from_file(path: str) -> DeviceProfile:
    from pathlib import Path

    from ..paths import REPO
    from ..probe import profile as probe_profile  # the probe's reader: the same checks as the catalog's
    where = Path(path) if Path(path).is_absolute() else REPO / path
    return probe_profile.load(where)


def get(name: str) -> DeviceProfile:
    """The catalog's profile of this name, or the profile file it names (a name ending in .toml:
    docs/probe.md), read and checked once per process."""
    if is_file(name):
        return _from_file(name)
    found = profiles().get(name)
    if found is None:
        raise UsageError(f"device profile '{name}' is not in the catalog: expected one of "
                         f"{', '.join(sorted(profiles()))} (sectorlab geometries lists them), or a profile file "
                         f"(a path ending in .toml, as sectorlab probe writes one)")
    return found
