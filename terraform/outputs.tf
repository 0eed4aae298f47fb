output "lab_name" {
  description = "The lab's name (prefix of its libvirt objects)."
  value       = var.lab_name
}

output "libvirt_uri" {
  description = "The libvirt host the VMs run on."
  value       = var.libvirt_uri
}

output "vms" {
  description = "Per VM: libvirt domain name, guest, and the SSH endpoint (always 127.0.0.1: user-mode networking)."
  value = {
    for name, vm in var.vms : name => {
      domain      = libvirt_domain.vm[name].name
      uuid        = libvirt_domain.vm[name].id
      root_volume = libvirt_volume.root[name].id
      guest       = vm.guest
      ssh_host    = "127.0.0.1"
      ssh_port    = vm.ssh_port
      console_log = "${var.console_dir}/${name}-console.log"
    }
  }
}

output "disks" {
  description = "Per data disk (key vm/disk): bus, geometry, the serial the guest sees, the sector sizes the guest must report (and the minimum/optimal I/O sizes the device advertises, 0 for none), the write cache it must show."
  value = {
    for key, d in local.disks : key => {
      vm                  = d.vm
      name                = d.name
      bus                 = d.bus
      geometry            = d.geometry
      serial              = d.serial
      backing_serial      = d.backing_serial
      logical_block_size  = d.logical_block_size
      physical_block_size = d.physical_block_size
      min_io_size         = d.min_io_size
      opt_io_size         = d.opt_io_size
      size_bytes          = d.size_mib * 1048576
      write_cache         = d.write_cache
      volume              = d.socket == "" ? libvirt_volume.data[key].id : d.socket
    }
  }
}
