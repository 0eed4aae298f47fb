# The lab's VMs on libvirt: a storage pool, a root volume per VM backed by the guest image, the data disks (below), a NoCloud seed per VM, and the domains. The provider has no
# <blockio>/<serial>, so those, and user-mode networking with SSH on 127.0.0.1 only, go in
# through the provider's XSLT hook (domain.xsl.tftpl). The emulated NVMe controllers are not in
# the domain at all: QEMU 7.2 cannot save a guest that has one, so sectorlab hot-plugs them after
# the guest is up (cold boot or restored from a saved state); on a remote host their volumes are made here.
# A data disk served by its device model (every disk of a lab on this host: sectorlab/lab/modelled.py
# starts the models first) has no volume: the domain's disk is QEMU's NBD client on the model's Unix
# socket, written in by the XSLT. A lab on a remote libvirt host has qcow2 volumes instead.

locals {
  # The geometry catalog: the same file sectorlab's Python reads.
  catalog    = jsondecode(file("${path.module}/../sectorlab/geometries.json"))
  geometries = merge(local.catalog.geometries, var.extra_geometries)

  disks = merge([
    for vm_name, vm in var.vms : {
      for d in vm.disks : "${vm_name}/${d.name}" => merge(d, {
        vm                  = vm_name
        logical_block_size  = local.geometries[d.geometry].logical_block_size
        physical_block_size = local.geometries[d.geometry].physical_block_size
        # What the device advertises besides its sectors (0: nothing; the guest kernel then takes
        # the physical sector as minimum I/O and has no optimal I/O).
        min_io_size = try(local.geometries[d.geometry].min_io_size, 0)
        opt_io_size = try(local.geometries[d.geometry].opt_io_size, 0)
        # nvme-tcp: the guest sees a virtio disk with the backing serial and serves it over NVMe/TCP.
        attach_serial = d.bus == "nvme-tcp" ? d.backing_serial : d.serial
        # The NBD export the provider writes as the disk's url ("nbd://:EXPORT") and reads back the
        # same from the domain; the XSLT adds the Unix socket.
        export = "/${vm_name}/${d.name}"
      })
    }
  ]...)
}

resource "libvirt_pool" "lab" {
  name = "sectorlab-${var.lab_name}"
  type = "dir"
  target {
    path = var.pool_dir
  }
}

resource "libvirt_volume" "root" {
  for_each = var.vms
  name     = "${each.key}-root.qcow2"
  pool     = libvirt_pool.lab.name
  format   = "qcow2"
  # Cold: a new overlay on the image, a volume of the shared pool sectorlab keeps (a hard link to
  # the image cache: nothing is copied). Warm: the root disk saved with the guest's state (an
  # overlay on the same image), uploaded as it was.
  source           = each.value.root_source != "" ? each.value.root_source : null
  base_volume_name = each.value.root_source == "" ? var.images[each.value.guest] : null
  base_volume_pool = each.value.root_source == "" ? var.image_pool : null
}

# A data volume is VM_DISK.qcow2: "_" is in no VM name, so VM and disk are read back one way, and no
# data volume meets a root volume (a VM a-b's disk c and a VM a's disk b-c, or a disk named root, once did).
resource "libvirt_volume" "data" {
  for_each = { for key, d in local.disks : key => d if d.socket == "" }
  name     = "${each.value.vm}_${each.value.name}.qcow2"
  pool     = libvirt_pool.lab.name
  format   = "qcow2"
  size     = each.value.size_mib * 1048576

  # NVMe volumes are opened only by QEMU's monitor, and libvirt does not chown them.
  xml {
    xslt = templatefile("${path.module}/volume.xsl.tftpl", { qemu_uid = var.qemu_uid })
  }
}

# The NoCloud seed (label cidata), written by sectorlab. It is attached as a read-only virtio disk,
# not the provider's IDE CD-ROM: the guest finds it at once instead of after udev has loaded the
# CD-ROM drivers (about 20 s of a TCG boot). Its name carries the seed's hash, so a new seed
# replaces the VM instead of going unnoticed.
resource "libvirt_volume" "seed" {
  for_each = var.vms
  name     = "${each.key}-seed-${each.value.seed_id}.iso"
  pool     = libvirt_pool.lab.name
  source   = each.value.seed_iso
  format   = "raw"

  # libvirt's pool refresh reports an ISO file's format as "iso": without this, every converging
  # apply would replace the seed volume (and libvirt would delete it under the running guest).
  lifecycle {
    ignore_changes = [format]
  }
}

resource "libvirt_domain" "vm" {
  for_each = var.vms
  name     = "sectorlab-${var.lab_name}-${each.key}"
  type     = var.domain_type
  memory   = each.value.memory_mib
  vcpu     = 1

  # Direct kernel boot when the image came with its kernel: under TCG the kernel started ~16 s after
  # QEMU when GRUB loaded it (console timeline of one cold boot; docs/performance.md).
  kernel  = try(var.boot[each.value.guest].kernel, null)
  initrd  = try(var.boot[each.value.guest].initrd, null)
  cmdline = try(var.boot[each.value.guest].cmdline, null)

  disk {
    volume_id = libvirt_volume.root[each.key].id
  }

  disk {
    volume_id = libvirt_volume.seed[each.key].id
  }

  # libvirt keeps disks grouped by bus, the root disk's (virtio) first: listing them in that order
  # lets a second apply find nothing to change instead of replacing the domain.
  dynamic "disk" {
    for_each = concat(
      [for key, d in local.disks : key if d.vm == each.key && contains(["virtio", "nvme-tcp"], d.bus)],
      [for key, d in local.disks : key if d.vm == each.key && d.bus == "scsi"],
    )
    content {
      volume_id = local.disks[disk.value].socket == "" ? libvirt_volume.data[disk.value].id : null
      url       = local.disks[disk.value].socket == "" ? null : "nbd://:${local.disks[disk.value].export}"
      scsi      = local.disks[disk.value].bus == "scsi"
    }
  }

  console {
    type        = "pty"
    target_type = "serial"
    target_port = "0"
  }

  xml {
    xslt = templatefile("${path.module}/domain.xsl.tftpl", {
      uuid        = each.value.uuid
      ssh_port    = each.value.ssh_port
      owner       = merge(var.owner, { lab = var.lab_name, vm = each.key })
      seed_volume = libvirt_volume.seed[each.key].name
      console_log = "${var.console_dir}/${each.key}-console.log"
      # virtio, SCSI and NVMe/TCP-backing disks get <serial>/<blockio>, and minimum/optimal I/O
      # sizes and write-cache=off through <qemu:override> of their device (sectorlab.labdef refuses
      # the I/O sizes on nvme-tcp).
      disks = [
        for key, d in local.disks : {
          bus      = d.bus
          volume   = d.socket == "" ? libvirt_volume.data[key].name : ""
          export   = d.export
          socket   = d.socket
          serial   = d.attach_serial
          logical  = d.logical_block_size
          physical = d.physical_block_size
          min_io   = d.min_io_size
          opt_io   = d.opt_io_size
          # QEMU's NVMe device keeps its volatile write cache whatever it is told: the guest sets
          # an NVMe disk's write cache itself (sectorlab/inguest/guestprobe.py).
          write_through = d.write_cache == "write through"
        } if d.vm == each.key && d.bus != "nvme"
      ]
    })
  }
}
