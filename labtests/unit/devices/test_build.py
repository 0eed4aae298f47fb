"""devices/build.built: the host's binaries made by make where they are missing or older than their
sources, make asked once per target and process while the file it made stays the same one."""

from __future__ import annotations

import os
import subprocess

from sectorlab.devices import build


def _count_makes(monkeypatch) -> list[list[str]]:
    calls: list[list[str]] = []
    real = subprocess.run

    def run(args, *a, **k):
        calls.append(list(args))
        return real(args, *a, **k)
    monkeypatch.setattr(build.subprocess, "run", run)
    return calls


def test_make_runs_once_while_the_binary_stays_the_one_it_made(monkeypatch):
    monkeypatch.setattr(build, "_MADE", {})
    calls = _count_makes(monkeypatch)
    first = build.built(build.SIMULATE)
    assert build.built(build.SIMULATE) == first and os.access(first, os.X_OK)
    assert [c[0] for c in calls] == ["make"]
    # the binary replaced (another process's make, or one by hand): make is asked again
    st = first.stat()
    os.utime(first, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    try:
        build.built(build.SIMULATE)
    finally:
        os.utime(first, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert len(calls) == 2 and calls[1][-1] == "simulate"


def test_a_binary_other_than_the_one_make_left_is_asked_for_again(monkeypatch):
    monkeypatch.setattr(build, "_MADE", {build.SIMULATE: (0, 0, 0, 0)})  # a file that is not the one there
    calls = _count_makes(monkeypatch)
    build.built(build.SIMULATE)
    assert len(calls) == 1
