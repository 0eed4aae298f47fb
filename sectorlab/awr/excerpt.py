"""An AWR report's tables as a web page quotes them: each cell on a line of its own, or a row's
cells run together with nothing between them (copied out of an HTML table), as the seeds quote
their reports (seed 000: "log file sync19,927,44923.2K1.1638.7Commit"; seed 001: "EventWaits
Time(s)Avg wait (ms)% DB timeWait ClassDB CPU 19,832 78.42 log file sync6,700,2424,059116.05
Commit"). Read: the Load Profile's rows (a label ending in ':' and its numbers, after "Per
Second"), and the events tables (a header starting "Event", its columns named as Oracle's
layouts name them): their DB CPU row and their events' waits, times, averages and waits a
transaction.

A run of digits holding several cells is split where every cell is a number as Oracle prints it
in its column (waits with thousands separators and no leading zero, a time in seconds or with K
or M, a percentage up to 100), the event's average agrees with its time over its waits, and its
% DB time with its time over the DB time the table's DB CPU row gives, within what each prints.
One such split: read; none or more than one: one line saying so, with the readings, never a
guess. A last cell that fits no column (the seed 000 background row's
"2237277.09" as its % bg time) is left out and said in the figure's text.
"""

from __future__ import annotations

import re
from itertools import combinations

from ..errors import UsageError
from .parse import Figure, NotAReport, Report, _html_column, number

# An events table's column headers as Oracle's layouts print them (11g to 23ai), to split a header
# run together; longest first where one starts another. What each header means is parse.py's
# (`_html_column`, the HTML layout's reading of a header cell).
_HEADERS = ("Total Wait Time (sec)", "Total Wait Time (s)", "Time(s)", "Time (s)", "%Time -outs", "%Time-outs",
            "%Timeouts", "Wait Avg(ms)", "Avg wait (ms)", "Avg wait(ms)", "Avg Wait", "Waits /txn", "Waits/txn",
            "% DB time", "%DB time", "% bg time", "Wait Class", "Waits")
# A run of digits longer than this, or an events table's text longer than _BODY_MAX, is no quoted
# AWR row (a row's six cells run together are under 60 characters): refused before it is split,
# so that the splitting's work stays small whatever the file holds.
_RUN_MAX = 80
_BODY_MAX = 64 * 1024
_WAIT_CLASSES = ("Commit", "System I/O", "User I/O", "Configuration", "Concurrency", "Application",
                 "Network", "Other", "Idle", "Cluster", "Administrative", "Scheduler", "Queueing")

# What a cell of each column looks like as Oracle prints it: no leading zero but in "0" and "0.x".
_INT = r"(?:0|[1-9]\d{0,2}(?:,\d{3})*)"
_DEC = rf"{_INT}(?:\.\d+)?"
_SCALED = r"(?:0|[1-9]\d*)(?:\.\d+)?[KMGT]"
_CELL = {
    "waits": re.compile(rf"{_INT}|{_SCALED}"),
    "timeouts_pct": re.compile(r"0|[1-9]\d?|100"),
    "time_s": re.compile(rf"{_DEC}|{_SCALED}"),
    "avg_ms": re.compile(rf"{_DEC}"),
    "waits_per_txn": re.compile(rf"{_DEC}"),
    "pct": re.compile(r"(?:0|[1-9]\d?|100)(?:\.\d+)?"),
}
_BLANK_OK = {"timeouts_pct", "pct"}  # columns Oracle leaves blank in an event's row (a share of none)
_NUMBERS = re.compile(r"\d[\d.,KMGT]*")


class Ambiguous(UsageError):
    """A row whose cells run together can be split more than one way, or none."""


