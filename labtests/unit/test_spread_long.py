"""The unit tier's order (labtests/unit/conftest.py spread_long): the long tests spread over the first
half, one to each run of consecutive tests a worker is handed, none lost and none given twice."""

from __future__ import annotations

import pytest

from labtests.unit.conftest import spread_long


class _Item:
    def __init__(self, name: str, long: bool):
        self.name, self.long = name, long

    def get_closest_marker(self, name):
        return object() if name == "long" and self.long else None

    def __repr__(self):
        return self.name


@pytest.mark.parametrize("quick, long", [(2940, 15), (100, 3), (10, 4), (3, 3), (0, 2), (50, 0)])
def test_the_long_tests_are_spread_over_the_first_half_and_none_is_lost(quick, long):
    # collected as they are in the tree: the long ones together, near the middle
    items = [_Item(f"q{i}", False) for i in range(quick // 2)] + [_Item(f"L{i}", True) for i in range(long)] + \
        [_Item(f"q{i}", False) for i in range(quick // 2, quick)]
    out = spread_long(items)
    assert sorted(map(repr, out)) == sorted(map(repr, items)) and len(out) == len(items)
    assert [i for i in out if not i.long] == [i for i in items if not i.long]  # the others keep their order
    assert [i for i in out if i.long] == [i for i in items if i.long]
    where = [n for n, i in enumerate(out) if i.long]
    if long and quick >= 2 * long:
        gaps = [b - a for a, b in zip(where, where[1:])]
        assert min(gaps, default=16) >= min(16, quick // (2 * long)), where  # at most one in a run of 16
        assert where[-1] <= len(out) // 2 + 1, where
