"""What the commands share: the progress line, the default guest, and the lab a command names."""

from __future__ import annotations

import sys

from .. import images, labdef
from .. import lab as lab_mod


def progress(msg: str) -> None:
    print(f"sectorlab: {msg}", file=sys.stderr, flush=True)


def guest_arg(value: str | None) -> str:
    return value or images.default_guest(progress)


def load_lab(args) -> labdef.Lab:
    """The lab definition the command names (--lab, $SECTORLAB_LAB_FILE or the default lab), read
    here once: the lab commands are given the Lab, not its path."""
    return labdef.load(args.lab or lab_mod.lab_file_from_env(), lab_mod.suffix_from_env())