def _half_unit(cell: str) -> float:
    """Half the unit of a printed number's last digit (K and M scale it): how far it may be from
    what it rounds."""
    scale = {"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}.get(cell[-1], 1.0)
    digits = cell.rstrip("KMGT")
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    return 0.5 * 10 ** -decimals * scale


def _agrees(cells: dict[str, str]) -> bool:
    """An event's average (ms) agrees with its total time (s) over its waits within what each prints."""
    if not {"waits", "time_s", "avg_ms"} <= set(cells):
        return True
    waits, time_s, avg = (number(cells[c], "", 0, "") for c in ("waits", "time_s", "avg_ms"))
    if waits <= 0:
        return False
    dw, dt, da = (_half_unit(cells[c]) for c in ("waits", "time_s", "avg_ms"))
    low = 1000 * max(0.0, time_s - dt) / (waits + dw)
    high = 1000 * (time_s + dt) / max(waits - dw, 0.5)
    return avg + da >= low and avg - da <= high


def _share_agrees(cells: dict[str, str], cpu: tuple[str, str] | None) -> bool:
    """An event's % DB time agrees with its time over the DB time the DB CPU row gives (its time
    over its own share), within what each prints; without a DB CPU row and its share, it agrees."""
    if cpu is None or not {"time_s", "pct"} <= set(cells):
        return True
    (ct, cp), (t, p) = cpu, (cells["time_s"], cells["pct"])
    vct, vcp, vt, vp = (number(x, "", 0, "") for x in (ct, cp, t, p))
    dct, dcp, dt, dp = (_half_unit(x) for x in (ct, cp, t, p))
    if vcp - dcp <= 0:
        return True
    low_db, high_db = (vct - dct) / ((vcp + dcp) / 100), (vct + dct) / ((vcp - dcp) / 100)
    low, high = 100 * max(0.0, vt - dt) / high_db, 100 * (vt + dt) / max(low_db, 1e-9)
    return vp + dp >= low and vp - dp <= high


def _splits(token: str, columns: tuple[str, ...]):
    """Every way to read `token` as the cells of `columns`, in order, each as its column prints."""
    n = len(columns)
    for cuts in combinations(range(1, len(token)), n - 1):
        bounds = (0, *cuts, len(token))
        cells = [token[bounds[i]:bounds[i + 1]] for i in range(n)]
        if all(_CELL[c].fullmatch(cell) for c, cell in zip(columns, cells)):
            if all(c != "pct" or number(cell, "", 0, "") <= 100 for c, cell in zip(columns, cells)):
                yield dict(zip(columns, cells))


def readings(tokens: list[tuple[str, bool]], columns: tuple[str, ...]) -> list[dict[str, str]]:
    """Every reading of a row's tokens as its columns' cells: a token is one cell, or, where it is
    glued to the row's name or its wait class (`True`: nothing between them, the mark of cells run
    together), a run of consecutive columns; a column left blank only where Oracle leaves one blank;
    the average agreeing with the time over the waits."""
    out: list[dict[str, str]] = []

    def walk(t: int, c: int, cells: dict[str, str]) -> None:
        if t == len(tokens):
            if all(col in _BLANK_OK for col in columns[c:]) and _agrees(cells):
                out.append(dict(cells))
            return
        for skip in range(c, len(columns) + 1):  # the columns left blank before this token
            if any(col not in _BLANK_OK for col in columns[c:skip]):
                break
            token, glued = tokens[t]
            for end in range(skip + 1, min(len(columns), len(columns) if glued else skip + 1) + 1):
                for split in _splits(token, columns[skip:end]):
                    walk(t + 1, end, {**cells, **split})

    walk(0, 0, {})
    unique = []
    for r in out:
        if r not in unique:
            unique.append(r)
    return unique


def _header(text: str) -> tuple[list[tuple[str, str]], str] | None:
    """A run of column headers from the start of `text` (after "Event"), each (its name, its
    column), and what follows them."""
    columns, rest = [], text
    while True:
        rest = rest.lstrip()
        for name in _HEADERS:
            if rest.startswith(name):
                columns.append((name, _html_column(name, "top")))
                rest = rest[len(name):]
                break
        else:
            return (columns, rest) if columns else None


def _rows(text: str) -> list[tuple[str, list[tuple[str, bool]], str]]:
    """An events table's rows from its text (its cells joined by spaces): (name, its number tokens
    each with whether it is glued to a word, the wait class) for each; a name is the words before a
    digit."""
    rows, at = [], 0
    text = text.strip()
    while at < len(text):
        m = re.match(r"\s*([A-Za-z][A-Za-z :()/*_.-]*?)\s*(?=\d)", text[at:])
        if not m:
            break
        name = m.group(1).strip()
        at += m.end()
        tokens = []
        while (t := re.match(r"(\s*)(\d[\d.,KMGT]*)", text[at:])) is not None:
            after = text[at + t.end():at + t.end() + 1]
            tokens.append((t.group(2), not t.group(1) or after.isalpha()))
            at += t.end()
        wait_class = ""
        for wc in _WAIT_CLASSES:
            if text[at:].lstrip().startswith(wc):
                wait_class = wc
                at += len(text[at:]) - len(text[at:].lstrip()) + len(wc)
                break
        rows.append((name, tokens, wait_class))
    return rows


def _cells(text: str) -> list[tuple[int, str]]:
    """The page's cells: each line that is not blank (a no-break space is blank), with its number."""
    return [(n, line.replace("\xa0", " ").strip()) for n, line in enumerate(text.splitlines(), 1)
            if line.replace("\xa0", " ").strip()]


def _is_prose(cell: str) -> bool:
    return len(cell.split()) >= 8 or cell.endswith((".", ":")) and not cell.endswith("):")


def parse_excerpt(text: str, path: str) -> Report:
    """The Load Profile and the events tables of an AWR report quoted from a web page (module doc)."""
    report = Report(path, partial=True)
    cells = _cells(text)
    i = 0
    while i < len(cells):
        n, cell = cells[i]
        if cell == "Per Second":
            i = _load_profile(report, cells, i + 1)
            continue
        head = ([], "") if cell == "Event" else _header(cell[len("Event"):]) if cell.startswith("Event") else None
        if head is not None:
            columns, rest = head
            j = i + 1
            while j < len(cells) and (more := _header(cells[j][1])) is not None and not more[1]:
                columns += more[0]
                j += 1
            body = [(n, rest)] if rest.strip() else []
            while j < len(cells) and not _is_prose(cells[j][1]) and not cells[j][1].startswith("Event"):
                body.append(cells[j])
                j += 1
            _events(report, tuple(columns), body)
            i = j
            continue
        i += 1
    if not (report.load_profile or report.top_events or report.background):
        raise NotAReport(f"{path}: no Load Profile or wait events found")
    return report


def _load_profile(report: Report, cells: list[tuple[int, str]], i: int) -> int:
    """The Load Profile's rows after its "Per Second" header cell: a label ending in ':' and the
    numbers that follow it, each on a line of its own (per second, per transaction, ...)."""
    while i < len(cells) and cells[i][1] in ("Per Transaction", "Per Exec", "Per Call"):
        i += 1
    while i < len(cells) and cells[i][1].endswith(":") and not _is_prose(cells[i][1][:-1]):
        label, i = cells[i][1][:-1].strip(), i + 1
        figures = []
        while i < len(cells) and _NUMBERS.fullmatch(cells[i][1]):
            n, cell = cells[i]
            figures.append(Figure(number(cell, report.path, n, cell), n, f"{label}: {cell}"))
            i += 1
        if figures:
            report.load_profile[label] = (figures[0], figures[1] if len(figures) > 1 else None)
    return i


def _events(report: Report, headers: tuple[tuple[str, str], ...], body: list[tuple[int, str]]) -> None:
    section = "background" if any(name == "% bg time" for name, _ in headers) else "top"
    numeric = tuple(c for _, c in headers if c != "wait_class")
    table = report.background if section == "background" else report.top_events
    first = body[0][0] if body else 0
    text = " ".join(cell for _, cell in body)
    if len(text) > _BODY_MAX:
        raise UsageError(f"{report.path}: line {first}: an events table of {len(text):,} characters: expected an "
                         f"AWR report's table quoted from a web page (at most {_BODY_MAX:,})")
    rows = _rows(text)
    for name, tokens, _ in rows:
        long = next((t for t, glued in tokens if glued and len(t) > _RUN_MAX), None)
        if long is not None:
            raise UsageError(f"{report.path}: line {first}: the event {name[:40]!r} has a run of {len(long):,} "
                             f"digits: expected a row's cells run together (at most {_RUN_MAX})")
    cpu = next(((tokens[0][0], tokens[1][0]) for name, tokens, _ in rows
                if name in ("DB CPU", "CPU time") and len(tokens) > 1 and _CELL["pct"].fullmatch(tokens[1][0])), None)
    for name, tokens, wait_class in rows:
        line = next((n for n, cell in body if name in cell), first)
        quoted = f"{name} {' '.join(t for t, _ in tokens)} {wait_class}".strip()
        if name in ("DB CPU", "CPU time"):
            # its waits, average and class are blank: its time, then its share of DB time
            if tokens:
                row = {"time_s": Figure(number(tokens[0][0], report.path, line, quoted), line, quoted)}
                if len(tokens) > 1 and _CELL["pct"].fullmatch(tokens[1][0]):
                    row["pct"] = Figure(number(tokens[1][0], report.path, line, quoted), line, quoted)
                table["DB CPU"] = row
            continue
        found, left_out = [r for r in readings(tokens, numeric) if _share_agrees(r, cpu)], ""
        if not found and len(tokens) > 1:
            found, left_out = [r for r in readings(tokens[:-1], numeric) if _share_agrees(r, cpu)], tokens[-1][0]
        if len(found) != 1:
            said = "no reading" if not found else f"{len(found)} readings (" + "; ".join(
                " | ".join(f"{c} {v}" for c, v in r.items()) for r in found[:4]) + ")"
            run = " ".join(t for t, _ in tokens)
            raise Ambiguous(f"{report.path}: line {line}: the event {name!r}'s cells run together as "
                            f"{run!r} and give {said} as {', '.join(numeric)}: expected one, "
                            f"where each cell is a number as its column prints it and the average is the "
                            f"time over the waits")
        text_of = quoted + (f" (its last cell {left_out!r} fits no column and is left out)" if left_out else "")
        table[name] = {c: Figure(number(v, report.path, line, text_of), line, text_of)
                       for c, v in found[0].items()}
