"""lab.json (sectorlab/lab/record.py): a format number and a field table per level; a file of
another format or shape is one line naming the field, never a KeyError in the reader that meets
it first."""

from __future__ import annotations

import copy
import json

import pytest

from sectorlab.errors import UsageError
from sectorlab.lab import record

RECORD = {
    "format": record.FORMAT, "lab": "default", "lab_file": "/repo/labs/default.toml", "libvirt_uri": "qemu:///system",
    "vms": {"lab1": {"domain": "sectorlab-default-lab1", "uuid": "8ca2c1dd-6825-5522-a72d-9fe1a492dfa7",
                     "root_volume": "/var/lib/libvirt/images/sectorlab-default/lab1-root.qcow2", "guest": "debian12",
                     "ssh_host": "127.0.0.1", "ssh_port": 48049, "console_log": "/c/lab1-console.log", "user": "lab",
                     "key_file": "/c/id_ed25519", "host_key": "ssh-ed25519 AAAA lab1-host"}},
    "disks": {"lab1/virtio-sector4k": {
        "vm": "lab1", "name": "virtio-sector4k", "bus": "virtio", "geometry": "sector4k", "serial": "sl05-vblk-4k",
        "backing_serial": "", "logical_block_size": 4096, "physical_block_size": 4096, "min_io_size": 0,
        "opt_io_size": 0, "size_bytes": 536870912, "volume": "/v/lab1-virtio-sector4k.qcow2", "latency": "none",
        "write_delay_ms": 0, "mapper": None, "rmw": False, "rmw_read_iops": None}},
    "timing": {"path": "warm", "total_s": 5.4, "phases": {}},
}


def _broken(change) -> dict:
    data = copy.deepcopy(RECORD)
    change(data)
    return data


@pytest.mark.parametrize("change, says", [
    (lambda d: d.pop("format"), "format None, this sectorlab reads format 1"),
    (lambda d: d.update(format=2), "format 2, this sectorlab reads format 1"),
    (lambda d: d.pop("libvirt_uri"), "no 'libvirt_uri'"),
    (lambda d: d["vms"]["lab1"].update(ssh_port="22"), 'vms.lab1: ssh_port = "22": expected int'),
    (lambda d: d["vms"].update(lab2=[]), "vms.lab2: [] is not an object"),
    (lambda d: d["disks"]["lab1/virtio-sector4k"].update(rmw=1), "rmw = 1: expected bool"),
    (lambda d: d["disks"]["lab1/virtio-sector4k"].update(logical_block_size=True),
     "logical_block_size = true: expected int"),
    (lambda d: d["disks"]["lab1/virtio-sector4k"].update(vm="lab9"), "vm 'lab9' is not one of the lab's VMs"),
], ids=["no-format", "newer-format", "no-uri", "port-text", "vm-not-object", "rmw-number", "bool-size", "unknown-vm"])
def test_another_shape_is_one_line_naming_the_field(tmp_path, change, says):
    path = tmp_path / "lab.json"
    path.write_text(json.dumps(_broken(change)))
    with pytest.raises(UsageError) as e:
        record.load(path)
    assert says in str(e.value) and str(path) in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_a_record_as_lab_up_writes_it_loads(tmp_path):
    path = tmp_path / "lab.json"
    path.write_text(json.dumps(RECORD))
    assert record.load(path) == RECORD
    path.write_text("{")
    with pytest.raises(UsageError, match="not JSON"):
        record.load(path)


def test_lab_up_writes_what_load_reads(tmp_path):
    """lab-up's own writer (lab._lab_json over Terraform's outputs) gives a record of this format."""
    from sectorlab import lab as lab_mod
    from sectorlab import labdef
    (tmp_path / "host-lab1.pub").write_text("ssh-ed25519 AAAA lab1-host\n")
    outputs = {"libvirt_uri": "qemu:///system",
               "vms": {"lab1": {k: v for k, v in RECORD["vms"]["lab1"].items()
                                if k not in ("user", "key_file", "host_key")}},
               "disks": copy.deepcopy(RECORD["disks"])}
    lab = labdef.validate({"vm": [{"name": "lab1", "disk": [{"bus": "virtio", "geometry": "sector4k"}]}]})
    written = lab_mod._lab_json(lab, tmp_path, outputs)
    assert written["format"] == record.FORMAT and record.check(json.loads(json.dumps(written)), "x") == written
