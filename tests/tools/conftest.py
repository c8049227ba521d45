"""The book's tools (``tools/``) and local Sphinx extensions (``book/_ext``) import their
neighbours as top-level modules, as ``python tools/x.py`` and ``jupyter-book build`` run them."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for folder in (ROOT / "tools", ROOT / "book" / "_ext"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))


import pytest  # noqa: E402


def build_site(
    directory: Path, conf: str, pages: dict[str, str], extra: dict[str, bytes] | None = None
) -> Path:
    """A small Sphinx project (``conf.py`` text, page sources by file name, other files by path)
    built to HTML in ``directory`` (``sphinx.testing``); returns the output folder. A warning
    fails the build, as in the book's strict build."""
    from io import StringIO

    from sphinx.testing.util import SphinxTestApp

    source = directory / "src"
    source.mkdir()
    (source / "conf.py").write_text(conf, encoding="utf-8")
    for name, text in pages.items():
        (source / name).write_text(text, encoding="utf-8")
    for name, data in (extra or {}).items():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_bytes(data)
    warnings = StringIO()
    app = SphinxTestApp("html", srcdir=source, builddir=directory / "out", warning=warnings)
    try:
        app.build()
    finally:
        app.cleanup()
    assert not warnings.getvalue().strip(), warnings.getvalue()
    return directory / "out" / "html"


@pytest.fixture
def sphinx_build(tmp_path):
    """``build(conf, pages, extra=None)``: :func:`build_site` in the test's own folder."""
    return lambda *args, **kwargs: build_site(tmp_path, *args, **kwargs)
