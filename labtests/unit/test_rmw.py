"""Read-modify-write disks on the host side (sectorlab/rmw.py): their plan and the reading of QEMU's
trace (their hot-plug over QMP: test_hotplug.py). The lab scenario (labtests/test_read_modify_write.py)
checks them on a running QEMU; these pin the parts that need none."""

from __future__ import annotations

import dataclasses

import pytest

from labtests.unit import records
from sectorlab import labdef, libvirt, rmw
from sectorlab.errors import SectorlabError
from sectorlab.lab.record import DiskRecord, RmwNodes

VOLUME = "/pool/lab1-rmw-512e.qcow2"


def _disk(name: str, **extra) -> DiskRecord:
    return records.disk(**{"name": name, "bus": "virtio", "serial": f"s-{name}", "volume": f"/pool/{name}.qcow2",
                           "logical_block_size": 512, "physical_block_size": 4096, "rmw": True, "rmw_read_iops": 120,
                           **extra})


def test_plan_takes_slots_down_from_0x16_in_name_order():
    disks = [_disk("b"), _disk("plain", rmw=False), _disk("a"), _disk("n", bus="nvme", rmw=False)]
    assert [(d.name, dev, addr) for dev, addr, d in rmw.plan(disks)] == [("a", "rmw0", "0x16"), ("b", "rmw1", "0x15")]
    with pytest.raises(SectorlabError, match="at most"):
        rmw.plan([_disk(f"r{i}") for i in range(labdef.MAX_RMW_PER_VM + 1)])


def _open(addr: str, filename: str, driver: str) -> str:
    return f'19361@1795388060.5:bdrv_open_common bs {addr} filename "{filename}" flags 0x2002 format_name "{driver}"'


def _read(addr: str, offset: int, size: int) -> str:
    return f"19361@1795388061.0:bdrv_co_preadv_part bs {addr} offset {offset} bytes {size} flags 0x0"


LOG = "\n".join([
    "2026-11-22 10:00:00.000+0000: starting up libvirt version: 9.0.0",
    _open("0xaaa", VOLUME, "throttle"), _open("0xbbb", "", "blkdebug"),  # a QEMU run that is over
    "2026-11-22 10:05:00.000+0000: starting up libvirt version: 9.0.0",
    _open("0x100", VOLUME, "file"), _open("0x200", VOLUME, "qcow2"),
    _open("0x300", "/pool/other.qcow2", "throttle"), _open("0x400", "", "blkdebug"),
    _open("0x500", VOLUME, "throttle"), _open("0x600", "", "blkdebug"),
])


def test_node_addresses_come_from_the_running_qemu_only():
    assert rmw.node_addresses(LOG, VOLUME) == {"throttle": "0x500", "blkdebug": "0x600"}
    with pytest.raises(SectorlabError, match="no trace of the read-modify-write nodes over /pool/none.qcow2"):
        rmw.node_addresses(LOG, "/pool/none.qcow2")
    before_restart = LOG.rsplit("starting up", 1)[0] + "starting up again\n"
    with pytest.raises(SectorlabError, match="since QEMU started"):
        rmw.node_addresses(before_restart, VOLUME)


def test_count_reads_tells_padding_reads_from_the_guests():
    nodes = {"throttle": "0x500", "blkdebug": "0x600"}
    lines = [
        _read("0x500", 8192, 4096),  # a padding read: throttle only
        _read("0x600", 1536, 512), _read("0x500", 0, 4096),  # a guest read, padded to its sector
        _read("0x500", 12288, 8192),  # a merged head-and-tail padding read over two sectors
        _read("0x600", 65536, 65536), _read("0x200", 65536, 65536), _read("0x500", 65536, 65536),  # guest; qcow2
        _read("0x500", 20480 + 512, 4096),  # not on a physical sector boundary
        "some other line",
    ]
    reads = rmw.count_reads(lines, nodes, 4096)
    assert (reads.rmw, reads.guest, dict(reads.sizes), reads.unaligned) == (3, 2, {4096: 2, 8192: 1}, 1)
    assert reads.as_dict() == {"rmw_reads": 3, "guest_reads": 2, "rmw_read_sizes": {4096: 2, 8192: 1},
                               "rmw_reads_unaligned": 1}


