"""Where the project lives and where it keeps what it builds (outside the repository)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def cache_dir() -> Path:
    """Built images, the provider mirror and other per-machine artifacts.

    SECTORLAB_CACHE wins; otherwise $XDG_CACHE_HOME/sectorlab or ~/.cache/sectorlab.
    """
    explicit = os.environ.get("SECTORLAB_CACHE")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return Path(xdg or Path.home() / ".cache") / "sectorlab"


def image_cache() -> Path:
    return cache_dir() / "images"


def manifest_path() -> Path:
    return REPO / "images" / "manifest.json"


def write_atomic(path: Path | str, text: str) -> None:
    """Write a file whole or not at all: to a temporary name beside it, then renamed over it. An
    interrupt or a reader at the same moment never sees half of it."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def link_or_copy(src: Path | str, dst: Path | str) -> None:
    """dst as a hard link to src (no copy of a large file), or a copy where a link cannot be made
    (another filesystem)."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def slug(text: str) -> str:
    """A name as a file name: anything but letters, digits, '.', '_' and '-' becomes '_'."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", text)
