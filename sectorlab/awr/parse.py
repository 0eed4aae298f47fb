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
- `Instance Activity Stats`: each statistic's total, per second and per transaction.

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
             ("Background Wait Events", "background"), ("Instance Activity Stats", "activity"))
# Sections whose end this module knows though it does not read them: a title line starts one.
_OTHER = ("Instance Efficiency", "Time Model Statistics", "Wait Classes", "Wait Event Histogram",
          "Operating System Statistics", "Service Statistics", "SQL ordered by", "Host CPU",
          "Instance CPU", "Memory Statistics", "Cache Sizes", "Shared Pool Statistics", "IOStat",
          "Foreground Wait Class", "Background Wait Class", "Other Instance Activity Stats",
          "Instance Activity Stats - Absolute Values", "Instance Activity Stats - Thread Activity")
# The columns after an event's name, by section (Oracle's order; a DB CPU row has no waits).
_EVENT_COLUMNS = {"top": ("waits", "time_s", "avg_ms"),
                  "foreground": ("waits", "timeouts_pct", "time_s", "avg_ms", "waits_per_txn"),
                  "background": ("waits", "timeouts_pct", "time_s", "avg_ms", "waits_per_txn")}


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


def _split_row(line: str, path: str, n: int) -> tuple[str, list[str]]:
    """A row's label (the words before its first number) and its numbers, up to the words that may
    end it (an event's wait class); a word between two numbers is a number that does not parse: one
    line naming it."""
    tokens = line.split()
    for i, t in enumerate(tokens):
        if _is_number(t):
            rest = tokens[i:]
            end = next((j for j, w in enumerate(rest) if not _is_number(w)), len(rest))
            if any(_is_number(w) for w in rest[end:]):
                number(rest[end], path, n, line)  # raises: a word among the numbers
            return " ".join(tokens[:i]), rest[:end]
    return " ".join(tokens), []


def parse_text(text: str, path: str) -> Report:
    """An AWR report's text (Oracle's text layout) as a Report; one line when it is not one."""
    report = Report(path)
    section = None
    for n, line in enumerate(text.splitlines(), 1):
        found = _section(line)
        if found:
            section = found
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
        elif section in _EVENT_COLUMNS:
            label, numbers = _split_row(stripped, path, n)
            if not label or not numbers or label.startswith(("Event", "Statistic")):
                continue
            table = {"top": report.top_events, "foreground": report.foreground,
                     "background": report.background}[section]
            if label == "DB CPU":
                table[label] = {"time_s": Figure(number(numbers[0], path, n, line), n, line)}
                continue
            columns = _EVENT_COLUMNS[section]
            if len(numbers) < len(columns) - (1 if section != "top" else 0):
                raise UsageError(f"{path}: line {n}: the event {label!r} has {len(numbers)} number(s), fewer than "
                                 f"the {', '.join(columns)} of its section: {stripped[:120]!r}")
            table[label] = {c: Figure(number(v, path, n, line), n, line) for c, v in zip(columns, numbers)}
        elif section == "activity":
            label, values = _split_row(stripped, path, n)
            if label and len(values) >= 3 and not label.startswith("Statistic"):
                report.activity[label] = {c: Figure(number(v, path, n, line), n, line)
                                          for c, v in zip(("total", "per_second", "per_txn"), values)}
    if not (report.load_profile or report.top_events or report.activity):
        raise UsageError(f"{path}: no Load Profile, Top Events or Instance Activity Stats found: expected an AWR "
                         f"report in Oracle's text layout (awrrpt_*.txt, in English)")
    return report


def read(path: Path | str) -> Report:
    """An AWR text report read within its bound (inputs.read_text) and parsed."""
    return parse_text(inputs.read_text(path, "AWR report", AWR_TEXT_MAX), str(path))
