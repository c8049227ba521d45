"""Each page loads only the scripts and styles it uses.

Sphinx and its extensions register their scripts and styles for every page. Some have users on
only a few pages; for those, this drops the file from each page that holds none of its users,
judged from the page's body as it is written:

- copy buttons (``copybutton.js``, ``clipboard.min.js``, ``copybutton.css``): code blocks
  (``div.highlight``);
- sphinx-togglebutton (``togglebutton.js``, ``togglebutton.css``): the elements its selector
  names (``.toggle``, ``.admonition.dropdown``);
- sphinx-design (``design-tabs.js``, ``sphinx-design.min.css``): an element of class ``sd-*``;
- sphinx-thebe (``sphinx-thebe.js``, ``sphinx-thebe.css``): a chapter notebook, whose launch
  menu has the "Live Code" button;
- the book's ``pe-math.js``: math; ``pe-charts.js``: an explorable figure or an output image;
- the Korean web font (``fonts/noto-sans-kr.css``, 40 KB of ``@font-face`` rules, and
  ``hangul.css``): Hangul in the page (its body, its title, the book's title or the language
  switch's label), or the search page, whose results may quote it.

Sphinx's search scripts and index, which the theme adds to every page, are left out by the
book's layout template; MathJax is added by Sphinx to pages with math only. The search page gets
``pe-search.js``, which writes each result's snippet, and ``pe-search.css`` (Sphinx's own are turned off with
``html_show_search_summary``), through Sphinx's ``add_js_file`` for one page. The browser test
(``test_first_visit_weight``) checks in the built pages that each file is loaded exactly where
its users are.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

# One element's classes in the page's HTML.
CLASS_ATTRIBUTE = re.compile(r'class="([^"]*)"')
# Hangul: jamo, compatibility jamo and syllables.
HANGUL = re.compile("[\u1100-\u11ff\u3130-\u318f\uac00-\ud7a3]")


class Page:
    """What a page holds, read from its body, title and source."""

    def __init__(self, pagename: str, context: dict[str, Any]) -> None:
        self.pagename = pagename
        self.body = str(context.get("body") or "")
        self.title = str(context.get("title") or "")
        # What the theme writes around the body: the book's title, the language switch's label.
        switch = context.get("edition_switch") or {}
        self.chrome = f"{context.get('docstitle') or ''} {switch.get('label', '')}"
        self.suffix = context.get("page_source_suffix")
        self.elements = [set(m.split()) for m in CLASS_ATTRIBUTE.findall(self.body)]

    def has(self, *classes: str) -> bool:
        """An element with all of ``classes``."""
        return any(set(classes) <= element for element in self.elements)

    def has_prefix(self, prefix: str) -> bool:
        return any(name.startswith(prefix) for element in self.elements for name in element)


# Each optional file (by its name at the end of its path) and whether a page uses it.
USERS: dict[str, Callable[[Page], bool]] = {}


def _users(names: tuple[str, ...], used: Callable[[Page], bool]) -> None:
    for name in names:
        USERS[name] = used


_users(("copybutton.js", "clipboard.min.js", "copybutton.css"), lambda p: p.has("highlight"))
_users(
    ("togglebutton.js", "togglebutton.css"),
    lambda p: p.has("toggle") or p.has("admonition", "dropdown"),
)
_users(("design-tabs.js", "sphinx-design.min.css"), lambda p: p.has_prefix("sd-"))
_users(("sphinx-thebe.js", "sphinx-thebe.css"), lambda p: p.suffix == ".ipynb")
_users(("pe-math.js",), lambda p: p.has("math"))
_users(
    ("pe-charts.js",), lambda p: p.has("pe-chart") or (p.has("cell_output") and "<img" in p.body)
)
_users(
    ("noto-sans-kr.css", "hangul.css"),
    lambda p: p.pagename == "search" or bool(HANGUL.search(p.body + p.title + p.chrome)),
)


def _name(asset: Any) -> str:
    filename = getattr(asset, "filename", asset)
    return str(filename or "").split("?")[0].rsplit("/", 1)[-1]


def _page_context(
    app: Any, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    page = Page(pagename, context)
    for key in ("script_files", "css_files"):
        assets = context.get(key)
        if assets is not None:
            context[key] = [
                asset for asset in assets if _name(asset) not in USERS or USERS[_name(asset)](page)
            ]


def _search_page(
    app: Any, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    # Called during html-page-context, add_js_file adds the script to this page alone.
    if pagename == "search":
        app.add_js_file("pe-search.js")
        app.add_css_file("pe-search.css")


def setup(app: Any) -> dict[str, Any]:
    app.connect("html-page-context", _search_page)
    # After the extensions that add files per page (MathJax, the widget manager).
    app.connect("html-page-context", _page_context, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
