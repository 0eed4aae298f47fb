# Oracle Linux 9 from Oracle's KVM template (cloud-init NoCloud, legacy BIOS). The template is
# pinned by URL and sha256 (the kvm-sha256 published on Oracle's templates page); it needs a
# machine that reaches yum.oracle.com, or the file dropped into the image cache under the name
# `sectorlab image list` prints.
guest                  = "oraclelinux9"
os_family              = "oraclelinux"
base_recipe            = "download"
base_image_url         = "https://yum.oracle.com/templates/OracleLinux/OL9/u5/x86_64/OL9U5_x86_64-kvm-b259.qcow2"
base_image_sha256      = "f1b8f0ca281570dda5e844485d6a300d1a13a629272ffdff4ec84bf56b76b1fc"
guest_network_restrict = "off"
ssh_username           = "lab"
disk_size              = "40960M"
memory                 = 2048
lab_min_memory_mib     = 1024
provision_scripts = [
  "scripts/oraclelinux/packages.sh",
  "scripts/oraclelinux/lean-boot.sh",
  "scripts/common/lab-guest.sh",
  "scripts/common/cleanup.sh",
]
