# Provisioning: the per-guest script list (vars/<guest>.pkrvars.hcl) runs as root over SSH.

build {
  sources = ["source.qemu.guest"]

  # The lab's guest-side helpers (NVMe/TCP targets), installed by scripts/common/lab-guest.sh.
  provisioner "shell" {
    inline = ["mkdir -p /tmp/sectorlab-files"]
  }

  provisioner "file" {
    source      = "${path.root}/files/"
    destination = "/tmp/sectorlab-files/"
  }

  provisioner "shell" {
    scripts          = [for s in var.provision_scripts : "${path.root}/${s}"]
    environment_vars = concat(["LAB_USER=${var.lab_user}", "BUILD_USER=${var.ssh_username}"], var.lab_tools_env)
    execute_command  = "chmod +x {{ .Path }}; sudo env {{ .Vars }} {{ .Path }}"
  }
}
