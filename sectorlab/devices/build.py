"""The host's own binaries, built with make in their source directory where they are missing or
older than their sources: the device model's (devicemodel/: the nbdkit filter needs
nbdkit-plugin-dev) and redo-writer for this host (redo-writer/: its device path needs libnbd-dev);
scripts/bootstrap installs both."""

from __future__ import annotations

import fcntl
import os
import subprocess
from pathlib import Path

from ..errors import SectorlabError
from ..paths import REPO

SOURCE_DIR = REPO / "devicemodel"
FILTER = SOURCE_DIR / "sectorlab-model.so"
SIMULATE = SOURCE_DIR / "simulate"
REDO_WRITER = REPO / "redo-writer" / "redo-writer"
REDO_WRITER_STATIC = REPO / "redo-writer" / "redo-writer-static"  # the guests' (without libnbd)
# What a failed build most likely lacks, per target.
_NEEDS = {FILTER: "nbdkit-plugin-dev", SIMULATE: "a C compiler", REDO_WRITER: "libnbd-dev",
          REDO_WRITER_STATIC: "libc6-dev's static libc"}


# What make left of each target in this process: (device, inode, modification and change times) of
# the file it said was up to date. A crash preset asks for redo-writer once per cut (hundreds a run), and a make
# that finds nothing to do still costs a process, the directory's lock and the Makefile's rules.
_MADE: dict[Path, tuple[int, int, int, int]] = {}


def _identity(target: Path) -> tuple[int, int, int, int] | None:
    try:
        st = target.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns


def built(target: Path) -> Path:
    """`target` (FILTER, SIMULATE, REDO_WRITER or REDO_WRITER_STATIC), made up to date by make in its own directory; one
    line naming make's error if not. One build at a time per directory, across processes (a lock on
    the directory itself): make test's lanes and the unit tests' workers ask at once, and a make
    beside another would run a half-written binary or link a half-written object. Make runs once
    per target and process while the file it made stays the same one (a source edited after that,
    in a process that lives on, is built by the next process that asks)."""
    made = _MADE.get(target)
    if made is not None and made == _identity(target):
        return target
    fd = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        proc = subprocess.run(["make", "-s", "-C", str(target.parent), target.name], capture_output=True, text=True)
        identity = _identity(target)  # under the lock: no other make is writing it
    finally:
        os.close(fd)  # and the lock with it
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["(no output)"]
        raise SectorlabError(f"building {target.relative_to(REPO)} failed: {tail[0]} "
                             f"({_NEEDS.get(target, 'a build dependency')} missing? run scripts/bootstrap)")
    if identity is not None:
        _MADE[target] = identity
    return target
