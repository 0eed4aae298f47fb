"""sectorlab runs from its checkout (sectorlab/paths.py): without one, a command that needs it is
refused in one line naming where sectorlab is installed, and the catalog and the tables still
answer. scripts/check-install proves the same of a real non-editable install (.ci/run)."""

from __future__ import annotations

import pytest

from sectorlab import cli, paths
from sectorlab.errors import UsageError


def test_this_checkout_is_one():
    assert paths.checkout("lab up") == paths.REPO


@pytest.fixture
def installed(monkeypatch, tmp_path):
    """sectorlab as a wheel installs it: the package in site-packages, no checkout beside it."""
    monkeypatch.setattr(paths, "REPO", tmp_path / "site-packages")
    monkeypatch.setattr(paths, "PACKAGE", tmp_path / "site-packages" / "sectorlab")


def test_without_a_checkout_a_command_that_needs_it_is_one_line(installed, capsys):
    refused = r"sectorlab lab up runs from the project's checkout, .*\(no pyproject.toml in "
    with pytest.raises(UsageError, match=refused):
        paths.checkout("lab up")
    assert cli.main(["lab", "status"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "sectorlab lab status runs from the project's checkout" in err


@pytest.mark.parametrize("argv", [["geometries"], ["lab", "fields"]])
def test_without_a_checkout_the_catalog_and_the_tables_answer(installed, capsys, argv):
    assert cli.main(argv) == 0
    assert "sector4k" in capsys.readouterr().out or argv == ["lab", "fields"]


def test_a_checkout_missing_one_of_its_markers_is_not_one(monkeypatch, tmp_path):
    for marker in paths.CHECKOUT_MARKERS[:-1]:
        (tmp_path / marker).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / marker).write_text("")
    monkeypatch.setattr(paths, "REPO", tmp_path)
    with pytest.raises(UsageError, match=f"no {paths.CHECKOUT_MARKERS[-1]} in {tmp_path}"):
        paths.checkout("image build")
