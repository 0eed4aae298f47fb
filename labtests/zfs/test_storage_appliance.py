"""Seed 004 in the lab (labs/zfs-nfs.toml, guest debian12-zfs: `make test-zfs`): what size and
alignment of write OpenZFS sends to each disk, counted below the guest by the device model's trace.

- ashift: the vdev's block size ZFS picks from the physical sector each disk reports (512n: 9;
  512e and 4Kn: 12), and what a forced ashift=9 costs on the 512e disk: each write that covers a
  4 KiB physical sector only in part makes the disk read that sector first (the model does, and
  counts it per request); at ashift=12 none does.

The pools are made and destroyed by each test (cachefile none: nothing is imported at the next boot);
a test that fails leaves none behind.
"""

from __future__ import annotations

import contextlib
import random
import re
from pathlib import Path

import pytest

from labtests.support.requires import require
from sectorlab.analysis import devicerows
from sectorlab.bench.appliance.run import mountstats

pytestmark = pytest.mark.zfs  # not "lab": the default lab has no OpenZFS guest

ZFS_LAB = "the lab has no guest with OpenZFS (guest = \"debian12-zfs\"; labs/zfs-nfs.toml has one)"
SYNC_WRITES = 200  # 512-byte O_DSYNC appends: each one a ZIL commit

# SYNC_WRITES appends of 512 bytes to a file, each with O_DSYNC (a ZIL commit per write).
APPENDER = """import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_DSYNC, 0o600)
for i in range(int(sys.argv[2])):
    os.write(fd, bytes([i % 251]) * 512)
os.close(fd)
"""


class Zfs:
    """The guest with OpenZFS and its disks by name (their paths by serial, stable for ZFS)."""

    def __init__(self, lab_state, vm, guest):
        self.lab_state, self.guest = lab_state, guest
        self.disks = {d.name: d for d in lab_state.disks_of(vm)}

    def path(self, disk: str) -> str:
        return f"/dev/disk/by-id/virtio-{self.disks[disk].serial}"

    def sh(self, *command, timeout: float = 300) -> str:
        """The command's output; a failure raises, naming the command, its status and its stderr."""
        return self.guest.check_output(*command, timeout=timeout)

    @contextlib.contextmanager
    def pool(self, name: str, disk: str, *options: str, log: tuple[str, ...] = ()):
        """A pool on one disk (and `log`, its log vdevs: zpool create's words) for the test's length;
        destroyed after it, whatever happened."""
        self.sh("sudo -n zpool create -f -o cachefile=none -O mountpoint=/" + name, *options, name, self.path(disk),
                *log)
        try:
            yield name
        finally:
            self.guest.run("sudo -n zpool destroy -f", name, timeout=120)

    def ashift(self, pool: str) -> int:
        """The ashift of the pool's one top-level vdev, from its label on the disk (zdb -l)."""
        status = self.sh("sudo -n zpool status -P", pool)
        found = re.search(r"(/dev/\S+-part1)", status)
        assert found, status
        label = self.sh("sudo -n zdb -l", found.group(1))
        values = set(re.findall(r"\bashift: (\d+)", label))
        assert len(values) == 1, label
        return int(values.pop())


@pytest.fixture(scope="module")
def zfs(lab_state, lab_guests):
    vm = next((name for name, vm in lab_state.vms.items() if vm.guest == "debian12-zfs"), None)
    require(vm, ZFS_LAB)
    zfs = Zfs(lab_state, vm, lab_guests[vm])
    # The module the image built for its kernel (packer/scripts/debian/zfs.sh): nothing loads it at boot.
    zfs.sh("sudo -n modprobe zfs", timeout=120)
    return zfs


def test_zfs_the_images_module_loads_for_its_kernel(zfs, record_property):
    """OpenZFS's module, built by DKMS for the guest's kernel when the image was built, loads."""
    said = (f"zfs {zfs.sh('cat /sys/module/zfs/version').strip()} on kernel {zfs.sh('uname -r').strip()}, "
            f"ARC max {int(zfs.sh('cat /sys/module/zfs/parameters/zfs_arc_max')) >> 20} MiB")
    record_property("zfs_module", said)
    print(said)
    assert int(zfs.sh("cat /sys/module/zfs/parameters/zfs_arc_max")) == 64 << 20, said


