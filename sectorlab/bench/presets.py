"""What every kind of bench shares: where presets and results live (PRESETS_DIR, RESULTS_DIR), the
preset `sectorlab bench` runs when none is named, a preset's file by name (preset_path,
preset_names) and a duration as a person reads it (clock_text). Each kind's preset is its own
module's (redo/preset.py, appliance/preset.py)."""

from __future__ import annotations

from pathlib import Path

from ..errors import UsageError
from ..paths import REPO

PRESETS_DIR = REPO / "labs" / "bench"


RESULTS_DIR = REPO / "results"


DEFAULT_PRESET = "vsphere-512e"


def preset_names() -> list[str]:
    return sorted(p.stem for p in PRESETS_DIR.glob("*.toml"))


def preset_path(name: str) -> Path:
    """A preset's file: a name from labs/bench/, or the path of a TOML file with a [bench] table."""
    if name.endswith(".toml") or "/" in name:
        path = Path(name)
        if not path.exists():  # anything else there is refused when it is read (inputs.read_text)
            raise UsageError(f"preset file {name} does not exist")
        return path
    path = PRESETS_DIR / f"{name}.toml"
    if not path.is_file():
        raise UsageError(f"unknown preset {name!r}: expected one of {', '.join(preset_names())} "
                         f"(labs/bench/*.toml), or the path of a lab definition with a [bench] table")
    return path


def clock_text(seconds: float) -> str:
    seconds = max(0, round(seconds))
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"
