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

import json
import math
import os
import re
import stat
from pathlib import Path

import tomllib

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


def check_regular(path: Path | str, what: str, limit: int) -> int:
    """The size of `path` after checking that it is a regular file of at most `limit` bytes.
    Opened without blocking, so that a FIFO nobody writes to is refused instead of waited on."""
    fd, st = open_regular(path, what, limit=limit)
    os.close(fd)
    return st.st_size


def kind_of(st: os.stat_result) -> str:
    """What a file is, as a refusal names it ("a FIFO", "a directory", ...)."""
    mode = st.st_mode
    return ("a regular file" if stat.S_ISREG(mode) else "a directory" if stat.S_ISDIR(mode)
            else "a character device" if stat.S_ISCHR(mode) else "a block device" if stat.S_ISBLK(mode)
            else "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a symbolic link" if stat.S_ISLNK(mode) else "not a regular file")


def open_regular(path: Path | str, what: str, expected: str = "a file",
                 limit: int | None = None) -> tuple[int, os.stat_result]:
    """(descriptor, its fstat) of `path` opened without blocking (a FIFO nobody writes to is refused,
    not waited on), when it is a regular file (of at most `limit` bytes); one UsageError line
    naming the file, what it is and `expected` otherwise. The caller closes the descriptor."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise UsageError(f"{what} {path}: {e.strerror}; expected {expected}") from e
    except ValueError as e:  # a NUL byte in the name
        raise UsageError(f"{what} {str(path)!r}: {e}; expected a file name") from e
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UsageError(f"{what} {path}: {kind_of(st)}; expected "
                             + ("a regular file" if expected == "a file" else f"{expected}, a regular file"))
        if limit is not None:
            _checked(path, st, what, limit)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def _checked(path: Path, st: os.stat_result, what: str, limit: int) -> int:
    if not stat.S_ISREG(st.st_mode):
        raise UsageError(f"{what} {path}: {kind_of(st)}; expected a regular file")
    if st.st_size > limit:
        raise UsageError(f"{what} {path}: {_size(st.st_size)}, over the {_size(limit)} such a file can be; "
                         f"expected a smaller file (is it the right one?)")
    return st.st_size


def read_text(path: Path | str, what: str, limit: int) -> str:
    """The text of `path`, read within `limit` bytes: one UsageError line for a file that is not
    regular, is larger (also one that grows while it is read) or is not UTF-8."""
    path = Path(path)
    fd, _ = open_regular(path, what, limit=limit)
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


# TOML nested deeper than this is refused before it is parsed: the project's own files nest three
# deep ([[vm.disk]], [geometry.NAME]); Python's tomllib takes time quadratic in a dotted key's
# length (a key of 50,000 parts: 38 s) and recurses once per nested array or inline table.
TOML_MAX_DEPTH = 16


# What _toml_depth reads; every other character leaves the nesting as it is.
_TOML_SIGNIFICANT = re.compile(r"[\n#\"'=.\[\]{},]")
_TOML_BASIC_END = {'"': re.compile(r'"|\\'), '"""': re.compile(r'"""|\\')}


def _string_end(text: str, quote: str, j: int) -> int:
    """Where the string that opened with `quote` just before `j` closes (len(text) or past it
    when it does not): a literal string at its next quote, a basic one past its escapes."""
    n = len(text)
    if quote[0] == "'":
        k = text.find(quote, j)
        return n if k < 0 else k
    end = _TOML_BASIC_END[quote]
    while j < n:
        m = end.search(text, j)
        if m is None:
            return n
        if m.group() == quote:
            return m.start()
        j = m.start() + 2  # a backslash and the character it escapes
    return j


def _toml_depth(text: str) -> tuple[int, int]:
    """(deepest nesting, its line) of TOML text: the parts of a dotted key or table header, or the
    arrays and inline tables open at once, counted outside strings and comments. Only the
    characters that can change it are visited (a file of 16 MiB in well under a second)."""
    deepest, where = 0, 1
    depth = 0  # arrays and inline tables open
    line, parts, in_key = 1, 1, True
    i, n = 0, len(text)
    while i < n:
        m = _TOML_SIGNIFICANT.search(text, i)
        j = n if m is None else m.start()
        if j > i:  # characters that change nothing stand at the level the last one left
            level = max(parts, depth)
            if level > deepest:
                deepest, where = level, line
        if m is None:
            break
        i = j
        c = text[i]
        if c == "\n":
            line += 1
            parts, in_key = 1, depth == 0
        elif c == "#":
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        elif c in "\"'":
            quote = text[i:i + 3] if text[i:i + 3] in ('"""', "'''") else c
            j = _string_end(text, quote, i + len(quote))
            line += text.count("\n", i, j)
            i = j + len(quote)
            continue
        elif c == "=":
            in_key = False
        elif c == "." and in_key:
            parts += 1
        elif c in "[{":
            depth += 1
            if c == "{":
                in_key = True
        elif c in "]}":
            depth = max(depth - 1, 0)
        elif c == "," and depth:
            in_key = True
        level = max(parts, depth)
        if level > deepest:
            deepest, where = level, line
        i += 1
    return deepest, where


