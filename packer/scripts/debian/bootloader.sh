#!/bin/sh -eu
# Installs GRUB on the root disk from inside the guest: the base disk was booted by direct
# kernel boot and has no boot loader. Safe to re-run.
root_part=$(findmnt -n -o SOURCE /)
disk=/dev/$(lsblk -n -o PKNAME "$root_part" | head -1)
[ -b "$disk" ] || { echo "bootloader: cannot find the disk under $root_part (got '$disk')" >&2; exit 1; }
grub-install --target=i386-pc "$disk"
update-grub
echo "bootloader: GRUB installed on $disk (root $root_part)"
