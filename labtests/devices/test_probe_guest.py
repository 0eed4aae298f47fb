"""The probe's round trip in a guest (sectorlab/probe/roundtrip.py, probe_guest; make test-probe-guest,
docs/probe.md gives its runs): a lab whose disks are served by the models of five profiles, probed
from inside the guest by redo-writer io on each block device, the guest's whole path (its block
layer, the virtio driver, QEMU under TCG, the device model's NBD path) measured on the disk itself,
its model answering as a floor in the floor's turns (measure.OwnFloor: every request after 1 us to
20 ms, every 10 us up to 100, where the path steps), and taken away, its spread deconvolved from the
fitted times. A profile is fitted from each; a second lab serves the five fitted profiles (profile
files, as a user names one) and the guest probes them again. The second probe finds what the first
did: the write unit, a read before a partial write and a merge into the unit just written, found or
not found alike and as the profile has them; every figure's median within 10 % or 10 us, or within
how well the two probes knew the guest's path (its move between their turns at the first floor, and
its rise's interval at the figure's time, or the two probes' rise curves' distance there:
roundtrip.path_known), or their sampling error, whichever is more (each said); a p99 only where it
stands above twice the path's own spread (roundtrip.differences). Each case says how many of its
medians are told from the path (known to less than half the median): in three runs the HDD's 22 of
23, the flash drives' and the lognormal's none or one (their path known to 44-291 us): what this
holds of those is their geometry; their medians are held in virtual time
(test_probe_roundtrip.py).

The profiles, as the virtual-time round trip's (labtests/devices/test_probe_roundtrip.py): the P3700
(no write unit), the 512e flash drive without and with its DRAM buffer (a 4 KiB unit read first;
merged when buffered), the 7,200 rpm disk on 512e (read before a partial write) and a lognormal
tail. What a guest under TCG can tell: its path costs about a millisecond a request and moves by
tens of microseconds between turns, so a figure of the P3700's (tens of microseconds) is held to
that, said in each test's output; the device path on this host tells it to a few microseconds (make
bench-timing) and virtual time exactly (make test).
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
import tomli_w

from labtests.support import lab as labsupport
from sectorlab import lab as lab_mod
from sectorlab.guest import disks as guestdisks
from sectorlab.lab import modelled
from sectorlab.paths import REPO
from sectorlab.probe import measure, patterns, profile, roundtrip

pytestmark = pytest.mark.probeguest

SECTORLAB = str(REPO / ".venv" / "bin" / "sectorlab")
# A figure's requests in each probe: 200 for the devices whose times are tens of microseconds under
# a path of hundreds (at 100, a flash drive's fitted read came out 31 us against 77 in one run of
# four, and its read first went below what the second probe could tell), 100 for the HDD (its 12 ms
# are told at 100; 2,500 requests take 80 s), 1,000 for the lognormal tail (its p99 ten times its
# median: at 200 a median is known to about a fifth, at the round trip's family confidence to half).
# Each disk is the layout's size, rounded up to 64 MiB.
LOGNORMAL = {"write": "lognormal:200,2000", "read": "lognormal:300,3000", "write-mbps": "500", "read-mbps": "500"}
CASES = [  # (disk, catalog profile or None for LOGNORMAL, geometry, samples, the write unit, a read first, a merge)
    ("p3700", "intel-p3700", "sector512n", 200, 0, False, False),
    ("flash-512e", "nvme-512e", "sector512e", 200, 4096, True, False),
    ("flash-512e-dram", "nvme-512e-dram", "sector512e", 200, 4096, True, True),
    ("hdd-7200", "hdd-7200", "sector512e", 100, 4096, True, False),
    ("lognormal", None, "sector512n", 1000, 0, False, False),
]
SAMPLES = {c[0]: c[3] for c in CASES}


def _size_mib(disk: str) -> int:
    need = patterns.needed_bytes(SAMPLES[disk], 512) >> 20
    return -(-need // 64) * 64


def _profile_file(directory: Path, name: str, doc: dict) -> str:
    return str(profile.write(directory / f"{name}.toml", name, doc))


def _definition(directory: Path, lab_name: str, devices: dict[str, str]) -> Path:
    """A lab of one guest: each case's disk served by `devices[disk]` (a catalog profile or a
    profile file), every disk on virtio; written by tomli-w. Each disk's floor is its own model
    answering as one (measure.OwnFloor)."""
    geometry = {c[0]: c[2] for c in CASES}
    disks = [{"name": disk, "bus": "virtio", "geometry": geometry[disk], "device": device, "size_mib": _size_mib(disk)}
             for disk, device in devices.items()]
    doc = {"lab": {"name": lab_name, "libvirt_uri": "qemu:///system"},
           "vm": [{"name": "lab1", "guest": "debian12", "memory_mib": 768, "disk": disks}]}
    path = directory / f"{lab_name}.toml"
    path.write_text(tomli_w.dumps(doc))
    return path


def _lab(path: Path, action: str) -> None:
    done = subprocess.run([SECTORLAB, "lab", action, "--lab", str(path)], capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, f"sectorlab lab {action} --lab {path}: {done.stderr[-3000:]}"


def _probe_all(path: Path, scratch: Path) -> dict[str, roundtrip.Probe]:
    """The lab of `path` up, every case's disk probed in its guest, the lab down (also on failure)."""
    _lab(path, "up")
    try:
        definition = lab_mod.load_lab(path)
        state = lab_mod.read_lab_json(definition.name)
        guest = lab_mod.guests_from_lab_json(state)["lab1"]
        try:
            seen = guestdisks.by_serial(guestdisks.parse_lsblk(guest.check_output(guestdisks.LSBLK_COMMAND)))
            dev = labsupport.unwatched_paths(list(state.disks.values()), {"lab1": guest}, {"lab1": seen})
            runner = measure.GuestRunner(guest, scratch)
            out = {}
            for disk, *_ in CASES:
                start = time.monotonic()
                floor = measure.OwnFloor(modelled.server(definition.name, disk).answer_as_floor)
                out[disk] = roundtrip.probe_guest(runner, dev[disk], floor, SAMPLES[disk])
                print(f"{definition.name}: {disk} probed in the guest in {time.monotonic() - start:.0f} s")
            return out
        finally:
            guest.close()
    finally:
        _lab(path, "down")


