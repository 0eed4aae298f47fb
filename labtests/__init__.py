"""sectorlab's tests: the lab scenarios, grouped by what they test (as blktests' tests/<group>/), and
the unit tests.

conftest.py holds what every test shares (fixtures, require_program, the hook that stops a run on a
guest that panicked); at this level it applies to every group. support/ holds the scenarios' helpers.

Groups: geometry/ (each disk seen with exactly its geometry; partitions aligned to it), rules/ (redo
BLOCKSIZE verdicts confirmed by real writes, and bad input refused), devices/ (device models and
behaviours, read-modify-write, NVMe reformat), databases/ (real databases and XFS as cross-checks),
zfs/ (OpenZFS and NFS, seed 004), bench/ (make bench checked against its files), lab/ (the lab itself:
its image, lifecycle, faults, interrupts, isolation, ownership, a remote libvirt host). unit/: no VM.

What a scenario needs and when it runs is its marker (pyproject.toml), not its folder: the Makefile
selects by marker.
"""
