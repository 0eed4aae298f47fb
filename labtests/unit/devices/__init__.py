"""Unit tests of sectorlab/devices/: the profiles, the model's parameters and the held-out checks."""
