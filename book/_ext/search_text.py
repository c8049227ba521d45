"""The search page's snippets read a small text file per page, written when the book is built.

The search page (``_static/pe-search.js``) quotes, for each result, the sentence in which its
page, section or API entry uses the searched word. It used to fetch each result's whole page and
parse it: 40 requests and 4.3 MB for "rotary", 1.25 MB of them the API page's HTML. When the HTML
build ends, this writes ``_static/search-text/<docname>.json`` for every page: the text of its
article as the snippets read it, and nothing else (the API page's is about a tenth of its HTML).

The file holds the article's blocks in document order, each ``[kind, text]``:

- ``"p"``, prose: the text of a paragraph, list item, heading, table cell, caption, or an API
  entry's description, without the text of the blocks inside it (a list item's paragraph is a
  block of its own); outside code cells;
- ``"t"``, an API entry's signature (``<dt>``), with ``[start, end)``, the blocks of its
  description (``<dd>``), as a third item; a method's own name is written after its owner's
  (``RotaryLlama.forward``), as the search found it;
- ``"c"``, code or printed output (a ``<pre>``), its lines as they are, or the text of a
  paragraph or table cell of a cell's HTML output.

Math is kept as its TeX between the marks ``\\x01`` and ``\\x02``, which the search page writes as
text (θ_i, 2π/ω_i) with the one converter it has. ``ids`` gives, for each ``id`` in the article,
the blocks ``[start, end)`` of the element that holds it (an API entry's reaching to the end of its
description), so that a result that links to a section or an entry is quoted from there. What no
reader reads as the article's text is left out: scripts, navigation, the headings' link marks,
the language switch.

It reads the HTML the build wrote, in either edition (the Korean pages' text is Korean).
``tests/tools/test_search_text.py`` checks the blocks of a small page.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from bs4 import BeautifulSoup, NavigableString, Tag
from sphinx.application import Sphinx

FOLDER = "search-text"
PROSE = {"p", "li", "dt", "dd", "h1", "h2", "h3", "h4", "h5", "h6", "th", "td", "caption"}
PROSE |= {"figcaption"}
# Containers whose text is code or output, never prose.
NOT_PROSE_CLASSES = {"highlight", "cell_input", "cell_output"}
REMOVED = "script, style, nav, .headerlink, .toctree-wrapper, .pe-edition-switch"
MATH_OPEN, MATH_CLOSE = "\x01", "\x02"
SPACES = re.compile(r"\s+")


def _not_prose(tag: Tag) -> bool:
    return bool(NOT_PROSE_CLASSES.intersection(tag.get("class") or []))


def _prepare(article: Tag) -> None:
    """The article as the snippets read it: what no reader reads as its text removed, math as
    marked TeX, each method's name after its owner's."""
    for element in article.select(REMOVED):
        element.decompose()
    for math in article.select(".math"):
        annotation = math.find("annotation", attrs={"encoding": "application/x-tex"})
        tex = (annotation or math).get_text()
        text = f"{MATH_OPEN}{tex}{MATH_CLOSE}"
        math.replace_with(NavigableString(f" {text} " if math.name == "div" else text))
    for signature in article.select("dt[id]"):
        own = signature.select_one(".sig-name")
        dot = signature["id"].rfind(".")
        if own is not None and dot > 0 and signature.select_one(".sig-prename") is None:
            own.insert_before(NavigableString(signature["id"][: dot + 1]))


class _Blocks:
    def __init__(self) -> None:
        self.blocks: list[list[Any]] = []
        self.ids: dict[str, list[int]] = {}
        self.descriptions: list[tuple[int, Tag]] = []
        self.ranges: dict[int, list[int]] = {}

    def walk(self, element: Tag, current: int | None, code: bool) -> None:
        if element.name == "pre":
            start = len(self.blocks)
            self.blocks.append(["c", element.get_text()])
            self._record(element, start)
            return
        code = code or _not_prose(element)
        start = len(self.blocks)
        if element.name in PROSE:
            # A cell's HTML output (a table pe_lib.describe prints) reads as code does: only
            # where the prose lacks the word.
            current = start
            kind = "c" if code else "t" if element.name == "dt" else "p"
            self.blocks.append([kind, ""])
        for child in element.children:
            if isinstance(child, Tag):
                self.walk(child, current, code)
            elif isinstance(child, NavigableString) and current is not None:
                if type(child) is NavigableString:  # not a comment, doctype or CDATA
                    self.blocks[current][1] += str(child)
        self._record(element, start)

    def _record(self, element: Tag, start: int) -> None:
        self.ranges[id(element)] = [start, len(self.blocks)]
        if element.get("id"):
            self.ids.setdefault(element["id"], [start, len(self.blocks)])


def page_text(html: str) -> dict[str, Any]:
    """The blocks and ids of a built page's article (see the module's docstring)."""
    soup = BeautifulSoup(html, "html.parser")
    article = soup.find("article") or soup.body or soup
    _prepare(article)
    found = _Blocks()
    found.walk(article, None, False)
    # An API entry: its description's blocks, and its id reaching to their end.
    descriptions: dict[int, list[int]] = {}
    for signature in article.find_all("dt"):
        description = signature.find_next_sibling()
        if description is None or description.name != "dd":
            continue
        start = found.ranges[id(signature)][0]
        descriptions[start] = found.ranges[id(description)]
        if signature.get("id") in found.ids:
            found.ids[signature["id"]][1] = found.ranges[id(description)][1]
    # Whitespace as a reader sees it; empty blocks dropped, every range moved with them.
    kept: list[list[Any]] = []
    new_index = []
    for kind, text in found.blocks:
        new_index.append(len(kept))
        text = text if kind == "c" and "\n" in text.strip() else SPACES.sub(" ", text).strip()
        if text.strip():
            kept.append([kind, text])
    new_index.append(len(kept))

    def moved(span: list[int]) -> list[int]:
        return [new_index[span[0]], new_index[span[1]]]

    for old, span in descriptions.items():
        if new_index[old] < len(kept) and kept[new_index[old]][0] == "t":
            kept[new_index[old]].append(moved(span))
    ids = {name: moved(span) for name, span in found.ids.items() if span[1] > span[0]}
    return {"blocks": kept, "ids": ids}


def _write(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    outdir = Path(app.outdir)
    suffix = app.config.html_file_suffix or ".html"
    for docname in sorted(app.env.found_docs):
        page = outdir / f"{docname}{suffix}"
        if not page.is_file():
            continue
        target = outdir / "_static" / FOLDER / f"{docname}.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        text = page_text(page.read_text(encoding="utf-8"))
        target.write_text(
            json.dumps(text, ensure_ascii=False, separators=(",", ":")), encoding="utf-8"
        )


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("build-finished", _write)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
