"""Every import in the package and in the tests resolves, also those inside functions, which run
only when their function does. A module moved into a subpackage keeps `from . import x` that now
points at a sibling that does not exist (the bench's in-function imports were one such, found by
make bench-check), and a test that borrows a helper from a test module that moved fails only in
the lane that runs it (labtests/lab/test_interrupts.py's `_libvirtd`, found by CI's make faults).

Read from the files, not imported: a module named is a file or a package, a name imported from it
is defined at its top (or is a module beside it)."""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from pathlib import Path

import pytest

from sectorlab.paths import REPO

OURS = ("sectorlab", "labtests")
FILES = sorted(p for top in OURS for p in (REPO / top).rglob("*.py"))


def _dotted(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _source(module: str) -> Path | None:
    base = REPO.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _top_names(body) -> set[str]:
    names: set[str] = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
            # a package's names imported when first asked for (its module __getattr__ reads _LAZY)
            if any(isinstance(t, ast.Name) and t.id == "_LAZY" for t in targets) and isinstance(node.value, ast.Dict):
                names.update(k.value for k in node.value.keys if isinstance(k, ast.Constant))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            names |= _top_names(node.body)
            names |= _top_names(getattr(node, "orelse", []))
            for handler in getattr(node, "handlers", []):
                names |= _top_names(handler.body)
            names |= _top_names(getattr(node, "finalbody", []))
    return names


@functools.cache
def _names_of(path: Path) -> frozenset[str]:
    """The top-level names a module defines (each module parsed once a run: 275 cases ask)."""
    return frozenset(_top_names(ast.parse(path.read_text()).body))


def _defines(module: str, name: str) -> bool:
    path = _source(module)
    if path is None:
        return False
    if _source(f"{module}.{name}") is not None:
        return True
    return name in _names_of(path)


def _missing(path: Path) -> list[str]:
    module = _dotted(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    missing = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
                written = "." * node.level + (node.module or "")
            elif node.module and node.module.split(".")[0] in OURS:
                base = written = node.module
            else:
                continue
            if _source(base) is None:
                missing.append(f"line {node.lineno}: from {written}: no such module")
                continue
            missing += [f"line {node.lineno}: from {written} import {a.name}"
                        for a in node.names if a.name != "*" and not _defines(base, a.name)]
        elif isinstance(node, ast.Import):
            missing += [f"line {node.lineno}: import {a.name}" for a in node.names
                        if a.name.split(".")[0] in OURS and _source(a.name) is None]
    return missing


@pytest.mark.parametrize("path", FILES, ids=[_dotted(p) for p in FILES])
def test_every_import_resolves(path):
    assert _missing(path) == [], f"{_dotted(path)}: {_missing(path)}"


def test_a_helper_borrowed_from_a_moved_test_module_is_found(tmp_path, monkeypatch):
    """The check itself: the import CI's make faults failed on is named, and its fix passes."""
    moved = REPO / "labtests" / "lab" / "test_interrupts.py"
    text = moved.read_text()
    assert "from labtests.lab.test_faults import _libvirtd" in text
    broken = tmp_path / "test_broken.py"
    broken.write_text("def f():\n    from labtests.unit.test_faults import _libvirtd\n"
                      "def g():\n    from labtests.lab.test_faults import _libvirtd\n"
                      "def h():\n    from labtests.lab.test_faults import _no_such_helper\n")
    monkeypatch.setattr(f"{__name__}._dotted", lambda p: "labtests.lab.test_broken")
    assert _missing(broken) == ["line 2: from labtests.unit.test_faults: no such module",
                                "line 6: from labtests.lab.test_faults import _no_such_helper"]



# A library imported only for the type checker (`if TYPE_CHECKING:`, so that a command that does not
# use it does not load it) is no name at run time: every function that uses it outside an annotation
# imports it itself. Neither ruff nor an import test sees a use without one; it fails only when that
# line runs (an SSH error path, say).
def _type_checking_names(tree: ast.Module) -> set[str]:
    return {(a.asname or a.name).split(".")[0] for node in tree.body if isinstance(node, ast.If)
            and "TYPE_CHECKING" in ast.unparse(node.test) for child in node.body
            if isinstance(child, (ast.Import, ast.ImportFrom)) for a in child.names}


def _unimported_uses(source: str) -> list[str]:
    tree = ast.parse(source)
    lazy = _type_checking_names(tree)
    found: list[str] = []

    def imported(scope, name: str) -> bool:
        return any(isinstance(n, (ast.Import, ast.ImportFrom)) and any((a.asname or a.name).split(".")[0] == name
                                                                        for a in n.names) for n in ast.walk(scope))

    def visit(node, scopes) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.arg) or (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                                              and child is node.returns):
                continue  # an annotation: a string under `from __future__ import annotations`
            if isinstance(child, ast.AnnAssign):
                for part in (child.target, child.value):
                    if part is not None:
                        visit(part, scopes)
                continue
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            if isinstance(child, ast.Name) and child.id in lazy and not any(imported(s, child.id) for s in scopes):
                found.append(f"line {child.lineno}: {child.id}")
            visit(child, scopes + [child] if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else scopes)

    visit(tree, [])
    return found


LAZY_FILES = [p for p in FILES if p.parts[len(REPO.parts)] == "sectorlab" and "TYPE_CHECKING" in p.read_text()]


@pytest.mark.parametrize("path", LAZY_FILES, ids=[_dotted(p) for p in LAZY_FILES])
def test_a_library_imported_for_the_type_checker_is_imported_where_it_runs(path):
    assert _unimported_uses(path.read_text()) == [], _dotted(path)


def test_a_use_without_its_own_import_is_named():
    """The check itself: an except clause naming paramiko in a function that does not import it."""
    source = ("from __future__ import annotations\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
              "    import paramiko\n\ndef f(key: paramiko.PKey) -> paramiko.PKey:\n    try:\n        pass\n"
              "    except paramiko.SSHException:\n        pass\n\ndef g():\n    import paramiko\n"
              "    return paramiko.SSHClient\n")
    assert _unimported_uses(source) == ["line 9: paramiko"]

# What the command line leaves unimported until a command needs it: each is tens to hundreds of
# milliseconds of every `sectorlab` start (paramiko 96 ms, scipy.stats over 200, numpy 60, hcl2 35
# on this host), and a refused value, `lab status` or `--help` needs none of them.
HEAVY = ("paramiko", "scipy", "numpy", "matplotlib", "hcl2", "lark", "jinja2", "hypothesis", "libnbd")
LIGHT_COMMANDS = [["--help"], ["lab", "status", "--lab", "/nonexistent/lab.toml"], ["bench", "nosuch"],
                  ["image", "build", "--guest", "nosuch"], ["crash", "nosuch"], ["lab", "validate", "/nonexistent"]]


@pytest.mark.parametrize("argv", LIGHT_COMMANDS, ids=[" ".join(a) for a in LIGHT_COMMANDS])
def test_the_command_line_starts_without_the_heavy_libraries(argv):
    script = ("import contextlib, io, sys\nfrom sectorlab import cli\n"
              "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
              "    try:\n        rc = cli.main(sys.argv[1:])\n    except SystemExit as e:\n        rc = e.code\n"
              f"print(rc, sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))")
    out = subprocess.run([sys.executable, "-c", script, *argv], capture_output=True, text=True, cwd=REPO, check=True)
    rc, loaded = out.stdout.split(" ", 1)
    assert rc in ("0", "1", "2") and loaded.strip() == "[]", (argv, out.stdout, out.stderr)


def test_the_parser_is_made_without_the_commands_modules():
    """`sectorlab --help` and a bad command line import no command's module, nor the benches' or
    Packer's: the packages' names come when first used (their _LAZY), the commands when they run."""
    script = ("import sys\nfrom sectorlab import cli\ncli.build_parser()\n"
              "print(sorted(m for m in sys.modules if m.startswith(('sectorlab.commands.', 'sectorlab.bench.', "
              "'sectorlab.images.packer', 'sectorlab.images.cache', 'sectorlab.lab', 'sectorlab.report'))))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == "['sectorlab.bench.presets']", out.stdout


@pytest.mark.parametrize("package", ["sectorlab.bench", "sectorlab.images", "sectorlab.lab"])
def test_every_name_a_package_gives_when_asked_is_there(package):
    """Each name of a package's _LAZY is in the module it names (a name moved away would be an
    AttributeError only when first used)."""
    import importlib
    module = importlib.import_module(package)
    for name, where in module._LAZY.items():
        assert hasattr(importlib.import_module(f"{package}.{where}"), name), f"{package}.{where} has no {name}"
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        module.no_such_name  # noqa: B018
