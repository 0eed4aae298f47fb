"""Unit tests of sectorlab/host/: libvirt hosts, the accelerator, the host's tools."""
