"""An AWR report in Oracle's text or HTML layout read for what the log writer sees (sectorlab/awr): the
project's own fixtures, written in the layouts of 19c (seed 000's figures where the seed prints them:
its Load Profile's redo, its log file sync and log file parallel write rows; the header's minutes and
the Instance Activity Stats made to agree with them) and of 11g (the header's minutes and the Load
Profile as Troubleshooting Oracle Performance prints a 15-minute report's; its two events made up to
fit), each derived figure with the line it came from, and bad reports as one line each."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labtests.support.depth import examples
from sectorlab.awr import load, parse
from sectorlab.errors import UsageError
from sectorlab.paths import REPO

DATA = REPO / "labtests" / "unit" / "data" / "awr"
REPORT_19C = DATA / "awrrpt-19c-seed000.txt"
REPORT_11G = DATA / "awrrpt-11g.txt"
# The 19c fixture's figures in Oracle's HTML layout: each table named by its summary attribute, its
# columns by its header row, the Top Events' averages with their unit (1.16ms, 970.00us).
REPORT_19C_HTML = DATA / "awrrpt-19c-seed000.html"


def test_a_19c_report_gives_the_closed_loop_and_the_log_writers_figures_with_their_lines():
    got = load.load(parse.read(REPORT_19C))
    assert got["tps"].value == 94_325.0 and "line 27: 'Transactions:          94,325.0'" in got["tps"].how
    assert got["redo_per_txn"].value == 5_350.6 and "Redo size (bytes) per transaction (line 23" in \
        got["redo_per_txn"].how
    assert got["sessions"].value == pytest.approx(998.31 / 4.95) and "line 16" in got["sessions"].how
    assert got["cpu_us_per_txn"].value == pytest.approx(1e6 * 119.2 / 94_325.0)
    assert got["commits_per_write"].value == pytest.approx(28_014_525 / 3_359_023)
    assert "user commits 28,014,525 over redo writes 3,359,023" in got["commits_per_write"].how
    # averages from the total time over the waits: 23.2K s / 19,927,449 and 442 s / 3,359,023
    assert got["log_file_sync_avg_ms"].value == pytest.approx(1000 * 23_200 / 19_927_449)
    assert got["log_file_sync_waits"].value == 19_927_449
    assert got["log_file_parallel_write_avg_ms"].value == pytest.approx(1000 * 442 / 3_359_023)
    assert got["log_file_parallel_write_waits"].value == 3_359_023
    # Oracle's K: DB CPU 35.4K s and log file sync's 23.2K s
    report = parse.read(REPORT_19C)
    assert report.top_events["DB CPU"]["time_s"].value == 35_400
    assert report.top_events["log file sync"]["time_s"].value == 23_200
    # a section this module does not read ends the one before it: no Wait Classes row is an event
    assert set(report.top_events) == {"DB CPU", "log file sync", "enq: TX - row lock contention"}


def test_an_11g_report_without_instance_activity_takes_commits_a_write_from_the_log_writers_waits():
    got = load.load(parse.read(REPORT_11G))
    assert got["tps"].value == 203.4 and "Redo size per transaction" in got["redo_per_txn"].how
    assert got["redo_per_txn"].value == 1_928.3 and got["sessions"].value == pytest.approx(106.55 / 15.0)
    assert got["commits_per_write"].value == pytest.approx(1 / 0.7)
    assert "waits a transaction, 0.7 (line 33" in got["commits_per_write"].how
    # 11g prints these averages in whole milliseconds (16 and 8): the total over the waits is finer
    assert got["log_file_sync_avg_ms"].value == pytest.approx(1000 * 3_002 / 182_004)
    assert got["log_file_parallel_write_avg_ms"].value == pytest.approx(1000 * 988 / 120_512)


def test_a_cell_is_read_where_its_column_is(tmp_path):
    """A blank %Time-outs ("value of null is truly 0") is no other column's value; an average wait
    with its unit is in ms; 10g's CPU row (CPU time) is the CPU's time."""
    text = REPORT_11G.read_text().replace("log file parallel write           120,512     0        988       8",
                                          "log file parallel write           120,512              988       8")
    text = text.replace("DB CPU  ", "CPU time")  # as long: the columns stay where they are
    path = tmp_path / "awrrpt.txt"
    path.write_text(text)
    report = parse.read(path)
    lfpw = report.background["log file parallel write"]
    assert "timeouts_pct" not in lfpw and (lfpw["time_s"].value, lfpw["avg_ms"].value, lfpw["waits_per_txn"].value) \
        == (988, 8, 0.7)
    assert report.top_events["DB CPU"]["time_s"].value == 1_701
    assert load.load(report)["commits_per_write"].value == pytest.approx(1 / 0.7)
    for shown, ms in (("1.16ms", 1.16), ("485.51us", 0.48551)):
        path.write_text(REPORT_19C.read_text().replace("      1.16   38.7", f"{shown:>10}   38.7", 1))
        assert parse.read(path).top_events["log file sync"]["avg_ms"].value == pytest.approx(ms)


def _one_line(tmp_path, text: str, says: str) -> None:
    path = tmp_path / "awrrpt.txt"
    path.write_text(text)
    with pytest.raises(UsageError) as e:
        load.load(parse.read(path))
    assert str(e.value).startswith(f"{path}: ") and says in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("change, says", [
    (lambda t: "", "no Load Profile, Top Events or Instance Activity Stats found: expected an AWR report in "
                   "Oracle's text or HTML layout"),
    (lambda t: t.replace("Load Profile", "Lastprofil").replace("Top 10 Foreground Events", "Die 10 Ereignisse")
     .replace("Instance Activity Stats", "Instanzaktivitaet").replace("Wait Events", "Warteereignisse"),
     "no Load Profile, Top Events or Instance Activity Stats found"),
    (lambda t: t.replace("Transactions:          94,325.0", "Transactions:          94,3x5.0"),
     "the AWR report has no Load Profile 'Transactions:' per second"),
    (lambda t: t.replace("log file sync                   19,927,449      23.2K",
                         "log file sync                   19,927,449      23.2Q"),
     "line 35: '23.2Q' is not a number (expected digits with ',' separators, a '.', and K, M, G or T)"),
    (lambda t: t.replace("log file sync                   19,927,449      23.2K       1.16   38.7   Commit",
                         "log file sync                   19,927,449"),
     "line 35: the event 'log file sync' has no time_s in its columns"),
    (lambda t: t.replace("   Elapsed:                4.95 (mins)\n", ""),
     "the AWR report has no 'Elapsed: ... (mins)' in its header"),
    (lambda t: t.replace("   Elapsed:                4.95 (mins)", "   Elapsed:                0.00 (mins)"),
     "line 15: 'Elapsed:                0.00 (mins)': an elapsed time of 0 min: expected a report over a time"),
    (lambda t: t.split("Top 10 Foreground")[0].replace("Transactions:          94,325.0\n", ""),
     "the AWR report has no Load Profile 'Transactions:' per second"),
])
def test_a_report_that_is_not_one_or_lacks_a_figure_is_one_line(tmp_path, change, says):
    _one_line(tmp_path, change(REPORT_19C.read_text()), says)


def test_a_number_that_does_not_parse_names_its_line():
    with pytest.raises(UsageError, match=r"^x: line 3: '1,2\.3\.4' is not a number \(expected digits with"):
        parse.number("1,2.3.4", "x", 3, "Redo size: 1,2.3.4")


def test_a_fifo_or_directory_is_one_line_and_not_waited_on(tmp_path):
    fifo = tmp_path / "awr.fifo"
    os.mkfifo(fifo)
    for path in (fifo, tmp_path):
        with pytest.raises(UsageError, match="AWR report"):
            parse.read(path)


def test_bench_load_runs_an_awr_reports_load_in_place_of_the_presets(tmp_path):
    """`sectorlab bench-load PRESET --awr FILE`: the report's sessions, redo and CPU a transaction at
    its rate, each with its lines; its log writer's figures beside the lab's on each configuration the
    preset compares; the record and the report say the load is the AWR report's."""
    import json

    from labtests.unit.bench.test_sweep import tiny_preset
    from sectorlab.bench.clock import Clock
    from sectorlab.bench.devicepath import load as bench_load

    p = bench_load.with_awr(tiny_preset(tmp_path, ""), parse.read(REPORT_19C))
    c = p.closed_loop
    assert (c["sessions"], c["redo_per_txn"], c["cpu_us_per_txn"], c["seed_tps"]) == (202, 5351, 1264, 94_325.0)
    assert "line 27: 'Transactions:          94,325.0'" in c["source"]
    assert [f["what"] for f in c["figure"]] == [
        f"{what}, flash@{bs}" for bs in (512, 4096)
        for what in ("commits per log write (group commit)", "log file sync mean (ms)",
                     "log file parallel write mean (ms)", "log file sync mean over log file parallel write mean")]
    # run: the 11g report's lighter load (7 sessions), which virtual time computes in a blink
    p = bench_load.with_awr(tiny_preset(tmp_path, ""), parse.read(REPORT_11G))
    out = bench_load.run(p, lambda _: None, tmp_path / "results", repeats=2, seed=3,
                         clock=Clock("virtual", wakeup_us=10), awr=REPORT_11G)
    doc = json.loads((out / "load.json").read_text())
    assert doc["awr"] == str(REPORT_11G) and doc["workload"]["sessions"] == 7
    md = (out / "report.md").read_text()
    assert md.startswith("# The AWR report's load, closed loop, in virtual time: ")
    assert "**How far the modelled host got**: the AWR report's load ran 203 transactions/s" in md
    assert f"--awr {REPORT_11G} -- {p.name}" in md
    assert "| commits per log write (group commit), flash@512 (`commits_per_write`, flash@512) | 1.4286 commits |" in md


