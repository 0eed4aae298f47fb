"""Oracle's AWR report, in its text layout (awrrpt_*.txt, as `@?/rdbms/admin/awrrpt` writes it with
report_type text) or its HTML one (report_type html, the default), read for what the log writer sees.
Every figure keeps the line it came from (its number in the file and its text: in HTML the row's
cells), so that whatever the lab derives from it can name its source.

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

A text table's cells are read by where its columns are (the line of dashes under its header), so
that a blank cell (a %Time-outs of none, a CPU row's waits) is no other column's value; an average
wait may carry its unit (us or ms). In HTML each table says what it is in its `summary` attribute
("This table displays load profile", "... Foreground Wait Events and their wait statistics", "...
background wait events statistics", "... top 10 wait events by total wait time", "... Key Instance
activity statistics", "... other instance activity stats"), and a cell's column is named by the
table's header row (`Waits`, `Total Wait Time (s)`, `Avg wait (ms)`, ...); the header figures are
the snapshot table's `Elapsed:` and `DB Time:` rows. The HTML layout here is the one Oracle's
reports show in their published summaries and headers; the text layout is the better checked.

A value may carry Oracle's K, M, G or T (23.2K is 23,200) and thousands separators. A number that
does not parse, a report in which no section this module knows is found (another layout, another
language), or a row cut short, is one line naming the file, the line and what was expected."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
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
    # quoted in part (a web page's excerpt, excerpt.py): what a whole report prints may be missing,
    # and load.py derives it from what is there, saying how
    partial: bool = False

    def need(self, what: str, figure: Figure | None) -> Figure:
        """`figure`, or one line saying the report lacks it."""
        if figure is None:
            raise self.lacks(what)
        return figure

    def lacks(self, what: str) -> UsageError:
        """The one line saying the report lacks `what` (to raise)."""
        return UsageError(f"{self.path}: the AWR report has no {what}; expected an AWR report "
                          f"(Oracle's text or HTML layout, or its tables quoted from a web page) with it")


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
            setattr(report, _HEAD_ROWS[head.group(1) + ":"], Figure(number(head.group(2), path, n, line), n, line))
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
            if not label or label.startswith(("Event", "Statistic")) or not any(cells):
                continue
            _put(report, section, label, dict(zip(_COLUMNS[section], cells)), n, line)
    return _found(report)


def _put(report: Report, section: str, label: str, cells: dict[str, str], n: int, line: str) -> None:
    """A table row's cells (by column) into the report: an event's, the CPU row's time, a statistic's."""
    row = {c: f for c, cell in cells.items() if (f := _value(cell, c, report.path, n, line)) is not None}
    if section == "activity":
        if all(c in row for c in _COLUMNS["activity"]):
            report.activity[label] = row
        return
    table = {"top": report.top_events, "foreground": report.foreground, "background": report.background}[section]
    if label in _CPU_ROWS:
        if "time_s" in row:
            table["DB CPU"] = {"time_s": row["time_s"]}
        return
    missing = [c for c in _EVENT_NEEDS if c not in row]
    if missing:
        raise UsageError(f"{report.path}: line {n}: the event {label!r} has no {' and no '.join(missing)} in its "
                         f"columns: {line.strip()[:120]!r}")
    table[label] = row


class NotAReport(UsageError):
    """Nothing of an AWR report's was found in the file."""


def _found(report: Report) -> Report:
    if not (report.load_profile or report.top_events or report.activity):
        raise NotAReport(f"{report.path}: no Load Profile, Top Events or Instance Activity Stats found: expected an "
                         f"AWR report in Oracle's text or HTML layout (awrrpt_*.txt or .html, in English), or its "
                         f"tables as a web page quotes them")
    return report


