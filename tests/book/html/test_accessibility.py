"""axe-core on every page, in both themes and as loaded: no serious or critical violation."""

from __future__ import annotations

import pytest

from tests.book.html.book_pages import (
    AXE,
    HTML_DIR,
    LAZY_PAGE,
    PAGES,
    WIDE_WIDTH,
    _not_available,
    _open,
    _open_as_loaded,
)

pytestmark = pytest.mark.html

# The impacts axe-core rates "serious" and "critical": none may remain on any page.
FORBIDDEN_IMPACTS = {"serious", "critical"}
# Rules of lesser impact that no page may break either: "region", content outside every
# landmark (the book's title stood outside them).
FORBIDDEN_RULES = {"region"}


def test_no_serious_accessibility_violation_as_loaded(browser_with_scrollbars, base_url) -> None:
    """axe-core on a phone-sized page as loaded, its far figures still waiting."""
    if LAZY_PAGE not in PAGES:
        _not_available(f"{LAZY_PAGE} is not built: run `make book` first")
    if not AXE.is_file():
        _not_available(f"{AXE} is missing: run `python tools/fetch_axe.py`")
    page_visit = _open_as_loaded(browser_with_scrollbars, base_url, LAZY_PAGE)
    try:
        page = page_visit.page
        waiting = page.locator("article div.pe-chart:not([data-pe-chart-state])").count()
        page.add_script_tag(content=AXE.read_text(encoding="utf-8"))
        violations = page.evaluate(AXE_RUN, None)
    finally:
        page_visit.close()
    assert waiting > 0, f"{LAZY_PAGE}: no figure waiting after loading (a vacuous check)"
    serious = [v for v in violations if v["impact"] in FORBIDDEN_IMPACTS]
    assert not serious, f"{LAZY_PAGE} as loaded: " + "; ".join(
        f"{v['id']} ({v['impact']}, {v['count']}): {v['help']} at {v['nodes']}" for v in serious
    )


# Not axe-playwright-python: it injects the axe-core copy inside its wheel, where this test runs
# the release tools/fetch_axe.py pins and checks against the npm registry's digest; its run()
# is the documented axe.run call below.
AXE_RUN = """async (rules) => (await axe.run(document,
        rules ? {runOnly: {type: 'rule', values: rules}, resultTypes: ['violations']}
              : {resultTypes: ['violations']})).violations
    .map(v => ({id: v.id, impact: v.impact, help: v.help,
                nodes: v.nodes.map(n => n.target.join(' ')).slice(0, 3), count: v.nodes.length}))"""
# The theme changes colours only: what the page renders, and so every rule on structure, names
# and roles, is the same in both themes (RENDERED_IN_ONE_THEME_ONLY checks that on each page).
# The dark run repeats the rules that read colours.
COLOUR_RULES = ["color-contrast", "link-in-text-block"]
# The elements of the page that one theme renders and the other does not (up to 5, by tag and
# class), the page's elements taken once; the charts' elements, which are drawn again in the
# other theme's colours, are left out.
RENDERED_IN_ONE_THEME_ONLY = """() => {
    const elements = Array.from(document.body.querySelectorAll('*'))
        .filter(e => !e.closest('.pe-chart'));
    const rendered = theme => {
        document.documentElement.dataset.theme = theme;
        return elements.map(e => e.getClientRects().length > 0);
    };
    const light = rendered('light'), dark = rendered('dark');
    return elements.filter((e, i) => light[i] !== dark[i]).slice(0, 5)
        .map(e => `${e.tagName.toLowerCase()}.${e.className}`);
}"""


# The Korean pages: the light theme (their text and labels are their own; the dark theme's
# colours and elements are the English twin's).
@pytest.mark.parametrize("theme", [pytest.param("light", marks=pytest.mark.korean_browser), "dark"])
@pytest.mark.parametrize("relpath", PAGES or ["<no pages built>"])
def test_no_serious_accessibility_violation(
    browser_with_scrollbars, base_url, relpath: str, theme: str
) -> None:
    """axe-core (pinned and digest-checked from npm, tools/fetch_axe.py) finds no serious or
    critical violation on the page, nor one of FORBIDDEN_RULES, scrollbars shown: every rule in
    the light theme, the colour rules again in the dark one (which shows the same elements).
    Prints every finding."""
    if not PAGES:
        _not_available(f"no HTML pages under {HTML_DIR}: run `make book` first")
    if not AXE.is_file():
        _not_available(f"{AXE} is missing: run `python tools/fetch_axe.py`")
    page_visit = _open(
        browser_with_scrollbars,
        base_url,
        relpath,
        theme,
        viewport={"width": WIDE_WIDTH, "height": 900},
    )
    try:
        page = page_visit.page
        page.add_script_tag(content=AXE.read_text(encoding="utf-8"))
        if theme == "dark":
            differ = page.evaluate(RENDERED_IN_ONE_THEME_ONLY)
            assert not differ, (
                f"{relpath}: rendered in one theme only: {differ}; run every axe rule in both"
            )
        violations = page.evaluate(AXE_RUN, COLOUR_RULES if theme == "dark" else None)
    finally:
        page_visit.close()
    counts = {v["id"]: (v["impact"], v["count"]) for v in violations}
    print(f"\naxe-core {theme} {relpath}: {counts}")
    serious = [
        v for v in violations if v["impact"] in FORBIDDEN_IMPACTS or v["id"] in FORBIDDEN_RULES
    ]
    assert not serious, f"{relpath} ({theme}): " + "; ".join(
        f"{v['id']} ({v['impact']}, {v['count']}): {v['help']} at {v['nodes']}" for v in serious
    )
