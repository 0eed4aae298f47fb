"""A redo preset's [[bench.sweep]] tables: an assumed parameter of a device profile its disks are
served by, the values that span the range a reader could believe (each a value the model takes, in
its own syntax, checked by a run of the model before anything starts) and why that range
(read); a value as the model reads it, so that two spellings of one value meet (model_value).
bench/devicepath/sweep.py picks and runs them."""

from __future__ import annotations

from dataclasses import dataclass

from ... import fields
from ...devices import profiles
from ...errors import UsageError
from .fields import SWEEP_FIELDS


@dataclass(frozen=True)
class Sweep:
    param: str
    profile: str
    values: tuple[str, ...]
    range: str
    # Where the value goes: the swept profile and those built on it that keep its value and serve a
    # disk of the preset, each with its key (an Exadata cell has the cell disk's controller cache,
    # and the F20's write under flashlog.).
    profiles: dict[str, str]

    @property
    def own(self) -> str:
        """The profile's own value of the parameter."""
        return profiles.get(self.profile).params[self.param]


def read(where: str, raw: dict, preset_disks: dict) -> Sweep:
    """One [[bench.sweep]], checked before anything starts: a profile the preset's disks use, a
    parameter that profile has, values the model takes in every profile the value goes to."""
    s = SWEEP_FIELDS.read(where, raw)
    used = sorted({d.device for d in preset_disks.values() if d.device})
    if s["profile"] not in used:
        raise UsageError(f"{where}: profile = {s['profile']!r}: no disk of the preset is served by it; expected one "
                         f"of {', '.join(used) or '(none: the preset has no modelled disk)'}")
    params = profiles.get(s["profile"]).params
    if s["param"] not in params:
        raise UsageError(f"{where}: param = {s['param']!r}: profile {s['profile']!r} has no such parameter (it has "
                         f"{', '.join(params)}); a sweep varies what the profile sets")
    targets = {p: key for p, key in profiles.sharing(s["profile"], s["param"]).items() if p in used}
    for v in s["values"]:
        for p, key in targets.items():
            params = {**profiles.get(p).params, key: v}
            # A buffer of part of a write unit first, with the nearest whole multiples (the model
            # refuses it too, in fewer words).
            if (why := profiles.buffer_problem(params)) is not None:
                raise UsageError(f"{where}: values: on profile {p!r}, {why}")
            proc = profiles.simulate(params)
            why = proc.stderr.strip().removeprefix("simulate: ") if proc.returncode != 0 else None
            if why:
                raise UsageError(f"{where}: values: {s['param']} = {v!r} on profile {p!r} ({key}): {why}: give "
                                 f"values the model takes (docs/device-models.md lists its parameters and their "
                                 f"bounds)")
    fields.no_duplicates(where, "values", s["values"], same=lambda v: model_value(s["param"], v))
    return Sweep(s["param"], s["profile"], tuple(s["values"]), s["range"], targets)


# The model's keys by how it reads their values (devicemodel/model.c, model_set): sizes and counts
# with an optional k, M, G or T; decimal numbers; distributions of microseconds.
SIZE_KEYS = ("channels", "stripe", "cache-size", "physical-sector", "write-unit", "write-buffer",
             "fail-after-writes", "seed")


NUMBER_KEYS = ("read-mbps", "write-mbps", "cache-destage-mbps", "fail-after-seconds")


DISTRIBUTION_KEYS = ("read", "write", "flush", "cache-hit")


def model_value(param: str, text: str):
    """A value of a model parameter as the model reads it, so that two spellings of one value meet
    ("64k" and "65536", "fixed:20" and "fixed:20.0"): a size in bytes, a number, a distribution's
    kind and numbers; any other value as written. `text` is one the model took (sweep.read)."""
    key = param.removeprefix(profiles.FLASH_LOG_PREFIX)
    try:
        if key in SIZE_KEYS:
            return profiles.size_bytes(text)
        if key in NUMBER_KEYS:
            return float(text)
        if key in DISTRIBUTION_KEYS:
            kind, _, numbers = text.partition(":")
            return (kind, *(float(x) for part in numbers.split(",") for x in part.split("=")))
    except ValueError:
        pass
    return text


