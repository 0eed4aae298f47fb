"""The report of an appliance bench (appliance.json, bench/appliance/run.py): report.md and
report.html beside it. One table of the seed's shares as the seed set them, one of the lab's
counterfactuals, each with what every level counted per write of the workload (medians over the
runs, with their range): the pool's data disks and its log devices (writes, bytes, reads, reads of
partly written sectors: the device models' traces), the NFS client's WRITEs and COMMITs and the
latency of a write as the guest timed it (under TCG: its level, not the hardware's)."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

from .. import fields, inputs
from ..analysis import stats
from ..errors import UsageError
from ..paths import write_atomic
from . import render
from .render import one_line

PROPS = ("logbias", "recordsize", "primarycache", "compression")


def paths_text(profiles: dict[str, str] | None) -> str:
    """Which path each figure comes from, for the report's first screen (the redo bench's Findings),
    and how much of the latency is the floor, from the profiles that served the pool's disks."""
    out = ("Which path each figure comes from: the counts below NFS are the device models' own traces (what the "
           "disks got, on this host, below the guest); the NFS counts are the guest's client's; the latency is the "
           "guest path's, timed in the guest under TCG. There is no device path: the pool, its intent log and the "
           "NFS server live in the guest, and redo-writer straight to a model would bypass all three.")
    if not profiles:
        return out + " Which profiles served the disks was not recorded."
    if set(profiles.values()) == {"floor"}:
        return out + (f" Every disk of this pool ({', '.join(profiles)}) is served by the floor model (no device "
                      "time), so the floor is 100 % of every latency in this report: it compares the shares' counts, "
                      "never their times.")
    served = ", ".join(f"{d}: {p}" for d, p in profiles.items())
    return out + f" The disks' profiles ({served}): no floor run measures the lab's share of the latency here."

CANNOT = ("InfiniBand and IPoIB, RDMA, Oracle's dNFS, the appliance's two heads and their failover, and every "
          "throughput in MB/s or GB/s (the seed's table of them stays the seed's): the lab runs one guest on one "
          "vCPU under TCG, its NFS traffic crosses the guest's own loopback, and a MB/s figure here would measure "
          "the CPU. The latencies below are the lab's level, not the hardware's.")


def per_write(run: dict, share: dict, pool: dict) -> dict:
    """One run's counts per write of its workload."""
    n = share["workload"]["count"]
    devs = run["devices"]
    log_disks = pool["log"] if (share["log_layout"] or pool["log_layout"]) != "none" else []
    data = [devs[d] for d in pool["data"] if d in devs]
    logs = [devs[d] for d in log_disks if d in devs]

    def total(rows, op, key):
        return sum(r[op]["count"] * (r[op]["bytes_per_request"] or 0) if key == "bytes" else r[op][key] for r in rows)
    lat = sorted(run["latency_us"])
    return {"data_writes": total(data, "write", "count") / n, "data_kib": total(data, "write", "bytes") / n / 1024,
            "data_read_kib": total(data, "read", "bytes") / n / 1024,
            "rmw_reads": total(data, "write", "rmw_reads") / n,
            "log_writes": total(logs, "write", "count") / n, "log_kib": total(logs, "write", "bytes") / n / 1024,
            "log_each": [r["write"]["count"] for r in logs],
            "nfs_writes": run["nfs"]["write_ops"] / n, "nfs_commits": run["nfs"]["commit_ops"],
            "nfs_bytes": run["nfs"]["write_bytes"] / max(run["nfs"]["write_ops"], 1),
            "p50_ms": statistics.median(lat) / 1000, "p99_ms": lat[math.ceil(0.99 * len(lat)) - 1] / 1000}


def _cell(values: list[float], fmt: str) -> str:
    med = statistics.median(values)
    if max(values) - min(values) <= 1e-9 * max(1.0, abs(med)):
        return format(med, fmt)
    return f"{format(med, fmt)} ({format(min(values), fmt)}-{format(max(values), fmt)})"


# Below NFS (the models' traces), then NFS and the guest: two tables, so that a page shows each whole.
BELOW = (("data disks: writes", "data_writes", ".2f"), ("KiB written", "data_kib", ".1f"),
         ("KiB read", "data_read_kib", ".1f"), ("sector reads (RMW)", "rmw_reads", ".2f"),
         ("log devices: writes", "log_writes", ".2f"), ("KiB written", "log_kib", ".1f"))
