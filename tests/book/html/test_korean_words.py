"""The Korean edition in headless Chromium at a phone's width: words kept whole everywhere, and
the search page's language link keeping the query.

Run on the Korean build as the served root (``BOOK_HTML_DIR=_build/html-ko``, as ``make
korean-html-test`` does); the browser fixtures are this folder's (conftest.py).
"""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.html, pytest.mark.korean_browser]

PHONE = {"width": 400, "height": 800}
CHAPTER = "book/11_todays_models.html"
# The text in the page, the navigation, the table of contents and the footer.
PARTS = {
    "body text": "article.bd-article p",
    "navigation": "nav.bd-docs-nav a",
    "page contents": "nav.bd-toc-nav a, .bd-sidebar-secondary a",
    "previous and next": ".prev-next-area a",
    "footer": "footer p",
}


def _korean(page) -> None:
    if page.evaluate("() => document.documentElement.lang") != "ko":
        pytest.skip("not the Korean edition: run with BOOK_HTML_DIR=_build/html-ko")


def test_korean_words_are_kept_whole_everywhere_at_400_px(visit) -> None:
    """ "학습된 모/델", "텍/스트에서": no part of the page breaks a Korean word."""
    opened = visit(CHAPTER, viewport=PHONE)
    page = opened.page
    _korean(page)
    styles = page.evaluate(
        """parts => Object.fromEntries(Object.entries(parts).map(([name, selector]) => [name,
            [...document.querySelectorAll(selector)].map(e => getComputedStyle(e).wordBreak)]))""",
        PARTS,
    )
    for name, breaks in styles.items():
        assert breaks and set(breaks) == {"keep-all"}, (name, set(breaks))
    # and a paragraph's lines end between words: each line's last character before a Hangul
    # word continues on the next line only after a space
    broken = page.evaluate(
        """() => {
            const found = [];
            for (const p of [...document.querySelectorAll('article.bd-article p')].slice(0, 40)) {
                const walker = document.createTreeWalker(p, NodeFilter.SHOW_TEXT);
                let node, lastTop = null, lastChar = '';
                while ((node = walker.nextNode())) {
                    const text = node.textContent;
                    for (let i = 0; i < text.length; i++) {
                        const range = document.createRange();
                        range.setStart(node, i); range.setEnd(node, i + 1);
                        const rect = range.getClientRects()[0];
                        if (!rect) continue;
                        const hangul = c => /[\\uac00-\\ud7a3]/.test(c);
                        if (lastTop !== null && rect.top > lastTop + 4
                                && hangul(text[i]) && hangul(lastChar)) {
                            found.push(lastChar + '/' + text.slice(i, i + 4));
                        }
                        lastTop = rect.top; lastChar = text[i];
                    }
                }
            }
            return found;
        }"""
    )
    assert not broken, broken


def test_the_search_page_s_language_link_keeps_the_query(visit) -> None:
    opened = visit("search.html?q=%EC%9C%84%EC%B9%98", viewport=PHONE)
    page = opened.page
    _korean(page)
    link = page.locator(".pe-edition-switch").first
    link.focus()
    href = link.get_attribute("href") or ""
    assert href.split("#")[0].endswith("search.html?q=%EC%9C%84%EC%B9%98"), href
