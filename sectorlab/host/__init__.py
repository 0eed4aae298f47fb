"""The machines a lab runs on, as sectorlab reaches them outside Terraform.

One module per concept: remote.py (SSH to a libvirt host named by a `qemu+ssh://` URI),
libvirt.py (one object per libvirt URI, local or remote: virsh, QEMU's monitor, files, ports,
space and memory there), accel.py (KVM or TCG, decided by a real probe), tooling.py (the host
tools the project installs itself: the provider mirror, Terraform's CLI config) and doctor.py
(`sectorlab doctor`: what this host has and lacks). Nothing here knows a lab definition.

Each module is used as itself (`from sectorlab.host import libvirt`); the package hands on no
names of its own.
"""
