#!/bin/sh -eu
# Checks that the guest has everything the lab's scenarios use, and records what it is.
# Fails with the name of what is missing. Safe to re-run.
# The lab tools' commands and modules come from images/lab-tools.toml (LAB_COMMANDS, LAB_MODULES,
# passed by sectorlab through Packer); the rest is what this script and the lab itself use.
: "${LAB_COMMANDS:?LAB_COMMANDS is not set: build through 'make image' (sectorlab passes images/lab-tools.toml)}"
: "${LAB_MODULES:?LAB_MODULES is not set: build through 'make image'}"
missing=""
# shellcheck disable=SC2086 # space-separated lists
for tool in $LAB_COMMANDS modprobe udevadm useradd groupadd; do
  command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
# shellcheck disable=SC2086
for module in $LAB_MODULES nvme virtio_scsi; do
  modinfo "$module" >/dev/null 2>&1 || missing="$missing module:$module"
done
if [ -n "$missing" ]; then
  echo "lab-guest: missing in the guest:$missing" >&2
  exit 1
fi
# The storage tools live in sbin (nvme, blockdev, sfdisk): put it on the lab user's PATH for
# non-interactive SSH commands too (pam_env reads /etc/environment for every session).
if ! grep -q '^PATH=.*/usr/sbin' /etc/environment 2>/dev/null; then
  sed -i '/^PATH=/d' /etc/environment 2>/dev/null || true
  echo 'PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"' >> /etc/environment
fi

# The lab's guest-side helpers, uploaded by Packer's file provisioner.
install -m 0755 /tmp/sectorlab-files/redo-writer /usr/local/bin/redo-writer
install -m 0755 /tmp/sectorlab-files/sectorlab-nvme-tcp /usr/local/sbin/sectorlab-nvme-tcp
# The DBA's procedures (sectorlab/inguest/: redodisk.py, nvmeformat.py and the block-device helpers
# they share, blockdev.py) and the rules engine they ask for the redo BLOCKSIZE (rules.py,
# asmrules.py; its command redocheck.py), as commands:
# provision-redo-disk, reformat-nvme, redo-check. The files lie flat in /usr/local/lib/sectorlab/
# (sectorlab/images/cache.py's GUEST_TOOLS: the build adds them to Packer's files/, which it uploads).
# Each command is a launcher that imports its module, byte-compiled here: Python compiles a script
# it runs directly at every start (0.23 s of redodisk.py's 0.71 s import under TCG, before the split).
install -d /usr/local/lib/sectorlab
install -m 0644 /tmp/sectorlab-files/rules.py /tmp/sectorlab-files/asmrules.py /tmp/sectorlab-files/redocheck.py \
  /tmp/sectorlab-files/blockdev.py /tmp/sectorlab-files/redodisk.py /tmp/sectorlab-files/nvmeformat.py \
  /usr/local/lib/sectorlab/
python3 -m compileall -q /usr/local/lib/sectorlab
launcher() {  # launcher PATH MODULE
  printf '#!/usr/bin/python3\nimport sys\nsys.path.insert(0, "/usr/local/lib/sectorlab")\nimport %s\nsys.exit(%s.main())\n' \
    "$2" "$2" > "$1"
  chmod 0755 "$1"
}
launcher /usr/local/sbin/provision-redo-disk redodisk
launcher /usr/local/sbin/reformat-nvme nvmeformat
launcher /usr/local/bin/redo-check redocheck
install -m 0644 /tmp/sectorlab-files/sectorlab-nvme-tcp.service /etc/systemd/system/sectorlab-nvme-tcp.service
systemctl enable sectorlab-nvme-tcp.service

# Once sshd listens (its unit is Type=notify), one line on the serial console says so; sectorlab
# connects when it sees that line (sectorlab/guest/client.py, READY_MARKER) instead of polling. Under
# user-mode networking, every connection attempt made before the guest has its address stays
# queued and reaches sshd later: each cost the booting guest ~0.4 s of CPU (0.38-0.45 s, four
# such in one boot, by process accounting).
if systemctl cat ssh.service >/dev/null 2>&1; then sshd_unit=ssh.service; else sshd_unit=sshd.service; fi
cat > /etc/systemd/system/sectorlab-ready.service <<UNIT
[Unit]
Description=Say on the serial console that SSH takes logins (sectorlab waits for this line)
After=$sshd_unit
Requisite=$sshd_unit

[Service]
Type=oneshot
ExecStart=/bin/sh -c 'echo "sectorlab-ready: ssh" > /dev/console'

[Install]
WantedBy=multi-user.target
UNIT
systemctl enable sectorlab-ready.service
rm -rf /tmp/sectorlab-files
mkdir -p /etc/sectorlab
# shellcheck disable=SC1091 # the guest's own file
. /etc/os-release
# /etc/sectorlab-image: the lines of this script replaced, the others (databases.sh's) kept.
touch /etc/sectorlab-image
sed -i -E '/^(guest_os|kernel|nvme_cli|redo_writer|fio|parted)=/d' /etc/sectorlab-image
cat >> /etc/sectorlab-image <<INFO
guest_os=$ID-$VERSION_ID
kernel=$(uname -r)
nvme_cli=$(nvme version | head -1)
redo_writer=$(redo-writer --help | head -1)
fio=$(fio --version)
parted=$(parted --version | head -1)
INFO
# The tools answer before the image is kept (a broken import fails the build, not a scenario).
provision-redo-disk --help >/dev/null
reformat-nvme --help >/dev/null
redo-check --logical 512 --physical 4096 --json >/dev/null
cat /etc/sectorlab-image
