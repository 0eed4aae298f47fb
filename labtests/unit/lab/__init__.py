"""Unit tests of sectorlab/lab/: lab-up's phases, the record, status, ownership, warm states."""
