"""`sectorlab crash` and `sectorlab crash-db` against the third hostile-input campaign
(docs/reliability.md, docs/crash.md):

- a crash preset is read as every file a user hands sectorlab (sectorlab/inputs.py): a regular
  file within the lab definition's 1 MiB, UTF-8, nested at most 16 deep; a name of labs/crash/ is a
  name (never '..', a leading '-' or a NUL); only a [crash] table (a key before it, or another
  table, was dropped without a word);
- a list that names things names each once: a profile, geometry or BLOCKSIZE given twice ran its
  cells twice, the second trace over the first; crash-db's --judges ran a judge twice;
- a preset whose every cell the rules engine forbids is one line (it ended, exit 0, with an empty
  report); --at with --cuts is one line (--cuts was dropped);
- a run never holds the model's disk in memory: a cut's disk is built, and the log's headers read,
  a piece at a time (a log of 2 GiB took 2.1 GB; 4 GiB was a MemoryError), on the device path and
  in a lab (crash/lab.py);
- a write log that is a FIFO is refused, not waited on forever.

Each explicit case is one input of the campaign; controls (a valid value beside refused ones) are
cases too. Memory is measured with tracemalloc, never time; a case that could hang has a generous
bound. The model and redo-writer run on this host (nbdkit); nothing starts a lab or a VM."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import random
import shutil
import signal
import threading
import time
import tracemalloc
from pathlib import Path
from types import SimpleNamespace

import pytest

from sectorlab import cli, inputs
from sectorlab.crash import devicepath as crash
from sectorlab.crash import labcut as crashlab
from sectorlab.crash import labdb as dbmatrix
from sectorlab.crash import labrun as dblab
from sectorlab.crash import powerloss, redolog, writelog
from sectorlab.crash import preset as crash_preset
from sectorlab.devices import server as server_mod
from sectorlab.devices import trace
from sectorlab.devices.server import DeviceServer
from sectorlab.errors import SectorlabError, UsageError

MIB = 1 << 20
needs_nbdkit = pytest.mark.skipif(shutil.which("nbdkit") is None, reason="nbdkit is not installed")

GOOD = """[crash]
title = "t"
profiles = ["hdd-7200-client"]
geometries = ["sector512e"]
blocksizes = [512, 4096]
cuts = 5
sessions = 1
redo_per_txn = 512
rate = 200
seconds = 1
log_size_mib = 8
seed = 1
"""


def _with(key: str, value: str) -> str:
    """GOOD with `key` given `value`."""
    lines = [f"{key} = {value}" if line.startswith(f"{key} = ") else line for line in GOOD.splitlines()]
    return "\n".join(lines) + "\n"


def _one_line(e: BaseException) -> str:
    text = str(e)
    assert "\n" not in text, text
    return text


def _preset(tmp_path: Path, text: str | bytes, name: str = "p.toml") -> Path:
    path = tmp_path / name
    (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)
    return path


def _bounded(fn, fifo: Path, seconds: float = 20.0) -> tuple[bool, dict]:
    """fn() in a thread, given `seconds`: (whether it was still waiting then, {"value" or "error"}).
    A reader waiting on the FIFO is then let on by writers that come and go, so the thread ends."""
    box: dict = {}

    def target():
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 (what the caller would see)
            box["error"] = e

    th = threading.Thread(target=target, daemon=True)
    th.start()
    th.join(seconds)
    hung = th.is_alive()
    deadline = time.monotonic() + 120
    while th.is_alive() and time.monotonic() < deadline:
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass
        th.join(0.05)
    return hung, box


# --- the preset file: bounded, UTF-8, nesting bounded, a regular file ------------------------------

def _deep_array(depth: int) -> str:
    return GOOD + "deep = " + "[" * depth + "]" * depth + "\n"


def _dotted(parts: int) -> str:
    return GOOD + ".".join(["k"] * parts) + " = 1\n"


def _padded(size: int) -> str:
    """GOOD padded with comment lines to exactly `size` bytes."""
    room = size - len(GOOD)
    line = "#" + "x" * 98 + "\n"
    pad = line * (room // len(line))
    rest = room - len(pad)
    return GOOD + pad + ("#" + "x" * (rest - 2) + "\n" if rest >= 2 else "\n" * rest)


FILE_CASES = [
    ("not-utf8-title", GOOD.replace('"t"', '"caf\xe9"').encode("latin-1"), "not UTF-8 text"),
    ("not-utf8-comment", b"# caf\xe9\n" + GOOD.encode(), "not UTF-8 text"),
    ("array-5000-deep", _deep_array(5000), "nests 5000 deep"),
    ("array-17-deep", _deep_array(17), "nests 17 deep"),
    ("dotted-key-10000-parts", _dotted(10000), "nests 10000 deep"),
    ("dotted-key-17-parts", _dotted(17), "nests 17 deep"),
    ("one-byte-over-1-MiB", _padded(inputs.LAB_DEFINITION_MAX + 1), "over the 1.0 MiB such a file can be"),
    ("not-toml", GOOD + "seed = = 2\n", "TOML"),
    # controls: the bounds themselves
    ("exactly-1-MiB", _padded(inputs.LAB_DEFINITION_MAX), None),
    ("array-15-deep-in-a-title", GOOD.replace('"t"', '"' + "[" * 15 + '"'), None),
]


@pytest.mark.parametrize("text, says", [c[1:] for c in FILE_CASES], ids=[c[0] for c in FILE_CASES])
def test_a_preset_file_is_read_within_its_bounds(tmp_path, text, says):
    path = _preset(tmp_path, text)
    if says is None:
        assert crash_preset.load(str(path)).title
        return
    with pytest.raises(UsageError) as e:
        crash_preset.load(str(path))
    assert says in _one_line(e.value) and str(path) in str(e.value)


def test_a_preset_of_1_gib_is_refused_before_it_is_read(tmp_path):
    """A sparse file of 1 GiB: refused by its size, not read (tracemalloc: what the refusal
    allocated)."""
    path = tmp_path / "huge.toml"
    with open(path, "wb") as f:
        f.truncate(1 << 30)
    tracemalloc.start()
    try:
        with pytest.raises(UsageError) as e:
            crash_preset.load(str(path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "over the 1.0 MiB" in _one_line(e.value)
    assert peak < 4 * MIB, f"{peak / MIB:.1f} MiB allocated to refuse it"


def _special(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / "p.toml"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "link-to-dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "dangling-link":
        path.symlink_to(tmp_path / "nothing")
    return path


@pytest.mark.parametrize("kind, says", [
    ("fifo", "a FIFO; expected a regular file"),
    ("directory", "a directory; expected a regular file"),
    ("link-to-dev-zero", "a character device; expected a regular file"),
    ("dangling-link", "No such file or directory"),
])
def test_a_preset_that_is_not_a_regular_file_is_one_line_and_not_waited_on(tmp_path, kind, says):
    path = _special(tmp_path, kind)
    hung, box = _bounded(lambda: crash_preset.load(str(path)), path)
    assert not hung, f"{kind}: crash_preset.load waited on it"
    assert isinstance(box.get("error"), UsageError), box
    assert says in _one_line(box["error"]) and str(path) in str(box["error"])


def test_dev_null_as_a_preset_is_one_line():
    with pytest.raises(UsageError, match="/dev/null: a character device; expected a regular file") as e:
        crash_preset.load("/dev/null")
    _one_line(e.value)


CLI_CASES = {
    "not-utf8": b"# caf\xe9\n" + GOOD.encode(),
    "array-5000-deep": _deep_array(5000).encode(),
    "dotted-key-17-parts": _dotted(17).encode(),
    "profile-twice": _with("profiles", '["hdd-7200-client", "hdd-7200-client"]').encode(),
    "key-before-crash": ("seed = 2\n" + GOOD).encode(),
    "every-cell-forbidden": _with("geometries", '["sector4k"]').replace("[512, 4096]", "[512]").encode(),
}


@pytest.mark.parametrize("case", [*CLI_CASES, "fifo"])
def test_sectorlab_crash_says_one_line_and_runs_nothing(tmp_path, case, capsys, monkeypatch):
    """Through the command line: exit 2, one line naming the preset, no results directory, no cell
    run."""
    monkeypatch.setattr(crash, "run_cell", lambda *a: pytest.fail(f"{case}: a cell ran"))
    path = _special(tmp_path, "fifo") if case == "fifo" else _preset(tmp_path, CLI_CASES[case])
    def alarm(signum, frame):
        raise TimeoutError(f"{case}: over 20 s: it waited on the preset")

    previous = signal.signal(signal.SIGALRM, alarm)  # the command sets signals: it runs in the main thread
    signal.alarm(20)
    try:
        rc = cli.main(["crash", str(path), "--results", str(tmp_path / "results")])
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.count("\n") == 1 and err.startswith("sectorlab: error: ") and str(path) in err, err
    assert not (tmp_path / "results").exists()


# --- the preset's name -----------------------------------------------------------------------------

@pytest.mark.parametrize("name, says", [
    ("../x", "../x"),
    ("../default", "../default"),
    ("-x", "'-x'"),
    ("--list", "'--list'"),
    ("small\0", "'small\\x00'"),
    ("sm\0all.toml", "'sm\\x00all.toml'"),
    ("small\n", "'small\\n'"),
    ("small ", "'small '"),
    ("", "''"),
    (".", "'.'"),
    ("..", "'..'"),
    ("nonesuch", "'nonesuch'"),
    # controls: names of labs/crash/ and a path to one
    ("small", None),
    ("redo-matrix", None),
    ("labs/crash/small.toml", None),
])
def test_a_preset_name_is_a_name_of_labs_crash_or_a_path(name, says, monkeypatch):
    monkeypatch.chdir(crash_preset.REPO)
    if says is None:
        assert crash_preset.load(name).cells
        return
    with pytest.raises(UsageError) as e:
        crash_preset.load(name)
    text = _one_line(e.value)
    assert says in text, text
    if "/" not in name:
        assert "expected one of" in text and "small" in text, text


# --- only [crash], each name once, a cell to run ----------------------------------------------------

@pytest.mark.parametrize("text, says", [
    ("seed = 2\n" + GOOD, "'seed' is outside [crash]"),
    ("cuts = 500\n" + GOOD, "'cuts' is outside [crash]"),
    (GOOD + "[bench]\nduration_s = 5\n", "'bench' is outside [crash]"),
    (GOOD + "[lab]\nname = \"x\"\n", "'lab' is outside [crash]"),
    (GOOD + "[[vm]]\nname = \"vm1\"\n", "'vm' is outside [crash]"),
    (GOOD + "[crash.extra]\nx = 1\n", "unknown key 'extra'"),
    (GOOD.replace("[crash]", "[[crash]]"), "no [crash] table"),
    ("title = \"t\"\n", "'title' is outside [crash]"),
    ("", "no [crash] table"),
    # a control: comments and blank lines around it
    ("# a preset\n\n" + GOOD + "\n# end\n", None),
])
def test_only_a_crash_table(tmp_path, text, says):
    path = _preset(tmp_path, text)
    if says is None:
        assert crash_preset.load(str(path)).cells
        return
    with pytest.raises(UsageError) as e:
        crash_preset.load(str(path))
    assert says in _one_line(e.value), str(e.value)


DUPLICATES = [
    ("blocksizes", "[512, 512]", "blocksizes: 512 is given twice (#1 and #2)"),
    ("blocksizes", "[512, 4096, 512]", "blocksizes: 512 is given twice (#1 and #3)"),
    ("profiles", '["hdd-7200-client", "hdd-7200-client"]', "profiles: 'hdd-7200-client' is given twice"),
    ("profiles", '["hdd-7200", "hdd-7200-client", "hdd-7200"]', "profiles: 'hdd-7200' is given twice (#1 and #3)"),
    ("geometries", '["sector512e", "sector512e"]', "geometries: 'sector512e' is given twice"),
    ("geometries", '["sector512n", "sector4k", "sector4k"]', "geometries: 'sector4k' is given twice (#2 and #3)"),
    # a BLOCKSIZE is a whole number: 512.0 was run as "512.0", true is not one
    ("blocksizes", "[512.0]", "expected a list of redo BLOCKSIZEs"),
    ("blocksizes", "[true]", "expected a list of redo BLOCKSIZEs"),
    ("blocksizes", "[]", "expected a list of redo BLOCKSIZEs"),
    # controls: each once
    ("blocksizes", "[4096, 512]", None),
    ("profiles", '["hdd-7200", "hdd-7200-client"]', None),
    ("geometries", '["sector512n", "sector512e", "sector4k"]', None),
]


@pytest.mark.parametrize("key, value, says", DUPLICATES, ids=[f"{k}={v}" for k, v, _ in DUPLICATES])
def test_a_name_given_twice_is_one_line(tmp_path, key, value, says):
    path = _preset(tmp_path, _with(key, value))
    if says is None:
        p = crash_preset.load(str(path))
        assert len({c.key for c in p.cells}) == len(p.cells)
        return
    with pytest.raises(UsageError) as e:
        crash_preset.load(str(path))
    assert says in _one_line(e.value), str(e.value)


@pytest.mark.parametrize("geometries, blocksizes, says", [
    ('["sector4k"]', "[512]", "hdd-7200-client/sector4k@512: ORA-01378"),
    ('["sector4k"]', "[512, 1024]", "hdd-7200-client/sector4k@1024: ORA-01378"),
    # controls: one cell the rules engine allows is enough (the others are listed as forbidden)
    ('["sector4k"]', "[512, 4096]", None),
    ('["sector512e", "sector4k"]', "[512]", None),
])
def test_a_preset_whose_every_cell_is_forbidden_is_one_line_before_anything_runs(tmp_path, geometries,
                                                                                   blocksizes, says):
    path = _preset(tmp_path, _with("geometries", geometries).replace("blocksizes = [512, 4096]",
                                                                     f"blocksizes = {blocksizes}"))
    if says is None:
        p = crash_preset.load(str(path))
        allowed = [c for c in p.cells if p.forbidden(c) is None]
        assert allowed and len(allowed) < len(p.cells)
        return
    with pytest.raises(UsageError) as e:
        crash_preset.load(str(path))
    text = _one_line(e.value)
    assert "every cell is forbidden by the rules engine" in text and says in text, text


def test_a_run_of_no_allowed_cell_makes_no_results_directory(tmp_path, monkeypatch):
    """The same refusal where a preset is changed after it was read (cmd_crash replaces its seed and
    cuts): nothing runs, no results directory is made."""
    monkeypatch.setattr(crash, "run_cell", lambda *a: pytest.fail("a cell ran"))
    p = crash_preset.load(str(_preset(tmp_path, GOOD)))
    forbidden = dataclasses.replace(p, cells=(crash_preset.Cell("hdd-7200-client", "sector4k", 512),))
    with pytest.raises(UsageError, match="every cell is forbidden"):
        crash.run(forbidden, lambda _: None, tmp_path / "results")
    assert not (tmp_path / "results").exists()


# --- numbers: whole, bounded, never a boolean, a float, nan or inf ---------------------------------

NUMBERS = [
    ("seed", "true", "expected a whole number"), ("seed", "1.0", "expected a whole number"),
    ("seed", "nan", "expected a whole number"), ("seed", "inf", "expected a whole number"),
    ("seed", "-1", "expected at least 0"), ("seed", str(2**31), "at most 2147483647"),
    ("cuts", "true", "expected a whole number"), ("cuts", "2.5", "expected a whole number"),
    ("cuts", "-inf", "expected a whole number"), ("cuts", "0", "expected at least 1"),
    ("cuts", "10001", "at most 10000"), ("sessions", "false", "expected a whole number"),
    ("redo_per_txn", "512.5", "expected a whole number"), ("rate", "nan", "expected a whole number"),
    ("seconds", "1e3", "expected a whole number"), ("log_size_mib", "4097", "at most 4096"),
    ("log_size_mib", "inf", "expected a whole number"), ("cuts", '"5"', "expected a whole number"),
    # controls: the bounds
    ("seed", "0", None), ("seed", str(2**31 - 1), None), ("cuts", "10000", None), ("log_size_mib", "4096", None),
    ("seconds", "600", None), ("rate", "1", None),
]


@pytest.mark.parametrize("key, value, says", NUMBERS, ids=[f"{k}={v}" for k, v, _ in NUMBERS])
def test_a_preset_number_is_whole_and_bounded(tmp_path, key, value, says):
    path = _preset(tmp_path, _with(key, value))
    if says is None:
        assert crash_preset.load(str(path))
        return
    with pytest.raises(UsageError) as e:
        crash_preset.load(str(path))
    assert f"{key} = " in _one_line(e.value) and says in str(e.value), str(e.value)


# --- the command lines: --at with --cuts, --judges ---------------------------------------------------

def _parse(argv: list[str], capsys) -> tuple[argparse.Namespace | None, str]:
    try:
        args = cli.build_parser().parse_args(argv)
    except SystemExit as e:
        assert e.code == 2
        return None, capsys.readouterr().err
    return args, ""


@pytest.mark.parametrize("argv, says", [
    (["crash", "small", "--at", "500", "--cuts", "3"], "argument --cuts: not allowed with argument --at"),
    (["crash", "small", "--cuts", "3", "--at", "500"], "argument --at: not allowed with argument --cuts"),
    (["crash", "small", "--seed", "1", "--cuts", "1", "--at", "1"], "not allowed with argument"),
    # controls
    (["crash", "small", "--at", "500"], None),
    (["crash", "small", "--cuts", "3"], None),
    (["crash", "small", "--seed", "1", "--at", "0.5"], None),
])
def test_at_and_cuts_together_are_one_line(argv, says, capsys):
    args, err = _parse(argv, capsys)
    if says is None:
        assert args is not None and args.command == "crash"
        return
    assert args is None and says in err and err.count("\n") == 1, err


JUDGES = [
    ("postgres-fpw-on,postgres-fpw-on", "'postgres-fpw-on' is given twice (#1 and #2)"),
    ("mariadb-doublewrite-on,postgres-fpw-off,mariadb-doublewrite-on", "'mariadb-doublewrite-on' is given twice "
                                                                       "(#1 and #3)"),
    ("postgres-fpw-on,", "judge '': expected one of"),
    ("postgres-fpw-on,,postgres-fpw-off", "judge '': expected one of"),
    ("", "judge '': expected one of"),
    ("postgres", "judge 'postgres': expected one of"),
    # controls
    ("postgres-fpw-on", None),
    ("postgres-fpw-on,postgres-fpw-off", None),
    ("mariadb-doublewrite-on,mariadb-doublewrite-off,postgres-fpw-on,postgres-fpw-off", None),
]


@pytest.mark.parametrize("judges, says", JUDGES, ids=[j or "empty" for j, _ in JUDGES])
def test_crash_db_judges_each_once(judges, says, capsys, monkeypatch):
    """Refused by the parser, before the lab is read."""
    from sectorlab.commands import crash as commands
    monkeypatch.setattr(commands, "load_lab", lambda args: pytest.fail("the lab was read"))
    args, err = _parse(["crash-db", "--judges", judges], capsys)
    if says is None:
        assert args is not None and args.command == "crash-db", err
        return
    assert args is None and says in err and err.count("\n") == 1, err


@pytest.mark.parametrize("judges, says", [
    (["postgres-fpw-on", "postgres-fpw-on"], "crash-db: judges: 'postgres-fpw-on' is given twice"),
    ([], "crash-db: no judge"),
    (["nope"], "judge 'nope'"),
])
def test_the_databases_matrix_refuses_a_judge_twice_before_the_lab(judges, says, tmp_path):
    """dbmatrix.run itself, as any caller reaches it: one line before it looks at the lab."""
    with pytest.raises(UsageError) as e:
        dbmatrix.run(None, judges, 20, 1, lambda _: None, tmp_path)
    assert says in _one_line(e.value), str(e.value)


# --- a run holds no disk in memory -----------------------------------------------------------------

@needs_nbdkit
def test_a_run_with_a_large_log_never_holds_its_disk_in_memory(tmp_path, monkeypatch):
    """One cell, a log of 256 MiB (sparse in /dev/shm) of which a second of redo writes a little:
    what Python allocates for the run stays far below the log (it read the model's whole disk:
    257 MiB, 2.1 GB at log_size_mib = 2048). The report is left out: importing what draws it
    allocates some 30 MiB of modules, whatever the log."""
    from sectorlab.report import crash as report
    monkeypatch.setattr(report, "write", lambda results: {})
    text = _with("log_size_mib", "256").replace("blocksizes = [512, 4096]", "blocksizes = [512]")
    p = dataclasses.replace(crash_preset.load(str(_preset(tmp_path, text))), cuts=3, runs=1, uniform_cuts=0,
                            sweep_unreadable=(), sweep_new=())
    tracemalloc.start()
    try:
        out = crash.run(p, lambda _: None, tmp_path / "results")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    doc = json.loads((out / "crash.json").read_text())
    (cell,) = doc["cells"]
    assert cell["runs"][0]["writes"] > 0 and len(cell["cuts"]) == 3
    assert all(c["corrupt_undetected"] == 0 and c["recovered_to"] >= 0 for c in cell["cuts"])
    assert peak < 32 * MIB, f"{peak / MIB:.1f} MiB allocated for a 256 MiB log"


def _sparse_with(path: Path, size: int, ranges: list[tuple[int, int]], seed: int = 1) -> dict[int, bytes]:
    """A sparse file of `size` bytes with random bytes at `ranges`; those bytes by offset."""
    rng = random.Random(seed)
    written = {}
    with open(path, "wb") as f:
        f.truncate(size)
        for off, length in ranges:
            data = rng.randbytes(length)
            f.seek(off)
            f.write(data)
            written[off] = data
    return written


def _state(landed: list[tuple[int, int]]) -> powerloss.State:
    return powerloss.State(0.0, tuple(landed), (), len(landed), 0, 0, 0, tuple(range(len(landed))))


def test_a_cuts_disk_is_built_a_piece_at_a_time(tmp_path, monkeypatch):
    """disk_after on a sparse 64 MiB final image, 4 MiB of it landed in ranges of up to 1 MiB, with
    pieces of 64 KiB: what it allocates stays within a few pieces, and the disk is the landed bytes
    with zeros around them."""
    monkeypatch.setattr(redolog, "CHUNK", 64 << 10)
    final, out = tmp_path / "final.img", tmp_path / "cut.img"
    landed = [(0, 512), (512, 3584), (8 * MIB, MIB), (20 * MIB + 4096, MIB - 4096), (63 * MIB, MIB)]
    written = _sparse_with(final, 64 * MIB, landed + [(40 * MIB, MIB)])  # 40 MiB: written, not landed
    tracemalloc.start()
    try:
        redolog.disk_after(final, _state(landed), out, 64 * MIB)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 512 << 10, f"{peak / MIB:.2f} MiB allocated"
    assert out.stat().st_size == 64 * MIB
    with open(out, "rb") as f:
        for off, length in landed:
            f.seek(off)
            assert f.read(length) == written[off]
        f.seek(40 * MIB)
        assert f.read(MIB) == bytes(MIB), "a range that did not land is as never written"


def test_a_cuts_disk_is_cut_at_its_size_and_refuses_a_short_image(tmp_path):
    """The log's extent of the disk (the ranges past it left out); a final image shorter than a
    range that landed is one line, not a disk of zeros."""
    final = tmp_path / "final.img"
    written = _sparse_with(final, MIB, [(0, 8192)])
    redolog.disk_after(final, _state([(0, 8192), (MIB - 512, 512)]), tmp_path / "cut.img", 4096)
    assert (tmp_path / "cut.img").read_bytes() == written[0][:4096]
    with pytest.raises(SectorlabError, match=r"ends at byte 1048576, within bytes the cut left landed") as e:
        redolog.disk_after(final, _state([(MIB - 512, 1024)]), tmp_path / "cut2.img", 2 * MIB)
    _one_line(e.value)


def _write(offset: int, length: int, t_us: float) -> trace.Request:
    return trace.Request(t_us, "write", offset, length, 1, 0, 1.0, 10.0, 10.0, 0, 0, 0, 0, durable_us=11.0,
                         media_us=10.0)


def test_the_logs_positions_are_read_a_piece_at_a_time(tmp_path, monkeypatch):
    """RedoLog.positions on a sparse image: each block header's `used` added up, read in pieces of
    64 KiB (a write of 1 MiB spans 16), allocating a few pieces."""
    monkeypatch.setattr(redolog, "CHUNK", 64 << 10)
    image = tmp_path / "disk.img"
    blocksize, size = 4096, 256 * MIB
    writes = [_write(0, 4096, 0), _write(4096, MIB, 1), _write(MIB + 4096, 8192, 2)]
    with open(image, "wb") as f:
        f.truncate(size)
        for w in writes:
            for k, off in enumerate(range(w.offset, w.offset + w.length, blocksize)):
                f.seek(off)
                f.write(redolog.HEADER.pack(1, 1, 100 + k % 7, off // blocksize, 1, 0))
    log = redolog.RedoLog.of(writes, blocksize, "t")
    tracemalloc.start()
    try:
        log.positions(image)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    first = 100
    second = first + sum(100 + k % 7 for k in range(MIB // blocksize))
    assert log.ends == [first, second, second + 100 + 101]
    assert peak < 512 << 10, f"{peak / MIB:.2f} MiB allocated"


def test_a_lab_cut_never_holds_the_disk_in_memory(tmp_path, monkeypatch):
    """crash/lab.py apply on a model's disk of 256 MiB (a file standing for its socket: qemu-img reads
    and writes either): the disk the cut left is written back, its log's extent kept as the cut's
    image, and what Python allocates stays far below the disk (it held the disk twice)."""
    if shutil.which("qemu-img") is None:
        pytest.skip("qemu-img is not installed")
    served = tmp_path / "served.img"
    writes = [_write(k * 4096, 4096, 100.0 * k) for k in range(64)]
    written = _sparse_with(served, 256 * MIB, [(w.offset, w.length) for w in writes] + [(200 * MIB, 4096)])
    head = ("t_us,op,offset,length,fua,channel,queue_us,service_us,served_us,cached,rmw_reads,unit_reads,error,"
            "durable_us,media_us\n")
    model = tmp_path / "model"
    model.mkdir()
    (model / "disk.trace").write_text(head + "".join(
        f"{w.t_us:.3f},write,{w.offset},{w.length},1,0,1,10,10,0,0,0,0,11,10\n" for w in writes))
    server = SimpleNamespace(trace=model / "disk.trace", unreadable=model / "disk.unreadable", directory=model,
                             uri=lambda: str(served), name="d")
    for method in ("read_image", "write_image", "set_unreadable"):
        setattr(server, method, functools.partial(getattr(DeviceServer, method), server))
    monkeypatch.setattr(crashlab.modelled, "server", lambda lab, disk: server)
    monkeypatch.setattr(crashlab, "WORK_DIR", tmp_path)
    record = SimpleNamespace(lab="t")
    disk = SimpleNamespace(vm="vm1", name="d", device="hdd-7200-client", logical_block_size=512,
                           physical_block_size=4096)
    at = writes[31].t_us + 50  # 32 writes durable, the rest after the cut
    # What the work directory (/dev/shm in a real cut: memory) holds when the cut disk is written
    # back: one disk's landed bytes, not the final image and a second, cut copy beside it.
    held = []
    real_run = server_mod.subprocess.run

    def run(argv, *args, **kwargs):
        held.append(sum(p.stat().st_blocks * 512 for p in tmp_path.rglob("*") if p.is_file()
                        and p != served and model not in p.parents))
        return real_run(argv, *args, **kwargs)
    monkeypatch.setattr(server_mod.subprocess, "run", run)
    tracemalloc.start()
    try:
        cut = crashlab.apply(record, disk, at, 4096, random.Random(1))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    try:
        assert cut.state.writes_durable == 32 and cut.log.extent == 32 * 4096
        assert cut.image.read_bytes() == b"".join(written[k * 4096] for k in range(32))
        assert served.stat().st_size == 256 * MIB
        with open(served, "rb") as f:
            assert f.read(32 * 4096) == cut.image.read_bytes()
            assert f.read(4096) == bytes(4096), "a write after the cut is as never written"
            f.seek(200 * MIB)
            assert f.read(4096) == bytes(4096)
        assert json.loads((model / "cut.json").read_text())["durable"] == 32
        assert peak < 32 * MIB, f"{peak / MIB:.1f} MiB allocated for a 256 MiB disk"
        assert len(held) == 2 and held[1] <= 32 * 4096 + 64 * 1024, f"{held[1]:,} bytes held at the write-back"
    finally:
        cut.image.unlink(missing_ok=True)


# --- the write log: a regular file, never waited on -----------------------------------------------

def _log_bytes() -> bytes:
    return writelog.MAGIC + writelog.HEAD.pack(1000, 0, 512 | 1 << 32) + b"x" * 512


@pytest.mark.parametrize("kind, says", [
    ("fifo", "a FIFO; expected the device model's write log, a regular file"),
    ("directory", "a directory; expected the device model's write log"),
    ("link-to-dev-zero", "a character device; expected the device model's write log"),
    ("dangling-link", "No such file or directory; expected the device model's write log"),
    ("control", None),
])
def test_a_write_log_that_is_not_a_regular_file_is_one_line_and_not_waited_on(tmp_path, kind, says):
    path = _special(tmp_path, kind) if kind != "control" else tmp_path / "p.toml"
    if kind == "control":
        path.write_bytes(_log_bytes())
    hung, box = _bounded(lambda: writelog.records(path), path)
    assert not hung, f"{kind}: writelog.records waited on it"
    if says is None:
        assert [(r.op, r.offset, r.length) for r in box["value"]] == [("write", 0, 512)]
        return
    assert isinstance(box.get("error"), UsageError), box
    assert says in _one_line(box["error"]) and str(path) in str(box["error"])


def test_a_run_whose_write_log_is_a_fifo_is_one_line_not_a_wait(tmp_path, monkeypatch):
    """dblab waits for a live write log to settle (a record being written is not yet whole); a log
    that is not a file at all is not one it waits for."""
    monkeypatch.setattr(dblab, "SETTLE_S", 2)
    head = "t_us,op,offset,length,fua,channel,queue_us,service_us,served_us,cached,rmw_reads,unit_reads,error\n"
    (tmp_path / "disk.trace").write_text(head + "1.000,write,0,512,1,0,1,1,1,0,0,0,0\n")
    fifo = tmp_path / "disk.writelog"
    os.mkfifo(fifo)
    server = SimpleNamespace(trace=tmp_path / "disk.trace", writelog=fifo)
    hung, box = _bounded(lambda: dblab._settled(server, tmp_path / "copy"), fifo)
    assert not hung, "it waited on the FIFO"
    assert isinstance(box.get("error"), UsageError) and "a FIFO" in _one_line(box["error"]), box
    assert not (tmp_path / "copy").exists()
