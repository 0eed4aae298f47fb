"""The seeds' experiments and the lab's own benchmarks.

kinds.py is `sectorlab bench` and `sectorlab report` for every kind of bench: one table (KINDS)
gives each kind's load (of its preset file's table), run and report (of a results directory), and
recognises a preset by its table and a results directory by its file. Two kinds:

- the redo bench ([bench], bench.json): preset.py reads a preset (labs/bench/*.toml) and checks it
  before anything starts (and holds what every kind shares: where presets and results live);
  run.py runs it (its lab up, redo-writer at every allowed BLOCKSIZE on each target, lab down,
  results/<time>-<preset>/); report.py turns a results directory into report.md, report.html and
  summary.json, with metrics.py (one run's numbers: METRICS by name, the table rows, spread),
  compare.py (configurations compared on one value per run: Mann-Whitney, bootstrap CIs, the shift
  function, shapes, controls, the seed figures), plots.py (the pictures, and `sectorlab plot`),
  document.py and findings.py (the Markdown and the HTML), devicerows.py (a run's counts from the
  device models' traces); stats.py holds the statistics (scipy), the results' readers (reports,
  events files, the shapes of the JSON) and `sectorlab compare`;
- the appliance bench ([appliance], appliance.json; seed 004, a storage appliance's shares over
  NFS): appliance.py reads the preset, appliancerun.py runs it, appliancereport.py writes the
  report.

tools.py benchmarks the lab's own tools (`sectorlab bench-writer`: redo-writer against fio;
`sectorlab bench-lab-up`: cold and warm lab-up), floor.py the lab's own cost of a redo write per bus
(`sectorlab bench-floor`: the guest's latency beside the model's). The names below are what the CLI and the
scenarios use.
"""

from .kinds import KINDS, Kind, kind_of_preset, kind_of_results, load_preset, run, write_report  # noqa: F401
from .preset import (  # noqa: F401
    DEFAULT_PRESET,
    PRESETS_DIR,
    RESULTS_DIR,
    RUN_OVERHEAD_S,
    Preset,
    Target,
    Workload,
    clock_text,
    preset_names,
    preset_path,
)
from .run import GUEST_DIR, Bench, asm_verdicts, redo_writer_args  # noqa: F401
