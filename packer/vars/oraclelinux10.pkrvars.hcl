# Oracle Linux 10 (10.1, UEK) from Oracle's KVM template (cloud-init NoCloud). Pinned by URL and
# sha256: the sha256 is the one published build configurations agree on for this file (check it
# against the kvm-sha256 column of https://yum.oracle.com/oracle-linux-templates.html before relying
# on it; docs/oracle-linux.md says how to bump a template). It needs a machine that reaches
# yum.oracle.com, or the file dropped into the image cache under the name `sectorlab image list`
# prints. firmware "bios": docs/oracle-linux.md has what is published about how it boots.
guest                  = "oraclelinux10"
os_family              = "oraclelinux"
base_recipe            = "download"
base_image_url         = "https://yum.oracle.com/templates/OracleLinux/OL10/u1/x86_64/OL10U1_x86_64-kvm-b291.qcow2"
base_image_sha256      = "8e59326c4bf7cfa58a6cac404db8ed583fe3a5f4c460e2b73c64988785bb4f0f"
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
