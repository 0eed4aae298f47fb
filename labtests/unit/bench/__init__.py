"""Unit tests of sectorlab/bench/: the bench kinds, presets, the device-path benches, the lab's own cost."""
