"""Unit tests of sectorlab/guest/: the SSH client, the disks' report, the seed."""
