"""What the commands share: the progress line, the default guest, the lab a command names, and a
results directory's report drawn to PNG (--png)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable

from .. import images, labdef
from .. import lab as lab_mod
from ..report import render


def progress(msg: str) -> None:
    print(f"sectorlab: {msg}", file=sys.stderr, flush=True)


def guest_arg(value: str | None) -> str:
    return value or images.default_guest(progress)


def load_lab(args) -> labdef.Lab:
    """The lab definition the command names (--lab, $SECTORLAB_LAB_FILE or the default lab), read
    here once: the lab commands are given the Lab, not its path."""
    return labdef.load(args.lab or lab_mod.lab_file_from_env(), lab_mod.suffix_from_env())


def png_too(args, run: Callable[[], Path]) -> Path:
    """A command that writes a results directory (`run()`), its report.html drawn as on a desktop and
    a phone when --png (cli.main has asked for chromium before the run, not after its hours of
    work), each picture named on the progress line."""
    results = run()
    if args.png:
        for path in render.render_png(results / "report.html", progress=progress).values():
            progress(f"drawn: {path}")
    return results
