"""The device model served for real, on this host: nbdkit's memory plugin under the project's
filter on a Unix socket, driven by qemu-io (QEMU's own NBD client, as a lab's QEMU would be), and
judged from the filter's trace of every request: each service time the model decided within its
specification, p50 within 5 % or 20 us and p99 within 10 %;
the cache, read-modify-write, flash-unit and fault behaviours counted per request. The served
times are held only to what no host can change (no reply before the model's time): a busy core
delays the wake-ups, and how late they are on a quiet host is make bench-timing's
(labtests/bench/test_model_timing.py)."""

from __future__ import annotations

import shutil
import subprocess
import time

import numpy as np
import pytest

from sectorlab.devices import profiles, trace
from sectorlab.devices.server import DeviceServer
from sectorlab.errors import SectorlabError

pytestmark = pytest.mark.devicemodel

MIB = 1 << 20


@pytest.fixture()
def served(tmp_path):
    """Start a modelled disk, run qemu-io commands against it, stop it, return its trace."""
    if shutil.which("nbdkit") is None or shutil.which("qemu-io") is None:
        pytest.fail("nbdkit or qemu-io missing: run scripts/bootstrap")
    started: list[DeviceServer] = []

    def run(params: dict, commands: list[str], cache: str = "writeback", size: int = 64 * MIB):
        disk = DeviceServer(tmp_path / f"d{len(started)}", size=size, params=params)
        disk.start()
        started.append(disk)
        args = ["qemu-io", "-t", cache, "-f", "raw"]
        for c in commands:
            args += ["-c", c]
        out = subprocess.run([*args, disk.uri()], capture_output=True, text=True, timeout=300)
        assert disk.stop(), f"the model daemon of {disk.directory} was not running at the end"
        return trace.read(disk.trace), out

    yield run
    for disk in started:
        disk.stop()


def _within(measured: float, want: float, rel: float, abs_us: float = 0.0) -> bool:
    return abs(measured - want) <= max(rel * want, abs_us)


# A sleep on this host ends late by the scheduler's wake-up and, in a virtual machine, by the
# hypervisor: the filter ends each sleep early by a calibrated margin (plus 2 % of a long wait) and
# spins the rest on the clock at a real-time priority, which on a quiet host puts the served times
# within 0.1 us of the model's at the median. How late they are is the host's: on a busy one a
# reply wakes tens to hundreds of microseconds late. So these tests hold the model's own times (the
# trace's service_us and queue_us, which the model decides) to the specification, and of the served
# times only what no host can change: no reply comes before the model's time. How late the replies
# are on a quiet host is the benchmark's (labtests/bench/test_model_timing.py, the same requests,
# make bench-timing); docs/device-models.md gives the tail as measured.
OVERSHOOT_P50_US = 20


def lateness(rows) -> np.ndarray:
    """Served minus modelled of each request: how late the host let the reply go."""
    return np.array([r.served_us - r.answer_service_us for r in rows])  # a cell's flash log may answer first


def _replayed(params: dict, rows) -> list:
    """The same requests at the same arrivals through the model in virtual time (devicemodel/
    simulate): what the model decides for them, whatever the host's pace was."""
    rows = sorted(rows, key=lambda r: r.t_us)  # the trace has them as they completed
    t0 = rows[0].t_us
    requests = "".join(f"{r.t_us - t0:.3f} {r.op} {r.offset} {r.length}{' fua' if r.fua else ''}\n" for r in rows)
    proc = profiles.simulate(params, requests)
    assert proc.returncode == 0, proc.stderr
    return trace.parse(proc.stdout)


def _served_as_modelled(rows) -> str | None:
    """Why the served times do not follow the modelled ones (a reply before the model's time), or
    None."""
    late = lateness(rows)
    if late.min() < -1:
        return (f"served minus modelled: min {late.min():.1f} us (a reply before its time), p50 "
                f"{np.percentile(late, 50):.1f} us")
    return None


DISTRIBUTIONS = [  # (the distribution, its p50 and p99)
    ("fixed:200", 200, 200),
    ("lognormal:100,400", 100, 400),
    ("normal:1000,100", 1000, 1000 + 2.326 * 100),
    ("pct:50=60,99=250,100=500", 60, 250),
]


def served_distribution(served, dist: str, n: int = 600):
    """n QD1 4 KiB writes served by a model whose writes take `dist`: the trace's writes, qemu-io's end."""
    rows, out = served({"write": dist, "seed": "5"}, [f"write {i * 4096} 4k" for i in range(n)])
    return [r for r in rows if r.op == "write"], out


