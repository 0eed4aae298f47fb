"""Unit tests of sectorlab/labdef/: the lab definition, its fields, from-host."""
