"""Whether this stack can run the crash matrix with atomic writes (docs/crash.md): an NVMe device
in QEMU that presents atomic write parameters (QEMU 10's `atomic.awun` and `atomic.awupf`) and a
guest kernel that reports `atomic_write_*` limits and takes RWF_ATOMIC (Linux 6.11 and later). The
host's QEMU is asked for its NVMe device's properties; the guest's kernel release is read in it."""

from __future__ import annotations

import re
import shutil
import subprocess

QEMU = "qemu-system-x86_64"
KERNEL = (6, 11)


def qemu_lacks() -> str | None:
    """Why the host's QEMU cannot present NVMe atomic writes (None: it can)."""
    binary = shutil.which(QEMU)
    if binary is None:
        return f"no {QEMU} on this host"
    try:
        out = subprocess.run([binary, "-device", "nvme,help"], capture_output=True, text=True, timeout=30).stdout
        version = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{QEMU} did not answer: {e}"
    if re.search(r"\batomic\.awupf\b", out):
        return None
    found = re.search(r"version (\S+)", version)
    return (f"the host's QEMU {found.group(1) if found else '(version unknown)'} has no NVMe atomic write parameters "
            f"(atomic.awun, atomic.awupf: QEMU 10, bookworm-backports)")


def kernel_lacks(release: str) -> str | None:
    """Why a guest kernel of this release (uname -r) cannot take RWF_ATOMIC (None: it can)."""
    found = re.match(r"(\d+)\.(\d+)", release)
    if found and (int(found.group(1)), int(found.group(2))) >= KERNEL:
        return None
    return (f"the guest's kernel {release.strip() or '(unknown)'} reports no atomic_write_* limits "
            f"(Linux {KERNEL[0]}.{KERNEL[1]} and later; Debian 12's security archive has 6.12)")


def line(guest_release: str | None = None) -> str | None:
    """One line naming what this stack lacks for the atomic-write matrix, or None when it has all."""
    why = [w for w in (qemu_lacks(), kernel_lacks(guest_release) if guest_release is not None else None) if w]
    return f"atomic writes: not run: {'; '.join(why)}; the rest runs without them" if why else None
