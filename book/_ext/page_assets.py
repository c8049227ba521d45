"""Each page loads only the scripts and styles it uses.

What a page uses is read from its doctree, which Sphinx's ``html-page-context`` event passes with
the page's context:

- math: KaTeX's stylesheet (``katex/katex.min.css``, written by ``katex_math.py``) and the
  book's ``pe-math.js`` (fits wide equations, copies a formula as its TeX); ``pe-charts.js``: an explorable figure or a cell's output
  image;
- the Korean web font (``fonts/noto-sans-kr.css``, the ``@font-face`` rule of the one file
  ``hangul_font.py`` makes, and ``hangul.css``, which gives it to text marked as Korean):
  Hangul in the page (its text, its title, the book's title or the language switch's label), or
  the search page, whose results may quote it; ``hangul-text.css``, the font first in the
  theme's stacks for all text: Hangul in the page's own words (not only the switch's label,
  marked ``lang="ko"``), or the search page (the font itself is preloaded where the page shows
  Hangul: ``hangul_font.py``);
- the search page: ``pe-search.js``, which writes each result's snippet, and ``pe-search.css``
  (Sphinx's own are turned off with ``html_show_search_summary``); ``pe-search-weights.js``, how
  densely each page uses each word, which the search scorer reads (``search_ranking.py``);
- code, printed output or a table (the index pages are tables): ``pe-scroll-boxes.js``, which makes each box that scrolls
  sideways reachable with the keyboard and labelled, and fades the edge beyond which it has more;
- every page: ``pe-tooltips.js``, which lets Esc dismiss the header buttons' tooltips.

The book's own files are added to the pages that use them, and to no other, by Sphinx's
``add_js_file`` and ``add_css_file`` called during ``html-page-context`` (documented: "added to
the specific HTML page"), at the priority of ``html_js_files`` and ``html_css_files``.

Other extensions register their files for every page, and Sphinx has no interface to take one
off a page; this drops them from the page's ``script_files`` and ``css_files`` (the context's
lists the ``html-page-context`` handler may change), by file name, on pages that hold none of
their users (``THIRD_PARTY``):

- copy buttons (``copybutton.js``, ``clipboard.min.js``, ``copybutton.css``): code blocks;
- sphinx-togglebutton (``togglebutton.js``, ``togglebutton.css``): the elements its selector
  names (``.toggle``, ``.admonition.dropdown``);
- sphinx-design (``design-tabs.js``, ``sphinx-design.min.css``): an element of class ``sd-*``;
- sphinx-thebe (``sphinx-thebe.js``, ``sphinx-thebe.css``): a chapter notebook, whose launch
  menu has the "Live Code" button.

``tests/tools/test_page_assets.py`` builds small pages with those extensions and fails, naming
the extension, when one no longer registers a file of that name. Sphinx's search scripts and
index, which the theme adds to every page, are left out by the book's layout template; formulas
are typeset at build time (``katex_math.py``), so no page loads a math typesetter. The browser test (``test_first_visit_weight``)
checks in the built pages that each file is loaded exactly where its users are.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from docutils import nodes

# Hangul: jamo, compatibility jamo and syllables.
HANGUL = re.compile("[\u1100-\u11ff\u3130-\u318f\uac00-\ud7a3]")
# The priority Sphinx gives html_js_files and html_css_files.
CONFIGURED = 800


class Page:
    """What a page holds, read from its doctree, title and source."""

    def __init__(
        self, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
    ) -> None:
        self.pagename = pagename
        self.templatename = templatename
        self.doctree = doctree if isinstance(doctree, nodes.Node) else nodes.container()
        switch = context.get("edition_switch") or {}
        # The page's own words (its text, its title, the book's title), and the language
        # switch's label, which the theme writes around the body marked with its language.
        self.own_text = " ".join(
            [
                self.doctree.astext(),
                str(context.get("title") or ""),
                str(context.get("docstitle") or ""),
            ]
        )
        self.text = f"{self.own_text} {switch.get('label', '')}"
        self.suffix = context.get("page_source_suffix")

    def nodes(self, condition: Callable[[nodes.Element], bool]) -> bool:
        """An element for which ``condition`` holds."""
        found = self.doctree.findall(lambda n: isinstance(n, nodes.Element) and condition(n))
        return next(iter(found), None) is not None

    def has_class(self, test: Callable[[str], bool]) -> bool:
        return self.nodes(lambda n: any(test(name) for name in n.get("classes", [])))

    def raw_html(self, text: str) -> bool:
        """A raw HTML node (a cell's HTML output) that holds ``text``."""
        return self.nodes(lambda n: isinstance(n, nodes.raw) and text in n.astext())


def _in_output(node: nodes.Element) -> bool:
    parent = node.parent
    while parent is not None:
        if "cell_output" in parent.get("classes", []):
            return True
        parent = parent.parent
    return False


def _math(page: Page) -> bool:
    return page.nodes(lambda n: isinstance(n, nodes.math | nodes.math_block))


def _charts(page: Page) -> bool:
    return page.raw_html('class="pe-chart"') or page.nodes(
        lambda n: isinstance(n, nodes.image) and _in_output(n)
    )


def _hangul(page: Page) -> bool:
    return page.pagename == "search" or bool(HANGUL.search(page.text))


def _hangul_text(page: Page) -> bool:
    """Hangul in the page's own words (not only in the language switch's label)."""
    return page.pagename == "search" or bool(HANGUL.search(page.own_text))


def _code(page: Page) -> bool:
    return page.nodes(lambda n: isinstance(n, nodes.literal_block))


def _search(page: Page) -> bool:
    return page.pagename == "search"


# Sphinx's index pages have no doctree; their templates write the index as tables.
INDEX_TEMPLATES = {
    "genindex.html",
    "genindex-split.html",
    "genindex-single.html",
    "domainindex.html",
}


def _scroll_boxes(page: Page) -> bool:
    """Code, printed output or a table (the index pages' too): boxes that may scroll sideways."""
    return (
        page.templatename in INDEX_TEMPLATES
        or _code(page)
        or page.nodes(lambda n: isinstance(n, nodes.table))
        or page.raw_html('class="pe-table-box"')
    )


def _every(page: Page) -> bool:
    return True


# The book's own files: name, priority (the Korean font's stylesheets before the configured ones,
# the scripts with them) and whether a page uses it.
OWN: list[tuple[str, int, Callable[[Page], bool]]] = [
    ("pe-charts.js", CONFIGURED, _charts),
    ("pe-math.js", CONFIGURED, _math),
    ("katex/katex.min.css", CONFIGURED - 1, _math),
    ("fonts/noto-sans-kr.css", CONFIGURED - 1, _hangul),
    ("hangul.css", CONFIGURED - 1, _hangul),
    ("hangul-text.css", CONFIGURED - 1, _hangul_text),
    ("pe-search.js", 500, _search),
    ("pe-search.css", 500, _search),
    ("pe-search-weights.js", 500, _search),
    ("pe-scroll-boxes.js", CONFIGURED, _scroll_boxes),
    ("pe-tooltips.js", CONFIGURED, _every),
]
# The scripts that work on the page's markup once it is read: the page is drawn without waiting
# for them (``defer``; they run in order, before ``DOMContentLoaded``). The search page's scripts
# run with Sphinx's, which are not deferred.
DEFERRED = {"pe-charts.js", "pe-scroll-boxes.js", "pe-tooltips.js"}
# The scripts that change the article's layout before the page is first drawn: placed after the
# article (the layout template moves the context's ``end_of_body_scripts`` to ``scripts_end``),
# they run as soon as the parser reaches them, and the page is not drawn until they have
# (``<link rel="expect" blocking="render">`` in its head). pe-math.js scales wide formulas down;
# deferred, it ran after the browser had drawn the top of the page, and a formula there, drawn
# at full size first, moved the text below it when it was scaled.
END_OF_BODY = {"pe-math.js"}


def _toggles(page: Page) -> bool:
    return page.has_class(lambda name: name in {"toggle", "dropdown"})


def _design(page: Page) -> bool:
    return page.has_class(lambda name: name.startswith("sd-"))


def _notebook(page: Page) -> bool:
    return page.suffix == ".ipynb"


# Other extensions' files, by the name at the end of their path, and whether a page uses them.
THIRD_PARTY: dict[str, tuple[str, Callable[[Page], bool]]] = {
    "copybutton.js": ("sphinx_copybutton", _code),
    "clipboard.min.js": ("sphinx_copybutton", _code),
    "copybutton.css": ("sphinx_copybutton", _code),
    "togglebutton.js": ("sphinx_togglebutton", _toggles),
    "togglebutton.css": ("sphinx_togglebutton", _toggles),
    "design-tabs.js": ("sphinx_design", _design),
    "sphinx-design.min.css": ("sphinx_design", _design),
    "sphinx-thebe.js": ("sphinx_thebe", _notebook),
    "sphinx-thebe.css": ("sphinx_thebe", _notebook),
}


def name(asset: Any) -> str:
    """The name at the end of a script's or stylesheet's path."""
    filename = getattr(asset, "filename", asset)
    return str(filename or "").split("?")[0].rsplit("/", 1)[-1]


def _add_own(
    app: Any, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    page = Page(pagename, templatename, context, doctree)
    for filename, priority, used in OWN:
        if used(page):
            if filename.endswith(".js"):
                options = {"loading_method": "defer"} if filename in DEFERRED else {}
                app.add_js_file(filename, priority=priority, **options)
            else:
                app.add_css_file(filename, priority=priority)


def _drop_unused(
    app: Any, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    page = Page(pagename, templatename, context, doctree)
    unused = {key for key, (_, used) in THIRD_PARTY.items() if not used(page)}
    for key in ("script_files", "css_files"):
        assets = context.get(key)
        if assets is not None:
            context[key] = [asset for asset in assets if name(asset) not in unused]


def _mark_end_of_body(
    app: Any, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    """The page's END_OF_BODY scripts, which the book's layout template moves after the article
    (another theme's leaves them in the head, where they wait for the page to be read)."""
    scripts = context.get("script_files") or []
    context["end_of_body_scripts"] = [js for js in scripts if name(js) in END_OF_BODY]


def setup(app: Any) -> dict[str, Any]:
    app.connect("html-page-context", _add_own)
    # After the extensions that add files per page (MathJax, the widget manager).
    app.connect("html-page-context", _drop_unused, priority=900)
    app.connect("html-page-context", _mark_end_of_body, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
