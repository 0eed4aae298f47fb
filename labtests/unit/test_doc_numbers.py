"""The numbers the docs quote, held to the results files they came from (docs/results/quotes.toml,
labtests/support/docnumbers.py).

Every quote of the registry, filled from its run's committed results, must be in its doc as the
results print it; every number of a held section must be a quote's value (or a text the section
names as set, not measured); every run's directory must hold its results, and no results
directory may lie there unnamed. The mechanism's own tests below build a registry of their own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labtests.support import docnumbers as dn

REG = dn.load()
RENDERED: dict = {}


def _rendered(q):
    if q.where not in RENDERED:
        RENDERED[q.where] = dn.render(REG, q)
    return RENDERED[q.where]


@pytest.mark.parametrize("q", REG.quotes, ids=[f"{q.where + 1}-{dn.normalized(q.text)[:40]}" for q in REG.quotes])
def test_each_quote_is_in_its_doc_as_the_results_print_it(q):
    problem = dn.quote_problem(REG, q, _rendered(q))
    assert problem is None, problem


@pytest.mark.parametrize("section", REG.sections, ids=[s.heading[:50] for s in REG.sections])
def test_every_number_of_a_held_section_is_held(section):
    rendered = {q.where: _rendered(q) for q in REG.quotes}
    loose = dn.unheld(REG, section, rendered)
    assert not loose, f"{section.doc} {section.heading}: {len(loose)} number(s) no quote holds, " + "; ".join(
        f"{n.number!r} in ...{n.context}..." for n in loose[:10]
    )


@pytest.mark.parametrize("run", REG.runs.values(), ids=list(REG.runs))
def test_each_run_holds_its_results(run):
    problem = dn.run_problem(REG, run)
    assert problem is None, problem


def test_the_kept_results_stay_small():
    """Each run keeps its summaries gzipped, each under 100 KiB: the repository grows by what a
    quote needs, not by the runs' traces."""
    files = [p for p in dn.RESULTS.rglob("*") if p.is_file() and p.name != "quotes.toml"]
    assert files and all(p.suffix == ".gz" and p.stat().st_size < 100 * 1024 for p in files), [
        str(p) for p in files if p.suffix != ".gz" or p.stat().st_size >= 100 * 1024
    ]


def test_no_results_directory_is_left_unnamed():
    named = {r.directory.name for r in REG.runs.values()}
    on_disk = {p.name for p in dn.RESULTS.iterdir() if p.is_dir()}
    assert on_disk - named == set(), "docs/results/ directories no [[run]] names"


DOCS = sorted(str(p.relative_to(dn.ROOT)) for p in [*(dn.ROOT / "docs").glob("*.md"), dn.ROOT / "README.md"])


@pytest.mark.parametrize("doc", DOCS)
def test_every_section_of_every_doc_is_held_or_says_why_not(doc):
    """Each doc's opening and each of its sections is held, or named [[unheld]] with why (heading
    "*": every section of the doc that is not held); an unheld text whose runs were not kept says
    so itself (the section, or the doc's opening for "*"). A new doc or section must be one."""
    top = [line for _, line in dn.headings(doc) if line.startswith(("# ", "## "))]
    held = {s.heading for s in REG.sections if s.doc == doc}
    unheld = {h: why for d, h, why in REG.unheld if d == doc}
    assert set(unheld) - {"*"} <= set(top), f"{doc}: an [[unheld]] heading the doc no longer has"
    assert held <= {line for _, line in dn.headings(doc)}, f"{doc}: a held heading the doc no longer has"
    for heading in top:
        if "*" not in unheld:
            assert (heading in held) != (heading in unheld), f"{doc} {heading!r}: held or [[unheld]] (one of them)"
        else:
            assert heading not in unheld, f"{doc} {heading!r}: named [[unheld]] beside the doc's '*'"
    for heading, why in unheld.items():
        text = dn.section_text(doc, top[0] if heading == "*" else heading)
        if "not kept" in why:
            assert "not kept" in text, f"{doc} {heading!r}: [[unheld]] as not kept, and its text does not say so"


