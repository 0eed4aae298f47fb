"""Comparisons of configurations on one value per run, on synthetic redo-writer reports: the verdict
rules (Mann-Whitney p and the bootstrap CI of the difference of medians), the smallest p a few runs
can reach, reciprocal metrics, the seed figures beside the lab, the shape of a latency distribution
and what the report says of the run order, override, control and open-loop runs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sectorlab.analysis import compare, metrics, stats
from sectorlab.analysis.metrics import Disk, Run
from sectorlab.report import redo as report


def fake_report(sync_ms: float, sessions: int = 4, **top) -> dict:
    """A redo-writer report whose commits take `sync_ms` (mean and median) with `sessions` sessions
    always waiting: tps = sessions / sync time, as a closed loop gives."""
    def event(ms: float) -> dict:
        return {"count": 1000, "mean_us": ms * 1000, "stddev_us": ms * 300, "p50_us": ms * 1000, "p99_us": ms * 3000,
                "max_us": ms * 5000, "over_1ms_pct": 10.0 * ms, "over_10ms_pct": 0.0, "over_20ms_pct": 0.0}
    return {"tps": sessions * 1000 / sync_ms, "elapsed_s": 10.0, "transactions": 1000, "redo_bytes": 700_000,
            "wastage_pct": 20.0, "writes": 500, "writes_under_4k": 500, "write_mb_s": 1.0, "bytes_written": 875_000,
            "log_file_sync": event(sync_ms), "log_file_parallel_write": event(sync_ms / 2),
            "members": [{"path": "/dev/x", "wins": 0}], **top}


def runs(values: list[float]) -> list[dict]:
    return [fake_report(v) for v in values]


RNG = np.random.default_rng(7)
A8 = list(1.0 + RNG.normal(0, 0.05, 8))
B8 = list(2.0 + RNG.normal(0, 0.05, 8))


def test_a_real_difference_of_8_and_8_runs_is_significant_with_a_ci_excluding_0():
    c = compare.compare_runs(runs(A8), runs(B8))
    head = c["tests"][0]
    assert head["metric"] == "log_file_sync_p50_ms" == c["primary"]
    assert head["p"] < metrics.ALPHA and head["ci"][0] > 0 and c["verdict"] == "significant"
    assert head["n"] == [8, 8] and c["min_p_note"] is None
    assert head["p"] == pytest.approx(stats.min_p(8, 8))  # completely separated runs: the smallest p there is


def test_identical_distributions_are_within_noise():
    same = list(1.0 + RNG.normal(0, 0.05, 8))
    c = compare.compare_runs(runs(same), runs(list(reversed(same))))
    assert c["verdict"] == "within noise" and c["tests"][0]["p"] == pytest.approx(1.0)
    assert c["tests"][0]["ci"][0] <= 0 <= c["tests"][0]["ci"][1]


def test_3_and_3_runs_say_they_cannot_reach_alpha():
    c = compare.compare_runs(runs([1.0, 1.1, 1.2]), runs([2.0, 2.1, 2.2]))
    assert c["min_p"] == pytest.approx(0.1) and c["tests"][0]["p"] == pytest.approx(0.1)
    assert c["verdict"] == "within noise"
    assert c["min_p_note"] == ("the smallest p an exact Mann-Whitney test can give for 3 + 3 runs is 0.1: "
                               "these runs cannot show a difference at p < 0.01")
    assert "CI excludes 0" in c["tests"][0]["note"]


def test_p_below_alpha_with_a_ci_spanning_0_is_unclear():
    assert compare.verdict(0.001, (-0.5, 2.0)) == (
        "unclear", "p < 0.01 but the 99 % CI of the difference spans 0: the test and the CI disagree")
    assert compare.verdict(0.001, (0.1, 2.0)) == ("significant", None)
    assert compare.verdict(0.2, (-0.1, 2.0)) == ("within noise", None)


def test_reciprocal_metrics_get_the_same_verdict():
    # tps = sessions / mean log file sync: the runs rank in reverse, so the rank test gives one p.
    c = compare.compare_runs(runs(A8), runs(B8), primary="tps")
    by = {t["metric"]: t for t in c["tests"]}
    tps, lfs = by["tps"], by["log_file_sync_mean_ms"]
    assert tps["p"] == pytest.approx(lfs["p"])
    assert tps["verdict"] == lfs["verdict"] == "significant" == c["verdict"]
    assert tps["ci"][1] < 0 < lfs["ci"][0]  # fewer transactions, longer commits


def test_fewer_than_2_runs_a_side_are_not_tested():
    c = compare.compare_runs(runs([1.0]), runs([2.0]))
    assert c["tests"] == [] and c["verdict"] == "not tested: n = 1 + 1 runs; a comparison needs >= 2 runs per side"
    assert "p" not in json.dumps(c["tests"])


def test_a_primary_metric_absent_from_the_runs_is_said():
    c = compare.compare_runs(runs(A8), runs(B8), primary="commit_response_p50_ms")
    assert c["verdict"] == "not tested: the primary metric commit_response_p50_ms is not in every run"


def test_metric_names_are_the_public_vocabulary():
    names = metrics.metric_names()
    for name in ("tps", "log_file_sync_p50_ms", "lfs_over_20ms_pct", "redo_wastage_pct", "race_win_pct",
                 "commit_response_p99_ms", "achieved_rate", "offered_rate", "kept_up"):
        assert name in names
    r = fake_report(2.0, commit_response={"p50_us": 3000, "p99_us": 9000}, achieved_rate=900.0, offered_rate=1000.0,
                    kept_up=False)
    m = metrics.run_metrics(r)
    assert m["commit_response_p50_ms"] == 3.0 and m["achieved_rate"] == 900.0 and m["kept_up"] is False
    assert m["race_win_pct"] is None and m["writes_under_4k_pct"] == 100.0
    lfs, lfpw = r["log_file_sync"]["mean_us"], r["log_file_parallel_write"]["mean_us"]
    assert m["lfs_over_lfpw_mean"] == pytest.approx(lfs / lfpw)
    assert m["bytes_per_write"] == pytest.approx(r["bytes_written"] / r["writes"])


def _disks(config: dict[tuple[str, int], list[dict]], entry: dict | None = None) -> list[Disk]:
    out: dict[str, Disk] = {}
    for (name, bs), reports in config.items():
        for i, rep in enumerate(reports, 1):
            e = {"disk": name, "blocksize": bs, "verdict": {"allowed": True}, **(entry or {})}
            out.setdefault(name, Disk(name, e)).runs.append(Run(name, bs, i, e, rep))
    return list(out.values())


SEED = {"what": "log file sync ratio", "unit": "ratio", "quote": "about twice as slow", "where": "seed 002",
        "derivation": "8 ms / 4 ms", "lab": "ratio", "metric": "log_file_sync_p50_ms", "a": "slow@512", "b": "fast@512"}


def test_seed_ratio_agrees_inside_the_lab_ci_and_differs_outside():
    disks = _disks({("slow", 512): runs([2 * x for x in A8]), ("fast", 512): runs(A8)})
    inside, outside = compare.seed_table({"seed_figures": [{**SEED, "seed_value": 2.0},
                                                            {**SEED, "seed_value": 5.0}]}, disks)
    assert inside["lab_value"] == pytest.approx(2.0) and inside["agreement"] == "agrees"
    lo, hi = outside["ci"]
    assert lo <= 2.0 <= hi and outside["agreement"] == f"differs (seed 5.0 outside lab CI [{lo:.3g}, {hi:.3g}])"
    assert inside["where"] == "seed 002" and inside["derivation"] == "8 ms / 4 ms"


def test_seed_value_none_and_missing_sides():
    disks = _disks({("fast", 512): runs(A8)})
    rows = compare.seed_table({"seed_figures": [
        {**SEED, "lab": "value", "a": "fast@512", "seed_value": 1.0, "unit": "ms", "tell_apart": 2.0},
        {**SEED, "lab": "none", "reason": "the lab has no Exadata cell"},
        {**SEED, "seed_value": 2.0}]}, disks)
    assert rows[0]["agreement"] == "agrees" and rows[0]["lab_value"] == pytest.approx(np.median(A8))
    assert rows[1]["agreement"] == "not compared: the lab has no Exadata cell"
    assert rows[2]["agreement"] == "not compared: slow@512 (not in this bench) did not run"


def test_a_seed_figure_agrees_only_where_the_lab_ci_can_tell_it_apart():
    """Inside the CI is not enough: the CI must be narrower than the figure's distance from the
    value it is told apart from (1 for a ratio), else it is too wide to tell; a value figure with
    nothing named to tell it from is not called an agreement; a CI of no width agrees exactly."""
    assert compare.agreement(1.25, (1.1, 1.3), 1.0) == "agrees"
    assert compare.agreement(1.25, (0.9, 1.4), 1.0) == ("too wide to tell: the lab CI [0.9, 1.4] is 0.5 wide, "
                                                        "the seed is 0.25 from 1")
    assert compare.agreement(0.13, (0.12, 0.14), None) == ("inside the lab CI, nothing named to tell it apart "
                                                           "from: not an agreement")
    assert compare.agreement(0.0, (0.0, 0.0), None) == "agrees"
    assert compare.agreement(2.0, (1.1, 1.3), 1.0) == "differs (seed 2.0 outside lab CI [1.1, 1.3])"
    assert compare.tell_apart({"unit": "ratio"}) == 1.0 and compare.tell_apart({"unit": "%"}) is None
    assert compare.tell_apart({"unit": "%", "tell_apart": 50}) == 50.0
    # A ratio's CI that holds 1 is too wide, whatever the seed's figure.
    disks = _disks({("slow", 512): runs([x * (1.3 if i % 2 else 0.8) for i, x in enumerate(A8)]),
                    ("fast", 512): runs(A8)})
    (row,) = compare.seed_table({"seed_figures": [{**SEED, "seed_value": 1.0 + 1e-9}]}, disks)
    assert row["ci"][0] < 1.0 < row["ci"][1], row
    assert row["agreement"].startswith("too wide to tell") or row["agreement"].startswith("differs"), row


def test_holm_adjusts_a_presets_primary_tests_as_one_family():
    """Holm's step-down: the k-th smallest p times (m - k + 1), monotone, at most 1; the primary
    tests of a preset's comparisons get the adjusted p, keep the raw one, and their verdict is the
    adjusted p's."""
    assert stats.holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert stats.holm([0.5, 0.9]) == pytest.approx([1.0, 1.0]) and stats.holm([]) == []
    assert stats.holm([0.004]) == [0.004]
    heads = [{"tests": [{"metric": "tps", "p": p, "ci": [1.0, 2.0], "verdict": "significant", "note": None}],
              "primary": "tps", "n": [8, 8]} for p in (0.004, 0.006, 0.2)]
    compare.adjust_family(heads)
    got = [(h["tests"][0]["p_unadjusted"], h["tests"][0]["p"], h["tests"][0]["family"], h["verdict"]) for h in heads]
    assert got == [(0.004, pytest.approx(0.012), 3, "within noise"), (0.006, pytest.approx(0.012), 3, "within noise"),
                   (0.2, pytest.approx(0.2), 3, "within noise")]
    assert all(h["min_p_note"] is None for h in heads)  # 8 + 8 runs: 3 x 1.55e-4 is below 0.01
    few = [{"tests": [{"metric": "tps", "p": 0.1, "ci": [1.0, 2.0], "verdict": "x", "note": None}],
            "primary": "tps", "n": [3, 3]} for _ in range(2)]
    compare.adjust_family(few)
    assert "2 x that over the preset's 2 comparisons (Holm)" in few[0]["min_p_note"]


