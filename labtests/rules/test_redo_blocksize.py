"""Redo BLOCKSIZE verdicts on real devices: the rules engine run inside the guest agrees with the
declared geometry, and real I/O confirms it.

For every declared disk and every redo block size: rules.py's command line (`DEVICE --blocksize B
--json`) inside the guest gives the verdict the geometry predicts; a refusal because B is below the logical
sector is confirmed by an O_DIRECT write of B bytes failing with EINVAL, and every acceptance by
an O_DIRECT+O_DSYNC write of B bytes succeeding (one redo-writer transaction: one B-byte block).
A refusal because B is above the media sector is the database's policy, not the disk's: there the
write succeeds. Guards sectorlab/inguest/rules.py (the ORA-01378 model, docs/redo-blocksize.md) against the
kernel's real behaviour.
These tests write to the lab's data disks (never the root disk).
"""

from __future__ import annotations

import json
import re

import pytest

from labtests.support.lab import blank_disk, disk_params, resolve_disk
from sectorlab.inguest import rules
from sectorlab.paths import REPO

pytestmark = pytest.mark.lab
HELPERS = {name: REPO / "sectorlab" / "inguest" / name for name in ("rules.py", "asmrules.py", "redocheck.py")}
# The discovery methods asked on every disk: (name, redo-check flags).
DISCOVERY = {"asmlib": ["--asm-discovery", "asmlib", "--asm-version", "19"],
             "asmlib-logical": ["--asm-discovery", "asmlib", "--asmlib-logical-block-size", "--asm-version", "19"],
             "udev": ["--asm-discovery", "udev", "--asm-version", "19"],
             "afd-12.1": ["--asm-discovery", "afd", "--asm-version", "12.1"]}
# _disk_sector_size_override set in the ASM instance (seed 003 says to set it in the database's):
# CREATE DISKGROUP without SECTOR_SIZE, and with SECTOR_SIZE 4096 named.
OVERRIDE_IN_ASM = {"override-asm": ["--asm-discovery", "udev", "--asm-version", "19", "--override",
                                    "--override-in", "asm"],
                   "override-asm-4096": ["--asm-discovery", "udev", "--asm-version", "19", "--override",
                                         "--override-in", "asm", "--asm-sector-size", "4096"]}
REMOTE_DIR = "/tmp/sectorlab"


@pytest.fixture(scope="session")
def helpers(lab_guests):
    for guest in lab_guests.values():
        guest.check_output("mkdir -p", REMOTE_DIR)
        for name, local in HELPERS.items():
            guest.put(local, f"{REMOTE_DIR}/{name}", 0o755)
    return REMOTE_DIR


# Per disk, in one guest command: the verdict for every BLOCKSIZE, then one redo write of each
# (one round trip instead of six: each costs the guest a second under TCG). The verdicts come from
# rules.py's command line (main) called once per BLOCKSIZE in one python3: its start costs the guest
# about a second under TCG.
_VERDICTS = """
import contextlib, io, json, sys
sys.path.insert(0, sys.argv[1])
import redocheck
def ask(args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        rc = redocheck.main(args)
    return rc, out.getvalue().strip()
for bs in sys.argv[4:]:
    rc, out = ask([sys.argv[2], "--blocksize", bs, "--json"])
    print(f"verdict {bs} {out} rc={rc}")
for name, flags in json.loads(sys.argv[3]).items():
    rc, out = ask([sys.argv[2], "--json", *flags])
    print(f"asm {name} {out} rc={rc}")
"""
_ALL = r'''
helpers=$1; dev=$2; verdicts=$3; discovery=$4; shift 4
python3 -c "$verdicts" "$helpers" "$dev" "$discovery" "$@"
for bs in "$@"; do
  out=$(redo-writer run --target "$dev" --blocksize "$bs" --sessions 1 --transactions 1 --redo-per-txn 1 \
        --log-size 1048576 --output json 2>/tmp/sectorlab-write.err); rc=$?
  echo "write $bs rc=$rc $(tr '\n' ' ' < /tmp/sectorlab-write.err) json=$(printf %s "$out" | tr -d '\n')"
done
'''
_DONE: dict[str, dict] = {}