# ---- the mechanism, on a registry of its own ----------------------------------------------------


def _registry(tmp_path: Path, doc: str, quotes: str, given: str = "[]", summary=None) -> dn.Registry:
    run = tmp_path / "20261130-000000-x"
    run.mkdir()
    (run / "summary.json").write_text(json.dumps(summary or {"a": {"b": [1.234, 5.678]}, "n": 94325.0}))
    (tmp_path / "doc.md").write_text(doc)
    (tmp_path / "quotes.toml").write_text(
        f'[[run]]\nname = "x"\ndir = "{run.name}"\ncommand = "c"\n\n'
        f'[[section]]\ndoc = "{tmp_path / "doc.md"}"\nheading = "## S"\ngiven = {given}\n\n' + quotes
    )
    return dn.load(tmp_path / "quotes.toml")


def _check(reg):
    rendered = {q.where: dn.render(reg, q) for q in reg.quotes}
    problems = [dn.quote_problem(reg, q, rendered[q.where]) for q in reg.quotes]
    return [p for p in problems if p], dn.unheld(reg, reg.sections[0], rendered)


def _quote(tmp_path, text, values, derive="{}"):
    doc = tmp_path / "doc.md"
    return f"[[quote]]\ndoc = \"{doc}\"\nrun = \"x\"\ntext = '''{text}'''\nvalues = {values}\nderive = {derive}\n"


def test_a_quote_holds_the_value_its_file_has(tmp_path):
    q = _quote(tmp_path, "took {v:.2f} ms at {n:,.0f} a second", '{ v = "/a/b/0", n = "/n" }')
    problems, loose = _check(_registry(tmp_path, "## S\nIt took 1.23 ms at\n94,325 a second.\n", q))
    assert problems == [] and loose == []


def test_a_doc_that_drifted_from_its_file_fails_naming_the_quote(tmp_path):
    q = _quote(tmp_path, "took {v:.2f} ms", '{ v = "/a/b/0" }')
    problems, _ = _check(_registry(tmp_path, "## S\nIt took 1.24 ms.\n", q))
    assert len(problems) == 1 and "'took 1.23 ms'" in problems[0]


def test_a_number_no_quote_holds_is_named_and_a_template_literal_holds_nothing(tmp_path):
    # "at 7 runs" is the template's own text: it is in the doc, but it was not read from a file
    q = _quote(tmp_path, "took {v:.2f} ms at 7 runs", '{ v = "/a/b/0" }')
    problems, loose = _check(_registry(tmp_path, "## S\nIt took 1.23 ms at 7 runs, and 3.5 more.\n", q))
    assert problems == []
    assert [n.number for n in loose] == ["7", "3.5"]


def test_given_texts_code_spans_dates_and_settings_hold_no_result_but_are_not_counted(tmp_path):
    doc = "## S\nOn 2026-11-30 `make bench REPEATS=8` at a 10 us wake-up, BLOCKSIZE 4096: 1.23 ms.\n"
    q = _quote(tmp_path, "{v:.2f} ms", '{ v = "/a/b/0" }')
    reg = _registry(tmp_path, doc, q, given='["a 10 us wake-up"]')
    reg.settings.append(dn.re.compile(r"\b4096\b"))
    assert _check(reg) == ([], [])


@pytest.mark.parametrize(
    "summary, derive, doc",
    [
        # a verdict's word chosen from a file's true or false
        (
            {"holds": [True, False]},
            "{ a = \"choose(holds[0], 'holds', 'depends')\", b = \"choose(holds[1], 'holds', 'depends')\" }",
            "It holds and depends.",
        ),
        # one word for verdicts that are the same (== and !=)
        (
            {"holds": ["within noise", "within noise", "significant"]},
            '{ a = "choose(holds[0] == holds[1], holds[0], '
            "'mixed')\", b = \"choose(holds[1] != holds[2], 'mixed', holds[1])\" }",
            "within noise and mixed",
        ),
    ],
)
def test_a_word_is_chosen_from_the_files_values(tmp_path, summary, derive, doc):
    q = _quote(tmp_path, "{a} and {b}", '{ holds = "/holds" }', derive)
    problems, loose = _check(_registry(tmp_path, f"## S\n{doc}\n", q, summary=summary))
    assert problems == [] and loose == []


