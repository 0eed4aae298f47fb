"""A storage-appliance preset (seed 004: labs/bench/zfs-appliance.toml, `make bench
PRESET=zfs-appliance`): a lab definition whose one VM runs OpenZFS and the kernel NFS server
(guest debian12-zfs), and an [appliance] table: the pool (its data disks and their layout, the
log devices and theirs, an ashift), the NFS mount options, the workloads (writes of a size and
pattern, as the database writes its files) and the shares (a ZFS dataset's properties and the
workload written to it over NFS; the seed's own rows and the lab's counterfactuals).

Everything here is checked before any lab starts, one line each: an unknown ZFS property, a pool
layout the VM's disks cannot make, an ashift a disk cannot take. What only the guest can judge (a
property's value, an NFS option the client refuses) is judged there, by appliancerun, and taken
down before the one line. run.py makes the runs; report/appliance.py writes the report; kinds.py
knows the three as the appliance kind of bench, beside the redo bench.
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass, field
from pathlib import Path

from ... import fields, labdef
from ...errors import UsageError

ZFS_GUEST = "debian12-zfs"

# OpenZFS 2.1's dataset properties a `zfs create -o` may set (zfsprops(7)), with their short
# names; a user property (module:name) is passed on as it is.
ZFS_PROPERTIES = frozenset("""
aclinherit aclmode acltype atime canmount casesensitivity checksum compression compress context
copies dedup defcontext devices dnodesize dnsize encryption exec filesystem_limit fscontext keyformat
keylocation logbias mlslabel mountpoint nbmand normalization overlay pbkdf2iters primarycache quota
rdonly readonly recordsize recsize redundant_metadata refquota refreservation refreserv relatime
reservation reserv rootcontext secondarycache setuid sharenfs sharesmb snapdev snapdir
snapshot_limit special_small_blocks sync utf8only version volblocksize volmode volsize vscan xattr zoned
""".split())
# Set by the bench itself: a share may not move or unmount what the runs write to.
ZFS_OWN = frozenset({"mountpoint", "canmount", "sharenfs", "sharesmb", "readonly", "rdonly"})
DATA_LAYOUTS = ("stripe", "mirror")
LOG_LAYOUTS = ("none", "striped", "mirror")
PATTERNS = ("random", "append")
MOUNT_OPTION = re.compile(r"[a-z][a-z0-9_]*(=[A-Za-z0-9_.:/-]+)?")

TOP_KEYS = {"seed", "title", "repeats", "order_seed", "mount", "pool", "workload", "share"}
POOL_KEYS = {"data", "data_layout", "log", "log_layout", "ashift"}
WORKLOAD_KEYS = {"name", "description", "size", "count", "file_mib", "pattern", "compressible"}
SHARE_KEYS = {"name", "seed_row", "workload", "properties", "log_layout", "note"}


@dataclass(frozen=True)
class Pool:
    data: tuple[str, ...]
    data_layout: str
    log: tuple[str, ...]
    log_layout: str
    ashift: int | None

    def vdevs(self, paths: dict[str, str], log_layout: str | None = None) -> list[str]:
        """zpool create's words after the pool's name: the data vdev(s), then the log's."""
        layout = self.log_layout if log_layout is None else log_layout
        words = (["mirror"] if self.data_layout == "mirror" else []) + [paths[d] for d in self.data]
        if self.log and layout != "none":
            words += ["log"] + (["mirror"] if layout == "mirror" else []) + [paths[d] for d in self.log]
        return words

    def disks(self, log_layout: str | None = None) -> tuple[str, ...]:
        layout = self.log_layout if log_layout is None else log_layout
        return self.data + (self.log if layout != "none" else ())


@dataclass(frozen=True)
class Workload:
    name: str
    description: str
    size: int        # bytes per write
    count: int       # writes per run
    file_mib: int    # the file written into, made (and the cache emptied) before the writes
    pattern: str     # random: at random size-aligned offsets (seeded); append: one after another
    compressible: int = 50  # % of each block that is a repeated row (the rest random bytes, incompressible)


@dataclass(frozen=True)
class Share:
    name: str
    seed_row: bool                   # a row of the seed's table (false: a counterfactual of the lab's)
    workload: Workload
    properties: dict[str, str]
    log_layout: str | None = None    # the pool's, unless the share changes it
    note: str = ""

    @property
    def dataset(self) -> str:
        return re.sub(r"[^A-Za-z0-9_.-]", "_", self.name.lower())


@dataclass
class AppliancePreset:
    name: str
    path: Path
    lab: labdef.Lab
    seed: str
    title: str
    repeats: int
    mount: str
    pool: Pool
    workloads: dict[str, Workload]
    shares: list[Share]
    order_seed: int | None = None
    kind: str = field(default="appliance", init=False)

    def plan(self) -> list[tuple[Share, int]]:
        return [(s, r) for r in range(1, self.repeats + 1) for s in self.shares]

    def estimate_s(self) -> float:
        return 20.0 * len(self.plan())  # pool, file, export/import, mount, writes, teardown: about 20 s a run

    def order(self, seed: int) -> list[tuple[Share, int]]:
        """Every share `repeats` times, in complete rounds, each round in a random order from `seed`."""
        rng, out = random.Random(seed), []
        for r in range(1, self.repeats + 1):
            out += [(s, r) for s in rng.sample(self.shares, len(self.shares))]
        return out


