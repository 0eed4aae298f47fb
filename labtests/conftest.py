"""Shared fixtures and capability checks for sectorlab's tests.

Like blktests, a missing capability skips with the reason (require_program); what the lab was
asked to provide never skips: a disk the lab definition declared and the guest does not show,
or a lab that is not up, is a failure.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path

import pytest


# `pytest labtests -k sector4k` typed with a pytest that is not the project's virtualenv's: the
# test modules would fail to import one by one. Say once what to run instead.
def pytest_configure(config):
    missing = [m for m in ("paramiko", "hcl2", "scipy", "hypothesis") if importlib.util.find_spec(m) is None]
    if missing:
        venv = Path(__file__).resolve().parent.parent / ".venv" / "bin" / "pytest"
        pytest.exit(f"{sys.executable} lacks sectorlab's test dependencies ({', '.join(missing)}): run "
                    f"'{venv} {' '.join(config.invocation_params.args) or 'labtests'}' (make bootstrap creates it), "
                    f"or 'make scenarios PYTEST_ARGS=\"-k ...\"' against a running lab", returncode=4)


def require_program(name: str) -> str:
    """The path of a host program, or a skip that names it and how to get it."""
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"host program '{name}' is not installed (scripts/bootstrap installs it)")
    return path


def require_guest_program(guest, name: str) -> None:
    """Skip with the reason when the guest lacks a program a scenario needs."""
    if not guest.run("command -v", name).ok:
        pytest.skip(f"{guest.name}: program '{name}' is not in the guest image")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A guest whose kernel panicked fails the test that found it and stops the run: every later
    scenario would wait out its SSH timeouts on a dead guest (a whole CI run's time)."""
    outcome = yield
    from sectorlab.guest import GuestCrashed
    if call.excinfo is not None and call.excinfo.errisinstance(GuestCrashed):
        item.session.shouldstop = f"stopping: {call.excinfo.value}"
    return outcome


@pytest.fixture
def isolated_cache(tmp_path, monkeypatch):
    """A private SECTORLAB_CACHE so unit tests never touch the real image cache."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("SECTORLAB_CACHE", str(cache))
    monkeypatch.delenv("SECTORLAB_ACCEL", raising=False)
    return cache


@pytest.fixture
def loop_device(tmp_path):
    """make(sector_size) -> a fresh 16 MiB loop device with O_DIRECT I/O; removed after the test.
    Needs root and losetup; skips with the reason otherwise."""
    import subprocess
    require_program("losetup")
    if os.geteuid() != 0:
        pytest.skip("loop devices need root")
    made = []

    def make(sector_size: int = 512) -> str:
        backing = tmp_path / f"loop{len(made)}.img"
        backing.write_bytes(b"\0" * (16 << 20))
        out = subprocess.run(["losetup", "-f", "--show", "--direct-io=on", "--sector-size", str(sector_size),
                              str(backing)], capture_output=True, text=True)
        if out.returncode != 0:
            pytest.skip(f"losetup cannot create a loop device here: {out.stderr.strip()}")
        made.append(out.stdout.strip())
        return made[-1]

    yield make
    for dev in made:
        subprocess.run(["losetup", "-d", dev], check=False)


def selected_guest() -> str | None:
    return os.environ.get("SECTORLAB_GUEST") or None


@pytest.fixture(scope="session")
def lab_state():
    """The running lab (lab.json from `make lab-up`); fails, naming the command, when none is up."""
    from labtests.support.lab import definition
    from sectorlab import lab as lab_mod
    from sectorlab.errors import SectorlabError
    try:
        return lab_mod.read_lab_json(definition().name, lab_mod.lab_file_from_env())
    except SectorlabError as e:
        pytest.fail(str(e), pytrace=False)


@pytest.fixture(scope="session")
def lab_guests(lab_state):
    from sectorlab import lab as lab_mod
    guests = lab_mod.guests_from_lab_json(lab_state)
    yield guests
    for g in guests.values():
        g.close()


@pytest.fixture(scope="session")
def guest_devices(lab_state, lab_guests):
    """serial -> BlockDevice as each guest reports it (lsblk), after its NVMe/TCP targets are up."""
    from sectorlab import lab as lab_mod
    return {name: lab_mod.probe(guest, lab_state.disks_of(name))["disks"] for name, guest in lab_guests.items()}
