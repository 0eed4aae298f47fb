"""The kinds of bench (sectorlab/bench/kinds.py) and of report (sectorlab/report/kinds.py): a preset
is of the kind whose table it has, a results directory of the kind whose file it holds, and a new
kind is its module and one entry in each KINDS: a power-cut harness faked here (this module is its
preset loader, its run and its report kind's module, with its `write`) is loaded, run and reported
through `sectorlab bench` and re-rendered by `sectorlab report`, the entry points of every kind. No
VM: the fake's run writes its results file, and a run that reached lab-up fails the test instead of
booting one."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from sectorlab import bench, cli, inputs, labdef
from sectorlab import lab as lab_mod
from sectorlab.bench import kinds
from sectorlab.bench.clock import REAL, Clock
from sectorlab.errors import UsageError
from sectorlab.report import kinds as report_kinds

LAB = """[lab]
name = "bench-crash"

[[vm]]
name = "lab1"
guest = "debian12"

[[vm.disk]]
name = "victim"
bus = "virtio"
geometry = "sector4k"
size_mib = 64
"""


# ---- the new kind, as its own module would have it ---------------------------------------------

@dataclass
class PowerCutPreset:
    name: str
    path: Path
    lab: labdef.Lab
    seed: str
    title: str
    cuts: int
    order_seed: int | None = None
    kind: str = dataclasses.field(default="powercut", init=False)

    def plan(self) -> list[int]:
        return list(range(1, self.cuts + 1))

    def estimate_s(self) -> float:
        return 30.0 * self.cuts


def load(path: Path, data: dict, lab: labdef.Lab, duration_s=None, warmup_s=None, repeats=None, order_seed=None):
    if duration_s is not None:
        raise UsageError(f"{path}: DURATION does not apply to a [powercut] preset; leave it out")
    c = data["powercut"]
    return PowerCutPreset(path.stem, path, lab, c.get("seed", ""), c["title"], repeats or c["cuts"], order_seed)


def run(preset: PowerCutPreset, progress, results_root: Path) -> Path:
    results = results_root / f"powercut-{preset.name}"
    results.mkdir(parents=True)
    (results / "powercut.json").write_text(json.dumps({"preset": preset.name, "cuts": preset.plan()}))
    progress(f"{len(preset.plan())} power cuts of {preset.lab.vms[0].name}")
    report_kinds.get("powercut").write(results)
    return results


def write(results: Path) -> dict[str, Path]:
    """The report kind's module's one function: report.md and report.html of powercut.json."""
    doc = json.loads((results / "powercut.json").read_text())
    out = {"md": results / "report.md", "html": results / "report.html"}
    out["md"].write_text(f"# {len(doc['cuts'])} power cuts\n")
    out["html"].write_text(f"<!DOCTYPE html><h1>{len(doc['cuts'])} power cuts</h1>\n")
    return out


POWERCUT = kinds.Kind("powercut", "powercut", "powercut", load, run)
REPORT = report_kinds.Kind("powercut", "powercut.json", "sectorlab bench", __name__)


# ---- the tests ---------------------------------------------------------------------------------

@pytest.fixture
def no_lab_up(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a unit test reached lab-up: the bench went to a kind that boots a VM")
    monkeypatch.setattr(lab_mod, "up", refuse)


@pytest.fixture
def powercut_kind(monkeypatch, no_lab_up) -> kinds.Kind:
    monkeypatch.setattr(kinds, "KINDS", (*kinds.KINDS, POWERCUT))
    monkeypatch.setattr(report_kinds, "KINDS", (*report_kinds.KINDS, REPORT))
    return POWERCUT


def _toml(path: Path) -> dict:
    return inputs.read_toml(path, "bench preset", inputs.LAB_DEFINITION_MAX)


def _preset_file(tmp_path: Path, tables: str = '[powercut]\ntitle = "power cut"\ncuts = 3\n') -> Path:
    path = tmp_path / "power-cut.toml"
    path.write_text(LAB + "\n" + tables)
    return path


def test_a_new_kind_is_loaded_run_and_reported_through_the_bench_and_report_commands(tmp_path, powercut_kind,
                                                                                     capsys):
    path = _preset_file(tmp_path)
    preset = bench.load_preset(str(path), repeats=2)
    assert (preset.kind, preset.title, preset.plan(), preset.lab.name) == ("powercut", "power cut", [1, 2],
                                                                           "bench-crash")
    assert kinds.kind_of_preset(path, _toml(path)) is powercut_kind
    assert cli.main(["bench", str(path), "--results", str(tmp_path / "results")]) == 0
    results = Path(capsys.readouterr().out.strip())
    assert results == tmp_path / "results" / "powercut-power-cut"
    assert sorted(p.name for p in results.iterdir()) == ["powercut.json", "report.html", "report.md"]
    assert report_kinds.kind_of(results) is REPORT
    (results / "report.md").unlink()
    assert cli.main(["report", str(results)]) == 0
    assert (results / "report.md").read_text() == "# 3 power cuts\n"
    assert capsys.readouterr().out.split() == [str(results / "report.md"), str(results / "report.html")]


def test_a_new_kinds_refusals_and_table_clashes_are_one_line(tmp_path, powercut_kind):
    with pytest.raises(UsageError, match=r"DURATION does not apply to a \[powercut\] preset"):
        bench.load_preset(str(_preset_file(tmp_path)), duration_s=5)
    both = _preset_file(tmp_path, '[bench]\nseed = "x"\n\n[powercut]\ntitle = "t"\ncuts = 1\n')
    with pytest.raises(UsageError, match=r"both \[bench\] and \[powercut\]: a preset is one or the other"):
        bench.load_preset(str(both))
    with pytest.raises(UsageError, match=r"no \[bench\] table: a preset is a lab definition with a \[bench\] "
                                         r"table \(or \[appliance\] or \[powercut\]; see labs/bench/\)"):
        bench.load_preset(str(_preset_file(tmp_path, "")))
    results = tmp_path / "r"
    results.mkdir()
    (results / "bench.json").write_text("{}")
    (results / "powercut.json").write_text("{}")
    with pytest.raises(UsageError, match=r"both bench.json and powercut.json: a results directory is one run's"):
        report_kinds.write(results)


@pytest.mark.parametrize("name", bench.preset_names())
def test_every_preset_is_of_the_kind_whose_table_it_has(name):
    p = bench.load_preset(name)
    data = _toml(p.path)
    kind = kinds.kind_of_preset(p.path, data)
    assert p.kind == kind.name and [k.name for k in kinds.KINDS if k.table in data] == [kind.name]


@pytest.mark.parametrize("name, kind", [("vsphere-512e", "redo"), ("zfs-appliance", "appliance")])
def test_a_preset_runs_by_its_kind(monkeypatch, no_lab_up, tmp_path, name, kind):
    ran = []
    monkeypatch.setattr(kinds, "KINDS", tuple(
        dataclasses.replace(k, run=lambda preset, progress, root, k=k, **clock: ran.append((k.name, preset.name,
                                                                                            *clock.values())) or root)
        for k in kinds.KINDS))
    assert bench.run(bench.load_preset(name), print, tmp_path) == tmp_path
    assert ran == [(kind, name, REAL)] if kind == "redo" else [(kind, name)]


def test_a_bench_without_a_device_path_is_refused_the_virtual_clock(monkeypatch, no_lab_up, tmp_path):
    ran = []
    monkeypatch.setattr(kinds, "KINDS", tuple(dataclasses.replace(k, run=lambda *a, **kw: ran.append(a))
                                              for k in kinds.KINDS))
    with pytest.raises(UsageError, match=r"^preset 'zfs-appliance', a bench of kind appliance, has no device "
                                         r"path: nothing of it runs in virtual time; run it without --clock virtual"):
        bench.run(bench.load_preset("zfs-appliance"), print, tmp_path, Clock("virtual", wakeup_us=10))
    assert not ran and not any(tmp_path.iterdir())


@pytest.mark.parametrize("files, kind", [(["bench.json"], "redo"), (["appliance.json"], "appliance"),
                                         (["report.md", "appliance.json"], "appliance")])
def test_a_results_directory_is_of_the_kind_whose_file_it_holds(tmp_path, files, kind):
    for f in files:
        (tmp_path / f).write_text("{}")
    assert report_kinds.kind_of(tmp_path).name == kind


def test_a_results_directory_of_no_kind_is_one_line(tmp_path):
    with pytest.raises(UsageError, match=r"no bench.json, appliance.json, sweep.json, load.json, crash.json, "
                                         r"crash-db.json or probe.json; expected a results directory written by "
                                         r"'sectorlab bench'"):
        report_kinds.write(tmp_path)
