"""The benches: the seeds' experiments and the lab's own cost.

kinds.py is `sectorlab bench` for every kind of bench: one table (KINDS) gives each kind's load (of
its preset file's table), run and report kind (of its results directory), and recognises a preset by
its table. presets.py holds what every kind shares: where presets and results live, a preset's file
by name. Then a room a kind of bench:

- redo/ (the redo bench, [bench], bench.json): preset.py reads a preset (labs/bench/*.toml) and
  checks it before anything starts, with fields.py (its tables' fields) and sweeps.py (its
  [[bench.sweep]] tables); run.py runs it in its lab (lab up, redo-writer at every allowed BLOCKSIZE
  on each target, lab down, results/<time>-<preset>/), twin.py runs each guest run's twin on the
  device path (this host straight to the disk's model over NBD);
- devicepath/ (benches with no lab, on the device path alone): runs.py starts the models and runs
  a preset's configurations on them, sweep.py is `sectorlab bench-sweep` (an assumed parameter over
  its range), load.py `sectorlab bench-load` (the seed's own load, closed loop);
- appliance/ (the appliance bench, [appliance], appliance.json; seed 004, a storage appliance's
  shares over NFS): preset.py reads the preset, run.py runs it;
- cost/ (the lab's own cost): tools.py is `sectorlab bench-writer` (redo-writer against fio) and
  `sectorlab bench-lab-up` (cold and warm lab-up), floor.py `sectorlab bench-floor` (the lab's own
  cost of a redo write per bus, the guest's latency beside the model's).

The numbers are sectorlab/analysis/'s, the reports sectorlab/report/'s. The names below are what the
CLI and the scenarios use.
"""

from ..lazy import interface

# The package's names, each imported from its module when first used: `sectorlab` starts without the benches'.
_LAZY = {
    "KINDS": "kinds",
    "Kind": "kinds",
    "kind_of_preset": "kinds",
    "load_preset": "kinds",
    "run": "kinds",
    "DEFAULT_PRESET": "presets",
    "PRESETS_DIR": "presets",
    "RESULTS_DIR": "presets",
    "clock_text": "presets",
    "preset_names": "presets",
    "preset_path": "presets",
    "RUN_OVERHEAD_S": "redo.preset",
    "Preset": "redo.preset",
    "Target": "redo.preset",
    "Workload": "redo.preset",
    "GUEST_DIR": "redo.run",
    "Bench": "redo.run",
    "asm_verdicts": "redo.run",
    "redo_writer_args": "redo.preset",
}


__getattr__, __dir__ = interface(__name__, _LAZY, globals())
