"""Device profiles: the catalog's (sectorlab/geometries.json, "device_profiles"), each parameter
with its source and its evidence (datasheet, review, physics, assumed), as the model's key=value
parameters. The model checks them itself: devicemodel/simulate with no requests refuses a bad
parameter in one line, the same line the nbdkit filter would print."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from functools import cache

from ..errors import UsageError
from ..geometry import CATALOG
from . import build

EVIDENCE = ("datasheet", "review", "physics", "assumed")


@dataclass(frozen=True)
class DeviceProfile:
    name: str
    description: str
    params: dict[str, str]                       # the model's key=value parameters
    sources: dict[str, str] = field(default_factory=dict)    # parameter -> where its number comes from
    evidence: dict[str, str] = field(default_factory=dict)   # parameter -> datasheet | physics | assumed

    def args(self) -> list[str]:
        return [f"{k}={v}" for k, v in self.params.items()]


def simulate(params: dict[str, str], requests: str = "") -> subprocess.CompletedProcess:
    """devicemodel/simulate with these parameters on these requests ("T_US OP OFFSET LENGTH [fua]"
    lines): the model's decisions in virtual time, as a trace on stdout (devices/trace.parse)."""
    return subprocess.run([str(build.built(build.SIMULATE)), *(f"{k}={v}" for k, v in params.items())],
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
    proc = simulate(params)
    if proc.returncode != 0:
        why = proc.stderr.strip().removeprefix("simulate: ")
        raise UsageError(f"{where}: {why}: fix the device profile (docs/device-models.md lists the parameters)")


def _profile(name: str, entry: dict) -> DeviceProfile:
    where = f"device profile '{name}'"
    params = {k: str(v) for k, v in entry["params"].items()}
    for key, value in entry.get("evidence", {}).items():
        if value not in EVIDENCE:
            raise UsageError(f"{where}: evidence of '{key}' is '{value}': expected one of {', '.join(EVIDENCE)}")
    missing = sorted(set(params) - set(entry.get("sources", {})))
    if missing:
        raise UsageError(f"{where}: no source for {', '.join(missing)}: every number names where it comes from")
    return DeviceProfile(name, entry["description"], params, dict(entry["sources"]), dict(entry.get("evidence", {})))


@cache
def profiles() -> dict[str, DeviceProfile]:
    raw = json.loads(CATALOG.read_text()).get("device_profiles", {})
    return {name: _profile(name, entry) for name, entry in raw.items() if not name.startswith("_")}


def get(name: str) -> DeviceProfile:
    found = profiles().get(name)
    if found is None:
        raise UsageError(f"device profile '{name}' is not in the catalog: expected one of "
                         f"{', '.join(sorted(profiles()))} (sectorlab geometries lists them)")
    return found
