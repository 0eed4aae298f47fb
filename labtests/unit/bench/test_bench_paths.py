"""Both paths in a bench's report: each run's device-path twin read beside it, every comparison
tested on each path, the floor's share of each side, the path a difference is read from, and the
device path's command made from the guest's (sectorlab/bench/headlines.py, devicepath.py)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from labtests.unit.analysis.test_compare import fake_report
from sectorlab.analysis import headlines
from sectorlab.bench.redo import twin as devicepath
from sectorlab.errors import UsageError
from sectorlab.report import redo as report

RNG = np.random.default_rng(11)


def _noisy(centre: float, spread: float, n: int = 8) -> list[float]:
    return [float(v) for v in centre + RNG.uniform(-spread / 2, spread / 2, n)]


def write_bench(tmp_path, guest: dict, device: dict | None, comparisons, why_not=None) -> dict:
    """A results directory: per configuration NAME (its model, its guest-path and device-path log
    file sync medians in ms), one run entry per value, each with its twin where `device` has one."""
    (tmp_path / "runs").mkdir()
    entries = []
    for name, (model, values) in guest.items():
        for i, v in enumerate(values, 1):
            rid = f"runs/{name}-{i}"
            (tmp_path / f"{rid}.json").write_text(json.dumps(fake_report(v)))
            entry = {"disk": name, "blocksize": 512, "repeat": i, "verdict": {"allowed": True},
                     "report": f"{rid}.json", "slot": len(entries), "model": model, "bus": "virtio"}
            if device and name in device:
                (tmp_path / f"{rid}.device.json").write_text(json.dumps(fake_report(device[name][i - 1])))
                entry["device_path"] = {"report": f"{rid}.device.json", "command": f"redo-writer run {name}",
                                        "reply_spin_us": 1000}
            entries.append(entry)
    bench = {"preset": "unit", "runs": entries, "comparisons": comparisons,
             "device_path": {"reply_spin_us": 1000, "commands": ["redo-writer run ..."], "why_not": why_not}}
    (tmp_path / "bench.json").write_text(json.dumps(bench))
    return bench


def cmp(a: str, b: str, title: str) -> dict:
    return {"title": title, "a": {"disk": a, "blocksize": 512}, "b": {"disk": b, "blocksize": 512},
            "primary": "log_file_sync_p50_ms"}


def test_a_difference_within_the_guest_floors_spread_is_read_from_the_device_path(tmp_path):
    """Guest path: a 20 us difference on a 300 us floor that spreads 60 us from run to run, within
    noise; device path: the same configurations 20 us apart on a 30 us floor that spreads 2 us,
    significant. The headline reads it from the device path, says why, and gives each path's
    floor share of each side."""
    guest = {"floor": ("floor", _noisy(0.300, 0.060)), "a": ("x", _noisy(0.400, 0.060)),
             "b": ("y", _noisy(0.420, 0.060))}
    device = {"floor": _noisy(0.030, 0.002), "a": _noisy(0.130, 0.002), "b": _noisy(0.150, 0.002)}
    write_bench(tmp_path, guest, device, [cmp("a", "b", "a against b")])
    written = report.write(tmp_path)
    summary = json.loads(written["summary"].read_text())
    (h,) = summary["headlines"]
    assert h["read_from"] == "device" and "within the spread of the guest path's floor" in h["why"]
    assert h["device"]["verdict"] == "significant" and h["device"]["n"] == [8, 8] and h["device"]["p"] < 0.01
    g_floor, d_floor = h["guest"]["floor"][0], h["device"]["floor"][0]
    assert g_floor["config"] == d_floor["config"] == "floor@512" and g_floor["n"] == 8
    assert h["guest"]["floor_share_pct"][0] == pytest.approx(100 * g_floor["median"] / h["guest"]["medians"][0])
    assert 60 < h["guest"]["floor_share_pct"][0] < 90 and 15 < h["device"]["floor_share_pct"][0] < 30
    assert summary["device_path"]["comparisons"][0]["verdict"] == "significant"
    md = written["md"].read_text()
    findings = md.index("## Findings")
    assert findings < md.index("## a") and findings < md.index("## Comparisons across disks")
    assert "read from the **device path**" in md
    assert re.search(r"device path: 0\.1[23]\d ms → 0\.1[45]\d ms \(\+1\d\.\d %\), p = [0-9.e-]+, n = 8 \+ 8, "
                     r"99 % CI \[.*\): \*\*significant\*\*; floor 0\.03\d ms \(floor@512\) = \d+ % of a and \d+ % of b",
                     md), md[md.index("## Findings"):md.index("## Findings") + 2000]
    assert "On the device path (the same runs' twins on this host, straight to the models):" in md
    assert "# on this host, each run's device-path twin right after it:" in md


def test_a_difference_beyond_the_floors_spread_is_read_from_the_guest_path(tmp_path):
    guest = {"floor": ("floor", _noisy(0.300, 0.010)), "a": ("x", _noisy(0.400, 0.010)),
             "b": ("y", _noisy(0.600, 0.010))}
    device = {"floor": _noisy(0.030, 0.002), "a": _noisy(0.130, 0.002), "b": _noisy(0.330, 0.002)}
    write_bench(tmp_path, guest, device, [cmp("a", "b", "far apart")])
    (h,) = json.loads(report.write(tmp_path)["summary"].read_text())["headlines"]
    assert h["read_from"] == "guest" and "at least the spread of the guest path's floor" in h["why"]
    assert h["guest"]["verdict"] == h["device"]["verdict"] == "significant"


def test_without_a_device_path_the_report_says_why_and_reads_the_guest_path(tmp_path):
    guest = {"floor": ("floor", _noisy(0.300, 0.060)), "a": ("x", _noisy(0.400, 0.060)),
             "b": ("y", _noisy(0.410, 0.060))}
    why = "disk(s) a are volumes, not served by a device model on this host"
    write_bench(tmp_path, guest, None, [cmp("a", "b", "remote")], why_not=why)
    written = report.write(tmp_path)
    (h,) = json.loads(written["summary"].read_text())["headlines"]
    assert h["device"] is None and h["read_from"] == "guest" and "this bench has no device path" in h["why"]
    assert f"device path: not tested ({why})" in written["md"].read_text()


def test_a_bench_without_a_floor_configuration_gives_no_share(tmp_path):
    guest = {"a": ("x", _noisy(0.400, 0.010)), "b": ("y", _noisy(0.600, 0.010))}
    write_bench(tmp_path, guest, None, [cmp("a", "b", "no floor")])
    written = report.write(tmp_path)
    (h,) = json.loads(written["summary"].read_text())["headlines"]
    assert h["guest"]["floor"] == [None, None] and h["guest"]["floor_share_pct"] == [None, None]
    assert "no floor configuration" in h["why"] and "no floor run at this BLOCKSIZE" in written["md"].read_text()


def test_a_floor_on_the_sides_bus_is_taken_before_another_bus(tmp_path):
    guest = {"floor-nvme": ("floor", [0.2] * 3), "floor-virtio": ("floor", [0.3] * 3), "a": ("x", [0.5] * 3)}
    write_bench(tmp_path, guest, None, [])
    bench = json.loads((tmp_path / "bench.json").read_text())
    for e in bench["runs"]:
        e["bus"] = "nvme" if e["disk"] == "floor-nvme" else "virtio"
    (tmp_path / "bench.json").write_text(json.dumps(bench))
    _, disks = report.load(tmp_path)
    f = headlines.floor_of(disks, "a@512", "log_file_sync_p50_ms")
    assert f.label == "floor-virtio@512" and f.median == pytest.approx(0.3) and f.spread == pytest.approx(0)


def test_a_twins_report_outside_the_results_directory_is_refused(tmp_path):
    guest = {"a": ("x", [0.4, 0.4])}
    write_bench(tmp_path, guest, {"a": [0.1, 0.1]}, [])
    bench = json.loads((tmp_path / "bench.json").read_text())
    bench["runs"][0]["device_path"]["report"] = "../elsewhere.json"
    (tmp_path / "bench.json").write_text(json.dumps(bench))
    with pytest.raises(UsageError, match="device_path"):
        report.load(tmp_path)


def test_a_twin_that_shares_the_guest_runs_file_is_refused(tmp_path):
    guest = {"a": ("x", [0.4, 0.4])}
    write_bench(tmp_path, guest, {"a": [0.1, 0.1]}, [])
    bench = json.loads((tmp_path / "bench.json").read_text())
    bench["runs"][0]["device_path"]["report"] = bench["runs"][0]["report"]
    (tmp_path / "bench.json").write_text(json.dumps(bench))
    with pytest.raises(UsageError, match="same file"):
        report.load(tmp_path)


def test_the_device_paths_command_is_the_guests_with_its_targets_replaced():
    guest = ["redo-writer", "run", "--target", "/dev/vdb", "--race", "/dev/vdc", "--blocksize", "512",
             "--sessions", "4", "--arrival", "poisson", "--rate", "200", "--seed", "7", "--duration", "6"]
    out = devicepath.twin(guest, "nbd+unix:///?socket=/run/a.sock", "nbd+unix:///?socket=/run/b.sock")
    assert out == ["redo-writer", "run", "--target", "nbd+unix:///?socket=/run/a.sock", "--race",
                   "nbd+unix:///?socket=/run/b.sock", "--blocksize", "512", "--sessions", "4", "--arrival", "poisson",
                   "--rate", "200", "--seed", "7", "--duration", "6", "--reply-spin-us", "1000"]


def test_a_lab_of_volumes_has_no_device_path_and_says_so():
    from sectorlab.lab.record import DiskRecord
    fields = {f: None for f in DiskRecord.__dataclass_fields__}
    vol = DiskRecord(**{**fields, "name": "redo", "device": None})
    served = DiskRecord(**{**fields, "name": "other", "device": "floor"})
    assert devicepath.missing([served]) is None
    why = devicepath.missing([served, vol])
    assert why.startswith("disk(s) redo are volumes") and "this host's models only" in why


def test_the_seeds_figures_are_given_on_both_paths(tmp_path):
    """A seed figure beside the lab's value on the guest path and, on the first screen, on the
    device path, each with its own interval and agreement."""
    guest = {"a": ("x", _noisy(0.400, 0.010))}
    device = {"a": _noisy(0.130, 0.002)}
    write_bench(tmp_path, guest, device, [])
    bench = json.loads((tmp_path / "bench.json").read_text())
    bench["seed_figures"] = [{"what": "log file sync median", "seed_value": 0.13, "unit": "ms", "lab": "value",
                              "metric": "log_file_sync_p50_ms", "a": "a@512", "quote": "q", "where": "w",
                              "tell_apart": 0.4}]
    (tmp_path / "bench.json").write_text(json.dumps(bench))
    written = report.write(tmp_path)
    summary = json.loads(written["summary"].read_text())
    (g,), (d,) = summary["seed_figures"], summary["device_path"]["seed_figures"]
    assert g["lab_value"] == pytest.approx(0.400, abs=0.006) and g["agreement"].startswith("differs")
    assert d["lab_value"] == pytest.approx(0.130, abs=0.002) and d["agreement"] == "agrees"
    md = written["md"].read_text()
    assert ("| the seed's figure | seed | lab, guest path (99 % CI) | agreement | lab, device path (99 % CI) | "
            "agreement |") in md
