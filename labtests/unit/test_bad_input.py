"""The bad-input campaign: lab definitions, command lines, Make variables and redo-writer options
a user can get wrong. Each is refused with exit status 2 and one line that names the value and
what was expected, before anything starts: no Terraform, no virsh, no image build, no lab state
and no results directory are left behind."""

from __future__ import annotations

import subprocess

import pytest

from labtests.conftest import require_program
from sectorlab import cli, images
from sectorlab import lab as lab_mod
from sectorlab.paths import REPO

VM = '[[vm]]\nname = "lab1"\n'
DISK = '[[vm.disk]]\nbus = "virtio"\ngeometry = "sector512n"\n'

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
    ("unknown-latency", VM + DISK + 'latency = "ssd"\n', "latency = 'ssd'"),
    ("unknown-key", VM + DISK + "sectors = 8\n", "unknown key 'sectors'"),
    ("not-toml", "[[vm]\n", "not valid TOML"),
]


@pytest.fixture
def nothing_starts(monkeypatch, isolated_cache):
    """Whatever would start a lab records that it was called; the test asserts nothing was."""
    touched: list[str] = []
    for module, name in ((lab_mod, "Terraform"), (lab_mod.virsh, "run"), (images, "build")):
        monkeypatch.setattr(module, name, lambda *a, _n=name, **k: touched.append(_n))
    results = sorted((REPO / "results").iterdir()) if (REPO / "results").is_dir() else []
    yield touched
    assert touched == [], f"started: {touched}"
    assert not (isolated_cache / "labs").exists() or not any((isolated_cache / "labs").iterdir())
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
    subprocess.run(["make", "-s", "-C", str(REPO / "redo-writer")], check=True, capture_output=True)
    target = [] if args == [] else ["--target", str(tmp_path / "r.log")]
    proc = subprocess.run([str(REPO / "redo-writer" / "redo-writer"), "run", *target, *args], capture_output=True,
                          text=True, timeout=60)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and says in lines[0], proc.stderr
    assert not (tmp_path / "r.log").exists(), "a refused run left its log file"


def test_the_campaign_has_at_least_25_inputs():
    assert len(LAB_FILES) + len(COMMANDS) + len(MAKE) + len(REDO_WRITER) >= 25