def served_profile(served, name: str, n: int = 300):
    """n QD1 4 KiB writes (as the log writer issues them) through catalog profile `name`."""
    params = {**profiles.get(name).params, "seed": "9"}
    rows, out = served(params, [f"write {i * 4096} 4k" for i in range(n)])
    return params, [r for r in rows if r.op == "write"], out


@pytest.mark.parametrize(("dist", "p50", "p99"), DISTRIBUTIONS)
def test_served_write_times_match_their_distribution(served, dist, p50, p99):
    n = 600
    rows, out = served_distribution(served, dist, n)
    assert out.returncode == 0, out.stderr
    assert len(rows) == n
    modelled = np.array([r.service_us for r in rows])
    got50, got99 = np.percentile(modelled, 50), np.percentile(modelled, 99)
    assert _within(got50, p50, 0.05, 20), f"{dist}: p50 {got50:.1f} us, want {p50} (5 % or 20 us)"
    assert _within(got99, p99, 0.10, 20), f"{dist}: p99 {got99:.1f} us, want {p99:.0f} (10 %)"
    assert _served_as_modelled(rows) is None, f"{dist}: {_served_as_modelled(rows)}"


def test_read_modify_write_on_512e_reads_each_partly_written_sector(served):
    commands = ["write 0 512", "write 4096 4k", "write 7680 1k", "write 16384 8k", "write 512 7k"]
    rows, out = served({"write": "fixed:100", "read": "fixed:300", "physical-sector": "4096"}, commands)
    assert out.returncode == 0, out.stderr
    writes = [r for r in rows if r.op == "write"]
    assert [r.rmw_reads for r in writes] == [1, 0, 2, 0, 2]
    assert [r.service_us for r in writes] == [100 + 300 * r.rmw_reads for r in writes]
    assert all(r.served_us >= r.service_us - 1 for r in writes), writes


def test_a_16k_flash_unit_reads_what_a_4k_write_leaves(served):
    rows, out = served({"write": "fixed:50", "read": "fixed:80", "write-unit": "16k"},
                       ["write 0 16k", "write 16k 4k", "write 36k 8k"])
    assert out.returncode == 0, out.stderr
    assert [r.unit_reads for r in rows if r.op == "write"] == [0, 1, 1]


def test_a_protected_cache_answers_writes_and_flushes_and_a_volatile_flush_waits_for_destage(served):
    # a byte per microsecond: 512 KiB take 0.52 s to destage
    mbps = 1.0
    cache = {"write": "fixed:2000", "cache-size": "1M", "cache-destage-mbps": str(mbps), "cache-hit": "fixed:30"}
    commands = [f"write {i * 4}k 4k" for i in range(128)] + ["flush"]
    plp, out1 = served({**cache, "cache-plp": "true"}, commands)
    volatile, out2 = served({**cache, "cache-plp": "false"}, commands)
    assert out1.returncode == 0 and out2.returncode == 0, (out1.stderr, out2.stderr)
    for rows in (plp, volatile):
        writes = [r for r in rows if r.op == "write"]
        assert [r.cached for r in writes] == [1] * 128
        hits = np.array([r.service_us for r in writes])
        assert _within(np.percentile(hits, 50), 30, 0.05, 20), hits
        assert _served_as_modelled(writes) is None, _served_as_modelled(writes)
    plp_flush = next(r for r in plp if r.op == "flush")
    # the protected cache answers the flush at once: no queue, nothing to destage
    assert (plp_flush.cached, plp_flush.queue_us) == (1, 0) and plp_flush.service_us < 20, plp_flush
    assert plp_flush.served_us >= plp_flush.service_us - 1
    # Behind the volatile cache the flush waits for what is still dirty when it arrives. How much is
    # still dirty depends on when the writes came (this host's pace: 13-17 ms for the 129 requests
    # quiet, 549 ms once beside make test's three lanes): served, the model's decision is held to the
    # same requests at the same arrivals replayed in virtual time, and its wait to at most all of it.
    flush = next(r for r in volatile if r.op == "flush")
    said = f"the flush waited {flush.queue_us:.0f} us; at most {128 * 4096 / mbps:.0f}"
    assert 0 <= flush.queue_us <= 128 * 4096 / mbps + 20, said
    replayed = _replayed({**cache, "cache-plp": "false"}, volatile)
    arrived = sorted(volatile, key=lambda r: r.t_us)
    assert [r.queue_us for r in replayed] == pytest.approx([r.queue_us for r in arrived], abs=0.002), said
    assert flush.served_us >= flush.service_us - 1
    # What it waits for, at arrivals of a known pace (virtual time: a write every 100 us): every byte
    # written less what drained since the first write arrived (within a cache hit's 30 us)
    paced = "".join(f"{i * 100} write {i * 4096} 4096\n" for i in range(128)) + "12800 flush 0 0\n"
    done = profiles.simulate({**cache, "cache-plp": "false"}, paced)
    assert done.returncode == 0, done.stderr
    wait = next(r for r in trace.parse(done.stdout) if r.op == "flush").queue_us
    least = (128 * 4096 - mbps * 12800) / mbps
    assert abs(wait - least) <= 50, f"the flush waited {wait:.0f} us; what was still dirty takes {least:.0f}"


