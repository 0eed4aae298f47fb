"""Warm lab-up: guests restored from a saved state instead of booted, NVMe hot-plugged.

Booting a guest under TCG costs tens of seconds; restoring its saved memory costs a few. The
first lab-up of a lab boots cold, and once every guest answers SSH (and its in-guest NVMe/TCP
target is up) saves each guest's memory and copies its root disk as it was at that instant
(`save_running`: the guest is paused for that, not stopped; `virsh save` and a restore where
libvirt cannot). Later lab-ups give Terraform the saved root disk as the
VM's root volume and put the saved state where libvirt keeps a domain's managed-save image, so
the domain's first start (in Terraform's apply) restores the guest instead of booting it; then
the guest's clock is stepped (sectorlab/inguest/guestprobe.py).

A saved state is only valid for the exact same guest image, lab definition, QEMU, libvirt and
Terraform module: those make up its key (`state_key`). The data disks are not saved: the state
is taken before anything writes to them, so the fresh, empty volumes each lab-up creates match
it, and no run sees a previous run's writes.

QEMU 7.2's emulated NVMe controller cannot be saved ("non-migratable device"), so it is never in
the domain: sectorlab/lab/hotplug.py adds each controller over QEMU's monitor after the guest is
up, on the cold and the warm path alike.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from .. import images, labdef
from ..errors import SectorlabError
from ..host import accel as accel_mod
from ..host import libvirt
from ..paths import REPO, cache_dir, link_or_copy

if TYPE_CHECKING:
    from .record import VMRecord

FORMAT = 1
# What a saved guest state depends on besides the image and the lab definition.
MODULE_FILES = sorted((REPO / "terraform").glob("*.tf")) + sorted((REPO / "terraform").glob("*.tftpl")) + [
    REPO / "sectorlab" / "guest" / "seed.py",
    REPO / "sectorlab" / "lab" / "pool.py",  # the backing files' names
]
# Copied from the lab's state directory into a saved state and back: what the restored guest
# already knows (its login key, host key, SSH port and seed).
STATE_FILES = ("id_ed25519", "id_ed25519.pub", "ports.json")
VM_STATE_FILES = ("host-{vm}", "host-{vm}.pub", "seed-{vm}.iso", "seed-{vm}.id")

CHANGED_NAMES = {"lab": "lab definition", "images": "guest image", "qemu": "QEMU", "libvirt": "libvirt",
                 "module": "Terraform module or seed format", "domain_type": "accelerator",
                 "kernel_args": "guest kernel command line",
                 "format": "saved-state format", "lab_id": "lab id"}

Progress = Callable[[str], None]


def qemu_version() -> str:
    out = subprocess.run([accel_mod.QEMU, "--version"], capture_output=True, text=True).stdout
    return out.splitlines()[0].strip() if out else "unknown"


def lab_fingerprint(lab: labdef.Lab) -> dict:
    """What of a lab definition the guest's saved state depends on (not the file's path or layout)."""
    return {
        "name": lab.name,
        "vms": [{"name": vm.name, "guest": vm.guest, "memory_mib": vm.memory_mib, "ssh_port": vm.ssh_port,
                 "uri": vm.libvirt_uri,
                 "disks": [{"name": d.name, "bus": d.bus, "logical": d.geometry.logical_block_size,
                            "physical": d.geometry.physical_block_size, "min_io": d.geometry.min_io_size,
                            "opt_io": d.geometry.opt_io_size, "size_mib": d.size_mib, "serial": d.serial}
                           for d in vm.disks]}
                for vm in lab.vms],
    }


def state_key(lab: labdef.Lab, image_sha256: dict[str, str], domain_type: str, lab_id: str) -> tuple[str, dict]:
    uri = lab.vms[0].libvirt_uri
    parts = {
        "format": FORMAT,
        # The domain's <metadata> is saved with the guest (sectorlab/lab/ownership.py): another id, another state.
        "lab_id": lab_id,
        "lab": lab_fingerprint(lab),
        "images": dict(sorted(image_sha256.items())),
        "qemu": qemu_version(),
        "libvirt": libvirt.get_host(uri).version() or "unknown",
        "module": images.hash_files(MODULE_FILES),
        "domain_type": domain_type,
        "kernel_args": list(accel_mod.guest_kernel_args(domain_type)),
    }
    return images.hash_files([], extra=json.dumps(parts, sort_keys=True))[:16], parts


@dataclass
class SavedState:
    lab_name: str
    key: str
    parts: dict | None = None  # what the key was made of (state_key), to say what changed

    @property
    def root(self) -> Path:
        return cache_dir() / "saved" / self.lab_name

    @property
    def dir(self) -> Path:
        return self.root / self.key

    def save_file(self, vm: str) -> Path:
        return self.dir / f"{vm}.save"

    def root_disk(self, vm: str) -> Path:
        return self.dir / f"{vm}-root.qcow2"

    def missing(self, vms: list[str]) -> str | None:
        """Why this saved state cannot be used, or None when it is complete."""
        if not self.dir.is_dir():
            others = [p for p in self.root.glob("*") if p.is_dir()] if self.root.is_dir() else []
            if not others:
                return "no saved state yet"
            old = {}
            try:
                old = json.loads((others[0] / "meta.json").read_text())
            except (OSError, ValueError):
                pass
            changed = [k for k in sorted(self.parts or {}) if old.get(k) != self.parts[k]]
            return (f"the saved state {others[0].name} was made with another "
                    f"{', '.join(CHANGED_NAMES.get(k, k) for k in changed) or 'key'}")
        meta = self.dir / "meta.json"
        wanted = [meta] + [self.dir / f for f in STATE_FILES]
        for vm in vms:
            wanted += [self.save_file(vm), self.root_disk(vm)] + [self.dir / f.format(vm=vm) for f in VM_STATE_FILES]
        absent = [p.name for p in wanted if not p.exists()]
        if absent:
            return f"the saved state {self.key} is incomplete (no {', '.join(absent)})"
        return None

    def install(self, state: Path, vms: list[str]) -> None:
        """Put the saved login key, host keys, ports, seeds and root disks into the lab's state
        directory (the root disk as root-<vm>.qcow2, which Terraform uploads as the VM's root volume)."""
        for name in list(STATE_FILES) + [f.format(vm=vm) for vm in vms for f in VM_STATE_FILES]:
            shutil.copy2(self.dir / name, state / name)
        for vm in vms:
            shutil.copyfile(self.root_disk(vm), state / f"root-{vm}.qcow2")

    def discard(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def _virsh_path(path: Path) -> str:
    """A path inside one of virsh's comma-separated options (a comma is doubled)."""
    return str(path).replace(",", ",,")


def save_running(uri: str, domain: str, save_file: Path, root_volume: str, root_copy: Path) -> None:
    """Write the running domain's memory to `save_file` and copy its root disk, with the guest
    paused in between, not stopped: a memory-only external snapshot (every disk `snapshot=no`,
    no snapshot metadata) is a libvirt save image, which libvirt restores as a managed save. The
    guest then goes on where it was, with its SSH session: the save phase of a cold lab-up took
    0.8 s this way, against 3.7-4.9 s for `virsh save`, a root disk copy, `virsh restore` and a
    new SSH login.

    The image is marked as running (it was taken paused, so that the root disk copy matches it).
    Raises SectorlabError when libvirt refuses; the domain runs again either way."""
    host = libvirt.get_host(uri)
    disks = [line.split()[0] for line in host.virsh("domblklist", domain).splitlines() if line.split()]
    host.virsh("suspend", domain)
    try:
        host.virsh("snapshot-create-as", domain, "--no-metadata",
                   "--memspec", f"file={_virsh_path(save_file)},snapshot=external",
                   *[arg for d in disks for arg in ("--diskspec", f"{d},snapshot=no")])
        shutil.copyfile(root_volume, root_copy)
    finally:
        host.virsh("resume", domain)
    xml = save_file.with_suffix(".xml")
    xml.write_text(host.virsh("save-image-dumpxml", str(save_file)))
    try:
        host.virsh("save-image-define", str(save_file), str(xml), "--running")
    finally:
        xml.unlink()


def save(saved: SavedState, parts: dict, uri: str, vms: dict[str, VMRecord], state: Path,
         progress: Progress) -> list[str]:
    """Save every guest's memory and root disk; returns the VMs that were stopped and restored
    to do so (their SSH sessions are gone), the others kept running.

    Written to a temporary directory renamed when complete, so a failure leaves no half state."""
    host = libvirt.get_host(uri)
    saved.root.mkdir(parents=True, exist_ok=True)
    tmp = saved.root / f".{saved.key}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    restored = []
    try:
        for name, vm in vms.items():
            save_file = tmp / f"{name}.save"
            root_copy = tmp / f"{name}-root.qcow2"
            try:
                save_running(uri, vm.domain, save_file, vm.root_volume, root_copy)
                how = "while it kept running"
            except SectorlabError as e:
                progress(f"{name}: could not save its state while it runs ({e}); stopping and restoring it")
                save_file.unlink(missing_ok=True)
                host.virsh("save", vm.domain, str(save_file))
                shutil.copyfile(vm.root_volume, root_copy)
                host.virsh("restore", str(save_file))
                restored.append(name)
                how = "and restored it"
            for f in VM_STATE_FILES:
                shutil.copy2(state / f.format(vm=name), tmp / f.format(vm=name))
            progress(f"{name}: saved its state ({save_file.stat().st_size >> 20} MiB) {how}")
        for f in STATE_FILES:
            shutil.copy2(state / f, tmp / f)
        (tmp / "meta.json").write_text(json.dumps({"key": saved.key, "saved_at": time.time(), **parts}, indent=2))
        for old in saved.root.iterdir():
            if old.is_dir() and old != tmp:
                shutil.rmtree(old, ignore_errors=True)
        tmp.rename(saved.dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return restored


MANAGED_SAVE_DIR = Path("/var/lib/libvirt/qemu/save")


def managed_save_path(domain: str) -> Path:
    """Where libvirt (qemu:///system) keeps a domain's managed-save image; starting a domain that
    has one restores it (and removes the file) instead of booting."""
    return MANAGED_SAVE_DIR / f"{domain}.save"


def arm(saved: SavedState, vm: str, domain: str) -> None:
    """Make the saved state the domain's managed-save image before Terraform creates and starts it:
    a hard link (no copy), which libvirt removes once the restore succeeded."""
    target = managed_save_path(domain)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.unlink(missing_ok=True)
    link_or_copy(saved.save_file(vm), target)


def clear(lab_name: str) -> list[str]:
    root = cache_dir() / "saved" / lab_name
    removed = [p.name for p in root.glob("*")] if root.is_dir() else []
    shutil.rmtree(root, ignore_errors=True)
    return removed