@pytest.fixture(params=disk_params())
def disk(request, lab_state, lab_guests, guest_devices, helpers):
    """(guest, declared disk, device, {BLOCKSIZE: (verdict rc, verdict, write rc, its error, its report)})."""
    guest, declared, dev = resolve_disk(request.param, lab_state, lab_guests, guest_devices)
    if declared.serial not in _DONE:
        out = guest.check_output("sudo -n sh -c", _ALL, "all", helpers, dev.path, _VERDICTS,
                                 json.dumps(DISCOVERY | OVERRIDE_IN_ASM),
                                 *rules.VALID_BLOCKSIZES)
        verdicts = {int(bs): (int(rc), json.loads(js)) for bs, js, rc in
                    re.findall(r"^verdict (\d+) (.*) rc=(\d+)$", out, re.M)}
        writes = {int(bs): (int(rc), err.strip(), js) for bs, rc, err, js in
                  re.findall(r"^write (\d+) rc=(\d+) (.*?)json=(.*)$", out, re.M)}
        assert sorted(verdicts) == sorted(writes) == sorted(rules.VALID_BLOCKSIZES), out
        _DONE[declared.serial] = {bs: (*verdicts[bs], *writes[bs]) for bs in verdicts}
        _DONE[declared.serial]["asm"] = {name: (int(rc), json.loads(js)) for name, js, rc in
                                         re.findall(r"^asm (\S+) (.*) rc=(\d+)$", out, re.M)}
        assert sorted(_DONE[declared.serial]["asm"]) == sorted(DISCOVERY | OVERRIDE_IN_ASM), out
    return guest, declared, dev, _DONE[declared.serial]


@pytest.mark.parametrize("blocksize", rules.VALID_BLOCKSIZES, ids=lambda b: f"bs{b}")
def test_verdict_and_real_io(disk, blocksize):
    guest, declared, dev, done = disk
    logical, physical = declared.geometry.logical_block_size, declared.geometry.physical_block_size
    rc, verdict, write_rc, write_err, write_json = done[blocksize]
    assert rc in (0, 1), f"redo-check exited {rc}: {verdict}"
    want_allowed = logical <= blocksize <= physical
    assert verdict["allowed"] is want_allowed, (
        f"{dev.path} ({declared.geometry.name} {logical}/{physical}): BLOCKSIZE {blocksize} "
        f"allowed={verdict['allowed']}, expected {want_allowed}: {verdict['error']}")
    assert (verdict["host_sector"], verdict["media_sector"]) == (logical, physical)
    # No BLOCKSIZE above 4096 exists: on a 16 KiB physical sector the model's default stops there.
    assert verdict["default_blocksize"] == min(physical, rules.MAX_BLOCKSIZE)
    assert (rc == 0) is want_allowed
    # A write unit above 4 KiB (the physical sector, or the minimum I/O size the guest's rules engine
    # reads from the device) is said: every redo write is smaller than it.
    unit = declared.geometry.guest_min_io
    said = [w for w in verdict["warnings"] if w.startswith(f"the device writes in units of {unit} bytes")]
    assert len(said) == (1 if unit > rules.MAX_BLOCKSIZE else 0), (unit, verdict["warnings"])

    # One transaction of one redo byte: one write of one B-byte block at offset 0.
    if blocksize < logical:
        assert write_rc == 1 and "pwrite: Invalid argument" in write_err, (
            f"{dev.path}: O_DIRECT write of {blocksize} B below the {logical} B logical sector: "
            f"rc {write_rc}: {write_err}")
    else:
        assert write_rc == 0, f"{dev.path}: O_DIRECT+O_DSYNC write of {blocksize} B failed: {write_err}"
        report = json.loads(write_json)
        assert (report["writes"], report["bytes_written"]) == (1, blocksize), report


