"""Device tails (sectorlab/devices/tails.py): a time given in the catalog as its source's
percentiles, expanded into the model's pct: points (each published point exactly, the body a
lognormal, the tail a power law), refused in one line when malformed, and held to its source: in
virtual time every tailed catalog profile's compared percentiles within TAIL_SHARE of the figure,
the 99.9th included; a model that differs, and a path whose own tail is too wide, are said so."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from sectorlab.devices import profiles, tails
from sectorlab.errors import UsageError
from sectorlab.paths import REPO

P3700_READ = tails.Quantiles({50.0: 76.0, 99.0: 96.0, 99.999: 2768.0}, 77.9)


def _points(pct: str) -> dict[float, float]:
    return {float(p): float(v) for p, v in (x.split("=") for x in pct.removeprefix("pct:").split(","))}


def test_the_expansion_keeps_every_published_point_and_the_model_takes_it():
    pct = tails.expand(P3700_READ)
    pts = _points(pct)
    for p, v in P3700_READ.points.items():
        assert pts[p] == v
    assert pts[100.0] == 2768.0 and list(pts.values()) == sorted(pts.values())
    profiles.check("test", {"read": pct})   # the model parses it (16 points at most)


def test_the_model_s_line_between_the_points_stays_near_the_curve():
    """Between two points the model draws a line; under the convex tail it lies above the power law,
    by at most DRAWN_SHARE (with the tail's points spaced as TAIL spaces them)."""
    pts = sorted(_points(tails.expand(P3700_READ)).items())
    worst = 0.0
    for (p0, v0), (p1, v1) in zip(pts, pts[1:]):
        for p in np.linspace(p0, p1, 50)[1:-1]:
            worst = max(worst, abs((v0 + (v1 - v0) * (p - p0) / (p1 - p0)) / tails.value_at(P3700_READ, p) - 1))
    assert 0.01 < worst <= tails.DRAWN_SHARE, worst


def test_the_body_is_the_lognormal_through_the_median_and_99th_and_the_tail_a_power_law():
    sigma = math.log(96 / 76) / 2.3263478740408408
    assert tails.value_at(P3700_READ, 90) == pytest.approx(76 * math.exp(sigma * 1.2815515655446004))
    # 99.9 is a third of the way from 99 to 99.999 in log(1 - P): the time a third of the way in log time
    assert tails.value_at(P3700_READ, 99.9) == pytest.approx(96 * (2768 / 96) ** (1 / 3))
    assert tails.value_at(P3700_READ, 99.99) == pytest.approx(96 * (2768 / 96) ** (2 / 3))


def test_a_published_maximum_is_reached_on_a_line():
    q = tails.Quantiles({50.0: 10.0, 99.0: 20.0, 100.0: 40.0})
    assert tails.value_at(q, 99.5) == pytest.approx(30.0)
    assert _points(tails.expand(q))[100.0] == 40.0


@pytest.mark.parametrize(("raw", "says"), [
    ({"percentiles": {"99": 96}}, "expected the median (50) and at least one above it"),
    ({"percentiles": {"50": 76}}, "expected the median (50) and at least one above it"),
    ({"percentiles": {"50": 76, "99": 60}}, "that rise with the percentile"),
    ({"percentiles": {"50": 76, "99": "fast"}}, "'fast'"),
    ({"percentiles": {"50": 76, "99": 96}, "mean": -1}, "mean -1.0: expected positive microseconds"),
    ({"percentiles": {"10": 60, "50": 76, "99": 96}}, "a percentile below the median (10)"),
    ({"percentiles": {"50": 76, "100.5": 96}}, "at most 100"),
    ({"percentiles": {"50": 76, "99": float("inf")}}, "expected positive microseconds"),
    ({"median": 76}, "expected {\"percentiles\""),
])
def test_a_bad_entry_is_one_line_naming_it(raw, says):
    with pytest.raises(UsageError) as e:
        tails.parse("device profile 'x' quantiles of 'read'", raw)
    assert says in str(e.value) and "device profile 'x'" in str(e.value) and "\n" not in str(e.value)


def _entry(**over) -> dict:
    base = {"description": "d", "write_cache": "protected", "params": {"write": "fixed:20"},
            "quantiles": {"read": {"percentiles": {"50": 76, "99": 96}}},
            "sources": {"write": "s", "read": "s", "write_cache": "s"}}
    return base | over


def test_a_time_given_both_ways_is_refused_and_a_variant_s_own_form_wins():
    with pytest.raises(UsageError, match="'read' is given both as a parameter .* give it once"):
        profiles.from_entry("x", _entry(params={"write": "fixed:20", "read": "fixed:5"}))
    raw = {"dev": _entry(), "var": {"description": "v", "base": "dev", "params": {"read": "fixed:5"}},
           "var2": {"description": "v2", "base": "dev", "params": {"write": "fixed:30"}}}
    assert profiles.from_entry("var", profiles._composed("var", raw)).params["read"] == "fixed:5"
    inherited = profiles.from_entry("var2", profiles._composed("var2", raw))
    assert inherited.params["read"] == tails.expand(tails.parse("x", raw["dev"]["quantiles"]["read"]))
    assert set(inherited.quantiles) == {"read"}


def test_every_tailed_catalog_profile_holds_its_source_in_virtual_time():
    """The P3700's read (and the profiles that take it): each published percentile with enough
    samples above it, and the 99.9th, within a quarter of the figure."""
    rows = tails.check("virtual", samples=100_000)
    assert {r["profile"] for r in rows} >= {"intel-p3700", "nvme-512e"}
    held = [r for r in rows if r["percentile"] is not None and r["measured_us"] is not None]
    assert {r["percentile"] for r in held} >= {50.0, 99.0, tails.HELD}
    assert all(r["verdict"] == "within" for r in held), [r for r in held if r["verdict"] != "within"]
    assert any(r["percentile"] == tails.HELD and "interpolated" in r["figure_is"] for r in held)


def test_a_model_that_differs_and_a_path_too_wide_are_said():
    rng = np.random.default_rng(1)
    wrong = rng.lognormal(math.log(76), 0.1, 100_000)   # no tail: its 99.9th about 100 us, not 294
    verdicts = {r["percentile"]: r["verdict"] for r in tails.judge(P3700_READ, list(wrong))}
    assert verdicts[50.0] == "within" and verdicts[tails.HELD] == "outside"
    right = [tails.value_at(P3700_READ, p) for p in np.linspace(0.01, 99.99, 100_000)]
    path = list(rng.exponential(60.0, 100_000))          # a path whose own 99.9th is far above 25 % of 294 us
    rows = {r["percentile"]: r for r in tails.judge(P3700_READ, right, path)}
    assert rows[tails.HELD]["verdict"] == "not told from the path's own tail"
    assert rows[tails.HELD]["path_adds_us"] > tails.TAIL_SHARE * rows[tails.HELD]["figure_us"]
    assert rows[99.999]["verdict"].startswith("not compared")


@pytest.mark.parametrize(("args", "says"), [
    (["--samples", "5000"], "--samples without --tails"),
    (["--tails", "virtual", "--held-out"], "--tails and --held-out"),
])
def test_options_that_would_be_ignored_are_refused(args, says):
    proc = subprocess.run([sys.executable, "-m", "sectorlab", "geometries", *args], capture_output=True, text=True,
                          cwd=REPO)
    assert proc.returncode == 2 and says in proc.stderr, proc.stderr


def test_too_many_percentiles_name_the_profile():
    q = tails.Quantiles({50.0: 1.0, 99.0: 2.0, 99.1: 3.0, 99.2: 4.0, 99.25: 5.0, 99.999: 9.0})
    with pytest.raises(UsageError, match="device profile 'x' quantiles of 'read': .* give fewer percentiles"):
        tails.expand(q, "device profile 'x' quantiles of 'read'")


def test_the_command_prints_the_table_and_keeps_the_rows(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "sectorlab", "geometries", "--tails", "virtual", "--samples", "20000",
                           "--results", str(tmp_path)], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert "| `intel-p3700` | read (read-4096) | virtual | 99.9 | 294.4 (interpolated) |" in proc.stdout
    kept = json.loads(next(tmp_path.glob("*-tails-virtual/tails.json")).read_text())
    assert kept["path"] == "virtual" and kept["samples"] == 20000 and len(kept["rows"]) >= 10


def test_a_disk_s_line_expands_to_the_points_it_had_and_is_held_on_its_line():
    """hdd-15k's write as percentiles (the seek plus 1 %, half and all of a revolution, linear): the
    model's points are the catalog's as written before tails, and the 99.9th is on the line."""
    q = profiles.get("hdd-15k").quantiles["write"]
    assert profiles.get("hdd-15k").params["write"] == "pct:1=3940,50=5900,100=7900"
    assert tails.held_figures(q)[tails.HELD] == (pytest.approx(3900 + 0.999 * 4000),
                                                 "interpolated (a line between the source's points, as its physics)")
    with pytest.raises(UsageError, match="a linear shape ends at its maximum"):
        tails.parse("x", {"percentiles": {"1": 1, "50": 2, "99": 3}, "shape": "linear"})
    with pytest.raises(UsageError, match="shape 'flat'"):
        tails.parse("x", {"percentiles": {"50": 1, "99": 2}, "shape": "flat"})
    # a disk's 5.9 ms a request: about a minute's worth, not 200,000 (20 minutes); a 12.7 ms disk still gets
    # the 99.9th's 10,000; a flash read's 76 us all 200,000
    n = tails.samples_for(q, 200_000)
    assert tails.MIN_SAMPLES <= n < 20_000 and n * 5900 / 1e6 <= tails.SECONDS
    assert tails.samples_for(profiles.get("hdd-7200").quantiles["write"], 200_000) == tails.MIN_SAMPLES
    assert tails.samples_for(P3700_READ, 200_000) == 200_000


def test_the_512e_read_sweep_runs_the_profile_s_own_read():
    import tomllib
    preset = tomllib.loads((REPO / "labs" / "bench" / "vsphere-512e.toml").read_text())
    sweep = next(s for s in preset["bench"]["sweep"] if s["param"] == "read")
    assert profiles.get(sweep["profile"]).params["read"] in sweep["values"]


def test_the_samples_help_gives_the_default_the_command_takes():
    """`geometries --samples`'s help is written where the parser is (the command's modules are not
    loaded to start sectorlab); what it says of the default is tails.SAMPLES."""
    from sectorlab import cli
    geometries = next(a for a in cli.build_parser()._subparsers._group_actions[0].choices.items()
                      if a[0] == "geometries")[1]
    said = next(a.help for a in geometries._actions if "--samples" in a.option_strings)
    assert f"default {tails.SAMPLES}:" in said, said
