"""Decide between KVM and TCG by a real probe, never by the mere presence of /dev/kvm.

Some hosts expose a /dev/kvm on which a normal guest kernel hangs silently (nested,
paravirtual variants without VMX/SVM in the CPU flags). So KVM counts only when:
the CPU advertises vmx or svm, /dev/kvm opens read-write and answers KVM_GET_API_VERSION,
and a guest actually runs under it: a 512-byte boot sector that writes to QEMU's
isa-debug-exit port (and, when a guest kernel is at hand, that kernel booting far enough
to panic for want of a root filesystem) must finish within a short timeout.
The verdict is cached per host boot and QEMU binary; SECTORLAB_ACCEL=kvm|tcg overrides it.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import UsageError
from ..paths import cache_dir, write_atomic
from . import libvirt

QEMU = "qemu-system-x86_64"
KVM_GET_API_VERSION = 0xAE00
KVM_API_VERSION = 12
PROBE_TIMEOUT = 20.0

# mov al,1 ; out 0xf4,al ; hlt ; jmp $-1  -> QEMU exits with status (1 << 1) | 1 = 3.
_BOOT_SECTOR_CODE = bytes([0xB0, 0x01, 0xE6, 0xF4, 0xF4, 0xEB, 0xFD])
_DEBUG_EXIT_STATUS = 3

# What a lab guest's kernel is given on its command line beside the image's own, by the libvirt
# domain type. Under TCG, QEMU (7.2, Debian 12's) finds the host code it translated from guest code
# by the code's virtual address as well as its physical one: with address-space randomization each
# exec maps the executable, ld.so and every library at new addresses, and all of it is translated
# anew. `norandmaps` keeps them where they were: 200 execs of /bin/true in a lab guest 4.4-5.5 s ->
# 1.2-1.6 s (4 interleaved pairs), the default lab's scenarios 206.5 -> 135.6 s (docs/performance.md).
# The guest is a throw-away lab machine reached over the host's loopback with its own key: its
# processes give up a hardening against memory-corruption exploits, nothing the lab measures (block
# sizes, alignment, the device's timing). Under KVM the guest's code runs as it is and its
# randomization costs nothing: it keeps it.
GUEST_KERNEL_ARGS = {"qemu": ("norandmaps",), "kvm": ()}


def guest_kernel_args(domain_type: str) -> tuple[str, ...]:
    """The kernel arguments a lab guest of this libvirt domain type ("qemu" or "kvm") is given."""
    return GUEST_KERNEL_ARGS[domain_type]


@dataclass
class Accelerator:
    name: str  # "kvm" or "tcg": what QEMU's -accel and Packer's accelerator take
    reason: str

    @property
    def libvirt_domain_type(self) -> str:
        return "kvm" if self.name == "kvm" else "qemu"

    @property
    def guest_kernel_args(self) -> tuple[str, ...]:
        return guest_kernel_args(self.libvirt_domain_type)


def boot_sector() -> bytes:
    code = _BOOT_SECTOR_CODE
    return code + bytes(510 - len(code)) + b"\x55\xaa"


def cpu_virt_flags(cpuinfo: str) -> set[str]:
    """The hardware virtualization flags (vmx, svm) named in /proc/cpuinfo text."""
    found: set[str] = set()
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            found.update({"vmx", "svm"} & set(line.split(":", 1)[-1].split()))
    return found


def kvm_api_version(device: str = "/dev/kvm") -> int | None:
    try:
        fd = os.open(device, os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return fcntl.ioctl(fd, KVM_GET_API_VERSION)
    except OSError:
        return None
    finally:
        os.close(fd)


def run_boot_sector(accel: str, timeout: float = PROBE_TIMEOUT) -> tuple[bool, str]:
    """Boot the probe sector under `accel`; True when it reached the debug-exit port in time."""
    with tempfile.TemporaryDirectory(prefix="sectorlab-probe-") as tmp:
        image = Path(tmp) / "probe.img"
        image.write_bytes(boot_sector())
        cmd = [QEMU, "-accel", accel, "-display", "none", "-nodefaults", "-no-reboot", "-m", "16",
               "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04",
               "-drive", f"file={image},format=raw,if=ide"]
        return _run_probe(cmd, timeout, lambda rc: rc == _DEBUG_EXIT_STATUS, "boot sector")


def run_kernel(accel: str, kernel: Path, timeout: float = PROBE_TIMEOUT) -> tuple[bool, str]:
    """Boot a real kernel without a root filesystem: it must panic and QEMU must exit in time."""
    cmd = [QEMU, "-accel", accel, "-display", "none", "-nodefaults", "-no-reboot", "-m", "256",
           "-serial", "none", "-kernel", str(kernel), "-append", "panic=-1 root=/dev/nonexistent"]
    return _run_probe(cmd, timeout, lambda rc: rc == 0, f"kernel {kernel.name}")


def _run_probe(cmd: list[str], timeout: float, ok, what: str) -> tuple[bool, str]:
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, f"{what} did not finish under {cmd[2]} within {timeout:.0f} s"
    except FileNotFoundError:
        return False, f"{QEMU} is not installed (run scripts/bootstrap)"
    took = time.monotonic() - start
    if ok(proc.returncode):
        return True, f"{what} ran under {cmd[2]} in {took:.1f} s"
    detail = proc.stderr.strip().splitlines()[-1:] or ["no message"]
    return False, f"{what} under {cmd[2]} exited {proc.returncode}: {detail[0]}"


def probe(kernel: Path | None = None, cpuinfo: str | None = None, kvm_device: str = "/dev/kvm") -> Accelerator:
    """Run the probe (no cache). Each failed step gives the reason TCG was chosen."""
    if cpuinfo is None:
        cpuinfo = Path("/proc/cpuinfo").read_text()
    flags = cpu_virt_flags(cpuinfo)
    if not flags:
        present = "present" if os.path.exists(kvm_device) else "absent"
        return Accelerator("tcg", f"the CPU flags name neither vmx nor svm ({kvm_device} {present}, not trusted)")
    version = kvm_api_version(kvm_device)
    if version != KVM_API_VERSION:
        return Accelerator("tcg", f"{kvm_device} does not answer KVM_GET_API_VERSION={KVM_API_VERSION} "
                                  f"(got {version})")
    ok, why = run_boot_sector("kvm")
    if not ok:
        return Accelerator("tcg", why)
    if kernel is not None:
        ok, why = run_kernel("kvm", kernel)
        if not ok:
            return Accelerator("tcg", why)
    return Accelerator("kvm", f"{'+'.join(sorted(flags))} in CPU flags and {why}")


def _cache_key() -> str:
    boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    qemu = shutil.which(QEMU) or "missing"
    mtime = os.stat(qemu).st_mtime if qemu != "missing" else 0
    return f"{boot_id}:{qemu}:{mtime}"


def _forced() -> Accelerator | None:
    forced = os.environ.get("SECTORLAB_ACCEL")
    if not forced:
        return None
    if forced not in ("kvm", "tcg"):
        raise UsageError(f"SECTORLAB_ACCEL={forced!r}: expected 'kvm' or 'tcg'; unset it to probe")
    return Accelerator(forced, "forced by SECTORLAB_ACCEL")


def detect_for(uri: str) -> Accelerator:
    """The accelerator for VMs of the libvirt at `uri`: detect() on this host; on a remote host,
    from its CPU flags and its /dev/kvm (read over SSH; the boot probe runs only here)."""
    host = libvirt.get_host(uri)
    if not host.remote:
        return detect()
    forced = _forced()
    if forced:
        return forced
    flags = cpu_virt_flags(host.read_text("/proc/cpuinfo") or "")
    if not flags:
        return Accelerator("tcg", f"{host.label}'s CPU flags name neither vmx nor svm")
    if host.missing(["/dev/kvm"]):
        return Accelerator("tcg", f"{'+'.join(sorted(flags))} in {host.label}'s CPU flags, but it has no /dev/kvm")
    return Accelerator("kvm", f"{'+'.join(sorted(flags))} in {host.label}'s CPU flags and /dev/kvm there (not "
                              f"probed by a boot: that runs on this host only; SECTORLAB_ACCEL=tcg overrides)")


def detect(kernel: Path | None = None, refresh: bool = False) -> Accelerator:
    """The accelerator to use, from SECTORLAB_ACCEL, the per-boot cache or a fresh probe."""
    forced = _forced()
    if forced:
        return forced
    cache = cache_dir() / "accel.json"
    key = _cache_key()
    if not refresh and cache.exists():
        try:
            saved = json.loads(cache.read_text())
            if saved.get("key") == key:
                return Accelerator(saved["name"], saved["reason"] + " (cached for this boot)")
        except (ValueError, KeyError):
            pass
    found = probe(kernel)
    cache.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(cache, json.dumps({"key": key, **asdict(found)}))
    return found
