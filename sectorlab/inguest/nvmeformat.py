#!/usr/bin/python3
"""reformat-nvme, the DBA's first step for a new redo disk as seed 000 walks through it on a P3700:
reformat an NVMe namespace to another LBA data size (`nvme format --lbaf=N`), wait for the kernel
to show the new sector size (keeping the namespace's write cache setting, which the kernel would
take from the controller again), and end with what the guest now sees and the redo BLOCKSIZE the
rules engine (rules.py) picks for it. provision-redo-disk (redodisk.py) is the next step.

Also the one parser of `nvme id-ns -o json` (parse_lba_formats): the host's sectorlab.guestdisks and
sectorlab.fromhost read nvme-cli's output with it too.

Standard library only: installed into the lab's guest images as /usr/local/lib/sectorlab/nvmeformat.py
beside blockdev.py and rules.py, byte-compiled, and run by the launcher /usr/local/sbin/reformat-nvme
(`python3 nvmeformat.py ARGS` works too). It also runs on a database server with python3, nvme-cli,
util-linux and udev. Exit status: see blockdev.py (0 done, 1 failed part-way, 2 refused).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from dataclasses import dataclass

try:
    from . import blockdev, rules
except ImportError:  # flat in a guest (see __init__.py)
    import blockdev
    import rules

COMMAND = "reformat-nvme"
# How long the kernel may take to show a reformatted namespace's new sector size (measured ~1 s).
RESCAN_WAIT_S = 10.0
NVME_NAMESPACE = re.compile(r"nvme(\d+)n(\d+)")


def nvme_transport(disk: blockdev.Disk) -> str:
    """'pcie', 'tcp', 'rdma', 'fc' or 'loop', from the controller (or, for a multipath head, its paths)."""
    device = os.path.realpath(os.path.join(disk.sysfs, "device"))
    candidates = [device] + sorted(os.path.join(device, e) for e in os.listdir(device) if re.fullmatch(r"nvme\d+", e))
    for ctrl in candidates:
        try:
            with open(os.path.join(ctrl, "transport")) as f:
                return f.read().strip()
        except OSError:
            continue
    raise blockdev.Failed(f"{disk.path}: cannot tell its NVMe transport (no 'transport' under {device})")


def nvme_controller(disk: blockdev.Disk) -> str:
    return "/dev/" + os.path.basename(os.path.realpath(os.path.join(disk.sysfs, "device")))


class UnexpectedOutput(blockdev.Failed):
    """A tool printed something this module cannot read; `why` says what was wrong with it."""

    def __init__(self, command: str, why: str, text: str):
        self.why = why
        super().__init__(f"unexpected output of '{command}': {why}: {text.strip()[:200]!r}")


def _whole(value, lo: int, hi: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and lo <= value <= hi


def parse_lba_formats(text: str, command: str) -> tuple[int, list[dict]]:
    """(index in use, [{"index", "data_size", "metadata_size"}] of the formats the namespace lists)
    from `nvme id-ns -o json`. The one parser of that output: sectorlab.guestdisks wraps it. Whatever
    the text, it returns or raises UnexpectedOutput naming the command (fuzzed in the unit tests)."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise UnexpectedOutput(command, f"not JSON ({e})", text) from e
    if not isinstance(data, dict) or "flbas" not in data or not isinstance(data.get("lbafs"), list):
        raise UnexpectedOutput(command, "no 'flbas' and 'lbafs'", text)
    nlbaf, flbas = data.get("nlbaf", len(data["lbafs"]) - 1), data["flbas"]
    if not _whole(nlbaf, 0, 63) or not _whole(flbas, 0, 255):
        raise UnexpectedOutput(command, f"nlbaf {nlbaf!r} and flbas {flbas!r}: expected small whole numbers",
                               text)
    formats = []
    for i, f in enumerate(data["lbafs"][:nlbaf + 1]):
        # LBADS is a power of two's exponent (2^9 = 512 B and up; 0: a format not in use).
        if not isinstance(f, dict) or not _whole(f.get("ds"), 0, 31) or not _whole(f.get("ms", 0), 0, 1 << 16):
            raise UnexpectedOutput(command, f"LBA format {i} is {f!r}: expected 'ds' (0-31) and 'ms' whole "
                                            f"numbers", text)
        formats.append({"index": i, "data_size": 1 << f["ds"], "metadata_size": f.get("ms", 0)})
    in_use = flbas & 0x0F
    if in_use >= len(formats):
        raise UnexpectedOutput(command, f"flbas selects LBA format {in_use} of {len(formats)}", text)
    return in_use, formats


