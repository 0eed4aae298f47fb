"""The guest-side code (sectorlab/inguest/) imports the standard library only: each file loads in
a Python started with -I -S (no site-packages, no user site, no PYTHONPATH) with only its own folder
on the path, as it runs inside a guest; and every import in it, read from its syntax tree, is a
standard-library module, a sibling file of the folder, or relative within it. The files the
images get (images.GUEST_TOOLS) import only each other, and lab-guest.sh installs all of them."""

from __future__ import annotations

import ast
import re
import subprocess
import sys

import pytest

from sectorlab.paths import REPO

INGUEST = REPO / "sectorlab" / "inguest"
FILES = sorted(p for p in INGUEST.glob("*.py") if p.name != "__init__.py")


def test_the_guest_side_files_are_the_ones_copied_or_sent_to_guests():
    from sectorlab import images
    from sectorlab.lab.diskcheck import PROBE
    assert {p.name for p in FILES} == {"asmrules.py", "blockdev.py", "guestprobe.py", "nvmeformat.py",
                                         "redocheck.py", "redodisk.py", "rules.py"}
    assert set(images.GUEST_TOOLS) | {PROBE} == set(FILES)


def _sibling_imports(path) -> set[str]:
    """The files of the folder `path` imports, relatively or (as in a guest) flat."""
    siblings = {p.stem for p in FILES}
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names} & siblings
        elif isinstance(node, ast.ImportFrom) and node.level == 1 and node.module is None:
            found |= {alias.name for alias in node.names}
    return found


def test_the_image_holds_every_file_its_tools_import():
    """The guest tools lie flat in /usr/local/lib/sectorlab/ (packer/scripts/common/lab-guest.sh): each
    file one of them imports is a guest tool too, installed there, and each launcher's module is one."""
    from sectorlab import images
    tools = {p.stem for p in images.GUEST_TOOLS}
    for path in images.GUEST_TOOLS:
        assert _sibling_imports(path) <= tools, f"{path.name} imports {_sibling_imports(path) - tools}"
    script = (REPO / "packer" / "scripts" / "common" / "lab-guest.sh").read_text()
    installed = set(re.findall(r"/tmp/sectorlab-files/(\w+)\.py\b", script))
    assert installed == tools
    launched = dict(re.findall(r"^launcher (\S+) (\w+)$", script, re.M))
    assert launched == {"/usr/local/sbin/provision-redo-disk": "redodisk",
                        "/usr/local/sbin/reformat-nvme": "nvmeformat", "/usr/local/bin/redo-check": "redocheck"}
    for module in launched.values():
        tree = ast.parse((INGUEST / f"{module}.py").read_text())
        assert any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body), module


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_it_loads_with_the_standard_library_alone(path):
    code = f"import sys; sys.path.insert(0, {str(INGUEST)!r}); import {path.stem}"
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_every_import_is_standard_library_or_its_own_folder(path):
    siblings = {p.stem for p in FILES}
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            found.append(node.module.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            assert node.module is None and all(a.name in siblings for a in node.names), ast.dump(node)
    outside = [name for name in found if name not in sys.stdlib_module_names and name not in siblings]
    assert outside == [], f"{path.name} imports {outside}"
