"""Geometry: every disk a lab declared shows in the guest with exactly its logical and physical sector
and I/O sizes (test_sector_detection), also in a lab made from a real server's disks
(test_from_host_lab), and seed 000's redo-disk procedure puts its partition where the geometry wants
it, misaligned only where the physical sector is larger than the logical one (test_provision_redo_disk).
"""
