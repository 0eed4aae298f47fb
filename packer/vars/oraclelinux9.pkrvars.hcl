# Oracle Linux 9 (9.8, UEK) from Oracle's KVM template (cloud-init NoCloud). Pinned by URL and
# sha256: the sha256 is the one published build configurations agree on for this file (check it
# against the kvm-sha256 column of https://yum.oracle.com/oracle-linux-templates.html before relying
# on it; docs/oracle-linux.md says how to bump a template). It needs a machine that reaches
# yum.oracle.com, or the file dropped into the image cache under the name `sectorlab image list`
# prints. firmware "bios": docs/oracle-linux.md has what is published about how it boots.
guest                  = "oraclelinux9"
os_family              = "oraclelinux"
base_recipe            = "download"
base_image_url         = "https://yum.oracle.com/templates/OracleLinux/OL9/u8/x86_64/OL9U8_x86_64-kvm-b293.qcow2"
base_image_sha256      = "b12103391327abee8090686759c0d62dac9a7af2bf0f45fdf6b0d085a0fbb52b"
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
