"""virsh, the one way sectorlab talks to libvirt outside Terraform."""

from __future__ import annotations

import subprocess

from .errors import SectorlabError
from .remote import virsh_uri


def run(uri: str, *args: str, check: bool = True, timeout: float = 300) -> str:
    """virsh's standard output; with `check`, a failure raises with virsh's message."""
    proc = subprocess.run(["virsh", "-q", "-c", virsh_uri(uri), *args], capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise SectorlabError(f"virsh {' '.join(args)}: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc.stdout


def version(uri: str) -> str | None:
    """`virsh version --daemon` (library, API, hypervisor and daemon versions), or None when libvirt
    does not answer."""
    try:
        out = run(uri, "version", "--daemon", timeout=30)
    except (OSError, subprocess.TimeoutExpired, SectorlabError):
        return None
    return "; ".join(line.strip() for line in out.splitlines() if line.strip()) or None
