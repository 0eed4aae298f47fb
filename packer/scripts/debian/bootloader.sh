#!/bin/sh -eu
# GRUB for the image, made in the base disk's chroot (scripts/build-debian-base) at the host's
# speed instead of by grub-install in Packer's emulated guest (16 s there): the disk does not exist
# yet in the chroot (mke2fs -d makes it later, without loop devices), so this writes what
# grub-install would and the base script puts the two boot images on the disk:
# - /boot/grub/grub.cfg by Debian's update-grub, honouring /etc/default/grub (lean-boot.sh), with a
#   stand-in for grub-probe that answers for the disk the image will be: one MBR partition from
#   1 MiB, ext4 with the UUID mke2fs is given (root=UUID=... as on a booted guest);
# - GRUB's modules in /boot/grub/i386-pc and an empty grubenv, as grub-install copies them;
# - OUTDIR/core.img (grub-mkimage: the first disk's ext2 driver and an early config that finds the
#   root by its UUID, as grub-install's load.cfg does) and OUTDIR/boot.img (the MBR code).
# A later update-grub or grub-install in a running guest finds the real disk as usual.
#
# usage (in the chroot): bootloader.sh ROOT_UUID OUTDIR
uuid=${1:?usage: bootloader.sh ROOT_UUID OUTDIR}
out=${2:?usage: bootloader.sh ROOT_UUID OUTDIR}
lib=/usr/lib/grub/i386-pc
[ -f $lib/boot.img ] || { echo "bootloader: no $lib/boot.img: is grub-pc in images/debian12/packages?" >&2; exit 1; }

probe=/usr/sbin/grub-probe
mv $probe $probe.sectorlab-real
trap 'mv $probe.sectorlab-real $probe' EXIT
cat > $probe <<PROBE
#!/bin/sh
# Stand-in for grub-probe while update-grub runs in the image's chroot (packer/scripts/debian/bootloader.sh).
for arg; do case \$arg in --target=*) target=\${arg#--target=} ;; esac; done
case \$target in
  device) echo "UUID=$uuid" ;;  # 10_linux uses it as root= when /dev/disk/by-uuid is absent
  fs) echo ext2 ;;
  fs_uuid) echo "$uuid" ;;
  fs_label) echo sectorlab-root ;;
  partmap) echo msdos ;;
  abstraction|cryptodisk_uuid|partuuid) ;;
  compatibility_hint) echo hd0,msdos1 ;;
  hints_string) echo "--hint-bios=hd0,msdos1 --hint-efi=hd0,msdos1 --hint-baremetal=ahci0,msdos1" ;;
  drive) echo "(hd0,msdos1)" ;;
  *) echo "grub-probe stand-in: no answer for --target=\$target" >&2; exit 1 ;;
esac
PROBE
chmod 0755 $probe
update-grub 2>&1 | sed 's/^/bootloader: update-grub: /'
grep -q "root=UUID=$uuid " /boot/grub/grub.cfg \
  || { echo "bootloader: /boot/grub/grub.cfg does not boot root=UUID=$uuid" >&2; exit 1; }

mkdir -p /boot/grub/i386-pc "$out"
cp $lib/*.mod $lib/*.lst /boot/grub/i386-pc/
grub-editenv /boot/grub/grubenv create
cat > "$out/load.cfg" <<LOAD
search.fs_uuid $uuid root hd0,msdos1
set prefix=(\$root)'/boot/grub'
LOAD
grub-mkimage -O i386-pc -d $lib -c "$out/load.cfg" -p /boot/grub -o "$out/core.img" \
  biosdisk part_msdos ext2 search_fs_uuid
cp $lib/boot.img "$out/boot.img"
echo "bootloader: grub.cfg, modules and core.img ($(wc -c < "$out/core.img") bytes) for root UUID $uuid"
