"""redo-writer's device path: the same run written straight to an NBD server's Unix socket on this host
(nbdkit, under the project's device model filter or plain), with no guest and no VM.

Each test starts at most one nbdkit, on a socket in its own temporary directory, and stops it by its
recorded pid and start time at the end (sectorlab/devices/server.py). Checks what the run wrote
against the model's trace of every request (one FUA write per log write, or a write and a flush), the
JSON report's NBD member (no /sys/block counters, what the server offered), a member that fails
mid-run, and that every bad target is one line and exit 2. Skips with the reason when nbdkit or a C
compiler is missing, or when libnbd-dev was not installed at the build (scripts/bootstrap installs
all three).
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
from dataclasses import dataclass

import pytest

from labtests.conftest import require_program
from labtests.unit.native.test_redo_writer import run, run_json
from sectorlab.devices import build, trace
from sectorlab.devices.server import DeviceServer
from sectorlab.paths import REPO

SRC = REPO / "redo-writer"
MIB = 1 << 20
LOG_SIZE = 16 * MIB   # smaller than the 64 MiB exports: 4 KiB writes wrap at 4,096


@dataclass
class PlainServer(DeviceServer):
    """nbdkit with these arguments (filters, plugin, parameters) and no device model: what a server
    may offer that the model does not (no FUA, read-only, a small export, block size constraints)."""
    args: tuple[str, ...] = ()

    def command(self) -> list[str]:
        return [require_program("nbdkit"), "--unix", str(self.socket), "--pidfile", str(self.pidfile), "--log=stderr",
                *self.args]


@pytest.fixture(scope="module")
def binaries():
    require_program("cc")
    return str(build.built(build.REDO_WRITER)), str(build.built(build.REDO_WRITER_STATIC))


@pytest.fixture(scope="module")
def redo_writer(binaries):
    """The host's redo-writer, built with NBD support; a skip naming the reason when it is not."""
    probe = run(binaries[0], "--target", "nbd+unix:///?socket=/nonexistent/disk.sock")
    if "without NBD support" in probe.stderr:
        pytest.skip("redo-writer is built without NBD support: libnbd-dev is not installed (scripts/bootstrap "
                    "installs it)")
    return binaries[0]


@pytest.fixture
def serve(tmp_path):
    """start(params) serves a 64 MiB disk through the device model with these parameters ({}: the
    floor); start(plain=[...]) runs nbdkit with those arguments instead. One server at a time: a new
    one stops the last; every one is stopped at the end."""
    require_program("nbdkit")
    started: list[DeviceServer] = []

    def start(params: dict | None = None, plain: list[str] | None = None) -> DeviceServer:
        for s in started:
            s.stop()
        directory = tmp_path / f"s{len(started)}"
        s = (PlainServer(directory, size=64 * MIB, args=tuple(plain)) if plain is not None
             else DeviceServer(directory, size=64 * MIB, params=params or {}))
        started.append(s)
        s.start()
        return s

    yield start
    for s in started:
        s.stop()


def one_line(result, says: str) -> None:
    assert result.returncode == 2, result
    assert result.stdout == "" and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("redo-writer: ") and says in result.stderr, result.stderr


REDO_4K = ("--blocksize", 4096, "--redo-per-txn", 4080, "--log-size", LOG_SIZE)


def test_the_floor_model_gets_each_log_write_as_one_fua_write(redo_writer, serve):
    """One session, 4 KiB redo blocks, 500 commits: every log write is one NBD write with FUA (the server
    takes FUA, as an O_DSYNC write to a device with FUA is sent), at the log's next offset, and the
    report's NBD member says so; it has no /sys/block counters and says why."""
    disk = serve({})
    out = run_json(redo_writer, "--target", disk.uri(), *REDO_4K, "--transactions", 500, "--duration", 10)
    assert disk.stop()
    writes = out["writes"]
    assert writes > 0 and out["transactions"] == writes == out["log_file_parallel_write"]["count"]
    assert out["bytes_written"] == 4096 * writes and out["sync"] == "odsync"
    member = out["members"][0]
    assert member["path"] == out["target"] == disk.uri() and member["writes"] == writes and not member["failed"]
    assert member["transport"] == "nbd" and member["device"] is None and "NBD export" in member["device_note"]
    assert member["nbd"] == {
        "export": "", "size_bytes": 64 * MIB, "can_fua": True, "can_flush": True, "minimum_block": 0,
        "preferred_block": 0, "syncs": writes, "fua_writes": writes, "flushes": 0}
    served = [r for r in trace.read(disk.trace) if r.op != "read"]
    assert [r.op for r in served] == ["write"] * writes, "no flush: the writes carry FUA"
    assert all(r.fua and r.length == 4096 and not r.error for r in served)
    assert [r.offset for r in served] == [i * 4096 % LOG_SIZE for i in range(writes)]
    assert out["wraps"] == (writes - 1) // (LOG_SIZE // 4096)


