"""compare and plot on reports and events that redo-writer really produced (null target and a file)."""

from __future__ import annotations

import json
import subprocess

import pytest

from labtests.conftest import require_program
from sectorlab.analysis import plots, stats
from sectorlab.devices import build
from sectorlab.errors import SectorlabError
from sectorlab.paths import REPO

SRC = REPO / "redo-writer"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    require_program("cc")
    build.built(build.REDO_WRITER)
    tmp = tmp_path_factory.mktemp("runs")
    out = {}
    for name, target in (("fast", "null:"), ("file", tmp / "redo.log")):
        report = tmp / f"{name}.json"
        events = tmp / f"{name}.csv"
        proc = subprocess.run([str(SRC / "redo-writer"), "run", "--target", str(target), "--transactions", "300",
                               "--output", "json", "--events", str(events)], capture_output=True, text=True, check=True)
        report.write_text(proc.stdout)
        out[name] = (report, events)
    return out


def test_compare_table_and_welch(runs):
    rows, test = stats.compare(runs["fast"][0], runs["file"][0])
    labels = [r[0] for r in rows[1:]]
    assert "log file sync p99 us" in labels and "redo wastage %" in labels
    writes = next(r for r in rows if r[0] == "writes")
    assert writes[1] != "" and writes[3].endswith("%")
    a = json.loads(runs["fast"][0].read_text())["log_file_sync"]
    b = json.loads(runs["file"][0].read_text())["log_file_sync"]
    from scipy import stats as scipy_stats
    t, p = scipy_stats.ttest_ind_from_stats(a["mean_us"], a["stddev_us"], a["count"], b["mean_us"], b["stddev_us"],
                                      b["count"], equal_var=False)
    assert test["t"] == pytest.approx(t) and 0 <= test["p"] <= 1


def test_compare_rejects_other_json(tmp_path):
    other = tmp_path / "x.json"
    other.write_text('{"jobs": []}')
    with pytest.raises(SectorlabError, match="not a redo-writer --output json report"):
        stats.compare(other, other)


def test_plot_writes_a_png(runs, tmp_path):
    png = plots.plot_events(runs["file"][1], tmp_path / "lat.png")
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10000


def test_plot_rejects_other_csv(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(SectorlabError, match="expected event,end_us,latency_us"):
        plots.plot_events(bad, tmp_path / "x.png")


def test_p_values_are_printed_and_named_one_way():
    assert stats.p_text(0.0) == "p < 1e-16" and stats.p_text(0.0123) == "p = 0.0123"
    assert stats.verdict(0.009, 0.01) == "significant" and stats.verdict(0.01, 0.01) == "within noise"


def test_compare_says_a_difference_it_does_not_claim_is_within_noise(runs, capsys):
    from sectorlab import cli
    assert cli.main(["compare", str(runs["fast"][0]), str(runs["fast"][0]), "--alpha", "0.01"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("log file sync, Welch t-test: t = 0.000, p = 1, n = ") and last.endswith(
        "(within noise at alpha 0.01)"), last
