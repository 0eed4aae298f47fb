"""A Debian guest's base recipe (sectorlab/images/recipe.py): debian12's own, the debian12-zfs
variant that extends it, and a variant's recipe.toml that cannot be built, refused in one line."""

from __future__ import annotations

import pytest

from sectorlab.errors import SectorlabError
from sectorlab.images import recipe
from sectorlab.paths import REPO


def test_debian12_is_its_own_recipe_and_the_zfs_variant_extends_it():
    own = recipe.load("debian12")
    assert own == recipe.BaseRecipe((REPO / "images" / "debian12",))
    assert own.env()["SECTORLAB_COMPONENTS"] == "main" and own.env()["SECTORLAB_CHROOT_STEPS"] == ""
    zfs = recipe.load("debian12-zfs")
    assert zfs.dirs == (REPO / "images" / "debian12", REPO / "images" / "debian12-zfs")
    assert zfs.components == ("main", "contrib")  # OpenZFS is in contrib
    assert zfs.chroot_steps == (REPO / "packer" / "scripts" / "debian" / "zfs.sh",)
    assert set(own.files()) < set(zfs.files()), "the variant's base disk is keyed by debian12's recipe too"


@pytest.mark.parametrize("text, says", [
    ('extends = "debian12"\nsize = 3\n', "unknown key 'size'"),
    ('extends = "nosuch"\n', "extends = 'nosuch': expected a guest with a base recipe of its own"),
    ('extends = "debian12"\ncomponents = ["contrib"]\n', "components = ['contrib']: expected a list of main"),
    ('extends = "debian12"\ncomponents = ["main", "universe"]\n', "components = ['main', 'universe']"),
    ('extends = "debian12"\nchroot_steps = ["packer/scripts/nosuch.sh"]\n', "chroot_steps: "),
    ("extends = \n", "not valid TOML"),
])
def test_a_variant_that_cannot_be_built_is_one_line(tmp_path, monkeypatch, text, says):
    images = tmp_path / "images"
    (images / "debian12").mkdir(parents=True)
    (images / "debian12" / "packages").write_text("linux-image-amd64\n")
    (images / "v").mkdir()
    (images / "v" / "packages").write_text("")
    (images / "v" / "recipe.toml").write_text(text)
    monkeypatch.setattr(recipe, "IMAGES", images)
    with pytest.raises(SectorlabError) as e:
        recipe.load("v")
    assert says in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_bytecode_in_a_recipe_is_no_input_of_the_base_disk(tmp_path):
    """A __pycache__ that an import of an overlay script leaves beside it (make test keeps Python's
    bytecode) is not the recipe's: the base disk's key stays the same."""
    from sectorlab.images.recipe import BaseRecipe
    sbin = tmp_path / "overlay" / "usr" / "local" / "sbin"
    sbin.mkdir(parents=True)
    (tmp_path / "packages").write_text("nbdkit\n")
    (sbin / "seed").write_text("print('seed')\n")
    before = BaseRecipe(dirs=(tmp_path,)).files()
    (sbin / "__pycache__").mkdir()
    (sbin / "__pycache__" / "seedcpython-311.pyc").write_bytes(b"\x00")
    assert BaseRecipe(dirs=(tmp_path,)).files() == before == [tmp_path / "overlay/usr/local/sbin/seed",
                                                              tmp_path / "packages"]