def test_bimodal_distributions_are_named_and_others_are_not():
    rng = np.random.default_rng(1)
    two = np.concatenate([rng.lognormal(np.log(0.2), 0.3, 6000), rng.lognormal(np.log(3.0), 0.3, 3000)])
    found = stats.bimodal(two)
    assert found is not None
    assert found["modes"][0] == pytest.approx(0.2, rel=0.2) and found["modes"][1] == pytest.approx(3.0, rel=0.2)
    assert found["shares"] == pytest.approx([2 / 3, 1 / 3], abs=0.02)
    assert stats.bimodal(rng.lognormal(0, 0.5, 9000)) is None
    long_tail = np.concatenate([rng.lognormal(np.log(0.5), 0.4, 9000), 0.5 + 0.5 * rng.pareto(1.5, 1000)])
    assert stats.bimodal(long_tail) is None
    # A second peak of 2 % of the commits is a tail, not a mode.
    assert stats.bimodal(np.concatenate([rng.lognormal(np.log(0.2), 0.3, 9800),
                                         rng.lognormal(np.log(3.0), 0.3, 200)])) is None


def _results(tmp_path, design: dict | None):
    (tmp_path / "runs").mkdir()
    entries = []
    plan = [("slow", 512, [2.0, 2.1, 2.2], {}), ("fast", 512, [1.0, 1.1, 1.2], {"override": True}),
            ("null", 512, [0.01, 0.011, 0.012], {"control": True}),
            ("open", 512, [1.0, 1.0], {"mode": "open", "rate": 1000, "arrival": "poisson"})]
    for name, bs, values, extra in plan:
        for i, v in enumerate(values, 1):
            rid = f"runs/{name}-bs{bs}-{i}.json"
            top = {"offered_rate": 1000.0, "achieved_rate": 700.0 if i == 2 else 1000.0, "kept_up": i != 2} \
                if name == "open" else {}
            (tmp_path / rid).write_text(json.dumps(fake_report(v, **top)))
            entries.append({"disk": name, "blocksize": bs, "repeat": i, "verdict": {"allowed": True},
                            "report": rid, "slot": len(entries), **extra})
    bench = {"preset": "unit", "runs": entries, "seed_figures": [{**SEED, "seed_value": 2.0}],
             "comparisons": [{"title": "slow against fast", "a": {"disk": "slow", "blocksize": 512},
                              "b": {"disk": "fast", "blocksize": 512}, "primary": "tps"}]}
    if design:
        bench["design"] = design
    (tmp_path / "bench.json").write_text(json.dumps(bench))
    return report.write(tmp_path)