def test_counting_needs_the_hosts_own_libvirt():
    with pytest.raises(SectorlabError, match="dom runs on qemu\\+ssh://h/system, whose log sectorlab does not reach"):
        rmw.domain_log("qemu+ssh://h/system", "dom")
    assert str(rmw.domain_log("qemu:///system", "dom")) == "/var/log/libvirt/qemu/dom.log"


def _domain_files(tmp_path, monkeypatch, log_text: str, pid: int = 4242):
    monkeypatch.setattr(rmw, "LOG_DIR", tmp_path)
    monkeypatch.setattr(rmw, "RUN_DIR", tmp_path)
    (tmp_path / "dom.pid").write_text(f"{pid}\n")
    log = tmp_path / "dom.log"
    log.write_text(log_text)
    return log


def test_trace_nodes_keeps_what_names_the_running_qemu_and_reads_the_rest(tmp_path, monkeypatch):
    _domain_files(tmp_path, monkeypatch, LOG + "\n")
    disks = [_disk("a", volume=VOLUME), _disk("b", rmw_nodes={"qemu_pid": 4242, "throttle": "0x1", "blkdebug": "0x2"}),
             _disk("plain", rmw=False)]
    assert rmw.trace_nodes("qemu:///system", "dom", disks) == {
        "a": RmwNodes(qemu_pid=4242, throttle="0x500", blkdebug="0x600"),
        "b": RmwNodes(qemu_pid=4242, throttle="0x1", blkdebug="0x2")}
    stale = [_disk("a", volume=VOLUME, rmw_nodes={"qemu_pid": 1, "throttle": "0x1", "blkdebug": "0x2"})]
    assert rmw.trace_nodes("qemu:///system", "dom", stale)["a"].throttle == "0x500"
    with pytest.raises(SectorlabError, match="no trace of the read-modify-write nodes"):
        rmw.trace_nodes("qemu:///system", "dom", [_disk("c")], timeout=0)


def _traced_window(tmp_path, monkeypatch, written_during):
    """A ReadTrace whose window sees `written_during(log)` happen; returns the trace."""
    log = _domain_files(tmp_path, monkeypatch, LOG + "\n" + _read("0x500", 0, 4096) + "\n")  # before the window
    states = []

    def fake_qmp(host, domain, execute, **arguments):
        states.append(arguments["enable"])
        if not arguments["enable"]:
            written_during(log)

    monkeypatch.setattr(libvirt.LibvirtHost, "qmp", fake_qmp)
    with rmw.ReadTrace("qemu:///system", "dom", settle_s=0.01) as trace:
        pass
    assert states == [True, False]
    return trace


DISK = _disk("rmw-512e", volume=VOLUME, rmw_nodes={"qemu_pid": 4242, "throttle": "0x500", "blkdebug": "0x600"})


def test_read_trace_reads_only_the_window(tmp_path, monkeypatch):
    def two_reads(log):
        with log.open("a") as f:
            f.write(_read("0x500", 4096, 4096) + "\n" + _read("0x500", 8192, 4096) + "\n")

    trace = _traced_window(tmp_path, monkeypatch, two_reads)
    assert trace.reads(DISK).rmw == 2
    with pytest.raises(SectorlabError, match="its QEMU is not the one lab-up plugged disk rmw-512e into"):
        trace.reads(dataclasses.replace(DISK, rmw_nodes=dataclasses.replace(DISK.rmw_nodes, qemu_pid=1)))
    with pytest.raises(SectorlabError, match="disk plain has no read-modify-write nodes in lab.json"):
        trace.reads(_disk("plain", rmw=False))


def test_read_trace_follows_the_log_through_a_rotation(tmp_path, monkeypatch):
    def rotate_mid_window(log):  # as virtlogd does at max_size: .log -> .log.0, a new .log
        with log.open("a") as f:
            f.write(_read("0x500", 4096, 4096) + "\n")
        log.rename(log.with_name("dom.log.0"))
        log.write_text(_read("0x500", 8192, 4096) + "\n" + _read("0x500", 12288, 4096) + "\n")

    assert _traced_window(tmp_path, monkeypatch, rotate_mid_window).reads(DISK).rmw == 3