@pytest.mark.parametrize("disk, want", [("z512n", 9), ("z512e", 12), ("z4k", 12)])
def test_zfs_ashift_follows_the_physical_sector_the_disk_reports(zfs, disk, want, record_property):
    """Without -o ashift, ZFS takes the vdev's ashift from the physical sector the disk reports:
    the 512e disk gets 12 (4 KiB), as the seed's appliance disks did, not the logical sector's 9."""
    d = zfs.disks[disk]
    with zfs.pool(f"sl-{disk}", disk) as pool:
        got = zfs.ashift(pool)
    said = f"{disk} ({d.logical_block_size}/{d.physical_block_size}): ashift {got}"
    record_property(f"ashift_{disk}", said)
    print(said)
    assert got == want, said


@pytest.mark.parametrize("ashift", [9, 12])
def test_zfs_ashift_9_on_512e_makes_the_disk_read_before_it_writes(zfs, ashift, tmp_path, record_property):
    """A pool forced to ashift=9 on the 512e disk, SYNC_WRITES synchronous 512-byte appends (each a
    ZIL commit), then a txg sync: at ashift=9 ZFS allocates in 512-byte units, so writes start or
    end inside a 4 KiB physical sector and the disk reads it first; at ashift=12 every write covers
    whole sectors and the disk reads none. Counted per write request by the model, from the moment
    the pool and its dataset exist (making the pool writes its GPT in 512-byte sectors)."""
    disk = zfs.disks["z512e"]
    with zfs.pool(f"sl-a{ashift}", "z512e", "-o", f"ashift={ashift}") as pool:
        zfs.sh(f"sudo -n zfs create -o sync=always {pool}/redo && sudo -n zpool sync {pool}")
        window = devicerows.Window(zfs.lab_state.lab, [disk])
        zfs.sh("sudo -n python3 -c", APPENDER, f"/{pool}/redo/log", SYNC_WRITES)
        zfs.sh("sudo -n zpool sync", pool)
        window.check_alive(f"ashift{ashift}")
        writes = window.rows(tmp_path, f"ashift{ashift}", tmp_path)[disk.name]["write"]
    said = (f"ashift={ashift} on {disk.name}: {SYNC_WRITES} synchronous 512-byte appends became {writes['count']} "
            f"writes of {writes.get('bytes_per_request', 0):.0f} B on average, and the disk read "
            f"{writes.get('rmw_reads', 0)} partly written 4 KiB sectors first")
    record_property(f"ashift{ashift}_rmw", said)
    print(said)
    assert writes["count"] >= SYNC_WRITES, said
    if ashift == 9:
        assert writes["rmw_reads"] > 0, said
    else:
        assert writes["rmw_reads"] == 0, said


WRITER_8K = """import os, random, sys
path, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
fd = os.open(path, os.O_WRONLY | os.O_DSYNC)
rng = random.Random(8192)
for i in range(n):
    os.pwrite(fd, bytes([i % 251 + 1]) * 8192, rng.randrange(size // 8192) * 8192)
os.close(fd)
"""
OVERWRITES = 100  # 8 KiB O_DSYNC overwrites at random 8 KiB-aligned offsets of a 16 MiB datafile


