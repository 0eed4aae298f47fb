"""A lab definition is read once per command: the CLI turns the path into a Lab and hands that
on (lab up, lab down, lab status, bench-lab-up); the bench hands on the Lab its preset already
holds. Counted by wrapping labdef's validate; libvirt is never reached (the first host check stops
each command)."""

from __future__ import annotations

import pytest

from sectorlab import cli, labdef
from sectorlab import lab as lab_mod
from sectorlab.errors import UsageError
from sectorlab.lab.phases import validate as validate_phase
from sectorlab.labdef import definition


@pytest.fixture
def reads(monkeypatch, isolated_cache):
    """How many times a lab definition was validated; the host's checks stop every command."""
    count = []
    validate = definition.validate
    counted = lambda *a, **k: count.append(1) or validate(*a, **k)  # noqa: E731
    # where labdef's own load() finds it, and the package's face the bench calls it through
    monkeypatch.setattr(definition, "validate", counted)
    monkeypatch.setattr(labdef, "validate", counted)

    def stop(*a, **k):
        raise UsageError("stopped at the host's checks")

    monkeypatch.setattr(validate_phase, "check_host", stop)
    monkeypatch.setattr(lab_mod.teardown, "check_libvirt", stop)
    return count


@pytest.mark.parametrize("argv", [["lab", "up"], ["lab", "down"], ["lab", "status"], ["bench-lab-up"]],
                         ids=["up", "down", "status", "bench-lab-up"])
def test_a_lab_command_reads_the_definition_once(reads, capsys, argv):
    assert cli.main(argv) == 2 and "stopped at the host's checks" in capsys.readouterr().err
    assert len(reads) == 1


def test_a_bench_reads_its_preset_once(reads, capsys, tmp_path):
    assert cli.main(["bench", "--duration", "1", "--results", str(tmp_path)]) == 2
    assert "stopped at the host's checks" in capsys.readouterr().err
    assert len(reads) == 1, "load_preset reads it; lab-up and lab-down are given the Lab it holds"
