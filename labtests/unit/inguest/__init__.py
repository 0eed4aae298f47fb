"""Unit tests of sectorlab/inguest/: what runs in the guests (the rules engine, redo disks)."""
