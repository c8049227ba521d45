"""A page's font preloads: ``<link rel="preload">`` tags in its head, one way for every font.

A browser fetches a font in CORS mode, so a preload that the font's request is to use says
``crossorigin``. ``katex_math.py`` preloads the KaTeX fonts a page's formulas draw with,
``hangul_font.py`` the Korean font on a page whose words hold Hangul.
"""

from __future__ import annotations

from typing import Any


def add_font_preloads(context: dict[str, Any], paths: list[str]) -> None:
    """Preloads of ``paths`` (WOFF2 files under the output folder, ``_static/...``) in the page's
    head, where the template writes the context's ``metatags``."""
    links = [
        f'<link rel="preload" href="{context["pathto"](path, 1)}"'
        ' as="font" type="font/woff2" crossorigin>'
        for path in paths
    ]
    context["metatags"] = str(context.get("metatags") or "") + "\n".join(links)
