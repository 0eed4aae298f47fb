"""`sectorlab lab from-host`: saved collector files of several shapes (labtests/unit/data/from-host/)
become lab definitions that load, with each disk's bus, geometry and device model as its transport,
sectors and ROTA say, and everything the lab cannot present listed by disk; bad files are one line,
exit 2, nothing written. scripts/collect-host-geometry runs on this host and its output converts."""

from __future__ import annotations

import json
import subprocess

import pytest
import tomllib

from sectorlab import cli, labdef
from sectorlab.errors import UsageError
from sectorlab.labdef import fromhost
from sectorlab.paths import REPO

DATA = REPO / "labtests" / "unit" / "data" / "from-host"


def _convert(tmp_path, name: str, *extra: str):
    out = tmp_path / "prod-db1.toml"
    rc = cli.main(["lab", "from-host", str(DATA / name), "-o", str(out), *extra])
    return rc, out


def test_a_collector_file_becomes_a_lab_that_loads(tmp_path, capsys):
    rc, out = _convert(tmp_path, "collector-db-server.json", "--size-mib", "128")
    assert rc == 0
    err = capsys.readouterr().err
    lab = labdef.load(out)
    assert lab.name == "prod-db1"
    disks = {d.name: d for _, d in lab.disks()}
    seen = {n: (d.bus, d.geometry.name, d.geometry.logical_block_size, d.geometry.physical_block_size,
                d.device, d.size_mib) for n, d in disks.items()}
    assert seen == {
        "nvme-nvme0n1": ("nvme", "sector512n", 512, 512, None, 128),
        "nvme-nvme1n1": ("nvme", "sector4k", 4096, 4096, None, 128),
        "virtio-nvme2n1": ("virtio", "host-4096-4096-min16k-opt128k", 4096, 4096, None, 128),
        "scsi-sda": ("scsi", "sector512e", 512, 4096, "hdd-7200", 128),
        "scsi-sdb": ("scsi", "sector512e", 512, 4096, None, 128),
        "scsi-sdc": ("scsi", "sector4k-p16k", 4096, 16384, None, 128),
        "nvme-tcp-nvme3n1": ("nvme-tcp", "sector512e", 512, 4096, None, 128),
    }, seen
    text = out.read_text()
    # What the lab cannot present is listed in the file and said on stderr, by disk.
    for disk, says in [("loop0", "not a disk"), ("dm-0", "not a disk"), ("sr0", "not a disk"),
                       ("nvme2n1", "minimum I/O 16384, optimal I/O 131072: on bus virtio"),
                       ("sdb", "alignment offset 3584 B"), ("sdd", "logical sector 8192 B"),
                       ("nvme3n1", "on bus nvme-tcp")]:
        assert any(line.startswith(f"# - {disk}: ") and says in line for line in text.splitlines()), (disk, text)
        assert f"not as on the source: {disk}: " in err, (disk, err)
    assert "# nvme0n1: INTEL SSDPEDMD016T4, nvme, 512/512 B sectors" in text
    assert "its LBA formats offer 512 and 4096 B data (in use: 4096 B)" in text
    assert f"make lab-up LAB={out}" in err


def test_lsblk_json_of_an_older_util_linux_with_strings_converts(tmp_path):
    rc, out = _convert(tmp_path, "lsblk-strings.json")
    assert rc == 0
    disks = {d.name: d for _, d in labdef.load(out).disks()}
    assert (disks["scsi-sda"].geometry.name, disks["scsi-sda"].device) == ("sector512n", "hdd-7200")
    assert '# device hdd-7200: ROTA=1' in out.read_text() and 'device = "hdd-7200"' in out.read_text()
    assert disks["scsi-sdb"].geometry.name == "sector512e" and disks["scsi-sdb"].size_mib == 256


@pytest.mark.parametrize("name, says", [
    ("not-json.txt", "not JSON"),
    ("lacks-columns.json", "device 'sda' lacks the column(s) min-io, opt-io, alignment, rota, tran, model"),
    ("no-disks.json", "no whole disk in it (loop0: not a disk"),
    ("empty.json", "no whole disk in it"),
    ("missing.json", "No such file or directory"),
])
def test_a_bad_collector_file_is_one_line_and_nothing_is_written(tmp_path, capsys, name, says):
    out = tmp_path / "prod-db1.toml"
    proc = subprocess.run([str(REPO / ".venv" / "bin" / "sectorlab"), "lab", "from-host", str(DATA / name),
                           "-o", str(out)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and str(DATA / name) in lines[0], proc.stderr
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_an_existing_output_is_not_replaced_without_force(tmp_path, capsys):
    out = tmp_path / "prod-db1.toml"
    out.write_text("mine\n")
    assert cli.main(["lab", "from-host", str(DATA / "lsblk-strings.json"), "-o", str(out)]) == 2
    assert "the file exists; choose another name or add --force" in capsys.readouterr().err
    assert out.read_text() == "mine\n"
    assert cli.main(["lab", "from-host", str(DATA / "lsblk-strings.json"), "-o", str(out), "--force"]) == 0
    assert labdef.load(out).name == "prod-db1"


@pytest.mark.parametrize("value", ["{}", '{"blockdevices": "sda"}', '{"blockdevices": [7]}',
                                   '{"blockdevices": [{"name": "sda", "log-sec": "x"}]}'])
def test_shapes_that_are_not_lsblk_are_refused(tmp_path, value):
    path = tmp_path / "f.json"
    path.write_text(value)
    with pytest.raises(UsageError) as e:
        fromhost.read(path)
    assert str(path) in str(e.value) and "\n" not in str(e.value)


def test_the_collector_runs_here_and_its_file_converts(tmp_path):
    out = tmp_path / "host.json"
    proc = subprocess.run([str(REPO / "scripts" / "collect-host-geometry"), "-o", str(out)], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert data["collector"] == "sectorlab collect-host-geometry" and data["lsblk"]["blockdevices"]
    assert set(fromhost.COLUMNS) <= set(data["lsblk"]["blockdevices"][0])
    try:
        disks, skipped = fromhost.read(out)
    except UsageError as e:  # a host with no whole disk (a container) says so in one line
        assert "no whole disk" in str(e)
        return
    plan = fromhost.plan(disks, skipped, out.name, "this-host", 64)
    assert plan.disks >= 1 and labdef.validate(tomllib.loads(plan.toml)).name == "this-host"


def test_io_sizes_the_lab_cannot_present_are_listed_and_dropped(tmp_path):
    """A minimum I/O that is not a multiple of the logical sector: the disk comes with its sectors
    only, and the file says why (the lab definition's own check, by its words)."""
    path = tmp_path / "odd.json"
    path.write_text(json.dumps({"blockdevices": [
        {"name": "sda", "log-sec": 4096, "phy-sec": 4096, "min-io": 6144, "opt-io": 0, "alignment": 0,
         "size": 1 << 30, "rota": False, "tran": "sas", "model": "odd"}]}))
    disks, skipped = fromhost.read(path)
    plan = fromhost.plan(disks, skipped, path.name, "odd", 64)
    lab = labdef.validate(tomllib.loads(plan.toml))
    g = next(d for _, d in lab.disks()).geometry
    assert (g.name, g.min_io_size, g.opt_io_size) == ("sector4k", 0, 0)
    assert any(n.startswith("sda: minimum I/O 6144 B, optimal I/O 0 B: not reproduced (min_io_size = 6144: "
                            "expected a multiple of the logical sector (4096)") for n in plan.not_reproduced), \
        plan.not_reproduced
