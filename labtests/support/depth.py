"""How deep the property tests draw (hypothesis).

Under make test each property draws at most QUICK examples: the unit tier stays within its minute
and a property still meets the inputs hypothesis tries first (empty, the bounds, the odd
characters). Under make fuzz (SECTORLAB_FUZZ=deep, which CI runs) each draws its own count, the one
written beside it: the depth the suite had before it was cut to a minute, kept where CI runs it.

Either way no property has a deadline: hypothesis's default (200 ms an example) is a wall-clock
margin that a busy host breaks, and the suite judges no time on this host (docs/testing.md).
"""

from __future__ import annotations

import os
import sys

from hypothesis import settings

QUICK = 20
DEPTHS = ("quick", "deep")

_depth = os.environ.get("SECTORLAB_FUZZ") or "quick"
if _depth not in DEPTHS:
    sys.exit(f"SECTORLAB_FUZZ={_depth!r}: expected one of {', '.join(DEPTHS)} (or unset: quick); "
             "make fuzz sets deep")
DEEP = _depth == "deep"


def examples(count: int) -> int:
    """A property's number of examples at this depth: `count` when deep, at most QUICK when quick."""
    return count if DEEP else min(count, QUICK)


# A property with no count of its own draws hypothesis's default of 100 when deep.
settings.register_profile("sectorlab", max_examples=examples(100), deadline=None)
settings.load_profile("sectorlab")
