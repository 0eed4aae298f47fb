"""The guests: which exist, what each one's Packer variables file says, and the default guest.

The guests are the files packer/vars/<guest>.pkrvars.hcl (one place per concept); load_guest reads
one into a GuestSpec and checks the values the build relies on.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..errors import SectorlabError, UsageError
from ..paths import REPO, image_cache

PACKER_DIR = REPO / "packer"
DEFAULT_GUEST_ORDER = ("oraclelinux9", "debian12")
# Free space a build needs in the cache (the build copy, the compacted result, the base disk).
REQUIRED_FREE_GIB = {"mmdebstrap": 8, "download": 25}

Progress = Callable[[str], None]


def say(msg: str) -> None:
    print(f"sectorlab: {msg}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class GuestSpec:
    name: str
    os_family: str
    base_recipe: str
    base_image_url: str
    base_image_sha256: str
    ssh_username: str
    disk_size: str
    provision_scripts: tuple[str, ...]
    lab_min_memory_mib: int = 512
    firmware: str = "bios"  # how the base disk boots under Packer: bios or uefi (OVMF)

    @property
    def vars_file(self) -> Path:
        return PACKER_DIR / "vars" / f"{self.name}.pkrvars.hcl"

    @property
    def template_file(self) -> Path | None:
        """Where a vendor template is kept in the cache (and where a user may drop it)."""
        if self.base_recipe != "download":
            return None
        return image_cache().parent / "templates" / self.base_image_url.rsplit("/", 1)[-1]


def _unquote(value):
    # python-hcl2 keeps the quotes of string literals in some versions.
    if isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1]
    if isinstance(value, list):
        return [_unquote(v) for v in value]
    return value


def load_guest(name: str) -> GuestSpec:
    path = PACKER_DIR / "vars" / f"{name}.pkrvars.hcl"
    try:
        st = path.stat()
    except (OSError, ValueError):  # not there, a name with a '/' or a NUL in it
        raise UsageError(f"unknown guest {name!r}: expected one of {', '.join(guest_names())} "
                         f"(the files packer/vars/<guest>.pkrvars.hcl); pick one, or add "
                         f"packer/vars/{name}.pkrvars.hcl to make it a guest") from None
    return _parsed(path, name, (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size))


@functools.lru_cache(maxsize=64)
def _parsed(path: Path, name: str, identity: tuple[int, int, int, int]) -> GuestSpec:
    """The guest of the vars file at `path` as it is (`identity`: its stat): parsed once while it
    stays the same file (HCL's parser takes a few milliseconds, and a lab definition, a preset or
    an image's inputs ask for their guests again and again)."""
    import hcl2  # here: a refused name needs no HCL parser
    with open(path) as f:
        raw = {k: _unquote(v) for k, v in hcl2.load(f).items()}
    try:
        spec = GuestSpec(
            name=raw["guest"], os_family=raw["os_family"], base_recipe=raw["base_recipe"],
            base_image_url=raw.get("base_image_url", ""), base_image_sha256=raw.get("base_image_sha256", ""),
            ssh_username=raw.get("ssh_username", "lab"), disk_size=raw.get("disk_size", "4096M"),
            provision_scripts=tuple(raw["provision_scripts"]),
            lab_min_memory_mib=int(raw.get("lab_min_memory_mib", 512)), firmware=raw.get("firmware", "bios"))
    except KeyError as e:
        raise SectorlabError(f"{path}: missing variable {e.args[0]}") from e
    if spec.name != name:
        raise SectorlabError(f"{path}: guest = {spec.name!r}, expected {name!r} (the file name)")
    if spec.firmware not in ("bios", "uefi"):
        raise SectorlabError(f"{path}: firmware = {spec.firmware!r}, expected 'bios' or 'uefi'")
    if spec.base_recipe not in REQUIRED_FREE_GIB:
        raise SectorlabError(f"{path}: base_recipe = {spec.base_recipe!r}, expected 'mmdebstrap' or 'download'")
    return spec


def guest_names() -> list[str]:
    return sorted(p.name[: -len(".pkrvars.hcl")] for p in (PACKER_DIR / "vars").glob("*.pkrvars.hcl"))


def default_guest(progress: Progress = say) -> str:
    """Oracle Linux 9 when its template is already in the cache, else debian12 (never probes the network)."""
    ol9 = load_guest("oraclelinux9")
    if ol9.template_file is not None and ol9.template_file.exists():
        progress(f"GUEST not set: using oraclelinux9 (its template is in the cache: {ol9.template_file})")
        return "oraclelinux9"
    progress(f"GUEST not set: using debian12 (for Oracle Linux 9, put {ol9.base_image_url.rsplit('/', 1)[-1]} "
             f"into {ol9.template_file.parent}/ or run 'make image GUEST=oraclelinux9' on a machine that "
             f"reaches yum.oracle.com)")
    return "debian12"
