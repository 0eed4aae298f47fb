"""provision-redo-disk and reformat-nvme (sectorlab/inguest/redodisk.py and nvmeformat.py, on
blockdev.py) without a VM: argument parsing, the udev rule it writes, the LBA formats it reads from
saved `nvme id-ns` outputs, and refusals that need no disk or only a loop device. The lab scenarios
(labtests/geometry/test_provision_redo_disk.py, labtests/devices/test_reformat_nvme.py,
labtests/rules/test_redo_disk_bad_input.py) run the tools on real guest disks.
"""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

import pytest

from sectorlab.inguest import blockdev, nvmeformat, redodisk
from sectorlab.paths import REPO

DATA = REPO / "labtests" / "unit" / "data"


@pytest.mark.parametrize("text, logical, sectors", [
    ("2048s", 512, 2048), ("2048s", 4096, 2048), ("63s", 512, 63), ("1MiB", 512, 2048), ("8MiB", 4096, 2048),
    ("1MiB", 4096, 256), ("4096B", 512, 8), ("1GiB", 4096, 262144), ("64KiB", 512, 128),
])
def test_parse_start(text, logical, sectors):
    assert redodisk.parse_start(text, logical) == sectors


@pytest.mark.parametrize("text, logical, message", [
    ("2048", 512, "expected sectors like 2048s or a size like 1MiB"),
    ("1.5MiB", 512, "'1.5MiB'"),
    ("-1s", 512, "'-1s'"),
    ("1000B", 4096, "1000 bytes, not a whole number of 4096-byte logical sectors"),
    ("2KiB", 4096, "give a multiple of 4096 B"),
])
def test_parse_start_refuses(text, logical, message):
    with pytest.raises(blockdev.Refused, match=None) as e:
        redodisk.parse_start(text, logical)
    assert message in str(e.value)


def test_parse_mode():
    assert redodisk.parse_mode("0660") == 0o660
    assert redodisk.parse_mode("640") == 0o640
    for bad in ("0968", "rw", "66", "106600"):
        with pytest.raises(blockdev.Refused, match="expected an octal mode"):
            redodisk.parse_mode(bad)


def test_rule_matches_the_serial_not_the_kernel_name():
    text = redodisk.rule_text("ID_SERIAL_SHORT", "sl01-nvme-4k", "oracle", "dba", 0o660, "/dev/nvme1n1")
    rule = [line for line in text.splitlines() if not line.startswith("#")]
    assert rule == ['ACTION=="add|change", SUBSYSTEM=="block", ENV{DEVTYPE}=="partition", '
                    'ENV{ID_SERIAL_SHORT}=="sl01-nvme-4k", ATTR{partition}=="1", OWNER="oracle", GROUP="dba", '
                    'MODE="0660"']
    assert redodisk.rule_path("sl01-nvme-4k") == "/etc/udev/rules.d/99-sectorlab-redo-sl01-nvme-4k.rules"
    # A serial with characters a file name should not hold still gives one file per disk.
    assert redodisk.rule_path("QM 0001/x") == "/etc/udev/rules.d/99-sectorlab-redo-QM_0001_x.rules"


def test_partition_node_names():
    disk = SimpleNamespace(name="nvme0n1")
    assert redodisk.partition_node(disk) == "/dev/nvme0n1p1"
    assert redodisk.partition_node(SimpleNamespace(name="vdb")) == "/dev/vdb1"
    assert redodisk.partition_node(SimpleNamespace(name="sda"), 2) == "/dev/sda2"


def test_wanted_layout_is_exactly_one_redo_partition_at_the_start():
    ours = redodisk.Layout("gpt", [{"start": 2048, "name": "redo"}])
    assert redodisk._wanted_layout(ours, 2048)
    assert not redodisk._wanted_layout(ours, 63)
    assert not redodisk._wanted_layout(None, 2048)
    assert not redodisk._wanted_layout(redodisk.Layout("dos", [{"start": 2048, "name": "redo"}]), 2048)
    assert not redodisk._wanted_layout(redodisk.Layout("gpt", [{"start": 2048, "name": "data"}]), 2048)
    assert not redodisk._wanted_layout(redodisk.Layout("gpt", [{"start": 2048, "name": "redo"}] * 2), 2048)


