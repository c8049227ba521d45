"""The page at a phone's 400 px and a desktop's 1280 px: nothing reaches past the screen's edge,
the sidebars and header buttons work, the theme follows the system, and the page furniture
(solution titles, previous/next links, tooltips, inline code) reads well on a phone."""

from __future__ import annotations

import pytest

from tests.book.html.book_pages import (
    HTML_DIR,
    NARROW_WIDTH,
    PAGES,
    PAGES_WITH_FIGURES,
    SAMPLE_CHAPTER,
    WIDE_WIDTH,
    PageVisit,
    _draw_figures,
    _edition,
    _not_available,
)

pytestmark = pytest.mark.html

# What reaches past the right edge of the screen: elements, and text that overflows its element,
# outside the boxes that may scroll inside themselves (code, display math, wide tables).
WIDER_THAN = """(limit) => {
    const scrolls = 'pre, .highlight, .katex-display, span.math > .katex, '
        + '.pst-scrollable-table-container, .pe-table-box';
    const found = [];
    for (const el of document.querySelectorAll('article *')) {
        if (el.getBoundingClientRect().right > limit + 1 && !el.closest(scrolls)) {
            found.push(el.tagName + '.' + el.className);
        }
    }
    const walker = document.createTreeWalker(document.querySelector('article') || document.body,
                                             NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
        const node = walker.currentNode;
        if (!node.data.trim() || !node.parentElement || node.parentElement.closest(scrolls)) continue;
        const range = document.createRange();
        range.selectNodeContents(node);
        if (range.getBoundingClientRect().right > limit + 1) found.push('text: ' + node.data.slice(0, 40));
    }
    return found.slice(0, 5);
}"""


@pytest.mark.korean_browser
@pytest.mark.parametrize("relpath", PAGES or ["<no pages built>"])
def test_page_fits_a_narrow_screen(visit, relpath: str) -> None:
    """At 400 px the page never scrolls sideways (code blocks scroll inside themselves)."""
    if not PAGES:
        _not_available(f"no HTML pages under {HTML_DIR}: run `make book` first")
    page_visit = visit(relpath, viewport={"width": NARROW_WIDTH, "height": 800})
    page = page_visit.page
    page_visit.settle()
    if relpath in PAGES_WITH_FIGURES:
        _draw_figures(page)
    width = page.evaluate("() => document.documentElement.scrollWidth")
    wide = page.evaluate(WIDER_THAN, NARROW_WIDTH)
    assert width <= NARROW_WIDTH, f"{relpath} is {width} px wide at {NARROW_WIDTH} px: {wide}"
    assert not wide, f"{relpath}: content cut off past {NARROW_WIDTH} px: {wide}"


VISIBLE = (
    "el => !!el && el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden'"
)


def _visible(page, selector: str) -> bool:
    return page.evaluate(f"(s) => ({VISIBLE})(document.querySelector(s))", selector)


def _visible_toggle(page, name: str):
    toggles = page.locator(f"button.{name}-toggle")
    visible = [toggles.nth(i) for i in range(toggles.count()) if toggles.nth(i).is_visible()]
    assert len(visible) == 1, f"{len(visible)} visible {name} toggles, expected one"
    return visible[0]


def test_sidebar_toggles_open_on_a_phone(visit) -> None:
    """At 400 px the visible toggles open the chapter list and the page contents."""
    if SAMPLE_CHAPTER not in PAGES:
        _not_available(f"{SAMPLE_CHAPTER} is not built: run `make book` first")
    page_visit = visit(SAMPLE_CHAPTER, viewport={"width": NARROW_WIDTH, "height": 800})
    page = page_visit.page
    page_visit.settle()
    assert not _visible(page, "#pst-primary-sidebar a.reference"), "chapter list shown at once"
    _visible_toggle(page, "primary").click()
    page.wait_for_timeout(400)
    assert page.evaluate("() => document.querySelector('#pst-primary-sidebar-modal').open"), (
        "the primary toggle did not open the chapter list"
    )
    links = page.locator("#pst-primary-sidebar-modal a.reference")
    assert links.count() >= 8 and links.first.is_visible(), "the opened chapter list is empty"
    page.keyboard.press("Escape")
    page.wait_for_timeout(300)
    _visible_toggle(page, "secondary").click()
    page.wait_for_timeout(400)
    assert page.evaluate("() => document.querySelector('#pst-secondary-sidebar-modal').open"), (
        "the secondary toggle did not open the page contents"
    )
    assert page.locator("#pst-secondary-sidebar-modal nav a").first.is_visible()


def test_sidebar_toggle_collapses_on_a_desktop_and_search_is_offered_once(visit) -> None:
    if SAMPLE_CHAPTER not in PAGES:
        _not_available(f"{SAMPLE_CHAPTER} is not built: run `make book` first")
    page_visit = visit(SAMPLE_CHAPTER, viewport={"width": WIDE_WIDTH, "height": 900})
    page = page_visit.page
    page_visit.settle()
    assert _visible(page, "#pst-primary-sidebar"), "the chapter list is not shown at 1280 px"
    searches = page.evaluate(
        f"""() => Array.from(document.querySelectorAll(
            'form.bd-search, .search-button-field, button.search-button, input[type=search]'))
            .filter({VISIBLE}).length"""
    )
    assert searches == 1, f"{searches} visible search boxes or buttons, expected one"
    article_before = page.evaluate("() => document.querySelector('article').clientWidth")
    _visible_toggle(page, "primary").click()
    page.wait_for_timeout(600)
    assert not _visible(page, "#pst-primary-sidebar"), "the toggle did not collapse the sidebar"
    article_after = page.evaluate("() => document.querySelector('article').clientWidth")
    assert article_after > article_before, "the text did not take the freed space"


