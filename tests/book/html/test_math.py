"""Formulas: typeset when the book was built, fitted to the column before the browser first
draws them (even in a browser that never has an idle moment), copied as their TeX, never cut or given a
scrollbar; far ones fitted as the reader nears them."""

from __future__ import annotations

import pytest

from tests.book.html.book_pages import (
    ARTICLE_SHIFTS,
    CHART_THEME,
    FIGURE_TIMEOUT_MS,
    HTML_DIR,
    LAZY_PAGE,
    NARROW_WIDTH,
    OVERFLOWING,
    PAGES,
    PAGES_WITH_FIGURES,
    WIDE_WIDTH,
    PageVisit,
    _evaluate_open,
    _not_available,
    _open,
    _open_as_loaded,
    _open_wide,
)

pytestmark = pytest.mark.html


# A browser that never has an idle moment, as one of several headless tabs has been seen to have
# for minutes: requestIdleCallback calls back only when a timeout it was given passes.
NEVER_IDLE = """window.requestIdleCallback = (callback, options) =>
    options && options.timeout !== undefined ? setTimeout(callback, options.timeout) : 0;"""


def test_formulas_are_there_and_fitted_at_load_with_no_idle_moment(visit) -> None:
    """No typesetter to wait for: when the page has loaded, every formula is typeset and the
    equations are fitted, even in a browser that never has an idle moment."""
    page = visit("book/07_rope_alibi.html", init_script=NEVER_IDLE).page
    state = page.evaluate(
        """() => ({fitted: document.documentElement.dataset.peMathFitted,
            math: document.querySelectorAll('div.math, span.math').length,
            typeset: document.querySelectorAll('div.math .katex, span.math .katex').length})"""
    )
    assert state["fitted"] == "true", state
    assert state["math"] > 50 and state["typeset"] == state["math"], state


# A selection copied (document.execCommand('copy') fires the page's copy event): what the
# clipboard gets, and each selected formula's TeX (KaTeX's MathML annotation).
COPY = """(selector) => {
    const element = document.querySelector(selector);
    const range = document.createRange();
    range.selectNodeContents(element);
    const selection = getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    let text = null;
    window.addEventListener('copy', (event) => {
        text = event.clipboardData.getData('text/plain');
    }, {once: true});
    document.execCommand('copy');
    return {text, tex: Array.from(element.querySelectorAll('annotation[encoding="application/x-tex"]'),
                                  node => node.textContent)};
}"""


def test_a_copied_formula_is_its_tex(visit) -> None:
    """Copying text with formulas gives each formula's TeX ($...$, $$...$$ for a display), not
    KaTeX's glyphs, and no equation number."""
    page = visit("book/02_sinusoidal_formula.html").page
    page.evaluate(
        "() => { const p = Array.from(document.querySelectorAll('article p'))"
        ".find(p => p.querySelector('span.math')); p.id = 'pe-copy-inline'; }"
    )
    inline = page.evaluate(COPY, "#pe-copy-inline")
    display = page.evaluate(COPY, "article div.math")
    assert inline["tex"], "no inline formula selected (a vacuous check)"
    for tex in inline["tex"]:
        assert f"${tex}$" in inline["text"], inline
    assert display["text"].strip() == f"$${display['tex'][0]}$$", display


MATH_BOXES = "article div.math > .katex-display"


@pytest.mark.parametrize("relpath", PAGES or ["<no pages built>"])
def test_no_equation_is_cut_at_1280(visit, relpath: str) -> None:
    if not PAGES:
        _not_available(f"no HTML pages under {HTML_DIR}: run `make book` first")
    cut = _open_wide(visit, relpath).evaluate(OVERFLOWING, MATH_BOXES)
    assert not cut, f"{relpath}: display equations wider than the column at 1280 px: {cut}"


# The elements of the formulas' HTML that hold text of their own, each marked with a number.
MARK_FORMULA_TEXT = """() => {
    let count = 0;
    for (const element of document.querySelectorAll('.katex-html span')) {
        if (Array.from(element.childNodes).some((n) => n.nodeType === 3 && n.data.length)) {
            element.dataset.peFormulaText = String(count++);
        }
    }
    return count;
}"""
# Pages whose formulas draw with most of KaTeX's fonts the book uses (main, math italic, AMS,
# and the large delimiters' sizes 1 to 3).
FORMULA_FONT_PAGES = [
    "book/04_relative_positions.html",
    "book/07_rope_alibi.html",
    "book/api/encodings.html",
]


