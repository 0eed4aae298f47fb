"""The benches on the device path against the third hostile-input campaign (docs/reliability.md):
bench-sweep's and bench-load's presets, `sectorlab report`'s comparisons, the device models'
URIs and lifetimes, and --results.

- a sweep's values are compared as the model reads them (`"64k"` and `"65536"` are one value), and
  two [[bench.sweep]] of one parameter are one line;
- a write buffer that is not a whole number of write units (the model rounded it down, unsaid) is
  one line naming the value, the unit and the nearest multiples: a sweep's value, a profile's, a
  model started with it;
- the numbers of [bench.closed_loop] and of its figures are finite and above 0 where 0 or less
  means nothing (`seed_tps = -5` was taken);
- a bench's comparisons and seed figures are bounded, in a preset and in the bench.json `sectorlab
  report` reads (500 copies of one comparison ran past 60 s), and none is given twice;
- every nbd+unix URI percent-encodes its socket's path (TMPDIR='/tmp/t#mp' failed every run of
  bench-sweep with "has a fragment"): redo-writer, libnbd and QEMU read the encoded path;
- a device-path model ends with the process that started it (nbdkit --exit-with-parent): a killed
  sectorlab left its nbdkit serving; a lab's model is not tied, and outlives it;
- --results that is not a directory is one line before anything runs, for every command that
  takes it.

Each explicit case is one input of the campaign; controls (a valid value beside each refused one)
are cases too. Nothing here starts a lab or a VM; the models are nbdkit on this host."""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

import pytest

from labtests.unit.bench.test_load import CLOSED
from labtests.unit.bench.test_sweep import SWEEP, TINY, tiny_preset
from labtests.unit.report.test_hostile_results import make_results, run_cli, side
from sectorlab import bench, procs
from sectorlab.bench.devicepath import runs
from sectorlab.bench.redo import twin as devicepath
from sectorlab.devices import profiles
from sectorlab.devices.server import DeviceServer
from sectorlab.errors import UsageError
from sectorlab.lab import modelled
from sectorlab.paths import REPO

MIB = 1 << 20
# How long a killed parent's model may take to end (it took 1.5 s here): generous, never a margin.
GONE_WITHIN_S = 20.0

needs_nbdkit = pytest.mark.skipif(shutil.which("nbdkit") is None,
                                  reason="nbdkit is not installed (scripts/bootstrap installs it)")


def refused(tmp_path, tables: str) -> str:
    """The one line a preset of the TINY lab with these [bench] tables is refused with."""
    with pytest.raises(UsageError) as e:
        tiny_preset(tmp_path, tables)
    text = str(e.value)
    assert "\n" not in text, text
    return text


def sweep_of(param: str, values: str, profile: str = "nvme-512e") -> str:
    return (SWEEP.replace('"write-buffer"', f'"{param}"').replace('["0", "64k"]', values)
            .replace('"nvme-512e"', f'"{profile}"'))


# 1. A sweep's values, as the model reads them, and its sweeps, by parameter.

@pytest.mark.parametrize("param, values, shown", [
    ("write-buffer", '["64k", "65536"]', ("64k", "65536")),
    ("write-buffer", '["0", "1M", "1048576"]', ("1M", "1048576")),
    ("write-buffer", '["64K", "64k"]', ("64K", "64k")),
    ("write-buffer", '[65536, "64k"]', ("65536", "64k")),
    ("write", '["fixed:20", "fixed:20.0"]', ("fixed:20", "fixed:20.0")),
    ("read", '["lognormal:76,96", "lognormal:76.0,96"]', ("lognormal:76,96", "lognormal:76.0,96")),
    ("write-mbps", '["2000", "2e3"]', ("2000", "2e3")),
], ids=["64k-65536", "1M-1048576", "64K-64k", "int-65536-64k", "fixed-20-20.0", "lognormal", "mbps-2e3"])
def test_a_sweep_value_given_twice_in_two_spellings_is_one_line(tmp_path, param, values, shown):
    text = refused(tmp_path, sweep_of(param, values))
    assert "[[bench.sweep]]" in text and all(v in text for v in shown), text


