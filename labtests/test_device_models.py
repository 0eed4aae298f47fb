"""Model-served disks in a lab (`device = "PROFILE"`, labs/behaviours.toml): the guest's redo writes
go through QEMU's NBD client to the device model on this host, whose trace is read here, beside
the guest's own view (redo-writer's log file parallel write). Each disk's writes get the times its
profile specifies (p50 within 5 % or 20 us of the same profile in virtual time, p99 within 10 %)
and are served as modelled (late by at most 20 us at the median); every log write of the guest is
one write request of the trace, and the guest never sees a write faster than the device served it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from labtests.requires import require
from sectorlab.devices import profiles, trace

pytestmark = [pytest.mark.lab, pytest.mark.behaviours]

RUN_S = 3
OVERSHOOT_P50_US = 20  # served minus modelled at the median (labtests/test_devicemodel_host.py)


@pytest.fixture(scope="module")
def modelled(lab_state):
    return require([d for d in lab_state.disks.values() if d.device],  # the floor's too: every local disk
                   "the lab's disks are served by no device model (a lab on a remote libvirt host)")


def _within(got: float, want: float, rel: float, abs_us: float) -> bool:
    return abs(got - want) <= max(rel * want, abs_us)


def test_each_model_serves_the_guests_redo_writes_as_its_profile_specifies(modelled, lab_guests, guest_devices,
                                                                          record_property):
    for d in modelled:
        guest, dev = lab_guests[d.vm], guest_devices[d.vm].get(d.serial)
        assert dev is not None, f"{d.vm}: model-served disk {d.name} (serial {d.serial}) is not in the guest"
        trace_file = Path(d.volume).with_name("disk.trace")
        before = len(trace.read(trace_file))
        result = guest.run("sudo -n redo-writer run --target", dev.path, "--duration", RUN_S, "--sessions", 1,
                           "--blocksize", 4096, "--redo-per-txn", 4096, "--log-size", 64 << 20, "--output", "json",
                           "--force", timeout=RUN_S + 120)
        assert result.rc == 0, f"redo-writer on {d.name}: exit {result.rc}: {result.stderr.strip()}"
        report = json.loads(result.stdout)
        rows = trace.read(trace_file)[before:]
        writes = [r for r in rows if r.op == "write"]
        guest_writes = report["writes"]
        # Each log write of the guest is one write request of the trace (its O_DSYNC adds a flush
        # after it); the guest reads nothing back.
        assert abs(len(writes) - guest_writes) <= 2, (d.name, len(writes), guest_writes)
        served = np.array([r.served_us for r in writes])
        modelled = np.array([r.service_us for r in writes])
        want = np.array(profiles.specified_writes(profiles.get(d.device).params, len(writes)))
        for q, rel in ((50, 0.05), (99, 0.10)):
            got, spec = np.percentile(modelled, q), np.percentile(want, q)
            assert _within(got, spec, rel, 20), f"{d.name} ({d.device}): p{q} {got:.1f} us, specified {spec:.1f} us"
        late = served - modelled
        late50, late99 = np.percentile(late, 50), np.percentile(late, 99)
        assert late50 <= OVERSHOOT_P50_US, f"{d.name}: served minus modelled p50 {late50:.1f} us, p99 {late99:.1f} us"
        guest_p50 = report["log_file_parallel_write"]["p50_us"]
        said = (f"{d.name} ({d.device}): {len(writes)} writes, served p50 {np.percentile(served, 50):.0f} us "
                f"p99 {np.percentile(served, 99):.0f} us (specified {np.percentile(want, 50):.0f} / "
                f"{np.percentile(want, 99):.0f} us); the guest's log file parallel write p50 {guest_p50:.0f} us")
        record_property(d.name, said)
        print(said)
        assert guest_p50 >= np.percentile(served, 50), (d.name, guest_p50)
