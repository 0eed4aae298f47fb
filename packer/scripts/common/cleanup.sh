#!/bin/sh -eu
# Leaves the image without anything of the build: no host keys (each lab VM gets its own from
# its seed), no build key, no machine-id, no seed state, no caches. Safe to re-run.
rm -f /etc/ssh/ssh_host_*
: > /etc/machine-id
rm -f /var/lib/dbus/machine-id
rm -rf /var/lib/sectorlab
if command -v cloud-init >/dev/null 2>&1; then
  cloud-init clean --logs
fi
if [ -n "${BUILD_USER:-}" ]; then
  home=$(getent passwd "$BUILD_USER" | cut -d: -f6)
  rm -f "$home/.ssh/authorized_keys"
fi
if command -v apt-get >/dev/null 2>&1; then apt-get clean; fi
rm -rf /var/log/journal/* /tmp/* /var/tmp/*
fstrim -av >/dev/null 2>&1 || true
sync
