"""redo-writer's engine on the virtual clock (redo-writer/vclock.c): a model: member is the lab's device
model (devicemodel/model.c) answering in its own time, the run's threads take turns, and the clock
moves only when all of them wait. The same engine as the real-time runs, so its arithmetic is held
exactly here: group commit, padding, races, mirrors, open-loop arrivals, modelled CPU, flushes; the
same run twice is the same run, byte for byte, however busy the host."""

from __future__ import annotations

import json
import subprocess

import pytest

TIMEOUT = 120


def _run(redo_writer, *args, check=True) -> subprocess.CompletedProcess:
    proc = subprocess.run([redo_writer, "run", *args], capture_output=True, text=True, timeout=TIMEOUT,
                          stdin=subprocess.DEVNULL)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def _json(redo_writer, *args) -> dict:
    return json.loads(_run(redo_writer, *args, "--output", "json").stdout)


def _latencies(doc: dict, event: str) -> tuple:
    e = doc[event]
    return e["count"], e["p50_us"], e["max_us"]


def test_group_commit_is_every_session_a_write_and_each_waits_one_service_time(redo_writer):
    """4 sessions, no CPU, a model that serves every write in 1 ms: the four commit at once, the log
    writer writes the four in one write, and so on: 1,000 writes of 4 commits in 1 s; every log file
    sync is the write's 1 ms, nothing of this host's in it."""
    doc = _json(redo_writer, "--target", "model:write=fixed:1000", "--sessions", "4", "--duration", "1")
    assert doc["clock"] == "virtual" and doc["elapsed_s"] == 1.0
    assert (doc["transactions"], doc["writes"], doc["commits_per_write"]) == (4000, 1000, 4.0)
    assert _latencies(doc, "log_file_sync") == (4000, 1000.0, 1000.0)
    assert _latencies(doc, "log_file_parallel_write") == (1000, 1000.0, 1000.0)
    (member,) = doc["members"]
    assert member["transport"] == "model" and member["model"] == "write=fixed:1000"
    assert member["fua_writes"] == member["syncs"] == 1000 and member["flushes"] == 0  # O_DSYNC: FUA writes
    assert doc["cpu_measured"]["sessions_us_per_txn"] == 0.0


