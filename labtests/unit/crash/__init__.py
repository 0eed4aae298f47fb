"""Unit tests of sectorlab/crash/: power loss, crash presets and runs, the databases' judges."""