@pytest.mark.korean_browser
@pytest.mark.parametrize("relpath", FORMULA_FONT_PAGES)
def test_every_glyph_of_a_formula_is_drawn_by_katex_s_fonts(visit, relpath: str) -> None:
    """The build cuts KaTeX's fonts down to the characters of the book's formulas
    (katex_math.py's subset_katex_fonts): every glyph of a formula is still drawn by one of them,
    as Chromium reports per element (``CSS.getPlatformFontsForNode``); one the cut had dropped
    would be drawn by a system font."""
    if not (HTML_DIR / relpath).is_file():
        _not_available(f"{relpath} is not built under {HTML_DIR}: run `make book` first")
    page = _open_wide(visit, relpath)
    assert page.evaluate(MARK_FORMULA_TEXT) > 100
    page.evaluate("() => document.fonts.ready")
    cdp = page.context.new_cdp_session(page)
    cdp.send("DOM.enable")
    cdp.send("CSS.enable")
    root = cdp.send("DOM.getDocument", {"depth": 0})["root"]["nodeId"]
    node_ids = cdp.send(
        "DOM.querySelectorAll", {"nodeId": root, "selector": "[data-pe-formula-text]"}
    )["nodeIds"]
    drawn, others = set(), []
    for node_id in node_ids:
        for font in cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node_id})["fonts"]:
            drawn.add(font["familyName"])
            if not (font["isCustomFont"] and font["familyName"].startswith("KaTeX_")):
                html = cdp.send("DOM.getOuterHTML", {"nodeId": node_id})["outerHTML"]
                others.append(f"{html[:120]} drawn with {font}")
    cdp.detach()
    assert {"KaTeX_Main", "KaTeX_Math"} <= drawn, drawn
    assert not others, f"{relpath}: formula glyphs not drawn by KaTeX's fonts: {others[:5]}"


# Inline formulas that are scroll boxes, and scroll boxes of display math a keyboard cannot
# reach or a screen reader cannot name.
MATH_SCROLLERS = """() => {
    const bad = [];
    for (const box of document.querySelectorAll(
            'article div.math > .katex-display, article span.math > .katex')) {
        const style = getComputedStyle(box);
        const scrolls = ['auto', 'scroll'].includes(style.overflowX);
        const text = (box.closest('.math') || box).textContent.slice(0, 40);
        const inline = !box.classList.contains('katex-display');
        const bar = box.offsetHeight - box.clientHeight - parseFloat(style.borderTopWidth)
            - parseFloat(style.borderBottomWidth);
        const overflowing = box.scrollWidth > box.clientWidth + 1;
        if (inline && scrolls && !box.classList.contains('pe-math-scrolls')) {
            bad.push(`inline formula is a scroll box (scrollbar ${bar} px): ${text}`);
        } else if (scrolls && overflowing && !(box.tabIndex >= 0 && box.getAttribute('aria-label'))) {
            bad.push(`formula scrolls, unreachable by keyboard or unnamed: ${text}`);
        } else if (scrolls && bar > 0 && !overflowing) {
            bad.push(`formula shows a scrollbar with nothing to scroll: ${text}`);
        }
    }
    return bad;
}"""


@pytest.mark.parametrize("width", [NARROW_WIDTH, WIDE_WIDTH])
@pytest.mark.parametrize("relpath", PAGES or ["<no pages built>"])
def test_no_inline_formula_scrolls_with_scrollbars_shown(
    browser_with_scrollbars, base_url, relpath: str, width: int
) -> None:
    """With scrollbars shown, no inline formula is a scroll box, none shows a scrollbar it does
    not need, and a display formula that still scrolls is focusable and named."""
    if not PAGES:
        _not_available(f"no HTML pages under {HTML_DIR}: run `make book` first")
    viewport = {"width": width, "height": 900}
    bad = _evaluate_open(
        browser_with_scrollbars, base_url, relpath, MATH_SCROLLERS, viewport=viewport
    )
    assert not bad, f"{relpath} at {width} px ({len(bad)}): {bad[:5]}"


# The layouts Chromium ran (the DevTools protocol's Performance.getMetrics, LayoutCount) while
# the page fitted its equations again after the column changed width.
REFIT_LAYOUTS_PAGE = "book/07_rope_alibi.html"


