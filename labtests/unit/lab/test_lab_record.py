"""lab.json (sectorlab/lab/record.py): a format number and typed records per level (LabRecord,
VMRecord, DiskRecord) whose fields are the file's keys; a file of another format or shape is one
line naming the field, never a KeyError or AttributeError in the reader that meets it first."""

from __future__ import annotations

import dataclasses
import json

import pytest

from labtests.unit import records
from labtests.unit.records import RECORD
from sectorlab.errors import SectorlabError, UsageError
from sectorlab.lab import record
from sectorlab.lab.phases import start
from sectorlab.lab.record import DiskRecord, LabRecord, Timing, VMRecord

DISK = "lab1/virtio-sector4k"


def _broken(change) -> dict:
    data = records.record()
    change(data)
    return data


@pytest.mark.parametrize("change, says", [
    (lambda d: d.pop("format"), "format None, this sectorlab reads format 1"),
    (lambda d: d.update(format=2), "format 2, this sectorlab reads format 1"),
    (lambda d: d.update(format="1"), "format '1', this sectorlab reads format 1"),
    (lambda d: d.pop("libvirt_uri"), "no 'libvirt_uri'"),
    (lambda d: d["vms"]["lab1"].pop("host_key"), "vms.lab1: no 'host_key'"),
    (lambda d: d["disks"][DISK].pop("serial"), f"disks.{DISK}: no 'serial'"),
    (lambda d: d.update(vms=[]), "vms = []: expected dict"),
    (lambda d: d["vms"]["lab1"].update(ssh_port="22"), 'vms.lab1: ssh_port = "22": expected int'),
    (lambda d: d["vms"]["lab1"].update(console_log=3), "vms.lab1: console_log = 3: expected str or null"),
    (lambda d: d["vms"].update(lab2=[]), "vms.lab2: [] is not an object"),
    (lambda d: d["disks"][DISK].update(device=1), "device = 1: expected str or null"),
    (lambda d: d["disks"][DISK].update(logical_block_size=True), "logical_block_size = true: expected int"),
    (lambda d: d["disks"][DISK].update(size_bytes="512M"), 'size_bytes = "512M": expected int or float'),
    (lambda d: d.update(timing=[]), "timing = []: expected dict or null"),
    (lambda d: d["timing"].pop("path"), "timing: no 'path'"),
    (lambda d: d["disks"][DISK].update(vm="lab9"), "vm 'lab9' is not one of the lab's VMs"),
], ids=["no-format", "newer-format", "format-text", "no-uri", "vm-field-missing", "disk-field-missing", "vms-list",
        "port-text", "console-number", "vm-not-object", "device-number", "bool-size", "size-text",
        "timing-list", "timing-no-path", "unknown-vm"])
def test_another_shape_is_one_line_naming_the_field(tmp_path, change, says):
    path = tmp_path / "lab.json"
    path.write_text(json.dumps(_broken(change)))
    with pytest.raises(UsageError) as e:
        LabRecord.load(path)
    assert says in str(e.value) and str(path) in str(e.value) and "\n" not in str(e.value), str(e.value)


@pytest.mark.parametrize("data, says", [
    ([], "x: not an object; expected lab.json as lab-up writes it"),
    ({"format": 7}, "x: format 7, this sectorlab reads format 1 (written by another version of sectorlab)"),
])
def test_from_json_refuses_what_is_not_a_record_of_this_format(data, says):
    with pytest.raises(UsageError, match=r"^" + says.replace("(", r"\(").replace(")", r"\)")):
        LabRecord.from_json(data, "x")


def test_a_record_as_lab_up_writes_it_loads(tmp_path):
    path = tmp_path / "lab.json"
    path.write_text(json.dumps(RECORD))
    lab = LabRecord.load(path)
    assert lab.to_json() == RECORD
    vm, disk = lab.vm("lab1"), lab.disk("lab1", "virtio-sector4k")
    assert isinstance(vm, VMRecord) and (vm.ssh_host, vm.ssh_port, vm.user) == ("127.0.0.1", 48049, "lab")
    assert isinstance(disk, DiskRecord) and disk.key == DISK and disk.device is None
    assert lab.timing == Timing(path="warm", total_s=5.4, phases=RECORD["timing"]["phases"])
    path.write_text("{")
    with pytest.raises(UsageError, match="not JSON"):
        LabRecord.load(path)


