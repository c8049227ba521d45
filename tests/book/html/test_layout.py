"""The page at a phone's 400 px and a desktop's 1280 px: nothing reaches past the screen's edge,
the sidebars and header buttons work, the theme follows the system, and the page furniture
(solution titles, previous/next links, tooltips, inline code) reads well on a phone."""

from __future__ import annotations

import pytest

from tests.book.html.book_pages import (
    ARTICLE_SHIFTS,
    CHAPTER_PAGES,
    HTML_DIR,
    NARROW_WIDTH,
    PAGES,
    PAGES_WITH_FIGURES,
    SAMPLE_CHAPTER,
    WIDE_WIDTH,
    PageVisit,
    PlaywrightTimeoutError,
    _draw_figures,
    _edition,
    _not_available,
    _open,
)

pytestmark = pytest.mark.html

# What reaches past the right edge of the screen: elements, and text that overflows its element,
# outside the boxes that may scroll inside themselves (code, display math, wide tables).
WIDER_THAN = """(limit) => {
    const scrolls = 'pre, .highlight, .katex-display, span.math > .katex, '
        + '.pst-scrollable-table-container, .pe-table-box, .cell_output div.text_html';
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
def test_page_fits_a_narrow_screen_and_holds_still(visit, relpath: str) -> None:
    """At 400 px the page never scrolls sideways (code blocks scroll inside themselves), and
    nothing in its article moves while it loads (the bibliography's entries moved down a line
    when the GitHub mark's font arrived, the module index's rows when the script showed its
    folding sign, a Korean page's paragraphs when the Hangul font arrived after the first
    picture: hangul_font.py)."""
    if not PAGES:
        _not_available(f"no HTML pages under {HTML_DIR}: run `make book` first")
    page_visit = visit(
        relpath, viewport={"width": NARROW_WIDTH, "height": 800}, init_script=ARTICLE_SHIFTS
    )
    page = page_visit.page
    page_visit.settle()
    shifts = page.evaluate("() => window.peArticleShifts")
    if relpath in PAGES_WITH_FIGURES:
        _draw_figures(page)
    width = page.evaluate("() => document.documentElement.scrollWidth")
    wide = page.evaluate(WIDER_THAN, NARROW_WIDTH)
    assert width <= NARROW_WIDTH, f"{relpath} is {width} px wide at {NARROW_WIDTH} px: {wide}"
    assert not wide, f"{relpath}: content cut off past {NARROW_WIDTH} px: {wide}"
    assert not shifts, f"{relpath} at {NARROW_WIDTH} px: the article moved while loading: {shifts}"


# The web fonts a page fetched (each as the path of its file), those its head preloads, those
# fetched by anything but a preload (a rule that needed a font not preloaded, or a preload the
# font's request could not use), and how many fonts the page draws with once laid out.
FONTS = """async () => {
    await document.fonts.ready;
    const path = (url) => new URL(url).pathname;
    const fonts = performance.getEntriesByType('resource')
        .filter((entry) => /\\.woff2$/.test(path(entry.name)));
    const preloaded = Array.from(document.querySelectorAll('link[rel="preload"][as="font"]'),
        (link) => path(link.href));
    return {
        fetched: [...new Set(fonts.map((entry) => path(entry.name)))].sort(),
        preloaded: [...new Set(preloaded)].sort(),
        late: fonts.filter((entry) => entry.initiatorType !== 'link').map((e) => path(e.name)),
        drawn: Array.from(document.fonts).filter((face) => face.status === 'loaded').length,
    };
}"""


@pytest.mark.korean_browser
@pytest.mark.parametrize("relpath", PAGES or ["<no pages built>"])
def test_every_font_a_page_draws_with_is_preloaded(visit, relpath: str) -> None:
    """A page asks for each web font it draws with before it is laid out (font_preloads.py): the
    formulas' KaTeX fonts, the icon fonts of admonitions' and GitHub links' marks, the Korean font
    (an English page's switch to the Korean edition too). One that arrived later made the
    browser style the page again after it was first drawn (753 elements on the API page
    encodings, whose only late font was the Korean one: benchmarks/lighthouse/results.md); and
    every preload is drawn with, or the browser warns of it."""
    if not PAGES:
        _not_available(f"no HTML pages under {HTML_DIR}: run `make book` first")
    page_visit = visit(relpath, viewport={"width": NARROW_WIDTH, "height": 800})
    page_visit.settle()
    fonts = page_visit.page.evaluate(FONTS)
    assert not fonts["late"], f"{relpath}: fonts fetched without a preload: {fonts}"
    assert fonts["fetched"] == fonts["preloaded"], f"{relpath}: {fonts}"
    assert fonts["drawn"] == len(fonts["preloaded"]), f"{relpath}: a preload not drawn: {fonts}"


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
    # The sidebar toggle's and the theme switch's names in the edition's language (the Korean
    # from locale/ko's sphinx.po).
    toggle, color_mode = {
        "en": ("Toggle primary sidebar", "Color mode"),
        "ko": ("목차 열기/닫기", "색상 모드"),
    }[_edition()]
    assert toggle in names and color_mode in names, f"header buttons: {names}"
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
# The value <html data-theme> had before each write while the page loads.
THEME_WRITES = """
window.peThemeWrites = [];
new MutationObserver((records) => {
    for (const record of records) window.peThemeWrites.push(record.oldValue);
}).observe(document, {attributes: true, attributeFilter: ["data-theme"], attributeOldValue: true,
                      subtree: true});
"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_first_visit_follows_the_system_and_the_switch_changes_the_page(
    browser, base_url, scheme: str
) -> None:
    """A first visit (nothing stored) shows the system's colour scheme from the first write of
    ``data-theme`` on (the theme's script writing it again once the page is read changes nothing,
    so the page is not styled twice); the first click on the theme switch shows the other one."""
    if SAMPLE_CHAPTER not in PAGES:
        _not_available(f"{SAMPLE_CHAPTER} is not built: run `make book` first")
    page_visit = PageVisit(
        browser, base_url, SAMPLE_CHAPTER, init_script=THEME_WRITES, color_scheme=scheme
    )
    try:
        page = page_visit.page
        page.goto(page_visit.url, wait_until="load")
        page_visit.settle()
        first = page.evaluate("() => document.documentElement.dataset.theme")
        before = page.evaluate("() => window.peThemeWrites")
        switches = page.locator(THEME_SWITCH)
        visible = [switches.nth(i) for i in range(switches.count()) if switches.nth(i).is_visible()]
        assert visible, "no visible theme switch"
        visible[0].click()
        page.wait_for_timeout(300)
        after = page.evaluate("() => document.documentElement.dataset.theme")
    finally:
        page_visit.close()
    assert first == scheme, f"a {scheme} system's first visit shows the {first} theme"
    writes = list(zip(before, [*before[1:], first], strict=True))  # (old, new) per write
    assert writes and writes[0][1] == scheme, f"data-theme's writes (old, new): {writes}"
    assert all(old == new for old, new in writes[1:]), (
        f"data-theme changed after its first write, restyling the page: {writes}"
    )
    assert after != first, f"the first click on the theme switch left the page {after}"


