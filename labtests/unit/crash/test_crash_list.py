"""`sectorlab crash --list` checks every preset of labs/crash/ as a run would (one line for a bad
one) and lists its cells; `make check` runs it, so no crash preset goes unchecked."""

from __future__ import annotations

import re

from sectorlab import cli
from sectorlab.crash import preset as crash_preset
from sectorlab.paths import REPO


def test_crash_list_names_every_preset_with_its_cells(capsys):
    assert cli.main(["crash", "--list"]) == 0
    out = capsys.readouterr().out.splitlines()
    names = sorted(p.stem for p in (REPO / "labs" / "crash").glob("*.toml"))
    assert [line.split()[0] for line in out] == names == crash_preset.preset_names()
    for line, name in zip(out, names):
        p = crash_preset.load(name)
        assert f"{len(p.runnable())} of {len(p.cells)} cells run, {p.runs} runs each, {p.cuts} cuts " in line


def test_make_check_runs_it():
    recipe = re.search(r"^check:.*?\n((?:\t.*\n)+)", (REPO / "Makefile").read_text(), re.M).group(1)
    assert "$(SECTORLAB) crash --list" in recipe and "$(SECTORLAB) bench --list" in recipe


def test_a_bad_preset_in_labs_crash_fails_the_list_in_one_line(tmp_path, monkeypatch, capsys):
    (tmp_path / "bad.toml").write_text('[crash]\ntitle = "t"\nprofiles = ["nonesuch"]\ngeometries = ["sector4k"]\n'
                                       'blocksizes = [4096]\nseed = 1\n')
    monkeypatch.setattr(crash_preset, "PRESETS_DIR", tmp_path)
    assert cli.main(["crash", "--list"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nonesuch" in err[0], err


def test_list_with_a_preset_is_one_line_and_runs_nothing(capsys, monkeypatch):
    from sectorlab.crash import devicepath
    monkeypatch.setattr(devicepath, "run", lambda *a: (_ for _ in ()).throw(AssertionError("a crash ran")))
    assert cli.main(["crash", "--list", "small"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--list checks every preset" in err[0] and "'sectorlab crash small'" in err[0], err
