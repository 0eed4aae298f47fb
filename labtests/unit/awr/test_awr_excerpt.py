"""The seeds' AWR excerpts read from their own text (sectorlab/awr/excerpt.py): their tables as a
web page quotes them, cells on lines of their own or run together. The fixtures are the seeds' own
lines: seed 000's Load Profile row and its two events tables (labtests/unit/data/awr/
seed000-excerpt.txt), seed 001's Top 5 events of its SSD and its HDD run (one line each, header and
rows run together), and seed 003's words on its AWR (its tables are images)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labtests.support.depth import examples
from sectorlab.awr import excerpt, load, parse
from sectorlab.errors import UsageError
from sectorlab.paths import REPO

DATA = REPO / "labtests" / "unit" / "data" / "awr"
SEED000 = DATA / "seed000-excerpt.txt"
SEED001_SSD = DATA / "seed001-ssd-excerpt.txt"
SEED001_HDD = DATA / "seed001-hdd-excerpt.txt"
SEED003 = DATA / "seed003-excerpt.txt"


def _values(row):
    return {c: f.value for c, f in row.items()}


def test_seed_000s_run_together_rows_are_split_as_oracle_prints_each_column():
    r = parse.read(SEED000)
    assert r.load_profile["Redo size (bytes)"][0].value == 504_694_043.7
    assert r.load_profile["Redo size (bytes)"][1].value == 5_350.6
    # "log file sync19,927,44923.2K1.1638.7Commit": waits, time, average, % DB time
    assert _values(r.top_events["log file sync"]) == {"waits": 19_927_449, "time_s": 23_200, "avg_ms": 1.16,
                                                       "pct": 38.7}
    assert _values(r.top_events["DB CPU"]) == {"time_s": 35_400, "pct": 59.1}
    # "log file parallel write3,359,0230442" then 0.13, 0.12 and a last cell that fits no column
    lfpw = r.background["log file parallel write"]
    assert _values(lfpw) == {"waits": 3_359_023, "timeouts_pct": 0, "time_s": 442, "avg_ms": 0.13,
                             "waits_per_txn": 0.12}
    assert "its last cell '2237277.09' fits no column and is left out" in lfpw["waits"].text
    assert r.top_events["log file sync"]["waits"].line == 52  # the fixture's own line numbers


def test_seed_000s_excerpt_gives_the_load_its_preset_derived_by_hand():
    """labs/bench/p3700-4k.toml's closed loop (202 sessions, 5,351 B and 1,265 us a transaction,
    94,325 transactions/s) came from these lines by hand; the reader derives the same, each figure
    naming its lines."""
    d = load.load(parse.read(SEED000))
    assert round(d["tps"].value) == 94_325 and "per second 504,694,043.7 over per transaction 5,350.6" in d["tps"].how
    assert round(d["sessions"].value) == 202
    assert "DB CPU 35,400 s at 59.1 % of DB time" in d["sessions"].how
    assert "3,359,023 waits at 0.12" in d["sessions"].how
    assert round(d["cpu_us_per_txn"].value) == 1_265
    assert round(d["redo_per_txn"].value) == 5_351
    assert round(d["commits_per_write"].value, 2) == 8.33
    assert round(d["log_file_sync_avg_ms"].value, 3) == 1.164
    assert round(d["log_file_parallel_write_avg_ms"].value, 3) == 0.132


@pytest.mark.parametrize("path, waits, time_s, avg, pct, cpu", [
    (SEED001_SSD, 6_700_242, 4_059, 1, 16.05, (19_832, 78.42)),
    (SEED001_HDD, 5_366_376, 12_709, 2, 46.83, (14_255, 52.53)),
])
def test_seed_001s_one_line_tables_are_read_and_its_missing_rate_is_one_line(path, waits, time_s, avg, pct, cpu):
    r = parse.read(path)
    assert _values(r.top_events["log file sync"]) == {"waits": waits, "time_s": time_s, "avg_ms": avg, "pct": pct}
    assert _values(r.top_events["DB CPU"]) == {"time_s": cpu[0], "pct": cpu[1]}
    with pytest.raises(UsageError) as e:
        load.load(r)
    assert "has no Load Profile 'Transactions:' per second (nor its redo size per second and per transaction)" in str(
        e.value) and "\n" not in str(e.value)


def test_seed_003s_words_on_its_awr_are_not_a_report():
    with pytest.raises(UsageError) as e:
        parse.read(SEED003)
    assert "no Load Profile, Top Events or Instance Activity Stats found" in str(e.value)
    assert "or its tables as a web page quotes them" in str(e.value) and "\n" not in str(e.value)


def test_two_readings_are_refused_naming_both_and_the_db_cpu_share_tells_them_apart(tmp_path):
    """Without its DB CPU row, seed 000's log file sync row reads two ways (38.7 % with an average of
    1.16, or 8.7 % with 1.163): refused, both said. With it, 38.7 % is the one whose share agrees."""
    text = SEED000.read_text()
    without = text.replace("DB CPU\n", "").replace("35.4K\n", "").replace("59.1\n", "")
    path = tmp_path / "awr.txt"
    path.write_text(without)
    with pytest.raises(excerpt.Ambiguous) as e:
        parse.read(path)
    said = str(e.value)
    assert "the event 'log file sync''s cells run together as '19,927,44923.2K1.1638.7' and give 2 readings" in said
    assert "avg_ms 1.16 | pct 38.7" in said and "avg_ms 1.163 | pct 8.7" in said and "\n" not in said


def test_a_run_that_no_split_reads_is_one_line(tmp_path):
    path = tmp_path / "awr.txt"
    # the average cannot be 9.99 ms for 23.2K s over 19,927,449 waits, however the digits are cut
    path.write_text(SEED000.read_text().replace("log file sync19,927,44923.2K1.1638.7Commit",
                                                "log file sync19,927,44923.2K9.9938.7Commit"))
    with pytest.raises(excerpt.Ambiguous) as e:
        parse.read(path)
    assert "give no reading" in str(e.value) and str(e.value).startswith(f"{path}: line 52: ")


@pytest.mark.parametrize("row, says", [
    ("log file sync" + "1" * 1_000 + "Commit", "has a run of 1,000 digits: expected a row's cells run together"),
    ("log file sync19,927,44923.2K1.1638.7Commit\n" + "x1\n" * 40_000, "an events table of 120,0"),
])
def test_a_row_or_table_no_quoted_report_has_is_one_line_before_it_is_split(tmp_path, row, says):
    """A run of digits too long to be a row's cells, or an events table too long to be a quote, is
    refused before any split is tried (the splits of a run grow as its length to the fifth)."""
    path = tmp_path / "awr.txt"
    path.write_text(SEED000.read_text().replace("log file sync19,927,44923.2K1.1638.7Commit", row))
    with pytest.raises(UsageError) as e:
        parse.read(path)
    assert says in str(e.value) and "\n" not in str(e.value)


def test_a_text_report_in_another_language_is_not_read_as_an_excerpt(tmp_path):
    """The text layout's column underlines mark it: its rows are not taken for a web page's."""
    text = (DATA / "awrrpt-19c-seed000.txt").read_text()
    path = tmp_path / "awrrpt.txt"
    path.write_text(text.replace("Load Profile", "Lastprofil").replace("Top 10 Foreground Events", "Die 10 Ereignisse")
                    .replace("Instance Activity Stats", "Instanzaktivitaet").replace("Wait Events", "Warteereignisse"))
    with pytest.raises(parse.NotAReport):
        parse.read(path)


def test_sectorlab_awr_reads_seed_000s_excerpt(capsys):
    from sectorlab import cli
    assert cli.main(["awr", str(SEED000)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[:3] == ["tps", "94,324.76", "transactions/s"]
    assert "2237277.09" in out  # the cell left out is said where its figures are


def _oracle(x: float, decimals: int) -> str:
    return f"{x:,.{decimals}f}"


@settings(max_examples=examples(300), deadline=None)
@given(waits=st.integers(1, 10**9), avg_cs=st.integers(1, 10**6), pct_t=st.integers(0, 1000))
def test_a_true_row_run_together_is_among_its_readings(waits, avg_cs, pct_t):
    """Oracle's cells of a consistent row (waits, time as the average times the waits, the average
    to two decimals, a share) glued into one run: the true cells are always one of its readings."""
    avg = avg_cs / 100
    time_s = waits * avg / 1000
    time_cell = _oracle(time_s, 0) if time_s < 10_000 else f"{time_s / 1000:.1f}K"
    if time_cell in ("0", "0.0K"):
        return
    cells = {"waits": _oracle(waits, 0), "time_s": time_cell, "avg_ms": _oracle(avg, 2), "pct": f"{pct_t / 10:.1f}"}
    # the average as printed must agree with the time as printed (Oracle prints both from one wait)
    if not excerpt._agrees(cells):
        return
    run = "".join(cells.values())
    assert cells in excerpt.readings([(run, True)], ("waits", "time_s", "avg_ms", "pct"))
