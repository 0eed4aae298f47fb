"""Oracle's AWR report in its text layout (awrrpt_*.txt, as `@?/rdbms/admin/awrrpt` writes it with
report_type text), read for what the log writer sees. Every figure keeps the line it came from (its
number in the file and its text), so that whatever the lab derives from it can name its source.

What is read, by section (a section starts at its title line and ends at the next title this module
knows):
- the header: `Elapsed:` and `DB Time:` in minutes (and `DB CPU:` where the release prints it);
- `Load Profile`: each row's label and its per-second and per-transaction values (`Redo size
  (bytes):` from 12c, `Redo size:` before; `Transactions:` has a per-second value only);
- `Top ... Events` (`Top 5 Timed Events` to `Top 10 Foreground Events by Total Wait Time`): each
  event's waits, total wait time (s) and average wait (ms); `DB CPU`'s time;
- `Foreground Wait Events` and `Background Wait Events`: each event's waits, % time-outs, total wait
  time (s), average wait (ms) and waits per transaction;
- `Instance Activity Stats` (from 12c also `Key ...` and `Other Instance Activity Stats`): each
  statistic's total, per second and per transaction.

A table's cells are read by where its columns are (the line of dashes under its header), so that a
blank cell (a %Time-outs of none, a CPU row's waits) is no other column's value; an average wait may
carry its unit (us or ms).

A value may carry Oracle's K, M, G or T (23.2K is 23,200) and thousands separators. A number that
does not parse, a report in which no section this module knows is found (another layout, another
language), or a row cut short, is one line naming the file, the line and what was expected."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from .. import inputs
from ..errors import UsageError

AWR_TEXT_MAX = 64 * inputs.MIB  # an AWR text report of a busy hour is a few MiB

_NUMBER = re.compile(r"^-?[\d,]*\.?\d+[KMGT]?$")
_SCALE = {"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_TIME = re.compile(r"^([\d,]*\.?\d+)(us|ms)$")  # an average wait with its unit: in ms


@dataclass(frozen=True)
class Figure:
    """One number of the report and where it is: the file's line number (from 1) and its text."""
    value: float
    line: int
    text: str

    def source(self) -> str:
        return f"line {self.line}: {self.text.strip()!r}"


@dataclass
class Report:
    path: str
    elapsed_min: Figure | None = None
    db_time_min: Figure | None = None
    db_cpu_min: Figure | None = None
    load_profile: dict[str, tuple[Figure | None, Figure | None]] = field(default_factory=dict)
    top_events: dict[str, dict[str, Figure]] = field(default_factory=dict)
    foreground: dict[str, dict[str, Figure]] = field(default_factory=dict)
    background: dict[str, dict[str, Figure]] = field(default_factory=dict)
    activity: dict[str, dict[str, Figure]] = field(default_factory=dict)

    def need(self, what: str, figure: Figure | None) -> Figure:
        """`figure`, or one line saying the report lacks it."""
        if figure is None:
            raise UsageError(f"{self.path}: the AWR report has no {what}; expected Oracle's text layout "
                             f"(awrrpt_*.txt) with it")
        return figure


def number(token: str, path: str, line: int, text: str) -> float:
    """A report's number: thousands separators and Oracle's K, M, G and T taken; anything else is
    one line naming the file and the line."""
    t = token.strip()
    if not _NUMBER.match(t):
        raise UsageError(f"{path}: line {line}: {t!r} is not a number (expected digits with ',' separators, "
                         f"a '.', and K, M, G or T): {text.strip()[:120]!r}")
    scale = _SCALE.get(t[-1], 1.0)
    return float(t.rstrip("KMGT").replace(",", "")) * scale


def _is_number(token: str) -> bool:
    return bool(_NUMBER.match(token))


# The section titles this module reads, by the start of their title line.
_SECTIONS = (("Load Profile", "load"), ("Top ", "top"), ("Foreground Wait Events", "foreground"),
             ("Background Wait Events", "background"), ("Instance Activity Stats", "activity"),
             ("Key Instance Activity Stats", "activity"), ("Other Instance Activity Stats", "activity"))
# Sections whose end this module knows though it does not read them: a title line starts one.
_OTHER = ("Instance Efficiency", "Time Model Statistics", "Wait Classes", "Wait Event Histogram",
          "Operating System Statistics", "Service Statistics", "SQL ordered by", "Host CPU",
          "Instance CPU", "Memory Statistics", "Cache Sizes", "Shared Pool Statistics", "IOStat",
          "Foreground Wait Class", "Background Wait Class", "Instance Activity Stats - Absolute Values",
          "Instance Activity Stats - Thread Activity")
