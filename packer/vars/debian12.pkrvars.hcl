# Debian 12 (bookworm): the base disk is built on this machine from Debian's packages by
# scripts/build-debian-base (mmdebstrap, no installer, no ISO); Packer then provisions it
# with no network at all. This is the guest CI builds and tests.
guest                  = "debian12"
os_family              = "debian"
base_recipe            = "mmdebstrap"
guest_network_restrict = "on"
ssh_username           = "lab"
disk_size              = "4096M"
memory                 = 1024
lab_min_memory_mib     = 384
# lean-boot.sh, databases.sh and bootloader.sh (GRUB) run in the base disk's chroot
# (scripts/build-debian-base): what is left here needs the booted guest (the lab tools checked
# where they run).
provision_scripts = [
  "scripts/common/lab-guest.sh",
  "scripts/common/cleanup.sh",
]
