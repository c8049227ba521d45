"""The book's tools (``tools/``) and local Sphinx extensions (``book/_ext``) import their
neighbours as top-level modules, as ``python tools/x.py`` and ``jupyter-book build`` run them."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for folder in (ROOT / "tools", ROOT / "book" / "_ext"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