@pytest.mark.parametrize("reply_spin_us", [0, 1000])
def test_a_modelled_200_us_write_is_at_least_200_us_in_log_file_parallel_write(redo_writer, serve, reply_spin_us):
    """Whether the log writer sleeps in poll() for each reply or polls the socket for it
    (--reply-spin-us), every write is one FUA write the model served in its 200 us, and the log
    writer never sees it complete sooner."""
    disk = serve({"write": "fixed:200"})
    out = run_json(redo_writer, "--target", disk.uri(), *REDO_4K, "--transactions", 100,
                   "--reply-spin-us", reply_spin_us)
    assert disk.stop()
    lat = out["log_file_parallel_write"]
    assert lat["count"] == 100 and lat["p50_us"] >= 200, lat
    writes = [r for r in trace.read(disk.trace) if r.op != "read"]
    assert len(writes) == 100 and all(r.op == "write" and r.fua and r.service_us == 200 for r in writes)


def test_a_server_without_fua_gets_each_write_then_a_flush(redo_writer, serve):
    """O_DSYNC on a device without FUA: the kernel writes, then flushes; so does the device path."""
    disk = serve(plain=["--filter=fua", "memory", f"{64 * MIB}"])  # its default: no FUA offered
    out = run_json(redo_writer, "--target", disk.uri(), *REDO_4K, "--transactions", 50)
    nbd = out["members"][0]["nbd"]
    assert not nbd["can_fua"] and nbd["can_flush"]
    assert nbd["fua_writes"] == 0 and nbd["flushes"] == nbd["syncs"] == out["writes"] == 50


def test_fdatasync_is_a_plain_write_then_a_flush_even_where_fua_is_offered(redo_writer, serve):
    disk = serve({})
    out = run_json(redo_writer, "--target", disk.uri(), *REDO_4K, "--transactions", 50, "--sync", "fdatasync")
    assert disk.stop()
    nbd = out["members"][0]["nbd"]
    assert out["sync"] == "fdatasync" and nbd["can_fua"] and nbd["fua_writes"] == 0 and nbd["flushes"] == 50
    served = [r.op for r in trace.read(disk.trace) if r.op != "read"]
    assert served == ["write", "flush"] * 50
    assert not any(r.fua for r in trace.read(disk.trace))


def test_the_text_report_says_how_the_nbd_writes_were_made_durable(redo_writer, serve):
    disk = serve({})
    result = run(redo_writer, "--target", disk.uri(), *REDO_4K, "--transactions", 20)
    assert result.returncode == 0, result.stderr
    first = result.stdout.splitlines()[0]
    assert first.startswith(f"redo-writer: {disk.uri()}, blocksize 4096, 1 session(s), NBD writes with FUA"), first
    assert f"NBD member {disk.uri()}: export of {64 * MIB} bytes, 20 writes with FUA, 0 flushes" in result.stdout


def test_an_exports_preferred_block_size_is_the_write_unit(redo_writer, serve):
    """The NBD server's preferred block size is what the kernel's minimum_io_size is to a device: a
    4 KiB write inside a 16 KiB unit is under it and covers it in part."""
    disk = serve(plain=["--filter=blocksize-policy", "memory", f"{64 * MIB}", "blocksize-preferred=16384"])
    out = run_json(redo_writer, "--target", disk.uri(), *REDO_4K, "--transactions", 20)
    assert out["members"][0]["nbd"]["preferred_block"] == 16384 == out["write_unit"]
    assert out["writes_under_unit"] == out["partial_units"] == 20


def test_an_nbd_member_mirrors_with_a_file(redo_writer, serve, tmp_path):
    disk = serve({})
    log = tmp_path / "redo.log"
    out = run_json(redo_writer, "--target", disk.uri(), "--mirror", log, *REDO_4K, "--transactions", 50)
    nbd, file = out["members"]
    assert out["members_mode"] == "mirror" and nbd["writes"] == file["writes"] == out["writes"] == 50
    assert nbd["transport"] == "nbd" and "transport" not in file and log.stat().st_size == LOG_SIZE