@pytest.mark.parametrize("param, values", [
    ("write-buffer", '["0", "64k", "1M"]'), ("write", '["fixed:20", "fixed:21"]'),
    ("read", '["lognormal:76,96", "lognormal:76,97"]'),
], ids=["control-sizes", "control-fixed", "control-lognormal"])
def test_distinct_sweep_values_are_taken(tmp_path, param, values):
    (s,) = tiny_preset(tmp_path, sweep_of(param, values)).sweeps
    assert len(s.values) == len(set(s.values)) >= 2


def test_two_sweeps_of_one_parameter_are_one_line(tmp_path):
    text = refused(tmp_path, SWEEP + sweep_of("write-buffer", '["0", "1M"]'))
    assert "[[bench.sweep]]" in text and "write-buffer" in text, text


def test_two_sweeps_of_two_parameters_are_taken(tmp_path):
    p = tiny_preset(tmp_path, SWEEP + sweep_of("write", '["fixed:10", "fixed:60"]'))
    assert [s.param for s in p.sweeps] == ["write-buffer", "write"]


@pytest.mark.parametrize("values, says", [
    ("[" + ", ".join(f'"fixed:{i}"' for i in range(1, 18)) + "]", "at most 16"),
    ("[true, false]", "values"),  # refused by the model before ('True'), by the list's check now
    ('["0", 1.5]', "expected a list of at least 2 values"),
], ids=["17-values", "booleans", "a-float"])
def test_a_sweep_of_too_many_or_ill_typed_values_is_one_line(tmp_path, values, says):
    text = refused(tmp_path, sweep_of("write", values))
    assert "[[bench.sweep]] #1" in text and says in text, text


def test_seventeen_sweeps_are_one_line(tmp_path):
    sweeps = "".join(sweep_of("write", f'["fixed:{i}", "fixed:{i + 100}"]') for i in range(17))
    assert "17 [[bench.sweep]] tables: expected at most 16" in refused(tmp_path, sweeps)


# 2. A write buffer of whole write units.

@pytest.mark.parametrize("values, value, nearest", [
    ('["0", "6000"]', "'6000' is 6,000 bytes", "4,096 (1 unit) or 8,192 (2 units)"),
    ('["0", "6k"]', "'6k' is 6,144 bytes", "4,096 (1 unit) or 8,192 (2 units)"),
    ('["0", "65537"]', "'65537' is 65,537 bytes", "65,536 (16 units) or 69,632 (17 units)"),
    ('["0", "1000000"]', "'1000000' is 1,000,000 bytes", "999,424 (244 units) or 1,003,520 (245 units)"),
], ids=["6000", "6k", "65537", "1000000"])
def test_a_swept_write_buffer_of_part_of_a_unit_is_one_line(tmp_path, values, value, nearest):
    text = refused(tmp_path, sweep_of("write-buffer", values))
    assert value in text and "write units of 4,096 bytes" in text and nearest in text, text


def test_a_swept_write_buffer_of_whole_units_is_taken(tmp_path):
    (s,) = tiny_preset(tmp_path, sweep_of("write-buffer", '["8k", "12288", "1M"]')).sweeps
    assert s.values == ("8k", "12288", "1M")


def _dram_preset(tmp_path, values: str):
    """TINY with its floor disk served by nvme-512e-dram (nvme-512e with a 1 MiB buffer) and a sweep
    of nvme-512e's write unit, which reaches the DRAM variant too."""
    text = TINY.replace('device = "floor"', 'device = "nvme-512e-dram"') + sweep_of("write-unit", values)
    path = tmp_path / "dram.toml"
    path.write_text(text)
    return bench.load_preset(str(path))


def test_a_swept_write_unit_that_leaves_a_variants_buffer_in_part_units_is_one_line(tmp_path):
    """1 MiB of 3 KiB units is 341 units and a third: the model held 341 and said nothing."""
    with pytest.raises(UsageError) as e:
        _dram_preset(tmp_path, '["4k", "3k"]')
    assert "profile 'nvme-512e-dram'" in str(e.value) and "write units of 3,072 bytes" in str(e.value)
    assert "1,047,552 (341 units) or 1,050,624 (342 units)" in str(e.value), str(e.value)


def test_a_swept_write_unit_that_divides_the_buffer_is_taken(tmp_path):
    assert _dram_preset(tmp_path, '["4k", "8k"]').sweeps[0].values == ("4k", "8k")