def test_to_json_then_from_json_gives_the_same_record_and_the_same_text():
    """A round trip changes nothing: the same record, and lab.json's text byte for byte, keys in
    the order lab-up writes them (optional keys absent until lab-up adds them)."""
    lab = LabRecord.from_json(RECORD, "lab.json")
    assert LabRecord.from_json(json.loads(lab.text()), "again") == lab
    assert lab.text() == json.dumps(RECORD, indent=2)
    bare = records.record()
    del bare["timing"]
    lab = LabRecord.from_json(bare, "lab.json")
    assert lab.timing is None and lab.disk("lab1", "virtio-sector4k").device is None
    assert lab.text() == json.dumps(bare, indent=2) and '"device"' not in lab.text()
    served = dataclasses.replace(lab, disks={DISK: dataclasses.replace(lab.disks[DISK], device="hdd-7200")})
    assert list(served.to_json()["disks"][DISK])[-1] == "device"
    assert LabRecord.from_json(json.loads(served.text()), "again") == served


def test_the_fields_are_the_records_one_list():
    """The check reads the dataclasses' fields: every key lab-up writes is a field, and no other."""
    assert [f.name for f in dataclasses.fields(LabRecord)] == list(RECORD)
    assert [f.name for f in dataclasses.fields(VMRecord)] == list(RECORD["vms"]["lab1"])
    # then the disk's model, as lab-up records it
    assert [f.name for f in dataclasses.fields(DiskRecord)] == list(RECORD["disks"][DISK]) + ["device", "write_log"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        records.vm().ssh_port = 22


def test_a_lab_records_helpers():
    a = records.disk(name="a", serial="s-a")
    b = records.disk(vm="lab2", name="b", serial="s-b", min_io_size=16384, opt_io_size=65536, physical_block_size=4096)
    c = records.disk(name="c", serial="s-c")
    lab = records.lab({"lab1": records.vm(), "lab2": records.vm(domain="sectorlab-default-lab2")}, [a, b, c])
    assert lab.disks_of("lab1") == [a, c] and lab.disks_of("lab2") == [b]
    assert lab.disk("lab2", "b") is b and lab.disk_with_serial("s-c") is c
    assert lab.vm("lab2").domain == "sectorlab-default-lab2"
    for missing in (lambda: lab.vm("lab3"), lambda: lab.disk("lab1", "b"), lambda: lab.disk_with_serial("s-x")):
        with pytest.raises(SectorlabError, match="lab default has no"):
            missing()
    # What the guest must show, computed where labdef's disks compute it (geometry.Geometry).
    assert (a.guest_min_io, a.sizes.topology) == (4096, "4096/4096")
    assert (b.guest_min_io, b.sizes.topology) == (16384, "4096/4096, minimum I/O 16384, optimal I/O 65536")
    assert records.disk(logical_block_size=512, physical_block_size=4096).guest_min_io == 4096


def test_lab_up_writes_what_load_reads(tmp_path):
    """lab-up's own writer (lab/phases/start.py's lab_record over Terraform's outputs) gives a record of this format;
    an old lab.json's keys this version does not know (rmw, rmw_nodes, latency) are ignored."""
    from sectorlab import labdef
    (tmp_path / "host-lab1.pub").write_text("ssh-ed25519 AAAA lab1-host\n")
    outputs = {"libvirt_uri": "qemu:///system",
               "vms": {"lab1": {k: v for k, v in RECORD["vms"]["lab1"].items()
                                if k not in ("user", "key_file", "host_key")}},
               "disks": {DISK: dict(RECORD["disks"][DISK])}}
    lab = labdef.validate({"vm": [{"name": "lab1", "disk": [{"bus": "virtio", "geometry": "sector4k"}]}]})
    written = start.lab_record(lab, tmp_path, outputs)
    assert written.format == record.FORMAT and LabRecord.from_json(json.loads(written.text()), "x") == written
    assert written.vm("lab1").key_file == str(tmp_path / "id_ed25519")
    old = json.loads(written.text())
    old["disks"][DISK] |= {"rmw": False, "rmw_read_iops": None, "latency": "none", "mapper": None}
    assert LabRecord.from_json(old, "an older lab.json") == written