# Every button of the article's header (sidebar toggles, launch and download menus, theme switch,
# search) that the page shows, with the size of the icon drawn in it.
HEADER_BUTTONS = f"""() => Array.from(document.querySelectorAll(
        '.bd-header-article button, .bd-header-article a.btn'))
    .filter({VISIBLE})
    .map(button => {{
        const drawn = Array.from(button.querySelectorAll('svg'), svg => svg.getBoundingClientRect())
            .filter(box => box.width >= 12 && box.height >= 12);
        const box = button.getBoundingClientRect();
        const header = button.closest('.bd-header-article').getBoundingClientRect();
        return {{what: button.title || button.getAttribute('aria-label') || button.className,
                 icons: drawn.length, label: button.classList.contains('pe-edition-switch')
                     ? button.textContent.trim() : null,
                 inside: box.top >= header.top - 0.5 && box.bottom <= header.bottom + 0.5
                     && box.left >= -0.5
                     && box.right <= document.documentElement.clientWidth + 0.5,
                 lines: (() => {{
                     const words = document.createRange();
                     words.selectNodeContents(button);
                     return new Set(Array.from(words.getClientRects(),
                                               line => Math.round(line.top))).size;
                 }})()}};
    }})"""


@pytest.mark.korean_browser
@pytest.mark.parametrize("width", [NARROW_WIDTH, WIDE_WIDTH])
def test_every_header_button_shows_its_icon(browser_with_scrollbars, base_url, width: int) -> None:
    """The sidebar toggles, the theme switch and the other buttons of the header each show one
    icon (the icon script draws the theme's <i> and <span> icons, with their data-mode), the
    language switch shows its word, and all of them stand in the header's one row."""
    if SAMPLE_CHAPTER not in PAGES:
        _not_available(f"{SAMPLE_CHAPTER} is not built: run `make book` first")
    # Scrollbars shown, as on most desktops: the row has 15 px less than the window.
    page_visit = PageVisit(
        browser_with_scrollbars, base_url, SAMPLE_CHAPTER, viewport={"width": width, "height": 800}
    )
    try:
        page = page_visit.page
        page.goto(page_visit.url, wait_until="load")
        page_visit.settle()
        buttons = page.evaluate(HEADER_BUTTONS)
    finally:
        page_visit.close()
    names = " ".join(button["what"] for button in buttons)
    # The theme switch's name in the edition's language (the Korean from locale/ko's sphinx.po).
    color_mode = {"en": "Color mode", "ko": "색상 모드"}[_edition()]
    assert "primary sidebar" in names and color_mode in names, f"header buttons: {names}"
    # The language switch is a word, the other edition's language, not an icon.
    switches = [button["label"] for button in buttons if button["label"] is not None]
    assert switches in (["한국어"], ["English"]), f"at {width} px, language switch: {switches}"
    blank = [b["what"] for b in buttons if b["label"] is None and b["icons"] != 1]
    assert not blank, f"at {width} px, header buttons without exactly one icon: {blank}"
    # One row: the language switch and the buttons side by side, none cut off by the header.
    outside = [b["label"] or b["what"] for b in buttons if not b["inside"]]
    assert not outside, f"at {width} px, cut off by the header's edge: {outside}"
    broken = [b["label"] for b in buttons if b["label"] is not None and b["lines"] != 1]
    assert not broken, f"at {width} px, the language switch's word broken over lines: {broken}"


THEME_SWITCH = "button.theme-switch-button"


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_first_visit_follows_the_system_and_the_switch_changes_the_page(
    browser, base_url, scheme: str
) -> None:
    """A first visit (nothing stored) shows the system's colour scheme; the first click on the
    theme switch shows the other one."""
    if SAMPLE_CHAPTER not in PAGES:
        _not_available(f"{SAMPLE_CHAPTER} is not built: run `make book` first")
    page_visit = PageVisit(browser, base_url, SAMPLE_CHAPTER, color_scheme=scheme)
    try:
        page = page_visit.page
        page.goto(page_visit.url, wait_until="load")
        page_visit.settle()
        first = page.evaluate("() => document.documentElement.dataset.theme")
        switches = page.locator(THEME_SWITCH)
        visible = [switches.nth(i) for i in range(switches.count()) if switches.nth(i).is_visible()]
        assert visible, "no visible theme switch"
        visible[0].click()
        page.wait_for_timeout(300)
        after = page.evaluate("() => document.documentElement.dataset.theme")
    finally:
        page_visit.close()
    assert first == scheme, f"a {scheme} system's first visit shows the {first} theme"
    assert after != first, f"the first click on the theme switch left the page {after}"