@pytest.mark.parametrize("blocksize, sessions, redo, block_bytes", [
    (512, 1, 100, 512),     # 100 B in one 512-byte block: 396 B of padding a write (16 B of header)
    (512, 4, 100, 512),     # four commits' 400 B share one block: 96 B
    (512, 1, 512, 1024),    # 512 B spill into a second block: 480 B
    (4096, 1, 512, 4096),   # one 4 KiB block for 512 B: 3,568 B
])
def test_padding_is_whole_redo_blocks(redo_writer, blocksize, sessions, redo, block_bytes):
    doc = _json(redo_writer, "--target", "model:write=fixed:500", "--sessions", str(sessions), "--duration", "1",
                "--blocksize", str(blocksize), "--redo-per-txn", str(redo))
    writes = doc["writes"]
    assert writes == 2000 and doc["transactions"] == 2000 * sessions
    assert doc["bytes_written"] == writes * block_bytes
    assert doc["wastage_bytes"] == writes * (block_bytes - 16 * (block_bytes // blocksize) - sessions * redo)


def test_a_race_is_won_by_the_faster_member_and_a_mirror_waits_for_the_slower(redo_writer):
    race = _json(redo_writer, "--target", "model:write=fixed:1000", "--race", "model:write=fixed:300",
                 "--duration", "1")
    disk, flash = race["members"]
    assert flash["wins"] == race["writes"] == race["transactions"] and disk["wins"] == 0
    assert _latencies(race, "log_file_sync")[1:] == (300.0, 300.0)
    assert disk["writes"] < flash["writes"]  # the disk, behind, writes what it is behind in one write
    mirror = _json(redo_writer, "--target", "model:write=fixed:1000", "--mirror", "model:write=fixed:300",
                   "--duration", "1")
    assert (mirror["transactions"], mirror["writes"]) == (1000, 1000)
    assert _latencies(mirror, "log_file_sync")[1:] == (1000.0, 1000.0)
    assert [m["writes"] for m in mirror["members"]] == [1000, 1000]


def test_modelled_cpu_is_time_and_counts_as_the_sessions_cpu(redo_writer):
    """500 us of CPU a transaction and a 500 us write: one commit a millisecond, and the sessions'
    CPU is what the run modelled, not what this host burned."""
    doc = _json(redo_writer, "--target", "model:write=fixed:500", "--cpu-us-per-txn", "500", "--duration", "1")
    assert (doc["transactions"], doc["writes"]) == (1000, 1000)
    assert doc["cpu_measured"]["sessions_us_per_txn"] == 500.0


def test_fdatasync_is_a_write_then_a_flush_each_with_its_own_time(redo_writer):
    doc = _json(redo_writer, "--target", "model:write=fixed:300;flush=fixed:200", "--sync", "fdatasync",
                "--duration", "1")
    assert _latencies(doc, "log_file_parallel_write") == (2000, 500.0, 500.0)
    (member,) = doc["members"]
    assert member["flushes"] == member["syncs"] == 2000 and member["fua_writes"] == 0


def test_open_loop_arrivals_are_counted_on_the_schedule_and_a_slow_log_falls_behind(redo_writer):
    """Evenly spaced arrivals: 500 a second on a 1 ms log keep up, each commit's response its write;
    2,000 a second on one session do not: the log serves 1,000 and the rest wait."""
    kept = _json(redo_writer, "--target", "model:write=fixed:1000", "--sessions", "2", "--rate", "500",
                 "--arrival", "fixed", "--duration", "2")
    assert (kept["arrivals"], kept["transactions"], kept["kept_up"]) == (1000, 1000, True)
    assert _latencies(kept, "commit_response")[1:] == (1000.0, 1000.0)
    behind = _json(redo_writer, "--target", "model:write=fixed:1000", "--rate", "2000", "--arrival", "fixed",
                   "--duration", "1")
    assert (behind["arrivals"], behind["transactions"], behind["kept_up"]) == (2000, 1000, False)
    assert behind["backlog_end"] == 1000


def test_a_wake_up_is_paid_twice_a_commit_the_log_writers_and_the_sessions(redo_writer):
    """--wakeup-us 40: the log writer runs 40 us after a commit posts it, the session 40 us after its
    write: a commit's log file sync is the 1 ms write and two wake-ups, 1,080 us; 926 of them in 1 s."""
    doc = _json(redo_writer, "--target", "model:write=fixed:1000", "--wakeup-us", "40", "--duration", "1")
    assert _latencies(doc, "log_file_sync") == (926, 1080.0, 1080.0)
    assert _latencies(doc, "log_file_parallel_write")[1:] == (1000.0, 1000.0)


def test_exponential_wake_ups_keep_their_mean_and_break_the_lockstep(redo_writer):
    """20 sessions with no CPU on a 20 us write: woken together after a fixed 10 us they commit
    together, a write of 20 and a log file sync of 40 us (a write and two wake-ups); drawn from an
    exponential of 10 us (from --seed) they commit apart, and the record says which."""
    args = ["--target", "model:write=fixed:20", "--sessions", "20", "--wakeup-us", "10", "--duration", "1"]
    fixed = _json(redo_writer, *args)
    drawn = _json(redo_writer, *args, "--wakeup-dist", "exponential", "--seed", "5")
    assert fixed["virtual"] | {"switches": 0} == {"wakeup_us": 10, "wakeup_dist": "fixed", "cpus": 0,
                                                  "log_writer_cpu_us": 0, "switches": 0}
    assert fixed["commits_per_write"] == 20.0 and fixed["log_file_sync"]["mean_us"] == 40.0
    assert drawn["virtual"]["wakeup_dist"] == "exponential" and drawn["commits_per_write"] < 15
    assert drawn == _json(redo_writer, *args, "--wakeup-dist", "exponential", "--seed", "5") | {
        "real_s": drawn["real_s"]}


def test_the_log_writers_modelled_cpu_comes_before_its_write(redo_writer):
    """200 us of the log writer's CPU before each 1 ms write: a commit waits 1,200 us, the write
    itself still 1,000 (its time starts when it is issued), and the report counts the CPU."""
    doc = _json(redo_writer, "--target", "model:write=fixed:1000", "--log-writer-cpu-us", "200", "--duration", "1")
    assert doc["transactions"] == 834 and _latencies(doc, "log_file_sync")[1:] == (1200.0, 1200.0)
    assert _latencies(doc, "log_file_parallel_write")[1:] == (1000.0, 1000.0)
    assert doc["cpu_measured"]["log_writer_us_per_write"] == 200.0 and doc["virtual"]["log_writer_cpu_us"] == 200


def test_the_modelled_hosts_cores_queue_the_sessions_cpu(redo_writer):
    """Four sessions of 1 ms of CPU and a 100 us write: with a core each they keep in step, one write of
    four commits every 1.1 ms (910 writes, the last begun inside the second); on two cores the cores
    are the bottleneck, 2,000/s, and each commit's response holds its wait for a core."""
    args = ["--target", "model:write=fixed:100", "--sessions", "4", "--cpu-us-per-txn", "1000", "--duration", "1"]
    each = _json(redo_writer, *args)
    two = _json(redo_writer, *args, "--cpus", "2")
    assert (each["transactions"], each["writes"]) == (3640, 910)
    assert _latencies(each, "commit_response")[1] == 1100.0
    assert two["transactions"] == 2002 and _latencies(two, "commit_response")[1] == 2000.0
    assert each["cpu_measured"]["sessions_us_per_txn"] == two["cpu_measured"]["sessions_us_per_txn"] == 1000.0


def test_exponential_cpu_keeps_its_mean_and_breaks_the_sessions_lockstep(redo_writer):
    """Fixed CPU puts 16 sessions in step: each write carries all 16. Drawn from an exponential of the
    same mean (each session's own draws, from --seed), they commit apart: fewer commits a write, the
    mean CPU the same within 3 % over 10,000 transactions, and the same draws from the same seed."""
    args = ["--target", "model:write=fixed:200", "--sessions", "16", "--cpu-us-per-txn", "1000", "--transactions",
            "10000"]
    fixed = _json(redo_writer, *args)
    drawn = _json(redo_writer, *args, "--cpu-dist", "exponential", "--seed", "3")
    assert fixed["cpu_dist"] == "fixed" and fixed["commits_per_write"] == 16.0
    assert drawn["cpu_dist"] == "exponential" and drawn["commits_per_write"] < 8
    assert drawn["cpu_measured"]["sessions_us_per_txn"] == pytest.approx(1000, rel=0.03)
    again = _json(redo_writer, *args, "--cpu-dist", "exponential", "--seed", "3")
    other = _json(redo_writer, *args, "--cpu-dist", "exponential", "--seed", "4")
    assert again["writes"] == drawn["writes"] and other["writes"] != drawn["writes"]


def test_the_same_run_twice_is_the_same_run(redo_writer):
    """A lognormal model with a seed, 16 sessions on two channels: every figure the same, to the
    last digit, in both runs (only the host's own seconds may differ); another model seed, others."""
    args = ["--target", "model:write=lognormal:80,400;channels=2;seed=7", "--sessions", "16",
            "--cpu-us-per-txn", "100", "--duration", "2"]
    a, b = _json(redo_writer, *args), _json(redo_writer, *args)
    for doc in (a, b):
        doc.pop("real_s")
    assert a == b and a["transactions"] > 10_000
    other = _json(redo_writer, *[x.replace("seed=7", "seed=8") for x in args])
    assert other["transactions"] != a["transactions"]


def test_a_models_files_are_the_filters_own_and_verify_reads_its_disk(redo_writer, tmp_path):
    """trace=, image= and writelog= as the filter writes them: the trace's header and a line a write
    (its virtual arrival, the model's times), the disk with the checked redo on it (made as large as
    the log), and the write log's records; redo-writer verify recovers the log to its last write."""
    import struct

    from sectorlab.devices import trace
    files = {k: tmp_path / f"m.{k}" for k in ("trace", "image", "writelog")}
    model = "model:write=fixed:100;physical-sector=4096;write-mbps=140;" + ";".join(
        f"{k}={p}" for k, p in files.items())
    doc = _json(redo_writer, "--format", "checked", "--target", model, "--log-size", "1048576", "--sessions", "2",
                "--arrival", "poisson", "--rate", "200", "--seed", "3", "--duration", "1")
    requests = trace.read(files["trace"])
    assert len(requests) == doc["writes"] > 100 and {r.op for r in requests} == {"write"}
    assert all(r.fua and r.service_us >= 100 and r.durable_us >= r.media_us > 0 for r in requests)
    assert any(r.rmw_reads for r in requests)  # a write of part of a 4 KiB sector reads it first
    assert requests[0].t_us > 0 and [r.t_us for r in requests] == sorted(r.t_us for r in requests)
    assert files["image"].stat().st_size == 1048576
    log = files["writelog"].read_bytes()
    assert log.startswith(b"sectorlab-writelog 1\n")
    first = struct.unpack("<3Q", log[21:45])
    assert first == (round(requests[0].t_us * 1000), 0, requests[0].length | 1 << 32)
    verify = subprocess.run([redo_writer, "verify", "--target", str(files["image"]), "--blocksize", "512",
                             "--log-size", "1048576", "--output", "json"], capture_output=True, text=True, timeout=60)
    assert verify.returncode == 0, verify.stderr
    assert json.loads(verify.stdout)["recovered_to"] == doc["redo_bytes"]


def test_a_text_report_says_it_ran_in_virtual_time(redo_writer):
    out = _run(redo_writer, "--target", "model:write=fixed:1000", "--duration", "1").stdout
    assert "model writes with FUA" in out.splitlines()[0]
    assert out.splitlines()[2].startswith("virtual time: 1.000 s of the model's time in ")


def test_a_model_that_fails_stops_the_run_in_one_line_naming_it(redo_writer):
    proc = _run(redo_writer, "--target", "model:write=fixed:100;fail-after-writes=5", "--duration", "1",
                check=False)
    assert proc.returncode == 1, proc.stderr
    assert "log write 5): the model's write: Input/output error" in proc.stderr.splitlines()[0], proc.stderr


@pytest.mark.parametrize("args, says", [
    (["--target", "model:bogus=1"], "--target model:bogus=1: unknown key 'bogus': expected the device model's keys"),
    (["--target", "model:write=fixed:-1"], "--target model:write=fixed:-1: write=fixed:-1: "),
    (["--target", "model:write"], "--target model:write: 'write': expected KEY=VALUE"),
    (["--target", "model:write=fixed:1;;read=fixed:1"], "an empty KEY=VALUE: expected model:KEY=VALUE;KEY=VALUE"),
    (["--target", "model:write=fixed:1", "--mirror", "{tmp}/log"],
     "--mirror {tmp}/log: a run with a model: member is in virtual time: every member is then a model: or null:"),
    (["--target", "model:write=fixed:1", "--spin-us", "10"], "--spin-us polls the host's clock"),
    (["--target", "model:", "--duration", "1"], "virtual clock: no time passes"),
    (["--target", "{tmp}/log", "--wakeup-us", "10"], "--wakeup-us is the modelled host's, in virtual time"),
    (["--target", "null:", "--cpus", "2"], "--cpus is the modelled host's, in virtual time"),
    (["--target", "null:", "--log-writer-cpu-us", "5"], "--log-writer-cpu-us is the modelled host's"),
    (["--target", "model:write=fixed:1;trace={tmp}/a;image={tmp}/a"],
     "image={tmp}/a is the same file as its trace={tmp}/a: each of a model's files is a file of its own"),
    (["--target", "model:write=fixed:1;trace={tmp}/a;trace={tmp}/b"], "trace= is given twice"),
])
def test_bad_model_input_is_one_line_and_nothing_is_written(redo_writer, tmp_path, args, says):
    args = [a.format(tmp=tmp_path) for a in args]
    proc = _run(redo_writer, *args, check=False)
    lines = proc.stderr.splitlines()
    assert proc.returncode in (1, 2) and len(lines) == 1, proc.stderr
    assert lines[0].startswith("redo-writer: ") and says.format(tmp=tmp_path) in lines[0], proc.stderr
    assert list(tmp_path.iterdir()) == []
