# Oracle Linux 8 (8.10, UEK) from Oracle's KVM template (cloud-init NoCloud). Pinned by URL and
# sha256: the sha256 is the one published build configurations agree on for this file (check it
# against the kvm-sha256 column of https://yum.oracle.com/oracle-linux-templates.html before relying
# on it; docs/oracle-linux.md says how to bump a template). Needs yum.oracle.com, or the file
# dropped into the image cache. firmware "bios": docs/oracle-linux.md has what is published about
# how it boots.
guest                  = "oraclelinux8"
os_family              = "oraclelinux"
base_recipe            = "download"
base_image_url         = "https://yum.oracle.com/templates/OracleLinux/OL8/u10/x86_64/OL8U10_x86_64-kvm-b287.qcow2"
base_image_sha256      = "cf9eb243b7390311f1e2896e3e6849241e521e6592c8be9907956e3a6cee1f0c"
firmware               = "bios"
guest_network_restrict = "off"
ssh_username           = "lab"
disk_size              = "40960M"
memory                 = 2048
lab_min_memory_mib     = 1024
provision_scripts = [
  "scripts/oraclelinux/packages.sh",
  "scripts/oraclelinux/lean-boot.sh",
  "scripts/common/lab-guest.sh",
  "scripts/common/databases.sh",
  "scripts/common/cleanup.sh",
]