def lba_formats(disk: blockdev.Disk) -> tuple[int, list[dict]]:
    cmd = ["nvme", "id-ns", disk.path, "-o", "json"]
    return parse_lba_formats(blockdev.run(cmd).stdout, " ".join(cmd))


def describe_formats(formats: list[dict]) -> str:
    return ", ".join(f"{f['index']}: {f['data_size']} B" + (f" + {f['metadata_size']} B metadata"
                                                               if f["metadata_size"] else "") for f in formats)


@dataclass
class Reformatted:
    device: str
    controller: str
    lba_format: int
    lbads: int
    logical_block_size: int
    physical_block_size: int
    previous_lba_format: int
    previous_logical_block_size: int
    changed: bool
    rescan: str  # "kernel" (it saw the change by itself), "ns-rescan", or "" (nothing to do)
    redo_blocksize: int


def reformat(args, prog: str) -> Reformatted:
    disk = blockdev.whole_disk(args.device)
    if not NVME_NAMESPACE.fullmatch(disk.name):
        kind = ("virtio disk" if disk.name.startswith("vd") else "SCSI disk" if disk.name.startswith("sd")
                else "not NVMe")
        raise blockdev.Refused(f"{disk.path} is not an NVMe namespace ({kind}): expected /dev/nvmeXnY on a PCIe "
                               f"NVMe controller ('nvme list' lists them)")
    transport = nvme_transport(disk)
    if transport != "pcie":
        raise blockdev.Refused(f"{disk.path} is an NVMe/{transport.upper()} namespace: its sector sizes come from "
                               f"the target's backing disk, which decides them; change that disk (in the lab: the "
                               f"nvme-tcp disk's geometry in the lab definition), not the namespace")
    blockdev.refuse_if_in_use(disk, prog)
    in_use, formats = lba_formats(disk)
    wanted = [f for f in formats if f["data_size"] == args.lbads and f["metadata_size"] == 0]
    if not wanted:
        raise blockdev.Refused(f"{disk.path} lists no LBA format with {args.lbads}-byte data and no metadata; it "
                               f"lists {describe_formats(formats)}")
    target = wanted[0]["index"]
    controller = nvme_controller(disk)
    previous = formats[in_use]
    if in_use == target:
        return Reformatted(disk.path, controller, target, args.lbads, disk.logical_block_size,
                           disk.physical_block_size, in_use, previous["data_size"], False, "",
                           rules.evaluate(disk.logical_block_size, disk.physical_block_size).default_blocksize)
    found = blockdev.signatures(disk.path)
    if (found or blockdev.partitions_of(disk)) and not args.force:
        what = ", ".join(s.get("type", "?") for s in found) or "partitions"
        raise blockdev.Refused(f"{disk.path} holds {what}: a format erases the namespace; --force formats it anyway")
    for part in blockdev.partitions_of(disk):  # the kernel must not keep partitions of the old format
        blockdev.run(["wipefs", "--all", "--quiet", f"/dev/{os.path.basename(part)}"], check=False)
    if found:
        blockdev.run(["wipefs", "--all", "--quiet", disk.path], check=False)
    cache = _write_cache(disk)
    blockdev.run(["nvme", "format", disk.path, f"--lbaf={target}", "--ses=0", "--force"])
    how = _see_new_size(disk, args.lbads, target, controller)
    blockdev.run(["udevadm", "settle", "--timeout=10"], check=False)
    _write_cache(disk, cache)
    logical = int(disk.attr("queue/logical_block_size"))
    physical = int(disk.attr("queue/physical_block_size"))
    now, _ = lba_formats(disk)
    if now != target:
        raise blockdev.Failed(f"{disk.path}: after the format the namespace uses LBA format {now}, not {target}")
    return Reformatted(disk.path, controller, target, args.lbads, logical, physical, in_use,
                       previous["data_size"], True, how, rules.evaluate(logical, physical).default_blocksize)


