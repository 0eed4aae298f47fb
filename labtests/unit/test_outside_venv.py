"""`pytest labtests -k sector4k` with a pytest that lacks the project's dependencies (typed outside
the virtualenv): one line that says what to run, exit status 4, instead of a collection error per
test module."""

from __future__ import annotations

import subprocess
import sys

from sectorlab.paths import REPO

# This interpreter without paramiko and hcl2, as a Python outside .venv is.
WITHOUT = ("import sys; sys.modules['paramiko'] = sys.modules['hcl2'] = None; import pytest; "
           "sys.exit(pytest.main(['labtests', '-k', 'sector4k', '-p', 'no:cacheprovider']))")


def test_a_pytest_without_the_dependencies_says_what_to_run():
    proc = subprocess.run([sys.executable, "-c", WITHOUT], cwd=REPO, capture_output=True, text=True, timeout=120)
    out = (proc.stdout + proc.stderr).strip().splitlines()
    assert proc.returncode == 4, out
    assert len(out) == 1 and out[0].startswith("Exit: "), out
    assert "lacks sectorlab's test dependencies (paramiko, hcl2)" in out[0]
    assert f"run '{REPO / '.venv/bin/pytest'} labtests -k sector4k -p no:cacheprovider'" in out[0]