def from_table(path: Path, data: dict, lab: labdef.Lab, duration_s: int | None = None,
               warmup_s: int | None = None, repeats: int | None = None,
               order_seed: int | None = None) -> AppliancePreset:
    """The appliance bench of the preset file `path` (the appliance kind's load in kinds.py): a
    run is a count of writes, so DURATION and WARMUP are refused; REPEATS and the order's seed
    override the file's."""
    given = [k for k, v in (("DURATION", duration_s), ("WARMUP", warmup_s)) if v is not None]
    if given:
        raise UsageError(f"{path}: {given[0]} does not apply to an [appliance] preset (its runs are a count of "
                         f"writes: [[appliance.workload]] count); leave it out")
    return load(path, data, lab, repeats, order_seed)


def load(path: Path, data: dict, lab: labdef.Lab, repeats: int | None, order_seed: int | None) -> AppliancePreset:
    where = f"{path} [appliance]"
    a = data["appliance"]
    fields.known_keys(where, a, TOP_KEYS)
    if len(lab.vms) != 1 or lab.vms[0].guest != ZFS_GUEST:
        raise UsageError(f"{path}: an [appliance] preset runs on one VM with guest = \"{ZFS_GUEST}\" (OpenZFS and "
                         f"the NFS server); this lab has {', '.join(v.guest for v in lab.vms) or 'no VM'}")
    disks = {d.name: d for d in lab.vms[0].disks}
    pool = _pool(f"{where} [appliance.pool]", a.get("pool"), disks)
    workloads = {}
    for i, w in enumerate(_list(where, a, "workload"), 1):
        wl = _workload(f"{where} [[appliance.workload]] #{i}", w)
        if wl.name in workloads:
            raise UsageError(f"{where}: two workloads named {wl.name!r}: give each its own name")
        workloads[wl.name] = wl
    shares = [_share(f"{where} [[appliance.share]] #{i}", s, workloads, pool)
              for i, s in enumerate(_list(where, a, "share"), 1)]
    names = [s.name for s in shares]
    if len(set(names)) != len(names) or len({s.dataset for s in shares}) != len(shares):
        raise UsageError(f"{where}: two shares named alike in {names}: give each its own name")
    rep = repeats if repeats is not None else a.get("repeats", 3)
    rep = fields.whole_number(where if repeats is None else "REPEATS", "repeats", rep, 1, 20)
    mount = _mount(where, a.get("mount", ""))
    seed_no = order_seed if order_seed is not None else a.get("order_seed")
    if seed_no is not None:
        seed_no = fields.whole_number(where, "order_seed", seed_no, 0, 2**31 - 1)
    for key in ("seed", "title"):
        if not isinstance(a.get(key, ""), str):
            raise UsageError(f"{where}: {key} = {a[key]!r}: expected a string")
    return AppliancePreset(path.stem, path, lab, a.get("seed", ""), a.get("title", path.stem), rep, mount, pool,
                           workloads, shares, seed_no)


def _list(where: str, a: dict, key: str) -> list:
    items = a.get(key)
    if not isinstance(items, list) or not items or not all(isinstance(i, dict) for i in items):
        raise UsageError(f"{where}: expected one or more [[appliance.{key}]] tables, got {items!r}")
    return items


def _names(where: str, key: str, value, disks: dict) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(f"{where}: {key} = {value!r}: expected a list of the VM's disk names")
    for v in value:
        if v not in disks:
            raise UsageError(f"{where}: {key} names disk {v!r}, which the VM does not have: expected some of "
                             f"{', '.join(disks)}")
    return tuple(value)


def _pool(where: str, p, disks: dict) -> Pool:
    fields.known_keys(where, p, POOL_KEYS)
    data = _names(where, "data", p.get("data"), disks)
    log = _names(where, "log", p.get("log", []), disks)
    dl, ll = p.get("data_layout", "stripe"), p.get("log_layout", "striped" if log else "none")
    if dl not in DATA_LAYOUTS:
        raise UsageError(f"{where}: data_layout = {dl!r}: expected one of {', '.join(DATA_LAYOUTS)}")
    if ll not in LOG_LAYOUTS:
        raise UsageError(f"{where}: log_layout = {ll!r}: expected one of {', '.join(LOG_LAYOUTS)}")
    used = data + log
    twice = sorted({d for d in used if used.count(d) > 1})
    if twice:
        raise UsageError(f"{where}: disk {twice[0]!r} is named twice in data and log: a disk belongs to one vdev")
    if not data:
        raise UsageError(f"{where}: data = []: a pool needs at least one data disk")
    if dl == "mirror" and len(data) < 2:
        raise UsageError(f"{where}: data_layout = \"mirror\" with {len(data)} disk: a mirror needs two or more")
    if ll == "mirror" and len(log) < 2:
        raise UsageError(f"{where}: log_layout = \"mirror\" with {len(log)} log disk(s): a mirror needs two or more")
    if ll != "none" and not log:
        raise UsageError(f"{where}: log_layout = {ll!r} with no log disks: name them in log, or log_layout = \"none\"")
    ashift = p.get("ashift")
    if ashift is not None:
        ashift = fields.whole_number(where, "ashift", ashift, 9, 16)
        for name in used:
            logical = disks[name].geometry.logical_block_size
            if 1 << ashift < logical:
                raise UsageError(f"{where}: ashift = {ashift} ({1 << ashift}-byte blocks) on disk {name!r}, whose "
                                 f"logical sector is {logical} B: ZFS cannot write less than a sector; use ashift "
                                 f">= {int(math.log2(logical))} or leave ashift out (ZFS takes it from the disk)")
    return Pool(data, dl, log, ll, ashift)


