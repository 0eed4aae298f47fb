#!/bin/sh -eu
# The debian12-zfs guest (images/debian12-zfs/recipe.toml), in the base disk's chroot: OpenZFS's
# module built by DKMS for the guest's kernel (not the host's, whose headers the chroot does not
# have) at the host's speed, and checked; the ARC capped for a small guest; nothing of ZFS or NFS
# started at boot (a scenario imports its pool and starts the NFS server itself). Safe to re-run.
kernel=$(find /lib/modules -mindepth 1 -maxdepth 1 -printf '%f\n' | sort -V | tail -1)
version=$(dpkg-query -W -f '${Version}' zfs-dkms | sed 's/-.*//')
if ! modinfo -k "$kernel" zfs >/dev/null 2>&1; then
  dkms install "zfs/$version" -k "$kernel" >/tmp/zfs-dkms.log 2>&1 || {
    tail -30 /tmp/zfs-dkms.log >&2; echo "zfs: dkms could not build zfs/$version for $kernel (log above)" >&2; exit 1; }
fi
found=$(modinfo -k "$kernel" -F version zfs)
rm -rf "/var/lib/dkms/zfs/$version/build"  # the objects: the module is in /lib/modules
echo "zfs: module $found built for kernel $kernel"

# The ARC takes half the guest's memory by default; a lab guest of 1 GiB keeps it to 64 MiB, and
# every read the scenarios count goes to the disks, not to a large cache.
cat > /etc/modprobe.d/sectorlab-zfs.conf <<'ARC'
options zfs zfs_arc_max=67108864
ARC

# Disabled, not masked (a scenario starts the NFS server): under TCG every unit costs the boot
# seconds, and no pool exists at boot.
for unit in zfs-import-cache.service zfs-import-scan.service zfs-mount.service zfs-share.service \
            zfs-zed.service zfs-volume-wait.service zfs-load-module.service zfs.target zfs-import.target \
            nfs-server.service nfs-client.target rpcbind.service rpcbind.socket nfs-blkmap.service; do
  systemctl disable "$unit" >/dev/null 2>&1 || echo "zfs: could not disable $unit (absent)"
done
