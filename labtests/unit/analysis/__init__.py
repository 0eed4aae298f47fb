"""Unit tests of sectorlab/analysis/: statistics, metrics, comparisons, device rows."""