# Every write of a tabindex, with its old value and whether the page was still being read.
TAB_STOP_WRITES = """
window.peTabStopWrites = [];
new MutationObserver((records) => {
    for (const record of records) {
        window.peTabStopWrites.push(
            {box: record.target, old: record.oldValue, reading: document.readyState === "loading"});
    }
}).observe(document, {attributes: true, attributeFilter: ["tabindex"], attributeOldValue: true,
                      subtree: true});
"""
# The boxes the theme gives a tab stop once the page has loaded (pydata-sphinx-theme 0.17).
THEME_SCROLL_BOXES = (
    "pre, .nboutput > .output_area, .cell_output > .output, .jp-RenderedHTMLCommon, "
    ".pst-scrollable-table-container"
)
# Each write after the page was read that changed a theme box's tabindex, as (box, old, new);
# and how many writes there were. Not the boxes in the elements sphinx-togglebutton rebuilds
# once the page is read (its selector: solutions, dropdowns), whose layout changes then.
TAB_STOP_CHANGES = """(boxes) => {
    const writes = window.peTabStopWrites;
    const changes = [];
    writes.forEach((write, i) => {
        const next = writes.slice(i + 1).find((later) => later.box === write.box);
        const now = next ? next.old : write.box.getAttribute("tabindex");
        const rebuilt = write.box.closest('.toggle, .admonition.dropdown');
        if (!write.reading && write.box.matches(boxes) && !rebuilt && now !== write.old) {
            changes.push([write.box.tagName + "." + write.box.className + " " + write.box.textContent.slice(0, 40), write.old, now]);
        }
    });
    return {changes, after: writes.filter((write) => !write.reading).length};
}"""


