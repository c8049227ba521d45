"""book/_ext/translations.py in small Sphinx projects built here (``sphinx.testing``): the Korean
search language, and the exercise titles that sphinx-exercise keeps untranslated.

Both reach past the dependencies' documented interfaces (Sphinx has no way to add a search
language but its ``sphinx.search.languages`` table; sphinx-exercise keeps its exercises in
``env.sphinx_exercise_registry``): a Sphinx or sphinx-exercise upgrade that moves either fails
here, with the extension's message or the assertion's, before a book build."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import translations
from conftest import build_site

KOREAN_CONF = """
extensions = ["translations", "sphinx_exercise"]
language = "ko"
html_search_language = "ko"
locale_dirs = ["locale"]
"""


def _build(tmp_path: Path, index: str, po: str | None = None) -> Path:
    """``index.rst`` built in Korean, with ``po`` as its catalogue."""
    extra = {} if po is None else {"locale/ko/LC_MESSAGES/index.po": po.encode("utf-8")}
    return build_site(tmp_path, KOREAN_CONF, {"index.rst": index}, extra)


@pytest.mark.parametrize(
    ("word", "stem"),
    [
        ("인코딩은", "인코딩"),
        ("인코딩을", "인코딩"),
        ("학습에서", "학습"),  # 에서 before 서 could be
        ("위치들의", "위치"),
        ("파장", "파장"),  # nothing to strip
        ("이는", "이는"),  # what would be left is not a word
    ],
)
def test_korean_stem(word: str, stem: str) -> None:
    assert translations.korean_stem(word) == stem


def test_korean_search_indexes_words_without_their_particles(tmp_path: Path) -> None:
    html = _build(tmp_path, "제목\n====\n\n인코딩은 위치를 나타낸다. 인코딩을 더한다.\n")
    text = (html / "searchindex.js").read_text(encoding="utf-8")
    index = json.loads(re.fullmatch(r"Search\.setIndex\((.*)\)\s*", text, re.S)[1])
    assert "인코딩" in index["terms"], sorted(index["terms"])
    assert "인코딩은" not in index["terms"] and "인코딩을" not in index["terms"]
    # The page's search strips the same endings from what the reader types.
    language_data = (html / "_static" / "language_data.js").read_text(encoding="utf-8")
    assert "koreanEndings" in language_data and '"에서"' in language_data


PO = """msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\\n"

msgid "Count the pairs"
msgstr "쌍을 세어라"
"""
EXERCISE = """Title
=====

.. exercise:: Count the pairs
   :label: ex-pairs

   How many?

.. solution:: ex-pairs

   Four.
"""


def test_exercise_and_solution_titles_translated(tmp_path: Path) -> None:
    html = (_build(tmp_path, EXERCISE, PO) / "index.html").read_text(encoding="utf-8")
    assert "Count the pairs" not in html
    # The exercise's own title, and its solution's, which sphinx-exercise takes from its registry.
    assert html.count("쌍을 세어라") >= 2, html


def test_the_themes_words_come_from_the_book_s_catalogues(tmp_path: Path) -> None:
    """The Korean pages' "Color mode" (the theme's template, Sphinx's domain) and "Live Code"
    (sphinx-book-theme's launch button, its own ``booktheme`` catalogue, whose Korean lacks it)
    come from ``locale/ko/LC_MESSAGES``: Sphinx reads ``sphinx.po``, the book's extension
    compiles and registers ``booktheme.po``."""
    locale = Path(translations.__file__).parents[2] / "locale" / "ko" / "LC_MESSAGES"
    extra = {
        f"locale/ko/LC_MESSAGES/{name}.po": (locale / f"{name}.po").read_bytes()
        for name in ("sphinx", "booktheme")
    }
    # What the theme's buttons would read, written down while the build's translators stand.
    conf = KOREAN_CONF + (
        'html_theme = "sphinx_book_theme"\n'
        "def setup(app):\n"
        "    def record(app, error):\n"
        "        from sphinx.locale import get_translation\n"
        "        words = get_translation('booktheme')\n"
        "        with open(app.outdir / 'words.txt', 'w', encoding='utf-8') as f:\n"
        "            f.write(words('Live Code') + '|' + words('previous page'))\n"
        "    app.connect('build-finished', record)\n"
    )
    out = build_site(tmp_path, conf, {"index.rst": "제목\n====\n\n본문.\n"}, extra)
    page = (out / "index.html").read_text(encoding="utf-8")
    assert 'aria-label="색상 모드"' in page and "Color mode" not in page
    # "previous page": the theme's own Korean still comes first
    assert (out / "words.txt").read_text(encoding="utf-8") == "라이브 코드|이전 페이지"
