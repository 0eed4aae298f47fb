"""`sectorlab bench zfs-appliance`: an appliance preset's runs (bench/appliance.py has the design).

The preset's lab comes up (its own, never the default lab); the guest starts its NFS server. Then
each run, in complete rounds, each round in a random order (the order's seed is recorded): a pool
on the preset's disks (its log devices striped, mirrored or left out as the share asks), a dataset
with the share's properties, the workload's file made in it; the pool exported and imported (the
ARC holds none of the file), the dataset exported over NFS to 127.0.0.1 and mounted by the same
guest with the preset's options; the workload's writes (O_DIRECT|O_DSYNC, as dNFS writes the
database's files), then `zpool sync`. Counted below the guest by the device models' traces (per
disk: writes, bytes, reads, read-modify-write reads) and by the NFS client (mountstats: WRITE and
COMMIT operations, the bytes the WRITEs carried). Everything is taken down after each run, also
when it failed: the share unmounted and unexported, the pool destroyed. results/<time>-<preset>/
gets appliance.json (after every run), lab.json and each run's traces; then the report.
"""

from __future__ import annotations

import json
import re
import secrets
import shlex
import time
from datetime import datetime, timezone
from pathlib import Path

from ... import images, inputs
from ... import lab as lab_mod
from ...analysis import devicerows
from ...errors import SectorlabError, UsageError
from ...guest import GuestCommandError
from ...lab.record import LabRecord
from ...lab.state import Progress
from ...paths import new_results_dir, write_atomic
from ...report import appliance as appliancereport
from ..presets import RESULTS_DIR, clock_text
from .preset import AppliancePreset, Share

POOL, ROOT, MOUNT = "sl-appl", "/sl-appl", "/mnt/sl-appl"
EXPORT_OPTIONS = "rw,sync,no_subtree_check,insecure,no_root_squash"

# The workload's file: blocks of random bytes and a repeated row, the row COMPRESSIBLE % of each
# block (50: a half-filled database block, compression has something to find and something it
# cannot squeeze; 0: nothing to find, as encrypted or compressed data; 100: all of it).
MAKE_FILE = """import os, random, sys
path, size, mib, pct = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng, rows = random.Random(4), size * pct // 100
with open(path, "wb") as f:
    for i in range((mib << 20) // size):
        row = b"sectorlab row %08d " % i
        f.write(rng.randbytes(size - rows) + (row * (rows // len(row) + 1))[:rows])
    f.flush(); os.fsync(f.fileno())
"""
# The workload's writes on the mounted share, timed one by one; the latencies in microseconds.
WRITER = """import json, mmap, os, random, sys, time
path, size, count, pattern, pct = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
fd = os.open(path, os.O_WRONLY | os.O_DIRECT | os.O_DSYNC)
# the offsets' generator apart from the block's, so that every compressibility writes the same places
blocks, rng, data = os.fstat(fd).st_size // size, random.Random(size), random.Random(-size)
buf = mmap.mmap(-1, size)
buf[:] = data.randbytes(size - size * pct // 100) + bytes([0x5a]) * (size * pct // 100)
lat = []
for i in range(count):
    offset = (rng.randrange(blocks) if pattern == "random" else i) * size
    t = time.perf_counter_ns()
    if os.pwrite(fd, buf, offset) != size:
        sys.exit(f"short write at {offset}")
    lat.append((time.perf_counter_ns() - t) / 1000)
os.close(fd)
print(json.dumps(lat))
"""


def mountstats(text: str, mountpoint: str) -> dict:
    """One mount's entry of /proc/self/mountstats: its options ('opts'), the data bytes the server
    was sent in WRITEs ('written'), and per NFS operation (ops, bytes sent, bytes received)."""
    blocks = re.split(r"^device ", text, flags=re.M)
    on = re.compile(rf"\S+ mounted on {re.escape(mountpoint)} with fstype nfs4? ")
    block = next((b for b in blocks if on.match(b)), None)
    if block is None:
        raise SectorlabError(f"no NFS mount on {mountpoint} in /proc/self/mountstats")
    opts = dict(o.split("=", 1) if "=" in o else (o, "") for o in
                re.search(r"^\s*opts:\s*(\S+)", block, re.M).group(1).split(","))
    ops = {m.group(1): (int(m.group(2)), int(m.group(4)), int(m.group(5)))
           for m in re.finditer(r"^\s*([A-Z_]+): (\d+) (\d+) \d+ (\d+) (\d+)", block, re.M)}
    # bytes: normalread normalwrite directread directwrite serverread serverwrite readpages writepages
    written = int(re.search(r"^\s*bytes:\s*(?:\d+\s+){5}(\d+)", block, re.M).group(1))
    return {"opts": opts, "ops": ops, "written": written}


