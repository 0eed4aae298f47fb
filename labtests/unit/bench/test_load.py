"""bench-load (sectorlab/bench/load.py): the seed's own load, closed loop, on the device path. A
preset's [bench.closed_loop] is checked before anything starts; the report gives group commit per
configuration (commits per log write, log file sync over log file parallel write, the sessions'
measured CPU), how far the host got against the seed's transactions/s, the comparisons and the
seed's figures; and a real run on this host's models (redo-writer measures its threads' CPU and
counts commits per write)."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from labtests.unit.analysis.test_compare import fake_report
from labtests.unit.bench.test_sweep import TINY, tiny_preset
from sectorlab import bench
from sectorlab.bench.clock import Clock
from sectorlab.bench.devicepath import load
from sectorlab.errors import UsageError
from sectorlab.report import load as report_load

CLOSED = '''
[bench.closed_loop]
sessions = 3
redo_per_txn = 2000
cpu_us_per_txn = 100
seed_tps = 10000
source = "a test"

[[bench.closed_loop.figure]]
what = "commits per log write, 512 against 4096"
seed_value = 2.0
unit = "ratio"
quote = "q"
where = "w"
lab = "ratio"
metric = "commits_per_write"
a = "flash@512"
b = "flash@4096"
'''


def _preset(tmp_path, text: str = CLOSED):
    return tiny_preset(tmp_path, text)


def test_the_closed_loop_is_the_seeds_load_and_its_figures_are_read(tmp_path):
    p = _preset(tmp_path)
    w = load.workload(p)
    assert (w.sessions, w.redo_per_txn, w.rate, w.arrival, w.cpu_us_per_txn) == (3, 2000, 0, "closed", 100)
    (f,) = p.closed_loop["figure"]
    assert f["metric"] == "commits_per_write" and f["a"] == {"disk": "flash", "blocksize": 512}
    real = bench.load_preset("ssd-vs-hdd").closed_loop
    assert (real["sessions"], real["redo_per_txn"], real["cpu_us_per_txn"]) == (84, 7881, 2960)


def test_every_redo_preset_has_its_seeds_load_closed_loop_with_figures_the_lab_compares():
    """Each redo preset runs its seed's closed loop; the numbers it derives from its seed are the
    seed's arithmetic (seed 000's from its AWR: 504,694,043.7 B/s over 5,350.6 B a transaction; 3,359,023
    log writes at 0.12 a transaction over that rate; DB time from 35.4K s of DB CPU at 59.1 %)."""
    redo = [n for n in bench.preset_names() if bench.load_preset(n).kind == "redo"]
    assert {"p3700-4k", "ssd-vs-hdd", "exadata-flashlog", "vsphere-512e"} <= set(redo)
    for name in redo:
        c = bench.load_preset(name).closed_loop
        assert c and c["source"] and any(f["lab"] != "none" for f in c["figure"]), name
    c = bench.load_preset("p3700-4k").closed_loop
    tps = 504_694_043.7 / 5_350.6
    txns = 3_359_023 / 0.12
    assert c["seed_tps"] == round(tps) and c["redo_per_txn"] == round(5_350.6)
    assert c["sessions"] == round(35_400 / 0.591 / (txns / tps)) and c["cpu_us_per_txn"] == round(35_400e6 / txns)


@pytest.mark.parametrize("text, says", [
    ("", "has no [bench.closed_loop]: it does not say the seed's sessions"),
    (CLOSED.replace("sessions = 3\n", ""), "[bench.closed_loop]: no sessions"),
    (CLOSED.replace('metric = "commits_per_write"', 'metric = "nope"'), "metric"),
])
def test_a_bad_closed_loop_is_one_line(tmp_path, text, says):
    with pytest.raises(UsageError) as e:
        load.workload(_preset(tmp_path, text))
    assert "\n" not in str(e.value) and says in str(e.value), str(e.value)


def test_a_closed_loop_that_is_not_a_table_is_one_line(tmp_path):
    path = tmp_path / "tiny.toml"
    path.write_text(TINY.replace("repeats = 2\n", "repeats = 2\nclosed_loop = 3\n"))
    with pytest.raises(UsageError, match="closed_loop = 3: expected a table"):
        bench.load_preset(str(path))


def _results(tmp_path, per_config: dict[str, list[dict]]) -> tuple:
    out = tmp_path / "res"
    (out / "runs").mkdir(parents=True)
    runs = []
    for config, reports in per_config.items():
        for i, rep in enumerate(reports, 1):
            name = f"runs/{config.replace('@', '-')}-{i}.json"
            (out / name).write_text(json.dumps(rep))
            runs.append({"value": load.VARIANT, "config": config, "repeat": i, "report": name})
    p = _preset(tmp_path)
    doc = {"preset": "tiny", "seed": "", "title": "t", "workload": load.workload(p).as_json(),
           "closed_loop": {k: v for k, v in p.closed_loop.items() if k != "figure"},
           "seed_figures": p.closed_loop["figure"], "comparisons": p.compares, "order_seed": 3, "repeats": 8,
           "runs": runs, "wall_s": 1}
    (out / "load.json").write_text(json.dumps(doc))
    return out, report_load.write(out)


def _rep(sync_ms: float, commits_per_write: float, cpu: float) -> dict:
    return fake_report(sync_ms, commits_per_write=commits_per_write,
                       cpu_measured={"sessions_us_per_txn": cpu, "log_writer_us_per_write": 5.0})


def test_the_report_gives_group_commit_how_far_the_host_got_and_the_figures(tmp_path):
    a = [_rep(1.0 + i * 0.01, 2.0 + i * 0.001, 110 + i) for i in range(8)]
    b = [_rep(0.5 + i * 0.01, 1.0 + i * 0.001, 105 + i) for i in range(8)]
    out, written = _results(tmp_path, {"flash@512": a, "flash@4096": b})
    md = written["md"].read_text()
    assert "| commits per log write | 2.00 | 1.00 |" in md
    assert "| sessions' CPU per transaction, measured (us) | 114 | 108 |" in md
    # tps = 4 sessions / sync time: 4 / 1.035 ms and 4 / 0.535 ms, of the seed's 10,000.
    assert "these runs reached flash@512 38.6 %, flash@4096 74.8 % of it" in md
    assert "**significant**" in md and "## The seed's figures beside the lab's" in md
    summary = json.loads((out / "summary.json").read_text())
    (fig,) = summary["seed_figures"]
    assert fig["lab_value"] == pytest.approx(2.0, rel=0.01) and fig["agreement"] == "agrees", fig
    assert summary["configurations"]["flash@512"]["commits_per_write"] == pytest.approx(2.0035)


@pytest.mark.long
@pytest.mark.skipif(shutil.which("nbdkit") is None, reason="nbdkit is not installed (scripts/bootstrap installs it)")
def test_a_closed_loop_runs_on_this_hosts_models(tmp_path):
    """One session, closed loop, 100 us of CPU a transaction, a run of 1 s per configuration on real
    models: redo-writer measures the session's CPU (at least what was applied) and writes each commit
    alone. One session, not three, and one run a configuration: a closed loop's sessions burn a core
    each for the whole run; how sessions share writes, and repeats, are the virtual clock's to judge
    (below)."""
    p = _preset(tmp_path, CLOSED.replace("sessions = 3", "sessions = 1"))
    out = load.run(p, lambda line: None, tmp_path / "results", repeats=1, seed=9)
    doc = json.loads((out / "load.json").read_text())
    assert len(doc["runs"]) == 2 and {r["config"] for r in doc["runs"]} == {"flash@512", "flash@4096"}
    reports = [json.loads((out / r["report"]).read_text()) for r in doc["runs"]]
    for r in reports:
        assert r["arrival"] == "closed" and r["cpu_us_per_txn"] == 100
        assert r["cpu_measured"]["sessions_us_per_txn"] >= 100, r["cpu_measured"]
        assert r["commits_per_write"] == 1.0 and r["transactions"] == r["writes"] > 0
    assert "How far the host got" in (out / "report.md").read_text()


def test_a_closed_loop_in_virtual_time_says_its_modelled_host_and_reruns_alike(tmp_path):
    """The closed loop on the virtual clock: the modelled host (wake-up, cores, the CPU's spread) is in
    the record, the report and the command that runs it again; the sessions' CPU is the modelled
    one; the same order seed gives the same runs."""
    p = _preset(tmp_path)
    clock = Clock("virtual", wakeup_us=10, cpus=2, log_writer_cpu_us=5)
    out = [load.run(p, lambda _: None, tmp_path / name, repeats=2, seed=9, clock=clock) for name in ("a", "b")]
    docs = [json.loads((o / "load.json").read_text()) for o in out]
    assert (docs[0]["clock"], docs[0]["wakeup_us"], docs[0]["cpus"], docs[0]["cpu_dist"]) == (
        "virtual", 10, 2, "exponential")
    for ra, rb in zip(docs[0]["runs"], docs[1]["runs"]):
        x, y = (json.loads((o / r["report"]).read_text()) for o, r in zip(out, (ra, rb)))
        x.pop("real_s"), y.pop("real_s")
        assert x == y and x["cpu_dist"] == "exponential" and x["commits_per_write"] >= 1
        assert x["virtual"]["log_writer_cpu_us"] == 5 and x["cpu_measured"]["log_writer_us_per_write"] == 5.0
        assert x["cpu_measured"]["sessions_us_per_txn"] == pytest.approx(100, rel=0.1)
    # the repeats are independent draws: each run's CPU from a seed of its own
    first = {}
    for r in docs[0]["runs"]:
        first.setdefault(r["config"], []).append(json.loads((out[0] / r["report"]).read_text())["transactions"])
    assert all(len(set(v)) == len(v) == 2 for v in first.values()), first
    assert all("--cpu-dist exponential" in r["command"] and "--seed " in r["command"] for r in docs[0]["runs"])
    md = (out[0] / "report.md").read_text()
    assert "# The seed's load, closed loop, in virtual time" in md
    assert "2 cores for the sessions' CPU, each transaction's CPU drawn from an exponential of its mean" in md
    assert "5 us of the log writer's CPU before each write" in md
    assert "How far the modelled host got" in md and "How far the host got" not in md
    assert ("--seed 9 --clock virtual --wakeup-us 10 --wakeup-dist exponential --cpus 2 --cpu-dist exponential "
            "--log-writer-cpu-us 5 -- ") in md


def test_a_closed_loop_with_no_cpu_in_virtual_time_asks_for_a_wake_up_before_anything_runs(tmp_path):
    """Back-to-back sessions with no CPU: in virtual time nothing separates them (on the floor no time
    would pass at all); one line asking for the modelled host's wake-up, and no results directory."""
    p = _preset(tmp_path, CLOSED.replace("cpu_us_per_txn = 100", "cpu_us_per_txn = 0"))
    with pytest.raises(UsageError, match=r"no CPU a transaction.*give the modelled host's wake-up, --wakeup-us"):
        load.run(p, lambda _: None, tmp_path / "results", repeats=2, seed=9, clock=Clock("virtual"))
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("key, value, says", [
    ("clock", "sundial", "clock = 'sundial': expected 'real' or 'virtual'"),
    ("cpus", -1, "cpus = -1: expected a whole number of the virtual clock's modelled host"),
    ("cpu_dist", "<b>", "cpu_dist = '<b>': expected 'fixed' or 'exponential'"),
])
def test_a_record_with_a_clock_it_cannot_have_is_one_line(tmp_path, key, value, says):
    from sectorlab.report import clock
    doc = {"clock": "virtual", "wakeup_us": 0, "cpus": 0, "cpu_dist": "fixed"} | {key: value}
    with pytest.raises(UsageError, match=re.escape(says)):
        clock.where(doc) if key != "cpu_dist" else clock.again(doc)
