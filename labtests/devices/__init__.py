"""Devices: what a disk does beyond its geometry. The device models served on this host, alone
(test_devicemodel_host) and behind a lab's disks (test_device_models); disks of different speeds,
raced, mirrored and failing mid-run (test_device_behaviours); a 512e disk reading before a partial
write (test_read_modify_write); an NVMe namespace reformatted to the other LBA size and back
(test_reformat_nvme).
"""
