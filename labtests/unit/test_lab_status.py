"""`sectorlab lab status` of a lab that is not up names the command that brings that lab up."""

from __future__ import annotations

from sectorlab import cli, lab
from sectorlab.paths import REPO


def test_status_of_a_lab_that_is_not_up_names_its_lab_up(isolated_cache, capsys):
    assert cli.main(["lab", "status", "--lab", "labs/behaviours.toml"]) == 1
    out = capsys.readouterr().out.strip()
    assert out.startswith("no lab 'behaviours' is up (") and out.endswith(
        "run 'make lab-up LAB=labs/behaviours.toml'"), out


def test_the_default_lab_is_brought_up_by_plain_make_lab_up():
    assert lab.lab_up_command(REPO / "labs" / "default.toml") == "make lab-up"
    assert lab.lab_up_command(None) == "make lab-up"
    assert lab.lab_up_command(REPO / "labs" / "my lab.toml") == f"make lab-up LAB='{REPO / 'labs' / 'my lab.toml'}'"
