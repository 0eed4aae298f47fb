"""A power cut in a lab (labs/power-cut.toml, make test-crash): the guest writes checked redo at
BLOCKSIZE 512 to a 512e disk without power-loss protection of its read-modify-write; its QEMU is
killed mid-run (never a clean shutdown); the disk is set to what the cut left (crash/lab.py, by the
power-loss rules on the disk's trace); the guest boots again and redo-writer verify in it recovers
the log from the disk. Its verdict must be the host's on the same state, byte for byte what the cut
left: the guest reads through the whole path (virtio, QEMU, NBD, the model) the disk a cut would
leave, the sectors the cut left unreadable answered with EIO by the model."""

from __future__ import annotations

import json
import random
import time

import pytest

from sectorlab import lab as lab_mod
from sectorlab import redowriter
from sectorlab.crash import devicepath as crash
from sectorlab.crash import labcut as crashlab
from sectorlab.devices import trace
from sectorlab.lab import modelled

pytestmark = pytest.mark.crash

BLOCKSIZE, REDO, MIN_WRITES = 512, 512, 60


def _device(record, guest, disk) -> str:
    found = lab_mod.probe(guest, record.disks_of(disk.vm))["disks"].get(disk.serial)
    if found is None:
        pytest.fail(f"{disk.vm}: disk {disk.name} (serial {disk.serial}) is not in the guest", pytrace=False)
    return found.path


def test_a_killed_guest_recovers_from_its_disk_what_the_cut_left(lab_state, lab_guests, record_property):
    disk = next(d for d in lab_state.disks.values() if d.name == "redo-512e")  # its databases have theirs
    guest = lab_guests[disk.vm]
    path = _device(lab_state, guest, disk)
    server = modelled.server(lab_state.lab, disk.name)
    before = trace.end(server.trace)
    writer = (f"setsid nohup redo-writer run --format checked --target {path} --blocksize {BLOCKSIZE} --sessions 2 "
              f"--redo-per-txn {REDO} --rate 200 --arrival poisson --seed 3 --log-size {32 << 20} --duration 300 "
              f"--output json > /var/tmp/redo.json 2>&1 < /dev/null &")
    assert guest.run("sudo -n sh -c", writer).ok
    deadline = time.monotonic() + 120
    while sum(r.op == "write" for r in trace.read(server.trace, since=before)) < MIN_WRITES:
        if time.monotonic() > deadline:
            said = guest.run("tail -c 600 /var/tmp/redo.json; pgrep -a redo-writer").stdout
            pytest.fail(f"the guest's redo-writer made too few writes in 120 s; it said: {said}", pytrace=False)
        time.sleep(0.5)
    rng = random.Random(20261127)
    time.sleep(rng.uniform(0, 1))
    at = crashlab.kill(lab_state, disk.vm)
    guest.close()
    cut = crashlab.apply(lab_state, disk, at, BLOCKSIZE, rng)
    try:
        host = crash.verify(cut.image, list(cut.state.unreadable), BLOCKSIZE, cut.acknowledged, REDO)
        crashlab.start(lab_state, disk.vm)
        guest.wait_until_up(300)
        path = _device(lab_state, guest, disk)
        # the unreadable sectors are not named to the guest's verify: the model answers them with EIO
        got = guest.run("sudo -n", *redowriter.verify_args(path, BLOCKSIZE, cut.log.extent, cut.acknowledged, REDO))
        assert got.rc == 0, got.stderr
        inside = json.loads(got.stdout)
        # Whatever the cut drew, a medium error in the middle of the recovered redo: the physical
        # sector of block k made unreadable in the model; the guest, its cache dropped, must stop there.
        k = inside["blocks_recovered"] // 2
        sector = (k * BLOCKSIZE // 4096 * 4096, 4096)
        server.set_unreadable([*cut.state.unreadable, sector])
        time.sleep(0.2)  # the model reads the file again on its next request after 50 ms
        assert guest.run("sudo -n blockdev --flushbufs", path).ok
        again = guest.run("sudo -n", *redowriter.verify_args(path, BLOCKSIZE, cut.log.extent, cut.acknowledged, REDO))
        assert again.rc == 0, again.stderr
        stopped = json.loads(again.stdout)
        host_stopped = crash.verify(cut.image, [*cut.state.unreadable, sector], BLOCKSIZE, cut.acknowledged, REDO)
    finally:
        cut.image.unlink(missing_ok=True)
    said = (f"cut after {len(cut.log.writes)} log writes: {cut.state.writes_durable} durable, {cut.state.writes_torn} "
            f"torn, {cut.state.writes_lost} lost, {cut.state.units_unreadable} units unreadable; acknowledged to "
            f"{cut.acknowledged}; the guest recovered to {inside['recovered_to']} ({inside['end_reason']}), "
            f"{inside['lost_commits']} acknowledged commits lost, {inside['torn_blocks']} torn blocks")
    record_property("power_cut", said)
    print(said)
    assert len(cut.log.writes) >= MIN_WRITES and cut.state.writes_durable > 0, said
    assert {k: inside[k] for k in crash.VERDICT_KEYS} == {k: host[k] for k in crash.VERDICT_KEYS}, (inside, host)
    assert inside["lost_bytes"] == max(0, cut.acknowledged - inside["recovered_to"]) and \
        inside["corrupt_undetected"] == 0, said
    assert {k: stopped[k] for k in crash.VERDICT_KEYS} == {k: host_stopped[k] for k in crash.VERDICT_KEYS}, \
        (stopped, host_stopped)
    assert stopped["end_reason"] == "unreadable" and stopped["unreadable_blocks"] >= 4096 // BLOCKSIZE and \
        stopped["blocks_recovered"] <= sector[0] // BLOCKSIZE, stopped
