"""Field tables of the TOML files sectorlab reads: one table per TOML table (`[lab]`, `[[vm]]`,
`[[vm.disk]]`, `[geometry.NAME]`, `[bench]` and its arrays), each field with its type, default,
bounds and help. A table's read() refuses unknown keys and ill-typed or out-of-range values in the
one line every refusal has (the value, what was expected) and fills in the defaults; what depends on
several fields or on the rest of the file (duplicate names, a guest's minimum memory, the slots of a
VM) stays with the reader that knows it (labdef, bench/redo/preset). `markdown()` prints the tables for
docs/lab-definition.md and `sectorlab lab fields`, so defaults are written once, here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from .errors import UsageError

# A check turns (where, key, value, got) into the value kept, or raises the one-line UsageError;
# `got` holds the fields read before it and the reader's context (the lab's geometries, say).
Check = Callable[[str, str, Any, dict], Any]
REQUIRED = object()


def known_keys(where: str, table, allowed) -> None:
    if not isinstance(table, dict):
        raise UsageError(f"{where}: expected a table, got {table!r}")
    extra = sorted(set(table) - set(allowed))
    if extra:
        raise UsageError(f"{where}: unknown key {extra[0]!r}: expected one of {', '.join(sorted(allowed))}")


def whole_number(where: str, key: str, value, minimum: int, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(f"{where}: {key} = {value!r}: expected a whole number")
    if value < minimum or (maximum is not None and value > maximum):
        upper = f" and at most {maximum}" if maximum is not None else ""
        raise UsageError(f"{where}: {key} = {value}: expected at least {minimum}{upper}")
    return value


def no_duplicates(where: str, key: str, values: list, same: Callable[[Any], Any] = lambda v: v) -> list:
    """`values` when no two of them are one (by `same`: what makes two values one, such as a value
    as it is read, "64k" and "65536"); else one UsageError line naming both and where they are."""
    seen: dict = {}
    for i, value in enumerate(values, 1):
        first = seen.setdefault(same(value), i)
        if first != i:
            other = values[first - 1]
            shown = (f"{value!r} is given twice" if other == value
                     else f"{other!r} and {value!r} are one value")
            raise UsageError(f"{where}: {key}: {shown} (#{first} and #{i}); expected each once")
    return values


@dataclass(frozen=True)
class Kind:
    """What a field's value must be: `doc` for the docs' type column, `check` to refuse or keep it."""
    doc: str
    check: Check

    def __call__(self, where: str, key: str, value, got: dict):
        return self.check(where, key, value, got)


def number(low: int, high: int | None = None) -> Kind:
    """A whole number in [low, high]."""
    doc = f"integer, {low}-{high}" if high is not None else f"integer, at least {low}"
    return Kind(doc, lambda where, key, value, got: whole_number(where, key, value, low, high))


def _boolean(where: str, key: str, value, got: dict) -> bool:
    if not isinstance(value, bool):
        raise UsageError(f"{where}: {key} = {value!r}: expected true or false")
    return value


def _text(where: str, key: str, value, got: dict) -> str:
    if isinstance(value, (dict, list)):
        raise UsageError(f"{where}: {key} = {value!r}: expected a string")
    return str(value)


BOOLEAN = Kind("boolean", _boolean)
TEXT = Kind("string", _text)  # a number or boolean is taken as written (titles)


def tables(title: str) -> Kind:
    """An array of TOML tables, written [[TITLE]] in the file."""
    def check(where: str, key: str, value, got: dict) -> list:
        if not isinstance(value, list):
            raise UsageError(f"{where}: {key} = {value!r}: expected {title} tables")
        return value
    return Kind(f"{title} tables", check)


def custom(doc: str, check: Check) -> Kind:
    """A kind checked by the reader's own function (names, URIs, catalog entries)."""
    return Kind(doc, check)


@dataclass(frozen=True)
class Field:
    name: str
    check: Kind
    help: str
    # The value when the key is absent: a constant, or a function of the fields read before it
    # (the table's earlier fields and the reader's context), None for "absent" (no default), or
    # REQUIRED.
    default: Any = None
    default_text: str | None = None  # how the docs spell a computed default
    label: str | None = None  # how refusals name the key, when not by its name (duration_s (DURATION))

    def __post_init__(self):
        if callable(self.default) and self.default_text is None:
            raise TypeError(f"field {self.name}: a computed default needs default_text for the docs")

    def read(self, where: str, table: dict, got: dict):
        if self.name in table:
            value = table[self.name]
        elif self.default is REQUIRED:
            raise UsageError(f"{where}: no {self.label or self.name}: expected {self.check.doc}")
        elif callable(self.default):
            value = self.default(got)
        else:
            value = self.default
        if value is None:
            return None
        return self.check(where, self.label or self.name, value, got)

    def doc_default(self) -> str:
        if self.default_text is not None:
            return self.default_text
        if self.default is None:
            return "-"
        if self.default is REQUIRED:
            return "required"
        if isinstance(self.default, bool):
            return "true" if self.default else "false"
        return f'"{self.default}"' if isinstance(self.default, str) else str(self.default)



@dataclass(frozen=True)
class Table:
    title: str  # as the TOML file spells it: [lab], [[vm.disk]]
    help: str
    fields: tuple[Field, ...]

    def keys(self) -> set[str]:
        return {f.name for f in self.fields}

    def field(self, name: str) -> Field:
        return next(f for f in self.fields if f.name == name)

    def read(self, where: str, table, **context) -> dict:
        """The table's values by field name, defaults filled in (None: absent without default),
        after refusing unknown keys; `context` is what computed defaults may use besides the
        fields read before them."""
        known_keys(where, table, self.keys())
        got = dict(context)
        for f in self.fields:
            got[f.name] = f.read(where, table, got)
        return {f.name: got[f.name] for f in self.fields}

    def markdown(self) -> list[str]:
        lines = [f"### `{self.title}`", "", self.help, "", "| key | type | default | meaning |", "|---|---|---|---|"]
        for f in self.fields:
            lines.append(f"| `{f.name}` | {f.check.doc} | {f.doc_default()} | {f.help} |")
        return lines


def markdown(tables: list[Table]) -> str:
    out: list[str] = []
    for t in tables:
        out += t.markdown() + [""]
    return "\n".join(out).rstrip() + "\n"
