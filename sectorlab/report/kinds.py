"""Every kind of report, in one table (KINDS), and `sectorlab report DIR` for all of them (write).

A results directory is known by the one record file it holds (bench.json, appliance.json,
sweep.json, load.json, crash.json, crash-db.json, probe.json); its kind's module writes its report
from it through the one renderer (render.py). A new kind is one module with a `write(results)` and one
entry here: nothing else chooses between kinds.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError
from .render import results_dir


@dataclass(frozen=True)
class Kind:
    """A kind of report: its name, the record file its results directory holds, who writes that
    directory (for the error a stranger gets) and its module (in sectorlab.report, or a dotted
    path), whose `write(results)` writes the report and returns the files it wrote by name,
    report.html as "html" (`sectorlab report --png` draws it)."""
    name: str
    results_file: str
    written_by: str
    module: str

    def write(self, results: Path) -> dict[str, Path]:
        name = self.module if "." in self.module else f"{__package__}.{self.module}"
        return importlib.import_module(name).write(results)


KINDS = (
    Kind("redo", "bench.json", "sectorlab bench", "redo"),
    Kind("appliance", "appliance.json", "sectorlab bench", "appliance"),
    Kind("sweep", "sweep.json", "sectorlab bench-sweep", "sweep"),
    Kind("load", "load.json", "sectorlab bench-load", "load"),
    Kind("crash", "crash.json", "sectorlab crash", "crash"),
    Kind("crash-db", "crash-db.json", "sectorlab crash-db", "crashdb"),
    Kind("probe", "probe.json", "sectorlab probe", "probe"),
)


def get(name: str) -> Kind:
    """The kind of this name (a bench's run names the report it writes)."""
    for kind in KINDS:
        if kind.name == name:
            return kind
    raise ValueError(f"no report kind {name!r} in KINDS")


def kind_of(results: Path | str) -> Kind:
    """The kind whose record file the results directory holds; one line when it is not a directory,
    or holds none or two. A link or a FIFO in the file's place counts: the kind's report refuses it
    with its reason."""
    results = results_dir(results)
    found = [k for k in KINDS if os.path.lexists(results / k.results_file)]
    if len(found) > 1:
        raise UsageError(f"{results}: both {found[0].results_file} and {found[1].results_file}: a results "
                         f"directory is one run's; expected a directory written by '{found[0].written_by}' or "
                         f"'{found[1].written_by}', not both")
    if not found:
        files = ", ".join(k.results_file for k in KINDS[:-1]) + f" or {KINDS[-1].results_file}"
        raise UsageError(f"{results}: no {files}; expected a results directory written by 'sectorlab bench' "
                         f"(results/<timestamp>-<preset>/) or another command that writes results")
    return found[0]


def write(results: Path | str) -> dict[str, Path]:
    """`sectorlab report`: the report of a results directory, by the kind whose record it holds."""
    return kind_of(results).write(Path(results))
