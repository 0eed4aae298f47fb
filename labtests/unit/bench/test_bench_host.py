"""`sectorlab bench-host` and `--wakeup-us host`: this host's wake-up and log writer CPU per write,
measured with redo-writer to null: (bench/cost/host.py), given to the virtual clock with their
source, which the record and the report carry."""

from __future__ import annotations

import json
import statistics

import pytest

from sectorlab import cli
from sectorlab.bench.cost import host
from sectorlab.errors import UsageError
from sectorlab.report import clock as report_clock


def test_the_wakeup_is_what_a_commit_to_null_leaves_beyond_the_log_writers_own_time():
    """Two real runs on this host: each run's wake-up is half of its log file sync beyond its log
    file parallel write and the log writer's CPU, and the figures are the runs' median and range."""
    m = host.measure(rounds=2, seconds=1)
    assert len(m["runs"]) == 2
    for r in m["runs"]:
        assert r["commits"] > 100 and r["log_file_sync_p50_us"] > 0 and r["log_writer_cpu_us"] > 0
        want = (r["log_file_sync_p50_us"] - r["log_file_parallel_write_p50_us"] - r["log_writer_cpu_us"]) / 2
        assert r["wakeup_us"] == pytest.approx(max(want, 0.0))
    for key in ("wakeup_us", "log_writer_cpu_us"):
        values = [r[key] for r in m["runs"]]
        assert m[key] == {"median": statistics.median(values), "min": min(values), "max": max(values)}
    assert host.source(m, "wakeup_us").startswith(f"measured on this host {m['date']}: median of 2 runs of 1 s, ")


MEASURED = {"wakeup_us": {"median": 23.4, "min": 20.0, "max": 31.0},
            "log_writer_cpu_us": {"median": 6.6, "min": 6.1, "max": 7.0},
            "runs": [], "rounds": 5, "seconds": 2, "what": {"wakeup_us": "how", "log_writer_cpu_us": "how"},
            "date": "2026-11-30T00:00:00+00:00"}


def test_a_time_given_as_host_is_measured_and_kept_with_its_source(monkeypatch):
    from sectorlab.commands import bench as commands
    asked = []
    monkeypatch.setattr(host, "measure", lambda **kw: asked.append(kw) or MEASURED)
    args = cli.build_parser().parse_args(["bench-load", "p3700-4k", "--clock", "virtual", "--wakeup-us", "host",
                                          "--log-writer-cpu-us", "host", "--cpus", "96"])
    clock = commands._clock(args)
    assert len(asked) == 1 and (clock.wakeup_us, clock.log_writer_cpu_us, clock.cpus) == (23, 7, 96)
    record = clock.as_json()
    assert record["sources"]["wakeup_us"] == ("measured on this host 2026-11-30T00:00:00+00:00: median of 5 runs of "
                                              "2 s, 20.0-31.0 us (how)")
    words = report_clock.host(json.loads(json.dumps(record)))
    assert words.startswith("a wake-up of 23 us (measured on this host 2026-11-30T00:00:00+00:00: median of 5 runs")
    assert "7 us of the log writer's CPU before each write (measured on this host" in words


def test_a_given_time_is_said_to_be_given_and_a_bad_one_is_one_line(capsys):
    args = cli.build_parser().parse_args(["bench-load", "p3700-4k", "--clock", "virtual", "--wakeup-us", "10"])
    from sectorlab.commands import bench as commands
    clock = commands._clock(args)
    assert "sources" not in clock.as_json()
    assert report_clock.host(clock.as_json()).startswith("a wake-up of 10 us (given) on average (exponential")
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["bench-load", "p3700-4k", "--clock", "virtual", "--wakeup-us", "hots"])
    assert "'hots': expected a whole number from 0 to 1000000, or 'host' (this host's, measured)" in \
        capsys.readouterr().err
    with pytest.raises(UsageError, match=r"^sources = .*: expected the sources of wakeup_us and log_writer_cpu_us"):
        report_clock.host({**clock.as_json(), "sources": {"wakeup_us": 5}})
