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

from .cache import (  # noqa: F401
    DEBIAN_BASE_SCRIPT,
    GUEST_TOOLS,
    REDO_WRITER_DIR,
    ImageRecord,
    cached_image_path,
    check_free_space,
    files_for_hash,
    find_cached,
    hash_files,
    input_hash,
    sha256_file,
    update_manifest,
)
from .guests import (  # noqa: F401
    DEFAULT_GUEST_ORDER,
    PACKER_DIR,
    REQUIRED_FREE_GIB,
    GuestSpec,
    Progress,
    default_guest,
    guest_names,
    load_guest,
)
from .packer import (  # noqa: F401
    OVMF_CODE,
    OVMF_VARS,
    QCOW2_MAGIC,
    build,
    build_debian_base,
    check_firmware,
    check_template,
    firmware_args,
    packer_env,
    validate_templates,
)