def test_equations_are_fitted_in_one_layout(browser, base_url) -> None:
    """pe-math.js measures every equation, then writes: one layout for the page, not one per
    equation (chapter 7 has over a hundred formulas)."""
    if REFIT_LAYOUTS_PAGE not in PAGES:
        _not_available(f"{REFIT_LAYOUTS_PAGE} is not built: run `make book` first")
    page_visit = _open(
        browser, base_url, REFIT_LAYOUTS_PAGE, viewport={"width": WIDE_WIDTH, "height": 900}
    )
    try:
        page = page_visit.page
        session = page.context.new_cdp_session(page)
        session.send("Performance.enable")
        formulas = page.locator("article .katex").count()

        def layouts() -> int:
            metrics = session.send("Performance.getMetrics")["metrics"]
            return int(next(m["value"] for m in metrics if m["name"] == "LayoutCount"))

        page.wait_for_timeout(500)
        start = layouts()
        # Narrow the column by 30 px: the ResizeObserver fits every equation again.
        page.evaluate("""() => new Promise(resolve => {
            document.querySelector('article').style.maxWidth =
                (document.querySelector('article').clientWidth - 30) + 'px';
            requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(resolve, 200)));
        })""")
        spent = layouts() - start
    finally:
        page_visit.close()
    assert formulas > 50, f"only {formulas} formulas on {REFIT_LAYOUTS_PAGE}: a vacuous check"
    assert spent <= 4, f"{spent} layouts to fit {formulas} formulas again (expected one or two)"


# A page whose formulas are scaled on a phone (nine of them at 400 px).
SCALED_PAGE = "book/04_relative_positions.html"
# One of KaTeX's fonts arriving again (a second face of KaTeX_Main, from the same file): the
# formulas' classes and styles written while pe-math.js fits the page again, and whether it did.
FONT_ARRIVES = """async () => {
    const article = document.querySelector('article');
    const scaled = article.querySelectorAll('.katex-display[style*="font-size"]').length;
    let writes = 0;
    new MutationObserver((records) => { writes += records.length; }).observe(
        article, {attributes: true, subtree: true, attributeFilter: ['style', 'class']});
    document.documentElement.dataset.peMathFitted = 'again';
    const url = new URL('../_static/katex/fonts/KaTeX_Main-Regular.woff2', location.href);
    const face = new FontFace('KaTeX_Main', `url(${url})`);
    document.fonts.add(face);
    await face.load();
    await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
    await new Promise((done) => setTimeout(done, 200));
    return {scaled, writes, fitted: document.documentElement.dataset.peMathFitted};
}"""


def test_a_fit_again_that_changes_no_scale_writes_nothing(browser, base_url) -> None:
    """One of KaTeX's fonts arriving after the first fit makes pe-math.js fit the page again;
    where no formula's scale changes it writes nothing (a write styles the whole formula again,
    and on a phone several formulas are scaled)."""
    if SCALED_PAGE not in PAGES:
        _not_available(f"{SCALED_PAGE} is not built: run `make book` first")
    viewport = {"width": NARROW_WIDTH, "height": 800}
    found = _evaluate_open(browser, base_url, SCALED_PAGE, FONT_ARRIVES, viewport=viewport)
    assert found["scaled"] >= 3, f"{SCALED_PAGE} at {NARROW_WIDTH} px: {found} (vacuous)"
    assert found["fitted"] == "true", f"the font's arrival did not fit the page again: {found}"
    assert found["writes"] == 0, f"fitting again changed no scale but wrote: {found}"


# A page with a formula scaled on a phone in its first screen (equation 3.1).
FIRST_SCREEN_SCALED_PAGE = "book/03_frequency_spectrum.html"
LOADED = """() => ({
    shifts: window.peArticleShifts,
    scaled: Array.from(document.querySelectorAll('article .katex-display[style*="font-size"]'))
        .filter((box) => box.getBoundingClientRect().top < innerHeight).length,
})"""


def test_the_first_picture_has_its_formulas_fitted(browser, base_url) -> None:
    """A phone draws a formula for the first time already fitted, though it may draw the top of
    the page before the rest is read: drawn at full size first, then scaled down, a formula near
    the top moved all the text below it (a layout shift of 0.1 on chapter 3, Lighthouse's whole
    allowance)."""
    if FIRST_SCREEN_SCALED_PAGE not in PAGES:
        _not_available(f"{FIRST_SCREEN_SCALED_PAGE} is not built: run `make book` first")
    viewport = {"width": NARROW_WIDTH, "height": 800}
    page_visit = PageVisit(
        browser, base_url, FIRST_SCREEN_SCALED_PAGE, init_script=ARTICLE_SHIFTS, viewport=viewport
    )
    try:
        page_visit.page.goto(page_visit.url, wait_until="load")
        page_visit.settle()
        found = page_visit.page.evaluate(LOADED)
    finally:
        page_visit.close()
    assert found["scaled"] >= 1, f"no scaled formula in the first screen: {found} (vacuous)"
    assert not found["shifts"], f"the article's content moved while the page loaded: {found}"


