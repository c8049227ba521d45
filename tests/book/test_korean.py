"""The Korean edition against the English book, page by page (``make korean-test``).

Needs both builds (``make book book-ko``) and the English book's messages extracted into
``_build/i18n`` (``make korean-test`` extracts them first). The two editions share every code cell
and output by construction (the catalogues hold prose only); these tests prove it on the built
pages, and that the catalogues hold every message of the English book as it is now, that every
page reads in Korean, and that each page links to itself in the other edition.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest
from babel.messages.pofile import read_po
from bs4 import BeautifulSoup, Tag

from tests.book.test_catalogues import ARTICLE_ROLE, LOCALE, article_text, whitespace
from tests.book_sources import GENERATED, ROOT

pytestmark = pytest.mark.korean

ENGLISH = ROOT / "_build" / "html"
KOREAN = ROOT / "_build" / "html-ko"
TEMPLATES = ROOT / "_build" / "i18n" / "_build" / "gettext"
# Each edition's place on the published site: the Korean one under ko/.
SITE = {"en": "", "ko": "ko/"}

HANGUL = re.compile(r"[\uac00-\ud7a3]")
LATIN = re.compile(r"[A-Za-z]")
# The least share of Hangul among the letters of a page's prose (code, math and output aside).
# The chapters name methods, models and libraries in Latin script (RoPE, YaRN, PyTorch, pe_lib).
MIN_HANGUL_SHARE = 0.6


def _require(path: Path, how: str) -> None:
    if not path.exists():
        pytest.fail(f"{path.relative_to(ROOT)} is missing: {how}")


def pages() -> list[str]:
    """The Korean edition's pages that translate an English one (every page but the API)."""
    if not KOREAN.is_dir():
        return []
    # The pages' catalogues (not the themes' words beside them); the API page's holds its
    # title alone.
    documents = [p.relative_to(LOCALE).with_suffix("") for p in (LOCALE / "book").rglob("*.po")]
    return sorted(f"{d.as_posix()}.html" for d in documents if d.as_posix() not in GENERATED)


PAGES = pages() or ["<no Korean build>"]


def soup(edition: Path, relpath: str) -> BeautifulSoup:
    """The page, parsed afresh (for a test that takes parts out of it)."""
    _require(edition / relpath, "run `make book book-ko`")
    return BeautifulSoup((edition / relpath).read_text(encoding="utf-8"), "html.parser")


@functools.cache
def parsed(edition: Path, relpath: str) -> BeautifulSoup:
    """The page, parsed once (for tests that only read it)."""
    return soup(edition, relpath)


def article(page: BeautifulSoup) -> Tag:
    found = page.select_one("article.bd-article")
    assert found is not None, "no article on the page"
    return found


def shared_cells(page: BeautifulSoup) -> list[str]:
    """Each code cell's input and output as HTML: what the two editions share.

    An output's figure keeps its image and drops what is prose: the image's alt text and the
    figure's caption, which the catalogues translate.
    """
    cells = []
    for cell in article(page).select("div.cell"):
        for figcaption in cell.select("figcaption"):
            figcaption.decompose()
        for img in cell.select("img[alt]"):
            del img["alt"]
        for part in cell.select("div.cell_input, div.cell_output"):
            cells.append(str(part))
    return cells


@pytest.mark.parametrize("relpath", PAGES)
def test_code_cells_and_outputs_are_the_english_book_s(relpath: str) -> None:
    english, korean = shared_cells(soup(ENGLISH, relpath)), shared_cells(soup(KOREAN, relpath))
    assert len(korean) == len(english), f"{relpath}: {len(korean)} cell parts, not {len(english)}"
    for index, (en, ko) in enumerate(zip(english, korean, strict=True)):
        assert ko == en, f"{relpath}: cell part {index} differs:\n{en[:300]}\n{ko[:300]}"


