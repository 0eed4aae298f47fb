"""A lab guest as the host reaches it: its seed, its keys, its SSH client and its disks' report.

One module per concept: sshkeys.py (the lab's login key and each VM's host key, made here),
seed.py (the NoCloud seed ISO that gives a guest its user and keys), client.py (the SSH client:
one Guest object, run() and check_output(), and the console lines a guest writes when it is ready
or has crashed), disks.py (the parsers of what a guest reports about its disks, and unwatch()) and
scripts.py (the guest-side shell scripts of sectorlab/inguest/sh/ as a guest is sent them).
The code that runs *inside* a guest is sectorlab/inguest/, copied there; nothing here runs there.

The names below are the package's face: the client, as the images, the lab, the bench and the
tests use it.
"""

from .client import (  # noqa: F401
    NVME_TCP_FAILED_MARKER,
    NVME_TCP_READY_MARKER,
    READY_MARKER,
    Guest,
    GuestCommandError,
    GuestCrashed,
    GuestUnreachable,
    console_panic,
    console_says_ready,
    host_key_from_line,
    shell_join,
)
