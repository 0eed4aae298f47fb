"""The shared image pool: the built guest image, kernel and initramfs as volumes the labs' root
disks are backed by.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .. import images
from ..host import libvirt
from ..paths import link_or_copy
from .state import Progress

IMAGE_POOL = "sectorlab-images"
IMAGE_POOL_DIR = "/var/lib/libvirt/images/sectorlab-images"
# images.build's names with the image's sha256 appended: a file of the pool is one build, never
# another build with the same inputs (a rebuild, or another cache on this host), which would
# change the bytes under the root disks and saved states backed by it.
BUILT = r"[0-9a-f]{16}-[0-9a-f]{16}\.(qcow2|kernel|initrd)"


def volume_name(record: images.ImageRecord, path: str | Path) -> str:
    """The pool's name for a file of the build: its cache name with the image's sha256 in it."""
    path = Path(path)
    return f"{path.stem}-{record.image_sha256[:16]}{path.suffix}"


def publish_image(uri: str, record: images.ImageRecord, progress: Progress) -> dict:
    """Make the built image a volume of the shared pool the labs' root disks are backed by, with the
    image's kernel and initramfs beside it for direct kernel boot. On this host each is a hard link
    to the cached file (no copy at each lab-up); on a remote libvirt host each is uploaded once.
    Older images of the guest that no domain uses are removed from the pool.
    Returns the volume name, the files uploaded, and the direct-boot kernel, initrd and command line
    ('' for GRUB)."""
    image, guest = Path(record.image), record.guest
    host = libvirt.get_host(uri)
    if IMAGE_POOL not in host.virsh("pool-list", "--all", "--name", check=False).split():
        host.virsh("pool-define-as", IMAGE_POOL, "dir", "--target", IMAGE_POOL_DIR)
        host.virsh("pool-build", IMAGE_POOL)
    if host.virsh("pool-info", IMAGE_POOL, check=False).find("running") < 0:
        host.virsh("pool-start", IMAGE_POOL)
    listing = host.virsh("vol-list", IMAGE_POOL, check=False)
    volumes = [v.split()[0] for v in listing.splitlines() if v.split()]
    uploaded: list[str] = []

    def put(source: Path, fmt: str) -> str:
        """The file as a volume of the image pool; its path on the libvirt host."""
        name = volume_name(record, source)
        target = Path(IMAGE_POOL_DIR) / name
        if not host.remote:
            if not target.exists():
                link_or_copy(source, target)
                os.chmod(target, 0o644)
                host.virsh("pool-refresh", IMAGE_POOL)
            return str(target)
        if name not in volumes:
            size = source.stat().st_size
            progress(f"uploading {name} ({size / 2**20:.0f} MiB) to {host.label}")
            host.virsh("vol-create-as", IMAGE_POOL, name, str(size), "--format", fmt)
            try:
                host.virsh("vol-upload", "--pool", IMAGE_POOL, name, str(source), timeout=3600)
            except BaseException:
                host.virsh("vol-delete", "--pool", IMAGE_POOL, name, check=False)  # never half an image
                raise
            uploaded.append(name)
        return host.virsh("vol-path", "--pool", IMAGE_POOL, name).strip()

    put(image, "qcow2")
    boot = {"kernel": "", "initrd": "", "cmdline": ""}
    if record.cmdline and record.kernel and record.initrd:
        boot = {"kernel": put(Path(record.kernel), "raw"), "initrd": put(Path(record.initrd), "raw"),
                "cmdline": record.cmdline}
    in_use = " ".join(host.virsh("dumpxml", d, check=False)
                      for d in host.virsh("list", "--all", "--name", check=False).split())
    # Older builds of the guest no domain uses, and files of the naming before the sha256 was in it.
    built = re.compile(rf"{re.escape(guest)}-(?:{BUILT}|[0-9a-f]{{16}}\.(qcow2|kernel|initrd))")
    this = Path(volume_name(record, image)).stem
    for old in volumes:
        if Path(old).stem != this and built.fullmatch(old) and Path(old).stem not in in_use:
            host.virsh("vol-delete", "--pool", IMAGE_POOL, old, check=False)
    return {"volume": volume_name(record, image), "uploaded": uploaded, **boot}
