"""Hot-plug over QEMU's monitor (sectorlab/lab/hotplug.py): the NVMe controllers' plan, their
hot-plug and unplug, and the model-served disks' devices over QEMU's NBD client, with the monitor
faked (no VM). labtests/test_reformat_nvme.py and test_device_models.py check them on a running QEMU."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from sectorlab import accel, labdef
from sectorlab.errors import SectorlabError
from sectorlab.lab import hotplug

from . import records


def _disk(name: str, **extra):
    """A model-served 512e virtio disk (its volume: the model's socket)."""
    return records.disk(**{"name": name, "bus": "virtio", "geometry": "sector512e", "serial": f"s-{name}",
                           "logical_block_size": 512, "physical_block_size": 4096, "device": "floor",
                           "volume": f"/run/sectorlab/devices/lab/{name}/disk.sock", **extra})


def _nvme(name: str, **extra):
    return records.disk(**{"name": name, "bus": "nvme", "serial": f"s-{name}", **extra})


def test_nvme_plan_gives_fixed_slots_in_name_order():
    disks = [_nvme("b"), _nvme("x", bus="virtio"), _nvme("a")]
    plan = hotplug.nvme_plan(disks)
    assert [(d.name, dev, addr) for dev, addr, d in plan] == [("a", "nvme0", "0x18"), ("b", "nvme1", "0x19")]
    too_many = [_nvme(f"n{i}") for i in range(labdef.MAX_NVME_PER_VM + 1)]
    with pytest.raises(SectorlabError, match="at most"):
        hotplug.nvme_plan(too_many)


def test_nvme_hotplug_adds_only_missing_controllers_with_their_geometry(monkeypatch):
    calls = []
    present = [{"name": "nvme0", "type": "child<nvme>"}]

    def fake_qmp(uri, domain, execute, **arguments):
        calls.append((execute, arguments))
        return present if execute == "qom-list" else {}

    monkeypatch.setattr(hotplug, "qmp", fake_qmp)
    disks = [_nvme(n, volume=f"/pool/{n}.qcow2", logical_block_size=lbs, physical_block_size=lbs)
             for n, lbs in (("a", 512), ("b", 4096))]
    assert hotplug.hotplug_nvme("qemu:///system", "dom", disks) == ["nvme1"]
    blockdev, device = calls[1][1], calls[2][1]
    assert blockdev["node-name"] == "nvme1-drive" and blockdev["file"]["filename"] == "/pool/b.qcow2"
    assert device == {"driver": "nvme", "id": "nvme1", "drive": "nvme1-drive", "serial": "s-b",
                      "logical_block_size": 4096, "physical_block_size": 4096, "bus": "pci.0", "addr": "0x19"}


def test_unplug_waits_until_qemu_releases_the_block_node(monkeypatch):
    """The controller leaves the device tree before QEMU frees it and its node: blockdev-del is
    tried again while the node is in use; a second call after a part-way failure deletes nothing twice."""
    state = {"present": True, "node": True, "busy": 2, "polls": 0}
    calls = []

    def fake_qmp(uri, domain, execute, **arguments):
        calls.append(execute)
        if execute == "qom-list":
            state["polls"] += 1
            if state["polls"] > 2:
                state["present"] = False
            return [{"name": "nvme0"}] if state["present"] else []
        if execute == "query-named-block-nodes":
            return [{"node-name": "nvme0-drive"}] if state["node"] else []
        if execute == "blockdev-del":
            if state["busy"]:
                state["busy"] -= 1
                raise SectorlabError("QEMU blockdev-del on dom: Node nvme0-drive is in use")
            state["node"] = False
        return {}

    monkeypatch.setattr(hotplug, "qmp", fake_qmp)
    monkeypatch.setattr(hotplug.time, "sleep", lambda s: None)
    disks = [_nvme("a")]
    assert hotplug.unplug_nvme("qemu:///system", "dom", disks, "s-a") == "nvme0"
    assert calls.count("device_del") == 1 and calls.count("blockdev-del") == 3 and not state["node"]
    calls.clear()
    assert hotplug.unplug_nvme("qemu:///system", "dom", disks, "s-a") == "nvme0"
    assert "device_del" not in calls and "blockdev-del" not in calls


def test_unplug_names_the_node_it_could_not_drop(monkeypatch):
    def fake_qmp(uri, domain, execute, **arguments):
        if execute == "query-named-block-nodes":
            return [{"node-name": "nvme0-drive"}]
        if execute == "blockdev-del":
            raise SectorlabError("QEMU blockdev-del on dom: Node nvme0-drive is in use")
        return []

    monkeypatch.setattr(hotplug, "qmp", fake_qmp)
    monkeypatch.setattr(hotplug.time, "sleep", lambda s: None)
    with pytest.raises(SectorlabError, match="nvme0 is gone but its block node could not be dropped within 0 s"):
        hotplug.unplug_nvme("qemu:///system", "dom", [_nvme("a")], "s-a", timeout=0)


def test_a_model_served_disk_is_plugged_over_the_nbd_client_in_its_slot(monkeypatch):
    calls = []
    present = [{"name": "model0", "type": "child<virtio-blk-pci>"}]

    def fake_qmp(uri, domain, execute, **arguments):
        calls.append((execute, arguments))
        return present if execute == "qom-list" else []

    monkeypatch.setattr(hotplug, "qmp", fake_qmp)
    assert hotplug.hotplug_models("qemu:///system", "dom", [_disk("a"), _disk("b")]) == ["model1"]
    assert [c[0] for c in calls] == ["qom-list", "blockdev-add", "device_add"]
    assert calls[1][1] == {"node-name": "model1-drive", "driver": "raw", "file": {
        "driver": "nbd", "server": {"type": "unix", "path": "/run/sectorlab/devices/lab/b/disk.sock"}}}
    assert calls[2][1] == {"driver": "virtio-blk-pci", "id": "model1", "drive": "model1-drive", "serial": "s-b",
                           "logical_block_size": 512, "physical_block_size": 4096, "bus": "pci.0", "addr": "0x15"}


def test_model_hotplug_adds_nothing_without_model_served_virtio_disks(monkeypatch):
    calls = []
    monkeypatch.setattr(hotplug, "qmp", lambda uri, domain, execute, **a: calls.append(execute) or [])
    assert hotplug.hotplug_models("qemu:///system", "dom", [_disk("plain", device=None), _nvme("n")]) == []
    assert calls == [], "a VM without model-served virtio disks costs its lab-up no monitor call"


def test_a_geometrys_io_sizes_go_to_the_hot_plugged_device(monkeypatch):
    """A model-served disk whose geometry advertises I/O sizes gets QEMU's properties of those names
    on its virtio-blk device, as <qemu:override> gives a cold-plugged disk (and QEMU's virtio-blk-pci
    has them)."""
    calls = []
    monkeypatch.setattr(hotplug, "qmp", lambda uri, domain, execute, **a: calls.append((execute, a)) or [])
    hotplug.hotplug_models("qemu:///system", "dom",
                           [_disk("a", min_io_size=16384, opt_io_size=65536), _disk("b", min_io_size=0)])
    devices = [a for e, a in calls if e == "device_add"]
    assert (devices[0]["min_io_size"], devices[0]["opt_io_size"]) == (16384, 65536)
    assert "min_io_size" not in devices[1] and "opt_io_size" not in devices[1]
    qemu = shutil.which(accel.QEMU)
    if qemu is None:
        pytest.skip(f"{accel.QEMU} is not installed (scripts/bootstrap installs it)")
    props = subprocess.run([qemu, "-device", "virtio-blk-pci,help"], capture_output=True, text=True, timeout=60).stdout
    assert "min_io_size=<size>" in props and "opt_io_size=<size>" in props, props
