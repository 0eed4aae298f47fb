"""`sectorlab doctor`: what this host has for the lab, one line each, and what to do when it lacks it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from ..paths import cache_dir
from . import accel, libvirt, tooling

MIN_FREE_GIB = 10


def _version(cmd: list[str]) -> str | None:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (out.stdout or out.stderr).strip().splitlines()
    return text[0] if out.returncode == 0 and text else None


def checks() -> list[tuple[str, bool, str]]:
    """(what, ok, detail) for each thing the lab needs."""
    rows: list[tuple[str, bool, str]] = []
    found = accel.detect()
    rows.append(("accelerator", True, f"{found.name}: {found.reason}"))
    qemu = _version([accel.QEMU, "--version"])
    rows.append(("qemu", qemu is not None, qemu or "missing: run scripts/bootstrap"))
    packer = _version(["packer", "version"])
    rows.append(("packer", packer is not None, packer or "missing: run scripts/bootstrap"))
    tf = tooling.terraform_binary()
    tf_version = _version([str(tf), "version"]) if tf else None
    rows.append(("terraform", tf_version is not None,
                 f"{tf_version} ({tf})" if tf_version else "missing: run scripts/bootstrap (builds OpenTofu)"))
    provider = tooling.provider_binary()
    rows.append(("libvirt provider", provider.exists() or tooling.provider_build_pid() is not None,
                 tooling.provider_status()))
    rc = tooling.cli_config()
    rows.append(("terraform CLI config", rc.exists(),
                 f"{rc} (make exports TF_CLI_CONFIG_FILE)" if rc.exists() else f"{rc} missing: run scripts/bootstrap"))
    versions = libvirt.get_host("qemu:///system").version()
    daemon = next((v for v in versions.split("; ") if "daemon" in v), versions) if versions else None
    rows.append(("libvirt", daemon is not None,
                 " ".join(daemon.split()) if daemon else "qemu:///system does not answer: run scripts/bootstrap "
                 "(starts virtlogd and libvirtd when there is no systemd)"))
    for tool in ("mmdebstrap", "xsltproc", "genisoimage", "fio"):
        path = shutil.which(tool)
        rows.append((tool, path is not None, path or "missing: run scripts/bootstrap"))
    cache = cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(cache).free / 2**30
    rows.append(("disk space", free >= MIN_FREE_GIB,
                 f"{free:.1f} GiB free in {cache}" + ("" if free >= MIN_FREE_GIB else
                                                      f" (needs {MIN_FREE_GIB} GiB: free space or set "
                                                      "SECTORLAB_CACHE)")))
    kvm = Path("/dev/kvm")
    rows.append(("/dev/kvm", True, ("present" if kvm.exists() else "absent") +
                 (", read-write" if kvm.exists() and os.access(kvm, os.R_OK | os.W_OK) else "")))
    return rows


def report() -> int:
    rows = checks()
    width = max(len(r[0]) for r in rows)
    for what, ok, detail in rows:
        print(f"{'ok ' if ok else 'BAD'} {what:<{width}}  {detail}")
    bad = [r[0] for r in rows if not r[1]]
    if bad:
        print(f"\n{len(bad)} problem(s): {', '.join(bad)}")
    return 1 if bad else 0
