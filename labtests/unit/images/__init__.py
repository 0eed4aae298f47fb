"""Unit tests of sectorlab/images/: guest specs, the lab tools, Packer, the recipe."""
