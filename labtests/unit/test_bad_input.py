"""The bad-input campaign: lab definitions, command lines, Make variables and redo-writer options
a user can get wrong. Each is refused with exit status 2 and one line that names the value and
what was expected, before anything starts: no Terraform, no virsh, no image build, no lab state
and no results directory are left behind."""

from __future__ import annotations

import json
import os
import random
import subprocess
from pathlib import Path

import pytest
import tomllib

from labtests.conftest import require_program
from sectorlab import cli, images, labdef
from sectorlab import lab as lab_mod
from sectorlab.devices import build
from sectorlab.errors import UsageError
from sectorlab.host import libvirt
from sectorlab.lab import hostcheck
from sectorlab.paths import REPO

VM = '[[vm]]\nname = "lab1"\n'
DISK = '[[vm.disk]]\nbus = "virtio"\ngeometry = "sector512n"\n'


def _disks(bus: str, n: int) -> str:
    return "".join(f'[[vm.disk]]\nname = "d{i}"\nbus = "{bus}"\ngeometry = "sector512n"\n' for i in range(n))


# (id, lab definition text, what the one line must contain)
LAB_FILES = [
    ("empty", "", "no [[vm]]: expected at least one VM"),
    ("huge-memory", VM + "memory_mib = 1000000000\n" + DISK, "memory_mib = 1000000000"),
    ("negative-size", VM + DISK + "size_mib = -1\n", "size_mib = -1"),
    ("non-numeric-memory", VM + 'memory_mib = "lots"\n' + DISK, "memory_mib = 'lots'"),
    ("float-size", VM + DISK + "size_mib = 1.5\n", "size_mib = 1.5"),
    ("unicode-lab-name", '[lab]\nname = "läb"\n' + VM + DISK, "'läb'"),
    ("disk-name-with-space", VM + DISK + 'name = "my disk"\n', "'my disk'"),
    ("disk-not-a-table", VM + 'disk = "nvme0n1"\n', "disk"),
    ("duplicate-vm", VM + DISK + VM + DISK, "duplicate VM name 'lab1'"),
    ("duplicate-disk", VM + DISK + 'name = "d"\n' + DISK + 'name = "d"\n', "'d'"),
    ("unknown-geometry", VM + '[[vm.disk]]\nbus = "virtio"\ngeometry = "sector8k"\n', "'sector8k'"),
    ("unknown-bus", VM + '[[vm.disk]]\nbus = "ide"\ngeometry = "sector512n"\n', "'ide'"),
    ("privileged-port", VM + "ssh_port = 80\n" + DISK, "ssh_port = 80"),
    ("port-out-of-range", VM + "ssh_port = 70000\n" + DISK, "ssh_port = 70000"),
    ("bad-uri", '[lab]\nlibvirt_uri = "http://host/"\n' + VM + DISK, "http://host/"),
    ("remote-uri-not-ssh", '[lab]\nlibvirt_uri = "qemu+tcp://labhost/system"\n' + VM + DISK, "qemu+ssh:// only"),
    ("remote-uri-missing-key", '[lab]\nlibvirt_uri = "qemu+ssh://labhost/system?keyfile=/no/such/key"\n' + VM
     + DISK, "keyfile='/no/such/key' is not a file"),
    ("geometry-not-power-of-two", '[geometry.odd]\nlogical_block_size = 1000\nphysical_block_size = 4096\n'
     + VM + '[[vm.disk]]\nbus = "virtio"\ngeometry = "odd"\n', "1000"),
    ("min-io-not-a-multiple", '[geometry.qlc]\nlogical_block_size = 4096\nphysical_block_size = 4096\n'
     'min_io_size = 6144\n' + VM + '[[vm.disk]]\nbus = "virtio"\ngeometry = "qlc"\n',
     "min_io_size = 6144: expected a multiple of the logical sector (4096)"),
    ("physical-above-64k", '[geometry.big]\nlogical_block_size = 4096\nphysical_block_size = 131072\n'
     + VM + '[[vm.disk]]\nbus = "scsi"\ngeometry = "big"\n', "physical_block_size = 131072"),
    ("logical-above-physical", '[geometry.odd]\nlogical_block_size = 4096\nphysical_block_size = 512\n'
     + VM + '[[vm.disk]]\nbus = "scsi"\ngeometry = "odd"\n', "logical_block_size 4096 > physical_block_size 512"),
    ("io-sizes-on-nvme", VM + '[[vm.disk]]\nbus = "nvme"\ngeometry = "sector4k-iu16k"\n',
     "bus 'nvme' cannot present sector4k-iu16k"),
    ("retired-latency", VM + DISK + 'latency = "hdd-7200"\n',
     "latency = 'hdd-7200': dm-delay in the guest is retired"),
    ("retired-write-latency", VM + DISK + 'write_latency_us = 4000\n',
     "write_latency_us = 4000: dm-delay in the guest is retired"),
    ("unknown-key", VM + DISK + "sectors = 8\n", "unknown key 'sectors'"),
    ("not-toml", "[[vm]\n", "not valid TOML"),
    # What one VM's machine takes (labdef.layout_problem) and what a lab may hold.
    ("eight-scsi-disks", VM + _disks("scsi", 8), "8 scsi disks: at most 7 per VM"),
    ("eighteen-virtio-disks", VM + _disks("virtio", 18), "18 virtio and 0 nvme-tcp disks need 22 PCI slots"),
    ("nine-nvme-disks", VM + _disks("nvme", 9), "9 nvme disks: at most 8"),
    ("seventeen-vms", "".join(f'[[vm]]\nname = "v{i}"\n' + DISK for i in range(17)),
     "17 [[vm]] tables: a lab has at most 16 VMs"),
    # Model-served disks (device = PROFILE; docs/device-models.md).
    ("unknown-device", VM + DISK + 'device = "ssd9000"\n', "device = 'ssd9000': not a device profile of the catalog"),
    ("device-on-a-remote-host", '[lab]\nlibvirt_uri = "qemu+ssh://h/system"\n' + VM + DISK + 'device = "hdd-15k"\n',
     "device = ... on libvirt_uri qemu+ssh://h/system: a device model is served by nbdkit on the host QEMU runs on"),
    ("retired-rmw", VM + '[[vm.disk]]\nbus = "virtio"\ngeometry = "sector512e"\nrmw = true\n',
     "rmw = true: QEMU's paced read-modify-write reads are retired"),
    ("device-remote", '[lab]\nlibvirt_uri = "qemu+ssh://labhost/system"\n' + VM + DISK + 'device = "floor"\n',
     "device = ... on libvirt_uri qemu+ssh://labhost/system: a device model is served by nbdkit"),
]