@pytest.mark.parametrize("params, ok", [
    ({"write": "fixed:20", "write-unit": "4096", "write-buffer": "6k"}, False),
    ({"write": "fixed:20", "write-unit": "4096", "write-buffer": "8k"}, True),
], ids=["profile-6k", "control-profile-8k"])
def test_a_profile_whose_buffer_is_part_units_is_one_line(params, ok):
    raw = {"x": {"description": "d", "params": params, "write_cache": "none",
                 "sources": {k: "s" for k in (*params, "write_cache")}}}
    if ok:
        assert profiles.from_entry("x", profiles._composed("x", raw)).params["write-buffer"] == params["write-buffer"]
        return
    with pytest.raises(UsageError) as e:
        profiles.from_entry("x", profiles._composed("x", raw))
    assert "device profile 'x'" in str(e.value) and "6,144 bytes" in str(e.value), str(e.value)


@needs_nbdkit
def test_a_model_started_with_a_buffer_of_part_units_is_one_line(tmp_path):
    server = DeviceServer(tmp_path / "m", MIB, {"write-unit": "4096", "write-buffer": "6000"})
    try:
        with pytest.raises(UsageError, match="write-buffer = '6000' is 6,000 bytes"):
            server.start()
        assert server.pid() is None and not server.socket.exists()
    finally:
        server.stop()


# 3. The numbers of [bench.closed_loop] and its figures.

@pytest.mark.parametrize("change, says", [
    (("seed_tps = 10000", "seed_tps = -5"), "seed_tps = -5"),
    (("seed_tps = 10000", "seed_tps = 0"), "seed_tps = 0"),
    (("seed_tps = 10000", "seed_tps = -0.0"), "seed_tps = -0.0"),
    (("seed_tps = 10000", "seed_tps = nan"), "seed_tps = nan"),
    (("seed_tps = 10000", "seed_tps = inf"), "seed_tps = inf"),
    (("seed_tps = 10000", "seed_tps = 1e13"), "seed_tps = 10000000000000.0"),
    (("seed_tps = 10000", 'seed_tps = "fast"'), "seed_tps = 'fast'"),
    (("sessions = 3", "sessions = 0"), "sessions = 0"),
    (("sessions = 3", "sessions = -3"), "sessions = -3"),
    (("redo_per_txn = 2000", "redo_per_txn = 0"), "redo_per_txn = 0"),
    (("cpu_us_per_txn = 100", "cpu_us_per_txn = -1"), "cpu_us_per_txn = -1"),
    (("cpu_us_per_txn = 100", "cpu_us_per_txn = 1.5"), "cpu_us_per_txn = 1.5"),
    (("seed_value = 2.0", "seed_value = -2.0"), "seed_value = -2.0"),
    (("seed_value = 2.0", "seed_value = 0"), "seed_value = 0"),
    (("seed_value = 2.0", "seed_value = inf"), "seed_value = inf"),
    (('lab = "ratio"', 'lab = "ratio"\ntell_apart = 0'), "tell_apart = 0"),
    (('lab = "ratio"', 'lab = "ratio"\ntell_apart = -1.0'), "tell_apart = -1.0"),
], ids=["tps-negative", "tps-zero", "tps-minus-zero", "tps-nan", "tps-inf", "tps-huge", "tps-text",
        "sessions-zero", "sessions-negative", "redo-zero", "cpu-negative", "cpu-fraction", "ratio-negative",
        "ratio-zero", "ratio-inf", "ratio-tell-apart-zero", "ratio-tell-apart-negative"])
def test_a_closed_loop_number_that_means_nothing_is_one_line(tmp_path, change, says):
    text = refused(tmp_path, CLOSED.replace(*change))
    assert "[bench.closed_loop]" in text and says in text, text


@pytest.mark.parametrize("change", [
    ("seed_tps = 10000", "seed_tps = 0.5"),
    ("cpu_us_per_txn = 100", "cpu_us_per_txn = 0"),
    ('lab = "ratio"', 'lab = "ratio"\ntell_apart = 1.0'),
    ("seed_value = 2.0", "seed_value = 0.25"),
], ids=["control-tps-half", "control-cpu-zero", "control-tell-apart", "control-ratio-below-1"])
def test_a_closed_loop_number_that_means_something_is_taken(tmp_path, change):
    assert tiny_preset(tmp_path, CLOSED.replace(*change)).closed_loop["sessions"] == 3