def test_a_member_fails_from_its_nth_write_and_the_client_sees_eio(served):
    rows, out = served({"write": "fixed:50", "fail-after-writes": "4"}, [f"write {i}k 1k" for i in range(6)])
    assert [r.error for r in rows if r.op == "write"] == [0, 0, 0, 5, 5, 5]
    assert out.stderr.count("write failed: Input/output error") + out.stdout.count(
        "write failed: Input/output error") == 3


def test_a_member_fails_at_the_moment_it_is_told_and_heals(tmp_path):
    """SIGUSR1 (DeviceServer.fail) and the daemon's writes fail with EIO from then on, reads still
    work; SIGUSR2 (heal) and the writes work again: a log member's fault at a chosen moment."""
    disk = DeviceServer(tmp_path / "f", size=MIB, params={"write": "fixed:10"})
    disk.start()

    def io(command: str) -> str:
        out = subprocess.run(["qemu-io", "-f", "raw", "-c", command, disk.uri()], capture_output=True, text=True,
                             timeout=60)
        return out.stdout + out.stderr
    try:
        assert "wrote 4096/4096" in io("write 0 4k")
        disk.fail()
        assert "write failed: Input/output error" in io("write 4k 4k")
        assert "read 4096/4096" in io("read 0 4k")
        disk.heal()
        assert "wrote 4096/4096" in io("write 8k 4k")
    finally:
        disk.stop()
    writes = [(r.offset, r.error) for r in trace.read(disk.trace) if r.op == "write"]
    assert writes == [(0, 0), (4096, 5), (8192, 0)], writes


# Long enough that qemu-io's third write, submitted with the other two, reaches the model while both
# channels are busy: with 5 ms it came 5.13 ms after the first, at make test's start with two lanes'
# guests booting beside it. Whether it did is measured, not assumed: when the host kept it back past
# a free channel, the same writes again at four times the service, up to 3.2 s.
TWO_CHANNEL_SERVICE_US = (50_000, 200_000, 800_000, 3_200_000)


def test_two_channels_serve_concurrent_writes_side_by_side_and_a_third_queues(served):
    commands = ["aio_write 0 4k", "aio_write 64k 4k", "aio_write 128k 4k", "aio_flush"]
    arrivals = []
    for service_us in TWO_CHANNEL_SERVICE_US:
        rows, out = served({"write": f"fixed:{service_us}", "channels": "2"}, commands)
        assert out.returncode == 0, out.stderr
        writes = sorted((r for r in rows if r.op == "write"), key=lambda r: r.t_us)
        assert sorted(r.channel for r in writes[:2]) == [0, 1]
        free_at = min(r.t_us + r.queue_us + r.service_us for r in writes[:2])
        arrivals.append(f"{writes[2].t_us - writes[0].t_us:.0f} us after the first at {service_us} us a write")
        if writes[2].t_us < free_at:
            break
    else:
        pytest.fail(f"the third write came after a channel was free every time ({'; '.join(arrivals)}): "
                    "this host held qemu-io's writes apart by seconds")
    assert writes[2].queue_us == pytest.approx(free_at - writes[2].t_us, abs=0.01)  # it waited for that channel
    assert writes[2].service_us == pytest.approx(service_us, abs=0.01)
    assert writes[2].served_us >= service_us - 1


def test_a_bad_profile_does_not_start_and_says_why_in_one_line(tmp_path):
    disk = DeviceServer(tmp_path, size=MIB, params={"write": "fixed:-1"})
    with pytest.raises(Exception, match=r"did not start: .*write=fixed:-1: times are not negative"):
        disk.start()
    assert disk.pid() is None