def test_lba_formats_of_an_emulated_namespace():
    in_use, formats = nvmeformat.parse_lba_formats((DATA / "nvme-id-ns-sector4k.json").read_text(), "nvme id-ns")
    assert in_use == 4
    assert [(f["data_size"], f["metadata_size"]) for f in formats] == [
        (512, 0), (512, 8), (512, 16), (512, 64), (4096, 0), (4096, 8), (4096, 16), (4096, 64)]
    assert nvmeformat.describe_formats(formats[:2]) == "0: 512 B, 1: 512 B + 8 B metadata"


def test_lba_formats_of_an_nvme_tcp_namespace():
    in_use, formats = nvmeformat.parse_lba_formats((DATA / "nvme-id-ns-tcp-sector512e.json").read_text(), "x")
    assert (in_use, formats) == (0, [{"index": 0, "data_size": 512, "metadata_size": 0}])


def test_lba_formats_bad_output():
    with pytest.raises(blockdev.Failed, match="unexpected output of 'nvme id-ns /dev/nvme0n1'"):
        nvmeformat.parse_lba_formats('{"nsze": 1}', "nvme id-ns /dev/nvme0n1")


COMMANDS = {"provision-redo-disk": redodisk, "reformat-nvme": nvmeformat}


def _main(argv, capsys, root=True, monkeypatch=None):
    if monkeypatch is not None:
        monkeypatch.setattr(blockdev.os, "geteuid", lambda: 0 if root else 1000)  # run_tool's root check
    rc = COMMANDS[argv[0]].main(argv[1:])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_refuses_a_missing_device(capsys, monkeypatch):
    rc, out, err = _main(["provision-redo-disk", "/dev/sectorlab-no-such-disk"], capsys, monkeypatch=monkeypatch)
    assert rc == 2 and out == ""
    assert err == ("provision-redo-disk: /dev/sectorlab-no-such-disk: No such file or directory: expected a whole "
                   "disk such as /dev/vdb ('lsblk -d' lists them)\n")


def test_refuses_a_file_that_is_not_a_block_device(tmp_path, capsys, monkeypatch):
    plain = tmp_path / "disk.img"
    plain.write_bytes(b"\0" * 4096)
    rc, _, err = _main(["reformat-nvme", str(plain), "--lbads", "4096"], capsys, monkeypatch=monkeypatch)
    assert rc == 2 and f"{plain} is not a block device: expected a whole disk" in err


def test_needs_root(capsys, monkeypatch):
    rc, _, err = _main(["provision-redo-disk", "/dev/vdb"], capsys, root=False, monkeypatch=monkeypatch)
    assert rc == 2 and "must run as root" in err and "sudo provision-redo-disk" in err


@pytest.mark.parametrize("lbads, message", [("1000", "1000 is not a power of two"), ("4k", "'4k' is not a number")])
def test_reformat_lbads_is_checked_by_its_parser(lbads, message, capsys):
    with pytest.raises(SystemExit) as e:
        nvmeformat.main(["/dev/nvme0n1", "--lbads", lbads])
    assert e.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize("command", COMMANDS)
def test_each_module_file_runs_its_command(command):
    """`python3 redodisk.py ARGS` is provision-redo-disk, `python3 nvmeformat.py ARGS` reformat-nvme,
    whatever name the file is run by (the launchers import the module and call main())."""
    script = COMMANDS[command].__file__
    out = subprocess.run([sys.executable, script, "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.startswith(f"usage: {command}"), out.stderr
    out = subprocess.run([sys.executable, script], capture_output=True, text=True)
    assert out.returncode == 2 and out.stderr.startswith(f"usage: {command}")
    assert "the following arguments are required: device" in out.stderr


def test_loop_device_is_refused_by_reformat_and_a_gpt_by_provision(loop_device, capsys, monkeypatch):
    """On a host loop device (root only): not an NVMe namespace; with a GPT on it, provisioning
    without --force is refused before anything is written."""
    dev = loop_device(512)
    rc, _, err = _main(["reformat-nvme", dev, "--lbads", "4096"], capsys, monkeypatch=monkeypatch)
    assert rc == 2 and f"{dev} is not an NVMe namespace (not NVMe)" in err
    subprocess.run(["sfdisk", "--quiet", dev], input="label: gpt\n2048,4096\n", text=True, check=True,
                   capture_output=True)
    with open(dev, "rb") as f:
        before = f.read(1 << 20)
    disk = blockdev.whole_disk(dev)
    layout = redodisk.read_layout(disk)
    assert layout.label == "gpt" and layout.partitions[0]["start"] == 2048
    assert [s["type"] for s in blockdev.signatures(dev)] == ["gpt", "gpt", "PMBR"]
    with open(dev, "rb") as f:
        assert f.read(1 << 20) == before
