#!/bin/sh -eu
# Installs the lab tools on an Oracle Linux template: the packages images/lab-tools.toml maps
# every tool to on Oracle Linux (LAB_PACKAGES, LAB_REPO_PACKAGES, LAB_PACKAGES_WHEN_MISSING;
# passed by sectorlab through Packer). Needs the template's yum repositories (yum.oracle.com);
# sysbench comes from Oracle's EPEL repository. lab-guest.sh then checks every command and
# module. Safe to re-run.
: "${LAB_PACKAGES:?LAB_PACKAGES is not set: build through 'make image' (sectorlab passes images/lab-tools.toml)}"
kernel=$(uname -r)
major=$(. /etc/os-release && echo "${VERSION_ID%%.*}")
expand() { echo "$1" | sed -e "s/{kernel}/$kernel/g" -e "s/{major}/$major/g"; }

# OL 8's default streams are MariaDB 10.3 (no mariadbd, mariadb-install-db) and PostgreSQL 10.
if [ "$major" = 8 ]; then
  dnf -y -q module reset mariadb postgresql
  dnf -y -q module enable mariadb:10.5 postgresql:13
fi
if [ -n "${LAB_REPO_PACKAGES:-}" ]; then
  # shellcheck disable=SC2046 # space-separated package names
  dnf -y -q install $(expand "$LAB_REPO_PACKAGES")
fi
# shellcheck disable=SC2046
dnf -y -q install $(expand "$LAB_PACKAGES")

# UEK keeps some modules (nvmet, nvmet_tcp, dm_delay) in kernel-uek-modules-extra on some
# releases and in the base kernel packages on others: install it only when one is missing.
missing_module=""
for module in ${LAB_MODULES:-}; do
  modinfo "$module" >/dev/null 2>&1 || missing_module="$missing_module $module"
done
if [ -n "$missing_module" ] && [ -n "${LAB_PACKAGES_WHEN_MISSING:-}" ]; then
  echo "packages: module(s)$missing_module not in kernel $kernel: installing $(expand "$LAB_PACKAGES_WHEN_MISSING")"
  # shellcheck disable=SC2046
  dnf -y -q install $(expand "$LAB_PACKAGES_WHEN_MISSING") || {
    echo "packages: module(s)$missing_module are not in kernel $kernel and $(expand "$LAB_PACKAGES_WHEN_MISSING") is not installable" >&2
    exit 1
  }
fi
dnf clean all
