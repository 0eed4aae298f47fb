"""ZFS and NFS in a guest of their own (seed 004, labs/zfs-nfs.toml, `make test-zfs`): what size and
alignment of write OpenZFS sends to each disk (ashift, recordsize, logbias and the SLOG), the options
an NFS mount negotiates and how redo written over it reaches stable storage, and a preset value the
guest refuses (test_storage_appliance, docs/zfs-nfs.md).
"""