def toml(text: str, what: str, path: Path | str) -> dict:
    """TOML text as a table, or one UsageError line: not TOML, or nested past TOML_MAX_DEPTH."""
    deepest, line = _toml_depth(text)
    if deepest > TOML_MAX_DEPTH:
        raise UsageError(f"{what} {path}: line {line} nests {deepest} deep (dotted keys, arrays or inline "
                         f"tables); expected at most {TOML_MAX_DEPTH}")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{what} {path}: not valid TOML: {e}") from e
    except RecursionError as e:  # pragma: no cover (the depth check comes first)
        raise UsageError(f"{what} {path}: nested too deep to read; expected at most {TOML_MAX_DEPTH}") from e


def read_toml(path: Path | str, what: str, limit: int) -> dict:
    """read_text, then toml()."""
    return toml(read_text(path, what, limit), what, path)


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number JSON has; expected a finite number")


class _TwiceError(ValueError):
    pass


def _once(pairs: list) -> dict:
    """A JSON object whose keys are each given once (Python's json keeps the last of two silently:
    a record that says two things is refused, not read as one of them)."""
    table = dict(pairs)
    if len(table) != len(pairs):
        seen = set()
        twice = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise _TwiceError(f"the key {twice!r} is given twice in one object")
    return table


def json_value(text: str, what: str, path: Path | str, expected: str = "JSON as sectorlab writes it"):
    """JSON text as Python values, or one UsageError line: not JSON, NaN or Infinity (which
    Python's json takes by default), a key given twice in one object, a number beyond a float's
    range, or nested past 64."""
    try:
        value = json.loads(text, parse_constant=_no_constant, object_pairs_hook=_once)
    except _TwiceError as e:
        raise UsageError(f"{what} {path}: {e}; expected {expected}") from e
    except RecursionError as e:
        raise UsageError(f"{what} {path}: nested too deep; expected {expected}") from e
    except ValueError as e:
        raise UsageError(f"{what} {path}: not JSON ({e}); expected {expected}") from e
    problem = _problem(value, 64)
    if problem:
        raise UsageError(f"{what} {path}: {problem}; expected {expected}")
    return value


def _problem(value, limit: int) -> str | None:
    """What makes parsed JSON unusable: a number beyond a float's range (1e400 parses as inf) or
    nesting deeper than `limit`; None when it has neither."""
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, float) and not math.isfinite(v):
            return "a number beyond a float's range"
        if isinstance(v, (dict, list)):
            if d > limit:
                return f"nested over {limit} deep"
            stack.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return None


def read_json(path: Path | str, what: str, limit: int, expected: str = "JSON as sectorlab writes it"):
    """read_text, then json_value()."""
    return json_value(read_text(path, what, limit), what, path, expected)


def finite(where: str, key: str, value, low: float, high: float, *, low_open: bool = False) -> float:
    """A number from a file or command line, refused in one line unless it is finite and in
    [low, high] (or (low, high] with low_open)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UsageError(f"{where}: {key} = {value!r}: expected a number")
    ok = math.isfinite(value) and (value > low if low_open else value >= low) and value <= high
    if not ok:
        raise UsageError(f"{where}: {key} = {value!r}: expected a finite number "
                         f"{'above' if low_open else 'from'} {low:g} {'up to' if low_open else 'to'} {high:g}")
    return float(value)