# The page's last display formula and last figure, where they are and whether they are done.
FAR_BELOW = """() => {
    const formula = Array.from(document.querySelectorAll('article div.math')).pop();
    const figure = Array.from(document.querySelectorAll('article div.pe-chart')).pop();
    const box = formula.querySelector('.katex-display');
    return {
        screens: Math.min(formula.getBoundingClientRect().top,
                          figure.getBoundingClientRect().top) / innerHeight,
        formulas: document.querySelectorAll('div.math, span.math').length,
        typeset: document.querySelectorAll('div.math .katex, span.math .katex').length,
        formulaTypeset: box !== null && box.querySelector('.katex-mathml math') !== null,
        formulaText: box ? box.querySelector('.katex-html').textContent.trim().slice(0, 40) : '',
        figureState: figure.dataset.peChartState || null,
        figureSvg: figure.querySelector('svg') !== null,
        vegaLoaded: typeof window.vega !== 'undefined',
        pageWidth: document.documentElement.scrollWidth,
    };
}"""
# Every display formula: within its box (fitted by pe-math.js) or a named, focusable scroll box.
UNFITTED = """() => Array.from(document.querySelectorAll('article div.math > .katex-display'))
    .filter(box => box.getClientRects().length > 0)
    .filter(box => box.scrollWidth > box.clientWidth + 1
        && !(box.classList.contains('pe-math-scrolls') && box.tabIndex >= 0
             && box.getAttribute('aria-label')))
    .map(box => (box.closest('.math') || box).textContent.slice(0, 40))"""


def test_far_formulas_and_figures_wait_until_the_reader_scrolls_to_them(browser, base_url) -> None:
    """At 400 px, after loading, every formula is typeset and fitted, the last one far below too
    (with its MathML for a screen reader), while a figure far below is not yet drawn (nor is Vega
    loaded); scrolled to, the figure is drawn, in the theme the page has then, and no inline
    formula is a scroll box."""
    if LAZY_PAGE not in PAGES or LAZY_PAGE not in PAGES_WITH_FIGURES:
        _not_available(f"{LAZY_PAGE} is not built with its figure: run `make book` first")
    page_visit = _open_as_loaded(browser, base_url, LAZY_PAGE)
    try:
        page = page_visit.page
        loaded = page.evaluate(FAR_BELOW)
        unfitted = page.evaluate(UNFITTED)
        # The reader switches to the dark theme before reaching the figure.
        page.evaluate("() => document.documentElement.dataset.theme = 'dark'")
        page.evaluate(
            "() => Array.from(document.querySelectorAll('article div.pe-chart')).pop()"
            ".scrollIntoView()"
        )
        page.wait_for_function(
            "() => Array.from(document.querySelectorAll('article div.pe-chart')).pop()"
            ".dataset.peChartState",
            timeout=FIGURE_TIMEOUT_MS,
        )
        scrolled = page.evaluate(FAR_BELOW)
        last = page.evaluate_handle(
            "() => Array.from(document.querySelectorAll('article div.pe-chart')).pop()"
        )
        chart = page.evaluate(CHART_THEME, last)[-1]
        scrollers = page.evaluate(MATH_SCROLLERS)
    finally:
        page_visit.close()
    assert loaded["screens"] > 3, f"{LAZY_PAGE}: nothing far below the first screen: {loaded}"
    assert loaded["formulaTypeset"] and loaded["formulaText"], f"at load: {loaded}"
    assert loaded["pageWidth"] <= NARROW_WIDTH, f"at load, wider than the screen: {loaded}"
    assert loaded["typeset"] == loaded["formulas"], f"at load, formulas not typeset: {loaded}"
    assert loaded["figureState"] is None and not loaded["figureSvg"], f"at load: {loaded}"
    assert not loaded["vegaLoaded"], f"at load, Vega loaded for a figure far below: {loaded}"
    assert scrolled["figureState"] == "drawn" and scrolled["figureSvg"], f"scrolled: {scrolled}"
    assert not unfitted, f"{LAZY_PAGE}: formulas not fitted at load: {unfitted}"
    assert chart["background"] == chart["page"], f"figure drawn on scrolling, not dark: {chart}"
    assert not scrollers, f"{LAZY_PAGE} at {NARROW_WIDTH} px after scrolling: {scrollers[:5]}"