def _expected_group(name: str, logical: int, physical: int) -> tuple[int, int | None] | None:
    """The disk group each discovery method gives (docs/redo-blocksize.md), written out again:
    (SECTOR_SIZE, LOGICAL_SECTOR_SIZE), or None when ASM cannot use the disk (ORA-59012)."""
    if name.startswith("asmlib"):
        one = logical if name == "asmlib-logical" else physical
        return (one, one) if one in (512, 4096) else None
    if physical not in (512, 4096):
        return None
    return (logical, None) if name == "afd-12.1" else (logical, logical)


@pytest.mark.parametrize("name", DISCOVERY)
def test_asm_discovery_on_what_the_guest_shows(disk, name):
    """What CREATE DISKGROUP would make of this disk through each discovery method, from the sizes
    the guest's kernel shows; and every BLOCKSIZE the engine lets into that group is one the disk
    really writes (the O_DIRECT writes above)."""
    guest, declared, dev, done = disk
    logical, physical = declared.geometry.logical_block_size, declared.geometry.physical_block_size
    rc, out = done["asm"][name]
    want = _expected_group(name, logical, physical)
    if want is None:
        assert rc == 1 and out["error"] == f"ORA-59012: Disk {dev.path} uses an invalid physical sector size " \
                                           f"({physical}).", out
        return
    assert out["disk"]["logical"] == logical and out["disk"]["physical"] == physical, out["disk"]
    assert (out["asm"]["sector_size"], out["asm"]["logical_sector_size"]) == want, out["asm"]
    assert out["asm"]["reads"] == ([want[0]] * 2 if name.startswith("asmlib") else [logical, physical])
    assert rc == (0 if out["allowed"] else 1) and out["default_blocksize"] == want[0]
    for r in out["redo"]:
        if r["allowed"] or r["needs_override"]:
            write_rc, write_err = done[r["blocksize"]][2:4]
            assert write_rc == 0, f"{name}: BLOCKSIZE {r['blocksize']} let in, the disk fails it: {write_err}"
        # The group's smallest I/O decides what it takes below SECTOR_SIZE; above it only the override.
        assert r["allowed"] is ((want[1] or want[0]) <= r["blocksize"] <= want[0]), r


def test_asm_override_in_the_asm_instance(disk):
    """_disk_sector_size_override set in the ASM instance: CREATE DISKGROUP without SECTOR_SIZE is
    ORA-15086 (documented) on every disk ASM can use; with SECTOR_SIZE 4096 named, a disk whose
    physical sector is 4096 joins and every BLOCKSIZE let into the group is one the disk really writes
    (the O_DIRECT writes above); whether a 512n disk joins is not known (exit 3): the override's one
    public effect in ASM is ORA-15086."""
    guest, declared, dev, done = disk
    physical = declared.geometry.physical_block_size
    (rc, bare), (rc_named, named) = done["asm"]["override-asm"], done["asm"]["override-asm-4096"]
    if physical not in (512, 4096):
        invalid = f"ORA-59012: Disk {dev.path} uses an invalid physical sector size ({physical})."
        assert (rc, bare["error"], rc_named, named["error"]) == (1, invalid, 1, invalid), (bare, named)
        return
    assert rc == 1 and {k: bare.get(k) for k in ("allowed", "error", "asm")} == {
        "allowed": False, "error": "ORA-15086: Diskgroup sector size must be specified.", "asm": None}, bare
    # the refusal's evidence, as the engine gives a verdict's (ORA-15086's text is Oracle's)
    assert bare["evidence"] == "documented" and [r["rule"] for r in bare["rests_on"]] == [
        "asm-override-sector-size"], bare
    if physical == 512:
        assert rc_named == 3 and named["allowed"] is None and named["asm"]["sector_size"] == 4096, named
        assert [(r["allowed"], r["needs_override"]) for r in named["redo"]] == [(None, False)] * 3, named["redo"]
        return
    assert rc_named == 0 and named["asm"]["sector_size"] == 4096, named
    let_in = [r["blocksize"] for r in named["redo"] if r["allowed"] or r["needs_override"]]
    assert let_in == [4096], named["redo"]
    for blocksize in let_in:
        write_rc, write_err = done[blocksize][2:4]
        assert write_rc == 0, f"BLOCKSIZE {blocksize} let into the group, the disk fails it: {write_err}"


