"""The lab definition: what a lab is before anything runs (labs/*.toml, docs/lab-definition.md).

One module per concept: tables.py (the field tables of [lab], [[vm]], [[vm.disk]] and
[geometry.NAME], and the checks of single values), definition.py (reading a file through the
tables, the rules that tie fields together, and the typed Lab, VM and Disk it yields) and
fromhost.py (`sectorlab lab from-host`: a definition written from a server's saved disk report,
read back through definition.py before it is kept). Nothing here starts a VM or asks a libvirt
host; what depends on the hosts is lab/hostcheck.py's.

The names below are the package's face, as the lab, the bench, the CLI and the tests use it.
"""

from .definition import (  # noqa: F401
    FLOOR,
    MAX_NVME_PER_VM,
    SUFFIX_ENV,
    VM,
    Disk,
    Lab,
    layout_problem,
    load,
    validate,
    with_suffix,
)
from .tables import (  # noqa: F401
    DEFAULT_DISK_MIB,
    DISK_FIELDS,
    MAX_VMS,
    NAME_RE,
    TABLES,
    name_field,
)