def test_the_report_states_design_override_control_open_loop_and_seed(tmp_path):
    design = {"seed": 42, "order": ["slow-bs512-1", "fast-bs512-1"], "repeats": 3, "randomized": True}
    written = _results(tmp_path, design)
    md = written["md"].read_text()
    assert "Run order: randomized with seed 42, configurations interleaved; 3 run(s) per configuration; " \
           "in execution order: slow-bs512-1, fast-bs512-1." in md
    assert "512 (override) (median of 3)" in md and "fast at 512 (override) (median of 3 runs)" in md
    assert "## Controls on the guest path: the harness floor" in md and "null@512 (control)" in md
    assert "512 #2 (slot 10) (did not keep up)" in md and "| achieved rate (commits/s) |" in md
    assert "Open-loop runs (2): poisson arrivals at 1000 commits/s" in md
    assert "| log file sync ratio (`log_file_sync_p50_ms`, slow@512 / fast@512) | 2.0 ratio |" in md
    s = json.loads(written["summary"].read_text())
    assert s["design"] == design and s["seed_figures"][0]["agreement"] == "agrees"
    c = s["comparisons"][0]
    assert c["primary"] == "tps" and c["tests"][0]["metric"] == "tps" and c["verdict"] == "within noise"
    assert all({"p", "n", "ci", "ci_pct", "medians", "verdict"} <= set(t) for t in c["tests"])
    assert s["controls"][0]["control"] == "null@512" and "slow@512" in s["controls"][0]["controls"]


def test_an_old_bench_without_a_design_says_the_order_is_not_recorded(tmp_path):
    md = _results(tmp_path, None)["md"].read_text()
    assert "Run order: not recorded in bench.json (an older bench)" in md
