"""The saved-state cache and NVMe hot-plug plan (no VM: virsh and QEMU's monitor are faked)."""

from __future__ import annotations

import json

import pytest

from sectorlab import labdef, warm
from sectorlab.errors import SectorlabError

LAB = {
    "lab": {"name": "t"},
    "vm": [{"name": "vm1", "guest": "debian12", "disk": [
        {"bus": "nvme", "geometry": "sector4k", "name": "b"},
        {"bus": "nvme", "geometry": "sector512n", "name": "a"},
        {"bus": "virtio", "geometry": "sector512e", "name": "c"},
    ]}],
}


@pytest.fixture
def fake_versions(monkeypatch):
    monkeypatch.setattr(warm, "qemu_version", lambda: "QEMU emulator version 7.2.22")
    monkeypatch.setattr(warm, "libvirt_version", lambda uri: "libvirt 9.0.0")


def key_of(data, images=None, domain_type="qemu"):
    return warm.state_key(labdef.validate(data), images or {"debian12": "aa"}, domain_type)[0]


def test_state_key_depends_on_what_the_saved_guest_depends_on(fake_versions, monkeypatch):
    base = key_of(LAB)
    assert base == key_of(json.loads(json.dumps(LAB)))  # same definition, same key
    other_geometry = json.loads(json.dumps(LAB))
    other_geometry["vm"][0]["disk"][2]["geometry"] = "sector4k"
    assert key_of(other_geometry) != base
    more_memory = json.loads(json.dumps(LAB))
    more_memory["vm"][0]["memory_mib"] = 1024
    assert key_of(more_memory) != base
    assert key_of(LAB, images={"debian12": "bb"}) != base
    assert key_of(LAB, domain_type="kvm") != base
    monkeypatch.setattr(warm, "qemu_version", lambda: "QEMU emulator version 8.2.0")
    assert key_of(LAB) != base


def test_saved_state_says_why_it_cannot_be_used(tmp_path, monkeypatch):
    monkeypatch.setenv("SECTORLAB_CACHE", str(tmp_path))
    saved = warm.SavedState("t", "k1")
    assert saved.missing(["vm1"]) == "no saved state yet"
    (saved.root / "k0").mkdir(parents=True)
    assert "is for another image, lab definition, QEMU or libvirt" in saved.missing(["vm1"])
    saved.dir.mkdir()
    for name in ["meta.json", *warm.STATE_FILES, "vm1.save"] + [f.format(vm="vm1") for f in warm.VM_STATE_FILES]:
        (saved.dir / name).write_text("x")
    assert saved.missing(["vm1"]) == "the saved state k1 is incomplete (no vm1-root.qcow2)"
    saved.root_disk("vm1").write_text("x")
    assert saved.missing(["vm1"]) is None
    state = tmp_path / "state"
    state.mkdir()
    saved.install(state, ["vm1"])
    assert (state / "id_ed25519").exists() and (state / "seed-vm1.iso").exists() and (state / "host-vm1.pub").exists()
    assert sorted(warm.clear("t")) == ["k0", "k1"] and not saved.root.exists()


def test_nvme_plan_gives_fixed_slots_in_name_order():
    disks = [{"name": "b", "bus": "nvme"}, {"name": "x", "bus": "virtio"}, {"name": "a", "bus": "nvme"}]
    plan = warm.nvme_plan(disks)
    assert [(d["name"], d["id"], d["addr"]) for d in plan] == [("a", "nvme0", "0x18"), ("b", "nvme1", "0x19")]
    too_many = [{"name": f"n{i}", "bus": "nvme"} for i in range(labdef.MAX_NVME_PER_VM + 1)]
    with pytest.raises(SectorlabError, match="at most"):
        warm.nvme_plan(too_many)


def test_hotplug_adds_only_missing_controllers_with_their_geometry(monkeypatch):
    calls = []
    present = [{"name": "nvme0", "type": "child<nvme>"}]

    def fake_qmp(uri, domain, execute, **arguments):
        calls.append((execute, arguments))
        return present if execute == "qom-list" else {}

    monkeypatch.setattr(warm, "qmp", fake_qmp)
    disks = [{"name": n, "bus": "nvme", "serial": f"s-{n}", "volume": f"/pool/{n}.qcow2",
              "logical_block_size": lbs, "physical_block_size": lbs} for n, lbs in (("a", 512), ("b", 4096))]
    assert warm.hotplug_nvme("qemu:///system", "dom", disks) == ["nvme1"]
    blockdev, device = calls[1][1], calls[2][1]
    assert blockdev["node-name"] == "nvme1-drive" and blockdev["file"]["filename"] == "/pool/b.qcow2"
    assert device == {"driver": "nvme", "id": "nvme1", "drive": "nvme1-drive", "serial": "s-b",
                      "logical_block_size": 4096, "physical_block_size": 4096, "bus": "pci.0", "addr": "0x19"}


def test_qmp_error_is_reported_with_the_command(monkeypatch):
    monkeypatch.setattr(warm, "virsh", lambda *a, **k: json.dumps({"error": {"class": "GenericError",
                                                                             "desc": "Duplicate ID 'nvme0'"}}))
    with pytest.raises(SectorlabError, match="QEMU device_add on dom: Duplicate ID 'nvme0'"):
        warm.qmp("qemu:///system", "dom", "device_add", id="nvme0")