ABOVE = (("NFS WRITEs", "nfs_writes", ".2f"), ("bytes a WRITE", "nfs_bytes", ".0f"),
         ("COMMITs in the run", "nfs_commits", ".0f"), ("write p50 ms", "p50_ms", ".2f"), ("p99 ms", "p99_ms", ".2f"))


def _cells(runs: list[dict], columns) -> list[str]:
    return [_cell([r[key] for r in runs], fmt) for _, key, fmt in columns]


def rows(doc: dict, seed_rows: bool) -> tuple[list[list[str]], ...]:
    """Three tables of the seed's shares (or of the counterfactuals): their settings, the counts per
    write below NFS, and NFS's and the guest's."""
    settings = [["share", *PROPS, "log devices", "workload"]]
    below = [["share", "runs", *(c[0] for c in BELOW)]]
    above = [["share", *(c[0] for c in ABOVE)]]
    for share in doc["shares"]:
        if share["seed_row"] != seed_rows:
            continue
        runs = [per_write(r, share, doc["pool"]) for r in doc["runs"] if r["share"] == share["name"]]
        if not runs:
            continue
        wl = share["workload"]
        props = [share["properties"].get(p, "(default)") for p in PROPS]
        layout = share["log_layout"] or doc["pool"]["log_layout"]
        size = f"{wl['size'] // 1024} KiB" if wl["size"] % 1024 == 0 else f"{wl['size']} B"
        settings.append([share["name"], *props, layout, f"{wl['name']}: {wl['count']} x {size} {wl['pattern']}"])
        below.append([share["name"], str(len(runs)), *_cells(runs, BELOW)])
        above.append([share["name"], *_cells(runs, ABOVE)])
    return settings, below, above


def markdown(doc: dict) -> str:
    p = doc["pool"]
    granted = {", ".join(f"{k}={v}" for k, v in r["granted"].items() if v is not None) for r in doc["runs"]}
    times = doc["design"]["repeats"]
    lines = [f"# {one_line(doc['title'])}", "",
             f"Seed {doc['seed']}: `sectorlab bench {doc['preset']}` on lab {doc['lab']}, image {doc.get('image')}, "
             f"OpenZFS {doc.get('zfs_version')}; started {doc['started']}, {len(doc['runs'])} runs: each share "
             f"{times} time{'s' if times > 1 else ''}, in complete rounds, each round in a random order (order seed "
             f"{doc['design']['seed']}).", "",
             f"Pool: data {p['data_layout']} of {', '.join(p['data'])}; log devices {', '.join(p['log']) or 'none'} "
             f"({p['log_layout']}); ashift {p['ashift'] or 'as ZFS picks it from the disks'}. Every share is "
             f"mounted by the guest from 127.0.0.1 with `{doc['mount'] or '(the client defaults)'}`; granted: "
             f"{'; '.join(sorted(granted))}.", "",
             "Each run: the pool made, the share's dataset, its file written and the pool exported and imported "
             "(nothing of the file cached), the workload's writes over NFS with O_DIRECT|O_DSYNC, then a "
             "`zpool sync`. Per write of the workload: what the pool's disks got (device models' traces, below "
             "the guest), what the NFS client sent; medians over the runs, (min-max) where they differ.", "",
             paths_text(p.get("profiles")), "",
             "## The seed's shares, as the seed set them", ""]
    for seed_rows in (True, False):
        settings, below, above = rows(doc, seed_rows)
        lines += render.table(settings, numbers=False)
        lines += ["Below NFS, per write of the workload: the pool's data disks (both sides of the mirror) and its "
                  "log devices, from the device models' traces:", ""]
        lines += render.table(below)
        lines += ["Above: what the NFS client sent per write of the workload, and the write's latency as the "
                  "guest timed it (under TCG):", ""]
        lines += render.table(above)
        if seed_rows:
            lines += ["## The lab's counterfactuals", ""]
    notes = [f"- **{one_line(s['name'])}**: {one_line(s['note'])}" for s in doc["shares"] if s["note"]]
    workloads = {s["workload"]["name"]: s["workload"]["description"] for s in doc["shares"]}
    lines += ["## The shares and workloads", "", *notes, "",
              *(f"- workload **{one_line(n)}**: {one_line(d)}" for n, d in workloads.items() if d), "",
              "## What cannot be reproduced here", "", CANNOT, ""]
    return "\n".join(one_line(line) for line in lines)  # no text of appliance.json breaks a line


