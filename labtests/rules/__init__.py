"""Redo BLOCKSIZE rules against the kernel: the rules engine's verdicts in the guest (the ORA-01378
model) confirmed by O_DIRECT writes (test_redo_blocksize), redo-writer's own writes at 512 and 4096
on every disk (test_redo_writer_lab), and the in-guest tools' refusal of bad input, with nothing
written (test_redo_disk_bad_input).
"""
