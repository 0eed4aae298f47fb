#!/bin/sh -eu
# Trims what a lab guest does not need from the Debian boot: under TCG every unit costs seconds.
# Runs in the base disk's chroot (scripts/build-debian-base), where systemctl edits the unit links
# offline and update-initramfs runs at the host's speed, not in Packer's emulated guest. Safe to
# re-run.

# Masked, not removed: the packages stay as Debian ships them.
for unit in e2scrub_reap.service e2scrub_all.timer apt-daily.timer apt-daily-upgrade.timer \
            fstrim.timer man-db.timer systemd-networkd-wait-online.service getty@tty1.service \
            systemd-logind.service getty-static.service nvmf-autoconnect.service \
            systemd-binfmt.service proc-sys-fs-binfmt_misc.automount \
            modprobe@dm_mod.service modprobe@efi_pstore.service modprobe@fuse.service modprobe@loop.service \
            systemd-pstore.service dev-hugepages.mount dev-mqueue.mount sys-kernel-debug.mount \
            sys-kernel-tracing.mount sys-fs-fuse-connections.mount systemd-journal-flush.service \
            systemd-network-generator.service systemd-sysusers.service systemd-random-seed.service \
            systemd-update-utmp.service systemd-update-utmp-runlevel.service dpkg-db-backup.timer \
            systemd-tmpfiles-clean.timer; do
  systemctl mask "$unit" >/dev/null 2>&1 || echo "lean-boot: could not mask $unit (absent)"
done

# Generators run at every boot before any unit starts. Masked are those for setups a lab guest
# does not have (encrypted, verity or integrity volumes, GPT auto-mounts, hibernation, SysV
# scripts, rc.local, offline updates) and the login prompt on the serial console (the lab user
# has no password; the console log stays). Kept: fstab and debug (systemd.mask= etc. on the
# kernel command line still work).
mkdir -p /etc/systemd/system-generators
for generator in systemd-cryptsetup-generator systemd-getty-generator systemd-gpt-auto-generator \
                 systemd-hibernate-resume-generator systemd-integritysetup-generator \
                 systemd-rc-local-generator systemd-run-generator systemd-system-update-generator \
                 systemd-sysv-generator systemd-veritysetup-generator; do
  ln -sf /dev/null "/etc/systemd/system-generators/$generator"
done

# udev's coldplug replays an "add" event for every subsystem and every device present at boot,
# each through every rule, on the one vCPU that also boots everything else (`udevadm trigger
# --dry-run --verbose` in a lab VM after lab-up: 233 subsystems and 310 devices, 71 of them ttys;
# the replay below keeps 107 of those devices, 54 of them ACPI objects). Replayed here are only
# the buses and classes the lab uses: PCI and virtio (their drivers load from these events), block
# devices (the by-id links and the udev database lsblk reads), SCSI (sd and sg), the NIC (networkd
# waits for udev to have seen it), NVMe, and ACPI (the power button, for a clean shutdown). Devices
# that appear later (hot-plugged NVMe, NVMe/TCP namespaces, SCSI disks) get their events as usual.
# Under TCG with the lab's disks, 3 A/B pairs: 32.7 s to SSH (32.5-32.8) against 37.0 s (31.8-38.1).
mkdir -p /etc/systemd/system/systemd-udev-trigger.service.d
cat > /etc/systemd/system/systemd-udev-trigger.service.d/50-sectorlab.conf <<'COLDPLUG'
[Service]
ExecStart=
ExecStart=-udevadm trigger --type=devices --action=add --subsystem-match=pci --subsystem-match=virtio --subsystem-match=block --subsystem-match=scsi --subsystem-match=scsi_generic --subsystem-match=net --subsystem-match=nvme --subsystem-match=acpi
COLDPLUG

# sshd checks its configuration in a second sshd process before starting (ExecStartPre): the
# image's configuration is fixed, and a broken one still fails the start itself.
mkdir -p /etc/systemd/system/ssh.service.d
cat > /etc/systemd/system/ssh.service.d/50-sectorlab.conf <<'SSHD'
[Service]
ExecStartPre=
SSHD