class _Touched(list):
    """What would have started a lab; `allowed`: the files a refusal may leave in the labs folder."""
    allowed: tuple[str, ...] = ()


@pytest.fixture
def nothing_starts(monkeypatch, isolated_cache):
    """Whatever would start a lab records that it was called; the test asserts nothing was."""
    touched = _Touched()
    for module, name in ((lab_mod.terraform, "Terraform"), (libvirt.LibvirtHost, "virsh"), (images, "build")):
        monkeypatch.setattr(module, name, lambda *a, _n=name, **k: touched.append(_n))
    results = sorted((REPO / "results").iterdir()) if (REPO / "results").is_dir() else []
    yield touched
    assert touched == [], f"started: {touched}"
    # Refused before the lab's lock (the definition itself): nothing at all. Refused by the host's
    # checks, which run under it: its empty lock file, which stays by design (docs/reliability.md).
    labs = isolated_cache / "labs"
    allowed = set(getattr(touched, "allowed", ()))
    assert not labs.exists() or sorted(p.name for p in labs.iterdir() if p.name not in allowed) == []
    assert (sorted((REPO / "results").iterdir()) if (REPO / "results").is_dir() else []) == results


def _one_line(capsys) -> str:
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert captured.out == "" and err and "\n" not in err, f"expected one line on stderr, got {err!r}"
    return err


