# Provisioning: the per-guest script list (vars/<guest>.pkrvars.hcl) runs as root over SSH.

build {
  sources = ["source.qemu.guest"]

  provisioner "shell" {
    scripts          = [for s in var.provision_scripts : "${path.root}/${s}"]
    environment_vars = ["LAB_USER=${var.lab_user}", "BUILD_USER=${var.ssh_username}"]
    execute_command  = "chmod +x {{ .Path }}; sudo env {{ .Vars }} {{ .Path }}"
  }
}
