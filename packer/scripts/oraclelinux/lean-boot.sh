#!/bin/sh -eu
# Trims what a lab guest does not need from the Oracle Linux template's boot. Safe to re-run.
for unit in kdump.service firewalld.service tuned.service dnf-makecache.timer \
            NetworkManager-wait-online.service rhsmcertd.service rngd.service \
            mdmonitor.service smartd.service; do
  systemctl disable --now "$unit" >/dev/null 2>&1 || true
  systemctl mask "$unit" >/dev/null 2>&1 || echo "lean-boot: could not mask $unit (absent)"
done
grubby --update-kernel=ALL --args="console=ttyS0,115200"
sed -i 's/^GRUB_TIMEOUT=.*/GRUB_TIMEOUT=0/' /etc/default/grub
grub2-mkconfig -o /boot/grub2/grub.cfg >/dev/null
