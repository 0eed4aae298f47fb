"""sectorlab report on a small results directory made on the host (no VM): redo-writer really run
on files, with the rules engine's verdicts for two geometries; the report's numbers are checked
against the JSON they come from."""

from __future__ import annotations

import json
import re
import statistics
import subprocess

import pytest

from labtests.conftest import require_program
from sectorlab import bench
from sectorlab.analysis import metrics, stats
from sectorlab.devices import build
from sectorlab.errors import SectorlabError
from sectorlab.inguest import rules
from sectorlab.paths import REPO
from sectorlab.report import document, render
from sectorlab.report import redo as report

SRC = REPO / "redo-writer"
# (disk, logical, physical): a 512e disk runs 512 (twice), 1024 and 4096 (three times: the spread); on
# the 512n disk the rules engine refuses 4096 (ORA-01378), and nothing runs.
DISKS = (("file-sector512e", 512, 4096), ("file-sector512n", 512, 512))


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    require_program("cc")
    build.built(build.REDO_WRITER)
    out = tmp_path_factory.mktemp("results")
    (out / "runs").mkdir()
    runs = []
    for disk, logical, physical in DISKS:
        for bs in (512, 1024, 4096):
            verdict = rules.evaluate(logical, physical, bs, disk=disk).as_json()
            repeats = {("file-sector512e", 4096): 3, ("file-sector512e", 512): 2}.get((disk, bs), 1)
            for repeat in range(1, repeats + 1):
                entry = {"disk": disk, "vm": "host", "bus": "file", "geometry": disk.split("-")[1],
                         "device": str(out / f"{disk}.log"), "logical": logical, "physical": physical,
                         "blocksize": bs, "repeat": repeat, "verdict": verdict}
                if verdict["allowed"]:
                    rid = f"runs/{disk}-bs{bs}-{repeat}"
                    cmd = [str(SRC / "redo-writer"), "run", "--target", str(out / f"{disk}.log"), "--blocksize",
                           str(bs), "--sessions", "2", "--transactions", "300", "--redo-per-txn", "700",
                           "--log-size", str(1 << 20), "--output", "json", "--events", str(out / f"{rid}.csv")]
                    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
                    (out / f"{rid}.json").write_text(proc.stdout)
                    entry.update(report=f"{rid}.json", events=f"{rid}.csv", command=" ".join(cmd))
                runs.append(entry)
    # A race of two files (redo-writer --race), as the exadata-flashlog preset runs one.
    a, b = out / "race-a.log", out / "race-b.log"
    cmd = [str(SRC / "redo-writer"), "run", "--target", str(a), "--race", str(b), "--blocksize", "512",
           "--sessions", "2", "--transactions", "300", "--redo-per-txn", "700", "--log-size", str(1 << 20),
           "--output", "json", "--events", str(out / "runs/race-bs512-1.csv")]
    (out / "runs/race-bs512-1.json").write_text(subprocess.run(cmd, capture_output=True, text=True,
                                                               check=True).stdout)
    runs.append({"disk": "race", "vm": "host", "bus": "file", "geometry": "512n", "device": f"{a} raced with {b}",
                 "logical": 512, "physical": 512, "blocksize": 512, "repeat": 1,
                 "verdict": rules.evaluate(512, 512, 512).as_json(), "report": "runs/race-bs512-1.json",
                 "events": "runs/race-bs512-1.csv", "command": " ".join(cmd)})
    comparisons = [{"title": "512n against 512e at 512", "a": {"disk": "file-sector512n", "blocksize": 512},
                    "b": {"disk": "file-sector512e", "blocksize": 512}},
                   {"title": "a refused side", "a": {"disk": "file-sector512n", "blocksize": 4096},
                    "b": {"disk": "file-sector512e", "blocksize": 4096}}]
    preset = bench.Preset("unit", out, None, "", "", None, [512, 4096], [],
                               asm=[{"target": "file-sector512e", "sector_size": 512}])
    bench_json = {"preset": "unit", "lab": "none", "started": "2026-11-23T00:00:00Z", "image": "none",
             "workload": {"sessions": 2, "redo_per_txn": 700, "rate": 0, "warmup_s": 0, "duration_s": 0},
             "commands": ["pytest labtests/unit/report/test_report.py"], "runs": runs, "comparisons": comparisons,
             "rules": bench.asm_verdicts(preset, {"file-sector512e": (512, 4096)})}
    (out / "bench.json").write_text(json.dumps(bench_json))
    return out


