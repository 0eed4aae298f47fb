"""The raw-write helper on host loop devices: its safety guard and the EINVAL physics behind ORA-01378.

Needs root and losetup (loop devices are created and removed by the test); skips with the reason
otherwise. Writes only to the loop devices' backing files in the test's temporary directory.
"""

from __future__ import annotations

import json
import subprocess
import sys

from sectorlab.paths import REPO

ODIRECT = REPO / "sectorlab" / "odirect.py"


def odirect(*args):
    return subprocess.run([sys.executable, str(ODIRECT), *map(str, args)], capture_output=True, text=True)


def test_write_on_an_empty_device(loop_device):
    dev = loop_device()
    result = odirect(dev, "--bytes", 512)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["ok"] is True


def test_refuses_a_filesystem_signature_unless_forced(loop_device):
    dev = loop_device()
    subprocess.run(["mkfs.ext4", "-q", dev], check=True)
    refused = odirect(dev, "--bytes", 4096)
    assert refused.returncode == 2
    assert "refusing to write" in refused.stderr and "ext4" in refused.stderr
    forced = odirect(dev, "--bytes", 4096, "--force")
    assert forced.returncode == 0 and json.loads(forced.stdout)["ok"] is True


def test_refuses_a_partition_table(loop_device):
    dev = loop_device()
    subprocess.run(["sfdisk", "-q", dev], input="label: dos\nstart=2048, type=83\n", text=True, check=True)
    refused = odirect(dev, "--bytes", 512)
    assert refused.returncode == 2 and "dos" in refused.stderr


def test_write_below_the_logical_sector_is_einval(loop_device):
    dev = loop_device(4096)
    small = json.loads(odirect(dev, "--bytes", 512).stdout)
    assert small["ok"] is False and small["errno"] == "EINVAL", small
    full = json.loads(odirect(dev, "--bytes", 4096).stdout)
    assert full["ok"] is True, full


def test_bad_usage():
    assert odirect("/nonexistent", "--bytes", 512).returncode == 2
    assert "not a block device" in odirect(str(ODIRECT), "--bytes", 512).stderr
