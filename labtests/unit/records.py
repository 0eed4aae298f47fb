"""lab.json as lab-up writes it, for the unit tests: a whole record (RECORD, its JSON) and records
of a VM and a disk with only the fields a test is about changed (vm(), disk())."""

from __future__ import annotations

import copy

from sectorlab.lab.record import FORMAT, DiskRecord, LabRecord, VMRecord

VM = {"console_log": "/c/lab1-console.log", "domain": "sectorlab-default-lab1",
      "guest": "debian12", "root_volume": "/var/lib/libvirt/images/sectorlab-default/lab1-root.qcow2",
      "ssh_host": "127.0.0.1", "ssh_port": 48049, "uuid": "8ca2c1dd-6825-5522-a72d-9fe1a492dfa7", "user": "lab",
      "key_file": "/c/id_ed25519", "host_key": "ssh-ed25519 AAAA lab1-host"}
DISK = {"backing_serial": "", "bus": "virtio", "geometry": "sector4k", "logical_block_size": 4096,
        "min_io_size": 0, "name": "virtio-sector4k", "opt_io_size": 0, "physical_block_size": 4096,
        "serial": "sl05-vblk-4k", "size_bytes": 536870912,
        "volume": "/v/lab1-virtio-sector4k.qcow2", "vm": "lab1", "write_cache": "write through"}
# In the order lab-up writes it: Terraform's outputs by name, then the login, what hot-plug learnt, the timing.
RECORD = {
    "format": FORMAT, "lab": "default", "lab_file": "/repo/labs/default.toml", "libvirt_uri": "qemu:///system",
    "vms": {"lab1": VM},
    "disks": {"lab1/virtio-sector4k": DISK},
    "timing": {"path": "warm", "total_s": 5.4, "phases": {"terraform apply + restore": 3.1, "disk check": 1.2}},
}


def record() -> dict:
    """A fresh copy of RECORD, to change."""
    return copy.deepcopy(RECORD)


def vm(**changes) -> VMRecord:
    return VMRecord.from_json({**VM, **changes}, "test vm")


def disk(**changes) -> DiskRecord:
    """A disk record; `vm` and `name` changed give it another key."""
    return DiskRecord.from_json({**DISK, **changes}, "test disk")


def lab(vms: dict[str, VMRecord], disks: list[DiskRecord], uri: str = "qemu:///system") -> LabRecord:
    """A lab record of these VMs and disks."""
    return LabRecord(format=FORMAT, lab="default", lab_file="/repo/labs/default.toml", libvirt_uri=uri, vms=vms,
                     disks={d.key: d for d in disks})