@pytest.mark.parametrize("name", sorted(profiles.profiles()))
def test_each_catalog_profile_is_served_as_it_specifies(served, name):
    """QD1 4 KiB writes (as the log writer issues them) through each catalog profile: the model's
    times for them against the same profile's in virtual time (devicemodel/simulate, same seed, same
    requests), p50 within 5 % or 20 us and p99 within 10 %; and served as modelled."""
    n = 300
    params, rows, out = served_profile(served, name, n)
    assert out.returncode == 0, out.stderr
    assert _served_as_modelled(rows) is None, f"{name}: {_served_as_modelled(rows)}"
    modelled = np.array([r.service_us for r in rows])
    want = np.array(profiles.specified_writes(params, n))
    for q, rel in ((50, 0.05), (99, 0.10)):
        got, expected = np.percentile(modelled, q), np.percentile(want, q)
        assert _within(got, expected, rel, 20), f"{name}: p{q} {got:.1f} us, specified {expected:.1f} us"


def test_the_daemon_runs_in_a_session_of_its_own_and_stops_by_its_identity(tmp_path):
    """A Ctrl-C or hang-up of the command that started it does not reach it; stop() ends that very
    process, and a pid file naming another process is not taken for it."""
    import os
    disk = DeviceServer(tmp_path, size=MIB, params={})
    disk.start()
    pid = disk.pid()
    try:
        assert pid is not None and os.getsid(pid) != os.getsid(0)
    finally:
        assert disk.stop()
    assert disk.pid() is None and not disk.identity_file.exists()
    disk.identity_file.write_text(f"{os.getpid()} 1\n")   # this test's pid with another start time
    assert disk.pid() is None and disk.stop() is False


def test_a_medium_error_fails_reads_and_partial_writes_until_a_whole_write_rewrites_it(tmp_path):
    """The model's `unreadable=` file (a power cut's unreadable sectors, crash/lab.py), written while
    the model runs: a read that touches the range fails with EIO, as does a write into part of it
    (the drive would read it first); a write of the whole range rewrites it, and it reads again."""
    disk = DeviceServer(tmp_path / "d", size=MIB, params={})
    disk.start()
    try:
        def io(command: str) -> str:
            out = subprocess.run(["qemu-io", "-f", "raw", "-c", command, disk.uri()], capture_output=True,
                                 text=True, timeout=60)
            return out.stdout + out.stderr
        eio = "failed: Input/output error"
        assert eio not in io("read 0 8k")
        disk.unreadable.write_text("4096 4096\n")
        time.sleep(0.1)  # the model looks at the file again at most every 50 ms
        io("read 0 512")  # a request after the file changed, so that it is read
        assert eio in io("read 4096 512") and eio in io("read 0 8k")
        assert eio not in io("read 0 4096")  # beside it, all is well
        assert eio in io("write 4096 512")  # part of it: read first
        assert eio not in io("write 4096 4096")  # all of it: rewritten
        assert eio not in io("read 0 8k")
    finally:
        disk.stop()
    rows = trace.read(disk.trace)
    assert [r.error for r in rows if r.op == "read" and r.offset == 4096 and r.length == 512] == [5]


