# One QEMU source for every guest. Networking is user-mode with SSH forwarded on 127.0.0.1
# only. The Debian build runs with restrict=on (everything is already in its base disk); the
# Oracle Linux templates need their yum mirror while provisioning (restrict=off).

locals {
  netdev = ["-netdev", "user,id=user.0,restrict=${var.guest_network_restrict},hostfwd=tcp:127.0.0.1:{{ .SSHHostPort }}-:22"]
  qemuargs = concat(
    [local.netdev, ["-cdrom", var.seed_iso], ["-serial", "file:${var.output_directory}-console.log"]],
    var.direct_kernel, var.firmware_args
  )
}

source "qemu" "guest" {
  vm_name          = "${var.guest}.qcow2"
  output_directory = var.output_directory
  iso_url          = var.base_image_url
  iso_checksum     = "sha256:${var.base_image_sha256}"
  iso_target_path  = var.base_image_target == "" ? null : var.base_image_target
  disk_image       = true
  use_backing_file = false
  format           = "qcow2"
  disk_size        = var.disk_size
  disk_interface   = "virtio"
  net_device       = "virtio-net"
  accelerator      = var.accelerator
  cpus             = 1
  memory           = var.memory
  headless         = true
  qemuargs         = local.qemuargs
  vnc_bind_address = "127.0.0.1"
  # No boot command is typed over VNC, so Packer does not wait 10 s before typing one (boot_wait
  # "0s" is its default of 10 s). Packer 1.6.6 still gives QEMU a VNC display, on 127.0.0.1.
  disable_vnc = true

  communicator         = "ssh"
  ssh_host             = "127.0.0.1"
  ssh_username         = var.ssh_username
  ssh_private_key_file = var.ssh_private_key_file
  ssh_timeout          = var.ssh_timeout
  shutdown_command     = "sudo /sbin/poweroff"
  shutdown_timeout     = "5m"
}