@pytest.fixture(scope="module")
def probes(tmp_path_factory):
    """Each case's first probe (the catalog's model) and second (the profile fitted from the first)."""
    directory = tmp_path_factory.mktemp("probe-guest")
    lognormal = _profile_file(directory, "lognormal-tail", profile.instrument(
        LOGNORMAL, "a lognormal tail: a median of 200 us, a p99 of 2 ms", "assumed: a tail chosen for the round trip"))
    first = _probe_all(_definition(directory, "probe-guest-a", {c[0]: c[1] or lognormal for c in CASES}), directory)
    fitted = {disk: _profile_file(directory, f"fitted-{disk}", profile.entry(
        p.fit, f"the lab disk {disk}, probed in a guest", time.strftime("%Y-%m-%d"), "none",
        "assumed: a lab disk's model", f"the profile fitted from the guest's probe of {disk}"))
        for disk, p in first.items()}
    second = _probe_all(_definition(directory, "probe-guest-b", fitted), directory)
    return first, second


@pytest.mark.parametrize("disk,name,geometry,samples,unit,reads_first,merges", CASES, ids=[c[0] for c in CASES])
def test_a_profile_fitted_in_a_guest_answers_as_the_probed_model(probes, disk, name, geometry, samples, unit,
                                                                  reads_first, merges):
    first, second = probes[0][disk], probes[1][disk]
    f = first.fit
    said = f"{disk}: unit {f.unit}, {f.reads_first.said()}, {f.merges.said()}; fitted {f.params}"
    print(said)
    assert (f.unit, f.reads_first.found, f.merges.found) == (unit, reads_first, merges), said
    # every disk here is write-through: the guest's kernel sends it no flush, and the probe says so
    assert f.params["flush"] == "fixed:0" and "never reached the floor" in f.notes["flush"], f.notes["flush"]
    problems, unsaid = roundtrip.differences(first, second)
    for figure, x in f.summaries.items():
        y = second.fit.summaries.get(figure)
        path = roundtrip.path_known(first, second, figure)
        print(f"  {figure}: median {x.median:.1f} us, then {y.median if y else float('nan'):.1f} us; "
              f"the guest's path known to {path:.1f} us (its move between turns, its rise's interval or the "
              f"two probes' rises apart)")
    for which, p in (("first", first), ("second", second)):
        print(f"  the guest's path, {which} probe: {p.fit.summaries['aligned-4096'].floor:.0f} us at a 4 KiB write; "
              f"its rise at {p.floor.sleeps} us of the device's: {[round(x) for x in p.floor.rises]} us, known to +-"
              f"{[round(x) for x in p.floor.rise_error]} us (95 % over the figures), moved between the turns by "
              f"{[round(x) for x in p.floor.rise_moved]} us; its spread (p25, p75, p90 "
              f"about each figure's median) at " + ", ".join(
                  f"{s:g} us {tuple(round(float(v)) for v in np.percentile(pool, (25, 75, 90)))}"
                  for s, pool in zip(p.floor.sleeps, p.floor.spreads) if s in (1, 20, 100, 200, 1000)))
    # a median held within more than half of itself is not told from the path: said, as a count
    untold = roundtrip.untold(first, second)
    print(f"  medians told from the guest's path: {len(f.summaries) - len(untold)} of {len(f.summaries)} (not: the "
          f"path known to more than half the median: {', '.join(untold) or 'none'})")
    print("  not compared:", "; ".join(unsaid))
    assert not problems, f"{said}; {problems}"
    assert (second.fit.unit, second.fit.reads_first.found, second.fit.merges.found) == (unit, reads_first, merges)