# Drivers for emulated hardware a lab guest never uses; udev loading them costs seconds under
# TCG (the floppy probe alone retries a read of an empty drive).
cat > /etc/modprobe.d/sectorlab-lean.conf <<'BLACKLIST'
blacklist floppy
blacklist pcspkr
blacklist parport_pc
blacklist ppdev
blacklist bochs
blacklist kvm_amd
blacklist kvm_intel
blacklist kvm
blacklist cfg80211
blacklist rfkill
blacklist psmouse
blacklist serio_raw
blacklist evdev
blacklist i2c_piix4
blacklist efi_pstore
blacklist virtio_console
blacklist powernow_k8
blacklist acpi_cpufreq
blacklist qemu_fw_cfg
# Accelerated crypto the CPU model offers: each self-tests at load, and the generic code serves.
blacklist aesni_intel
blacklist ghash_clmulni_intel
blacklist sha1_ssse3
blacklist sha256_ssse3
blacklist sha512_ssse3
blacklist crc32_pclmul
blacklist crct10dif_pclmul
# The IDE controller of QEMU's pc machine: the lab's seed is a virtio disk. sectorlab-seed loads
# these itself when it finds no virtio seed (a CD-ROM seed); a blacklist only stops autoloading.
blacklist ata_piix
blacklist ata_generic
BLACKLIST

# One vCPU under TCG runs every unit in turn: the journal stays in memory (the lab keeps each
# guest's serial console log on the host) instead of being flushed to disk at every boot.
mkdir -p /etc/systemd/journald.conf.d
cat > /etc/systemd/journald.conf.d/50-sectorlab.conf <<'JOURNAL'
[Journal]
Storage=volatile
RuntimeMaxUse=32M
JOURNAL

# The initramfs needs only what mounts a virtio root disk; MODULES=most packs ~36 MB that the
# kernel must unpack on every boot.
sed -i 's/^MODULES=.*/MODULES=list/' /etc/initramfs-tools/initramfs.conf
cat > /etc/initramfs-tools/modules <<'MODS'
# sectorlab: the root disk is virtio-blk with ext4.
virtio_pci
virtio_blk
ext4
MODS
# The only initramfs of each kernel: scripts/build-debian-base held update-initramfs back while the
# packages installed (the kernel's package made none); made again on a re-run.
for kernel in /lib/modules/*; do
  version=${kernel##*/}
  if [ -e "/boot/initrd.img-$version" ]; then update-initramfs -u -k "$version"; else update-initramfs -c -k "$version"; fi
done

# No menu, serial console for the lab's console log. No transparent huge pages: with them, the
# guest kernel (6.1) kills the in-guest NVMe/TCP target's worker whenever a write it receives
# spans the end of a huge page ("usercopy: Kernel memory exposure attempt detected from page
# alloc", in nvmet_tcp_io_work), and every later I/O to the namespace hangs. MariaDB's commit load
# on an NVMe/TCP disk (labtests/databases/test_cross_checks.py, -k mariadb) hit it in 1 of 3 runs,
# and in none of 8 with transparent_hugepage=never; a lab guest of a few hundred MiB gains nothing
# from huge pages.
mkdir -p /etc/default/grub.d
cat > /etc/default/grub.d/50-sectorlab.cfg <<'GRUB'
GRUB_TIMEOUT=0
GRUB_TIMEOUT_STYLE=hidden
GRUB_CMDLINE_LINUX_DEFAULT="quiet"
GRUB_CMDLINE_LINUX="console=ttyS0,115200 transparent_hugepage=never"
GRUB_TERMINAL="serial console"
GRUB_SERIAL_COMMAND="serial --unit=0 --speed=115200"
GRUB
echo "lean-boot: initramfs $(du -h /boot/initrd.img-* | cut -f1 | tr '\n' ' ')"