def _workload(where: str, w: dict) -> Workload:
    fields.known_keys(where, w, WORKLOAD_KEYS)
    name = w.get("name")
    if not isinstance(name, str) or not re.fullmatch(r"[a-z][a-z0-9-]{0,30}", name):
        raise UsageError(f"{where}: name = {name!r}: expected lower-case letters, digits and '-', at most 31")
    size = fields.whole_number(where, "size", w.get("size"), 512, 1 << 20)
    if size % 512:
        raise UsageError(f"{where}: size = {size}: expected a multiple of 512 (O_DIRECT writes whole sectors)")
    count = fields.whole_number(where, "count", w.get("count"), 1, 100_000)
    file_mib = fields.whole_number(where, "file_mib", w.get("file_mib", 16), 1, 128)
    pattern = w.get("pattern", "random")
    if pattern not in PATTERNS:
        raise UsageError(f"{where}: pattern = {pattern!r}: expected one of {', '.join(PATTERNS)}")
    if pattern == "append" and size * count > file_mib << 20:
        raise UsageError(f"{where}: {count} appends of {size} B do not fit in file_mib = {file_mib}: raise file_mib")
    compressible = fields.whole_number(where, "compressible", w.get("compressible", 50), 0, 100)
    return Workload(name, str(w.get("description", "")), size, count, file_mib, pattern, compressible)


def _share(where: str, s: dict, workloads: dict, pool: Pool) -> Share:
    fields.known_keys(where, s, SHARE_KEYS)
    name = s.get("name")
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_ .,()=-]{0,60}", name):
        raise UsageError(f"{where}: name = {name!r}: expected up to 61 letters, digits, spaces and _.,()=-")
    wl = s.get("workload")
    if wl not in workloads:
        raise UsageError(f"{where}: workload = {wl!r}: expected one of {', '.join(workloads)}")
    props = s.get("properties", {})
    if not isinstance(props, dict):
        raise UsageError(f"{where}: properties = {props!r}: expected a table of ZFS properties")
    for key, value in props.items():
        if ":" not in key and key not in ZFS_PROPERTIES:
            raise UsageError(f"{where}: unknown ZFS property {key!r}: expected one of OpenZFS 2.1's dataset "
                             f"properties (zfsprops(7): logbias, recordsize, primarycache, compression, sync, ...)")
        if key in ZFS_OWN:
            raise UsageError(f"{where}: property {key!r} is the bench's own (it mounts and exports each share): "
                             f"leave it out")
        if not isinstance(value, (str, int)) or isinstance(value, bool) or not re.fullmatch(r"[A-Za-z0-9_.:-]+",
                                                                                            str(value)):
            raise UsageError(f"{where}: {key} = {value!r}: expected a word or a number (zfs set's syntax)")
    ll = s.get("log_layout")
    if ll is not None:
        if ll not in LOG_LAYOUTS:
            raise UsageError(f"{where}: log_layout = {ll!r}: expected one of {', '.join(LOG_LAYOUTS)}")
        if ll == "mirror" and len(pool.log) < 2 or ll == "striped" and not pool.log:
            raise UsageError(f"{where}: log_layout = {ll!r} but the pool has {len(pool.log)} log disk(s)")
    seed_row = s.get("seed_row", False)
    if not isinstance(seed_row, bool):
        raise UsageError(f"{where}: seed_row = {seed_row!r}: expected true or false")
    return Share(name, seed_row, workloads[wl], {k: str(v) for k, v in props.items()}, ll, str(s.get("note", "")))


def _mount(where: str, mount) -> str:
    if not isinstance(mount, str):
        raise UsageError(f"{where}: mount = {mount!r}: expected NFS mount options, comma-separated")
    for opt in filter(None, mount.split(",")):
        if not MOUNT_OPTION.fullmatch(opt):
            raise UsageError(f"{where}: mount option {opt!r}: expected NAME or NAME=VALUE (nfs(5))")
        if opt == "ro":
            raise UsageError(f"{where}: mount option 'ro': every run writes to the share; leave it out")
        if opt.split("=")[0] in ("addr", "clientaddr", "mountaddr", "mounthost", "port", "mountport"):
            raise UsageError(f"{where}: mount option {opt!r}: the share is mounted from the guest's own "
                             f"loopback (127.0.0.1); leave the address and ports to the bench")
    return mount