@pytest.mark.parametrize("width", [NARROW_WIDTH, WIDE_WIDTH])
def test_the_themes_tab_stops_are_in_place_before_it_sets_them(
    browser, base_url, width: int
) -> None:
    """The tab stops the theme sets on the boxes that scroll once the page has loaded (one style
    pass per box it changes) are set while the page is read, each box read and then each written:
    the theme's pass writes them again and changes none (but in the solutions and dropdowns that
    sphinx-togglebutton rebuilds after the page is read)."""
    if SAMPLE_CHAPTER not in PAGES:
        _not_available(f"{SAMPLE_CHAPTER} is not built: run `make book` first")
    page_visit = PageVisit(
        browser,
        base_url,
        SAMPLE_CHAPTER,
        init_script=TAB_STOP_WRITES,
        viewport={"width": width, "height": 800},
    )
    try:
        page_visit.page.goto(page_visit.url, wait_until="load")
        page_visit.settle()
        found = page_visit.page.evaluate(TAB_STOP_CHANGES, THEME_SCROLL_BOXES)
    finally:
        page_visit.close()
    assert found["after"] > 0, "the theme set no tab stop once the page had loaded"
    assert not found["changes"], (
        f"{SAMPLE_CHAPTER} at {width} px: tab stops changed after the page was read "
        f"(box, old, new): {found['changes'][:8]}"
    )


# --------------------------------------------------------------------------- the page's furniture
# Issue 55: "Solution to Exercise" titles underlined a leading space and wrapped into three
# narrow lines on a phone; the previous/next links wrapped into 4-5-line columns; the search
# dialog's magnifier sat on the placeholder's first letter; Esc left a header button's tooltip
# standing over the other header buttons; punctuation started a line after inline code.
SOLUTIONS_PAGE = "book/07_rope_alibi.html"
# The least share of a solution box's width its title's text may use on a phone (the theme
# kept a quarter of it free for the toggle's arrow, 86 px of 366).
MIN_TITLE_SHARE = 0.8
SOLUTION_TITLES = """() => Array.from(document.querySelectorAll('div.solution > .admonition-title'),
    title => {
        const style = getComputedStyle(title);
        const text = title.clientWidth - parseFloat(style.paddingLeft)
            - parseFloat(style.paddingRight);
        const link = title.querySelector('a');
        return {text: title.textContent.trim().slice(0, 40),
                share: text / title.parentElement.clientWidth,
                link: link ? link.textContent : null};
    })"""


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_solution_titles_fit_a_phone(browser, base_url, theme: str) -> None:
    """At 400 px a solution's title uses the width of its box (the arrow needs little of it),
    and its link to the exercise starts with the exercise's name, not with a space."""
    if SOLUTIONS_PAGE not in PAGES:
        _not_available(f"{SOLUTIONS_PAGE} is not built: run `make book` first")
    page_visit = _open(
        browser, base_url, SOLUTIONS_PAGE, theme, viewport={"width": NARROW_WIDTH, "height": 800}
    )
    try:
        titles = page_visit.page.evaluate(SOLUTION_TITLES)
    finally:
        page_visit.close()
    assert titles, f"{SOLUTIONS_PAGE}: no solution (a vacuous check)"
    narrow = [t for t in titles if t["share"] < MIN_TITLE_SHARE]
    assert not narrow, f"titles squeezed to under {MIN_TITLE_SHARE:.0%} of their box: {narrow}"
    spaced = [t for t in titles if not t["link"] or t["link"][:1].isspace()]
    assert not spaced, f"links that start with a space (underlined) or are missing: {spaced}"


