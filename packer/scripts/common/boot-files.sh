#!/bin/sh -eu
# Puts the guest's kernel, initramfs and kernel command line in /tmp/sectorlab-boot for Packer to
# download beside the image: the lab boots the image by direct kernel boot, skipping GRUB, which
# loads them through the BIOS (under TCG the kernel started ~16 s after QEMU that way, in one cold
# boot's console timeline). An empty cmdline file means "boot through the guest's own boot loader"
# (a layout this script does not know).
#
# For direct boot, and only there (GRUB keeps the image's own initramfs-tools image):
# - the initramfs is tiny-initramfs (mktirfs): it loads the virtio and ext4 modules and mounts the
#   root by UUID, without the udev that initramfs-tools starts (measured under TCG: the kernel
#   phase went from 14.2 s to 6.0 s);
# - the kernel is the uncompressed vmlinux when the kernel supports PVH boot, which QEMU loads
#   as an ELF file: no decompressing the xz bzImage in the guest (~5 s less to SSH under TCG,
#   two A/B pairs).
out=/tmp/sectorlab-boot
rm -rf "$out"
mkdir -p "$out"
version=$(find /boot -maxdepth 1 -name 'vmlinuz-*' | sed 's|^/boot/vmlinuz-||' | sort -V | tail -1)
root_uuid=$(findmnt -n -o UUID /)
if [ -n "$version" ] && [ -f "/boot/initrd.img-$version" ] && [ -f /etc/default/grub.d/50-sectorlab.cfg ] && [ -n "$root_uuid" ]; then
  config="/boot/config-$version"
  if grep -q '^CONFIG_PVH=y' "$config" && grep -q '^CONFIG_KERNEL_XZ=y' "$config"; then
    # The bzImage's payload is one xz stream; what follows it is not part of the kernel.
    python3 - "/boot/vmlinuz-$version" "$out/kernel" <<'PY'
import lzma, sys
data = open(sys.argv[1], "rb").read()
start = data.find(b"\xfd7zXZ\x00")
if start < 0:
    sys.exit(f"{sys.argv[1]}: no xz stream in the bzImage")
vmlinux = lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(data[start:])
if vmlinux[:4] != b"\x7fELF":
    sys.exit(f"{sys.argv[1]}: the xz stream is not an ELF kernel")
open(sys.argv[2], "wb").write(vmlinux)
PY
    kernel_kind="vmlinux (PVH)"
  else
    cp "/boot/vmlinuz-$version" "$out/kernel"
    kernel_kind="bzImage"
  fi
  if command -v mktirfs >/dev/null 2>&1; then
    mktirfs --auto-modules=no --microcode=no --include-modules=virtio_pci,virtio_blk,ext4 \
            -o "$out/initrd.img" "$version"
    initrd_kind="tiny-initramfs"
  else
    cp "/boot/initrd.img-$version" "$out/initrd.img"
    initrd_kind="initramfs-tools"
  fi
  # The image's GRUB command line (packer/scripts/debian/lean-boot.sh), plus, for the lab's boot
  # under TCG (initcall_debug timings from one boot each way):
  # - acpi=noirq: PCI interrupts are routed by the BIOS's PIRQ table, not ACPI. The ACPI route
  #   runs the pc machine's _PRT method, an AML loop, for every PCI device the kernel enables:
  #   278-393 ms for each virtio device at boot (2.35 s for 7), against 0.7-5.7 ms. Every lab device
  #   uses MSI-X; a hot-plugged NVMe controller logs "can't find IRQ for PCI INT A" and uses it.
  # - cryptomgr.notests: no self-tests of the kernel's crypto algorithms at boot (0.6-0.9 s).
  # - systemd.log_level=notice: PID 1 does not log every unit's start to the journal; warnings
  #   and failures still are.
  echo "root=UUID=$root_uuid ro console=ttyS0,115200 quiet transparent_hugepage=never acpi=noirq cryptomgr.notests systemd.log_level=notice" > "$out/cmdline"
  echo "boot-files: kernel $version as $kernel_kind, $initrd_kind, root UUID $root_uuid"
else
  : > "$out/kernel"
  : > "$out/initrd.img"
  : > "$out/cmdline"
  echo "boot-files: no Debian kernel layout; the lab boots this image through its boot loader"
fi
chmod 0644 "$out"/*
chmod 0755 "$out"
