"""The Korean edition's page around the text: the theme's words in Korean, in Korean word order.

Reads the built Korean edition (``make book-ko``; ``$KOREAN_HTML_DIR`` checks another build).
The theme writes some of its words in English whatever the language, or builds them in English
word order ("Launch on" + " Binder", "By" + the author): ``book/_templates`` and
``book/_ext/translations.py`` put them through ``locale/ko/LC_MESSAGES/sphinx.po``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from tests.book.test_catalogues import CATALOGUES, LOCALE
from tests.book_sources import GENERATED, ROOT

pytestmark = pytest.mark.korean

KOREAN = Path(os.environ.get("KOREAN_HTML_DIR", ROOT / "_build" / "html-ko"))
#: The pages that translate an English one (the API page's is its title alone), and search.
PAGES = [
    f"{doc}.html"
    for doc in sorted(p.relative_to(LOCALE).with_suffix("").as_posix() for p in CATALOGUES)
    if doc not in GENERATED
] + ["search.html"]
#: The theme's English that no Korean page may show.
THEME_ENGLISH = (
    "Toggle primary sidebar",
    "Toggle secondary sidebar",
    "Search this book",
    "Launch on",
    "previous page",
    "next page",
    "Link to this heading",
)


def _page(relpath: str) -> BeautifulSoup:
    path = KOREAN / relpath
    if not path.is_file():
        pytest.fail(f"{path} is missing: run `make book-ko`")
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def _attributes(page: BeautifulSoup) -> list[str]:
    """Every tooltip, label and placeholder of the page."""
    return [
        str(tag[name])
        for tag in page.find_all(True)
        for name in ("title", "aria-label", "placeholder", "data-bs-original-title")
        if tag.has_attr(name)
    ]


@pytest.mark.parametrize("relpath", PAGES)
def test_the_theme_s_words_are_korean(relpath: str) -> None:
    page = _page(relpath)
    shown = " ".join(_attributes(page)) + " " + page.get_text(" ")
    left = [english for english in THEME_ENGLISH if english in shown]
    assert not left, f"{relpath}: the theme's English {left}"
    author = page.select_one(".component-author")
    assert author is not None, relpath
    byline = " ".join(author.get_text().split())
    assert byline == "지은이: The pe_lib authors", f"{relpath}: the footer reads {byline!r}"


def test_the_launch_buttons_put_the_service_first() -> None:
    page = _page("book/02_sinusoidal_formula.html")
    tooltips = {str(a.get("title")) for a in page.select(".dropdown-launch-buttons a[title]")}
    assert {"Binder에서 실행", "Colab에서 실행"} <= tooltips, tooltips