def test_a_value_figure_may_be_negative(tmp_path):
    """A value (a change in %, say) may be below 0: only a ratio may not."""
    figure = CLOSED.replace('lab = "ratio"', 'lab = "value"').replace("seed_value = 2.0", "seed_value = -54.2")
    assert tiny_preset(tmp_path, figure.replace('unit = "ratio"', 'unit = "%"')).closed_loop["figure"][0][
        "seed_value"] == -54.2


def test_a_figure_given_twice_is_one_line(tmp_path):
    figure = CLOSED[CLOSED.index("[[bench.closed_loop.figure]]"):]
    text = refused(tmp_path, CLOSED + "\n" + figure.replace('metric = "commits_per_write"',
                                                             'metric = "log_file_sync_p50_ms"'))
    assert "commits per log write, 512 against 4096" in text, text


# 4. Comparisons: bounded and never twice, in a preset and in bench.json.

def _compare(a: str, b: str, primary: str | None = None, title: str | None = None) -> str:
    return ("\n[[bench.compare]]\n" + f'a = "{a}"\nb = "{b}"\n' + (f'primary = "{primary}"\n' if primary else "")
            + (f'title = "{title}"\n' if title else ""))


# TINY's first comparison is flash@512 against flash@4096 on the default primary.
@pytest.mark.parametrize("extra", [
    _compare("flash@512", "flash@4096"),
    _compare("flash@512", "flash@4096", title="the same, named otherwise"),
    _compare("flash@4096", "flash@512"),
    _compare("flash@512", "flash@4096", primary="log_file_sync_p50_ms"),
], ids=["copy", "retitled", "swapped", "default-primary-spelled"])
def test_a_comparison_given_twice_in_a_preset_is_one_line(tmp_path, extra):
    text = refused(tmp_path, extra)
    assert "[[bench.compare]]" in text and "flash@512" in text and "flash@4096" in text, text


def test_one_pair_on_two_primary_metrics_is_two_comparisons(tmp_path):
    p = tiny_preset(tmp_path, _compare("flash@512", "flash@4096", primary="tps"))
    assert [c["primary"] for c in p.compares] == ["log_file_sync_p50_ms", "tps"]


PRIMARIES = ("log_file_sync_p50_ms", "tps", "log_file_sync_p99_ms", "log_file_sync_mean_ms",
             "log_file_parallel_write_p50_ms", "commit_response_p50_ms")
PAIRS = [("flash@512", "flash@4096"), ("flash@512", "floor@512"), ("flash@512", "floor@4096"),
         ("flash@4096", "floor@512"), ("flash@4096", "floor@4096"), ("floor@512", "floor@4096")]


def _distinct(n: int) -> list[tuple[str, str, str]]:
    out = [(a, b, m) for m in PRIMARIES for a, b in PAIRS]
    assert len(out) >= n
    return out[:n]


@pytest.mark.parametrize("n, ok", [(33, False), (32, True)], ids=["33-comparisons", "control-32"])
def test_a_preset_has_at_most_32_comparisons(tmp_path, n, ok):
    # TINY's own comparison is the first of _distinct's
    tables = "".join(_compare(a, b, m) for a, b, m in _distinct(n)[1:])
    if ok:
        assert len(tiny_preset(tmp_path, tables).compares) == n
    else:
        assert f"{n} [[bench.compare]] tables: expected at most 32" in refused(tmp_path, tables)


def test_a_preset_has_at_most_32_seed_figures(tmp_path):
    figure = ('\n[[bench.seed_figure]]\nwhat = "f{i}"\nseed_value = 1.0\nquote = "q"\nwhere = "w"\nlab = "none"\n'
              'reason = "r"\n')
    text = refused(tmp_path, "".join(figure.replace("{i}", str(i)) for i in range(33)))
    assert "33 [[bench.seed_figure]] tables: expected at most 32" in text, text


def _bench_cmp(a: tuple[str, int], b: tuple[str, int], primary: str | None = None, title: str = "t") -> dict:
    out = {"title": title, "a": side(*a), "b": side(*b)}
    if primary:
        out["primary"] = primary
    return out


