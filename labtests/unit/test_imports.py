"""Every import in the package resolves, also those inside functions, which run only when their
function does (a module moved into a subpackage keeps `from . import x` that now points at a
sibling that does not exist: the bench's in-function imports were one such, found by make
bench-check, not by the unit tests)."""

from __future__ import annotations

import ast
import importlib
import importlib.util

import pytest

from sectorlab.paths import REPO

MODULES = sorted(p for p in (REPO / "sectorlab").rglob("*.py"))


def _dotted(path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@pytest.mark.parametrize("path", MODULES, ids=[_dotted(p) for p in MODULES])
def test_every_import_resolves(path):
    module = _dotted(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    missing = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = importlib.util.resolve_name("." * node.level + (node.module or ""), package)
            for alias in node.names:
                target = importlib.import_module(base)
                if not hasattr(target, alias.name) and importlib.util.find_spec(f"{base}.{alias.name}") is None:
                    written = "." * node.level + (node.module or "")
                    missing.append(f"line {node.lineno}: from {written} import {alias.name}")
    assert missing == [], f"{module}: {missing}"
