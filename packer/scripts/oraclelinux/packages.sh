#!/bin/sh -eu
# Installs the lab's storage tools and the NVMe target modules on an Oracle Linux template.
# Needs the template's yum repositories (yum.oracle.com). Safe to re-run.
dnf -y -q install nvme-cli fio parted sg3_utils python3 util-linux
# UEK keeps nvmet/nvmet-tcp in the modules-extra package on some releases.
if ! modinfo nvmet >/dev/null 2>&1; then
  dnf -y -q install "kernel-uek-modules-extra-$(uname -r)" || {
    echo "packages: nvmet is not in the running kernel and kernel-uek-modules-extra-$(uname -r) is not installable" >&2
    exit 1
  }
fi
dnf clean all
