# Inputs of the one guest-image template. Per-guest values live in vars/<guest>.pkrvars.hcl;
# the machine-specific ones (accelerator, paths in the image cache, the build key) are passed
# by `sectorlab image build`, which is what `make image` runs.

variable "guest" {
  type        = string
  description = "Guest name, as in vars/<guest>.pkrvars.hcl (debian12, oraclelinux10, oraclelinux9, oraclelinux8)."
}

variable "os_family" {
  type        = string
  description = "Selects the provisioning scripts under scripts/<os_family>/: debian or oraclelinux."
}

variable "base_recipe" {
  type        = string
  description = "How the base disk is obtained: 'mmdebstrap' (built here from Debian's packages) or 'download' (a vendor template pinned by URL and sha256)."
}

variable "base_image_url" {
  type        = string
  description = "Where the base disk comes from. For 'mmdebstrap' sectorlab passes the file:// URL of the disk it built."
  default     = ""
}

variable "base_image_sha256" {
  type        = string
  description = "sha256 of the base disk; Packer refuses a download that does not match."
  default     = ""
}

variable "base_image_target" {
  type        = string
  description = "Path in the image cache where the downloaded base disk is kept (so it is fetched once)."
  default     = ""
}

variable "direct_kernel" {
  type        = list(list(string))
  description = "QEMU arguments to boot the base disk by direct kernel boot (-kernel/-initrd/-append) when it has no boot loader yet; empty for vendor templates."
  default     = []
}

variable "guest_network_restrict" {
  type        = string
  description = "QEMU user-mode networking 'restrict': on = the guest reaches nothing but its forwarded SSH port; off = it may reach package mirrors through the host."
  default     = "on"
  validation {
    condition     = contains(["on", "off"], var.guest_network_restrict)
    error_message = "The guest_network_restrict must be on or off."
  }
}

variable "seed_iso" {
  type        = string
  description = "NoCloud seed ISO (label cidata) that gives the build user its temporary SSH key."
}

variable "accelerator" {
  type        = string
  description = "QEMU accelerator from sectorlab's probe: kvm or tcg."
  default     = "tcg"
  validation {
    condition     = contains(["kvm", "tcg"], var.accelerator)
    error_message = "The accelerator must be kvm or tcg."
  }
}

variable "output_directory" {
  type        = string
  description = "Temporary build directory; sectorlab moves the image into the cache only when the build succeeded."
}

variable "disk_size" {
  type        = string
  description = "Virtual size of the root disk."
  default     = "4096M"
}

variable "memory" {
  type        = number
  description = "Build VM memory in MiB."
  default     = 1024
}

variable "ssh_username" {
  type        = string
  description = "Build user created from the seed ISO."
  default     = "lab"
}

variable "ssh_private_key_file" {
  type        = string
  description = "Private half of the temporary build key written into the seed ISO."
}

variable "ssh_timeout" {
  type        = string
  description = "How long to wait for the build VM's SSH (TCG is slow)."
  default     = "20m"
}

variable "provision_scripts" {
  type        = list(string)
  description = "Provisioning scripts, relative to packer/, run in order as root."
}

variable "lab_user" {
  type        = string
  description = "The user lab VMs log in as (keys come from each lab's seed ISO, never baked in)."
  default     = "lab"
}

variable "lab_min_memory_mib" {
  type        = number
  description = "Not used by Packer: the least memory a lab VM of this guest may be given (sectorlab's lab validation reads it)."
  default     = 512
}

variable "firmware" {
  type        = string
  description = "How the base disk boots while Packer provisions it: 'bios' (SeaBIOS, QEMU's default) or 'uefi' (OVMF from Debian's ovmf package; sectorlab passes its pflash drives in firmware_args). Lab VMs boot Debian's kernel directly and Oracle Linux through its GRUB under SeaBIOS: lab-up refuses a 'uefi' guest (docs/oracle-linux.md)."
  default     = "bios"
  validation {
    condition     = contains(["bios", "uefi"], var.firmware)
    error_message = "The firmware must be bios or uefi."
  }
}

variable "firmware_args" {
  type        = list(list(string))
  description = "QEMU arguments for the firmware (OVMF's code and a copy of its variable store as pflash drives); empty for 'bios'. Passed by sectorlab."
  default     = []
}

variable "lab_tools_env" {
  type        = list(string)
  description = "The lab tools of images/lab-tools.toml for this guest's family, as KEY=value environment variables of the provisioning scripts (LAB_PACKAGES, LAB_COMMANDS, LAB_MODULES, ...). Passed by sectorlab."
  default     = []
}
