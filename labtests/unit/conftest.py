"""The unit tests see no lab-name suffix from the caller's environment (make test LAB_SUFFIX=-job2
sets one for the labs): a test that wants one sets it. Each test starts without libvirt host
objects (libvirt.get_host keeps one per URI for the process) and leaves none behind. The property
tests draw at the suite's depth, with no deadline (labtests/support/depth.py)."""

from __future__ import annotations

import pytest

from labtests.conftest import require_program
from labtests.support import depth  # noqa: F401  (loads the property tests' profile)
from sectorlab import labdef
from sectorlab.devices import build
from sectorlab.host import libvirt


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
