#!/bin/sh -eu
# Puts the guest's kernel, initramfs and kernel command line in /tmp/sectorlab-boot for Packer to
# download beside the image: the lab boots the image by direct kernel boot, skipping GRUB, which
# loads them through the BIOS (under TCG the kernel started ~16 s after QEMU that way, in one cold
# boot's console timeline). An empty cmdline file means "boot through the guest's own boot loader"
# (a layout this script does not know).
out=/tmp/sectorlab-boot
rm -rf "$out"
mkdir -p "$out"
version=$(find /boot -maxdepth 1 -name 'vmlinuz-*' | sed 's|^/boot/vmlinuz-||' | sort -V | tail -1)
root_uuid=$(findmnt -n -o UUID /)
if [ -n "$version" ] && [ -f "/boot/initrd.img-$version" ] && [ -f /etc/default/grub.d/50-sectorlab.cfg ] && [ -n "$root_uuid" ]; then
  cp "/boot/vmlinuz-$version" "$out/vmlinuz"
  cp "/boot/initrd.img-$version" "$out/initrd.img"
  # The same command line as the image's GRUB entry (packer/scripts/debian/lean-boot.sh).
  echo "root=UUID=$root_uuid ro console=ttyS0,115200 quiet" > "$out/cmdline"
  echo "boot-files: kernel $version, root UUID $root_uuid"
else
  : > "$out/vmlinuz"
  : > "$out/initrd.img"
  : > "$out/cmdline"
  echo "boot-files: no Debian kernel layout; the lab boots this image through its boot loader"
fi
chmod 0644 "$out"/*
chmod 0755 "$out"
