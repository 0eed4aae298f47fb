"""Model-served disks in a lab (`device = "PROFILE"`, labs/behaviours.toml): the guest's redo writes
go through QEMU's NBD client to the device model on this host, whose trace is read here, beside
the guest's own view (redo-writer's log file parallel write). Each disk's writes get the times its
profile specifies: the profile's p50 and p99 (its model in virtual time, SPECIFIED_N writes) lie
within the 99.9 % confidence interval of the trace's p50 and p99 (distribution-free, scipy's
quantile_test: a run of a few hundred writes estimates a spinning disk's median to a few per cent),
widened by 5 % or 20 us at p50, 10 % at p99; and no reply comes before the model's time (how late
the replies are is the host's: said here, held on a quiet host by make bench-timing,
labtests/bench/test_model_timing.py); every log write of the guest is one write request of the
trace, nothing reads the disk meanwhile (udev's re-probe is off: unwatched_paths), and the guest
never sees a write faster than the device served it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from labtests.support.lab import unwatched_paths
from labtests.support.requires import require
from sectorlab.devices import profiles, trace

pytestmark = [pytest.mark.lab, pytest.mark.behaviours]

# Each disk's run: 2,000 writes or 3 s, whichever comes first. A fast disk reaches the count in well
# under a second (its guest at 100 % of a core: 3 s gave 7,000-11,500 writes); 2,000 writes are more
# than the 99.9 % interval of a p99 needs to be finite on both sides (about 700). A spinning disk
# gets its 3 s (hdd-7200: about 225 writes).
RUN_S = 3
RUN_WRITES = 2_000
SPECIFIED_N = 20_000
CONFIDENCE = 0.999


@pytest.fixture(scope="module")
def modelled(lab_state):
    return require([d for d in lab_state.disks.values() if d.device],  # the floor's too: every local disk
                   "the lab's disks are served by no device model (a lab on a remote libvirt host)")


def _consistent(sample: np.ndarray, q: int, spec: float, rel: float, abs_us: float) -> tuple[bool, str]:
    """Whether the specified q-th percentile lies in the sample's confidence interval for it,
    widened by the tolerance; and the sample's percentile with that interval, said."""
    from scipy import stats  # here, not at the module's top: every pytest run over labtests collects this module
    ci = stats.quantile_test(sample, q=spec, p=q / 100).confidence_interval(CONFIDENCE)
    slack = max(rel * spec, abs_us)
    low = ci.low if np.isfinite(ci.low) else -np.inf
    high = ci.high if np.isfinite(ci.high) else np.inf
    said = (f"p{q} {np.percentile(sample, q):.1f} us ({CONFIDENCE:.1%} CI {low:.1f}-{high:.1f}, n={len(sample)}), "
            f"specified {spec:.1f} us +- {slack:.1f}")
    return low - slack <= spec <= high + slack, said


def test_each_model_serves_the_guests_redo_writes_as_its_profile_specifies(modelled, lab_guests, guest_devices,
                                                                          record_property):
    paths = unwatched_paths(modelled, lab_guests, guest_devices)
    for d in modelled:
        guest = lab_guests[d.vm]
        trace_file = Path(d.volume).with_name("disk.trace")
        before = trace.end(trace_file)
        result = guest.run("sudo -n redo-writer run --target", paths[d.name], "--duration", RUN_S,
                           "--transactions", RUN_WRITES, "--sessions", 1,
                           "--blocksize", 4096, "--redo-per-txn", 4096, "--log-size", 64 << 20, "--output", "json",
                           "--force", timeout=RUN_S + 120)
        assert result.rc == 0, f"redo-writer on {d.name}: exit {result.rc}: {result.stderr.strip()}"
        report = json.loads(result.stdout)
        rows = trace.read(trace_file, since=before)
        writes = [r for r in rows if r.op == "write"]
        guest_writes = report["writes"]
        # Each log write of the guest is one write request of the trace (on a disk with a volatile
        # cache its O_DSYNC adds a flush after it); the guest reads nothing back.
        assert abs(len(writes) - guest_writes) <= 2, (d.name, len(writes), guest_writes)
        assert not [r for r in rows if r.op == "read"], f"{d.name}: the model served reads during a write-only run"
        served = np.array([r.served_us for r in writes])
        modelled = np.array([r.service_us for r in writes])
        want = np.array(profiles.specified_writes(profiles.get(d.device).params, SPECIFIED_N))
        for q, rel in ((50, 0.05), (99, 0.10)):
            ok, how = _consistent(modelled, q, np.percentile(want, q), rel, 20)
            assert ok, f"{d.name} ({d.device}): {how}"
        late = served - np.array([r.answer_service_us for r in writes])  # a cell's flash log may answer first
        late50, late99 = np.percentile(late, 50), np.percentile(late, 99)
        guest_p50 = report["log_file_parallel_write"]["p50_us"]
        said = (f"{d.name} ({d.device}): {len(writes)} writes, served p50 {np.percentile(served, 50):.0f} us "
                f"p99 {np.percentile(served, 99):.0f} us (specified {np.percentile(want, 50):.0f} / "
                f"{np.percentile(want, 99):.0f} us), served minus modelled p50 {late50:.1f} us, p99 {late99:.1f} us; "
                f"the guest's log file parallel write p50 {guest_p50:.0f} us")
        assert late.min() >= -1, f"a reply before the model's time: {said}"
        record_property(d.name, said)
        print(said)
        assert guest_p50 >= np.percentile(served, 50), (d.name, guest_p50)
