"""The two editions: the language switch leads to the same page and place in the other edition,
and the Korean pages' headings and captions keep their words and weight."""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from tests.book.html.book_pages import (
    HTML_DIR,
    KOREAN_DIR,
    _not_available,
)

pytestmark = pytest.mark.html


@pytest.mark.parametrize("relpath", ["index.html", "book/02_sinusoidal_formula.html"])
def test_language_switch_leads_to_a_built_page_of_the_local_build(relpath: str) -> None:
    """`make book` alone gives a build whose switch works from the files, as a reader opening
    _build/html/index.html follows it (no server: the link is resolved in the file system)."""
    page = HTML_DIR / relpath
    if not page.is_file():
        _not_available(f"{page} is not built: run `make book` first")
    switch = re.search(r'<a class="[^"]*pe-edition-switch[^"]*" href="([^"]+)"', page.read_text())
    if switch is None:
        pytest.skip(f"{relpath} has no language switch (this edition has no twin)")
    # A browser joins file URLs as paths, without resolving links (the ko/ folder is one).
    target = Path(os.path.normpath(page.parent / unquote(urlsplit(switch.group(1)).path)))
    assert target.is_file(), f"{relpath}'s language switch leads to a missing file: {target}"
    back = re.search(r'<a class="[^"]*pe-edition-switch[^"]*" href="([^"]+)"', target.read_text())
    assert back, f"{target} has no switch back"
    returned = Path(os.path.normpath(target.parent / unquote(urlsplit(back.group(1)).path)))
    assert returned == Path(os.path.normpath(page)), f"{target}'s switch leads to {returned}"


# --------------------------------------------------------------------------- the two editions

# A chapter, and a section of it below the first screen, whose id both editions share.
SWITCH_PAGE, SWITCH_SECTION = "book/10_inside_trained_models.html", "a-rotary-model-for-real"


def _korean_built() -> None:
    if HTML_DIR == KOREAN_DIR or not (KOREAN_DIR / SWITCH_PAGE).is_file():
        _not_available(f"the English build with the Korean edition beside it ({KOREAN_DIR})")


def _follow_switch(page) -> str:
    """Click the language switch where the reader is (a dispatched click: Playwright's own
    would first scroll the header's button into view, which a reader's click does not)."""
    with page.expect_navigation(wait_until="load"):
        page.locator(".pe-edition-switch").first.dispatch_event("click")
    return page.url


def test_language_switch_keeps_the_reader_s_place_both_ways(visit) -> None:
    """From §10.2 of the English chapter (its address's #anchor) the switch opens §10.2 of the
    Korean chapter, and the Korean page's switch comes back to it; a reader who scrolled to the
    section without an anchor lands there too. Without script the link is the page itself."""
    _korean_built()
    english = visit(f"{SWITCH_PAGE}#{SWITCH_SECTION}")
    page = english.page
    href = page.locator(".pe-edition-switch").first.get_attribute("href") or ""
    korean = _follow_switch(page)
    assert korean.endswith(f"ko/{SWITCH_PAGE}#{SWITCH_SECTION}"), korean
    assert page.evaluate("lang => document.documentElement.lang", None) == "ko"
    assert page.locator(f"section#{SWITCH_SECTION}").count() == 1
    back = _follow_switch(page)
    assert back == english.url, back
    # Scrolled there, no anchor in the address: the section being read is carried.
    page.goto(english.url.split("#")[0], wait_until="load")
    page.evaluate(
        "id => window.scrollTo({behavior: 'instant', top: window.scrollY + 40"
        " + document.getElementById(id).getBoundingClientRect().top})",
        SWITCH_SECTION,
    )
    assert _follow_switch(page).endswith(f"ko/{SWITCH_PAGE}#{SWITCH_SECTION}")
    # At the top of the page the switch opens the other page's top, as the plain link does.
    page.goto(english.url.split("#")[0], wait_until="load")
    assert "#" not in _follow_switch(page)
    assert href.endswith(f"ko/{SWITCH_PAGE}"), f"the link without script: {href}"


def test_korean_headings_keep_words_whole_and_captions_one_weight(visit) -> None:
    """The Korean edition's headings break between words only (word-break: keep-all), and a
    caption's Latin letters have the weight of its Hangul: the Korean font has one (400)."""
    _korean_built()
    korean = visit(f"ko/{SWITCH_PAGE}", viewport={"width": 400, "height": 800})
    styles = korean.page.evaluate(
        """() => ({
            headings: [...document.querySelectorAll('article h1, article h2')]
                .map(h => getComputedStyle(h).wordBreak),
            captions: [...document.querySelectorAll('figure figcaption')]
                .map(c => getComputedStyle(c).fontWeight),
        })"""
    )
    assert styles["headings"] and set(styles["headings"]) == {"keep-all"}, styles
    assert styles["captions"] and set(styles["captions"]) == {"400"}, styles
    english = visit(SWITCH_PAGE)
    english_breaks = english.page.evaluate(
        "() => getComputedStyle(document.querySelector('article h1')).wordBreak"
    )
    assert english_breaks != "keep-all", "the English edition breaks as before"
