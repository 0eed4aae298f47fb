"""The host's own binaries, built with make in their source directory where they are missing or
older than their sources: the device model's (devicemodel/: the nbdkit filter needs
nbdkit-plugin-dev) and redo-writer for this host (redo-writer/: its device path needs libnbd-dev);
scripts/bootstrap installs both."""

from __future__ import annotations

import subprocess
from pathlib import Path

from ..errors import SectorlabError
from ..paths import REPO

SOURCE_DIR = REPO / "devicemodel"
FILTER = SOURCE_DIR / "sectorlab-model.so"
SIMULATE = SOURCE_DIR / "simulate"
REDO_WRITER = REPO / "redo-writer" / "redo-writer"
# What a failed build most likely lacks, per target.
_NEEDS = {FILTER: "nbdkit-plugin-dev", SIMULATE: "a C compiler", REDO_WRITER: "libnbd-dev"}


def built(target: Path) -> Path:
    """`target` (FILTER, SIMULATE or REDO_WRITER), made up to date by make in its own directory; one
    line naming make's error if not."""
    proc = subprocess.run(["make", "-s", "-C", str(target.parent), target.name], capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["(no output)"]
        raise SectorlabError(f"building {target.relative_to(REPO)} failed: {tail[0]} "
                             f"({_NEEDS.get(target, 'a build dependency')} missing? run scripts/bootstrap)")
    return target