# The previous and next links under a chapter: each one's width against the area's, and how
# many lines its title takes.
PREV_NEXT = """() => {
    const area = Array.from(document.querySelectorAll('.prev-next-area'))
        .find(a => a.getClientRects().length > 0);
    if (!area) return null;
    return Array.from(area.querySelectorAll('a'), link => {
        const title = link.querySelector('.prev-next-title');
        const lines = title.getBoundingClientRect().height
            / parseFloat(getComputedStyle(title).lineHeight);
        return {text: title.textContent.trim(), lines: Math.round(lines * 10) / 10,
                share: link.getBoundingClientRect().width / area.getBoundingClientRect().width};
    });
}"""


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_previous_and_next_links_fit_a_phone(browser, base_url, theme: str) -> None:
    """At 400 px the links to the previous and next chapters are stacked, each as wide as the
    column allows, and each title takes at most two lines (side by side they took four or five)."""
    if SOLUTIONS_PAGE not in PAGES:
        _not_available(f"{SOLUTIONS_PAGE} is not built: run `make book` first")
    page_visit = _open(
        browser, base_url, SOLUTIONS_PAGE, theme, viewport={"width": NARROW_WIDTH, "height": 800}
    )
    try:
        links = page_visit.page.evaluate(PREV_NEXT)
    finally:
        page_visit.close()
    assert links and len(links) == 2, f"{SOLUTIONS_PAGE}: previous and next links: {links}"
    cramped = [link for link in links if link["lines"] > 2 or link["share"] < 0.5]
    assert not cramped, f"previous/next links cramped at {NARROW_WIDTH} px: {links}"


# The search dialog opened from the header: where its magnifier ends and where the
# placeholder's first letter starts.
OPEN_SEARCH_DIALOG = """async () => {
    const button = Array.from(document.querySelectorAll('button.search-button__button'))
        .find(b => b.getClientRects().length > 0);
    if (!button) return 'no visible search button';
    button.click();
    await new Promise(resolve => setTimeout(resolve, 300));
    const form = Array.from(document.querySelectorAll('form.bd-search'))
        .find(f => f.getClientRects().length > 0);
    if (!form) return 'the search dialog did not open';
    const icon = form.querySelector('.fa-magnifying-glass');
    const input = form.querySelector('input');
    if (!icon || !input || !input.placeholder) return 'no icon, field or placeholder';
    const text = input.getBoundingClientRect().left + parseFloat(getComputedStyle(input).paddingLeft);
    const right = icon.getBoundingClientRect().right;
    return right <= text ? null : `icon ends at ${right}, the placeholder starts at ${text}`;
}"""


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("width", [NARROW_WIDTH, WIDE_WIDTH])
def test_search_dialog_icon_leaves_the_placeholder_readable(
    browser, base_url, width: int, theme: str
) -> None:
    """The magnifier of the search dialog every page opens ends before its placeholder's first
    letter (it stood on it)."""
    if SAMPLE_CHAPTER not in PAGES:
        _not_available(f"{SAMPLE_CHAPTER} is not built: run `make book` first")
    page_visit = _open(
        browser, base_url, SAMPLE_CHAPTER, theme, viewport={"width": width, "height": 800}
    )
    try:
        overlap = page_visit.page.evaluate(OPEN_SEARCH_DIALOG)
    finally:
        page_visit.close()
    assert overlap is None, f"{width} px, {theme}: {overlap}"


