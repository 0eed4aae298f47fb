"""The seeds' experiments and the lab's own benchmarks.

preset.py reads a bench preset (labs/bench/*.toml) and checks it before anything starts; run.py
is `sectorlab bench` (its lab up, redo-writer at every allowed BLOCKSIZE on each target, lab down,
results/<time>-<preset>/); report.py turns a results directory into report.md, report.html and
summary.json, with metrics.py (one run's numbers: METRICS by name, the table rows, spread),
compare.py (configurations compared on one value per run: Mann-Whitney, bootstrap CIs, the shift
function, shapes, controls, the seed figures), plots.py (the pictures), document.py and findings.py
(the Markdown and the HTML); stats.py holds the statistics and the events files' reader and plots
(scipy, matplotlib); tools.py benchmarks the lab's own tools
(`sectorlab bench-writer`: redo-writer against fio; `sectorlab bench-lab-up`: cold and warm
lab-up). The names below are what the CLI and the scenarios use.
"""

from .preset import (  # noqa: F401
    DEFAULT_PRESET,
    PRESETS_DIR,
    RESULTS_DIR,
    RUN_OVERHEAD_S,
    Preset,
    Target,
    Workload,
    _clock,
    load_preset,
    preset_names,
    preset_path,
)
from .run import GUEST_DIR, Bench, asm_verdicts, redo_writer_args, run  # noqa: F401