@pytest.fixture(scope="module")
def written(results):
    return report.write(results)


def test_writes_markdown_html_summary_and_pictures(results, written):
    assert set(written) == {"md", "html", "summary"} and all(p.is_file() for p in written.values())
    pngs = sorted(results.glob("report-*.png"))
    # Per disk two pictures, and the shift function where both BLOCKSIZEs ran at least twice (512e);
    # one for the comparison across disks that ran (the other has a refused side; 512n ran once, so
    # no shift function). A disk's pictures are report-disk-NAME-*, apart from the comparisons'.
    assert [p.name for p in pngs] == ["report-comparison-1.png"] + [
        f"report-disk-{d}-{k}.png" for d in ("file-sector512e", "file-sector512n", "race")
        for k in ("histogram", "over-time", "shift") if k != "shift" or d == "file-sector512e"]
    html = written["html"].read_text()
    # Self-contained: every picture inline, nothing fetched.
    assert html.count('src="data:image/png;base64,') == 8
    assert not re.search(r'(src|href)="(https?:)?//', html)
    assert '<meta name="viewport"' in html


def test_numbers_come_from_the_runs_json(results, written):
    s = json.loads(written["summary"].read_text())
    by_disk = {d["disk"]: d for d in s["disks"]}
    for d in s["disks"]:
        for run in d["runs"]:
            if not run["allowed"]:
                assert "metrics" not in run
                continue
            raw = json.loads((results / run["report"]).read_text())
            m = run["metrics"]
            assert m["transactions/s"] == raw["tps"]
            assert m["redo writes"] == raw["writes"]
            assert m["redo wastage %"] == raw["wastage_pct"]
            assert m["redo size per transaction (B)"] == pytest.approx(raw["redo_bytes"] / raw["transactions"])
            assert m["log file sync p99 (ms)"] == pytest.approx(raw["log_file_sync"]["p99_us"] / 1000)
            assert m["log file parallel write max (ms)"] == pytest.approx(
                raw["log_file_parallel_write"]["max_us"] / 1000)
    # 700 B of redo in 512-byte blocks (16 B header each): at least 2 blocks a commit, so writes under
    # 4 KiB at 512; at 4096 none.
    runs = {(r["blocksize"], r["repeat"]): r for r in by_disk["file-sector512e"]["runs"]}
    assert runs[(512, 1)]["metrics"]["redo writes under 4 KiB"] > 0
    assert runs[(4096, 1)]["metrics"]["redo writes under 4 KiB"] == 0
    assert runs[(4096, 1)]["metrics"]["redo wastage %"] > runs[(512, 1)]["metrics"]["redo wastage %"]


def test_comparison_tests_one_value_per_run_with_its_verdict(results, written):
    from sectorlab.analysis import compare
    s = json.loads(written["summary"].read_text())
    d = next(d for d in s["disks"] if d["disk"] == "file-sector512e")
    raw = {bs: [json.loads((results / f"runs/file-sector512e-bs{bs}-{k}.json").read_text()) for k in range(1, n + 1)]
           for bs, n in ((512, 2), (4096, 3))}
    c = d["comparison"]
    assert c["primary"] == "log_file_sync_p50_ms" and c["tests"][0]["metric"] == c["primary"]
    for t in c["tests"]:
        a, b = ([metrics.metric(r, t["metric"]) for r in raw[bs]] for bs in (512, 4096))
        assert t["n"] == [2, 3] and t["p"] == pytest.approx(stats.mann_whitney(a, b))
        assert t["medians"] == pytest.approx([statistics.median(a), statistics.median(b)])
        assert t["ci"] == pytest.approx(list(stats.median_shift_ci(a, b)))
        assert t["verdict"] == compare.verdict(t["p"], t["ci"])[0]
    assert c["verdict"] == c["tests"][0]["verdict"] == "within noise"  # 2 + 3 runs cannot reach p < 0.01
    assert c["min_p"] == pytest.approx(0.2) and "cannot show a difference at p < 0.01" in c["min_p_note"]
    # Both sides repeated (2 and 3 runs): the change is of the medians.
    med = {bs: statistics.median(r["tps"] for r in raw[bs]) for bs in (512, 4096)}
    assert c["change_of"] == "the medians of 2 and 3 runs"
    assert c["change_pct"]["transactions/s"] == pytest.approx(100 * (med[4096] - med[512]) / med[512])
    md = written["md"].read_text()
    assert "Primary metric, log file sync p50 (`log_file_sync_p50_ms`): median" in md
    assert "these runs cannot show a difference at p < 0.01" in md and "Welch" not in md