def nfs_delta(before: dict, after: dict) -> dict:
    ops = {op: after["ops"].get(op, (0,))[0] - before["ops"].get(op, (0,))[0] for op in ("WRITE", "COMMIT", "READ")}
    return {"write_ops": ops["WRITE"], "commit_ops": ops["COMMIT"], "read_ops": ops["READ"],
            "write_bytes": after["written"] - before["written"]}


class Appliance:
    """The preset's guest: its NFS server, and for each run a pool, a share and its mount."""

    def __init__(self, preset: AppliancePreset, data: LabRecord, progress: Progress):
        self.preset, self.progress = preset, progress
        vm = preset.lab.vms[0].name
        self.guest = lab_mod.guests_from_lab_json(data)[vm]
        self.records = {d.name: d for d in data.disks_of(vm)}
        seen = lab_mod.probe(self.guest, list(self.records.values()))["disks"]
        missing = [n for n, d in self.records.items() if d.serial not in seen]
        if missing:
            raise SectorlabError(f"{vm}: declared disk(s) {', '.join(missing)} not in the guest")
        self.paths = {n: seen[d.serial].path for n, d in self.records.items()}
        self.lab = data.lab

    def sh(self, command: str, *args, timeout: float = 300) -> str:
        return self.guest.check_output(command, *args, timeout=timeout)

    def start(self) -> str:
        self.sh("sudo -n modprobe zfs", timeout=120)
        self.sh("sudo -n systemctl start rpcbind.socket nfs-server.service", timeout=120)
        self.teardown()  # what an interrupted bench before this one left
        return self.sh("cat /sys/module/zfs/version").strip()

    def teardown(self, quiet: bool = False) -> None:
        """Nothing of a run left: a backgrounded mount attempt (`bg`), the mount, the export, the pool
        (each by its exact name or path). `quiet`: a failure to is said, not raised (an error that
        is already on its way is the one to say)."""
        try:
            self._teardown()
        except SectorlabError as e:
            if not quiet:
                raise
            self.progress(f"warning: {e}")

    def _teardown(self) -> None:
        # The preset's own shares, by their exact paths: a mount.nfs still retrying one (`bg`), the
        # mount on MOUNT, each export to 127.0.0.1, then the pool POOL.
        paths = [f"{ROOT}/{s.dataset}" for s in self.preset.shares]
        mounts = "|".join(re.sub(r"([.^$*+?()\[\]{}|\\])", r"\\\1", f"127.0.0.1:{p} {MOUNT}") for p in paths)
        self.guest.run(f"sudo -n pkill -x -f {shlex.quote(f'(/usr)?/sbin/mount[.]nfs ({mounts})( .*)?')}; true",
                       timeout=60)
        self.guest.run(f"mountpoint -q {MOUNT} && sudo -n umount {MOUNT}; true", timeout=120)
        exported = f"sudo -n exportfs | awk -v ps={shlex.quote(' '.join(paths))} " \
                   "'BEGIN {n = split(ps, p); for (i = 1; i <= n; i++) own[p[i]]} $1 in own {print $1}'"
        self.guest.run(f"for p in $({exported}); do sudo -n exportfs -u 127.0.0.1:$p; done", timeout=60)
        self.guest.run(f"sudo -n zpool list -H -o name {POOL} >/dev/null 2>&1 && sudo -n zpool destroy -f {POOL}; true",
                       timeout=120)
        left = self.guest.run(f"mountpoint -q {MOUNT} && echo mounted; {exported}; "
                              f"sudo -n zpool list -H -o name {POOL} 2>/dev/null").stdout.strip()
        if left:
            raise SectorlabError(f"could not take down the run's share: {left} (guest {self.guest.name})")

    def _refused(self, share: Share, what: str, e: GuestCommandError) -> UsageError:
        self.teardown(quiet=True)
        why = (e.result.stderr.strip() or e.result.stdout.strip()).splitlines()
        last = why[-1] if why else f"exit {e.result.rc}"
        return UsageError(f"{self.preset.path}: share {share.name!r}: {what}: {last}; fix the preset (nothing is "
                          f"left mounted or imported)")

    def prepare(self, share: Share) -> dict:
        """The share's pool, dataset and file, the ARC emptied, exported and mounted: the mount's options."""
        pool = self.preset.pool
        ashift = ["-o", f"ashift={pool.ashift}"] if pool.ashift else []
        self.sh("sudo -n zpool create -f -o cachefile=none", *ashift, "-O", f"mountpoint={ROOT}", POOL,
                *pool.vdevs(self.paths, share.log_layout))
        ds, props = f"{POOL}/{share.dataset}", [w for k, v in share.properties.items() for w in ("-o", f"{k}={v}")]
        try:
            self.sh("sudo -n zfs create", *props, ds)
        except GuestCommandError as e:
            raise self._refused(share, f"zfs refused its properties {share.properties}", e) from e
        wl, path = share.workload, f"{ROOT}/{share.dataset}/file"
        try:
            self.sh("sudo -n python3 -c", MAKE_FILE, path, wl.size, wl.file_mib, wl.compressible, timeout=600)
        except GuestCommandError as e:
            raise self._refused(share, f"its {wl.file_mib} MiB file could not be written on the dataset", e) from e
        self.sh(f"sudo -n chmod 666 {path} && sudo -n zpool export {POOL} && "
                f"sudo -n zpool import -o cachefile=none -d /dev {POOL}", timeout=300)
        self.sh("sudo -n exportfs -o", EXPORT_OPTIONS, f"127.0.0.1:{ROOT}/{share.dataset}")
        self.sh("sudo -n mkdir -p", MOUNT)
        try:
            self.sh("sudo -n mount -t nfs", *(["-o", self.preset.mount] if self.preset.mount else []),
                    f"127.0.0.1:{ROOT}/{share.dataset}", MOUNT, timeout=120)
        except GuestCommandError as e:
            raise self._refused(share, f"the NFS client refused mount options {self.preset.mount!r}", e) from e
        return mountstats(self.sh("cat /proc/self/mountstats"), MOUNT)["opts"]

    def measure(self, share: Share, run_id: str, runs_dir: Path, results: Path) -> dict:
        """The workload's writes on the mounted share and a txg sync: what each level saw."""
        disks = [self.records[n] for n in self.preset.pool.disks(share.log_layout)]
        window = devicerows.Window(self.lab, disks)
        before = mountstats(self.sh("cat /proc/self/mountstats"), MOUNT)
        wl = share.workload
        try:
            lat = json.loads(self.sh("python3 -c", WRITER, f"{MOUNT}/file", wl.size, wl.count, wl.pattern,
                                     wl.compressible,
                                     timeout=1800))
        except GuestCommandError as e:
            raise self._refused(share, "the workload's writes on the NFS mount failed", e) from e
        after = mountstats(self.sh("cat /proc/self/mountstats"), MOUNT)
        self.sh(f"sudo -n zpool sync {POOL}", timeout=300)
        window.check_alive(run_id)
        rows = window.rows(runs_dir, run_id, results)
        return {"latency_us": lat, "nfs": nfs_delta(before, after),
                "devices": {name: {op: {k: rows[name][op].get(k, 0) for k in
                                        ("count", "bytes_per_request", "rmw_reads", "unit_reads")}
                                   for op in ("write", "read")} for name in rows}}


