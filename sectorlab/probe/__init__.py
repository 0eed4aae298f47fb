"""`sectorlab probe`: a device's timing measured, and a profile in the catalog's form calibrated from it.

patterns.py lays out what is measured (the figures: redo's appends at 512 and 4096 bytes, a partial
write into a cold unit and into the unit just written, writes of 512 B to 64 KiB aligned and not, a
flush after a write, random reads), interleaved in rounds; measure.py issues them through `redo-writer
io` (queue depth 1, each request timed) to a file, a block device or an NBD export, with the same
patterns on a floor of the same path where one exists (an NBD export: the floor's model); depth.py
reads at queue depths 1 to 8 (fio) and tells how many requests the device serves at once; fit.py
turns the figures into the model's parameters, each with its interval and its source, and says what
it cannot tell; profile.py writes and reads that profile (TOML) and the lab serves it as it serves a
catalog profile.
"""