def test_every_tested_metric_has_p_n_and_ci(written):
    s = json.loads(written["summary"].read_text())
    assert s["version"] == report.SUMMARY_VERSION >= 2
    compared = [d["comparison"] for d in s["disks"] if d["comparison"]] + [c for c in s["comparisons"] if "tests" in c]
    assert compared
    for c in compared:
        for t in c["tests"]:
            assert isinstance(t["p"], float) and len(t["n"]) == 2 and len(t["ci"]) == 2, t


def test_refused_blocksize_is_shown_with_ora_01378_and_not_run(written):
    s = json.loads(written["summary"].read_text())
    d = next(d for d in s["disks"] if d["disk"] == "file-sector512n")
    refused = {r["blocksize"]: r for r in d["runs"] if not r["allowed"]}
    assert sorted(refused) == [1024, 4096] and d["comparison"] is None
    assert "ORA-01378" in refused[4096]["verdict_error"]
    md = written["md"].read_text()
    assert "BLOCKSIZE 4096 not run: refused: ORA-01378" in md


def test_spread_of_the_repeats(results, written):
    s = json.loads(written["summary"].read_text())
    d = next(d for d in s["disks"] if d["disk"] == "file-sector512e")
    spread = d["spread"]["4096"]
    tps = sorted(json.loads((results / f"runs/file-sector512e-bs4096-{k}.json").read_text())["tps"]
                 for k in (1, 2, 3))
    assert spread["runs"] == 3 and spread["tps"] == pytest.approx([tps[0], tps[1], tps[2]])
    assert "BLOCKSIZE 4096 repeated 3 times" in written["md"].read_text()


def test_a_directory_without_bench_json_is_refused_by_name(tmp_path):
    with pytest.raises(SectorlabError, match=r"no bench.json; expected a results directory written by"):
        report.write(tmp_path)


def test_an_allowed_run_without_its_report_is_an_error(results, tmp_path):
    bench_json = json.loads((results / "bench.json").read_text())
    del bench_json["runs"][0]["report"]
    (tmp_path / "bench.json").write_text(json.dumps(bench_json))
    with pytest.raises(SectorlabError, match=r"runs\[0\]: BLOCKSIZE 512 is allowed on file-sector512e but no report"):
        report.load(tmp_path)


def test_a_comparison_of_single_runs_is_not_tested(results, written):
    s = json.loads(written["summary"].read_text())
    c = s["comparisons"][0]
    a = json.loads((results / "runs/file-sector512n-bs512-1.json").read_text())
    b = json.loads((results / "runs/file-sector512e-bs512-1.json").read_text())
    # 512n ran once at 512: no test, no p-value; the change is of the first runs.
    assert c["tests"] == [] and c["verdict"] == c["not_tested"] == (
        "not tested: n = 1 + 2 runs; a comparison needs >= 2 runs per side")
    assert c["change_of"] == "the first run of each"
    assert c["change_pct"]["redo writes"] == pytest.approx(100 * (b["writes"] - a["writes"]) / a["writes"])
    md = written["md"].read_text()
    assert "### 512n against 512e at 512" in md
    assert f"| redo writes | {a['writes']:,} | {b['writes']:,} |" in md
    assert "Not tested: n = 1 + 2 runs; a comparison needs >= 2 runs per side (no p-value is given)." in md
    assert "values" not in c and "runs" not in c  # summary.json names the runs' files; it does not copy them


def test_a_comparison_with_a_refused_side_says_so_and_compares_nothing(written):
    c = json.loads(written["summary"].read_text())["comparisons"][1]
    assert "tests" not in c and c["not_compared"] == ["file-sector512n@4096 (refused (ORA-01378))"]
    assert "Not compared: file-sector512n@4096 (refused (ORA-01378)) did not run." in written["md"].read_text()


