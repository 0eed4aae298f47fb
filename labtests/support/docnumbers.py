"""The numbers the docs quote, held to the results files they came from.

docs/results/quotes.toml names the runs whose results the docs quote (each a directory under
docs/results/ holding the run's summary, committed), the doc sections whose every number is held,
and the quotes: a template in Python's format language, its values read from a run's JSON file by
JSON pointer (RFC 6901), optionally derived from them by arithmetic (and `choose`, a word for a
true or false). A quote holds when its
template, filled from the files, is found in the doc (its lines joined, runs of spaces as one).
A held section holds when every number in it lies inside a quote found in that section, or inside
one of the section's `given` texts (what was set or quoted, not measured by a run: a command's
parameters, a preset's or the code's constants, a seed's own figures); numbers in code spans and
fenced code blocks are the commands' own and not counted.

`python -m labtests.support.docnumbers [SECTION]` lists a held section's numbers no quote holds,
each with the values of the section's runs that print as it (a start for a new quote, not a
judgement: a small number can match anything).
"""

from __future__ import annotations

import ast
import gzip
import json
import math
import operator
import re
import statistics
import string
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results"
REGISTRY = RESULTS / "quotes.toml"

# A number as the docs print one: a sign, thousands commas, a fraction, Oracle's K, M or G. Dates and code spans are
# taken out before numbers are looked for.
NUMBER = re.compile(r"(?<![\w.@])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?[KMG]?(?![\w])")
CODE = re.compile(r"`[^`]*`")
FENCE = re.compile(r"^[ ]*(```|~~~).*?^[ ]*\1[^\n]*$", re.M | re.S)  # a fenced code block: commands, not results
DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
STAMP = re.compile(r"\b\d{8}-\d{6}\b")  # a results directory's timestamp


class RegistryError(ValueError):
    """The registry or a results file is not what a quote needs: one line naming which."""


@dataclass(frozen=True)
class Run:
    name: str
    directory: Path
    command: str
    same_as: str = ""  # another run whose summary.json this one's equals byte for byte


@dataclass(frozen=True)
class Quote:
    doc: str
    text: str
    values: dict
    derive: dict
    run: str
    file: str
    where: int  # the quote's index in the registry, for messages
    also_in: str = ""  # a heading of `doc` whose text holds this one (a figure quoted twice)


@dataclass
class Section:
    doc: str
    heading: str
    given: list = field(default_factory=list)


@dataclass
class Registry:
    runs: dict
    sections: list
    quotes: list
    settings: list = field(default_factory=list)  # patterns of what is set, not measured, in any section
    unheld: list = field(default_factory=list)  # (doc, heading, why) of sections whose runs were not kept


