"""The hostile-input campaign's second round on the C programs: redo-writer's arguments and the files
it writes (its log members and --events), the device model's parameters and simulate's request
lines, and the nbdkit filter's own keys.

Each explicit case is one input of the campaign (docs/reliability.md counts them); each surface also
has a hypothesis property: exit 0, or exactly one line with exit 2 (1 for a thread that cannot start,
a run that fails); no hang, no file written but the ones named, no time negative or past the model's
bounds."""

from __future__ import annotations

import json
import math
import os
import re
import resource
import shutil
import socket
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from labtests.conftest import require_program
from labtests.support.depth import examples
from sectorlab.devices import build
from sectorlab.errors import SectorlabError

PROPERTY = settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                             HealthCheck.function_scoped_fixture])
TIMEOUT = 20   # seconds: a hang (a FIFO opened for writing, a thread waited for) fails the case


@pytest.fixture(scope="module")
def redo_writer() -> str:
    require_program("cc")
    return str(build.built(build.REDO_WRITER))


@pytest.fixture(scope="module")
def simulate() -> str:
    return str(build.built(build.SIMULATE))


def _run(argv, *, cwd=None, input="", preexec_fn=None) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=cwd, input=input, capture_output=True, text=True, errors="backslashreplace",
                          timeout=TIMEOUT, preexec_fn=preexec_fn)


def nbdkit_once(args, *, preexec_fn=None, run=None) -> subprocess.CompletedProcess:
    """nbdkit in the foreground on `args` (filter, plugin, parameters), started and ended at once (`--run true`):
    what its start makes of them. Its socket is in a directory of this call's own, removed after: nbdkit's
    `-U -` leaves the directory it makes behind whenever its start fails, which is what these cases do."""
    with tempfile.TemporaryDirectory(prefix="sectorlab-nbdkit-") as d:
        argv = [shutil.which("nbdkit"), "-f", "-U", os.path.join(d, "s.sock"), *args, "--run", "true"]
        if run is not None:
            return run(argv)
        return _run(argv, preexec_fn=preexec_fn)


def _one_line(proc: subprocess.CompletedProcess, prefix: str, status: int = 2) -> str:
    assert proc.returncode == status, (proc.returncode, proc.stdout[-500:], proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and proc.stderr.endswith("\n") and lines[0].startswith(prefix), proc.stderr
    return lines[0]


def _snapshot(root: Path) -> dict:
    """Every name under root: its kind, size and (a regular file's) content; a link's target."""
    seen = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath, name)
            st_ = p.lstat()
            seen[str(p.relative_to(root))] = (stat.S_IFMT(st_.st_mode), st_.st_size,
                                              p.read_bytes() if stat.S_ISREG(st_.st_mode) else None,
                                              os.readlink(p) if stat.S_ISLNK(st_.st_mode) else None)
    return seen


