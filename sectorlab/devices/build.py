"""The device model's binaries (devicemodel/), built with make where they are missing or older
than their sources: the nbdkit filter needs nbdkit-plugin-dev (scripts/bootstrap installs it)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from ..errors import SectorlabError
from ..paths import REPO

SOURCE_DIR = REPO / "devicemodel"
FILTER = SOURCE_DIR / "sectorlab-model.so"
SIMULATE = SOURCE_DIR / "simulate"


def built(target: Path) -> Path:
    """`target` (FILTER or SIMULATE), made up to date by make; one line naming make's error if not."""
    proc = subprocess.run(["make", "-s", "-C", str(SOURCE_DIR), target.name], capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["(no output)"]
        raise SectorlabError(f"building {target.relative_to(REPO)} failed: {tail[0]} "
                             f"(nbdkit-plugin-dev missing? run scripts/bootstrap)")
    return target
