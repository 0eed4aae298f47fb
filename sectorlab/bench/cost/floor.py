"""`sectorlab bench-floor`: what the lab itself costs a redo write, per bus, in the running lab.

redo-writer (one session, one 4 KiB O_DIRECT+O_DSYNC write per commit) on one model-served disk
of each bus in turn, the order reversed every other round so that drift falls on every disk alike;
per run the guest's log file parallel write p50 and p99, the write cache the guest reads, and from
the host's trace of the same writes the flushes and the time the model served each write (the
device path's share). What is left of the guest's p50 over the model's is the lab's own floor:
the emulated CPU, the guest's kernel and QEMU's NBD client (docs/performance.md).
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from ...devices import trace
from ...errors import UsageError
from ...guest import disks as guestdisks
from ...lab import diskcheck, modelled, record
from ...lab.state import Progress


def default_disks(data: record.LabRecord) -> list[record.DiskRecord]:
    """One model-served disk per bus (the first by name), of the lab's first VM."""
    vm = next(iter(data.vms))
    chosen: dict[str, record.DiskRecord] = {}
    for d in sorted(data.disks_of(vm), key=lambda d: d.name):
        if d.device:
            chosen.setdefault(d.bus, d)
    return list(chosen.values())


def _pick(data: record.LabRecord, names: list[str]) -> list[record.DiskRecord]:
    if not names:
        disks = default_disks(data)
        if not disks:
            raise UsageError(f"lab {data.lab}: no disk served by a device model (a lab on a remote libvirt host?); "
                             f"bench-floor reads the model's trace on this host")
        return disks
    by_name = {d.name: d for d in data.disks.values()}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise UsageError(f"--disk {unknown[0]}: not a disk of lab {data.lab}; expected one of "
                         f"{', '.join(sorted(by_name))}")
    vms = {by_name[n].vm for n in names}
    if len(vms) > 1 or not all(by_name[n].device for n in names):
        raise UsageError(f"--disk: {', '.join(names)}: expected model-served disks of one VM")
    return [by_name[n] for n in names]


def bench_floor(data: record.LabRecord, names: list[str], rounds: int, seconds: int, progress: Progress) -> dict:
    disks = _pick(data, names)
    guest = diskcheck.guests_from_lab_json(data)[disks[0].vm]
    try:
        seen = diskcheck.probe(guest, disks)["disks"]
        paths = {d.name: seen[d.serial].path for d in disks}
        guestdisks.unwatch(guest, list(paths.values()))
        runs = []
        for rnd in range(rounds):
            for d in disks if rnd % 2 == 0 else list(reversed(disks)):
                runs.append({"round": rnd, **measure(guest, data.lab, d, paths[d.name], seconds)})
                r = runs[-1]
                progress(f"round {rnd + 1}/{rounds}: {d.name} ({d.bus}, {d.device}, guest reads {r['write_cache']}): "
                         f"p50 {r['p50_us']:.0f} us, p99 {r['p99_us']:.0f} us, model served p50 "
                         f"{r['model_p50_us']:.1f} us, {r['flushes']} flushes for {r['writes']} writes")
    finally:
        guest.close()
    return {"lab": data.lab, "rounds": rounds, "seconds": seconds, "runs": runs,
            "disks": {d.name: _summary([r for r in runs if r["disk"] == d.name]) for d in disks}}


def measure(guest, lab_name: str, d: record.DiskRecord, path: str, seconds: int, at_most: int | None = None) -> dict:
    """One redo-writer run (1 session, 4 KiB redo per commit; `seconds`, or `at_most` commits if they
    come first) on a model-served disk, and what the model's trace holds of it: the guest's p50/p99,
    the write cache the guest reads, the model's writes, flushes and FUA writes and its served p50
    (the device path's share)."""
    cache = guest.check_output("cat", f"/sys/block/{Path(path).name}/queue/write_cache").strip()
    trace_file = modelled.server(lab_name, d.name).trace
    before = trace.end(trace_file)
    count = ("--transactions", at_most) if at_most else ()
    result = guest.check_output("sudo -n redo-writer run --target", path, "--duration", seconds, *count,
                                "--sessions", 1, "--blocksize", 4096, "--redo-per-txn", 4096, "--log-size", 64 << 20,
                                "--output", "json", "--force", timeout=seconds + 120)
    guest_write = json.loads(result)["log_file_parallel_write"]
    writes_done = json.loads(result)["writes"]
    rows = trace.read(trace_file, since=before)
    served = [r for r in rows if r.op == "write"]
    writes = [r.served_us for r in served]
    return {"disk": d.name, "bus": d.bus, "device": d.device, "write_cache": cache,
            "p50_us": guest_write["p50_us"], "p99_us": guest_write["p99_us"], "writes": writes_done,
            "model_writes": len(writes), "fua_writes": sum(r.fua for r in served),
            "flushes": sum(1 for r in rows if r.op == "flush"),
            "model_p50_us": statistics.median(writes) if writes else float("nan")}


def _summary(runs: list[dict]) -> dict:
    def spread(key):
        values = [r[key] for r in runs]
        return {"median": statistics.median(values), "min": min(values), "max": max(values)}
    return {"bus": runs[0]["bus"], "device": runs[0]["device"], "write_cache": runs[0]["write_cache"],
            "p50_us": spread("p50_us"), "p99_us": spread("p99_us"), "model_p50_us": spread("model_p50_us"),
            "flushes_per_write": sum(r["flushes"] for r in runs) / max(sum(r["model_writes"] for r in runs), 1)}