def test_the_floor_switch_answers_every_request_at_its_time_and_leaves_the_model_as_it_was(tmp_path):
    """The model's `floor=` file (DeviceServer.answer_as_floor, the probe's floor on the disk it
    probes): while it holds a time, every request is answered that long after its arrival and the
    model sees none of it (a 512-byte write on a 512e model reads no sector, its service is the
    floor's); its data still lands; taken away, the model answers again, from the next request on.
    A file that holds no time fails every request with EIO, one line in the log, until it is good."""
    disk = DeviceServer(tmp_path / "d", size=MIB, params={"write": "fixed:700", "read": "fixed:300",
                                                          "flush": "fixed:50", "physical-sector": "4096"},
                          floor_switchable=True)
    disk.start()
    try:
        def io(*commands: str) -> str:
            out = subprocess.run(["qemu-io", "-f", "raw", *(x for c in commands for x in ("-c", c)), disk.uri()],
                                 capture_output=True, text=True, timeout=60)
            return out.stdout + out.stderr
        eio = "failed: Input/output error"
        assert eio not in io("write -P 0x11 0 512")                        # the model: reads its sector first
        disk.answer_as_floor(150)
        assert eio not in io("write -P 0x22 8192 512", "read 0 4k", "flush")   # the floor
        disk.answer_as_floor(2000)
        assert eio not in io("write -P 0x33 16384 512")                    # another floor
        disk.answer_as_floor(None)
        assert eio not in io("write -P 0x44 24576 512")                    # the model again
        assert "pattern verification failed" not in io("read -P 0x22 8192 512", "read -P 0x33 16384 512")
        disk.floor_switch.write_text("fast\n")
        assert eio in io("read 0 512")
        disk.floor_switch.unlink()
        assert eio not in io("read 0 512")
    finally:
        disk.stop()
    rows = trace.read(disk.trace)
    got = [(r.offset, r.rmw_reads, r.service_us, r.error) for r in rows if r.op == "write"]
    assert got == [(0, 1, 1000.0, 0), (8192, 0, 150.0, 0), (16384, 0, 2000.0, 0), (24576, 1, 1000.0, 0)], got
    # each qemu-io flushes as it closes: the model's 50 us, the floor's time while it is on
    flushes = [r.service_us for r in rows if r.op == "flush"]
    assert flushes[:5] == [50.0, 150.0, 150.0, 2000.0, 50.0], flushes
    assert [r.served_us >= r.service_us - 1 for r in rows if r.op == "write"] == [True] * 4
    reads = [(r.offset, r.service_us, r.error) for r in rows if r.op == "read" and r.offset == 0]
    assert reads[0][1] == 150.0 and reads[-2:] == [(0, 0.0, 5), (0, 300.0, 0)], reads
    assert disk.log.read_text().count('holds "fast": expected one time in microseconds') == 1, disk.log.read_text()
    # a model started without the switch (the device path's) is told so, not left to ignore the file
    with pytest.raises(SectorlabError, match="without a floor switch"):
        DeviceServer(tmp_path / "e", size=MIB).answer_as_floor(100)
    # nor one whose running process was started without it, though its directory is asked with it now
    other = DeviceServer(tmp_path / "g", size=MIB)
    other.start()
    try:
        with pytest.raises(SectorlabError, match="without a floor switch"):
            DeviceServer(tmp_path / "g", size=MIB, floor_switchable=True).answer_as_floor(100)
    finally:
        other.stop()


def test_a_write_log_rebuilds_the_disk_as_it_was_after_any_write(tmp_path):
    """The model's write log (crash states of a disk whose bytes are overwritten, crash/writelog.py):
    writes over each other, a zero among them; the disk built from the log with every write landed
    is the model's own final disk byte for byte, and the one built for a cut between two writes is
    the disk after the writes before it and none after (each laid over the last in arrival order)."""
    from sectorlab.crash import powerloss, writelog
    disk = DeviceServer(tmp_path / "d", size=MIB, params={}, write_log=True)
    steps = [("write -P 1 0 64k", 0, 65536, 1), ("write -P 2 4096 8k", 4096, 8192, 2),
             ("write -z 8192 4k", 8192, 4096, 0), ("write -P 3 512 512", 512, 512, 3), ("flush", 0, 0, None)]
    disk.start()
    try:
        for command, *_ in steps:  # one qemu-io each: each request is answered before the next arrives
            out = subprocess.run(["qemu-io", "-f", "raw", "-c", command, disk.uri()], capture_output=True, text=True,
                                 timeout=60)
            assert out.returncode == 0 and "error" not in out.stdout + out.stderr, out
        final = tmp_path / "final.img"
        subprocess.run(["qemu-img", "convert", "-f", "raw", "-O", "raw", disk.uri(), str(final)], check=True,
                       timeout=60)
    finally:
        disk.stop()
    requests = trace.read(disk.trace)
    writes = sorted((r for r in requests if r.op in ("write", "zero")), key=lambda r: r.t_us)
    assert [(r.offset, r.length) for r in writes] == [(o, n) for _, o, n, p in steps if p is not None]
    rules = powerloss.Rules("test", "protected", "none", False, 512)
    import random
    for k in range(len(writes) + 1):  # after the k-th write's reply, before the next one arrives
        at = writes[k - 1].t_us + writes[k - 1].answer_us + 1 if k else writes[0].t_us - 1
        state = powerloss.cut(requests, rules, at, random.Random(1))
        built = tmp_path / f"cut{k}.img"
        writelog.build(disk.writelog, requests, state, MIB, built)
        want = bytearray(MIB)
        for _, offset, length, pattern in [s for s in steps if s[3] is not None][:k]:
            want[offset:offset + length] = bytes([pattern]) * length
        assert built.read_bytes() == bytes(want), f"the disk after {k} writes"
    assert (tmp_path / f"cut{len(writes)}.img").read_bytes() == final.read_bytes()
