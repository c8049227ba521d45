"""book/_ext/page_assets.py in a small Sphinx build with the extensions whose files it takes off
the pages that do not use them: each file is on the page that uses it and on no other.

Sphinx has no interface to take another extension's file off a page, so page_assets.py names
them (``THIRD_PARTY``): an upgrade of one of those extensions that renames or drops a file fails
here, naming the extension, before a book build. The book's own files are added per page through
Sphinx's ``add_js_file`` and ``add_css_file``."""

from __future__ import annotations

import json

import page_assets
import pytest
from bs4 import BeautifulSoup
from conftest import build_site

CONF = """
extensions = ["myst_nb", "page_assets", "sphinx_copybutton", "sphinx_togglebutton",
              "sphinx_design", "sphinx_thebe"]
nb_execution_mode = "off"
html_static_path = []
"""
PLAIN = """Plain
=====

.. toctree::

   uses
   notebook

Words alone.
"""
USES = """Uses
====

.. code-block:: python

   print(1)

Math :math:`x^2` and Korean: 위치.

.. admonition:: Solution
   :class: dropdown

   Hidden.

.. grid:: 2

   .. grid-item:: one
"""
NOTEBOOK = {
    "cells": [
        {
            "cell_type": "markdown",
            "id": "a",
            "metadata": {},
            "source": ["# Notebook\n", "\n", "Text."],
        }
    ],
    "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
    "nbformat": 4,
    "nbformat_minor": 5,
}


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, set[str]]:
    """The names of the scripts and stylesheets each page loads."""
    out = build_site(
        tmp_path_factory.mktemp("site"),
        CONF,
        {"index.rst": PLAIN, "uses.rst": USES, "notebook.ipynb": json.dumps(NOTEBOOK)},
    )
    loaded = {}
    for page in ("index", "uses", "notebook", "search"):
        html = BeautifulSoup((out / f"{page}.html").read_text(encoding="utf-8"), "html.parser")
        paths = [s["src"] for s in html.select("script[src]")]
        paths += [link["href"] for link in html.select('link[rel="stylesheet"]')]
        loaded[page] = {page_assets.name(path) for path in paths}
    return loaded


@pytest.mark.parametrize("name", sorted(page_assets.THIRD_PARTY))
def test_another_extensions_file_only_where_used(files, name: str) -> None:
    extension, _ = page_assets.THIRD_PARTY[name]
    user = "notebook" if extension == "sphinx_thebe" else "uses"
    assert name in files[user], (
        f"{extension} no longer adds {name} to a page that uses it: update THIRD_PARTY in "
        "book/_ext/page_assets.py to the files it now adds"
    )
    assert name not in files["index"], f"{name} is on a page with none of its users"


# The pages that use each of the book's own files: pe-charts.js, none (no figure here).
USERS = {
    "pe-charts.js": set(),
    "pe-math.js": {"uses"},
    "katex/katex.min.css": {"uses"},
    "fonts/noto-sans-kr.css": {"uses", "search"},
    "hangul.css": {"uses", "search"},
    "hangul-text.css": {"uses", "search"},
    "pe-search.js": {"search"},
    "pe-search.css": {"search"},
    "pe-search-weights.js": {"search"},
    "pe-scroll-boxes.js": {"uses"},
    "pe-tooltips.js": {"index", "uses", "notebook", "search"},
}


def test_every_own_file_is_tested() -> None:
    assert [name for name, _, _ in page_assets.OWN] == list(USERS)


@pytest.mark.parametrize("name", list(USERS))
def test_the_books_own_file_only_where_used(files, name: str) -> None:
    short = page_assets.name(name)
    assert {page for page, names in files.items() if short in names} == USERS[name]


def test_the_switch_label_alone_does_not_put_the_korean_font_in_every_stack() -> None:
    """An English page whose only Hangul is the language switch's label (marked lang="ko") gets
    the font for that label (hangul.css), not first in every stack (hangul-text.css): a web
    font's arrival restyles every element whose stack names it."""
    from docutils import nodes

    def page(text: str) -> page_assets.Page:
        doctree = nodes.section("", nodes.paragraph(text=text))
        context = {"title": "Plain", "edition_switch": {"label": "한국어"}}
        return page_assets.Page("plain", "page.html", context, doctree)

    assert page_assets._hangul(page("Words alone."))
    assert not page_assets._hangul_text(page("Words alone."))
    assert page_assets._hangul_text(page("The article's title, 위치 인코딩."))
