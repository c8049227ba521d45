"""The package map in ``pe_lib``'s docstring, read from the modules themselves.

Each module (and subpackage) of pe_lib is listed once with the first paragraph of its own
docstring, in the order of its layer: a module comes after every module it imports. A new
module appears in the map, and so on the API page, with no other edit. The map is built when
``pe_lib.__doc__`` is first read (``help(pe_lib)``, the docs build), never at import.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

__all__ = ["package_map"]

_ROOT = Path(__file__).resolve().parent


def _modules() -> dict[str, Path]:
    """Module name (``"rope"``, ``"checks"``) -> its source file, docstring-less ones left out."""
    found = {p.stem: p for p in _ROOT.glob("*.py") if p.name != "__init__.py"}
    found |= {p.parent.name: p for p in _ROOT.glob("*/__init__.py")}
    return {name: path for name, path in sorted(found.items()) if _docstring(path)}


def _docstring(path: Path) -> str:
    return ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""


def _imports(path: Path, names: set[str]) -> set[str]:
    """The sibling modules a module imports (``from .rope import ...``); for a subpackage, those
    its files import (``from ..sinusoidal import ...``)."""
    package = path.name == "__init__.py"
    files = sorted(path.parent.glob("*.py")) if package else [path]
    level = 2 if package else 1
    found = set()
    for file in files:
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == level:
                if node.module:
                    found.add(node.module.split(".")[0])
                else:
                    found.update(alias.name for alias in node.names)
    return found & names - {path.stem}


@functools.cache
def package_map() -> str:
    """``name  summary`` lines, by layer (a module's layer is one above the highest layer it
    imports from), then by name."""
    modules = _modules()
    needs = {name: _imports(path, set(modules)) for name, path in modules.items()}
    layer: dict[str, int] = {}

    def layer_of(name: str, seen: frozenset[str] = frozenset()) -> int:
        if name not in layer:
            below = [layer_of(n, seen | {name}) for n in needs[name] if n not in seen]
            layer[name] = 1 + max(below, default=-1)
        return layer[name]

    ordered = sorted(modules, key=lambda name: (layer_of(name), name))
    width = max(map(len, ordered)) + 2
    lines = []
    for name in ordered:
        summary = " ".join(_docstring(modules[name]).split("\n\n")[0].split())
        lines.append(f"    {name:<{width}}{summary}")
    return "\n".join(lines)
