"""The storage-appliance preset (seed 004, sectorlab/bench/appliance.py): what is refused before any
lab starts, one line each, and the report's arithmetic (no VM)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sectorlab import bench
from sectorlab.bench.appliance import preset as appliance
from sectorlab.bench.appliance import run as appliancerun
from sectorlab.errors import UsageError
from sectorlab.report import appliance as appliancereport

PRESET = Path(bench.PRESETS_DIR) / "zfs-appliance.toml"


def _with(old: str, new: str) -> str:
    text = PRESET.read_text()
    assert old in text, old
    return text.replace(old, new, 1)


def test_the_seed_004_preset_loads_with_the_seeds_shares_and_rounds():
    p = bench.load_preset("zfs-appliance")
    assert p.kind == "appliance" and p.seed == "004" and p.lab.vms[0].guest == appliance.ZFS_GUEST
    seed_rows = {s.name: s.properties for s in p.shares if s.seed_row}
    # The seed's table: DATAFILES latency (or throughput), 8K, all, LZJB; INDIZES latency, 8K, all, off;
    # CONTROLFILES latency, 128k, all, LZJB.
    assert seed_rows["INDIZES"] == {"logbias": "latency", "recordsize": "8K", "primarycache": "all",
                                    "compression": "off"}
    assert seed_rows["CONTROLFILES"]["recordsize"] == "128K"
    assert {seed_rows[n]["logbias"] for n in ("DATAFILES", "DATAFILES (throughput)")} == {"latency", "throughput"}
    assert (p.pool.data_layout, p.pool.log_layout) == ("mirror", "striped")
    assert "rsize=1048576" in p.mount and "vers=3" in p.mount
    order = p.order(7)
    assert order == p.order(7) and len(order) == p.repeats * len(p.shares)
    for r in range(p.repeats):
        assert sorted(s.name for s, _ in order[r * len(p.shares):(r + 1) * len(p.shares)]) == \
            sorted(s.name for s in p.shares)


def test_the_pools_words_for_zpool_create():
    p = bench.load_preset("zfs-appliance").pool
    paths = {"disk-a": "/dev/vdb", "disk-b": "/dev/vdc", "ssd-a": "/dev/vdd", "ssd-b": "/dev/vde"}
    assert p.vdevs(paths) == ["mirror", "/dev/vdb", "/dev/vdc", "log", "/dev/vdd", "/dev/vde"]
    assert p.vdevs(paths, "mirror") == ["mirror", "/dev/vdb", "/dev/vdc", "log", "mirror", "/dev/vdd", "/dev/vde"]
    assert p.vdevs(paths, "none") == ["mirror", "/dev/vdb", "/dev/vdc"] and p.disks("none") == ("disk-a", "disk-b")


@pytest.mark.parametrize("old, new, message", [
    ('recordsize = "8K", primarycache = "all", compression = "off"',
     'recsize = "8K", primarycache = "all", compresion = "off"', r"unknown ZFS property 'compresion'"),
    ('logbias = "latency", recordsize = "128K", primarycache = "metadata"',
     'logbias = "latency", mountpoint = "/x", primarycache = "metadata"', r"property 'mountpoint' is the bench's own"),
    ('data_layout = "mirror"', 'data_layout = "raidz"', r"data_layout = 'raidz': expected one of stripe, mirror"),
    ('data = ["disk-a", "disk-b"]', 'data = ["disk-a"]', r"data_layout = \"mirror\" with 1 disk: a mirror needs two"),
    ('data = ["disk-a", "disk-b"]', 'data = ["disk-a", "ssd-a"]', r"disk 'ssd-a' is named twice in data and log"),
    ('data = ["disk-a", "disk-b"]', 'data = ["disk-a", "disk-c"]', r"data names disk 'disk-c', which the VM does not"),
    ('log_layout = "striped"', 'log_layout = "striped"\nashift = 9',
     r"ashift = 9 \(512-byte blocks\) on disk 'ssd-a', whose logical sector is 4096 B"),
    ('log_layout = "striped"', 'log_layout = "striped"\nashift = 17',
     r"ashift = 17: expected at least 9 and at most 16"),
    ('log = ["ssd-a", "ssd-b"]', 'log = ["ssd-a"]',
     r"\[\[appliance.share\]\] #6: log_layout = 'mirror' but the pool has 1 log disk"),
    ('mount = "rw,', 'mount = "addr=10.0.0.1,rw,', r"mount option 'addr=10.0.0.1': the share is mounted from .*127"),
    ('mount = "rw,', 'mount = "rw;x,', r"mount option 'rw;x': expected NAME or NAME=VALUE"),
    ('mount = "rw,', 'mount = "ro,', r"mount option 'ro': every run writes to the share"),
    ('mount = "rw,', 'mount = "mounthost=x,', r"mount option 'mounthost=x': the share is mounted from"),
    ('size = 8192', 'size = 1000', r"size = 1000: expected a multiple of 512"),
    ('workload = "controlfile"\nproperties', 'workload = "cf"\nproperties',
     r"workload = 'cf': expected one of datafile"),
    ('name = "zfs1"\nguest = "debian12-zfs"', 'name = "zfs1"\nguest = "debian12"',
     r"runs on one VM with guest = \"debian12-zfs\""),
    ('[appliance]\n', '[bench]\n[appliance]\n', r"both \[bench\] and \[appliance\]"),
    ('compressible = 0', 'compressible = 101', r"compressible = 101: expected at least 0 and at most 100"),
])
def test_a_bad_appliance_preset_is_one_line_naming_the_value(tmp_path, old, new, message):
    path = tmp_path / "x.toml"
    path.write_text(_with(old, new))
    with pytest.raises(UsageError, match=message) as e:
        bench.load_preset(str(path))
    assert "\n" not in str(e.value)


def test_duration_does_not_apply_to_an_appliance_preset():
    with pytest.raises(UsageError, match=r"DURATION does not apply to an \[appliance\] preset"):
        bench.load_preset("zfs-appliance", duration_s=5)


MOUNTSTATS = """device proc mounted on /proc with fstype proc
device 127.0.0.1:/sl-appl/datafiles mounted on /mnt/sl-appl with fstype nfs statvers=1.1
\topts:\trw,vers=3,rsize=131072,wsize=131072,namlen=255,acregmin=3,hard,proto=tcp,timeo=600,retrans=2,sec=sys
\tbytes:\t0 0 0 1638401 0 1638400 0 0
\tper-op statistics
\t        NULL: 1 1 0 44 24 0 0 0 0
\t       WRITE: 200 201 0 1672000 34400 10 4000 4100 0
\t      COMMIT: 3 3 0 420 312 0 6 7 0
"""


def test_mountstats_gives_the_granted_options_and_the_write_operations():
    s = appliancerun.mountstats(MOUNTSTATS, "/mnt/sl-appl")
    assert (s["opts"]["vers"], s["opts"]["wsize"], "hard" in s["opts"]) == ("3", "131072", True)
    assert s["ops"]["WRITE"] == (200, 1672000, 34400) and s["written"] == 1638400
    before = {"ops": {"WRITE": (0, 0, 0)}, "written": 0}
    assert appliancerun.nfs_delta(before, s) == {"write_ops": 200, "commit_ops": 3, "read_ops": 0,
                                                 "write_bytes": 1638400}


def _run(share: str, data_writes: int, log_writes: int) -> dict:
    row = lambda w, r, m: {"write": {"count": w, "bytes_per_request": 4096.0, "rmw_reads": m, "unit_reads": 0},  # noqa
                           "read": {"count": r, "bytes_per_request": 131072.0 if r else 0, "rmw_reads": 0,
                                    "unit_reads": 0}}
    # 100 writes timed 1 ms .. 100 ms: p50 50.5 ms, p99 the 99th, 99 ms (not the maximum)
    return {"share": share, "repeat": 1, "latency_us": [1000.0 * i for i in range(100, 0, -1)],
            "granted": {"vers": "3"}, "nfs": {"write_ops": 4, "commit_ops": 2, "read_ops": 0, "write_bytes": 4 * 8192},
            "devices": {"disk-a": row(data_writes, 2, 2), "disk-b": row(data_writes, 0, 0),
                        "ssd-a": row(log_writes, 0, 5), "ssd-b": row(log_writes, 0, 0)}}


def test_the_report_counts_each_level_per_write_of_the_workload(tmp_path):
    p = bench.load_preset("zfs-appliance")
    doc = {**appliancerun._design(p, 5, p.order(5)), "image": "img", "zfs_version": "2.1.11-1+deb12u1",
           "runs": [_run("DATAFILES", 2, 4), _run("DATAFILES", 4, 4), _run("DATAFILES, mirrored ZIL", 2, 8)]}
    share = next(s for s in doc["shares"] if s["name"] == "DATAFILES")
    share["workload"]["count"] = 4
    got = appliancereport.per_write(doc["runs"][0], share, doc["pool"])
    # 2 + 2 writes of 4 KiB on the data disks, 4 + 4 on the logs, 2 reads of 128 KiB, for 4 writes
    assert (got["data_writes"], got["data_kib"], got["data_read_kib"]) == (1.0, 4.0, 64.0)
    assert (got["log_writes"], got["log_each"], got["nfs_writes"], got["nfs_bytes"]) == (2.0, [4, 4], 1.0, 8192)
    assert (got["p50_ms"], got["p99_ms"]) == (50.5, 99.0)
    assert (got["rmw_reads"], got["nfs_commits"]) == (0.5, 2)  # the data disks' only: ssd-a's 5 are the log's
    (tmp_path / "appliance.json").write_text(json.dumps(doc))
    written = appliancereport.write(tmp_path)
    md = written["md"].read_text()
    setting, below, above = (line for line in md.splitlines() if line.startswith("| DATAFILES |"))
    assert "| latency | 8K | all | lzjb | striped |" in setting and below.startswith("| DATAFILES | 2 |")
    assert re.search(r"\| 1\.50 \(1\.00-2\.00\) \|", below), below   # data disks' writes per write, two runs
    assert above.startswith("| DATAFILES | 1.00 | 8192 | 2 | 50.50 | 99.00 |"), above
    assert "## The lab's counterfactuals" in md and "| DATAFILES, mirrored ZIL |" in md
    assert "InfiniBand" in md and written["html"].read_text().startswith("<!DOCTYPE html>")
    # Where each figure comes from, before the tables: the pool's disks served by the floor model, its
    # log devices by the F20 module standing in for the seed's unnamed SSDs.
    assert doc["pool"]["profiles"] == {"disk-a": "floor", "disk-b": "floor", "ssd-a": "sun-f20-module",
                                       "ssd-b": "sun-f20-module"}
    assert md.index("There is no device path") < md.index("## The seed's shares")
    assert "ssd-a: sun-f20-module" in md and "no floor run measures the lab's share of the latency" in md
    # summary.json: the tables' figures for machines, each share's runs and the median, min and max printed
    summary = json.loads(written["summary"].read_text())
    got = next(s for s in summary["shares"] if s["name"] == "DATAFILES")
    assert got["runs"] == 2 and got["figures"]["data_writes"] == {"each": [1.0, 2.0], "median": 1.5, "min": 1.0,
                                                                  "max": 2.0}
    assert got["figures"]["p99_ms"]["median"] == 99.0 and got["granted"] == [{"vers": "3"}]
    assert summary["runs"] == 3 and "latency_us" not in json.dumps(summary)


@pytest.mark.parametrize("pct", [0, 50, 90])
def test_the_workloads_blocks_are_as_compressible_as_asked(tmp_path, pct):
    """The file the workload writes into and the block it writes: random bytes and a repeated row,
    the row `compressible` % of each block; zlib (as LZJB, a dictionary coder) keeps about the
    random part: 0 % compressible saves nothing, 90 % saves most of the block."""
    import subprocess
    import sys
    import zlib
    path, size = tmp_path / "file", 8192
    subprocess.run([sys.executable, "-c", appliancerun.MAKE_FILE, str(path), str(size), "1", str(pct)], check=True)
    data = path.read_bytes()
    assert len(data) == 1 << 20
    blocks = [data[i:i + size] for i in range(0, len(data), size)]
    kept = sum(len(zlib.compress(b)) for b in blocks) / len(data)
    assert abs(kept - (100 - pct) / 100) < ZLIB_SLACK, (pct, kept)


# zlib's own framing and the row's few bytes that survive compression: about 2 % of a block, and 1 %
# for the rows' rounding to whole copies.
ZLIB_SLACK = 0.03


def test_the_appliance_preset_sweeps_compressibility():
    assert {s.workload.compressible for s in bench.load_preset("zfs-appliance").shares} == {0, 50, 90}


def test_every_compressibility_writes_the_same_places(tmp_path):
    """The workload's random offsets come from a generator of their own, not the one that fills its
    block: the DATAFILES shares at 0, 50 and 90 % compressible write the same blocks, so their pool
    bytes differ by what LZJB finds, not by where the writes went."""
    import subprocess
    import sys
    size, blocks, written = 8192, 64, {}
    for pct in (0, 50, 90):
        path = tmp_path / f"file{pct}"
        path.write_bytes(bytes(size * blocks))
        subprocess.run([sys.executable, "-c", appliancerun.WRITER, str(path), str(size), "16", "random", str(pct)],
                       check=True, capture_output=True)
        data = path.read_bytes()
        written[pct] = {i for i in range(blocks) if any(data[i * size:(i + 1) * size])}
    assert 4 < len(written[0]) <= 16 and written[0] == written[50] == written[90], written
