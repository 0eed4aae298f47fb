"""Shared fixtures and capability checks for sectorlab's tests.

Like blktests, a missing capability skips with the reason (require_program); what the lab was
asked to provide never skips: a guest that does not boot or lacks a tool is a failure.
"""

from __future__ import annotations

import os
import shutil

import pytest


def require_program(name: str) -> str:
    """The path of a host program, or a skip that names it and how to get it."""
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"host program '{name}' is not installed (scripts/bootstrap installs it)")
    return path


@pytest.fixture
def isolated_cache(tmp_path, monkeypatch):
    """A private SECTORLAB_CACHE so unit tests never touch the real image cache."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("SECTORLAB_CACHE", str(cache))
    monkeypatch.delenv("SECTORLAB_ACCEL", raising=False)
    return cache


def selected_guest() -> str | None:
    return os.environ.get("SECTORLAB_GUEST") or None
