"""Unit tests of sectorlab/report/: the renderer and the report kinds."""