# The columns after a row's name, by section, in Oracle's order; a cell may be blank (a DB CPU row
# has no waits, a %Time-outs of none is blank: "Value of null is truly 0"), read where its column is
# (the underline under the header gives each column's span). The wait class ends a Top Events row.
_COLUMNS = {"top": ("waits", "time_s", "avg_ms", "pct", "wait_class"),
            "foreground": ("waits", "timeouts_pct", "time_s", "avg_ms", "waits_per_txn", "pct"),
            "background": ("waits", "timeouts_pct", "time_s", "avg_ms", "waits_per_txn", "pct"),
            "activity": ("total", "per_second", "per_txn")}
_EVENT_NEEDS = ("waits", "time_s")  # an event row without them is cut short
_CPU_ROWS = ("DB CPU", "CPU time")  # the CPU row of the Top Events (10g names it CPU time)


def _section(line: str) -> str | None:
    stripped = line.rstrip()
    if not stripped or stripped[0] in " -~>":
        return None
    for start in _OTHER:
        if stripped.startswith(start):
            return "other"
    for start, name in _SECTIONS:
        if stripped.startswith(start) and (name != "top" or "Events" in stripped):
            return name
    return None


def _spans(line: str) -> list[tuple[int, int]] | None:
    """The columns' spans under a table's header ('----- ---- ...'), or None for another line."""
    stripped = line.strip()
    if not stripped or set(stripped) - {"-", " "} or " " not in stripped:
        return None
    return [(m.start(), m.end()) for m in re.finditer(r"-+", line)]


def _cells(line: str, spans: list[tuple[int, int]]) -> tuple[str, list[str]]:
    """A row's name (its first column) and its other cells by position: each from the end of the
    column before it to the end of its own (numbers are right-aligned); the last one to the line's end."""
    name = line[:spans[0][1]].strip()
    cells = []
    for i in range(1, len(spans)):
        end = spans[i][1] if i < len(spans) - 1 else len(line)
        cells.append(line[spans[i - 1][1]:end].strip())
    return name, cells


def _value(cell: str, column: str, path: str, n: int, line: str) -> Figure | None:
    if not cell or column == "wait_class":
        return None
    if column == "avg_ms" and (t := _TIME.match(cell)):
        return Figure(float(t.group(1).replace(",", "")) / (1000.0 if t.group(2) == "us" else 1.0), n, line)
    return Figure(number(cell, path, n, line), n, line)


def parse_text(text: str, path: str) -> Report:
    """An AWR report's text (Oracle's text layout) as a Report; one line when it is not one."""
    report = Report(path)
    section, spans = None, None
    for n, line in enumerate(text.splitlines(), 1):
        found = _section(line)
        if found:
            section, spans = found, None
            continue
        if (under := _spans(line)) is not None:
            spans = under
            continue
        stripped = line.strip()
        if not stripped or stripped[0] in "-~>" or set(stripped) <= set("-~ "):
            continue
        head = re.match(r"^(Elapsed|DB Time|DB time|DB CPU):\s+([\d,.]+[KMGT]?)\s+\(mins\)", stripped)
        if head and section is None:
            name = {"Elapsed": "elapsed_min", "DB Time": "db_time_min", "DB time": "db_time_min",
                    "DB CPU": "db_cpu_min"}[head.group(1)]
            setattr(report, name, Figure(number(head.group(2), path, n, line), n, line))
            continue
        if section == "load" and ":" in stripped:
            label, rest = stripped.split(":", 1)
            values = rest.split()
            if values and all(_is_number(v) for v in values):
                figures = [Figure(number(v, path, n, line), n, line) for v in values[:2]]
                report.load_profile[label.strip()] = (figures[0], figures[1] if len(figures) > 1 else None)
        elif section in _COLUMNS and spans is None:
            continue  # the table's header, above the line of dashes that marks its columns
        elif section in _COLUMNS:
            label, cells = _cells(line, spans)
            columns = _COLUMNS[section]
            if not label or label.startswith(("Event", "Statistic")) or not any(cells):
                continue
            row = {c: f for c, cell in zip(columns, cells) if (f := _value(cell, c, path, n, line)) is not None}
            if section == "activity":
                if len(row) == len(columns):
                    report.activity[label] = row
                continue
            table = {"top": report.top_events, "foreground": report.foreground,
                     "background": report.background}[section]
            if label in _CPU_ROWS:
                if "time_s" in row:
                    table["DB CPU"] = {"time_s": row["time_s"]}
                continue
            missing = [c for c in _EVENT_NEEDS if c not in row]
            if missing:
                raise UsageError(f"{path}: line {n}: the event {label!r} has no {' and no '.join(missing)} in its "
                                 f"columns: {stripped[:120]!r}")
            table[label] = row
    if not (report.load_profile or report.top_events or report.activity):
        raise UsageError(f"{path}: no Load Profile, Top Events or Instance Activity Stats found: expected an AWR "
                         f"report in Oracle's text layout (awrrpt_*.txt, in English)")
    return report


def read(path: Path | str) -> Report:
    """An AWR text report read within its bound (inputs.read_text) and parsed."""
    return parse_text(inputs.read_text(path, "AWR report", AWR_TEXT_MAX), str(path))
