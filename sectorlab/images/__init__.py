"""Guest images: which guests exist, their cache keys, the build with Packer and the manifest.

The guests are the files packer/vars/<guest>.pkrvars.hcl (one place per concept). A built image
lives in the cache outside the repository under a name that carries the hash of every input
that shapes it (templates, vars, provisioning scripts and, for Debian, the base recipe), so an
unchanged recipe is never built twice and a changed one never reuses a stale image. Builds go
to a temporary directory and are renamed into place only when they succeeded.

The package, one module per concept: guests.py (the guests and their Packer variables), cache.py
(the input hash, the cached image and its build record, the manifest) and packer.py (the checks
before a build, the build, Debian's base disk, packer validate). The names below are the
package's interface, as the CLI, the lab and the scenarios use it; a function reads the names of
its own module, so a test that replaces one patches it there (images.guests.PACKER_DIR,
images.cache.manifest_path, images.packer.OVMF_DIR, images.packer.load_guest).
"""

from ..lazy import interface

# The package's interface, each name from its module when first used: `sectorlab` starts without Packer's.
_LAZY = {
    "DEBIAN_BASE_SCRIPT": "cache",
    "GUEST_TOOLS": "cache",
    "REDO_WRITER_DIR": "cache",
    "ImageRecord": "cache",
    "cached_image_path": "cache",
    "check_free_space": "cache",
    "files_for_hash": "cache",
    "find_cached": "cache",
    "hash_files": "cache",
    "input_hash": "cache",
    "sha256_file": "cache",
    "update_manifest": "cache",
    "DEFAULT_GUEST_ORDER": "guests",
    "PACKER_DIR": "guests",
    "REQUIRED_FREE_GIB": "guests",
    "GuestSpec": "guests",
    "Progress": "guests",
    "default_guest": "guests",
    "guest_names": "guests",
    "load_guest": "guests",
    "OVMF_CODE": "packer",
    "OVMF_VARS": "packer",
    "QCOW2_MAGIC": "packer",
    "build": "packer",
    "build_debian_base": "packer",
    "check_firmware": "packer",
    "check_template": "packer",
    "firmware_args": "packer",
    "packer_env": "packer",
    "validate_templates": "packer",
}


__getattr__, __dir__ = interface(__name__, _LAZY, globals())