BENCH_PAIRS = [(("d1", 512), ("d1", 4096)), (("d1", 512), ("d2", 512)), (("d1", 512), ("d2", 4096)),
               (("d1", 4096), ("d2", 512)), (("d1", 4096), ("d2", 4096)), (("d2", 512), ("d2", 4096))]
ONE = _bench_cmp(("d1", 512), ("d2", 512))


@pytest.mark.parametrize("comparisons, says", [
    ([ONE] * 500, "comparisons"),
    ([_bench_cmp(a, b, m) for m in PRIMARIES for a, b in BENCH_PAIRS][:33], "33 comparisons, more than the 32"),
    ([ONE, ONE], "d1@512 against d2@512"),
    ([ONE, _bench_cmp(("d1", 512), ("d2", 512), title="other")], "d1@512 against d2@512"),
    ([ONE, _bench_cmp(("d2", 512), ("d1", 512))], "d1@512"),
    ([ONE, _bench_cmp(("d1", 512), ("d2", 512), "log_file_sync_p50_ms")], "d1@512 against d2@512"),
], ids=["500-copies", "33-distinct", "copy", "retitled", "swapped", "default-primary-spelled"])
def test_reports_comparisons_are_bounded_and_never_twice(tmp_path, capsys, comparisons, says):
    results = make_results(tmp_path / "r", disks=("d1", "d2"), events=False, comparisons=comparisons)
    before = sorted(p.name for p in results.iterdir())
    rc, err = run_cli(capsys, ["report", str(results)], seconds=30)
    assert rc == 2 and "bench.json" in err and says in err, err
    assert sorted(p.name for p in results.iterdir()) == before  # refused before anything is written


def test_reports_seed_figures_are_bounded(tmp_path, capsys):
    figures = [{"what": f"f{i}", "lab": "none", "reason": "r"} for i in range(33)]
    results = make_results(tmp_path / "r", disks=("d1",), events=False, seed_figures=figures)
    rc, err = run_cli(capsys, ["report", str(results)], seconds=30)
    assert rc == 2 and "33 seed_figures, more than the 32" in err, err


def _run_twice(results: Path, same_repeat: bool) -> None:
    """bench.json with its first run given again, in files of its own (the same repeat, or the next)."""
    bench_json = json.loads((results / "bench.json").read_text())
    again = dict(bench_json["runs"][0], report=bench_json["runs"][0]["report"] + ".again")
    shutil.copyfile(results / bench_json["runs"][0]["report"], results / again["report"])
    if not same_repeat:
        again["repeat"] = 2
    bench_json["runs"].append(again)
    (results / "bench.json").write_text(json.dumps(bench_json))


@pytest.mark.parametrize("same_repeat", [True, False], ids=["run-twice", "control-next-repeat"])
def test_a_run_given_twice_in_bench_json_is_one_line(tmp_path, capsys, same_repeat):
    """One run twice would count its numbers twice in every test of its configuration."""
    results = make_results(tmp_path / "r", disks=("d1",), events=False)
    _run_twice(results, same_repeat)
    rc, err = run_cli(capsys, ["report", str(results)], seconds=60)
    if same_repeat:
        assert rc == 2 and "bench.json" in err and "'d1' at 512, repeat 1" in err, err
    else:
        assert rc == 0, err


@pytest.mark.parametrize("twice", [True, False], ids=["share-twice", "control-two-shares"])
def test_a_share_given_twice_in_appliance_json_is_one_line(tmp_path, capsys, twice):
    from labtests.unit.report.test_hostile_results import appliance_doc
    doc = appliance_doc()
    share = dict(doc["shares"][0], name="DATAFILES" if twice else "REDO")
    doc["shares"].append(share)
    doc["runs"].append(dict(doc["runs"][0], share=share["name"]))
    results = tmp_path / "r"
    results.mkdir()
    (results / "appliance.json").write_text(json.dumps(doc))
    rc, err = run_cli(capsys, ["report", str(results)], seconds=60)
    if twice:
        assert rc == 2 and "appliance.json" in err and "'DATAFILES' is given twice" in err, err
    else:
        assert rc == 0, err