@pytest.mark.parametrize("text, says", [c[1:] for c in LAB_FILES], ids=[c[0] for c in LAB_FILES])
def test_bad_lab_definition(tmp_path, nothing_starts, capsys, text, says):
    path = tmp_path / "my labs" / "bad.toml"  # a path with a space
    path.parent.mkdir()
    path.write_text(text)
    assert cli.main(["lab", "up", "--lab", str(path)]) == 2
    line = _one_line(capsys)
    assert line.startswith("sectorlab: error: ") and str(path) in line and says in line, line


# (id, command line, what the one line must contain)
COMMANDS = [
    ("missing-lab-file", ["lab", "up", "--lab", "/nonexistent/x.toml"], "/nonexistent/x.toml"),
    ("missing-lab-file-with-space", ["lab", "validate", "/tmp/no such dir/x.toml"], "/tmp/no such dir/x.toml"),
    ("unknown-command", ["labup"], "invalid choice: 'labup'"),
    ("unknown-option", ["lab", "up", "--fast"], "unrecognized arguments: --fast"),
    ("unknown-preset", ["bench", "p3700"], "unknown preset 'p3700'"),
    ("bench-duration-zero", ["bench", "--duration", "0"], "duration_s (DURATION) = 0"),
    ("bench-duration-text", ["bench", "--duration", "abc"], "invalid int value: 'abc'"),
    ("bench-repeats-huge", ["bench", "--repeats", "100"], "repeats = 100"),
    ("report-of-nothing", ["report", "/nonexistent/results"], "no bench.json"),
    ("compare-missing-file", ["compare", "/nonexistent/a.json", "/nonexistent/b.json"], "/nonexistent/a.json"),
    ("unknown-guest", ["image", "path", "--guest", "windows"], "unknown guest 'windows'"),
    ("plot-missing-events", ["plot", "/nonexistent/lat.csv"], "/nonexistent/lat.csv: No such file"),
]


@pytest.mark.parametrize("argv, says", [c[1:] for c in COMMANDS], ids=[c[0] for c in COMMANDS])
def test_bad_command_line(nothing_starts, capsys, argv, says):
    try:
        status = cli.main(argv)
    except SystemExit as e:  # argparse
        status = e.code
    assert status == 2
    line = _one_line(capsys)
    assert says in line, line


# Make variables reach the command line: one line from sectorlab, make's own status 2.
MAKE = [
    ("make-bench-duration", ["bench", "DURATION=abc"], "invalid int value: 'abc'"),
    ("make-bench-preset", ["bench", "PRESET=nosuch"], "unknown preset 'nosuch'"),
    ("make-lab-up-missing-lab", ["lab-status", "LAB=/nonexistent/lab.toml"], "/nonexistent/lab.toml"),
    ("make-lab-suffix", ["lab-status", "LAB_SUFFIX=job2"], "SECTORLAB_LAB_SUFFIX='job2'"),
    ("make-image-unknown-guest", ["image", "GUEST=oraclelinux7"], "unknown guest 'oraclelinux7'"),
]


