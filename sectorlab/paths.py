"""Where the project lives and where it keeps what it builds (outside the repository).

sectorlab runs from its checkout: a lab needs the checkout's packer/, terraform/, labs/,
redo-writer/ and devicemodel/ beside the package (scripts/bootstrap installs the package from
there, editable). REPO is that checkout, the one root every such file is found through. A
sectorlab installed elsewhere (a wheel, `pip install .`) has the package and its catalog only: it
answers `sectorlab geometries`, `sectorlab lab fields` and `sectorlab redo-check`, and every other
command says in one line that it runs from the checkout (checkout()).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

from . import inputs
from .errors import UsageError

PACKAGE = Path(__file__).resolve().parent
REPO = PACKAGE.parent
# What makes REPO a checkout of the project (what a lab-up and an image build read first).
CHECKOUT_MARKERS = ("pyproject.toml", "terraform/versions.tf", "packer/build.pkr.hcl", "labs/default.toml")


def checkout(command: str) -> Path:
    """REPO, when it is the project's checkout; else one line saying that `command` runs from it."""
    missing = [m for m in CHECKOUT_MARKERS if not (REPO / m).is_file()]
    if missing:
        raise UsageError(f"sectorlab {command} runs from the project's checkout, and this sectorlab is installed "
                         f"at {PACKAGE} without one (no {missing[0]} in {REPO}): run it from a clone, where "
                         f"scripts/bootstrap installs it")
    return REPO


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


def _in_place(path: Path, named: str) -> os.stat_result | None:
    """What is at `path` now (lstat), when sectorlab may write a file there: nothing (None), a
    regular file or a symbolic link (replaced, never followed); a directory, device, FIFO or socket
    is one UsageError line and is left as it is."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise UsageError(f"{named}: {e.strerror}; expected a file sectorlab may write") from e
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
        kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file (a device, FIFO or socket)"
        raise UsageError(f"{named}: {kind} is where sectorlab writes this file; expected a regular file or "
                         f"nothing there: move it away and run again")
    return st


def write_atomic(path: Path | str, data: str | bytes) -> None:
    """Write a file whole or not at all, and never through whatever is in its place: the bytes go
    to a new temporary file beside it (created exclusively, so a symbolic link or file planted
    under that name is not followed), which is then renamed over the name. A symbolic link at
    `path` is replaced, not followed, so a results directory that holds one cannot make sectorlab
    write outside it; a directory, device, FIFO or socket at `path` is one UsageError line and is
    left as it is. An interrupt or a reader at the same moment never sees half a file."""
    path = Path(path)
    st = _in_place(path, str(path))
    payload = data.encode() if isinstance(data, str) else data
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:64]}.", suffix=".tmp", dir=path.parent)
    except OSError as e:
        raise UsageError(f"{path}: cannot write in {path.parent} ({e.strerror}); expected a file in a directory "
                         f"that exists and that you may write") from e
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
        if st is not None and stat.S_ISREG(st.st_mode):
            os.chmod(tmp, stat.S_IMODE(st.st_mode))
        else:
            os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


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


def output_file(path: Path | str, what: str) -> Path:
    """A file sectorlab will write (-o), checked before anything is read or said: its directory
    exists and may be written, and nothing but a regular file or a link is in its place (the
    writing itself is write_atomic's)."""
    path = Path(path)
    if "\0" in str(path) or not path.name:
        raise UsageError(f"{what} {str(path)!r}: expected a file's name")
    parent = path.parent
    try:
        st = os.stat(parent)
    except OSError as e:
        raise UsageError(f"{what} {path}: {parent}: {e.strerror}; expected a file in a directory that exists") from e
    if not stat.S_ISDIR(st.st_mode):
        raise UsageError(f"{what} {path}: {parent} is {inputs.kind_of(st)}, not a directory; expected a file in a "
                         f"directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"{what} {path}: {parent} may not be written by this user; expected a directory you may "
                         f"write in")
    _in_place(path, f"{what} {path}")
    return path


def results_root(path: Path | str, what: str = "--results") -> Path:
    """A directory the runs' own directories go in (`--results`), checked before anything runs: a
    directory, or a name whose nearest existing parent is one; never a file, device or FIFO (a
    run's directory was made under /dev/null, or under README.md, only to fail at the end)."""
    path = Path(path)
    if "\0" in str(path) or not str(path):
        raise UsageError(f"{what} {str(path)!r}: expected a directory's name")
    probe = path
    while True:
        try:
            st = os.stat(probe)
            break
        except FileNotFoundError:
            if probe.parent == probe:
                raise UsageError(f"{what} {path}: no such directory and none above it; expected a directory") from None
            probe = probe.parent
        except OSError as e:
            raise UsageError(f"{what} {path}: {e.strerror}; expected a directory sectorlab may write in") from e
    if not stat.S_ISDIR(st.st_mode):
        where = "is" if probe == path else f"lies under {probe}, which is"
        raise UsageError(f"{what} {path}: {where} not a directory ({inputs.kind_of(st)}); expected a directory (or a "
                         f"new name) where a run's results directory goes")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise UsageError(f"{what} {path}: {probe} may not be written by this user; expected a directory you may "
                         f"write in")
    return path


def new_results_dir(root: Path | str, name: str, stamp: str | None = None) -> Path:
    """ROOT/<timestamp>-NAME, made new (never one that exists): one results directory of a run.
    `root` is checked as results_root() checks it; NAME is made a file name (slug)."""
    import time
    root = results_root(root)
    out = root / f"{stamp or time.strftime('%Y%m%d-%H%M%S')}-{slug(name)}"
    try:
        out.mkdir(parents=True)
    except FileExistsError:
        raise UsageError(f"results directory {out} exists already (two runs in one second?); expected a new one: "
                         f"run again") from None
    except OSError as e:
        raise UsageError(f"results directory {out}: {e.strerror}; expected a directory sectorlab may make") from e
    return out