@pytest.mark.parametrize("where", ["/dev/null", str(REPO / "README.md"), str(REPO / "README.md" / "x"), "fifo"],
                         ids=["dev-null", "a-file", "under-a-file", "fifo"])
def test_bench_writer_dir_that_is_not_a_directory_is_one_line(monkeypatch, capsys, tmp_path, where):
    """sectorlab bench-writer --dir /dev/null was a traceback (FileExistsError)."""
    if where == "fifo":
        os.mkfifo(tmp_path / "fifo")
        where = str(tmp_path / "fifo")
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail(f"started {a}"))
    rc, err = run_cli(capsys, ["bench-writer", "--dir", where, "--rounds", "1", "--seconds", "1"])
    assert rc == 2 and "--dir" in err and where in err, err


def test_one_pair_on_two_primaries_is_reported(tmp_path, capsys):
    """The control: two comparisons of one pair on two primary metrics are two tests."""
    results = make_results(tmp_path / "r", disks=("d1", "d2"), events=False,
                           comparisons=[ONE, _bench_cmp(("d1", 512), ("d2", 512), "tps")])
    rc, err = run_cli(capsys, ["report", str(results)], seconds=60)
    assert rc == 0, err
    assert len(json.loads((results / "summary.json").read_text())["comparisons"]) == 2


# 5. nbd+unix URIs with the socket's path percent-encoded.

# Each of these in a directory's name broke the raw URI: '#' began a fragment, '?' a second query,
# '&' another parameter, '%' an escape, ' ' is no URI character.
SPECIAL = ["#", "?", "%", "&", " ", "%23"]


def _libnbd_size(uri: str) -> int:
    """The export's size as libnbd's own URI parser reaches it (nbd_connect_uri), or -1."""
    name = ctypes.util.find_library("nbd")
    if name is None:
        pytest.skip("libnbd is not installed (scripts/bootstrap installs libnbd-dev)")
    lib = ctypes.CDLL(name)
    lib.nbd_create.restype = ctypes.c_void_p
    lib.nbd_connect_uri.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    lib.nbd_get_size.argtypes = [ctypes.c_void_p]
    lib.nbd_get_size.restype = ctypes.c_int64
    lib.nbd_close.argtypes = [ctypes.c_void_p]
    handle = lib.nbd_create()
    try:
        return lib.nbd_get_size(handle) if lib.nbd_connect_uri(handle, uri.encode()) == 0 else -1
    finally:
        lib.nbd_close(handle)