def load(path: Path = REGISTRY) -> Registry:
    """The registry at `path`; its runs' directories are beside it."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise RegistryError(f"{path}: {e}") from e
    runs = {}
    for r in data.get("run", []):
        name = r["name"]
        if name in runs:
            raise RegistryError(f"{path}: run {name!r} named twice")
        runs[name] = Run(name, path.parent / r["dir"], r["command"], r.get("same_as", ""))
    sections = [Section(s["doc"], s["heading"], list(s.get("given", []))) for s in data.get("section", [])]
    quotes = []
    for i, q in enumerate(data.get("quote", [])):
        quotes.append(
            Quote(
                doc=q.get("doc", "docs/experiments.md"),
                text=q["text"],
                values=dict(q.get("values", {})),
                derive=dict(q.get("derive", {})),
                run=q.get("run", ""),
                file=q.get("file", "summary.json"),
                where=i,
                also_in=q.get("also_in", ""),
            )
        )
    try:
        settings = [re.compile(x) for x in data.get("settings", [])]
    except re.error as e:
        raise RegistryError(f"{path}: settings: {e}") from e
    unheld = [(u["doc"], u["heading"], u["why"]) for u in data.get("unheld", [])]
    return Registry(runs, sections, quotes, settings, unheld)


@cache
def read_json(path: Path):
    """A results file, plain or gzipped."""
    gz = path.with_name(path.name + ".gz")
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))
    if gz.is_file():
        return json.loads(gzip.decompress(gz.read_bytes()).decode("utf-8"))
    raise RegistryError(f"{path}: no such results file (nor {gz.name})")


def pointer(doc, ptr: str, where: str):
    """RFC 6901: '/a/0/b~1c' -> doc['a'][0]['b/c']; and '*' (every element of a list, every
    value of an object) or 'i:j' (a slice of a list), giving a list the rest of the pointer maps
    over."""
    if ptr == "":
        return doc
    if not ptr.startswith("/"):
        raise RegistryError(f"{where}: {ptr!r} is not a JSON pointer (it starts with '/')")
    return _walk(doc, [k.replace("~1", "/").replace("~0", "~") for k in ptr[1:].split("/")], ptr, where)


def _walk(node, keys, ptr, where):
    if not keys:
        return node
    key, rest = keys[0], keys[1:]
    if isinstance(node, list):
        if key == "*" or re.fullmatch(r"\d*:\d*", key):
            part = node if key == "*" else node[slice(*(int(x) if x else None for x in key.split(":")))]
            return [_walk(n, rest, ptr, where) for n in part]
        if not key.isdigit() or int(key) >= len(node):
            raise RegistryError(f"{where}: {ptr!r}: no element {key!r} in a list of {len(node)}")
        return _walk(node[int(key)], rest, ptr, where)
    if isinstance(node, dict):
        if key == "*":
            return [_walk(n, rest, ptr, where) for n in node.values()]
        if key not in node:
            raise RegistryError(f"{where}: {ptr!r}: no key {key!r} (has {', '.join(sorted(node)[:8])})")
        return _walk(node[key], rest, ptr, where)
    raise RegistryError(f"{where}: {ptr!r}: {key!r} below a {type(node).__name__}")


def value_of(reg: Registry, q: Quote, ref: str):
    """A value reference: '/pointer' in the quote's run and file, 'file#/pointer' in its run,
    or 'run:file#/pointer'."""
    run, file, ptr = q.run, q.file, ref
    if "#" in ref:
        head, ptr = ref.split("#", 1)
        if ":" in head:
            run, file = head.split(":", 1)
        else:
            file = head
    where = f"quote {q.where + 1} ({q.text[:40]!r})"
    if run not in reg.runs:
        raise RegistryError(f"{where}: run {run!r} is not in the registry")
    return pointer(read_json(reg.runs[run].directory / file), ptr, where)


_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}
_FUNCS = {
    "abs": abs,
    "min": min,
    "max": max,
    "sqrt": math.sqrt,
    "median": statistics.median,
    "len": len,
    "choose": lambda cond, yes, no: yes if cond else no,
}


def evaluate(expr: str, names: dict):
    """Arithmetic over the quote's named values: + - * /, unary minus, == and != (for `choose`), x[i],
    and the functions of _FUNCS."""

    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str)):
            return node.value
        if isinstance(node, ast.Name) and node.id in names:
            return names[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            return ev(node.value)[node.slice.value]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.UAdd):
            return ev(node.operand)
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Eq, ast.NotEq)):
            same = ev(node.left) == ev(node.comparators[0])
            return same if isinstance(node.ops[0], ast.Eq) else not same
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCS:
            return _FUNCS[node.func.id](*(ev(a) for a in node.args))
        raise RegistryError(f"{expr!r}: only numbers, the quote's names, + - * /, == !=, x[i] and {', '.join(_FUNCS)}")

    return ev(ast.parse(expr, mode="eval"))


@dataclass(frozen=True)
class Rendered:
    """A quote filled: its text (whitespace as one space) and where in it each value printed."""

    text: str
    fields: tuple


def render(reg: Registry, q: Quote) -> Rendered:
    """The quote's text with its values printed; a quote with `also_in` is its text as written,
    held by the other section, so the whole of it counts as held."""
    template = normalized(q.text)
    if q.also_in:
        return Rendered(template, ((0, len(template)),))
    where = f"quote {q.where + 1} ({q.text[:40]!r})"
    names = {k: value_of(reg, q, ref) for k, ref in q.values.items()}
    for k, expr in q.derive.items():
        names[k] = evaluate(expr, names)
    out, fields = "", []
    try:
        for literal, name, spec, conversion in string.Formatter().parse(template):
            out += literal
            if name is None:
                continue
            if name not in names:
                raise RegistryError(f"{where}: {{{name}}} names no value (has {', '.join(names)})")
            v = names[name]
            v = repr(v) if conversion == "r" else str(v) if conversion == "s" else v
            printed = format(v, spec or "")
            fields.append((len(out), len(out) + len(printed)))
            out += printed
    except (ValueError, TypeError) as e:
        raise RegistryError(f"{where}: {type(e).__name__}: {e}") from e
    return Rendered(out, tuple(fields))


def normalized(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


@cache
def doc_text(doc: str) -> str:
    return (ROOT / doc).read_text(encoding="utf-8")


def headings(doc: str) -> list:
    """(line number, line) of each Markdown heading of the doc; a line in a fenced code block is
    code (a shell comment), not a heading."""
    out, fenced = [], False
    for i, line in enumerate(doc_text(doc).splitlines()):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and re.match(r"#+ ", line):
            out.append((i, line))
    return out


def section_text(doc: str, heading: str) -> str:
    """The section under `heading` (a whole line of the doc) up to the next heading of its level
    or above."""
    lines = doc_text(doc).splitlines()
    level = len(heading) - len(heading.lstrip("#"))
    if level == 1:  # the page's title: its preamble, up to the first heading below it
        level = 6
    found = [i for i, line in headings(doc) if line == heading]
    if len(found) != 1:
        raise RegistryError(f"{doc}: {len(found)} heading lines {heading!r} (a held section's heading is one line)")
    start = found[0]
    end = next((i for i, line in headings(doc) if i > start and len(line) - len(line.lstrip("#")) <= level), len(lines))
    return "\n".join(lines[start + 1 : end])


def spans(haystack: str, needle: str) -> list:
    out, i = [], haystack.find(needle)
    while needle and i >= 0:
        out.append((i, i + len(needle)))
        i = haystack.find(needle, i + 1)
    return out


def masked(text: str, settings=()) -> str:
    """Code spans, dates, results directories' stamps and the registry's settings blanked (same
    length), so their digits are no numbers."""
    for pattern in (CODE, DATE, STAMP, *settings):
        text = pattern.sub(lambda m: " " * len(m.group(0)), text)
    return text


@dataclass(frozen=True)
class Loose:
    """A number of a held section that no quote holds."""

    number: str
    context: str


def unheld(reg: Registry, section: Section, rendered: dict) -> list:
    """The section's numbers that no quote's value and no given text holds."""
    text = normalized(FENCE.sub(" ", section_text(section.doc, section.heading)))
    covered = []
    for q in reg.quotes:
        if q.doc != section.doc:
            continue
        r = rendered.get(q.where)
        if r is None:  # a quote that could not be filled holds nothing
            continue
        for at, _ in spans(text, r.text):
            covered += [(at + a, at + b) for a, b in r.fields]
    for g in section.given:
        covered += spans(text, normalized(g))
    out = []
    for m in NUMBER.finditer(masked(text, reg.settings)):
        if not any(a <= m.start() and m.end() <= b for a, b in covered):
            out.append(Loose(m.group(0), text[max(0, m.start() - 50) : m.end() + 30]))
    return out


def quote_problem(reg: Registry, q: Quote, r: Rendered) -> str | None:
    """None when the quote holds, else one line saying why not."""
    doc = normalized(doc_text(q.doc))
    if r.text not in doc:
        return f"{q.doc}: quote {q.where + 1} not found as the results print it: {r.text!r}"
    if q.also_in and r.text not in normalized(section_text(q.doc, q.also_in)):
        return f"{q.doc}: quote {q.where + 1} {r.text!r} is not in the section {q.also_in!r} it repeats"
    return None


def run_problem(reg: Registry, run: Run) -> str | None:
    files = sorted(p.name for p in run.directory.glob("*.json*")) if run.directory.is_dir() else []
    if not files:
        return f"run {run.name!r}: {run.directory} holds no results file"
    if run.same_as:
        other = reg.runs.get(run.same_as)
        if other is None:
            return f"run {run.name!r}: same_as {run.same_as!r} is not a run of the registry"
        a, b = (x.directory / "summary.json" for x in (run, other))
        if read_json(a) != read_json(b):
            return f"run {run.name!r}: {a} differs from {b}, which it is said to equal"
    return None


def candidates(reg: Registry, number: str, runs) -> list:
    """Leaves of the runs' files that print as `number` in some plain way (a start for a quote)."""
    want = number.replace(",", "").lstrip("+")
    decimals = len(want.split(".")[1]) if "." in want else 0
    out = []
    for run in runs:
        for path in sorted(run.directory.iterdir()):
            name = path.name.removesuffix(".gz")
            if not name.endswith(".json"):
                continue
            for ptr, v in leaves(read_json(path.with_name(name))):
                if isinstance(v, bool) or not isinstance(v, (int, float)):
                    continue
                for scale, tag in ((1, ""), (1000, " x1000"), (100, " x100"), (0.001, " /1000")):
                    if f"{v * scale:.{decimals}f}" == want:
                        out.append(f"{run.name}:{name}#{ptr}{tag} = {v!r}")
    return out


def leaves(node, ptr=""):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from leaves(v, f"{ptr}/{str(k).replace('~', '~0').replace('/', '~1')}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from leaves(v, f"{ptr}/{i}")
    else:
        yield ptr, node


def main(argv) -> int:
    reg = load()
    rendered = {}
    for q in reg.quotes:
        try:
            rendered[q.where] = render(reg, q)
        except RegistryError as e:
            print(e)
            continue
        problem = quote_problem(reg, q, rendered[q.where])
        if problem:
            print(problem)
    for run in reg.runs.values():
        problem = run_problem(reg, run)
        if problem:
            print(problem)
    for section in reg.sections:
        if argv and argv[0] not in section.heading:
            continue
        loose = unheld(reg, section, rendered)
        print(f"{section.doc} {section.heading}: {len(loose)} number(s) no quote holds")
        for n in loose:
            print(f"  {n.number!r} in ...{n.context}...")
            for c in candidates(reg, n.number, reg.runs.values())[:6]:
                print(f"      {c}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