def test_sectorlab_awr_shows_what_the_lab_reads_of_a_report(capsys):
    import json

    from sectorlab import cli
    assert cli.main(["awr", str(REPORT_19C), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["tps"] == {"value": 94_325.0, "unit": "transactions/s",
                          "how": "Load Profile, Transactions per second (line 27: 'Transactions:          94,325.0')"}
    assert cli.main(["awr", str(REPORT_11G)]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0].split()[:3] == ["tps", "203.40", "transactions/s"] and "line 33" in text


def test_the_html_layout_gives_what_the_text_layout_gives():
    """The same report in Oracle's two layouts: every figure the lab derives is the same, each
    naming the HTML row it came from; the Absolute Values table is not a statistic's rates."""
    text, html = load.load(parse.read(REPORT_19C)), load.load(parse.read(REPORT_19C_HTML))
    assert set(text) == set(html) and all(html[k].value == pytest.approx(text[k].value) for k in text), {
        k: (text[k].value, html[k].value) for k in text}
    assert html["tps"].how == "Load Profile, Transactions per second (line 38: 'Transactions: | 94,325.0')"
    assert "line 21: 'Elapsed: | 4.95 (mins)'" in html["sessions"].how
    report = parse.read(REPORT_19C_HTML)
    assert report.top_events["enq: TX - row lock contention"]["avg_ms"].value == pytest.approx(0.97)
    assert report.top_events["DB CPU"]["time_s"].value == 35_400 and set(report.activity) == {
        "redo size", "user commits", "redo synch writes", "redo wastage", "redo writes"}
    assert report.background["log file parallel write"]["timeouts_pct"].value == 0


@pytest.mark.parametrize("change, says", [
    (lambda t: "<html><body><table summary='something else'><tr><td>x</td></tr></table></body></html>",
     "no Load Profile, Top Events or Instance Activity Stats found: expected an AWR report in Oracle's text or "
     "HTML layout"),
    (lambda t: t.replace("<td align=\"right\" class='awrnc'>19,927,449</td><td align=\"right\" class='awrnc'>23.2K",
                         "<td align=\"right\" class='awrnc'>19,927,449</td><td align=\"right\" class='awrnc'>23.2Q"),
     "line 45: '23.2Q' is not a number"),
    (lambda t: t.replace("<td align=\"right\" class='awrnc'>          94,325.0</td>",
                         "<td align=\"right\" class='awrnc'>&#160;</td>"),
     "the AWR report has no Load Profile 'Transactions:' per second"),
    (lambda t: t.replace("                4.95 (mins)", "0 (mins)"),
     "line 21: 'Elapsed: | 0 (mins)': an elapsed time of 0 min"),
    (lambda t: t.split("<h3 class=\"awr\">Load Profile")[0] + "<table", "no Load Profile, Top Events"),
])
def test_an_html_report_that_is_not_one_or_lacks_a_figure_is_one_line(tmp_path, change, says):
    _one_line(tmp_path, change(REPORT_19C_HTML.read_text()), says)  # read as HTML by its first '<', whatever its name


def test_sectorlab_awr_reads_an_html_report(capsys):
    from sectorlab import cli
    assert cli.main(["awr", str(REPORT_19C_HTML)]) == 0
    assert capsys.readouterr().out.splitlines()[0].split()[:3] == ["tps", "94,325.00", "transactions/s"]


@settings(max_examples=examples(200), deadline=None)
@given(edits=st.lists(st.tuples(st.integers(0, 10**6), st.text(alphabet="<>/&#;\"'![ \n\xa0tdrhable0123456789.,:KM",
                                                               max_size=8)), min_size=1, max_size=20))
def test_any_edit_of_an_html_report_is_a_report_or_one_line(edits):
    """Bytes of the HTML fixture replaced anywhere by tag, entity and number characters: a report, or
    one line (never a traceback, never a line break in it)."""
    text = REPORT_19C_HTML.read_text()
    for at, new in edits:
        at %= len(text)
        text = text[:at] + new + text[at + len(new):]
    try:
        parse.parse_html(text, "awrrpt.html")
    except UsageError as e:
        assert "\n" not in str(e) and str(e).startswith("awrrpt.html: ")


def test_html_that_leaves_cells_rows_or_tags_open_is_read_as_a_browser_would_or_one_line(tmp_path):
    """HTML may leave out </td> and </tr>: a cell ends where the next starts, a row where the next row
    starts or its table ends; a table inside a cell is its own and the outer row goes on. A tag left
    unclosed inside a table, or a marked section Python's parser refuses, is one line, at once."""
    html = REPORT_19C_HTML.read_text()
    waits = "<td align=\"right\" class='awrc'>19,927,449"
    commit = "<td align=\"right\" class='awrnc'>38.7</td><td class='awrnc'>Commit</td>"
    loose = html.replace(waits + "</td>", waits, 1).replace(commit + "</tr>", commit, 1)
    nested = html.replace("<td scope=\"row\" class='awrc'>user commits</td>",
                          "<td scope=\"row\" class='awrc'>user commits<table><tr><td>x</td></tr></table></td>", 1)
    for text in (loose, nested):
        report = parse.parse_html(text, "awrrpt.html")
        assert report.foreground["log file sync"]["waits"].value == 19_927_449
        assert report.foreground["log file sync"]["time_s"].value == 23_200
        assert report.top_events["log file sync"]["avg_ms"].value == pytest.approx(1.16)
        assert report.activity["user commits"]["total"].value == 28_014_525
    lfpw = "<tr><td scope=\"row\" class='awrc'>log file parallel write"
    for bad, says in ((html.replace(lfpw, "<tr><td>" + "<a " * 20_000 + "</td></tr>" + lfpw, 1),
                       "line 63: a '<' that no '>' closes before the next '<' in a table"),
                      (html.replace("<td scope=\"row\" class='awrc'>redo writes</td>",
                                    "<td scope=\"row\" class='awrc'><![foo[ x ]]>redo writes</td>", 1),
                       "not HTML that Python's parser reads")):
        path = tmp_path / "awrrpt.html"
        path.write_text(bad)
        with pytest.raises(UsageError) as e:
            parse.read(path)
        assert str(e.value).startswith(f"{path}: ") and says in str(e.value) and "\n" not in str(e.value)


def test_an_ash_top_events_table_is_not_the_wait_events_and_a_byte_order_mark_is_html(tmp_path):
    """ASH's Top Events (Event Class, % Activity, Avg Active Sessions) is a table of its own, not the
    wait events' (no Waits, no Total Wait Time); a file that starts with a byte order mark is HTML."""
    ash = ('<table border="0" class="tdiff" summary="This table displays top events">'
           '<tr><th class="awrbg">Event</th><th class="awrbg">Event Class</th><th class="awrbg">% Activity</th>'
           '<th class="awrbg">Avg Active Sessions</th></tr>'
           "<tr><td class='awrc'>log file sync</td><td class='awrc'>Commit</td><td class='awrc'>38.70</td>"
           "<td class='awrc'>78.10</td></tr></table>\n")
    path = tmp_path / "awrrpt.html"
    path.write_text("\ufeff" + REPORT_19C_HTML.read_text().replace("</body>", ash + "</body>"), encoding="utf-8")
    report = parse.read(path)
    assert report.top_events["log file sync"]["waits"].value == 19_927_449
    assert load.load(report)["tps"].value == 94_325.0