@pytest.fixture
def short_dir():
    """A directory under /tmp (a socket's path is at most 107 bytes; pytest's tmp_path is long)."""
    path = Path(tempfile.mkdtemp(prefix="sl3-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@needs_nbdkit
@pytest.mark.parametrize("char", SPECIAL + [""], ids=[*(repr(c) for c in SPECIAL), "control-plain"])
def test_a_models_uri_reaches_its_socket_whatever_the_directory_is_called(short_dir, redo_writer, char):
    server = DeviceServer(short_dir / f"a{char}b", 64 * MIB, {})
    server.start()
    try:
        uri = server.uri()
        parts = urllib.parse.urlsplit(uri)
        assert parts.fragment == "" and urllib.parse.parse_qs(parts.query) == {"socket": [str(server.socket)]}, uri
        run = subprocess.run([redo_writer, "run", "--target", uri, "--transactions", "50", "--duration", "10",
                              "--blocksize", "512", "--log-size", str(8 * MIB), "--output", "json"],
                             capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr
        assert json.loads(run.stdout)["transactions"] > 0
        assert _libnbd_size(uri) == 64 * MIB
        if shutil.which("qemu-io"):
            io = subprocess.run(["qemu-io", "-f", "raw", "-c", "read 0 4096", uri], capture_output=True, text=True,
                                timeout=60)
            assert io.returncode == 0 and "read 4096/4096 bytes" in io.stdout, io.stderr
    finally:
        server.stop()


def test_a_lab_disks_uri_is_encoded_too(monkeypatch, tmp_path):
    monkeypatch.setattr(modelled, "SERVE_DIR", tmp_path / "run#1 &x")
    uri = devicepath.uri("lab", "disk")
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(uri).query)
    assert query == {"socket": [str(tmp_path / "run#1 &x" / "lab" / "disk" / "disk.sock")]}, uri


@needs_nbdkit
def test_a_device_path_run_under_a_tmpdir_with_a_hash_reaches_its_models(tmp_path, monkeypatch, redo_writer):
    """TMPDIR='/tmp/t#mp' sectorlab bench-sweep: every run failed with 'has a fragment'. One run
    (and its warm-up) of one configuration, as bench-sweep and bench-load run them."""
    hashed = Path(tempfile.mkdtemp(prefix="t#mp ", dir="/tmp"))
    try:
        monkeypatch.setenv("TMPDIR", str(hashed))
        monkeypatch.setattr(tempfile, "tempdir", None)
        preset = tiny_preset(tmp_path, "")
        results = runs.results_dir(tmp_path / "results", "t")
        done = runs.device_runs(preset, preset.workload, runs.configs(preset)[:1], {"as is": {}}, 1, 5,
                                    results, lambda line: None, "t")
        (run,) = done.runs
        assert json.loads((results / run["report"]).read_text())["transactions"] > 0
        assert "t%23mp%20" in run["command"]
    finally:
        monkeypatch.setattr(tempfile, "tempdir", None)
        shutil.rmtree(hashed, ignore_errors=True)


# 6. A device-path model ends with its parent; a lab's outlives it.

CHILD = '''
import json, sys, time
from pathlib import Path
kind, where, preset = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
from sectorlab.devices.server import DeviceServer
if kind == "bench":
    from sectorlab import bench
    from sectorlab.bench.devicepath import runs
    p = bench.load_preset(preset)
    models = runs.Models(where / "results", {"as is": {}}, p.workload.log_size)
    models.target(p.targets[0], "as is")
    servers = list(models.servers.values())
    extra = str(models.work)
elif kind == "crash":  # as crash/run.py starts its model
    servers = [DeviceServer(where / "model", 4 << 20, {}, backing=where / "disk.img")]
    servers[0].start()
    extra = ""
else:  # a lab's model, as lab/modelled.py starts it
    servers = [DeviceServer(where / "lab", 4 << 20, {}, tied_to_parent=False)]
    servers[0].start()
    extra = ""
print(json.dumps({"pids": [s.pid() for s in servers], "sockets": [str(s.socket) for s in servers],
                  "work": extra}), flush=True)
time.sleep(600)
'''


def _accepts(path: str) -> bool:
    with socket.socket(socket.AF_UNIX) as s:
        try:
            s.connect(path)
            return True
        except OSError:
            return False


def _killed_parent(kind: str, where: Path, preset: Path) -> dict:
    """A Python process that starts a model of `kind`, SIGKILLed once it serves: its models."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    child = subprocess.Popen([sys.executable, "-c", CHILD, kind, str(where), str(preset)], cwd=REPO, env=env,
                             stdout=subprocess.PIPE, text=True)
    try:
        started = json.loads(child.stdout.readline())
        assert started["pids"] and all(started["pids"]) and all(map(_accepts, started["sockets"])), started
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()
    return started


def _running(pid: int) -> bool:
    return procs.start_time(pid) is not None


@needs_nbdkit
@pytest.mark.parametrize("kind", ["bench", "crash"])
def test_a_device_path_model_ends_with_its_killed_parent(short_dir, tmp_path, kind):
    preset = tmp_path / "tiny.toml"
    preset.write_text(TINY)
    started = _killed_parent(kind, short_dir, preset)
    try:
        deadline = time.monotonic() + GONE_WITHIN_S
        while any(map(_running, started["pids"])) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(map(_running, started["pids"])), f"nbdkit {started['pids']} outlived its parent"
        assert not any(map(_accepts, started["sockets"]))
    finally:
        for pid in started["pids"]:  # what the old code left behind: the models this test started
            if _running(pid):
                os.kill(pid, signal.SIGTERM)
        if started["work"]:
            shutil.rmtree(started["work"], ignore_errors=True)


@needs_nbdkit
def test_a_labs_model_outlives_the_command_that_started_it(short_dir, tmp_path):
    """The control: lab up starts a lab's models and exits; they serve on (tied_to_parent=False)."""
    assert modelled.server("lab", "disk").tied_to_parent is False
    started = _killed_parent("lab", short_dir, tmp_path / "unused.toml")
    server = DeviceServer(short_dir / "lab", 4 * MIB, {}, tied_to_parent=False)
    try:
        assert server.pid() == started["pids"][0] and _accepts(started["sockets"][0])
        # a daemon, not told to follow its parent: it serves on (the tied ones are given the flag)
        assert b"--exit-with-parent" not in Path(f"/proc/{started['pids'][0]}/cmdline").read_bytes()
    finally:
        assert server.stop()
    assert not _running(started["pids"][0])


@needs_nbdkit
@pytest.mark.parametrize("tied", [True, False], ids=["tied", "daemon"])
def test_a_model_stops_and_leaves_no_zombie(tmp_path, tied):
    server = DeviceServer(tmp_path / "m", 4 * MIB, {}, tied_to_parent=tied)
    server.start()
    pid = server.pid()
    assert pid and _accepts(str(server.socket))
    assert server.stop() and server.pid() is None
    deadline = time.monotonic() + GONE_WITHIN_S
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:  # a zombie has its /proc entry
        time.sleep(0.05)
    assert not Path(f"/proc/{pid}").exists(), f"nbdkit {pid} left a zombie"
    assert server.stop() is False


# 7. --results that is not a directory: one line, before anything runs.

def _nothing_runs(monkeypatch):
    """Every run a command could start answers one line instead: reached only when --results passed."""
    from sectorlab.bench.devicepath import load, sweep
    from sectorlab.crash import devicepath as crash
    from sectorlab.crash import labdb as dbmatrix

    def stub(*args, **kwargs):
        raise UsageError("the run would start here")
    for module, name in ((sweep, "run"), (load, "run"), (bench, "run"), (crash, "run"), (dbmatrix, "run")):
        monkeypatch.setattr(module, name, stub)


COMMANDS = {"bench-sweep": ["bench-sweep", "{R}", "--", "vsphere-512e"],
            "bench-load": ["bench-load", "{R}", "--", "ssd-vs-hdd"],
            "bench": ["bench", "{R}", "vsphere-512e"],
            "crash": ["crash", "{R}", "small"]}
NOT_DIRS = {"README.md": str(REPO / "README.md"), "dev-null": "/dev/null",
            "under-a-file": str(REPO / "README.md" / "x")}


def _argv(command: str, results: str) -> list[str]:
    return [a for arg in COMMANDS[command] for a in (["--results", results] if arg == "{R}" else [arg])]


@pytest.mark.parametrize("command, results", [(c, r) for c in COMMANDS for r in NOT_DIRS] + [("crash-db", "README.md")],
                         ids=[f"{c}-{r}" for c in COMMANDS for r in NOT_DIRS] + ["crash-db-README.md"])
def test_results_that_is_not_a_directory_is_one_line_before_anything_runs(monkeypatch, capsys, command, results):
    _nothing_runs(monkeypatch)
    argv = _argv(command, NOT_DIRS[results]) if command in COMMANDS else ["crash-db", "--results", NOT_DIRS[results]]
    rc, err = run_cli(capsys, argv)
    assert rc == 2 and "--results" in err and "not a directory" in err.lower(), err
    assert "the run would start here" not in err


@pytest.mark.parametrize("command", list(COMMANDS))
def test_results_that_is_a_new_directory_goes_on_to_the_run(monkeypatch, capsys, tmp_path, command):
    """The control: a new name under a directory is taken, and the command reaches its run."""
    _nothing_runs(monkeypatch)
    rc, err = run_cli(capsys, _argv(command, str(tmp_path / "new")))
    assert rc == 2 and "the run would start here" in err, err


@pytest.mark.parametrize("path", [str(REPO / "README.md"), "/dev/null", str(REPO / "README.md" / "x")],
                         ids=["README.md", "dev-null", "under-a-file"])
def test_report_of_what_is_not_a_results_directory_is_one_line(capsys, path):
    rc, err = run_cli(capsys, ["report", path])
    assert rc == 2 and path in err, err


def test_the_bench_presets_are_within_every_bound():
    """Every preset of the project loads with these checks: no bound above is below what they use
    (load_preset refuses a preset past one)."""
    loaded = [bench.load_preset(name) for name in bench.preset_names()]
    assert len(loaded) == len(bench.preset_names()) > 0
