"""`sectorlab bench-floor` (sectorlab/bench/floor.py): which disks it measures and what it refuses,
without a VM: one model-served disk per bus by default, a named disk of the lab otherwise, one line
for a name the lab does not have or a disk no model serves."""

from __future__ import annotations

import pytest

from labtests.unit import records
from sectorlab.bench.cost import floor
from sectorlab.errors import UsageError


def _lab():
    disks = [records.disk(name=n, bus=b, serial=n, device="floor") for n, b in
             (("virtio-b", "virtio"), ("virtio-a", "virtio"), ("scsi-a", "scsi"), ("nvme-a", "nvme"))]
    disks.append(records.disk(name="plain", bus="virtio", serial="plain"))  # no model: a remote host's volume
    return records.lab({"lab1": records.vm()}, disks)


def test_by_default_one_model_served_disk_per_bus():
    assert sorted(d.name for d in floor.default_disks(_lab())) == ["nvme-a", "scsi-a", "virtio-a"]


def test_named_disks_are_taken_as_named():
    assert [d.name for d in floor._pick(_lab(), ["scsi-a", "virtio-b"])] == ["scsi-a", "virtio-b"]


@pytest.mark.parametrize("names, refused", [
    (["nope"], "--disk nope: not a disk of lab default; expected one of nvme-a, plain, scsi-a, virtio-a, virtio-b"),
    (["plain"], "--disk: plain: expected model-served disks of one VM"),
])
def test_a_disk_it_cannot_measure_is_one_line(names, refused):
    with pytest.raises(UsageError) as e:
        floor._pick(_lab(), names)
    assert str(e.value) == refused


def test_a_lab_without_models_is_one_line():
    lab = records.lab({"lab1": records.vm()}, [records.disk(name="plain")])
    with pytest.raises(UsageError, match="no disk served by a device model"):
        floor._pick(lab, [])