def _workspace(root: Path) -> Path:
    """What a careless or hostile user has lying around: a log with redo in it, a FIFO, a directory, a
    socket, symlinks to them, a hard link, and a dangling symlink to a name not made yet."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "log").write_bytes(b"redo" * 256)
    os.mkfifo(root / "fifo")
    (root / "dir").mkdir()
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(root / "sock"))
    (root / "to-fifo").symlink_to("fifo")
    (root / "to-log").symlink_to("log")
    os.link(root / "log", root / "hard-log")
    (root / "dangling").symlink_to("new.log")
    return root


@pytest.fixture
def workspace(tmp_path) -> Path:
    return _workspace(tmp_path / "ws")


# --- redo-writer: the files a run writes -----------------------------------------------------------

OUTPUTS = [
    (["--target", "fifo"], "--target fifo is a FIFO: expected a regular file, a block device or null:"),
    (["--target", "null:", "--events", "fifo"], "--events fifo is a FIFO: expected a regular file (the events CSV)"),
    (["--target", "null:", "--mirror", "fifo"], "--mirror fifo is a FIFO"),
    (["--target", "a.log", "--race", "fifo"], "--race fifo is a FIFO"),
    (["--target", "to-fifo"], "--target to-fifo is a FIFO"),
    (["--target", "null:", "--events", "to-fifo"], "--events to-fifo is a FIFO"),
    (["--target", "dir"], "--target dir is a directory"),
    (["--target", "null:", "--events", "dir"], "--events dir is a directory"),
    (["--target", "sock"], "--target sock is a socket"),
    (["--target", "null:", "--events", "sock"], "--events sock is a socket"),
    (["--target", "/dev/null"], "--target /dev/null is a character device"),
    (["--target", "null:", "--events", "/dev/null"], "--events /dev/null is a character device"),
    (["--target", "null:", "--events", "/dev/zero"], "--events /dev/zero is a character device"),
    (["--target", "log", "--events", "log"], "--events log is the same file as --target log: the events CSV would "
                                             "overwrite the log"),
    (["--target", "log", "--events", "to-log"], "--events to-log is the same file as --target log"),
    (["--target", "log", "--events", "hard-log"], "--events hard-log is the same file as --target log"),
    (["--target", "new.log", "--events", "new.log"], "--events new.log is the same file as --target new.log"),
    (["--target", "dangling", "--events", "new.log"], "--events new.log is the same file as --target dangling"),
    (["--target", "a.log", "--mirror", "b.log", "--events", "b.log"], "--events b.log is the same file as --mirror "
                                                                      "b.log"),
    (["--target", "new.log", "--mirror", "new.log"], "--mirror new.log is the same file as --target new.log"),
    (["--target", "new.log", "--mirror", "dangling"], "--mirror dangling is the same file as --target new.log"),
    (["--target", "log", "--race", "hard-log"], "--race hard-log is the same file as --target log"),
    (["--target", "log", "--mirror", "to-log"], "--mirror to-log is the same file as --target log"),
    (["--target", ""], "--target is empty"),
    (["--target", "null:", "--events", ""], "--events is empty"),
    (["--target", "null:", "--events", "missing/e.csv"], "cannot write events to missing/e.csv: No such file"),
]


@pytest.mark.parametrize("args,says", OUTPUTS, ids=[f"out{i}" for i in range(len(OUTPUTS))])
def test_a_file_the_run_may_not_write_is_one_line_and_nothing_is_touched(redo_writer, workspace, args, says):
    before = _snapshot(workspace)
    line = _one_line(_run([redo_writer, "run", *args, "--transactions", "5"], cwd=workspace), "redo-writer: ")
    assert says in line
    assert _snapshot(workspace) == before, "a refused run leaves every file as it was and makes none"


# --- redo-writer: numbers ---------------------------------------------------------------------------

NUMBERS = [("redo-per-txn", v) for v in ["-1", " 5", "5 ", "+5", "0x10", "1e3", "5.0", "", "\u0665", "nan"]] + [
    ("sessions", "-0"), ("sessions", "4097"), ("sessions", "0"), ("sessions", "99999999999999999999999"),
    ("seed", "18446744073709551616"), ("seed", "-1"), ("log-size", "-65536"), ("log-size", "1"),
    ("blocksize", "513"), ("max-write", "4095"), ("transactions", "-5"), ("transactions", "0"),
    ("cpu-us-per-txn", "nan"), ("spin-us", "inf"), ("rate", "1e6"), ("duration", "0"), ("duration", "86401"),
    ("duration", "-1"),
]


@pytest.mark.parametrize("option,value", NUMBERS, ids=[f"num{i}" for i in range(len(NUMBERS))])
def test_a_number_is_digits_only_and_in_range(redo_writer, option, value):
    extra = [] if option in ("transactions", "duration") else ["--transactions", "1"]
    line = _one_line(_run([redo_writer, "run", "--target", "null:", f"--{option}", value, *extra]), "redo-writer: ")
    assert f"--{option}" in line and ("is not a whole number" in line or "is out of range" in line
                                      or "is not one of" in line), line


# --- redo-writer: argument text ---------------------------------------------------------------------

TEXTS = [
    ["run", "--target", "a\nb"], ["run", "--target", "a\rb"], ["run", "--target", "a\tb"],
    ["run", "--target", "\x1b[31mred"], ["run", "--target", "a\x7fb"], ["run", "--target", b"a\xffb"],
    ["run", "--target", "null:", "--events", "e\n.csv"], ["run", "--sess\nions", "1"], ["ru\nn"],
    ["probe", "/dev/a\nb"], ["run", "--target", "null:", "--force=yes"], ["run", "--target", "null:", "--force="],
    ["run", "--target", "null:", "--sessions", "1", "--sessions", "2"], ["run", "--target", "x", "--target", "y"],
    ["run", "--target", "a" * 5000], ["run", "--target", "null:", "--events"],
]


@pytest.mark.parametrize("argv", TEXTS, ids=[f"text{i}" for i in range(len(TEXTS))])
def test_an_argument_that_is_not_plain_text_or_not_once_is_one_line(redo_writer, workspace, argv):
    before = _snapshot(workspace)
    _one_line(_run([redo_writer, *argv, *(["--transactions", "1"] if argv[0] == "run" else [])], cwd=workspace),
              "redo-writer: ")
    assert _snapshot(workspace) == before


@pytest.mark.parametrize("name", ['q"uote.log', "back\\slash.log", 'both"\\"\\.log'])
def test_a_path_with_quotes_or_backslashes_is_valid_json(redo_writer, workspace, name):
    proc = _run([redo_writer, "run", "--target", name, "--events", name + ".csv", "--transactions", "3", "--output",
                 "json"], cwd=workspace)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["target"] == out["members"][0]["path"] == name


# --- redo-writer: threads under a memory limit ------------------------------------------------------

THREADS = [(1 << 30, []), (300 << 20, []), (64 << 20, ["--mirror", "null:"])]


@pytest.mark.parametrize("limit,extra", THREADS, ids=["1GiB", "300MB", "64MB-mirror"])
def test_threads_that_cannot_start_stop_the_run_in_one_line(redo_writer, limit, extra):
    def limited():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    proc = _run([redo_writer, "run", "--target", "null:", "--sessions", "4096", "--transactions", "100000", *extra],
                preexec_fn=limited)
    line = _one_line(proc, "redo-writer: cannot start ", status=1)
    assert "thread" in line and "pthread_create" in line and proc.stdout == ""


# --- redo-writer: block devices (the guard runs lsblk and wipefs without a shell) --------------------

@pytest.fixture
def ext4_device(loop_device):
    dev = loop_device()
    require_program("mkfs.ext4")
    subprocess.run(["mkfs.ext4", "-q", dev], check=True)
    return dev


def test_a_device_named_with_shell_text_is_checked_not_run(redo_writer, tmp_path, ext4_device):
    name = tmp_path / "x';touch PWNED;'"
    name.symlink_to(ext4_device)
    line = _one_line(_run([redo_writer, "run", "--target", str(name), "--transactions", "1", "--log-size", "1048576",
                           "--max-write", "65536"], cwd=tmp_path), "redo-writer: refusing to write")
    assert "(ext4)" in line and not (tmp_path / "PWNED").exists()


def test_a_long_name_of_a_device_is_checked_whole(redo_writer, ext4_device):
    """The guard's shell command was cut at 512 characters: a longer name passed it unchecked (exit 0,
    the filesystem written over)."""
    long = "/dev/" + "../dev/" * 80 + os.path.basename(ext4_device)
    line = _one_line(_run([redo_writer, "run", "--target", long, "--transactions", "1", "--log-size", "1048576",
                           "--max-write", "65536"]), "redo-writer: refusing to write")
    assert "(ext4)" in line
    assert subprocess.run(["blkid", "-o", "value", "-s", "TYPE", ext4_device], capture_output=True,
                          text=True).stdout.strip() == "ext4"


def test_a_device_that_cannot_be_checked_is_refused(redo_writer, tmp_path, loop_device):
    """lsblk and wipefs not on PATH: the guard cannot look, so it does not let the write through."""
    dev = loop_device()
    proc = subprocess.run([redo_writer, "run", "--target", dev, "--transactions", "1", "--log-size", "1048576",
                           "--max-write", "65536"], capture_output=True, text=True, timeout=TIMEOUT,
                          env={**os.environ, "PATH": str(tmp_path)})
    assert "cannot check whether" in _one_line(proc, "redo-writer: refusing to write")


def test_events_on_a_block_device_are_refused(redo_writer, loop_device):
    dev = loop_device()
    line = _one_line(_run([redo_writer, "run", "--target", "null:", "--events", dev, "--transactions", "1"]),
                     "redo-writer: ")
    assert line == f"redo-writer: --events {dev} is a block device: expected a regular file (the events CSV)"


def test_a_mirror_through_a_symlink_to_the_target_device_is_refused(redo_writer, tmp_path, loop_device):
    dev = loop_device()
    alias = tmp_path / "alias"
    alias.symlink_to(dev)
    line = _one_line(_run([redo_writer, "run", "--target", dev, "--mirror", str(alias), "--transactions", "1",
                           "--log-size", "1048576", "--max-write", "65536"]), "redo-writer: ")
    assert line == (f"redo-writer: --mirror {alias} is the same device as --target {dev}: a second log member must "
                    f"be another one")


# --- redo-writer: properties ------------------------------------------------------------------------

ARG_TEXT = st.text(st.characters(codec="utf-8", exclude_characters="\0"), max_size=12)   # an argument holds no NUL
SAFE_NAME = st.text(st.characters(codec="utf-8", exclude_characters="/\0"), min_size=1, max_size=12).filter(
    lambda s: s not in (".", ".."))
GOOD_PATH = st.sampled_from(["null:", "a.log", "b.log", "new.log", "log", "e.csv"])
PATHS = GOOD_PATH | GOOD_PATH | st.sampled_from(["fifo", "to-fifo", "dir", "sock", "/dev/null", "to-log", "hard-log",
                                                 "dangling", "", "missing/x"]) | SAFE_NAME
HOSTILE = st.sampled_from(["-1", " 1", "1 ", "+1", "0x1", "1e3", "nan", "inf", "", "18446744073709551616", "1.5"]) \
    | ARG_TEXT
NUMERIC = {"sessions": (1, 4096), "redo-per-txn": (1, 64 << 20), "blocksize": (512, 4096), "seed": (0, 2**64 - 1),
           "cpu-us-per-txn": (0, 1000000), "spin-us": (0, 100000), "max-write": (4096, 64 << 20),
           "log-size": (65536, 1 << 44), "rate": (0, 10000000), "duration": (1, 86400), "transactions": (1, 1 << 40)}
GOOD_NUMBER = st.integers(0, 5000).map(str) | st.sampled_from(["512", "1024", "4096", "8192", "65536"])
OPTION = st.one_of(
    st.tuples(st.sampled_from(["--target", "--mirror", "--race", "--events"]), PATHS),
    st.tuples(st.sampled_from(["--sessions", "--redo-per-txn", "--blocksize", "--seed", "--cpu-us-per-txn",
                               "--spin-us", "--max-write"]), st.one_of(GOOD_NUMBER, GOOD_NUMBER, GOOD_NUMBER, HOSTILE)),
    st.tuples(st.sampled_from(["--sync", "--output", "--arrival"]),
              st.sampled_from(["odsync", "fdatasync", "text", "json", "closed", "poisson"]) | HOSTILE),
    st.just(("--force",)), st.tuples(st.just("--bogus"), HOSTILE))
# Mostly a run that may happen (a target, then options not repeated), sometimes anything at all.
OPTIONS = st.tuples(st.tuples(st.just("--target"), PATHS), st.lists(OPTION, max_size=3, unique_by=lambda o: o[0])) \
    .map(lambda t: [t[0], *t[1]]) | st.lists(OPTION, max_size=6)


@PROPERTY
@given(OPTIONS)
def test_any_run_arguments_give_a_run_or_one_line_and_write_only_what_they_name(redo_writer, tmp_path_factory,
                                                                                options):
    base = tmp_path_factory.mktemp("rw")
    ws = _workspace(base / "ws")
    before = _snapshot(ws)
    argv = [redo_writer, "run", "--transactions", "3", "--log-size", "65536"]
    for option in options:
        argv += option
    if "--max-write" not in argv:
        argv += ["--max-write", "65536"]
    proc = _run(argv, cwd=ws)
    event(f"exit {proc.returncode}")
    assert "Traceback" not in proc.stderr
    if proc.returncode != 0:
        _one_line(proc, "redo-writer: ")
    else:
        assert proc.stderr == "" and proc.stdout.startswith(("redo-writer: ", "{"))
    assert os.listdir(base) == ["ws"], "nothing is written beside the files the run names"
    after = _snapshot(ws)
    named = {a for option in options if option[0] in ("--target", "--mirror", "--race", "--events")
             for a in option[1:]}
    changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    if proc.returncode != 0:
        assert not changed, changed
    else:   # only the files named (under any of their names: a symlink, a hard link) were written
        inodes = {(st_.st_dev, st_.st_ino) for st_ in (os.stat(ws / n) for n in named if (ws / n).exists())}
        assert all(k in after and (os.stat(ws / k).st_dev, os.stat(ws / k).st_ino) in inodes for k in changed), \
            (changed, named)


@PROPERTY
@given(st.sampled_from(sorted(NUMERIC)).flatmap(lambda o: st.tuples(st.just(o), st.one_of(
    HOSTILE, st.integers(-10**25, 10**25).map(str), st.floats(allow_nan=True, allow_infinity=True).map(str),
    st.integers(NUMERIC[o][0], min(NUMERIC[o][1], 100000)).map(str),
    st.sampled_from([str(NUMERIC[o][0] - 1), str(NUMERIC[o][1] + 1), f"0{NUMERIC[o][0]}"])))))
def test_any_number_is_taken_only_when_it_is_digits_in_range(redo_writer, option_value):
    option, value = option_value
    low, high = NUMERIC[option]
    digits = re.fullmatch(r"[0-9]+", value) is not None
    if digits and low <= int(value) <= high:
        # A valid number: keep the run short (no long --duration, --transactions or slow --rate).
        assume(option not in ("transactions", "duration") and not (option == "rate" and int(value) < 100))
    extra = [] if option in ("transactions", "duration") else ["--transactions", "1"]
    proc = _run([redo_writer, "run", "--target", "null:", f"--{option}", value, *extra])
    event(f"exit {proc.returncode}")
    assert "Traceback" not in proc.stderr
    if not digits or not low <= int(value) <= high:
        assert f"--{option}" in _one_line(proc, "redo-writer: ")
    elif proc.returncode != 0:
        _one_line(proc, "redo-writer: ")


# --- simulate: parameters ---------------------------------------------------------------------------

PARAMETERS = [
    ["write=pct:50=nan,100=10"], ["write=pct:nan=5,100=10"], ["write=pct:50=inf,100=10"], ["write=pct:50=-1,100=10"],
    ["write-mbps=1e-300"], ["read-mbps=nan"], ["write-mbps=inf"], ["write-mbps=-1"], ["write-mbps=1e7"],
    ["read-mbps=0x10"], ["cache-size=1k", "cache-destage-mbps=1e-300", "cache-hit=fixed:1"],
    ["fail-after-seconds=1e308"], ["fail-after-seconds=nan"], ["fail-after-seconds=-1"], ["write=fixed:0x10"],
    ["write=fixed:1e400"], ["write=fixed: 5"], ["write=normal:1e308,1e308"], ["write=lognormal:0,5"],
    ["write=lognormal:nan,5"], ["seed=18446744073709551616"], ["seed=-1"], ["channels=-1"], ["channels=65"],
    ["stripe=-1"], ["stripe=2G"], ["cache-size=2T"], ["physical-sector=4294967296"], ["physical-sector=131072"],
    ["write-unit=1G"], ["write-unit=99999999999999999999k"], ["spin-us=5"], ["write=fixed:5\n"],
    ["write=fixed:1\nchannels=2"],
]


@pytest.mark.parametrize("args", PARAMETERS, ids=[f"param{i}" for i in range(len(PARAMETERS))])
def test_a_parameter_out_of_its_bounds_is_one_line_before_any_output(simulate, args):
    proc = _run([simulate, *args], input="0 write 0 4096\n")
    _one_line(proc, "simulate: ")
    assert proc.stdout == ""


LINES = [
    "0 write 0 -1", "0 write -1 5", "nan write 0 5", "inf write 0 5", "-5 write 0 5", "1e300 write 0 5",
    "0x10 write 0 5", "0 write 0 4294967296", "0 write 18446744073709551615 1", "0 write 9223372036854775807 1",
    "0 write 0 5 fua junk", "0 write 0 +5", "0 write 0 5.0", "0 write 0 1e3", "0 write 0 4096" + " " * 250 + "7",
    "0 write 0 4096\x00junk", "0 write\x1b[2J 0 4096", "10 write 0 5\n5 write 0 5", "0 WRITE 0 5", "0 write 0",
    "0 write 0 5 FUA", "0 write 0 99999999999999999999999",
]


@pytest.mark.parametrize("text", LINES, ids=[f"line{i}" for i in range(len(LINES))])
def test_a_request_line_out_of_its_bounds_is_one_line(simulate, text):
    proc = _run([simulate, "write=fixed:10"], input=text + "\n")
    _one_line(proc, "simulate: line ")
    rows = proc.stdout.splitlines()[1:]
    assert all(float(v) >= 0 for row in rows for v in row.split(",")[6:8])


# --- simulate: properties ---------------------------------------------------------------------------

EDGE = st.sampled_from(["nan", "inf", "-inf", "1e-300", "1e308", "0x10", "-0", "1e400", " 1", "", "0.001", "1e6",
                        "1e7", "0.0009"])
DECIMAL = st.one_of(EDGE, EDGE, st.floats(allow_nan=False, allow_infinity=False).map(repr),
                    st.integers(-10**6, 10**12).map(str))
DIST = st.one_of(
    DECIMAL.map(lambda a: f"fixed:{a}"), st.tuples(DECIMAL, DECIMAL).map(lambda p: f"normal:{p[0]},{p[1]}"),
    st.tuples(DECIMAL, DECIMAL).map(lambda p: f"lognormal:{p[0]},{p[1]}"),
    st.lists(st.tuples(DECIMAL, DECIMAL), min_size=1, max_size=4).map(
        lambda ps: "pct:" + ",".join(f"{p}={v}" for p, v in ps) + ",100=" + ps[-1][1]),
    ARG_TEXT)
PARAM = st.one_of(
    st.tuples(st.sampled_from(["read", "write", "flush", "cache-hit"]), DIST),
    st.tuples(st.sampled_from(["read-mbps", "write-mbps", "cache-destage-mbps", "fail-after-seconds"]), DECIMAL),
    st.tuples(st.sampled_from(["channels", "stripe", "cache-size", "physical-sector", "write-unit",
                               "fail-after-writes", "seed"]),
              st.integers(-10, 2**70).map(str) | st.sampled_from(["4k", "1M", "2G", "1T", "-1", "0x10", ""])),
    st.tuples(st.just("cache-plp"), st.sampled_from(["true", "false", "yes", ""])))
REQUESTS = "".join(f"{i * 50} {op} {i * 4096} {n}{' fua' if i % 3 == 0 else ''}\n"
                   for i, (op, n) in enumerate([("write", 4096), ("write", 512), ("read", 1 << 20), ("flush", 0),
                                                ("write", 4294967295), ("zero", 65536), ("trim", 4096),
                                                ("write", 4096)] * 4))


def _rows_are_sane(stdout: str, requests: int) -> None:
    rows = [row.split(",") for row in stdout.splitlines()[1:]]
    assert len(rows) == requests
    for row in rows:
        queue, service = float(row[6]), float(row[7])
        assert math.isfinite(queue) and math.isfinite(service) and queue >= 0 and service >= 0, row


@PROPERTY
@given(st.lists(PARAM, max_size=5))
def test_any_parameters_give_sane_times_or_one_line(simulate, params):
    proc = _run([simulate, *(f"{k}={v}" for k, v in params)], input=REQUESTS)
    event(f"exit {proc.returncode}")
    assert "Traceback" not in proc.stderr
    if proc.returncode == 0:
        assert proc.stderr == ""
        _rows_are_sane(proc.stdout, REQUESTS.count("\n"))
    elif proc.stdout == "":
        _one_line(proc, "simulate: ")
    else:   # the parameters were taken; the model's clock ran past its bound on some line
        assert "of virtual time" in _one_line(proc, "simulate: line ")


TOKEN = st.one_of(st.integers(-10, 2**66).map(str), st.floats().map(repr),
                  st.sampled_from(["read", "write", "flush", "trim", "zero", "fua", "WRITE", "nan", "-1", "0x10", "1e3",
                                   ""]),
                  st.text(st.characters(codec="utf-8"), max_size=6))
LINE = st.lists(TOKEN, max_size=6).map(" ".join) | st.tuples(
    st.integers(0, 10**6), st.sampled_from(["read", "write", "flush", "trim", "zero"]), st.integers(0, 2**40),
    st.integers(0, 2**32 - 1), st.booleans()).map(lambda t: f"{t[0]} {t[1]} {t[2]} {t[3]}{' fua' if t[4] else ''}")


@PROPERTY
@given(st.lists(LINE, max_size=12), st.sampled_from([[], ["write-mbps=0.001", "channels=2"],
                                                      ["cache-size=1M", "cache-destage-mbps=0.001",
                                                       "cache-hit=fixed:1", "write=lognormal:1e-300,1e7"]]))
def test_any_request_lines_give_sane_rows_or_one_line(simulate, lines, params):
    text = "".join(line + "\n" for line in lines)
    proc = _run([simulate, *params], input=text)
    event(f"exit {proc.returncode}")
    assert "Traceback" not in proc.stderr
    rows = [row.split(",") for row in proc.stdout.splitlines()[1:]]
    times = [float(row[0]) for row in rows]
    assert times == sorted(times), "arrival times never decrease"
    assert all(float(v) >= 0 and math.isfinite(float(v)) for row in rows for v in row[6:8])
    assert all(0 <= int(row[3]) <= 2**32 - 1 for row in rows)
    if proc.returncode == 0:
        assert proc.stderr == "" and len(rows) == sum(1 for line in text.split("\n") if line.strip(" \t\r"))
    else:
        _one_line(proc, "simulate: line ")


# --- the nbdkit filter's own keys ------------------------------------------------------------------

@pytest.fixture(scope="module")
def model_filter() -> str:
    require_program("nbdkit")
    try:
        return str(build.built(build.FILTER))
    except SectorlabError as e:
        pytest.skip(str(e))


FILTER_CASES = [
    (["spin-us=nan"], "spin-us=nan: expected microseconds, 0 to 1000"),
    (["spin-us=inf"], "spin-us=inf: expected microseconds, 0 to 1000"),
    (["spin-us=0x10"], "spin-us=0x10: expected microseconds, 0 to 1000"),
    (["spin-us=0", "trace={ws}/fifo"], "trace={ws}/fifo: a FIFO: expected a regular file"),
    (["spin-us=0", "trace={ws}/to-log"], "trace={ws}/to-log: a symbolic link: expected a regular file"),
    (["spin-us=0", "trace={ws}/dir"], "trace={ws}/dir: a directory: expected a regular file"),
    (["spin-us=0", "write-mbps=1e-300"], "write-mbps=1e-300: expected 0 (no transfer time) or 0.001"),
]


@pytest.mark.parametrize("args,says", FILTER_CASES, ids=[f"filter{i}" for i in range(len(FILTER_CASES))])
def test_the_filter_refuses_its_own_bad_keys_at_once(model_filter, workspace, args, says):
    before = _snapshot(workspace)
    proc = nbdkit_once([f"--filter={model_filter}", "memory", "size=1M", *(a.format(ws=workspace) for a in args)])
    assert proc.returncode != 0 and f"nbdkit: error: {says.format(ws=workspace)}" in proc.stderr, proc.stderr
    assert _snapshot(workspace) == before, "nothing written through a link or into the log beside it"


def test_a_refused_start_leaves_no_directory_behind(model_filter, tmp_path, monkeypatch):
    """The cases above start nbdkit hundreds of times a run, each refused: none leaves its socket's directory
    in the temporary directory (nbdkit's own `-U -` left one a start, thousands a day)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    proc = nbdkit_once([f"--filter={model_filter}", "memory", "size=1M", "spin-us=-1"])
    assert proc.returncode != 0 and "spin-us=-1" in proc.stderr, proc.stderr
    assert sorted(tmp_path.iterdir()) == []

