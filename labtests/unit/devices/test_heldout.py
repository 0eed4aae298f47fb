"""The seeds' held-out device figures (sectorlab/devices/heldout.py): iostat's arithmetic on a
model's trace, the agreement rule (the model's range against the figure as printed, widened by its
rounding), the catalog's entries, one line for a bad entry, the table in docs/device-models.md as
the command prints it, and the section a bench report gets."""

from __future__ import annotations

import json
import subprocess

import pytest

from sectorlab.devices import heldout, profiles, trace
from sectorlab.errors import UsageError
from sectorlab.paths import REPO
from sectorlab.report import findings


def test_iostat_figures_of_a_trace():
    """Two writes overlapping (0-100 and 50-150 us, the second queued 20 us) and one alone
    (1000-1100): 250 us busy of 1100, 300 us in flight, 3 requests."""
    got = heldout.iostat([(0, 0 + 100), (50, 20 + 80), (1000, 0 + 100)])
    assert got["await_ms"] == pytest.approx(0.300 / 3)
    assert got["svctm_ms"] == pytest.approx(0.250 / 3)
    assert got["util_pct"] == pytest.approx(100 * 250 / 1100)
    assert got["avgqu_sz"] == pytest.approx(300 / 1100) and got["requests"] == 3


def test_a_traces_answers_are_its_requests_arrivals_and_answer_times():
    """trace.answers reads two columns' worth of what trace.parse reads: the same arrival and answer
    of every request of the operation, the flash log's when it answered first (a cell's trace)."""
    params = {"write": "lognormal:100,300", "read": "fixed:50", "seed": "3", "flashlog.write": "lognormal:100,300",
              "flashlog.read": "fixed:85"}
    lines = "".join(f"{i * 40.0} {'read' if i % 5 == 0 else 'write'} {i * 4096} 4096\n" for i in range(2000))
    proc = profiles.simulate(params, lines)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    parsed = trace.parse(text)
    assert any(r.flashlog_first == 1 for r in parsed) and any(r.flashlog_first == 0 for r in parsed)
    for op in ("write", "read"):
        assert trace.answers(text, op) == [(r.t_us, r.answer_us) for r in parsed if r.op == op]
    assert trace.answers("", "write") == [] and trace.answers(text.split("\n")[0] + "\n", "write") == []
    # an older trace or an odd one: an empty time, no flash log columns, "01" as parse reads it
    lines = text.split("\n")
    header = lines[0].split(",")
    rows = [dict(zip(header, line.split(","))) for line in lines[1:4]]
    rows[0]["queue_us"] = ""
    rows[1]["flashlog_first"] = "01"
    odd = "\n".join([",".join(header)] + [",".join(r[h] for h in header) for r in rows]) + "\n"
    old = "\n".join([",".join(h for h in header if not h.startswith("flashlog"))] +
                     [",".join(r[h] for h in header if not h.startswith("flashlog")) for r in rows]) + "\n"
    for t in (odd, old):
        got, want = trace.answers(t, rows[0]["op"]), [(r.t_us, r.answer_us) for r in trace.parse(t)
                                                      if r.op == rows[0]["op"]]
        assert repr(got) == repr(want), (got, want)  # NaN where parse has NaN


def test_a_fixed_service_at_a_light_load_is_what_queueing_says():
    """write=fixed:100 on one channel at 1,000 Poisson writes/s: utilisation 10 %, and the M/D/1
    mean wait rho * S / (2 (1 - rho)) = 5.6 us on top of the 100 us service."""
    got = heldout.at_load({"write": "fixed:100", "seed": "1"}, heldout.Load(1000, 4096), 20_000, 1)
    assert got["util_pct"] == pytest.approx(10, rel=0.05)
    assert got["svctm_ms"] == pytest.approx(0.100, rel=1e-6)
    assert got["await_ms"] == pytest.approx(0.1056, rel=0.02)


@pytest.mark.parametrize("low, high, printed, agrees", [
    (0.0265, 0.0265, "0.03", True), (0.064, 0.0651, "0.07", True), (0.02, 0.02, "0.07", False),
    (1.31, 1.32, "1.33", False), (1.31, 1.326, "1.33", True), (27.0, 28.0, "27.47", True),
    (0.0149, 0.0151, "0.01", True), (0.0151, 0.016, "0.01", False)])
def test_the_agreement_rule(low, high, printed, agrees):
    assert heldout.agrees(low, high, printed) is agrees


def test_the_catalogs_held_out_figures():
    """Seeds 000 and 001 printed iostat rows for three of the profiles' devices; each names its
    load and its four figures as printed, and the loads are what the rows give."""
    items = {h.profile: h for h in heldout.held_out()}
    assert sorted(items) == ["hdd15k-raid0-15", "intel-p3700", "x25e-raid0-8"]
    p3700, ssd, hdd = items["intel-p3700"], items["x25e-raid0-8"], items["hdd15k-raid0-15"]
    # sysstat's wMB/s is sectors / 2048: MiB/s.
    assert p3700.load.writes_per_s * p3700.load.request_bytes / 2**20 == pytest.approx(589.59, rel=1e-3)
    assert ssd.load.writes_per_s * ssd.load.request_bytes / 2**20 == pytest.approx(167.86, rel=1e-3)
    assert hdd.load.writes_per_s * hdd.load.request_bytes / 2**20 == pytest.approx(130.68, rel=1e-3)
    assert ssd.load.writes_per_s / hdd.load.writes_per_s == pytest.approx(6.4, abs=0.05)  # the seed's "6.4X"
    for h in items.values():
        assert sorted(h.figures) == sorted(heldout.FIGURES) and all(v in h.quote for v in h.figures.values())


def test_a_bad_held_out_entry_is_one_line(tmp_path, monkeypatch):
    catalog = json.loads(heldout.CATALOG.read_text())
    catalog["device_profiles"]["intel-p3700"]["held_out"][0]["figures"]["await_ms"] = 0.03
    bad = tmp_path / "geometries.json"
    bad.write_text(json.dumps(catalog))
    monkeypatch.setattr(heldout, "CATALOG", bad)
    with pytest.raises(UsageError) as e:
        heldout.held_out()
    msg = str(e.value)
    assert "\n" not in msg and "device profile 'intel-p3700' held_out #1" in msg and "as printed" in msg


def test_the_docs_table_is_the_commands():
    out = subprocess.run([str(REPO / ".venv" / "bin" / "sectorlab"), "geometries", "--held-out"],
                         capture_output=True, text=True, check=True).stdout.strip()
    text = (REPO / "docs" / "device-models.md").read_text()
    begin = "<!-- generated by 'sectorlab geometries --held-out': begin -->\n"
    end = "\n<!-- generated by 'sectorlab geometries --held-out': end -->"
    assert text[text.index(begin) + len(begin):text.index(end)] == out, \
        "docs/device-models.md's held-out table differs: paste 'sectorlab geometries --held-out' between the markers"


def test_the_report_section_names_the_rule_and_each_figure():
    rows = heldout.check([h for h in heldout.held_out() if h.profile == "x25e-raid0-8"])
    lines = findings.held_out_section(rows)
    assert lines[0] == "## The device models against the seeds' held-out figures"
    text = "\n".join(lines)
    assert "| `x25e-raid0-8` | seed 001 `sdb1`: 21,357 writes/s of 8,243 B | await (ms) | 0.07 |" in text
    assert "differs: model / seed = 0.29" in text and "widened by its rounding" in text
    assert findings.held_out_section([]) == []
