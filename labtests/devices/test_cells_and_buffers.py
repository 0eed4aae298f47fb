"""Two device behaviours the seeds' figures turn on, in a lab (labs/behaviours.toml), proven from
the host's traces of the guest's writes:

- seed 003's 512e flash with and without a DRAM write buffer (`nvme-512e-dram` against
  `nvme-512e`, one geometry): 512-byte appends read their 4 KiB unit from NAND at every write
  without the buffer, and once per unit with it;
- seed 002's Exadata cell with smart flash logging (`exadata-cell-flashlog`, and
  `exadata-cell-flashlog-busy` whose cache answers in 1,000 us): every write goes to the cell
  disk's controller cache and to the flash log at once and completes at the first. What the lab's
  model decided for each of the guest's requests is what the model decides for the same requests in
  virtual time (devicemodel/simulate replaying the disk's whole trace): the served disk is the
  composed profile, flash log included; where the flash log was first, the guest had its reply at
  the flash log's time, while the disk was still busy.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from labtests.support.requires import BUFFER_PAIR, FLASH_LOG_CELL, buffer_pair_of, flash_log_cells_of, require
from sectorlab.analysis import devicerows
from sectorlab.devices import profiles, trace
from sectorlab.guest import disks as guestdisks
from sectorlab.lab import modelled

pytestmark = [pytest.mark.lab, pytest.mark.behaviours]

APPENDS = 64        # 512-byte writes, one after the other: 8 units of 4 KiB
BASE = 1 << 20      # past the partition table's sectors
RUN_S = 3
RUN_WRITES = 2_000  # or RUN_S, whichever comes first: a fast drive writes 2,000 in about a second
UNIT = 4096         # the profiles' write unit (nvme-512e)

# O_DIRECT|O_DSYNC writes of SIZE bytes, one after the other from BASE.
WRITER = """import mmap, os, sys
path, size, n, base = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
fd = os.open(path, os.O_WRONLY | os.O_DIRECT | os.O_DSYNC)
buf = memoryview(mmap.mmap(-1, 4096))
for i in range(n):
    os.pwrite(fd, buf[:size], base + i * size)