@pytest.mark.parametrize("recordsize", ["8K", "128K"])
def test_zfs_recordsize_against_8k_datafile_writes(zfs, recordsize, tmp_path, record_property):
    """8 KiB datafile writes into records of 8 KiB (the seed's recordsize = db_blocksize) and of
    128 KiB (the default; the seed's control-file share): with the record not in the ARC (the pool
    exported and imported), an 8 KiB write into a 128 KiB record makes ZFS read the whole record
    first; into an 8 KiB record it reads nothing. Counted on the disk by the model."""
    disk = zfs.disks["z4k"]
    with zfs.pool("sl-rs", "z4k") as pool:
        zfs.sh(f"sudo -n zfs create -o recordsize={recordsize} -o compression=off {pool}/data && "
               f"sudo -n dd if=/dev/urandom of=/{pool}/data/datafile bs=1M count=16 status=none conv=fsync && "
               f"sudo -n zpool export {pool} && sudo -n zpool import -o cachefile=none -d /dev/disk/by-id {pool}")
        window = devicerows.Window(zfs.lab_state.lab, [disk])
        zfs.sh("sudo -n python3 -c", WRITER_8K, f"/{pool}/data/datafile", OVERWRITES, 16 << 20)
        window.check_alive(f"recordsize-{recordsize}")
        rows = window.rows(tmp_path, f"recordsize-{recordsize}", tmp_path)[disk.name]
    reads = rows.get("read", {})
    count, read_bytes = reads.get("count", 0), reads.get("count", 0) * reads.get("bytes_per_request", 0)
    # The 128 KiB records the overwrites touched (WRITER_8K's offsets, from its seeded generator):
    # the first write into each reads it, the next ones find it in the ARC.
    rng = random.Random(8192)
    touched = len({rng.randrange((16 << 20) // 8192) * 8192 // (128 << 10) for _ in range(OVERWRITES)})
    said = (f"recordsize={recordsize}: {OVERWRITES} overwrites of 8 KiB ({touched} distinct 128 KiB ranges) made "
            f"the disk read {count} times, {read_bytes / 1024:.0f} KiB in all "
            f"({read_bytes / OVERWRITES / 1024:.1f} KiB per overwrite)")
    record_property(f"recordsize_{recordsize}", said)
    print(said)
    if recordsize == "128K":
        assert read_bytes >= 0.9 * touched * (128 << 10), said
    else:  # metadata only: not even one 8 KiB record per overwrite
        assert read_bytes < OVERWRITES * 8192 / 2, said


@pytest.mark.parametrize("layout, logbias", [("striped", "latency"), ("mirror", "latency"),
                                             ("striped", "throughput"), ("none", "latency")])
def test_zfs_logbias_and_the_slog_decide_where_sync_writes_land(zfs, layout, logbias, tmp_path, record_property):
    """A pool on the 4Kn disk with two log devices, striped or mirrored, and SYNC_WRITES synchronous
    appends. With logbias=latency each commit's log block, data inside, goes to the log devices (a
    mirror writes it to both, a stripe to one in turn) and the pool disk gets the data only at the
    transaction group's sync. With logbias=throughput each commit writes its data to the pool disk
    itself (an indirect log record, OpenZFS 2.1's zfs_log_write), and the log block that points at it
    still goes to a log device: the SLOG is not bypassed, it carries smaller records. Without log
    devices the intent log lives in the pool: every commit writes the pool disk, the idle SLOG disks
    get nothing. Counted per disk by the models."""
    disks = {name: zfs.disks[name] for name in ("z4k", "slog-a", "slog-b")}
    log = () if layout == "none" else \
        ("log", *(["mirror"] if layout == "mirror" else []), zfs.path("slog-a"), zfs.path("slog-b"))
    with zfs.pool("sl-zil", "z4k", log=log) as pool:
        zfs.sh(f"sudo -n zfs create -o logbias={logbias} {pool}/redo && sudo -n zpool sync {pool}")
        window = devicerows.Window(zfs.lab_state.lab, list(disks.values()))
        zfs.sh("sudo -n python3 -c", APPENDER, f"/{pool}/redo/log", SYNC_WRITES)
        window.check_alive(f"{layout}-{logbias}")
        rows = window.rows(tmp_path, f"{layout}-{logbias}", tmp_path)
    writes = {name: rows[d.name].get("write", {}).get("count", 0) for name, d in disks.items()}
    named = "no" if layout == "none" else layout
    said = (f"{named} SLOG, logbias={logbias}: {SYNC_WRITES} synchronous appends; writes on the pool disk "
            f"{writes['z4k']}, on slog-a {writes['slog-a']}, on slog-b {writes['slog-b']}")
    record_property(f"zil_{layout}_{logbias}", said)
    print(said)
    on_slogs = writes["slog-a"] + writes["slog-b"]
    if layout == "none":
        assert writes["z4k"] >= SYNC_WRITES and on_slogs == 0, said
        return
    if logbias == "throughput":
        assert writes["z4k"] >= SYNC_WRITES and on_slogs >= SYNC_WRITES, said
        return
    assert writes["z4k"] < SYNC_WRITES / 2, said
    if layout == "mirror":
        assert writes["slog-a"] >= SYNC_WRITES and writes["slog-b"] >= SYNC_WRITES, said
    else:
        assert on_slogs >= SYNC_WRITES and 0 < writes["slog-a"] < on_slogs, said


COPY_WRITES = 16  # 1 MiB O_DSYNC appends: RMAN's BACKUP AS COPY (seed 004), a ZIL commit each
COPIER = """import mmap, os, random, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_DSYNC, 0o600)
buf = mmap.mmap(-1, 1 << 20)
buf[:] = random.Random(1).randbytes(1 << 20)  # nothing for compression to find
for i in range(int(sys.argv[2])):
    os.pwrite(fd, buf, i << 20)
os.close(fd)
"""


@pytest.mark.parametrize("logbias", ["latency", "throughput"])
def test_zfs_one_mib_sync_writes_go_through_the_slog_or_around_it(zfs, logbias, tmp_path, record_property):
    """Seed 004's large sequential writes (RMAN's copies, 1 MiB at a time) on a pool of the 4Kn disk
    with two striped log devices (the seed's ZIL layout). With logbias=latency each write's data is
    copied into log blocks on the SSDs before the write returns (OpenZFS 2.1 zfs_log_write: copied
    records with a separate log device, whatever the size; a record whose transaction group has
    already reached the pool is not logged again, so most of it, not all), and both SSDs take their
    turn: their bandwidth bounds the copy, as the seed says of its mirrored ZIL. With
    logbias=throughput the data goes to the pool disk and the log devices get the records that
    point at it. Bytes counted per disk by the models."""
    disks = {name: zfs.disks[name] for name in ("z4k", "slog-a", "slog-b")}
    with zfs.pool("sl-copy", "z4k", log=("log", zfs.path("slog-a"), zfs.path("slog-b"))) as pool:
        zfs.sh(f"sudo -n zfs create -o logbias={logbias} -o recordsize=128K -o compression=off {pool}/copy && "
               f"sudo -n zpool sync {pool}")
        window = devicerows.Window(zfs.lab_state.lab, list(disks.values()))
        zfs.sh("sudo -n python3 -c", COPIER, f"/{pool}/copy/file", COPY_WRITES, timeout=600)
        window.check_alive(f"copy-{logbias}")
        rows = window.rows(tmp_path, f"copy-{logbias}", tmp_path)
    kib = {name: rows[d.name]["write"].get("count", 0) * (rows[d.name]["write"].get("bytes_per_request") or 0) / 1024
           for name, d in disks.items()}
    on_slogs, copied = kib["slog-a"] + kib["slog-b"], COPY_WRITES * 1024
    said = (f"logbias={logbias}: {COPY_WRITES} synchronous writes of 1 MiB ({copied:,} KiB); KiB written to the pool "
            f"disk {kib['z4k']:,.0f}, to slog-a {kib['slog-a']:,.0f}, to slog-b {kib['slog-b']:,.0f}")
    record_property(f"copy_{logbias}", said)
    print(said)
    if logbias == "latency":
        assert on_slogs >= copied / 2 and kib["slog-a"] > 0 and kib["slog-b"] > 0, said
    else:
        assert kib["z4k"] >= copied and on_slogs < copied / 10, said


# ---- NFS: a ZFS share mounted by the same guest over its own loopback ----------------------------

SEED_MOUNT = "rw,bg,hard,nointr,rsize=1048576,wsize=1048576,tcp,vers=3,timeo=600"  # seed 004's
NFS_POOL, MOUNT = "sl-nfs", "/mnt/sl-nfs"


class Nfs:
    """The NFS server started in the guest, a ZFS dataset exported to 127.0.0.1, and mounts of it."""

    def __init__(self, zfs: Zfs):
        self.zfs = zfs

    def mount(self, options: str | None) -> dict:
        z = self.zfs
        z.sh("sudo -n mkdir -p", MOUNT)
        z.sh("sudo -n mount -t nfs", *(["-o", options] if options else []), f"127.0.0.1:/{NFS_POOL}/data", MOUNT,
             timeout=120)
        return self.stats()

    def stats(self) -> dict:
        return mountstats(self.zfs.sh("cat /proc/self/mountstats"), MOUNT)

    def umount(self) -> None:
        self.zfs.guest.run("sudo -n umount", MOUNT, timeout=120)


@pytest.fixture(scope="module")
def nfs(zfs):
    """A pool on the 4Kn disk with a dataset of 8 KiB records (the seed's db_blocksize share),
    exported read-write to 127.0.0.1 only; unexported and destroyed after the module."""
    with zfs.pool(NFS_POOL, "z4k"):
        zfs.sh(f"sudo -n zfs create -o recordsize=8K -o logbias=latency {NFS_POOL}/data && "
               f"sudo -n chmod 1777 /{NFS_POOL}/data")
        zfs.sh("sudo -n systemctl start rpcbind.socket nfs-server.service", timeout=120)
        zfs.sh("sudo -n exportfs -o rw,sync,no_subtree_check,insecure", f"127.0.0.1:/{NFS_POOL}/data")
        try:
            yield Nfs(zfs)
        finally:
            zfs.guest.run("sudo -n umount", MOUNT, timeout=120)
            zfs.guest.run("sudo -n exportfs -u", f"127.0.0.1:/{NFS_POOL}/data", timeout=60)


V41_NCONNECT = "vers=4.1,nconnect=4,hard,proto=tcp"  # NFS 4.1 sessions over four TCP connections


@pytest.mark.parametrize("options", [SEED_MOUNT, None, V41_NCONNECT], ids=["seed-options", "client-defaults",
                                                                         "v4.1-nconnect"])
def test_nfs_mount_options_asked_and_granted(nfs, options, record_property):
    """What the client negotiated with the server (/proc/self/mountstats) against what was asked:
    the seed's vers=3, hard, tcp and 1 MiB rsize/wsize, the client's own defaults, and NFS 4.1
    over four TCP connections (nconnect=4, which mountstats shows granted). rsize and
    wsize are the smaller of the asked 1 MiB and the server's max_block_size, which the Linux
    server sizes from its memory when it starts (1/4096 of it, rounded down to a power of two)."""
    try:
        opts = nfs.mount(options)["opts"]
    finally:
        nfs.umount()
    # The Linux server's largest READ/WRITE payload: by default sized from its memory when nfsd starts.
    server_max = int(nfs.zfs.sh("cat /proc/fs/nfsd/max_block_size"))
    said = (f"asked {options or '(no options)'}: granted vers={opts['vers']}, nconnect={opts.get('nconnect', 1)}, "
            f"rsize={opts['rsize']}, "
            f"wsize={opts['wsize']}, proto={opts['proto']}, {'hard' if 'hard' in opts else 'soft'}, "
            f"timeo={opts['timeo']}; the server's max_block_size {server_max}")
    record_property(f"nfs_mount_{options or 'default'}", said)
    print(said)
    if options == V41_NCONNECT:
        assert (opts["vers"], opts.get("nconnect"), "hard" in opts) == ("4.1", "4", True), said
    elif options:
        assert (opts["vers"], opts["proto"], "hard" in opts, opts["timeo"]) == ("3", "tcp", True, "600"), said
    else:
        assert opts["vers"].startswith("4"), said  # the client's default: the highest both speak
    for size in ("rsize", "wsize"):  # the smaller of what was asked (the client's 1 MiB by default) and the server's
        assert int(opts[size]) == min(1048576, server_max), said


def _writes(nfs: Nfs, command: tuple) -> tuple[int, int, int]:
    """Run `command` in the guest on the mounted share; the WRITE and COMMIT operations it cost the
    client and the data bytes the WRITEs carried, from mountstats before and after."""
    before = nfs.stats()
    nfs.zfs.sh(*command, timeout=300)
    after = nfs.stats()
    ops = {op: after["ops"][op][0] - before["ops"][op][0] for op in ("WRITE", "COMMIT")}
    return ops["WRITE"], ops["COMMIT"], after["written"] - before["written"]


def test_nfs_direct_dsync_redo_is_written_stable_and_buffered_writes_are_committed(nfs, record_property):
    """redo-writer on the share (O_DIRECT|O_DSYNC, BLOCKSIZE 512, one session): one WRITE per log
    write, each stable (FILE_SYNC: no COMMIT follows); 8 KiB buffered writes and an fsync, as a
    datafile copy would: the client gathers them into WRITEs of up to wsize, sent UNSTABLE, and
    COMMITs them."""
    import json
    nfs.mount(SEED_MOUNT)
    try:
        # The log file made beforehand, not zeros: redo-writer's posix_fallocate has no NFSv3
        # operation behind it, and glibc's stand-in writes one byte into every 4 KiB block it finds
        # zero (4,096 one-byte WRITEs for 16 MiB: the first run counted them with the log writes).
        nfs.zfs.sh(f"head -c {16 << 20} /dev/zero | tr '\\0' '\\377' > {MOUNT}/redo.log && sync")
        writes, commits, sent = _writes(nfs, (
            f"redo-writer run --target {MOUNT}/redo.log --duration 3 --sessions 1 --blocksize 512 --redo-per-txn 512 "
            f"--log-size {16 << 20} --output json --force > /tmp/redo.json",))
        report = json.loads(nfs.zfs.sh("cat /tmp/redo.json"))
        log_writes = report["writes"]
        b_writes, b_commits, b_sent = _writes(nfs, ("dd if=/dev/zero", f"of={MOUNT}/datafile", "bs=8k", "count=2048",
                                                    "conv=fsync", "status=none"))
    finally:
        nfs.umount()
    said = (f"redo (O_DIRECT|O_DSYNC, 512): {log_writes} log writes of {report['bytes_written'] / log_writes:.0f} B, "
            f"{writes} WRITEs of {sent / max(writes, 1):.0f} B, {commits} COMMITs; buffered 8 KiB x 2048 + fsync: "
            f"{b_writes} WRITEs of {b_sent / max(b_writes, 1):.0f} B, {b_commits} COMMITs")
    record_property("nfs_writes", said)
    print(said)
    assert writes == log_writes > 0 and sent == report["bytes_written"] and commits == 0, said
    assert b_commits >= 1 and b_writes < 2048 and b_sent == 2048 * 8192, said


# ---- The appliance preset's refusals that only the guest can make (sectorlab/bench/appliancerun.py) ----

def _appliance(lab_state, zfs, share: dict, mount: str):
    """An appliance preset on this lab's disks (a 512e pool, one SLOG) with one share, and its guest side."""
    from labtests.support.lab import definition
    from sectorlab.bench.appliance import preset as appliance
    from sectorlab.bench.appliance import run as appliancerun
    table = {"appliance": {"mount": mount, "pool": {"data": ["z512e"], "log": ["slog-a"]},
                           "workload": [{"name": "w", "size": 8192, "count": 4, "file_mib": 1}],
                           "share": [{"name": "S", "workload": "w", **share}]}}
    preset = appliance.load(Path("bad-input.toml"), table, definition(), None, None)
    return preset, appliancerun.Appliance(preset, lab_state, print)


@pytest.mark.parametrize("share, mount, refused", [
    ({"properties": {"recordsize": "7K"}}, "vers=3",
     r"zfs refused its properties \{'recordsize': '7K'\}: cannot create 'sl-appl/s': 'recordsize' must be "),
    ({"properties": {"logbias": "fastest"}}, "vers=3",
     r"zfs refused its properties \{'logbias': 'fastest'\}: cannot create 'sl-appl/s': 'logbias' must be "),
    ({}, "vers=9", r"the NFS client refused mount options 'vers=9': mount(\.nfs)?: \S"),
    ({}, "vers=3,wsize=notanumber",
     r"the NFS client refused mount options 'vers=3,wsize=notanumber': mount(\.nfs)?: \S"),
], ids=["recordsize-7K", "logbias-fastest", "nfs-vers-9", "nfs-wsize-word"])
def test_appliance_a_value_the_guest_refuses_is_one_line_and_leaves_nothing(zfs, lab_state, share, mount, refused,
                                                                            record_property):
    """A property value ZFS refuses, a mount option the NFS client refuses: one line naming the
    share, the value and the tool's own words; no mount, export or pool of the bench is left."""
    from sectorlab.errors import UsageError
    preset, guest_side = _appliance(lab_state, zfs, share, mount)
    guest_side.start()
    with pytest.raises(UsageError, match=refused) as e:
        guest_side.prepare(preset.shares[0])
    said = str(e.value)
    record_property("refused", said)
    print(said)
    assert "\n" not in said
    left = zfs.guest.run("mountpoint -q /mnt/sl-appl && echo mounted; sudo -n zpool list -H -o name; "
                         "sudo -n exportfs -v").stdout
    assert "mounted" not in left and "sl-appl" not in left, left
