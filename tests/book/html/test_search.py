"""The search page: every result quoted where it uses the word, the chapter about a word before
the API entries that name it, a light page that fits a phone, a readable field; highlighted
words keep their contrast."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest

from tests.book.html.book_pages import (
    AXE,
    NARROW_WIDTH,
    PAGES,
    SAMPLE_CHAPTER,
    _edition,
    _not_available,
    _open,
)

pytestmark = pytest.mark.html


# Per edition: queries, each with the forms of the word its snippets must show (lower case).
# "rotary" is stemmed to "rotari", which is not in the text (Sphinx then quoted the page from its
# start); "wavelength" sits in prose and in API names; "theta" in math, which Sphinx quoted as TeX
# (\\(\\theta_i\\)) and a snippet shows as the letter; the Korean query carries a particle
# (파장을), which the search drops: 파장은, 파장이 are found too.
SNIPPET_SEARCHES = {
    "en": {"rotary": ("rotar",), "wavelength": ("wavelength",), "theta": ("θ", "theta")},
    "ko": {
        "파장을": ("파장",),
        "회전": ("회전",),
        "theta": ("θ", "theta"),
        # An English word that the Korean chapters write in Korean (the glossary's 파장): their
        # snippets quote the Korean sentence, the API entries' the English one.
        "wavelength": ("wavelength", "파장"),
    },
}
# What math leaves in a snippet that quotes its TeX: a backslash, a command's name (M_k^ top,
# endpmatrix. endsplit, lambda_i = frac2 pi omega_i), or a brace.
TEX_LEFT = re.compile(
    r"[\\{}]|\^ ?top\b|\b(?:begin|end)[pbv]?matrix\b|\b[pbv]matrix\b|\bend(?:split|align)\b|"
    r"\b(?:frac|dfrac|sqrt|mathrm|mathbb|mathbf|mathcal|operatorname|text(?:tt|rm|bf)|qquad|quad|"
    r"cdot|ldots|omega|lambda|alpha|theta_i)\b"
)
SNIPPETS_DONE = "() => !document.querySelector('#search-results li[data-pe-snippet=\"pending\"]')"
RESULTS = """() => Array.from(document.querySelectorAll('#search-results ul.search > li'), li => ({
    href: li.querySelector(':scope > a').getAttribute('href'),
    api: li.querySelector(':scope > span') !== null,
    snippet: (li.querySelector('p.context') || {}).textContent || null,
    marked: Array.from(li.querySelectorAll('p.context span.highlighted'), s => s.textContent)}))"""


def _search(visit, query: str, **options) -> tuple[object, list[dict]]:
    page = visit(f"search.html?q={query}", **options).page
    page.wait_for_selector("#search-results ul.search li", timeout=20_000)
    page.wait_for_function(
        # Sphinx lists the results one by one, then says how many it found.
        "() => document.querySelector('#search-results p.search-summary')?.textContent.trim()",
        timeout=20_000,
    )
    page.wait_for_function(SNIPPETS_DONE, timeout=20_000)
    return page, page.evaluate(RESULTS)


@pytest.mark.korean_browser
def test_search_snippets_show_the_word_in_its_sentence(visit) -> None:
    """Every result, API entries included, has a snippet; each shows a form of the searched word,
    highlighted, with neither the article header's text (the language switch's label) nor math as
    TeX; where the prose uses the word, the snippet quotes the prose, not code."""
    if "search.html" not in PAGES:
        _not_available("no search page built")
    for query, forms in SNIPPET_SEARCHES[_edition()].items():
        page, results = _search(visit, query)
        assert len(results) >= 3, f"{query}: {len(results)} results"
        switch = page.locator(".pe-edition-switch").first.inner_text().strip()
        problems = []
        for result in results:
            snippet = result["snippet"]
            if not snippet:
                problems.append(f"{result['href']}: no snippet")
                continue
            lower = snippet.lower()
            if not any(form in lower for form in forms):
                problems.append(f"{result['href']}: no {forms[0]!r} in {snippet!r}")
            if not any(form in mark.lower() for mark in result["marked"] for form in forms):
                problems.append(f"{result['href']}: the word not highlighted in {snippet!r}")
            if switch in snippet or TEX_LEFT.search(snippet):
                problems.append(f"{result['href']}: TeX or the header in {snippet!r}")
            if re.search(r"\bimport\b|^from \w+ import", snippet):
                problems.append(f"{result['href']}: quotes code: {snippet!r}")
        assert not problems, f"{query}:\n  " + "\n  ".join(problems)


# Per edition: a query, and the chapters about it, each of which must come before every API entry
# the query finds (objects whose names hold the word: RotaryEmbedding, wavelengths, ...).
RANKINGS = {
    "en": {
        "rotary": ["book/07_rope_alibi.html"],
        "wavelength": ["book/02_sinusoidal_formula.html", "book/03_frequency_spectrum.html"],
    },
    "ko": {
        "rotary": ["book/07_rope_alibi.html"],
        "wavelength": ["book/02_sinusoidal_formula.html", "book/03_frequency_spectrum.html"],
    },
}


@pytest.mark.korean_browser
def test_search_ranks_the_chapter_about_a_word_above_api_entries(visit) -> None:
    """The chapter about a word (RoPE's for "rotary") is listed before the API entries whose
    names hold it (Sphinx listed four of them before it)."""
    if "search.html" not in PAGES:
        _not_available("no search page built")
    for query, chapters in RANKINGS[_edition()].items():
        _, results = _search(visit, query)
        hrefs = [result["href"] for result in results]
        api = [i for i, result in enumerate(results) if result["api"]]
        assert api, f"{query}: no API entry among the results (a vacuous check): {hrefs}"
        for chapter in chapters:
            assert chapter in hrefs, f"{query}: {chapter} not found: {hrefs}"
            assert hrefs.index(chapter) < min(api), f"{query}: {chapter} after API entries: {hrefs}"


@pytest.mark.korean_browser
def test_search_field_icon_leaves_the_query_readable(visit) -> None:
    """The magnifier in the search page's field ends before the query's first letter."""
    if "search.html" not in PAGES:
        _not_available("no search page built")
    page = visit("search.html?q=wavelength").page
    overlap = page.evaluate(
        """() => {
        const form = document.querySelector('.bd-search-container form.bd-search');
        if (!form) return 'no search form on the search page';
        const icon = form.querySelector('.fa-magnifying-glass');
        const input = form.querySelector('input');
        if (!icon || !input) return 'no icon or no input';
        const text = input.getBoundingClientRect().left
            + parseFloat(getComputedStyle(input).paddingLeft);
        const right = icon.getBoundingClientRect().right;
        return right <= text ? null : `icon ends at ${right}, the query starts at ${text}`;
    }"""
    )
    assert overlap is None, overlap


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_search_highlight_keeps_text_contrast(browser, base_url, theme: str) -> None:
    """The words a search led to, highlighted on the page (``?highlight=``), keep 4.5:1."""
    if SAMPLE_CHAPTER not in PAGES:
        _not_available(f"{SAMPLE_CHAPTER} is not built: run `make book` first")
    if not AXE.is_file():
        _not_available(f"{AXE} is missing: run `python tools/fetch_axe.py`")
    page_visit = _open(browser, base_url, SAMPLE_CHAPTER + "?highlight=wavelength", theme)
    try:
        page = page_visit.page
        page.wait_for_function("() => document.querySelector('span.highlighted') !== null")
        page.add_script_tag(content=AXE.read_text(encoding="utf-8"))
        found = page.evaluate(
            """async () => (await axe.run({include: [['span.highlighted']]},
                {runOnly: ['color-contrast']})).violations.map(v => v.nodes.length)"""
        )
    finally:
        page_visit.close()
    assert not found, f"{theme}: {sum(found)} highlighted words below 4.5:1"


# Issue 55: the search page was 481 px wide on a 400 px phone (long API names in its snippets),
# and fetched every result's page to quote it: 4.34 MB and 40 requests for "rotary", the API
# page alone 1.25 MB. Its snippets now read a small text file per page (search_text.py).
# The most a search for "rotary" may load, everything counted (bytes).
MAX_SEARCH_BYTES = 2_500_000
# The most the snippets' text files together may weigh for it (bytes).
MAX_SNIPPET_BYTES = 1_000_000


# The layout shifts the page made by itself (none follows an input) while its results and their
# snippets arrived: their sum, and the results shown. The observer is handed the shifts so far in
# a task of its own, and not called at all when there was none: the answer comes after a wait.
LAYOUT_SHIFT = """() => new Promise((resolve) => {
    const shifts = [];
    const observer = new PerformanceObserver((list) => {
        shifts.push(...list.getEntries().filter((entry) => !entry.hadRecentInput));
    });
    observer.observe({type: 'layout-shift', buffered: true});
    setTimeout(() => {
        observer.disconnect();
        resolve({
            total: shifts.reduce((sum, entry) => sum + entry.value, 0),
            shown: Array.from(document.querySelectorAll('#search-results ul.search > li'))
                .filter((li) => li.getClientRects().length > 0).length,
        });
    }, 250);
})"""
# The most the shifts may add up to: "good" in Chrome's measure of layout stability is below 0.1.
MAX_LAYOUT_SHIFT = 0.02


@pytest.mark.korean_browser
def test_search_results_arrive_without_moving_what_is_shown(visit) -> None:
    """On a phone, the results and their snippets arrive without moving a result already on the
    screen: each is shown once its snippet is written and every result above it is shown."""
    if "search.html" not in PAGES:
        _not_available("no search page built")
    page, results = _search(visit, "rotary", viewport={"width": NARROW_WIDTH, "height": 800})
    page.wait_for_timeout(300)
    shifts = page.evaluate(LAYOUT_SHIFT)
    assert len(results) >= 3 and shifts["shown"] == len(results), f"{len(results)}: {shifts}"
    assert shifts["total"] < MAX_LAYOUT_SHIFT, f"search for rotary: layout shifts {shifts}"


@pytest.mark.korean_browser
@pytest.mark.parametrize("theme", ["light", "dark"])
def test_search_page_fits_a_phone_and_loads_no_result_page(visit, theme: str) -> None:
    """At 400 px, in both themes, the search page with a query's results and snippets stays
    within the screen, fetches none of the result pages themselves, and loads under 2.5 MB,
    the snippets' text under 1 MB."""
    if "search.html" not in PAGES:
        _not_available("no search page built")
    sizes: dict[str, int] = {}

    def record(request) -> None:
        sizes[request.url] = request.sizes()["responseBodySize"]

    options = {"viewport": {"width": NARROW_WIDTH, "height": 800}, "color_scheme": theme}
    page, results = _search(visit, "rotary", **options)
    page.on("requestfinished", record)
    page.reload(wait_until="load")
    page.wait_for_function(
        "() => document.querySelector('#search-results p.search-summary')?.textContent.trim()",
        timeout=20_000,
    )
    page.wait_for_function(SNIPPETS_DONE, timeout=20_000)
    page.wait_for_timeout(300)
    width = page.evaluate("() => document.documentElement.scrollWidth")
    assert len(results) >= 3, f"rotary: {len(results)} results (a vacuous check)"
    pages = [url for url in sizes if urlsplit(url).path.endswith(".html")]
    assert [urlsplit(url).path for url in pages] == ["/search.html"], f"pages fetched: {pages}"
    texts = sum(size for url, size in sizes.items() if "/_static/search-text/" in url)
    assert 0 < texts < MAX_SNIPPET_BYTES, f"the snippets' text: {texts:,} bytes"
    total = sum(sizes.values())
    assert total < MAX_SEARCH_BYTES, f"search for rotary: {total:,} bytes in {len(sizes)} files"
    assert width <= NARROW_WIDTH, f"the search page is {width} px wide at {NARROW_WIDTH} px"
