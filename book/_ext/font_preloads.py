"""A page's font preloads: ``<link rel="preload">`` tags in its head, one way for every font.

A font that arrives after the page has been laid out makes the browser style the page again
(and lay it out again where the font changes a box): on a phone's CPU, one more long task after
the page is first drawn. So each page asks at once for every web font it draws with:
``katex_math.py`` the KaTeX fonts its formulas use, ``site_assets.py`` the icon fonts the
theme's stylesheet draws its marks from, ``hangul_font.py`` the Korean font where the page shows
Hangul. A browser fetches a font in CORS mode, so a preload that the font's request is to use
says ``crossorigin``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

HTML_CLASS = re.compile(r'class="([^"]*)"')


def fonts_drawn(body: str, users: Iterable[tuple[str, str]]) -> list[str]:
    """The fonts, once each and in the order of ``users``, of the pairs (the classes of an
    element that draws with a font, space-separated; that font) whose classes some element in
    ``body`` has."""
    elements = {frozenset(value.split()) for value in HTML_CLASS.findall(body)}
    return list(
        dict.fromkeys(
            font
            for classes, font in users
            if any(set(classes.split()) <= element for element in elements)
        )
    )


def add_font_preloads(context: dict[str, Any], paths: list[str]) -> None:
    """Preloads of ``paths`` (WOFF2 files under the output folder, ``_static/...``) in the page's
    head, where the template writes the context's ``metatags``."""
    links = [
        f'<link rel="preload" href="{context["pathto"](path, 1)}"'
        ' as="font" type="font/woff2" crossorigin>'
        for path in paths
    ]
    context["metatags"] = str(context.get("metatags") or "") + "\n".join(links)
