terraform {
  required_version = ">= 1.5.0"

  required_providers {
    libvirt = {
      # Built from the Go module proxy into a local filesystem mirror by scripts/bootstrap.
      source  = "dmacvicar/libvirt"
      version = "0.8.3"
    }
  }

  # sectorlab passes -backend-config=path=<lab state dir>/terraform.tfstate: one state per lab.
  backend "local" {}
}

provider "libvirt" {
  uri = var.libvirt_uri
}
