"""A Debian guest's base recipe, what scripts/build-debian-base builds its base disk from:
images/<guest>/ with a `packages` list and an `overlay` tree; a variant's images/<guest>/recipe.toml
names the guest it extends (whose recipe comes first), the archive's components and the scripts
run in the chroot after the extended guest's (images/debian12-zfs/recipe.toml)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import tomllib

from ..errors import SectorlabError
from ..paths import REPO

IMAGES = REPO / "images"
COMPONENTS = ("main", "contrib", "non-free", "non-free-firmware")  # Debian 12's
KEYS = ("extends", "components", "chroot_steps")


@dataclass(frozen=True)
class BaseRecipe:
    dirs: tuple[Path, ...]  # the recipe directories, the extended guest's first
    components: tuple[str, ...] = ("main",)
    chroot_steps: tuple[Path, ...] = ()

    def files(self) -> list[Path]:
        """Every file of the recipe, for the base disk's cache key: not Python's bytecode, which
        is no source of it (a __pycache__ that a test's import of an overlay script leaves would
        give another key, and a rebuild, for the same recipe)."""
        return [p for d in self.dirs for p in sorted(d.rglob("*"))
                if p.is_file() and "__pycache__" not in p.relative_to(d).parts] + list(self.chroot_steps)

    def env(self) -> dict[str, str]:
        """How scripts/build-debian-base is told (space-separated lists)."""
        return {"SECTORLAB_RECIPE_DIRS": " ".join(map(str, self.dirs)),
                "SECTORLAB_COMPONENTS": ",".join(self.components),
                "SECTORLAB_CHROOT_STEPS": " ".join(map(str, self.chroot_steps))}


def load(guest: str) -> BaseRecipe:
    """The base recipe of `guest`: images/<guest>/, extended by its recipe.toml when it has one."""
    own = IMAGES / guest
    if not (own / "packages").is_file():
        raise SectorlabError(f"guest {guest}: no base recipe ({own / 'packages'} is missing)")
    path = own / "recipe.toml"
    if not path.exists():
        return BaseRecipe((own,))
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise SectorlabError(f"{path}: not valid TOML: {e}") from e
    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        raise SectorlabError(f"{path}: unknown key {unknown[0]!r}; expected {', '.join(KEYS)}")
    parent = data.get("extends")
    if parent is not None and (not isinstance(parent, str) or (IMAGES / parent / "recipe.toml").exists()
                               or not (IMAGES / parent / "packages").is_file()):
        raise SectorlabError(f"{path}: extends = {parent!r}: expected a guest with a base recipe of its own "
                             f"(images/NAME/packages) that extends no other")
    components = data.get("components", ["main"])
    if not isinstance(components, list) or "main" not in components or any(c not in COMPONENTS for c in components):
        raise SectorlabError(f"{path}: components = {components!r}: expected a list of {', '.join(COMPONENTS)} "
                             f"with main in it")
    given = data.get("chroot_steps", [])
    steps = tuple(REPO / s for s in given if isinstance(s, str)) if isinstance(given, list) else ()
    missing = [s for s in steps if not s.is_file()]
    if missing or not isinstance(given, list) or len(steps) != len(given):
        raise SectorlabError(f"{path}: chroot_steps: {missing[0] if missing else 'not all strings'}: expected "
                             f"scripts of the repository, as paths from its top")
    dirs = ((IMAGES / parent,) if parent else ()) + (own,)
    return BaseRecipe(dirs, tuple(components), steps)
