"""The unit tests see no lab-name suffix from the caller's environment (make test LAB_SUFFIX=-job2
sets one for the labs): a test that wants one sets it."""

from __future__ import annotations

import pytest

from sectorlab import labdef


@pytest.fixture(autouse=True)
def _no_lab_suffix(monkeypatch):
    monkeypatch.delenv(labdef.SUFFIX_ENV, raising=False)
