"""sectorlab.cli's parser: made once a process and reused by every main() (a parse leaves it as it
was), and a build_parser put in its place is the one used."""

from __future__ import annotations

import argparse

import pytest

from sectorlab import cli


def test_main_makes_the_parser_once_and_each_parse_starts_from_its_defaults(monkeypatch, capsys):
    made = []
    real = cli.build_parser

    def build():
        made.append(1)
        return real()
    monkeypatch.setattr(cli, "build_parser", build)
    assert cli.main(["geometries", "--json"]) == 0
    as_json = capsys.readouterr().out
    with pytest.raises(SystemExit) as refused:  # a parse that fails leaves the parser as it was too
        cli.main(["geometries", "--no-such-option"])
    assert refused.value.code == 2
    assert cli.main(["geometries"]) == 0
    assert capsys.readouterr().out != as_json  # --json of the first parse did not stay behind
    assert cli.main(["geometries", "--json"]) == 0 and capsys.readouterr().out == as_json
    assert len(made) == 1


def test_a_build_parser_put_in_its_place_is_used(monkeypatch):
    seen = []
    parser = argparse.ArgumentParser()
    parser.set_defaults(func=lambda args: seen.append(args) or 7)
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    assert cli.main([]) == 7 and len(seen) == 1
