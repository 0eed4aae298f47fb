# Written by `sectorlab lab up` from the validated lab definition (labs/*.toml) into the lab's
# state directory as terraform.tfvars.json; the validations below repeat the essential rules so
# the module refuses bad input on its own too.

variable "lab_name" {
  description = "Name of the lab: in the name of every libvirt object it creates (which names do not own: see owner)."
  type        = string
  default     = "default"
  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{0,30}$", var.lab_name))
    error_message = "The lab_name must be lower-case letters, digits and '-', starting with a letter."
  }
}

variable "owner" {
  description = "The lab's identity, written into each domain's <metadata> (namespace urn:sectorlab:lab:1): the lab's id (made at its first lab-up), and the machine id, host name and cache directory of the sectorlab that made it. Clean-up, status and fault scans select the lab's domains by it, never by a name prefix (sectorlab/lab/ownership.py)."
  type = object({
    lab_id  = string
    machine = string
    host    = string
    cache   = string
  })
  default = {
    lab_id  = "00000000000000000000000000000000"
    machine = "00000000000000000000000000000000"
    host    = "localhost"
    cache   = "/nonexistent"
  }
  validation {
    condition     = can(regex("^[0-9a-f]{32}$", var.owner.lab_id)) && can(regex("^[0-9a-f]{32}$", var.owner.machine))
    error_message = "The owner's lab_id and machine must be 32 lower-case hex digits."
  }
}

variable "libvirt_uri" {
  description = "libvirt connection URI of the host that runs the lab's VMs."
  type        = string
  default     = "qemu:///system"
}

variable "pool_dir" {
  description = "Directory of the lab's libvirt storage pool (on the libvirt host; readable by the QEMU user)."
  type        = string
  default     = "/var/lib/libvirt/images/sectorlab-default"
}

variable "console_dir" {
  description = "Directory on the libvirt host for each VM's serial console log (written by virtlogd)."
  type        = string
  default     = "/var/log/libvirt/qemu"
}

variable "domain_type" {
  description = "libvirt domain type: 'kvm' when sectorlab's accelerator probe found a working KVM, else 'qemu' (TCG)."
  type        = string
  default     = "qemu"
  validation {
    condition     = contains(["kvm", "qemu"], var.domain_type)
    error_message = "The domain_type must be kvm or qemu."
  }
}

variable "qemu_uid" {
  description = "uid/gid that QEMU runs as under this libvirt: owner of the NVMe volumes that libvirt does not chown (they appear only in qemu:commandline)."
  type        = number
  default     = 64055
}

variable "image_pool" {
  description = "libvirt pool that holds the guest images (sectorlab keeps it; lab-down leaves it)."
  type        = string
  default     = "sectorlab-images"
}

variable "images" {
  description = "Guest name -> volume name of its built image in image_pool."
  type        = map(string)
  default     = {}
}

variable "boot" {
  description = "Guest name -> direct kernel boot: kernel and initrd paths on the libvirt host, and the command line as the provider's list of maps. A guest not listed boots through its image's GRUB."
  type = map(object({
    kernel  = string
    initrd  = string
    cmdline = list(map(string))
  }))
  default = {}
}

variable "extra_geometries" {
  description = "Geometries the lab definition adds to sectorlab/geometries.json (min_io_size/opt_io_size 0: not advertised)."
  type = map(object({
    logical_block_size  = number
    physical_block_size = number
    min_io_size         = number
    opt_io_size         = number
    description         = string
  }))
  default = {}
}

variable "vms" {
  description = "The lab's VMs and their data disks."
  type = map(object({
    guest       = string
    memory_mib  = number
    ssh_port    = number
    uuid        = string
    seed_iso    = string
    root_source = string
    seed_id     = string
    disks = list(object({
      name           = string
      bus            = string
      geometry       = string
      size_mib       = number
      serial         = string
      backing_serial = string
      write_cache    = string # what the guest's queue/write_cache must say: "write back" or "write through"
      socket         = string # the device model's Unix socket that serves the disk; "": a qcow2 volume
    }))
  }))
  default = {}

  validation {
    condition     = alltrue([for vm in var.vms : vm.ssh_port >= 1024 && vm.ssh_port <= 65535])
    error_message = "Every VM needs an ssh_port from 1024 to 65535 (sectorlab picks one when the lab says 0)."
  }
  validation {
    condition     = alltrue(flatten([for vm in var.vms : [for d in vm.disks : contains(["nvme", "nvme-tcp", "virtio", "scsi"], d.bus)]]))
    error_message = "A disk's bus must be one of nvme, nvme-tcp, virtio, scsi."
  }
  validation {
    condition     = alltrue(flatten([for vm in var.vms : [for d in vm.disks : contains(["write back", "write through"], d.write_cache)]]))
    error_message = "A disk's write_cache must be \"write back\" or \"write through\" (its device profile's write cache as the guest sees it)."
  }
  validation {
    condition     = !anytrue(flatten([for vm in var.vms : [for d in vm.disks : d.bus == "nvme" && d.geometry == "sector512e"]]))
    error_message = "QEMU's emulated NVMe cannot present sector512e (the guest sees 512/512): use bus nvme-tcp."
  }
}
