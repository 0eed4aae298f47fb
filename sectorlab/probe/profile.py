"""A calibrated profile: the catalog's form (description, the model's parameters, each with its source
and evidence, write_cache) in a TOML file of its own, written by a probe and read back as the
catalog's profiles are (profiles.from_entry checks it the same way; the model checks its
parameters). What a probe measured has evidence `measured` and a source that names the device, the
probe and its date; what it cannot tell stays `assumed` and says why.
"""

from __future__ import annotations

from pathlib import Path

import tomli_w

from .. import inputs
from ..devices import profiles
from ..errors import UsageError
from ..paths import write_atomic

PROFILE_LIMIT = 64 << 10   # a profile file is a few KiB


def entry(fit, device: str, date: str, write_cache: str, cache_source: str, description: str) -> dict:
    """The catalog entry of a fitted probe of `device` on `date`."""
    measured = f"measured: probe of {device} on {date}"
    sources, evidence = {}, {}
    for key, note in fit.notes.items():
        assumed = note.startswith("assumed")
        sources[key] = note if assumed else f"{measured}: {note}"
        evidence[key] = "assumed" if assumed else "measured"
    sources["write_cache"] = cache_source
    evidence["write_cache"] = "assumed" if cache_source.startswith("assumed") else "measured"
    return {"description": description, "write_cache": write_cache, "params": dict(fit.params),
            "sources": sources, "evidence": evidence}


def write(path: Path, name: str, doc: dict) -> Path:
    """The profile as TOML (tomli-w writes every key and value), atomically."""
    text = ("# A device profile calibrated by `sectorlab probe` (docs/probe.md): the catalog's form, its\n"
            "# times measured less the path's floor. Serve it by naming this file as a disk's device.\n"
            + tomli_w.dumps({"profile": {"name": name, **doc}}))
    write_atomic(path, text)
    return path


def load(path: Path | str) -> profiles.DeviceProfile:
    """A profile file a probe wrote, checked as a catalog profile is; one line for what is wrong."""
    doc = inputs.read_toml(path, "device profile file", PROFILE_LIMIT)
    body = doc.get("profile")
    if not isinstance(body, dict):
        raise UsageError(f"device profile file {path}: no [profile] table: expected a file `sectorlab probe` wrote")
    name = body.get("name")
    if not isinstance(name, str) or not name:
        raise UsageError(f"device profile file {path}: [profile] has no name: expected name = \"...\"")
    for key in ("params", "sources", "evidence"):
        if not isinstance(body.get(key, {}), dict):
            raise UsageError(f"device profile file {path}: [profile.{key}] is not a table")
    if not isinstance(body.get("description"), str):
        raise UsageError(f"device profile file {path}: [profile] has no description")
    found = profiles.from_entry(name, body)
    profiles.check(f"device profile file {path}", found.params)
    return found


def instrument(params: dict[str, str], description: str, source: str) -> dict:
    """The catalog entry of a model that is no device (a probe's floor, a distribution chosen for a
    test): every parameter `assumed`, from `source`, no write cache."""
    keys = [*params, "write_cache"]
    return {"description": description, "write_cache": "none", "params": dict(params),
            "sources": dict.fromkeys(keys, source), "evidence": dict.fromkeys(keys, "assumed")}