def test_derived_values_and_wildcards(tmp_path):
    summary = {"c": {"x": {"tps": 10.0}, "y": {"tps": 30.0}}, "runs": [1, 2, 3, 4]}
    q = _quote(
        tmp_path,
        "{lo:.0f}-{hi:.0f} % over {n} runs, median {m:.0f}",
        '{ t = "/c/*/tps", r = "/runs", s = "/runs/1:3" }',
        '{ lo = "min(t) / 40 * 100", hi = "max(t) / 40 * 100", n = "len(r)", m = "median(s) * 10" }',
    )
    problems, loose = _check(_registry(tmp_path, "## S\nIt ran 25-75 % over 4 runs, median 25.\n", q, summary=summary))
    assert problems == [] and loose == []


@pytest.mark.parametrize(
    "expr",
    [
        "__import__('os')",
        "t.__class__",
        "open('/etc/passwd')",
        "[x for x in t]",
        "t if t else t",
        "'a'.upper()",
        "choose.__globals__",
        "t < 1",
        "t == 1 == 1",
    ],
)
def test_a_derivation_is_arithmetic_only(tmp_path, expr):
    reg = _registry(tmp_path, "## S\n", _quote(tmp_path, "{v}", '{ t = "/n" }', f'{{ v = "{expr}" }}'))
    with pytest.raises(dn.RegistryError, match="only numbers"):
        dn.render(reg, reg.quotes[0])


@pytest.mark.parametrize(
    "ptr, says",
    [
        ("/a/c", "no key 'c'"),
        ("/a/b/9", "no element '9' in a list of 2"),
        ("a/b", "is not a JSON pointer"),
        ("/n/x", "below a float"),
    ],
)
def test_a_bad_pointer_is_one_line_naming_it(tmp_path, ptr, says):
    reg = _registry(tmp_path, "## S\n", _quote(tmp_path, "{v}", f'{{ v = "{ptr}" }}'))
    with pytest.raises(dn.RegistryError) as e:
        dn.render(reg, reg.quotes[0])
    assert says in str(e.value) and "\n" not in str(e.value)


def test_a_quote_repeated_from_another_section_must_be_there(tmp_path):
    doc = "## S\nThe real run gave -54.2 %.\n## T\nNothing here.\n"
    q = f"[[quote]]\ndoc = \"{tmp_path / 'doc.md'}\"\nalso_in = \"## T\"\ntext = '''-54.2 %'''\n"
    problems, _ = _check(_registry(tmp_path, doc, q))
    assert len(problems) == 1 and "is not in the section '## T'" in problems[0]


def test_a_run_said_to_equal_another_must(tmp_path):
    reg = _registry(tmp_path, "## S\n", "")
    other = tmp_path / "20261130-000001-y"
    other.mkdir()
    (other / "summary.json").write_text(json.dumps({"a": 1}))
    run = dn.Run("y", other, "c", same_as="x")
    assert "differs from" in dn.run_problem(reg, run)


def test_a_fenced_block_is_code_not_headings_or_results(tmp_path):
    """A shell comment in a fenced block does not end the section, and its numbers are the
    commands' own; the section's text after it is still held."""
    doc = "## S\n```sh\n# make bench REPEATS=12\nmake bench\n```\nIt took 1.23 ms and 9.9 more.\n## T\n"
    q = _quote(tmp_path, "took {v:.2f} ms", '{ v = "/a/b/0" }')
    problems, loose = _check(_registry(tmp_path, doc, q))
    assert problems == [] and [n.number for n in loose] == ["9.9"]


def test_a_held_heading_the_doc_has_twice_is_one_line_naming_it(tmp_path):
    reg = _registry(tmp_path, "## S\nOne.\n## S\nTwo.\n", "")
    with pytest.raises(dn.RegistryError) as e:
        dn.unheld(reg, reg.sections[0], {})
    assert "2 heading lines '## S'" in str(e.value) and "\n" not in str(e.value)