os.close(fd)
"""


def _partial_units(r: trace.Request) -> int:
    """The units of UNIT bytes the request covers only in part (its first and its last, or its one)."""
    first, last = r.offset // UNIT, (r.offset + r.length - 1) // UNIT
    head, tail = r.offset % UNIT != 0, (r.offset + r.length) % UNIT != 0
    return int(head or tail) if first == last else int(head) + int(tail)


def _path(guest_devices, disk) -> str:
    dev = guest_devices[disk.vm].get(disk.serial)
    if dev is None:
        pytest.fail(f"{disk.vm}: declared disk {disk.name} (serial {disk.serial}) is not in the guest", pytrace=False)
    return dev.path


def _served(lab_state, disk) -> list[trace.Request]:
    """Every request the model of `disk` has served since it started, in arrival order."""
    return sorted(trace.read(modelled.server(lab_state.lab, disk.name).trace), key=lambda r: r.t_us)


def _fresh_region(lab_state, disk, length: int) -> int:
    """An offset from which `length` bytes cover no unit the model has been written since it
    started: its write buffer cannot hold them (the lab stays up between runs, and so does the
    model's state)."""
    written = {u for r in _served(lab_state, disk) if r.op in ("write", "zero") and r.length
               for u in range(r.offset // UNIT, (r.offset + r.length - 1) // UNIT + 1)}
    units = -(-length // UNIT)
    for base in range(BASE, int(disk.size_bytes) - length, 1 << 20):
        if not written & set(range(base // UNIT, base // UNIT + units)):
            return base
    pytest.fail(f"{disk.name}: every MiB of the disk has been written since its model started: bring the lab "
                f"down and up for a fresh model", pytrace=False)


def _traced(lab_state, disk, command, run_id: str) -> list[trace.Request]:
    """The write requests the model of `disk` served while `command` ran (nothing read meanwhile)."""
    window = devicerows.Window(lab_state.lab, [disk])
    command()
    window.check_alive(run_id)
    rows = window.requests(disk.name)
    assert not [r for r in rows if r.op == "read"], f"{run_id}: the model served reads during a write-only run"
    return [r for r in rows if r.op == "write"]


@pytest.fixture(scope="module")
def buffered(lab_state, lab_guests, guest_devices):
    vm, dram, nand = require(buffer_pair_of(lab_state), BUFFER_PAIR)
    guest = lab_guests[vm]
    paths = {d.name: _path(guest_devices, d) for d in (dram, nand)}
    guestdisks.unwatch(guest, list(paths.values()))  # no re-probe's reads inside a run
    return guest, dram, nand, paths


def test_a_dram_buffer_reads_each_unit_once_for_512_byte_appends(lab_state, buffered, record_property):
    """64 appends of 512 bytes (8 units of 4 KiB): without the buffer the model reads the unit
    before every one of them (each leaves part of its unit unwritten); with it only before the first
    write into each unit, the other 7 merging in DRAM; and the model's service time is the write
    alone for a merged append, the write and a NAND read otherwise."""
    guest, dram, nand, paths = buffered
    got = {}
    for d in (nand, dram):
        base = _fresh_region(lab_state, d, APPENDS * 512)
        got[d.name] = _traced(lab_state, d, lambda d=d, base=base: guest.check_output(
            "sudo -n python3 -c", WRITER, paths[d.name], 512, APPENDS, base), f"appends-{d.name}")
    plain, merged = got[nand.name], got[dram.name]
    units = APPENDS * 512 // 4096
    said = (f"{APPENDS} appends of 512 B: {nand.name} ({nand.device}) read {sum(r.unit_reads for r in plain)} units, "
            f"merged {sum(r.buffer_hits for r in plain)}; {dram.name} ({dram.device}) read "
            f"{sum(r.unit_reads for r in merged)}, merged {sum(r.buffer_hits for r in merged)}")
    record_property("write_buffer_appends", said)
    print(said)
    assert len(plain) == len(merged) == APPENDS and {r.length for r in plain + merged} == {512}, said
    assert [r.unit_reads for r in plain] == [1] * APPENDS and not any(r.buffer_hits for r in plain), said
    assert [r.unit_reads for r in merged] == ([1] + [0] * 7) * units, said
    assert [r.buffer_hits for r in merged] == ([0] + [1] * 7) * units, said
    params = profiles.get(dram.device).params  # a merged append costs the write and its transfer, nothing read
    alone_us = float(params["write"].removeprefix("fixed:")) + 512 / float(params["write-mbps"])
    assert all(r.service_us == pytest.approx(alone_us, abs=0.002) for r in merged if r.buffer_hits), said
    assert all(r.service_us > alone_us for r in plain), said


def test_redo_at_blocksize_512_reads_nand_far_less_behind_a_dram_buffer(lab_state, buffered, record_property):
    """redo-writer at BLOCKSIZE 512 (one session, 512 B a commit) on both drives: without the buffer
    the model reads every unit a log write leaves in part; with it each such unit is read or merged,
    and read at most once per unit the run wrote (the buffer holds the units written last, the log
    is written in order); at BLOCKSIZE 4096 neither reads any."""
    guest, dram, nand, paths = buffered
    counts = {}
    for d in (nand, dram):
        for bs in (512, 4096):
            out = {}

            def redo(d=d, bs=bs, out=out):
                out["r"] = guest.run("sudo -n redo-writer run --target", paths[d.name], "--duration", RUN_S,
                                     "--transactions", RUN_WRITES, "--blocksize", bs, "--sessions", 1,
                                     "--redo-per-txn", 512, "--log-size",
                                     64 << 20, "--output", "json", "--force", timeout=RUN_S + 120)
            writes = _traced(lab_state, d, redo, f"redo-{d.name}-{bs}")
            assert out["r"].rc == 0, f"redo-writer on {d.name} at {bs}: exit {out['r'].rc}: {out['r'].stderr.strip()}"
            report = json.loads(out["r"].stdout)
            counts[(d.name, bs)] = (len(writes), sum(r.unit_reads for r in writes), sum(r.buffer_hits for r in writes),
                                    sum(_partial_units(r) for r in writes),
                                    len({u for r in writes for u in range(r.offset // UNIT,
                                                                          (r.offset + r.length - 1) // UNIT + 1)}),
                                    report["log_file_parallel_write"]["p50_us"])
    said = "; ".join(f"{name}@{bs}: {n} writes leaving {partial} units in part ({units} units written), {reads} unit "
                     f"reads, {hits} merged, guest lfpw p50 {p50:.0f} us"
                     for (name, bs), (n, reads, hits, partial, units, p50) in counts.items())
    record_property("write_buffer_redo", said)
    print(said)
    n, reads, hits, partial, _, _ = counts[(nand.name, 512)]
    assert n > 0 and reads == partial >= n and hits == 0, said
    n, reads, hits, partial, units, _ = counts[(dram.name, 512)]
    assert n > 0 and hits > 0 and reads + hits == partial and reads <= units, said
    assert counts[(nand.name, 4096)][1] == counts[(dram.name, 4096)][1] == 0, said


def test_a_cell_races_its_disk_cache_and_its_flash_log_as_the_model_decides(lab_state, lab_guests, guest_devices,
                                                                           record_property):
    """The guest's 512-byte and 4 KiB writes to each cell: every write and flush of its trace says
    which medium completed first (reads none), and replaying the disk's whole trace (every request
    since the model started, at its arrival times) through the model in virtual time gives the same
    winner and the same service times of both media for each request: the lab serves the composed
    profile, its flash log included. No reply came before its medium's time (the model sleeps until
    it). Where the flash log was first (on the busy cell, by 830-910 us: 85 or 170 us against the
    cache's 1,000), its replies were sent at the flash log's time, not held for the disk's: judged
    against the host's lateness measured in the same run, on the same disk (its reads, and the
    writes and flushes the disk answered: replies whose medium no race decides), the flash-first
    replies' median lateness is under that reference's median plus half the smallest margin. A
    model that waited for the disk would make every one late by its margin (830 us or more) on a
    quiet host and a busy one alike; a busy host makes both medians later together. How many
    replies came before the disk's time is said, not judged: that count is the host's."""
    cells = require(flash_log_cells_of(lab_state), FLASH_LOG_CELL)
    said, judged = [], []
    for cell in cells:
        guest = lab_guests[cell.vm]
        path = _path(guest_devices, cell)
        guestdisks.unwatch(guest, [path])
        for size in (512, 4096):
            _traced(lab_state, cell, lambda size=size, guest=guest, path=path: guest.check_output(
                "sudo -n python3 -c", WRITER, path, size, APPENDS,
                BASE + (APPENDS * 4096 if size == 512 else 0)), f"{cell.name}-{size}")
        # The trace has a line per request as it completes; the model took them in arrival order.
        served = _served(lab_state, cell)
        writes = [r for r in served if r.op == "write"]
        t0 = served[0].t_us
        requests = "".join(f"{r.t_us - t0:.3f} {r.op} {r.offset} {r.length}{' fua' if r.fua else ''}\n"
                           for r in served)
        proc = profiles.simulate(modelled.params(cell.device, cell.logical_block_size, cell.physical_block_size),
                                 requests)
        assert proc.returncode == 0, proc.stderr
        replayed = trace.parse(proc.stdout)
        flash_first = [r for r in writes if r.flashlog_first == 1]
        # the reply, from arrival: the flash log's queue and its served time, against the disk's answer
        margins = [r.queue_us + r.service_us - r.flashlog_queue_us - r.flashlog_service_us for r in flash_first]
        replied = [r for r in flash_first if r.flashlog_queue_us + r.served_us < r.queue_us + r.service_us]
        # the host's lateness: a reply's time past its medium's, measured in this run; the reference
        # is the replies whose medium no race decides (reads, and what the disk answered)
        late = sorted(r.served_us - r.answer_service_us for r in writes)
        reference = [r.served_us - r.answer_service_us for r in served if r.flashlog_first != 1]
        held = [r.served_us - r.answer_service_us for r in flash_first]
        if flash_first:
            judged.append(cell.name)
        ahead = (f" (by at least {min(margins):.0f} us; the guest had {len(replied)} replies before the disk's; "
                 f"their lateness {np.median(held):.0f} us, median)" if flash_first else "")
        said.append(f"{cell.name} ({cell.device}): {len(writes)} writes served, the flash log first for "
                    f"{len(flash_first)}{ahead}, the disk's cache for {len(writes) - len(flash_first)}; the replies "
                    f"{late[len(late) // 2]:.0f} us after their medium's time (median; maximum {late[-1]:.0f}); the "
                    f"{len(reference)} replies no race decides {np.median(reference):.0f} us after theirs (median); "
                    f"replayed: "
                    f"{sum(r.flashlog_first == 1 for r in replayed if r.op == 'write')} and "
                    f"{sum(r.flashlog_first == 0 for r in replayed if r.op == 'write')}")
        assert len(writes) >= 2 * APPENDS, said[-1]
        assert all(r.flashlog_first in (0, 1) for r in served if r.op in ("write", "flush")), said[-1]
        assert all(r.flashlog_first == -1 for r in served if r.op == "read"), said[-1]
        assert [r.flashlog_first for r in replayed] == [r.flashlog_first for r in served], said[-1]
        for column in ("queue_us", "service_us", "flashlog_queue_us", "flashlog_service_us"):
            assert [getattr(r, column) for r in replayed] == pytest.approx(
                [getattr(r, column) for r in served], abs=0.002, nan_ok=True), f"{column}: {said[-1]}"
        assert all(r.flashlog_service_us > 0 for r in writes), f"the flash log wrote every write: {said[-1]}"
        assert late[0] >= -0.002, f"a reply came before its medium's time: {said[-1]}"
        if flash_first:
            assert min(margins) > 0, f"the flash log was first and the disk's answer was not later: {said[-1]}"
            assert np.median(held) < np.median(reference) + min(margins) / 2, \
                f"the flash log's replies were held toward the disk's time: {said[-1]}"
    record_property("flash_log_cells", "; ".join(said))
    print("; ".join(said))
    # the busy cell's profile puts its flash log first: some cell must have been judged above
    assert judged, f"no cell's flash log was first, so no reply at its time was judged: {'; '.join(said)}"
