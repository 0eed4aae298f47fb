# Debian 12 (bookworm) with OpenZFS and the kernel NFS server (seed 004): debian12's recipe plus
# images/debian12-zfs/recipe.toml, built only for a lab that names this guest. The base disk is
# built on this machine from Debian's packages (main and contrib) by scripts/build-debian-base;
# Packer then provisions it with no network at all.
guest                  = "debian12-zfs"
os_family              = "debian"
base_recipe            = "mmdebstrap"
guest_network_restrict = "on"
ssh_username           = "lab"
disk_size              = "4096M"
memory                 = 1024
lab_min_memory_mib     = 768  # the ARC (capped at 64 MiB), the pool and the NFS server beside the guest
# lean-boot.sh, databases.sh and bootloader.sh (GRUB) run in the base disk's chroot
# (scripts/build-debian-base): what is left here needs the booted guest (the lab tools checked
# where they run).
provision_scripts = [
  "scripts/common/lab-guest.sh",
  "scripts/common/cleanup.sh",
]
