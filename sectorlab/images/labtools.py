"""The tools every lab guest must have, written once (images/lab-tools.toml), and what each guest
family installs for them. The Debian base build and the Oracle Linux provisioning take their
package lists from here, and every build checks the tools' commands and kernel modules in the guest
(packer/scripts/common/lab-guest.sh, with the lists from lab_env()); so a tool added for one family
cannot be forgotten for another: load() refuses a tool without packages on every family."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import tomllib

from ..errors import SectorlabError
from ..paths import REPO

TOOLS_FILE = REPO / "images" / "lab-tools.toml"
TOOL_KEYS = {"purpose", "commands", "modules"}


@dataclass(frozen=True)
class Tool:
    name: str
    purpose: str
    commands: dict[str, tuple[str, ...]]  # per family
    modules: tuple[str, ...]
    packages: dict[str, tuple[str, ...]]  # per family
    when_missing: dict[str, bool]  # per family: packages only when a module is missing
    repo: dict[str, str]  # per family: a package that enables the packages' repository


def _strings(where: str, key: str, value) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() and " " not in v for v in value):
        raise SectorlabError(f"{where}: {key} = {value!r}: expected a list of names without spaces")
    return tuple(value)


def load(path: Path = TOOLS_FILE) -> tuple[list[str], list[Tool]]:
    """The guest families and the tools, checked: every tool has a purpose, something to check in
    the guest (commands or modules) and packages on every family."""
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise SectorlabError(f"{path}: cannot read the lab tools: {e}") from e
    families = list(_strings(f"{path}", "families", data.get("families")))
    per_family = {f"{f}{suffix}" for f in families for suffix in ("", "_when_missing", "_repo")}
    per_family |= {f"commands_{f}" for f in families}
    tools = []
    for name, t in sorted(data.get("tool", {}).items()):
        where = f"{path} [tool.{name}]"
        unknown = set(t) - TOOL_KEYS - per_family
        if unknown:
            raise SectorlabError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}: expected "
                                 f"{', '.join(sorted(TOOL_KEYS | per_family))}")
        if not isinstance(t.get("purpose"), str) or not t["purpose"].strip():
            raise SectorlabError(f"{where}: no purpose: say why the lab needs it")
        commands = _strings(where, "commands", t.get("commands", []))
        modules = _strings(where, "modules", t.get("modules", []))
        if not commands and not modules:
            raise SectorlabError(f"{where}: neither commands nor modules: name what the guest must have")
        packages, when_missing, repo, family_commands = {}, {}, {}, {}
        for f in families:
            if f not in t:
                raise SectorlabError(f"{where}: no packages for the {f} guests; add {f} = [\"...\"] (a tool "
                                     f"every guest must have, on every family)")
            packages[f] = _strings(where, f, t[f])
            if not packages[f]:
                raise SectorlabError(f"{where}: {f} = []: name the package(s) that provide it on {f}")
            when_missing[f] = bool(t.get(f"{f}_when_missing", False))
            if when_missing[f] and not modules:
                raise SectorlabError(f"{where}: {f}_when_missing needs modules to check")
            repo[f] = t.get(f"{f}_repo", "")
            family_commands[f] = _strings(where, f"commands_{f}", t.get(f"commands_{f}", list(commands)))
        tools.append(Tool(name, t["purpose"], family_commands, modules, packages, when_missing, repo))
    if not tools:
        raise SectorlabError(f"{path}: no [tool.NAME] tables")
    return families, tools


def _unique(items) -> list[str]:
    return list(dict.fromkeys(items))


def packages(family: str, tools: list[Tool]) -> list[str]:
    """The packages a guest of `family` installs for the tools (those needed only when a module is
    missing excluded)."""
    return _unique(p for t in tools if not t.when_missing[family] for p in t.packages[family])


def lab_env(family: str, path: Path = TOOLS_FILE) -> list[str]:
    """The tools as environment variables for the provisioning scripts (KEY=space-separated list)."""
    families, tools = load(path)
    if family not in families:
        raise SectorlabError(f"{path}: no packages for the guest family {family!r} (families: "
                             f"{', '.join(families)})")
    return [
        f"LAB_PACKAGES={' '.join(packages(family, tools))}",
        "LAB_PACKAGES_WHEN_MISSING=" + " ".join(_unique(p for t in tools if t.when_missing[family]
                                                          for p in t.packages[family])),
        f"LAB_REPO_PACKAGES={' '.join(_unique(t.repo[family] for t in tools if t.repo[family]))}",
        f"LAB_COMMANDS={' '.join(_unique(c for t in tools for c in t.commands[family]))}",
        f"LAB_MODULES={' '.join(_unique(m for t in tools for m in t.modules))}",
    ]
