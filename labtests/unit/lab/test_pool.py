"""The shared image pool names a file by its build: two builds with the same inputs (a rebuild, or
another cache on this host) never share a pool file, so the root disks and saved states backed by
one never see the other's bytes."""

from __future__ import annotations

import re

from sectorlab import lab as lab_mod
from sectorlab.images import ImageRecord


def _record(sha: str) -> ImageRecord:
    return ImageRecord(guest="debian12", image="/c/images/debian12-a91be2b723f5e096.qcow2", image_sha256=sha,
                       input_hash="a91be2b723f5e096" + "0" * 48, base_url="", base_sha256="", built_at="",
                       build_seconds=0.0, accelerator="tcg", size_bytes=0,
                       kernel="/c/images/debian12-a91be2b723f5e096.kernel")


def test_two_builds_of_the_same_inputs_get_two_pool_files():
    one, two = _record("e99895b3ce61f7c6" + "1" * 48), _record("515eca1fa3648e55" + "2" * 48)
    for path in (one.image, one.kernel):
        assert lab_mod.volume_name(one, path) != lab_mod.volume_name(two, path)
    assert lab_mod.volume_name(one, one.image) == "debian12-a91be2b723f5e096-e99895b3ce61f7c6.qcow2"
    assert lab_mod.volume_name(one, one.kernel) == "debian12-a91be2b723f5e096-e99895b3ce61f7c6.kernel"
    assert re.fullmatch(rf"debian12-{lab_mod.pool.BUILT}", lab_mod.volume_name(one, one.image))
