# sectorlab: one verb per step. Everything installs through scripts/bootstrap (idempotent).
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV      := .venv
SECTORLAB := $(VENV)/bin/sectorlab
PYTEST    := $(VENV)/bin/pytest
RUFF      := $(VENV)/bin/ruff
CACHE     := $(or $(SECTORLAB_CACHE),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/sectorlab)
GUEST     ?=
GUEST_ARG := $(if $(GUEST),--guest $(GUEST))

# The project's own Terraform CLI config (the libvirt provider from the local mirror); the
# environment may point TF_CLI_CONFIG_FILE at a file that does not exist.
export TF_CLI_CONFIG_FILE := $(CACHE)/tools/terraform.rc
export CHECKPOINT_DISABLE := 1

.PHONY: help bootstrap doctor image lab-up test unit smoke check bench-boot

help:
	@echo "make lab-up               bootstrap the host and build the guest image (GUEST=debian12|oraclelinux9|oraclelinux8)"
	@echo "make test                 unit tests, the image (cached), and the guest smoke tests"
	@echo "make image GUEST=...      build one guest image with Packer (cached by the hash of its inputs)"
	@echo "make doctor               what this host has: accelerator, libvirt, provider, packer, terraform, disk"
	@echo "make check                shellcheck, ruff, packer fmt + validate"
	@echo "make bench-boot           boot the image 3 times, median time to SSH login"

bootstrap:
	@scripts/bootstrap

doctor: bootstrap
	@$(SECTORLAB) doctor

image: bootstrap
	@$(SECTORLAB) image build $(GUEST_ARG)

# The lab's VMs (Terraform + libvirt) come on top of the image; until then lab-up stops here.
lab-up: image
	@echo "lab-up: image ready; the VM lab (Terraform + libvirt) is not part of this release yet"

unit: bootstrap
	$(PYTEST) labtests/unit

smoke: image
	SECTORLAB_GUEST=$(GUEST) $(PYTEST) -m vm labtests

test: bootstrap
	$(PYTEST) labtests/unit
	@$(SECTORLAB) image build $(GUEST_ARG)
	SECTORLAB_GUEST=$(GUEST) $(PYTEST) -m vm labtests

check: bootstrap
	shellcheck -x scripts/bootstrap scripts/build-debian-base scripts/lib.sh .ci/run packer/scripts/*/*.sh
	$(RUFF) check sectorlab labtests images/debian12/overlay/usr/local/sbin/sectorlab-seed
	packer fmt -check packer
	$(SECTORLAB) image validate

bench-boot: image
	$(SECTORLAB) image boot-time $(GUEST_ARG) --runs 3