@pytest.mark.parametrize("args, says", [c[1:] for c in MAKE], ids=[c[0] for c in MAKE])
def test_bad_make_variable(args, says):
    # The project's own cache (make runs scripts/bootstrap, which an empty cache would make build
    # the provider); the refusal comes before anything uses it.
    before = sorted((REPO / "results").iterdir()) if (REPO / "results").is_dir() else []
    proc = subprocess.run(["make", "--no-print-directory", "-s", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=300)
    ours = [line for line in proc.stderr.splitlines() if line.startswith("sectorlab")]
    assert proc.returncode == 2, proc.stderr
    assert len(ours) == 1 and says in ours[0], proc.stderr
    assert (sorted((REPO / "results").iterdir()) if (REPO / "results").is_dir() else []) == before


REDO_WRITER = [
    ("blocksize", ["--blocksize", "2048"], "2048"),
    ("sessions-zero", ["--sessions", "0"], "--sessions"),
    ("duration-text", ["--duration", "abc"], "abc"),
    ("no-target", [], "--target"),
]


@pytest.mark.parametrize("args, says", [c[1:] for c in REDO_WRITER], ids=[c[0] for c in REDO_WRITER])
def test_bad_redo_writer_option(tmp_path, args, says):
    require_program("cc")
    target = [] if args == [] else ["--target", str(tmp_path / "r.log")]
    proc = subprocess.run([str(build.built(build.REDO_WRITER)), "run", *target, *args], capture_output=True,
                          text=True, timeout=60)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and says in lines[0], proc.stderr
    assert not (tmp_path / "r.log").exists(), "a refused run left its log file"


# Files that are not what they should be, handed to every command that reads one: each is refused
# before more than its bound is read (sectorlab/inputs.py), and /dev/zero is not read without end.
def _input_file(kind: str, tmp_path: Path) -> Path:
    path = tmp_path / "in put" / f"{kind}.toml"
    path.parent.mkdir()
    if kind == "dev-zero":
        return Path("/dev/zero")
    if kind == "fifo":
        os.mkfifo(path)  # nobody writes to it: reading would wait for ever
    elif kind == "directory":
        path.mkdir()
    elif kind == "random-50mb":
        path.write_bytes(random.Random(29).randbytes(50 << 20))
    elif kind == "not-utf8":
        path.write_bytes(b'[lab]\nname = "caf\xe9"\n')  # Latin-1
    elif kind == "sparse-2gib":
        with open(path, "wb") as f:
            f.truncate(2 << 30)
    return path


FILE_KINDS = [("dev-zero", "a character device; expected a regular file"), ("fifo", "a FIFO; expected"),
              ("directory", "a directory; expected"), ("not-utf8", "not UTF-8 text (byte 0xe9 at offset 17, line 2)"),
              ("sparse-2gib", "2,048.0 MiB, over the")]
READERS = [("lab-up", ["lab", "up", "--lab"]), ("lab-validate", ["lab", "validate", "--offline"]),
           ("bench-preset", ["bench"]), ("from-host", ["lab", "from-host"])]


@pytest.mark.parametrize("kind, says", FILE_KINDS, ids=[k for k, _ in FILE_KINDS])
@pytest.mark.parametrize("argv", [r for _, r in READERS], ids=[n for n, _ in READERS])
def test_a_file_that_is_not_a_bounded_text_file(tmp_path, nothing_starts, capsys, kind, says, argv):
    path = _input_file(kind, tmp_path)
    assert cli.main([*argv, str(path)]) == 2
    line = _one_line(capsys)
    assert str(path) in line and says in line, line


def test_a_lab_definition_of_50_mb_of_random_bytes(tmp_path, nothing_starts, capsys):
    path = _input_file("random-50mb", tmp_path)
    assert cli.main(["lab", "validate", "--offline", str(path)]) == 2
    assert "50.0 MiB, over the 1.0 MiB such a file can be" in _one_line(capsys)
    # A collector file may be larger (64 MiB): these bytes are read, and are not UTF-8.
    assert cli.main(["lab", "from-host", str(path)]) == 2
    assert "not UTF-8 text" in _one_line(capsys)


def test_a_collector_file_of_10000_disks_writes_no_lab(tmp_path, nothing_starts, capsys):
    disk = {"name": "sda", "log-sec": 512, "phy-sec": 4096, "min-io": 4096, "opt-io": 0, "alignment": 0,
            "size": 1 << 40, "rota": False, "tran": "sas", "model": "X"}
    collector = tmp_path / "big.json"
    collector.write_text(json.dumps({"blockdevices": [{**disk, "name": f"sd{i}"} for i in range(10000)]}))
    out = tmp_path / "big-lab.toml"
    assert cli.main(["lab", "from-host", str(collector), "-o", str(out)]) == 2
    line = _one_line(capsys)
    assert "its 10000 disks would need 1429 lab VMs, and a lab has at most 16" in line, line
    assert not out.exists()


def test_a_report_reads_only_its_own_results_directory(tmp_path, nothing_starts, capsys):
    results = tmp_path / "results" / "r1"
    results.mkdir(parents=True)
    run = {"disk": "d", "blocksize": 512, "verdict": {"allowed": True}}
    for i, (field, name, says) in enumerate([("report", "../../../../../etc/passwd", "leads out of"),
                                             ("report", "/etc/passwd", "expected a file name relative to"),
                                             ("events", "../outside.csv", "leads out of")]):
        entry = {**run, "report": "ok.json"} if field == "events" else {**run, field: name}
        if field == "events":
            entry["events"] = name
            (results / "ok.json").write_text(json.dumps({"log_file_sync": {}, "writes": {}}))
        (results / "bench.json").write_text(json.dumps({"runs": [entry]}))
        assert cli.main(["report", str(results)]) == 2, i
        line = _one_line(capsys)
        assert says in line and name in line, line
    (results / "bench.json").unlink()
    os.mkfifo(results / "bench.json")
    assert cli.main(["report", str(results)]) == 2
    assert "a FIFO; expected a regular file" in _one_line(capsys)


# What depends on the libvirt host, checked before anything of the lab is made (this host made
# small: 10 GiB free where the volumes go, 8 GiB of memory).
HOST_BOUNDS = [
    ("disks-beyond-half-the-memory", VM + _disks("virtio", 3).replace('geometry = "sector512n"\n',
                                                                        'geometry = "sector512n"\nsize_mib = 1536\n'),
     "its 3 model-served disks take 4608 MiB in RAM if written through, more than 50% of this host's 8192 MiB; "
     "make them smaller (size_mib)"),
    ("memory-beyond-the-host", VM + "memory_mib = 9216\n" + DISK,
     "its VMs' memory adds up to 9216 MiB, more than the 8192 MiB of the libvirt host"),
]


@pytest.mark.parametrize("text, says", [c[1:] for c in HOST_BOUNDS], ids=[c[0] for c in HOST_BOUNDS])
def test_a_lab_the_host_cannot_hold(tmp_path, nothing_starts, capsys, monkeypatch, text, says):
    nothing_starts.allowed = (".lock-default",)  # these checks run under the lab's lock
    monkeypatch.setattr(hostcheck, "check_uri", lambda uri: None)
    monkeypatch.setattr(libvirt.LocalHost, "space", lambda self, path: (10 << 30, 0))
    monkeypatch.setattr(libvirt.LocalHost, "memory_bytes", lambda self: 8 << 30)
    path = tmp_path / "lab.toml"
    path.write_text(text)
    assert cli.main(["lab", "up", "--lab", str(path)]) == 2
    line = _one_line(capsys)
    assert says in line, line


def test_a_remote_labs_volumes_beyond_its_free_space_are_refused(monkeypatch):
    """On a remote libvirt host the data disks are qcow2 volumes of the lab's pool (no device model):
    their full size must fit the free space there."""
    class Far:
        remote, label = True, "h"

        def space(self, path):
            return 10 << 30, 0

        def memory_bytes(self):
            return 8 << 30

    monkeypatch.setattr(libvirt, "get_host", lambda uri: Far())
    disks = _disks("virtio", 3).replace('geometry = "sector512n"\n', 'geometry = "sector512n"\nsize_mib = 4096\n')
    lab = labdef.validate(tomllib.loads('[lab]\nlibvirt_uri = "qemu+ssh://h/system"\n' + VM + disks))
    with pytest.raises(UsageError, match=r"its data disks add up to 12.0 GiB, and /p/default on h has 10.0 GiB free"):
        hostcheck.check_capacity(lab, lambda name: f"/p/{name}")


EVENTS = [("not-a-number", b"event,end_us,latency_us\nlog_file_sync,1.0,fast\n", "line 2: could not convert"),
          ("short-row", b"event,end_us,latency_us\nlog_file_sync,1.0\n", "line 2: not enough values"),
          ("latin-1", b"event,end_us,latency_us\nlog_file_sync,1.0,2.0\ncaf\xe9,1,2\n", "'utf-8' codec")]


@pytest.mark.parametrize("text, says", [c[1:] for c in EVENTS], ids=[c[0] for c in EVENTS])
def test_an_events_file_that_is_not_one(tmp_path, nothing_starts, capsys, text, says):
    path = tmp_path / "lat.csv"
    path.write_bytes(text)
    assert cli.main(["plot", str(path)]) == 2
    line = _one_line(capsys)
    assert str(path) in line and says in line and "expected event,end_us,latency_us" in line, line


def test_a_bench_json_of_other_shapes(tmp_path, nothing_starts, capsys):
    results = tmp_path / "r"
    results.mkdir()
    run = {"disk": "d", "blocksize": 512, "verdict": {"allowed": False}}
    for entry, says in [({**run, "report": "a\0b.json"}, "expected a file name relative to"),
                        ({**run, "blocksize": "x"}, "blocksize 'x'"), ({**run, "verdict": "no"}, "verdict 'no'")]:
        (results / "bench.json").write_text(json.dumps({"runs": [entry]}))
        assert cli.main(["report", str(results)]) == 2
        line = _one_line(capsys)
        assert says in line, line


def test_a_report_inlines_only_its_own_pictures(tmp_path):
    from sectorlab.report import render
    results = tmp_path / "r"
    results.mkdir()
    (tmp_path / "secret.png").write_bytes(b"not for the report")
    (results / "report-d.png").write_bytes(b"\x89PNG drawn")
    page = render.html('# t\n\n<img src="../secret.png"> <img src="/etc/passwd.png"> ![d](report-d.png)\n', results)
    assert 'src="../secret.png"' in page and 'src="/etc/passwd.png"' in page  # left as text, not read
    assert "data:image/png;base64,iVBORyBkcmF3bg==" in page


def test_the_campaign_has_at_least_25_inputs():
    assert len(LAB_FILES) + len(COMMANDS) + len(MAKE) + len(REDO_WRITER) >= 25


@pytest.mark.parametrize("command", [["bench", "--list"], ["geometries"]], ids=["listing", "catalog"])
def test_a_closed_stdout_stops_the_cli_quietly(command):
    """`sectorlab bench --list | head -1`: the reader gone before the output is written (its end of
    the pipe closed at once, before the interpreter has started) ends the command with the status a
    shell tool has on SIGPIPE and nothing on stderr, not a BrokenPipeError traceback; also for an
    output short enough to sit in stdout's buffer until the end."""
    proc = subprocess.Popen([str(REPO / ".venv" / "bin" / "sectorlab"), *command], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 141 and err == "", (proc.returncode, err)


def test_a_broken_pipe_that_is_not_stdout_is_not_hidden(monkeypatch):
    """A BrokenPipeError from anything else (a guest's SSH channel) is raised, not taken for a reader
    of stdout that went away."""
    import argparse
    monkeypatch.setattr(cli, "build_parser", lambda: argparse.ArgumentParser())

    def broken(args):
        raise BrokenPipeError(32, "Broken pipe")
    monkeypatch.setattr(argparse.Namespace, "func", staticmethod(broken), raising=False)
    with pytest.raises(BrokenPipeError):
        cli.main([])