class _Tables(HTMLParser):
    """Every <table> of an HTML page: its summary and its rows, each row its line in the file, its
    cells' texts (white space and &#160; collapsed) and whether they are all header cells. A cell or
    row left open (HTML lets `</td>` and `</tr>` be left out) ends where the next one starts or its
    table ends; a table inside a cell is a table of its own, and the outer row goes on after it."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tables: list[tuple[str, list[tuple[int, list[str], bool]]]] = []
        # per table being read, innermost last: [its index, the open row (line, cells, header flags), the open cell]
        self._open: list[list] = []
        self.line0 = 0  # the line before the text fed since reset()

    def line(self) -> int:
        return self.line0 + self.getpos()[0]

    def _end_cell(self) -> None:
        top = self._open[-1]
        if top[2] is not None and top[1] is not None:
            top[1][1].append(" ".join("".join(top[2]).replace("\xa0", " ").split()))
        top[2] = None

    def _end_row(self) -> None:
        self._end_cell()
        top = self._open[-1]
        if top[1] is not None and top[1][1]:
            self.tables[top[0]][1].append((top[1][0], top[1][1], all(top[1][2])))
        top[1] = None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append((dict(attrs).get("summary") or "", []))
            self._open.append([len(self.tables) - 1, None, None])
        elif not self._open:
            return
        elif tag == "tr":
            self._end_row()
            self._open[-1][1] = (self.line(), [], [])
        elif tag in ("td", "th"):
            self._end_cell()
            top = self._open[-1]
            if top[1] is None:  # a cell outside any row starts one
                top[1] = (self.line(), [], [])
            top[1][2].append(tag == "th")
            top[2] = []

    def handle_data(self, data):
        if self._open and self._open[-1][2] is not None:
            self._open[-1][2].append(data)

    def handle_endtag(self, tag):
        if not self._open:
            return
        if tag in ("td", "th"):
            self._end_cell()
        elif tag == "tr":
            self._end_row()
        elif tag == "table":
            self._end_row()
            self._open.pop()

    def close(self):
        super().close()
        while self._open:  # a table the file leaves open ends with it
            self._end_row()
            self._open.pop()


def _html_section(summary: str) -> str | None:
    """The section a table's summary attribute names, or None for one this module does not read."""
    s = " ".join(summary.lower().split())
    if "absolute" in s or "thread" in s:
        return None
    for words, name in (("load profile", "load"), ("foreground wait events", "foreground"),
                        ("background wait events", "background"), ("instance activity", "activity")):
        if words in s:
            return name
    return "top" if "top" in s and "event" in s else None


def _html_column(header: str, section: str) -> str | None:
    """The column a header cell names (Oracle's headers vary by release), or None for one not read."""
    h = " ".join(header.lower().split())
    if section == "activity":
        return {"total": "total", "per second": "per_second", "per trans": "per_txn"}.get(h)
    if h == "waits":
        return "waits"
    if "time" in h and "out" in h:
        return "timeouts_pct"  # %Time -outs
    if h.startswith("total wait time") or h in ("time(s)", "time (s)"):
        return "time_s"
    if h.startswith(("avg wait", "wait avg")):  # Avg wait (ms), Wait Avg(ms), Avg Wait (cells with their unit);
        return "avg_ms"  # not ASH's Avg Active Sessions
    if "/txn" in h or "per txn" in h:
        return "waits_per_txn"
    if h.startswith("%") and "time" in h:
        return "pct"  # % DB time, % bg time
    return "wait_class" if h == "wait class" else None


# The header's rows in minutes, in both layouts (the text's "   Elapsed:     4.95 (mins)", the HTML's
# snapshot table's "Elapsed:" row), and the Report field each gives.
_HEAD_ROWS = {"Elapsed:": "elapsed_min", "DB Time:": "db_time_min", "DB time:": "db_time_min", "DB CPU:": "db_cpu_min"}
_MINS = re.compile(r"^([\d,.]+[KMGT]?) ?\(mins\)$")


# A '<' that no '>' closes before the next '<', inside a table: not Oracle's HTML, and what makes
# Python's HTMLParser take time quadratic in the text before 3.11.13 (CVE-2025-6069).
_UNCLOSED = re.compile(r"<[^<>]*<")
_TABLE = re.compile(r"<table\b", re.IGNORECASE)