def test_an_nbd_member_that_fails_mid_run_is_dropped_and_the_run_goes_on(redo_writer, serve, tmp_path):
    """The model's writes fail with EIO from a moment on (SIGUSR1, as the lab's fault tests do): the
    member is reported once, dropped, and the mirror's file takes the rest (exit 3)."""
    disk = serve({})
    log = tmp_path / "redo.log"
    proc = subprocess.Popen([redo_writer, "run", "--target", disk.uri(), "--mirror", str(log), *map(str, REDO_4K),
                             "--duration", "2", "--output", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        time.sleep(0.5)
        disk.fail()
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 3, stderr
    out = json.loads(stdout)
    nbd, file = out["members"]
    assert nbd["failed"] and nbd["error"] == "Input/output error" and not file["failed"]
    assert f"of {disk.uri()} failed (log write {nbd['failed_at_write']}): nbd_pwrite: Input/output error" in stderr
    assert f"member {disk.uri()} dropped; going on with {log}" in stderr
    assert file["writes"] == out["writes"] > nbd["writes"]


# --- bad targets: one line, exit 2, nothing written ---------------------------------------------

REFUSED = [
    ("tcp", "nbd://127.0.0.1:10809", "--target nbd://127.0.0.1:10809 is NBD over TCP: the device path writes only to "
     "an NBD server on this host, through its Unix socket; give nbd+unix:///[EXPORT]?socket=PATH"),
    ("private-address", "nbd://10.0.0.5:10809/disk", "is NBD over TCP"),
    ("tls", "nbds://localhost/disk", "is NBD over TLS"),
    ("tls-unix", "nbds+unix:///?socket={dir}/disk.sock", "is NBD over TLS"),
    ("vsock", "nbd+vsock:///2", "is NBD over vsock"),
    ("host-part", "nbd+unix://localhost/?socket={dir}/disk.sock", "names a host (localhost)"),
    ("no-socket", "nbd+unix:///disk", "names no socket"),
    ("tls-parameter", "nbd+unix:///?socket={dir}/disk.sock&tls=require", "has the query parameter 'tls=require': "
     "expected only socket=PATH"),
    ("bad-escape", "nbd+unix:///?socket={dir}/%zz", "its socket path has a bad %-escape"),
    ("missing", "nbd+unix:///?socket={dir}/none.sock", "socket {dir}/none.sock does not exist: start the NBD server"),
    ("regular-file", "nbd+unix:///?socket={dir}/file", "{dir}/file is a regular file, not a Unix socket"),
    ("nothing-serves", "nbd+unix:///?socket={dir}/dead.sock", "nothing serves socket {dir}/dead.sock (connect: "
     "Connection refused): start the NBD server"),
]


@pytest.mark.parametrize("uri,says", [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_a_bad_nbd_target_is_one_line(redo_writer, tmp_path, uri, says):
    (tmp_path / "file").write_text("not a socket")
    dead = socket.socket(socket.AF_UNIX)   # bound, never listening: connect() is refused
    dead.bind(str(tmp_path / "dead.sock"))
    try:
        one_line(run(redo_writer, "--target", uri.format(dir=tmp_path), "--duration", 1), says.format(dir=tmp_path))
    finally:
        dead.close()


SERVED_REFUSED = [
    ("smaller-than-the-log", ["memory", f"{MIB}"], [], "log size 67108864 is larger than {uri} (1048576 bytes): give "
     "a smaller --log-size or serve a larger export"),
    ("read-only", ["-r", "memory", f"{64 * MIB}"], [], "--target {uri} is read-only (its server offers it so): "
     "serve it writable"),
    ("minimum-block", ["--filter=blocksize-policy", "memory", f"{64 * MIB}", "blocksize-minimum=4096"],
     ["--blocksize", "512"], "takes writes in whole blocks of 4096 bytes (its minimum block size), not of "
     "--blocksize 512"),
    ("same-export-twice", ["memory", f"{64 * MIB}"], ["--mirror", "{uri}"], "--mirror {uri} is the same NBD export "
     "as --target {uri}: a second log member must be another one"),
]


@pytest.mark.parametrize("plain,args,says", [c[1:] for c in SERVED_REFUSED], ids=[c[0] for c in SERVED_REFUSED])
def test_an_export_the_run_cannot_use_is_one_line(redo_writer, serve, plain, args, says):
    disk = serve(plain=plain)
    uri = disk.uri()
    one_line(run(redo_writer, "--target", uri, *(a.format(uri=uri) for a in args), "--duration", 1),
             says.format(uri=uri))


def test_a_socket_given_as_a_path_says_how_to_give_it(redo_writer, tmp_path):
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(tmp_path / "disk.sock"))
        one_line(run(redo_writer, "--target", tmp_path / "disk.sock", "--duration", 1),
                 f"is a socket: expected a regular file, a block device or null:; an NBD server's socket is given as "
                 f"nbd+unix:///?socket={tmp_path}/disk.sock")


def test_the_guests_static_binary_refuses_an_nbd_target_in_one_line(binaries):
    """The guest images get redo-writer-static, built without libnbd: it says so rather than taking the
    URI for a file name."""
    one_line(run(binaries[1], "--target", "nbd+unix:///?socket=/run/disk.sock", "--duration", 1),
             "--target nbd+unix:///?socket=/run/disk.sock is an NBD URI, and this redo-writer is built without NBD "
             "support")
    ldd = subprocess.run(["ldd", binaries[1]], capture_output=True, text=True)
    assert "not a dynamic executable" in ldd.stdout + ldd.stderr, "the guests' binary must be static"
