"""Files a user hands to sectorlab, read within bounds: a regular file, not over a size fixed per
kind of input, UTF-8. Anything else is one line naming the file, what it is and what was expected,
before more than the bound is read (an endless device such as /dev/zero, a FIFO that never ends or
a huge file would otherwise be read whole into memory; on a lab host the kernel's OOM killer may
then pick a running guest instead of sectorlab).

The bounds, and why each is what it is (docs/reliability.md lists them):
- a lab definition or bench preset: 1 MiB. The largest in the project is under 2 KiB; a lab at
  every bound of labdef (16 VMs of 31 disks, 496 disks, each with from-host's comment line) is
  108 KiB.
- a collector file (scripts/collect-host-geometry): 64 MiB. Its size grows with the server:
  lsblk's entry of a disk is 177 bytes (labtests/unit/data/from-host/collector-db-server.json)
  and `nvme id-ns -o json` of a namespace 1,048 bytes indented (QEMU's, 8 LBA formats), 4,297 with
  its LBA formats grown to NVMe's 64, so 64 MiB holds over 15,000 NVMe namespaces, more than any
  one server has.
- bench.json: 16 MiB; one entry per run: a bench of the default preset with 4 runs wrote
  8,828 bytes (about 2.2 KiB a run), so the bound holds some 7,000 runs.
- a redo-writer JSON report: 16 MiB (its latency summaries are a few KiB).
- a redo-writer events CSV: 256 MiB, about 7.5 million events at the 36 bytes a line measured
  (one 15 s run of the default preset wrote 90,790 lines, 3.3 MB); the report and `sectorlab
  plot` hold every event in memory, 112 bytes each (tracemalloc), so about 0.8 GiB at the bound.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .errors import UsageError

KIB = 1 << 10
MIB = 1 << 20
LAB_DEFINITION_MAX = 1 * MIB
COLLECTOR_MAX = 64 * MIB
BENCH_JSON_MAX = 16 * MIB
REPORT_JSON_MAX = 16 * MIB
EVENTS_CSV_MAX = 256 * MIB


def _size(n: int) -> str:
    if n >= MIB:
        return f"{n / MIB:,.1f} MiB"
    return f"{n / KIB:,.1f} KiB" if n >= KIB else f"{n} bytes"


def _open(path: Path, what: str) -> int:
    try:
        return os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise UsageError(f"{what} {path}: {e.strerror}; expected a file") from e
    except ValueError as e:  # a NUL byte in the name
        raise UsageError(f"{what} {str(path)!r}: {e}; expected a file name") from e


def check_regular(path: Path | str, what: str, limit: int) -> int:
    """The size of `path` after checking that it is a regular file of at most `limit` bytes.
    Opened without blocking, so that a FIFO nobody writes to is refused instead of waited on."""
    path = Path(path)
    fd = _open(path, what)
    try:
        st = os.fstat(fd)
    finally:
        os.close(fd)
    return _checked(path, st, what, limit)


def _checked(path: Path, st: os.stat_result, what: str, limit: int) -> int:
    if not stat.S_ISREG(st.st_mode):
        kind = ("a directory" if stat.S_ISDIR(st.st_mode) else "a character device" if stat.S_ISCHR(st.st_mode)
                else "a block device" if stat.S_ISBLK(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode)
                else "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file")
        raise UsageError(f"{what} {path}: {kind}; expected a regular file")
    if st.st_size > limit:
        raise UsageError(f"{what} {path}: {_size(st.st_size)}, over the {_size(limit)} such a file can be; "
                         f"expected a smaller file (is it the right one?)")
    return st.st_size


def read_text(path: Path | str, what: str, limit: int) -> str:
    """The text of `path`, read within `limit` bytes: one UsageError line for a file that is not
    regular, is larger (also one that grows while it is read) or is not UTF-8."""
    path = Path(path)
    fd = _open(path, what)
    try:
        _checked(path, os.fstat(fd), what, limit)
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise UsageError(f"{what} {path}: grew past {_size(limit)} while it was read; expected a file that "
                         f"is not being written")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise UsageError(f"{what} {path}: not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start}, line "
                         f"{line}); expected a text file") from e


def inside(directory: Path | str, relative: str, what: str) -> Path:
    """`directory`/`relative`, which must stay inside `directory` once every symbolic link and
    '..' is resolved: a results directory names its own files, never others."""
    base = Path(directory).resolve()
    if not isinstance(relative, str) or not relative or "\0" in relative or Path(relative).is_absolute():
        raise UsageError(f"{what} {relative!r}: expected a file name relative to {directory}")
    target = (base / relative).resolve()
    if target != base and base not in target.parents:
        raise UsageError(f"{what} {relative!r} leads out of {directory} (to {target}); a results directory "
                         f"names only files inside it")
    return target