def _share_json(share: Share) -> dict:
    wl = share.workload
    return {"name": share.name, "seed_row": share.seed_row, "properties": share.properties, "note": share.note,
            "log_layout": share.log_layout, "dataset": share.dataset,
            "workload": {"name": wl.name, "description": wl.description, "size": wl.size, "count": wl.count,
                         "file_mib": wl.file_mib, "pattern": wl.pattern, "compressible": wl.compressible}}


def _design(preset: AppliancePreset, order_seed: int, order: list) -> dict:
    p = preset.pool
    return {"preset": preset.name, "kind": "appliance", "seed": preset.seed, "title": preset.title,
            "lab": preset.lab.name, "lab_file": str(preset.path), "mount": preset.mount,
            "pool": {"data": list(p.data), "data_layout": p.data_layout, "log": list(p.log),
                     "log_layout": p.log_layout, "ashift": p.ashift,
                     "profiles": {d.name: vm.profile(d) or "volume" for vm, d in preset.lab.disks()}},
            "shares": [_share_json(s) for s in preset.shares],
            "design": {"seed": order_seed, "repeats": preset.repeats, "interleaved": "complete rounds",
                       "order": [f"{s.name}#{r}" for s, r in order]},
            "started": datetime.now(timezone.utc).isoformat(timespec="seconds"), "runs": []}


