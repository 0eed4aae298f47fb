"""One O_DIRECT (+O_DSYNC) write of N bytes at an offset of a block device, and what the kernel said.

Standard library only: copied into lab guests and run as `python3 odirect.py DEVICE --bytes N`.
It writes raw to the device, so it refuses a device that is mounted (or has mounted partitions),
holds a partition table or a filesystem/RAID/LVM signature, or backs the root filesystem, unless
--force. Prints one JSON object: {"device", "bytes", "offset", "ok", "errno", "error"}.
Exit 0 when the write was attempted (whatever its result), 2 when refused or on bad usage.
"""

from __future__ import annotations

import argparse
import errno
import json
import mmap
import os
import stat
import subprocess
import sys


def _lsblk(device: str, columns: str) -> list[str]:
    out = subprocess.run(["lsblk", "-n", "-o", columns, device], capture_output=True, text=True)
    return [line.strip() for line in out.stdout.splitlines()]


def safety_problem(device: str) -> str | None:
    """Why writing raw to `device` would destroy something, or None."""
    mounts = [m for m in _lsblk(device, "MOUNTPOINTS") if m]
    if mounts:
        return f"{device} (or a partition of it) is mounted on {', '.join(mounts)}"
    root = subprocess.run(["findmnt", "-n", "-o", "SOURCE", "/"], capture_output=True, text=True).stdout.strip()
    if root:
        parents = subprocess.run(["lsblk", "-n", "-s", "-o", "PATH", root], capture_output=True, text=True).stdout
        if os.path.realpath(device) in {os.path.realpath(p.strip()) for p in parents.split() if p.strip()}:
            return f"{device} backs the root filesystem"
    probe = subprocess.run(["wipefs", "-n", "-O", "TYPE", "--noheadings", device], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"cannot check {device} for signatures: {probe.stderr.strip()}"
    signatures = sorted({s.strip() for s in probe.stdout.splitlines() if s.strip()})
    if signatures:
        return f"{device} holds a partition table or signature ({', '.join(signatures)})"
    return None


def write(device: str, nbytes: int, offset: int) -> dict:
    result = {"device": device, "bytes": nbytes, "offset": offset, "ok": False, "errno": None, "error": None}
    buf = mmap.mmap(-1, max(nbytes, mmap.PAGESIZE))  # page-aligned, as O_DIRECT wants
    buf.write(b"\xa5" * nbytes)
    fd = os.open(device, os.O_WRONLY | os.O_DIRECT | os.O_DSYNC | os.O_CLOEXEC)
    try:
        written = os.pwritev(fd, [memoryview(buf)[:nbytes]], offset)
        result["ok"] = written == nbytes
        if written != nbytes:
            result["error"] = f"short write: {written} of {nbytes} bytes"
    except OSError as e:
        result["errno"] = errno.errorcode.get(e.errno, str(e.errno))
        result["error"] = f"pwrite: {e.strerror}"
    finally:
        os.close(fd)
        buf.close()
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="odirect", description=__doc__.splitlines()[0])
    p.add_argument("device")
    p.add_argument("--bytes", type=int, required=True, help="size of the one write")
    p.add_argument("--offset", type=int, default=0)
    p.add_argument("--force", action="store_true", help="write even if the device looks in use")
    args = p.parse_args(argv)
    try:
        mode = os.stat(args.device).st_mode
    except OSError as e:
        print(f"odirect: {args.device}: {e.strerror}", file=sys.stderr)
        return 2
    if not stat.S_ISBLK(mode):
        print(f"odirect: {args.device} is not a block device", file=sys.stderr)
        return 2
    if args.bytes <= 0 or args.offset < 0:
        print(f"odirect: --bytes {args.bytes} / --offset {args.offset}: expected a positive size and offset >= 0",
              file=sys.stderr)
        return 2
    if not args.force:
        problem = safety_problem(args.device)
        if problem:
            print(f"odirect: refusing to write: {problem}; use --force to write anyway", file=sys.stderr)
            return 2
    print(json.dumps(write(args.device, args.bytes, args.offset)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