def prose_of(page: BeautifulSoup) -> str:
    """The text of the page's article outside code, outputs, math and citations."""
    body = article(page)
    for selector in ("div.cell", "pre", "code", ".math", ".katex", "script", "style"):
        for node in body.select(selector):
            node.decompose()
    return body.get_text(" ")


def hangul_share(text: str) -> float:
    hangul, latin = len(HANGUL.findall(text)), len(LATIN.findall(text))
    return hangul / max(hangul + latin, 1)


@pytest.mark.parametrize("relpath", PAGES)
def test_every_page_reads_in_korean(relpath: str) -> None:
    page = soup(KOREAN, relpath)
    html = page.find("html")
    assert html is not None and html.get("lang") == "ko", f"{relpath}: <html lang> is not ko"
    share = hangul_share(prose_of(page))
    print(f"\n{relpath}: Hangul {share:.0%} of the prose's letters")
    if relpath != "book/bibliography.html":  # author names and titles, in their own languages
        assert share >= MIN_HANGUL_SHARE, f"{relpath}: only {share:.0%} of the prose is Hangul"


def test_the_english_book_is_in_english() -> None:
    """The measure tells the editions apart: the English prose is not Hangul."""
    page = soup(ENGLISH, "book/02_sinusoidal_formula.html")
    assert hangul_share(prose_of(page)) < 0.05


@pytest.mark.parametrize("relpath", PAGES)
def test_article_quotes_are_verbatim_on_the_page(relpath: str) -> None:
    text = article_text()
    quotes = article(parsed(KOREAN, relpath)).select("span.article-quote")
    for quote in quotes:
        assert whitespace(quote.get_text()) in text, f"{relpath}: {quote.get_text()!r}"
    english_quotes = article(parsed(ENGLISH, relpath)).select("blockquote")
    assert len(quotes) >= len(english_quotes), f"{relpath}: a blockquote is not the article's"


def switch_target(edition: str, relpath: str, page: BeautifulSoup) -> str:
    """Where the page's language switch leads, as a path on the published site."""
    link = page.select_one("a.pe-edition-switch")
    assert link is not None, f"{edition} {relpath}: no language switch"
    here = f"https://site.invalid/{SITE[edition]}{relpath}"
    return urlsplit(urljoin(here, str(link["href"]))).path.lstrip("/")


@pytest.mark.parametrize("relpath", PAGES)
def test_language_switch_leads_to_the_same_page(relpath: str) -> None:
    assert switch_target("en", relpath, parsed(ENGLISH, relpath)) == f"ko/{relpath}"
    assert switch_target("ko", relpath, parsed(KOREAN, relpath)) == relpath
    link = parsed(KOREAN, relpath).select_one("a.pe-edition-switch")
    assert link is not None and link.get("hreflang") == "en"


def test_every_english_page_has_a_switch() -> None:
    """Pages without a Korean counterpart (the API) still link to theirs: it is built too."""
    for path in sorted(ENGLISH.rglob("*.html")):
        relpath = path.relative_to(ENGLISH).as_posix()
        if relpath.startswith(("_", "book/_")) or "/_" in relpath:
            continue
        if parsed(ENGLISH, relpath).select_one("article") is None:  # index.html: a redirect
            continue
        target = switch_target("en", relpath, parsed(ENGLISH, relpath))
        assert (KOREAN / target.removeprefix("ko/")).is_file(), f"{relpath} -> {target}"


def _theme_messages() -> set[str]:
    """What the page around the text asks the ``sphinx`` domain for, besides the messages the
    build extracts: Sphinx's and the themes' own words (their catalogues, which
    ``locale/ko/LC_MESSAGES/sphinx.po`` overrides), the words the book's extension translates by
    name (``_("...")`` in ``book/_ext/translations.py``), and the search box's text, which
    jupyter-book sets in the theme's options."""
    import jupyter_book.config
    import pydata_sphinx_theme
    import sphinx

    catalogues = [
        Path(sphinx.__file__).parent / "locale" / "sphinx.pot",
        Path(pydata_sphinx_theme.__file__).parent / "locale" / "sphinx.pot",
    ]
    words: set[str] = set()
    for path in catalogues:
        with path.open("rb") as f:
            words |= {m.id for m in read_po(f) if m.id}
    extension = (ROOT / "book" / "_ext" / "translations.py").read_text(encoding="utf-8")
    words |= set(re.findall(r'\b_\("([^"]+)"\)', extension))
    options = jupyter_book.config.get_default_sphinx_config()["html_theme_options"]
    words.add(options["search_bar_text"])
    return words