def _table_spans(text: str, path: str) -> list[tuple[int, str]]:
    """The page's tables as (the line each starts on, its text up to its </table>): the parser reads
    only these, each refused in one line where a tag in it is left unclosed."""
    spans, at, line, counted = [], 0, 1, 0
    lower = text.lower()
    while (m := _TABLE.search(text, at)) is not None:
        end = lower.find("</table>", m.end())
        end = len(text) if end < 0 else end + len("</table>")
        line += text.count("\n", counted, m.start())  # the lines before it, each counted once
        counted = m.start()
        if (bad := _UNCLOSED.search(text, m.start(), end)) is not None:
            raise UsageError(f"{path}: line {line + text.count(chr(10), m.start(), bad.start())}: a '<' that no '>' "
                             f"closes before the next '<' in a table: expected an AWR report in Oracle's HTML layout")
        spans.append((line, text[m.start():end]))
        at = end
    return spans


def _row_text(cells: list[str]) -> str:
    """A row as a figure's source says it: its cells that are not blank, between bars."""
    return " | ".join(c for c in cells if c)


def parse_html(text: str, path: str) -> Report:
    """An AWR report's HTML (Oracle's HTML layout) as a Report; one line when it is not one. Its
    tables are read (tables inside tables too); the header's minutes come from the first table not
    of a section this module reads that has them (the snapshot table)."""
    tables = _Tables()
    for first, span in _table_spans(text, path):
        tables.reset()
        tables.line0 = first - 1  # the span's lines keep their numbers in the file
        try:
            tables.feed(span)
            tables.close()
        except Exception as e:  # noqa: BLE001  (HTMLParser's own refusals: a marked section it does not know)
            raise UsageError(f"{path}: line {tables.line()}: not HTML that Python's parser reads ({e}): "
                             f"expected an AWR report in Oracle's HTML layout") from None
    report = Report(path)
    for summary, rows in tables.tables:
        section = _html_section(summary)
        if section is None:
            for n, cells, _ in rows:
                head = _HEAD_ROWS.get(cells[0])
                m = next((m for c in cells[1:] if (m := _MINS.match(c))), None)
                if head and m and getattr(report, head) is None:
                    setattr(report, head, Figure(number(m.group(1), path, n, _row_text(cells)), n, _row_text(cells)))
            continue
        columns: list[str | None] = []
        for n, cells, header in rows:
            line = _row_text(cells)
            if header:
                columns = [_html_column(c, section) for c in cells]
                continue
            label = cells[0].strip()
            if section == "load":
                values = [c for c in cells[1:3] if c]
                if label.endswith(":") and values and all(_is_number(v) for v in values):
                    figures = [Figure(number(v, path, n, line), n, line) for v in values]
                    report.load_profile[label[:-1].strip()] = (figures[0], figures[1] if len(figures) > 1 else None)
            elif section != "activity" and not {"waits", "time_s"} <= set(columns):
                break  # an events table without waits and their time (ASH's Top Events): not the wait events'
            elif columns and label and any(cells[1:]):
                _put(report, section, label, {c: cell for c, cell in zip(columns[1:], cells[1:]) if c}, n, line)
    return _found(report)


def read(path: Path | str) -> Report:
    """An AWR report read within its bound (inputs.read_text) and parsed: as HTML when its first
    character that is not white space (or a byte order mark) is '<'; as Oracle's text layout
    otherwise; and where that finds nothing in a text with no column underlines (the text layout's
    mark), as its tables quoted from a web page (excerpt.py, the seeds' form)."""
    text = inputs.read_text(path, "AWR report", AWR_TEXT_MAX)
    if text.lstrip("\ufeff \t\r\n")[:1] == "<":
        return parse_html(text, str(path))
    try:
        return parse_text(text, str(path))
    except NotAReport:
        if any(_spans(line) for line in text.splitlines()):
            raise
        from .excerpt import parse_excerpt  # noqa: PLC0415  (only for a file that is neither layout)
        try:
            return parse_excerpt(text, str(path))
        except NotAReport:
            return _found(Report(str(path)))  # raises: nothing of a report's in any of the three forms
