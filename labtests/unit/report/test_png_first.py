"""--png asks for its browser before a run starts: `sectorlab crash --png` ran the whole matrix and
only then said chromium was missing (the third hostile-input campaign, docs/reliability.md). Every
command that takes --png says so in one line (exit 1: the host lacks it) before any run, lab or report is made."""

from __future__ import annotations

import shutil

import pytest

from sectorlab import cli


def _no_chromium(monkeypatch):
    real = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None if "chromium" in name else real(name, *a, **k))


def _nothing_runs(monkeypatch):
    from sectorlab import bench
    from sectorlab.crash import devicepath, labdb
    from sectorlab.crash import preset as crash_preset
    from sectorlab.report import kinds as report_kinds

    def refuse(*args, **kwargs):
        raise AssertionError("a run started before --png's browser was asked for")
    for module, name in ((devicepath, "run"), (crash_preset, "load"), (labdb, "run"), (bench, "run"),
                         (bench, "load_preset"), (report_kinds, "write")):
        monkeypatch.setattr(module, name, refuse)


@pytest.mark.parametrize("argv", [
    ["crash", "--png", "small"],
    ["crash-db", "--png"],
    ["bench", "--png", "vsphere-512e"],
    ["report", "--png", "results/none"],
], ids=lambda a: a[0])
def test_png_without_chromium_is_one_line_before_anything_runs(monkeypatch, capsys, tmp_path, argv):
    _no_chromium(monkeypatch)
    _nothing_runs(monkeypatch)
    monkeypatch.chdir(tmp_path)
    assert cli.main(argv) == 1  # what the host lacks (a usage error is 2)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--png: chromium is not installed" in err[0], err
    assert list(tmp_path.iterdir()) == []


def test_png_with_chromium_goes_on_to_the_run(monkeypatch, capsys):
    """The control: with a browser, the command goes on (here to the preset, which is refused)."""
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: "/usr/bin/chromium")
    assert cli.main(["crash", "--png", "no-such-preset"]) == 2
    assert "crash preset 'no-such-preset'" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["bench", "--list", "--png"], ["crash", "--list", "--png"]])
def test_a_list_draws_nothing_so_it_needs_no_browser(monkeypatch, capsys, argv):
    """--list runs nothing and draws nothing: it is not refused for a browser it would not use."""
    _no_chromium(monkeypatch)
    assert cli.main(argv) == 0, capsys.readouterr().err
    assert capsys.readouterr().out.strip()