def _run_all(preset: AppliancePreset, data: LabRecord, results: Path, progress: Progress, order_seed: int) -> dict:
    order = preset.order(order_seed)
    out = _design(preset, order_seed, order)
    appliance = Appliance(preset, data, progress)
    out["zfs_version"] = appliance.start()
    record = images.find_cached(images.load_guest(preset.lab.vms[0].guest))
    out["image"] = Path(record.image).stem if record else None
    runs_dir = results / "runs"
    runs_dir.mkdir(exist_ok=True)
    save = lambda: write_atomic(results / "appliance.json", json.dumps(out, indent=1) + "\n")  # noqa: E731
    t0 = time.monotonic()
    for i, (share, repeat) in enumerate(order, 1):
        left = (time.monotonic() - t0) / (i - 1) * (len(order) - i + 1) if i > 1 else preset.estimate_s()
        progress(f"run {i}/{len(order)}: {share.name} (round {repeat}), about {clock_text(left)} left")
        run_id = f"{share.dataset}-{repeat}"
        try:
            opts = appliance.prepare(share)
            measured = appliance.measure(share, run_id, runs_dir, results)
        except BaseException:
            appliance.teardown(quiet=True)
            raise
        appliance.teardown()
        out["runs"].append({"share": share.name, "repeat": repeat, "slot": i, "run_id": run_id,
                            "granted": {k: opts.get(k) for k in ("vers", "rsize", "wsize", "proto", "nconnect")},
                            **measured})
        save()
    out["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    save()
    return out


def run(preset: AppliancePreset, progress: Progress, results_root: Path = RESULTS_DIR) -> Path:
    """Lab-up, every run, lab-down (whatever happened), the report: the results directory."""
    results = new_results_dir(results_root, preset.name)
    order_seed = preset.order_seed if preset.order_seed is not None else secrets.randbelow(2**31)
    progress(f"bench {preset.name} (seed {preset.seed or '-'}): {len(preset.plan())} runs of {len(preset.shares)} "
             f"shares, about {clock_text(preset.estimate_s())} after lab-up (order seed {order_seed}); results in "
             f"{results}")
    t0 = time.monotonic()
    try:
        data = lab_mod.up(preset.lab, progress)
        write_atomic(results / "lab.json", data.text() + "\n")
        _run_all(preset, data, results, progress, order_seed)
    except KeyboardInterrupt:
        progress("interrupted: bringing the lab down; the runs done so far are in " + str(results))
        raise
    finally:
        lab_mod.down(preset.lab, progress)
        record = results / "appliance.json"
        if record.exists():
            doc = inputs.read_json(record, "appliance results", inputs.BENCH_JSON_MAX)
            doc["wall_s"] = round(time.monotonic() - t0, 1)  # lab-up and lab-down included
            write_atomic(record, json.dumps(doc, indent=1) + "\n")
        elif not any(results.iterdir()):
            results.rmdir()
    written = appliancereport.write(results)
    progress(f"bench {preset.name} done in {clock_text(time.monotonic() - t0)}; report: {written['html']} "
             f"(commands: {shlex.quote('sectorlab report ' + str(results))} writes it again)")
    return results