def _write_cache(disk: blockdev.Disk, keep: str | None = None) -> str | None:
    """The namespace's queue/write_cache (None where there is none), after putting `keep` back: when
    the kernel revalidates a formatted namespace it takes the write cache from the controller again,
    and a setting the host made (the lab's write through for a device without a volatile cache, an
    administrator's own) would be lost."""
    path = os.path.join(disk.sysfs, "queue", "write_cache")
    try:
        with open(path) as f:
            now = f.read().strip()
        if keep and now != keep:
            with open(path, "w") as f:
                f.write(keep)
            now = keep
    except FileNotFoundError:
        return None
    return now


def _see_new_size(disk: blockdev.Disk, lbads: int, target: int, controller: str) -> str:
    """Wait for the kernel to show the formatted namespace's new sector size, with an `nvme ns-rescan`
    if it does not by itself: how it came to show it ("kernel" or "ns-rescan")."""
    if _wait_logical(disk, lbads, RESCAN_WAIT_S):
        return "kernel"
    blockdev.run(["nvme", "ns-rescan", controller])
    if not _wait_logical(disk, lbads, RESCAN_WAIT_S):
        raise blockdev.Failed(f"{disk.path}: formatted to LBA format {target} ({lbads} B), but the kernel still "
                              f"shows {disk.attr('queue/logical_block_size')}-byte sectors after 'nvme ns-rescan "
                              f"{controller}'; a controller reset (echo 1 > /sys/class/nvme/"
                              f"{os.path.basename(controller)}/reset_controller) or a reboot should show it")
    return "ns-rescan"


def _wait_logical(disk: blockdev.Disk, size: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while int(disk.attr("queue/logical_block_size")) != size:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def print_reformatted(r: Reformatted) -> None:
    if not r.changed:
        print(f"{r.device}: already LBA format {r.lba_format} ({r.lbads} B); nothing to do")
    else:
        seen = "the kernel saw it at once" if r.rescan == "kernel" else "after 'nvme ns-rescan'"
        print(f"{r.device}: LBA format {r.previous_lba_format} ({r.previous_logical_block_size} B) -> "
              f"{r.lba_format} ({r.lbads} B); {seen}")
    print(f"{r.device}: sectors {r.logical_block_size}/{r.physical_block_size} (logical/physical); "
          f"redo BLOCKSIZE {r.redo_blocksize}")


# ---------------------------------------------------------------------------------------------
# Command line

def _lbads(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of bytes (expected 512 or 4096)") from None
    if value < 512 or value & (value - 1):
        raise argparse.ArgumentTypeError(f"{value} is not a power of two of at least 512 (expected 512 or 4096)")
    return value


def reformat_parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description="Switch an NVMe namespace to the LBA format with this "
                                "data size and no metadata (nvme format; erases the namespace).")
    p.add_argument("device", help="the namespace, e.g. /dev/nvme0n1")
    p.add_argument("--lbads", type=_lbads, required=True, help="LBA data size in bytes: 512 or 4096")
    p.add_argument("--force", action="store_true", help="format a namespace that holds a partition table or signature")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    return p


def main(argv: list[str] | None = None) -> int:
    return blockdev.run_tool(COMMAND, sys.argv[1:] if argv is None else argv, reformat_parser, reformat,
                             print_reformatted)


if __name__ == "__main__":
    sys.exit(main())
