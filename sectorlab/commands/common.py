"""What the commands share: the progress line, the default guest, and the lab a command names."""

from __future__ import annotations

import sys

from .. import images, labdef
from .. import lab as lab_mod


def progress(msg: str) -> None:
    print(f"sectorlab: {msg}", file=sys.stderr, flush=True)


def guest_arg(value: str | None) -> str:
    return value or images.default_guest(progress)


def lab_suffix() -> str:
    """make's LAB_SUFFIX: appended to the name of every lab a command reads."""
    return lab_mod.suffix_from_env()


def load_lab(args) -> labdef.Lab:
    """The lab definition the command names (--lab, $SECTORLAB_LAB_FILE or the default lab), read
    here once: the lab commands are given the Lab, not its path."""
    return labdef.load(args.lab or lab_mod.lab_file_from_env(), lab_suffix())
