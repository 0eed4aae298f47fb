"""The unit tests see no lab-name suffix from the caller's environment (make test LAB_SUFFIX=-job2
sets one for the labs): a test that wants one sets it. Each test starts without libvirt host
objects (libvirt.get_host keeps one per URI for the process) and leaves none behind. The property
tests draw at the suite's depth, with no deadline (labtests/support/depth.py). The tests marked
`long` are spread over the first half of the order (spread_long). The test processes collect their
garbage less often, and a worker leaves without tearing its interpreter down (lean_processes)."""

from __future__ import annotations

import atexit
import gc
import logging
import os
import sys

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


# CPython collects its youngest generation every 700 allocations over deallocations; the report and
# picture tests allocate millions of short-lived objects (matplotlib's artists), and the collector's
# passes were 8 % of their CPU (labtests/unit/report/test_hostile_results.py with test_surfaces.py:
# 24.0-24.6 against 22.1-22.5 core-s, two interleaved pairs). Every 100,000 here; nothing a test
# asserts depends on when garbage is collected.
GC_THRESHOLD = (100_000, 50, 100)


def lean_processes(config) -> None:
    """The GC threshold above, and in an xdist worker an exit without the interpreter's teardown once
    pytest has unconfigured in order: the worker's results are with the controller by then (xdist
    sends them at the session's end), and freeing a heap of matplotlib, scipy and 3,000 tests' modules
    one object at a time held the controller's end by 0.7-1.5 s. The exit is an atexit handler
    registered here, when pytest configures: the handlers registered after it have run; of those
    registered before it, logging's is called here; under coverage (COVERAGE_PROCESS_START) or with
    SECTORLAB_TEST_FULL_EXIT set the worker exits as Python does."""
    gc.set_threshold(*GC_THRESHOLD)
    if hasattr(config, "workerinput") and not (os.environ.get("COVERAGE_PROCESS_START")
                                               or os.environ.get("SECTORLAB_TEST_FULL_EXIT")):
        def leave() -> None:
            if getattr(config, "_sectorlab_unconfigured", False):
                logging.shutdown()
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(0)
        atexit.register(leave)


def pytest_configure(config):
    lean_processes(config)


def pytest_unconfigure(config):
    config._sectorlab_unconfigured = True


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
