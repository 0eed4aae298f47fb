"""The Makefile against the third hostile-input campaign (docs/reliability.md): every variable a
recipe reads is protected, found from the Makefile itself, so that a new one cannot be added
unprotected (CUTS, CRASH_SEED and JUDGES were not: `make crash CUTS='$(shell touch PWNED)'` ran
the touch); and `make -n` runs nothing of any target (`make -n bench` ran the whole bench, a lab
and 40 runs: GNU make executes a recipe line that holds $(MAKE) even under -n).

Each explicit case is one input of the campaign; the stand-ins for sectorlab and pytest are
test_hostile_make.py's (they record their arguments and start nothing)."""

from __future__ import annotations

import re
import subprocess

import pytest

from labtests.unit.test_hostile_make import (  # noqa: F401
    MAKE_DIR,
    USER_VARS,
    _call,
    _checkout,
    _env,
    _filled,
    _stubbed,
    stubs,
)
from sectorlab.paths import REPO

MAKEFILE = REPO / "Makefile"
# What a recipe may read from its environment besides the protected variables: bash's own, and
# what the Makefile exports itself (found below).
SHELL_OWN = {"SECONDS", "HOME", "PATH"}


def _recipe_text() -> str:
    """The recipes' text and the defines recipes use (shell that make hands to bash)."""
    lines, keep = [], False
    for line in MAKEFILE.read_text().splitlines():
        if line.startswith("define "):
            keep = True
            continue
        if line.startswith("endef"):
            keep = False
            continue
        if keep or line.startswith("\t") or re.match(r"^[a-z-]+ = ", line) or "$${" in line:
            lines.append(line)
    return "\n".join(lines)


def test_every_variable_a_recipe_reads_is_protected():
    """A recipe reads $$NAME from its environment: NAME is a protected variable (USER_VARS), one the
    Makefile exports itself, or the shell's own. A new variable added to a recipe and not to
    USER_VARS fails here before a user can pass it $(shell ...)."""
    read = set(re.findall(r"\$\$\{?([A-Z][A-Z0-9_]*)", _recipe_text()))
    exported = set(re.findall(r"^export ([A-Z][A-Z0-9_]*)", MAKEFILE.read_text(), re.M))
    unprotected = sorted(read - set(USER_VARS) - exported - SHELL_OWN)
    assert not unprotected, f"recipes read {unprotected}, which are not in the Makefile's USER_VARS"
    assert {"CUTS", "CRASH_SEED", "JUDGES"} <= read  # what this test is about is still found


@pytest.mark.parametrize("channel", ["command line", "environment"])
def test_every_protected_variable_is_taken_as_written(tmp_path, channel):
    """Each of USER_VARS, as make has it after reading the Makefile and as a recipe's shell sees it:
    the value as written, nothing expanded, nothing run."""
    marker = tmp_path / "PWNED"
    value = f"$(shell touch {marker})${{HOME}}$$(touch {marker})`touch {marker}`"
    for var in USER_VARS:
        if channel == "command line":
            args, env = [f"{var}={value}"], _env()
        else:
            args, env = [], _env(**{var: value})
        proc = subprocess.run(["make", "--no-print-directory", "-s", "--eval", f"_env: ; @printf '%s' \"$${var}\"",
                               *args, "_env"], cwd=MAKE_DIR, env=env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == value, (var, proc.stdout)
        assert not marker.exists(), f"{var}: the value ran as code"


# (id, make arguments, environment, the calls expected)
CRASH = [
    ("crash-cuts-make-shell", ["crash", "PRESET=small", "CUTS=$(shell touch {M})"], {},
     [_call(["sectorlab", "crash", "--cuts=$(shell touch {M})", "--", "small"])]),
    ("crash-cuts-home", ["crash", "PRESET=small", "CUTS=${HOME}"], {},
     [_call(["sectorlab", "crash", "--cuts=${HOME}", "--", "small"])]),
    ("crash-seed-make-shell", ["crash", "CRASH_SEED=$(shell touch {M})"], {},
     [_call(["sectorlab", "crash", "--seed=$(shell touch {M})", "--", "redo-matrix"])]),
    ("crash-seed-env", ["crash"], {"CRASH_SEED": "1;touch {M}"},
     [_call(["sectorlab", "crash", "--seed=1;touch {M}", "--", "redo-matrix"])]),
    ("crash-db-judges-make-shell", ["crash-db", "JUDGES=$(shell touch {M})", "CUTS=$$(touch {M})"], {},
     [_call(["sectorlab", "lab", "up", "--lab", "labs/crash-databases.toml"]),
      _call(["sectorlab", "crash-db", "--lab", "labs/crash-databases.toml", "--cuts=$$(touch {M})",
             "--judges=$(shell touch {M})"]),
      _call(["sectorlab", "lab", "down", "--lab", "labs/crash-databases.toml"])]),
    ("crash-db-seed-env", ["crash-db"], {"CRASH_SEED": "`touch {M}`"},
     [_call(["sectorlab", "lab", "up", "--lab", "labs/crash-databases.toml"]),
      _call(["sectorlab", "crash-db", "--lab", "labs/crash-databases.toml", "--seed=`touch {M}`"]),
      _call(["sectorlab", "lab", "down", "--lab", "labs/crash-databases.toml"])]),
]


@pytest.mark.parametrize("args, env, calls", [c[1:] for c in CRASH], ids=[c[0] for c in CRASH])
def test_the_crash_variables_reach_sectorlab_as_written(stubs, args, env, calls):  # noqa: F811
    proc, got, run = _stubbed(stubs, args, env)
    assert proc.returncode == 0, proc.stderr
    assert got == _filled(calls, str(run / "PWNED")), proc.stderr


def _phony() -> list[str]:
    text = MAKEFILE.read_text().replace("\\\n", " ")
    return sorted({t for line in re.findall(r"^\.PHONY:(.*)$", text, re.M) for t in line.split()})


@pytest.mark.parametrize("target, extra", [(t, []) for t in _phony()] + [("bench", ["SWEEP=write-buffer"])],
                         ids=[*_phony(), "bench-SWEEP"])
def test_make_n_runs_nothing(stubs, target, extra):  # noqa: F811
    """make -n TARGET says what would run and runs none of it: no sectorlab, no pytest, nothing
    written in the checkout (the real bootstrap is not run either: -n prints it)."""
    before = _checkout()
    proc, got, _ = _stubbed(stubs, ["-n", target, "PRESET=small", *extra], bootstrap=True)
    assert got == [], f"make -n {target} ran {[c['argv'] for c in got]}"
    assert _checkout() == before
    assert proc.returncode == 0, proc.stderr


def test_the_campaign_counts():
    assert len(CRASH) == 6 and len(_phony()) >= 30
