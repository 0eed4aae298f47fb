"""The redo bench ([bench] presets, bench.json): preset.py reads and checks a preset, fields.py its
tables' fields, sweeps.py its [[bench.sweep]] tables; run.py runs it in its lab, twin.py each guest
run's twin on the device path."""