# On a file system on the disk, the same 512-byte redo write in the two I/O modes FILESYSTEMIO_OPTIONS
# chooses between: through the page cache (NONE, Linux's default: O_DSYNC) and direct (DIRECTIO:
# O_DIRECT|O_DSYNC); then redo-check's verdict on the file in each mode. One round trip.
_BUFFERED = r'''
dev=$1; mnt=/mnt/sectorlab-buffered; f=$mnt/redo01.log
mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=1 "$dev" && mkdir -p $mnt && mount "$dev" $mnt || exit 9
fallocate -l 1M $f && sync
for mode in dsync direct,dsync; do
  dd if=/dev/urandom of=$f bs=512 count=1 conv=notrunc oflag=$mode status=none 2>/tmp/sectorlab-dd.err
  echo "dd $mode rc=$? $(tr '\n' ' ' < /tmp/sectorlab-dd.err)"
done
for mode in buffered direct; do
  echo "verdict $mode $(redo-check $f --blocksize 512 --io-mode $mode --json 2>/dev/null | tr -d '\n')"
done
'''


@pytest.fixture(params=[p for p in disk_params() if p.values[0][1].geometry.logical_block_size > 512][:1])
def filesystem_disk(request, lab_state, lab_guests, guest_devices):
    """The lab's first disk with a logical sector above 512, for a file system: blank again after."""
    guest, declared, dev = resolve_disk(request.param, lab_state, lab_guests, guest_devices)
    yield guest, declared, dev
    guest.run("sudo -n umount /mnt/sectorlab-buffered")
    blank_disk(guest, dev, declared.serial)


def test_io_mode_decides_what_a_write_below_the_sector_does(filesystem_disk):
    """A redo write below the logical sector fails with EINVAL only with direct I/O; through the page
    cache it succeeds (the kernel reads and rewrites the sector). So redo-check's refusal of BLOCKSIZE
    512 there rests on the kernel (physics) in direct mode and on Oracle's own check (assumed) in
    buffered mode, and says which."""
    guest, declared, dev = filesystem_disk
    out = guest.check_output("sudo -n sh -c", _BUFFERED, "buffered", dev.path, timeout=180)
    dd = {mode: (int(rc), err.strip()) for mode, rc, err in re.findall(r"^dd (\S+) rc=(\d+) ?(.*)$", out, re.M)}
    verdicts = {mode: json.loads(js) for mode, js in re.findall(r"^verdict (\S+) (.*)$", out, re.M)}
    assert dd["dsync"] == (0, ""), f"{dev.path}: a buffered 512-byte O_DSYNC write on the file failed: {dd}"
    assert dd["direct,dsync"][0] == 1 and "Invalid argument" in dd["direct,dsync"][1], \
        f"{dev.path}: a 512-byte O_DIRECT write below the {declared.geometry.logical_block_size}-byte sector: {dd}"
    for mode, rule, evidence in (("buffered", "buffered-io", "assumed"), ("direct", "below-logical-sector", "physics")):
        v = verdicts[mode]
        assert v["allowed"] is False and v["error"].startswith("ORA-01378"), (mode, v)
        assert v["claims"]["allowed"]["evidence"] == evidence and rule in v["claims"]["allowed"]["rests_on"], \
            (mode, v["claims"]["allowed"])


def test_raw_writes_refuse_the_root_disk(lab_guests):
    guest = next(iter(lab_guests.values()))
    root = guest.check_output("findmnt -n -o SOURCE /")
    disk = "/dev/" + guest.check_output("lsblk -n -d -o PKNAME", root).strip()
    result = guest.run("sudo -n redo-writer run --target", disk, "--blocksize", 4096, "--transactions", 1)
    assert result.rc == 2
    assert "refusing to write" in result.stderr and "mounted" in result.stderr