# What the report reads of appliance.json (stats.conform's shapes), as bench/appliance/run.py writes it.
_OP = {"count": stats.COUNT, "bytes_per_request": (stats.COUNT, None), "rmw_reads": stats.COUNT,
       "unit_reads?": stats.COUNT}
_RUN = {"share": str, "granted": stats.MapOf(stats.SCALAR), "devices": stats.MapOf({"write": _OP, "read": _OP}),
        "latency_us": [stats.COUNT], "nfs": {"write_ops": stats.COUNT, "commit_ops": stats.COUNT,
                                             "write_bytes": stats.COUNT}}
_SHARE = {"name": stats.Text(256), "seed_row": bool, "properties": stats.MapOf(stats.SCALAR), "note": (str, None),
          "log_layout": (str, None),
          "workload": {"name": stats.Text(256), "description": (str, None), "size": stats.Whole(1, 1 << 40),
                       "count": stats.Whole(1, 1 << 40), "pattern": str}}
APPLIANCE = {**{k: stats.SCALAR for k in ("title", "seed", "preset", "lab", "started")},
             "image?": stats.SCALAR, "zfs_version?": stats.SCALAR, "mount": (str, None),
             "pool": {"data": [str], "log": [str], "data_layout": str, "log_layout": str, "ashift": (int, None),
                      "profiles?": (None, stats.MapOf(stats.Text(64)))},
             "shares": [_SHARE], "design": {"repeats": stats.Whole(1, 1000), "seed": stats.SCALAR},
             "runs": [_RUN]}
_EXPECTED = "expected the appliance.json 'sectorlab bench' writes for an [appliance] preset"


def load(results: Path) -> dict:
    """appliance.json of a results directory: a regular file inside it (a link is followed only
    within the directory), within the bound of bench.json, of the shape the report reads."""
    path = inputs.inside(results, "appliance.json", "appliance bench record")
    doc = stats.load_json(path, "appliance bench record", inputs.BENCH_JSON_MAX, _EXPECTED)
    if not isinstance(doc, dict):
        raise UsageError(f"{path}: {stats.shown(doc)} is not a table; {_EXPECTED}")
    if not doc.get("runs"):
        raise UsageError(f"{path}: no run finished: nothing to report")
    stats.conform(doc, APPLIANCE, str(path), _EXPECTED)
    # a share heads its rows and its runs are found by its name: two of one name would mix their runs
    fields.no_duplicates(f"{path}: shares", "name", [s["name"] for s in doc["shares"]])
    for i, run in enumerate(doc["runs"]):
        if not run["latency_us"]:
            raise UsageError(f"{path}: runs[{i}].latency_us: no write timed; {_EXPECTED}")
    return doc


def summary(doc: dict) -> dict:
    """What the report's tables say, for machines: the record without its runs' latencies and
    device rows; per share its settings, and each figure per write of its workload (per_write) in
    every run, with the median, min and max the tables print."""
    shares, keys = [], [k for _, k, _ in (*BELOW, *ABOVE)]
    for share in doc["shares"]:
        runs = [per_write(r, share, doc["pool"]) for r in doc["runs"] if r["share"] == share["name"]]
        shares.append({**share, "runs": len(runs),
                       "figures": {k: {"each": [r[k] for r in runs], "median": statistics.median(r[k] for r in runs),
                                       "min": min(r[k] for r in runs), "max": max(r[k] for r in runs)}
                                   for k in keys} if runs else {},
                       "log_each": [r["log_each"] for r in runs],
                       "granted": _distinct([{k: v for k, v in r["granted"].items() if v is not None}
                                             for r in doc["runs"] if r["share"] == share["name"]])})
    return {**{k: v for k, v in doc.items() if k not in ("runs", "shares")}, "runs": len(doc["runs"]),
            "shares": shares}


def _distinct(grants: list[dict]) -> list[dict]:
    """The NFS options granted over a share's runs, each set once, in the order first seen."""
    out: list[dict] = []
    for g in grants:
        if g not in out:
            out.append(g)
    return out


def write(results: Path) -> dict[str, Path]:
    """report.md, report.html and summary.json of appliance.json."""
    doc = load(results)
    text = markdown(doc)
    write_atomic(results / "summary.json", json.dumps(summary(doc), indent=2))
    return {**render.write(results, text), "summary": results / "summary.json"}