def test_race_wins_add_up_to_the_log_writes(results, written):
    s = json.loads(written["summary"].read_text())
    run = next(d for d in s["disks"] if d["disk"] == "race")["runs"][0]
    raw = json.loads((results / run["report"]).read_text())
    wins = run["race_wins"]
    assert [w["wins"] for w in wins] == [m["wins"] for m in raw["members"]]
    assert sum(w["wins"] for w in wins) == raw["writes"]
    assert sum(w["share_pct"] for w in wins) == pytest.approx(100)
    assert "the race's log writes won by" in written["md"].read_text()


def test_asm_verdicts_need_the_override_above_the_disk_group_sector(written):
    rules_rows = json.loads(written["summary"].read_text())["rules"]
    got = {(r["blocksize"], r["override"]): r["verdict"]["allowed"] for r in rules_rows}
    assert got == {(512, False): True, (512, True): True, (4096, False): False, (4096, True): True}
    md = written["md"].read_text()
    assert "## The rules engine inside an ASM disk group" in md
    assert "| file-sector512e | 512 | 4096 | FALSE | refused: ORA-01378" in md


def test_run_metrics_by_name(results, written):
    s = json.loads(written["summary"].read_text())
    run = next(d for d in s["disks"] if d["disk"] == "race")["runs"][0]
    raw = json.loads((results / run["report"]).read_text())
    m = run["run_metrics"]
    assert list(m) == metrics.metric_names()
    assert m["tps"] == raw["tps"] and m["log_file_sync_p99_ms"] == pytest.approx(raw["log_file_sync"]["p99_us"] / 1000)
    assert m["writes_under_4k_pct"] == pytest.approx(100 * raw["writes_under_4k"] / raw["writes"])
    assert m["race_win_pct"] == pytest.approx(100 * raw["members"][0]["wins"] / raw["writes"])
    # A closed-loop run's commit response is its log file sync (no CPU per transaction here), and it
    # always keeps up with itself.
    assert m["commit_response_p50_ms"] == pytest.approx(raw["commit_response"]["p50_us"] / 1000)
    assert raw["arrival"] == "closed" and m["kept_up"] is True


def test_a_change_over_tenfold_reads_as_a_ratio():
    assert document._change_text("redo writes under 4 KiB", 100 * (4116 - 4) / 4, 4, 4116) == "x1,029"
    assert document._change_text("transactions/s", -49.5, 11180.6, 5646.7) == "-49.5 %"
    assert document._change_text("redo wastage %", None, 1.64, 5.97) == "+4.33 points"


def test_the_disks_table_names_the_device_model_that_served_a_disk():
    from sectorlab.analysis.metrics import Disk, Run
    from sectorlab.report import document
    entry = {"bus": "virtio", "device": "/dev/vdd", "logical": 512, "physical": 512, "model": "x25e-raid0-8",
             "verdict": {"allowed": True, "blocksize": 512, "default_blocksize": 512}}
    plain = {**entry, "device": "/dev/vdc", "model": None}
    disks = [Disk("ssd", entry, [Run("ssd", 512, 1, entry)]), Disk("plain", plain, [Run("plain", 512, 1, plain)])]
    text = "\n".join(document._disks_table(disks))
    assert "`/dev/vdd` (device model `x25e-raid0-8`)" in text
    assert "`/dev/vdc` |" in text and "`/dev/vdc` (device model" not in text


def test_the_png_is_as_tall_as_the_page(tmp_path):
    """Chromium shoots its window, not the page: render_png measures the page first and makes the
    window as tall, so a red bar 6,000 px down the page (below a blank stretch) is in the picture
    and the picture ends with it."""
    from PIL import Image
    require_program("chromium")
    html = tmp_path / "report.html"
    html.write_text('<html><body style="margin:0;background:#fff"><div style="height:6000px"></div>'
                    '<div style="height:40px;background:#f00"></div></body></html>')
    (png,) = render.render_png(html, {"desktop": 800}).values()
    with Image.open(png) as shot:
        rgb = shot.convert("RGB")
    assert rgb.height == 6040, rgb.height
    assert rgb.getpixel((400, 6020)) == (255, 0, 0) and rgb.getpixel((400, 5990)) == (255, 255, 255)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report-desktop.png", "report.html"], "the probe is gone"
