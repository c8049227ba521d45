"""Every page's ``<meta name="description">``: what a search engine shows under its title.

A page's description is the start of its first paragraph of prose (in the Korean edition, the
translated one), cut at a word boundary to at most 160 characters; a page without prose (the
indexes, the search page) is described by its title, or what it is, and the book's title. It is added to the
``metatags`` that Sphinx's layout writes into ``<head>`` (the templating context's documented
``metatags`` variable).

Not sphinxext-opengraph's ``ogp_enable_meta_description``: its ``html-page-context`` handler
writes nothing for a page without a doctree (the indexes, the search page), and it makes a
social card image per page with matplotlib unless told not to.
"""

from __future__ import annotations

import html
import re
from typing import Any

from docutils import nodes

LONGEST = 160
# Sphinx's generated pages, which have neither prose nor a title of their own.
GENERATED = {
    "genindex": "Index of the terms and names",
    "py-modindex": "Index of pe_lib's modules",
    "search": "Search",
}


def description(doctree: Any) -> str:
    """The start of the first paragraph of prose in ``doctree`` ("" when it has none)."""
    if doctree is None:
        return ""
    for paragraph in doctree.findall(nodes.paragraph):
        # Prose of the page itself: not inside an admonition's title, a table, a list of
        # contents, a figure's caption or an output.
        if any(
            isinstance(parent, (nodes.table, nodes.title, nodes.caption, nodes.field_list))
            for parent in _parents(paragraph)
        ):
            continue
        text = re.sub(r"\s+", " ", paragraph.astext()).strip()
        if len(text) >= 40:
            return _shortened(text)
    return ""


def _parents(node: Any) -> list[Any]:
    found = []
    while node.parent is not None:
        node = node.parent
        found.append(node)
    return found


def _shortened(text: str) -> str:
    if len(text) <= LONGEST:
        return text
    cut = text[: LONGEST - 1].rsplit(" ", 1)[0].rstrip(",;:")
    return cut + "…"


def _page_context(
    app: Any, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    text = description(doctree)
    if not text:
        title = re.sub(r"<[^>]+>", "", str(context.get("title") or "")).strip()
        title = title or GENERATED.get(pagename, "")
        book = str(context.get("docstitle") or app.config.project)
        text = f"{title}: {book}" if title else book
    tag = f'<meta name="description" content="{html.escape(text, quote=True)}" />\n'
    context["metatags"] = str(context.get("metatags") or "") + tag


def setup(app: Any) -> dict[str, Any]:
    app.connect("html-page-context", _page_context)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