def test_catalogues_hold_every_message_of_the_english_book() -> None:
    """A changed English sentence fails here until its translation is updated (make catalogues)."""
    _require(TEMPLATES, "run `make korean-test`, which extracts the messages first")
    templates = sorted(TEMPLATES.rglob("*.pot"))
    assert templates
    for template in templates:
        domain = template.relative_to(TEMPLATES).with_suffix("")
        catalogue = LOCALE / domain.with_suffix(".po")
        assert catalogue.is_file(), f"no catalogue for {domain}: run `make catalogues`"
        with template.open("rb") as f:
            wanted = {m.id for m in read_po(f) if m.id}
        with catalogue.open("rb") as f:
            have = read_po(f)
        translated = {m.id for m in have if m.id and m.string and not m.fuzzy}
        missing = wanted - translated
        stale = {m.id for m in have if m.id} - wanted
        if domain.as_posix() == "sphinx":
            stale -= _theme_messages()
        assert not missing, (
            f"{domain}: {len(missing)} messages not translated: {sorted(missing)[:3]}"
        )
        assert not stale, (
            f"{domain}: {len(stale)} messages no longer in the book: {sorted(stale)[:3]}"
        )


def test_article_quotes_exist() -> None:
    """The edition quotes the article: more than a few passages, all verbatim (above)."""
    quotes = []
    for path in LOCALE.rglob("*.po"):
        with path.open("rb") as f:
            quotes += [q for m in read_po(f) for q in ARTICLE_ROLE.findall(m.string or "")]
    assert len(quotes) >= 10, f"only {len(quotes)} passages of the article quoted"


@pytest.mark.parametrize("relpath", PAGES)
def test_exercise_and_solution_titles_are_korean(relpath: str) -> None:
    """A solution's title repeats its exercise's, which sphinx-exercise keeps untranslated unless
    the book's extension hands it the translation (book/_ext/translations.py)."""
    titles = [
        title.get_text(" ", strip=True)
        for title in article(parsed(KOREAN, relpath)).select("p.admonition-title")
        if "(" in title.get_text()
    ]
    english = [t for t in titles if not HANGUL.search(t.split("(", 1)[1])]
    assert not english, f"{relpath}: titles left in English: {english}"


def test_titles_and_table_of_contents_are_korean() -> None:
    """The parts' captions (added by the table of contents after the catalogues are applied, and
    translated by book/_ext/translations.py) and the book's title, in the sidebar of every page."""
    for relpath in PAGES:
        page = parsed(KOREAN, relpath)
        captions = [c.get_text(strip=True) for c in page.select("nav.bd-docs-nav .caption-text")]
        assert captions and all(HANGUL.search(c) for c in captions), f"{relpath}: {captions}"
        title = page.find("title")
        assert title is not None and HANGUL.search(title.get_text().split("—")[-1]), relpath


@pytest.mark.parametrize("relpath", PAGES)
def test_figures_alt_texts_are_korean(relpath: str) -> None:
    """myst-nb sets an output image's alt text after the catalogues are applied; the book's
    extension translates it then (book/_ext/translations.py)."""
    alts = [str(img.get("alt", "")) for img in article(parsed(KOREAN, relpath)).select(".cell img")]
    english = [alt for alt in alts if alt and not HANGUL.search(alt)]
    assert not english, f"{relpath}: alt texts left in English: {english}"
