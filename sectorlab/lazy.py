"""A package's interface given name by name, each imported from its module when first asked for
(a module's __getattr__, PEP 562): `import sectorlab.bench` costs nothing until a bench's name is
used. The package lists its names in `_LAZY` (name -> its module, relative to the package);
labtests/unit/test_imports.py reads that table as the package's names."""

from __future__ import annotations

import importlib


def interface(package: str, table: dict[str, str], namespace: dict):
    """The package's __getattr__ and __dir__: a name of `table` from its module, or a module of the
    package; each kept in `namespace` (the package's globals) once found."""
    def __getattr__(name: str):
        if name in table:
            value = getattr(importlib.import_module(f"{package}.{table[name]}"), name)
        else:
            try:
                value = importlib.import_module(f"{package}.{name}")
            except ModuleNotFoundError as e:
                if e.name != f"{package}.{name}":
                    raise
                raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *table})

    return __getattr__, __dir__
