"""The probe's round trip on this host's device path, a benchmark's (make bench-timing, on a quiet
machine: it times the host; make test holds the same round trip in virtual time,
labtests/devices/test_probe_roundtrip.py). A catalog profile served on this host and probed over
NBD, a profile fitted from that probe, the fitted profile served and probed again: the second probe
finds what the first did. The write unit, a read before a partial write and a merge into the unit
just written, found or not found alike and as the catalog profile has them; the medians of every
figure whose time is one medium's (no unit read first) within 10 % or 10 us, or, where one is more,
the path's own drift between each probe's turns in the same runs, added (a busy host moves the path:
measured, not assumed; or the two probes' rise curves' distance, roundtrip.path_known), or the
medians' sampling error at the round trip's family confidence (p99 is held only with 10 samples above it:
200 a figure here give 2, so no p99 is held). A partial write that reads its unit costs the fitted
read and the fitted write, each carrying the path's residual: its medians are said, not held
(docs/probe.md gives how far apart).

Here: the P3700 (no write unit), the 512e flash drive without and with its DRAM buffer (a 4 KiB unit
read first; merged when buffered). Quiet, it held 5 runs of 5 and 2 of 2 beside stress-ng; inside
make test's three lanes the path drifted up to 59 us and medians moved by 30-50 us (docs/probe.md)."""

from __future__ import annotations

import pytest

from sectorlab.devices import profiles
from sectorlab.probe import roundtrip

pytestmark = pytest.mark.timing

SAMPLES = 200
CASES = [  # (profile, physical sector, the write unit, a read first, a merge)
    ("intel-p3700", 512, 0, False, False),
    ("nvme-512e", 4096, 4096, True, False),
    ("nvme-512e-dram", 4096, 4096, True, True),
]


@pytest.mark.parametrize("name,physical,unit,reads_first,merges", CASES, ids=[c[0] for c in CASES])
def test_a_profile_fitted_from_a_probe_behaves_as_the_probed_model(name, physical, unit, reads_first, merges):
    first = roundtrip.probe_model(profiles.get(name).params_for(512, physical), SAMPLES)
    f = first.fit
    said = (f"{name}: unit {f.unit}, {f.reads_first.said()}, {f.merges.said()}; fitted {f.params}; the path drifted "
            f"up to {max(first.drift.values(), default=0):.1f} us; channels {first.channels.said()}")
    assert (f.unit, f.reads_first.found, f.merges.found) == (unit, reads_first, merges), said
    second = roundtrip.probe_model(f.params, SAMPLES, seed=2)
    held = roundtrip.one_medium(f)
    assert {"append-4096", "aligned-4096", "read-4096", "flush"} <= held, held
    problems, unsaid = roundtrip.differences(first, second, held)
    print(said, "; not held:", "; ".join(unsaid))
    assert not problems, f"{said}; {problems}"
    assert (second.fit.unit, second.fit.reads_first.found, second.fit.merges.found) == (unit, reads_first, merges)
