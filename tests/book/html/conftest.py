"""The browser tests: the built book opened the way a reader opens it, every page of
``_build/html`` in headless Chromium. The tests are split by what they test: pages that read
offline and what they load (test_offline.py), formulas (test_math.py), figures
(test_figures.py), the page at a phone's and a desktop's width (test_layout.py), code, printed
output and tables (test_code_and_tables.py), search (test_search.py), axe-core
(test_accessibility.py) and the two editions (test_editions.py); book_pages.py holds what they
share. This file holds their fixtures: the built book served on 127.0.0.1, Chromium launched
once per session (and once more with its scrollbars shown), and ``visit``, which opens pages and
closes them after the test.

The pages are served from a local HTTP server on an ephemeral port. Every request that would leave
that server (a CDN, Binder, Colab) is aborted and recorded, so a page passes only if it reads
offline. Per page the test checks: no console errors or uncaught exceptions, no failed request to
the local server, no request to any other host, every ``<img>`` decoded (``naturalWidth > 0``),
math typeset when the book was built (KaTeX's HTML with its hidden MathML in every math element,
KaTeX's stylesheet and fonts from ``_static/katex``, no error box, no raw TeX, no math script),
every run of Hangul drawn by the book's Korean web font, every local link pointing at an existing file and, when it has a
``#fragment``, at an existing ``id`` in that file, and every saved ipywidget rendered into a
visible, non-empty area.

Run them with ``make html-test`` after ``make book``. Without a Chromium binary the tests are skipped
with a reason, except in CI (``CI=true``), where a missing browser is a failure.
"""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator

import pytest

from tests.book.html.book_pages import (
    HTML_DIR,
    PageVisit,
    _not_available,
    _QuietHandler,
    find_chromium,
    sync_playwright,
)
from tools.chromium_flags import CHROMIUM_FLAGS


@pytest.fixture(scope="session")
def base_url() -> Iterator[str]:
    """``_build/html`` served on 127.0.0.1 at an ephemeral port, for the whole session."""
    if not (HTML_DIR / "index.html").is_file():
        _not_available(f"no built book at {HTML_DIR}: run `make book` first")
    handler = functools.partial(_QuietHandler, directory=str(HTML_DIR))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


# Not pytest-playwright's fixtures: its per-test `page` and `context` take one set of options,
# where these tests open several pages per test at other widths and themes through PageVisit
# (which blocks and records every request that leaves the server), and its `base_url` (from
# pytest-base-url) would replace this file's server; its `browser` alone would save ten lines.
@pytest.fixture(scope="session")
def browser():
    chromium_path = find_chromium()
    if chromium_path is None:
        _not_available("no Chromium browser found (apt-get install chromium, or set $CHROMIUM)")
    if sync_playwright is None:
        _not_available("the Python package playwright is not installed")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path, args=CHROMIUM_FLAGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def visit(browser, base_url):
    visits: list[PageVisit] = []

    def open_page(relpath: str, **options) -> PageVisit:
        page_visit = PageVisit(browser, base_url, relpath, **options)
        visits.append(page_visit)
        page_visit.page.goto(page_visit.url, wait_until="load")
        return page_visit

    yield open_page
    for page_visit in visits:
        page_visit.close()


@pytest.fixture(scope="session")
def browser_with_scrollbars(browser):
    """Chromium as a desktop whose scrollbars are always shown (Windows, most Linux desktops,
    macOS with a mouse): Playwright's headless default hides them (``--hide-scrollbars``), which
    hid every scroll box that should not be one. Launched by the session's Playwright."""
    shown = browser.browser_type.launch(
        executable_path=find_chromium(),
        args=CHROMIUM_FLAGS,
        ignore_default_args=["--hide-scrollbars"],
    )
    try:
        yield shown
    finally:
        shown.close()


def pytest_collection_modifyitems(config, items) -> None:
    """The check of every request the server could not serve over the session runs after the
    other browser tests, whichever files were collected."""
    last = [item for item in items if item.name == "test_no_request_failed_over_the_session"]
    items[:] = [item for item in items if item not in last] + last
