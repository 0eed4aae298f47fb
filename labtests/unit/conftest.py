"""The unit tests see no lab-name suffix from the caller's environment (make test LAB_SUFFIX=-job2
sets one for the labs): a test that wants one sets it. Each test starts without libvirt host
objects (libvirt.get_host keeps one per URI for the process) and leaves none behind. The property
tests draw at the suite's depth, with no deadline (labtests/support/depth.py). The tests marked
`long` are spread over the first half of the order (spread_long)."""

from __future__ import annotations

import pytest

from labtests.conftest import require_program
from labtests.support import depth  # noqa: F401  (loads the property tests' profile)
from sectorlab import labdef
from sectorlab.devices import build
from sectorlab.host import libvirt


def spread_long(items: list) -> list:
    """The tests marked `long` (seconds each, mostly waiting on a model in real time) spread evenly
    over the first half of the order, the others in theirs. xdist hands tests out in runs of
    consecutive ones (make unit's --maxschedchunk): collected together, the crash tests (35 s) went to
    one worker and ended the tier alone 10 s after the others; spread, each run holds at most one
    and they end while the quick tests still keep both cores busy."""
    long = [i for i in items if i.get_closest_marker("long")]
    if not long:
        return list(items)
    rest = [i for i in items if not i.get_closest_marker("long")]
    stride = max(1, len(rest) // (2 * len(long)))
    out = []
    for n, item in enumerate(long):
        out.append(item)
        out.extend(rest[n * stride:(n + 1) * stride])
    out.extend(rest[len(long) * stride:])
    return out


def pytest_collection_modifyitems(config, items):
    items[:] = spread_long(items)


@pytest.fixture(autouse=True)
def _no_lab_suffix(monkeypatch):
    monkeypatch.delenv(labdef.SUFFIX_ENV, raising=False)


@pytest.fixture(autouse=True)
def _fresh_libvirt_hosts():
    libvirt.clear_hosts()
    yield
    libvirt.clear_hosts()


@pytest.fixture(scope="module")
def redo_writer():
    """redo-writer built from the tree (make -C redo-writer, one build at a time), its path."""
    require_program("cc")
    return str(build.built(build.REDO_WRITER))