SHOWN_TOOLTIPS = """() => Array.from(document.querySelectorAll('.tooltip.show'),
    tip => tip.textContent.trim())"""


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("width", [NARROW_WIDTH, WIDE_WIDTH])
def test_escape_dismisses_the_header_tooltips(browser, base_url, width: int, theme: str) -> None:
    """A header button's tooltip goes when the reader presses Esc, and none comes back when Esc
    closes the search dialog and the focus returns to the button that opened it."""
    if SAMPLE_CHAPTER not in PAGES:
        _not_available(f"{SAMPLE_CHAPTER} is not built: run `make book` first")
    page_visit = _open(
        browser, base_url, SAMPLE_CHAPTER, theme, viewport={"width": width, "height": 800}
    )
    try:
        page = page_visit.page
        buttons = page.locator("button.search-button__button")
        button = next(buttons.nth(i) for i in range(buttons.count()) if buttons.nth(i).is_visible())
        button.hover()
        try:
            page.wait_for_function(f"() => ({SHOWN_TOOLTIPS})().length > 0", timeout=3000)
        except PlaywrightTimeoutError:
            pass
        hovered = page.evaluate(SHOWN_TOOLTIPS)
        page.keyboard.press("Escape")
        page.wait_for_timeout(400)
        after_escape = page.evaluate(SHOWN_TOOLTIPS)
        button.focus()
        page.keyboard.press("Enter")
        page.wait_for_timeout(400)
        page.keyboard.press("Escape")
        page.wait_for_timeout(600)
        after_dialog = page.evaluate(SHOWN_TOOLTIPS)
    finally:
        page_visit.close()
    assert hovered, f"{width} px: no tooltip on the hovered search button (a vacuous check)"
    assert not after_escape, f"{width} px, {theme}: Esc left the tooltip {after_escape}"
    assert not after_dialog, f"{width} px, {theme}: the closed dialog left {after_dialog}"


# Each inline code followed by punctuation whose punctuation starts a new line.
PUNCTUATION_AFTER_CODE = """() => {
    const found = [];
    for (const code of document.querySelectorAll('article code.literal')) {
        const next = code.nextSibling;
        if (!next || next.nodeType !== Node.TEXT_NODE || !/^[.,;:)!?]/.test(next.data)) continue;
        if (code.getClientRects().length === 0) continue;
        const rects = code.getClientRects();
        const last = rects[rects.length - 1];
        const range = document.createRange();
        range.setStart(next, 0);
        range.setEnd(next, 1);
        const mark = range.getBoundingClientRect();
        if (mark.width > 0 && mark.top > last.top + last.height / 2) {
            found.push(code.textContent + next.data[0]);
        }
    }
    return found;
}"""


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("relpath", CHAPTER_PAGES or ["<no pages built>"])
def test_no_punctuation_starts_a_line_after_inline_code(
    browser, base_url, relpath: str, theme: str
) -> None:
    """At 400 px no comma or full stop after inline code starts a line of its own (chapter 7's
    "check_relative_shift" then "." on the next line)."""
    if relpath not in PAGES:
        _not_available(f"{relpath} is not built: run `make book` first")
    page_visit = _open(
        browser, base_url, relpath, theme, viewport={"width": NARROW_WIDTH, "height": 800}
    )
    try:
        found = page_visit.page.evaluate(PUNCTUATION_AFTER_CODE)
    finally:
        page_visit.close()
    assert not found, (
        f"{relpath} ({theme}) at {NARROW_WIDTH} px, punctuation after code starts a line: {found}"
    )
