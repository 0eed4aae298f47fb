"""Hot-plug over QEMU's monitor (sectorlab/lab/hotplug.py): the NVMe controllers' plan, their
hot-plug and unplug, with the monitor faked (no VM). labtests/devices/test_reformat_nvme.py and
test_device_models.py check them on a running QEMU."""

from __future__ import annotations

import pytest

from labtests.unit import records
from sectorlab import labdef
from sectorlab.errors import SectorlabError
from sectorlab.lab import hotplug


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
