"""The built book as a reader opens it: served from a local HTTP server, each page loaded in
headless Chromium, offline, with everything that went wrong on the way (``PageVisit``).

What the browser tests in this folder share: where the build is (``$BOOK_HTML_DIR``, default
``_build/html``, with the Korean edition beside it under ``ko/``), its pages, and the helpers
that open a page in a theme and at a width and wait until it has settled (the browser's flags
are ``tools/chromium_flags.py``, which the PDF printer starts it with too).
"""

from __future__ import annotations

import http.server
import os
import re
import shutil
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

try:
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
    from playwright.sync_api import sync_playwright
except ImportError:  # reported by the `browser` fixture (skip outside CI, failure in CI)
    sync_playwright = None
    PlaywrightTimeoutError = TimeoutError
    PlaywrightError = Exception

ROOT = Path(__file__).resolve().parents[3]
# $BOOK_HTML_DIR checks another build (e.g. one made with --path-output); default: `make book`'s.
HTML_DIR = Path(os.environ.get("BOOK_HTML_DIR", ROOT / "_build" / "html")).resolve()
# The published site holds the Korean edition (make book-ko) under ko/, where the English pages'
# language switches lead: the test server serves it there too.
KOREAN_DIR = (ROOT / "_build" / "html-ko").resolve()


def site_file(path: str) -> Path:
    """The built file behind a path of the published site (``ko/...``: the Korean edition)."""
    path = path.lstrip("/")
    if path.startswith("ko/") and HTML_DIR != KOREAN_DIR:
        return KOREAN_DIR / path.removeprefix("ko/")
    return HTML_DIR / path


IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}

# Folders of support files, not pages.
NON_PAGE_DIRS = {"_static", "_sources", "_images", "_sphinx_design_static"}
# A page's equations must be fitted within this time (ms); pe-math.js fits them as soon as the
# page's markup is read.
MATH_TIMEOUT_MS = 10_000


def _not_available(reason: str) -> None:
    """Fail in CI, skip (visibly, with the reason) anywhere else."""
    if IN_CI:
        pytest.fail(f"{reason} (CI=true, so this is a failure, not a skip)")
    pytest.skip(reason)


def find_chromium() -> str | None:
    """Path of a Chromium binary: $CHROMIUM if set (and only it), else Debian's `chromium`."""
    if "CHROMIUM" in os.environ:
        candidates = [os.environ["CHROMIUM"]]
    else:
        candidates = [shutil.which(name) or "" for name in ("chromium", "chromium-browser")]
        candidates.append("/usr/bin/chromium")
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def list_pages() -> list[str]:
    """Every HTML page of the built book, as paths relative to ``_build/html``."""
    if not HTML_DIR.is_dir():
        return []
    return sorted(
        path.relative_to(HTML_DIR).as_posix()
        for path in HTML_DIR.rglob("*.html")
        if not NON_PAGE_DIRS.intersection(path.relative_to(HTML_DIR).parts)
    )


PAGES = list_pages()


# --------------------------------------------------------------------------- fixtures


# Every path the server could not serve, over the whole session (the browser's own requests,
# such as /favicon.ico, never reach the page's events).
NOT_FOUND: list[str] = []


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def translate_path(self, path: str) -> str:
        return str(site_file(unquote(urlsplit(path).path)))

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (stdlib signature)
        pass

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        if code >= 400:
            NOT_FOUND.append(f"HTTP {code}: {self.path}")
        super().send_error(code, message, explain)


class PageVisit:
    """One page loaded in a fresh browser context, with everything that went wrong on the way."""

    def __init__(
        self, browser, base_url: str, relpath: str, init_script: str | None = None, **options
    ) -> None:
        self.url = base_url + relpath
        self.base_url = base_url
        self.problems: list[str] = []
        self.context = browser.new_context(**options)  # e.g. viewport=...
        if init_script is not None:
            self.context.add_init_script(init_script)
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("console", self._on_console)
        self.page.on("pageerror", lambda error: self.problems.append(f"uncaught error: {error}"))
        self.page.on("requestfailed", self._on_request_failed)
        self.page.on("response", self._on_response)
        # The page's requests in flight, and how many it has made (settle()).
        self.in_flight: set = set()
        self.requests = 0
        self.page.on("request", self._on_request)
        self.page.on("requestfinished", self._on_request_ended)
        self.page.on("requestfailed", self._on_request_ended)

    def _on_request(self, request) -> None:
        self.in_flight.add(request)
        self.requests += 1

    def _on_request_ended(self, request) -> None:
        self.in_flight.discard(request)

    def settle(self) -> None:
        """Waits until the page asks for nothing more: no request in flight, then its fonts
        loaded and two frames drawn without a new request (what the fonts, images and figures
        that the layout asks for are asked for in). Playwright's "networkidle" tells the same by
        500 ms without a request, every time."""
        deadline = time.monotonic() + SETTLE_TIMEOUT_S

        def in_time() -> bool:
            if time.monotonic() > deadline:
                urls = sorted(request.url for request in self.in_flight)
                raise AssertionError(f"{self.url}: not settled after {SETTLE_TIMEOUT_S} s: {urls}")
            return True

        while in_time():
            while self.in_flight and in_time():
                self.page.wait_for_timeout(20)
            made = self.requests
            try:
                self.page.evaluate(QUIET_FRAMES)
            except PlaywrightError:  # the page navigated meanwhile (index.html's redirect)
                continue
            if not self.in_flight and self.requests == made:
                return

    def _route(self, route) -> None:
        url = route.request.url
        if url.startswith(self.base_url) or url.startswith(("data:", "blob:", "about:")):
            route.continue_()
        else:
            self.problems.append(f"request leaving localhost (blocked): {url}")
            route.abort("blockedbyclient")

    def _on_console(self, message) -> None:
        if message.type == "error":
            self.problems.append(f"console error: {message.text} at {message.location}")

    def _on_request_failed(self, request) -> None:
        if request.url.startswith(self.base_url):
            self.problems.append(f"failed request: {request.url} ({request.failure})")

    def _on_response(self, response) -> None:
        if response.url.startswith(self.base_url) and response.status >= 400:
            self.problems.append(f"HTTP {response.status}: {response.url}")

    def close(self) -> None:
        self.context.close()


# --------------------------------------------------------------------------- per-page checks


# Text in Hangul (jamo, compatibility jamo, syllables), as a JavaScript regular expression: what
# the book's Korean web font draws.
HANGUL = "/[\\u1100-\\u11ff\\u3130-\\u318f\\uac00-\\ud7a3]/"


# Every layout shift of the article's content while the page loads (its value, and what moved).
ARTICLE_SHIFTS = """
window.peArticleShifts = [];
new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
        const moved = entry.sources.map((source) => source.node)
            .map((node) => node && (node.nodeType === 1 ? node : node.parentElement))
            .filter((element) => element && element.closest('article'));
        if (moved.length) {
            window.peArticleShifts.push(
                [entry.value, moved.map((element) => element.tagName + '.' + element.className)]);
        }
    }
}).observe({type: 'layout-shift', buffered: true});
"""


# The page's fonts loaded, then two frames drawn.
QUIET_FRAMES = """() => document.fonts.ready.then(() => new Promise(resolve =>
    requestAnimationFrame(() => requestAnimationFrame(resolve))))"""
SETTLE_TIMEOUT_S = 20


# A typeset formula: KaTeX's box (written when the book was built).
TYPESET = ".katex"


def _draw_figures(page) -> None:
    """Every explorable figure of the page drawn (``_static/pe-charts.js``), or failed."""
    page.evaluate("() => window.peCharts && peCharts.drawAll()")
    page.wait_for_function(FIGURES_DRAWN, timeout=FIGURE_TIMEOUT_MS)


def check_images(page) -> list[str]:
    """Every ``<img>`` (lazy ones forced to load) decoded with a non-zero natural width."""
    page.evaluate(
        """() => document.querySelectorAll('img').forEach(img => {
            img.loading = 'eager'; img.scrollIntoView(); })"""
    )
    page.wait_for_function(
        "() => Array.from(document.images).every(img => img.complete)", timeout=20_000
    )
    broken = page.evaluate(
        """() => Array.from(document.images)
            .filter(img => !(img.naturalWidth > 0))
            .map(img => img.currentSrc || img.src || img.outerHTML.slice(0, 120))"""
    )
    return [f"image not loaded: {src}" for src in broken]


# --------------------------------------------------------------------------- explorable figures


def _pages_with_figures() -> dict[str, int]:
    """Pages whose stored outputs hold pe_lib.viz.charts figures, and how many each holds."""
    counts = {}
    for notebook in sorted((ROOT / "book").glob("*.ipynb")):
        text = notebook.read_text(encoding="utf-8")
        count = text.count('<div class=\\"pe-chart\\"')
        if count:
            counts[notebook.relative_to(ROOT).with_suffix(".html").as_posix()] = count
    return counts


PAGES_WITH_FIGURES = _pages_with_figures()
FIGURE_TIMEOUT_MS = 20_000

FIGURES_DRAWN = """() => Array.from(document.querySelectorAll('div.pe-chart'))
    .every(figure => figure.dataset.peChartState)"""


# --------------------------------------------------------------------------- every reader

NARROW_WIDTH = 400

# Every chart's background and text colours, with the page's; and its accessible description.
CHART_THEME = """(only = null) => {
    const probe = document.createElement('div');
    probe.style.color = getComputedStyle(document.documentElement)
        .getPropertyValue('--pst-color-background');
    document.body.appendChild(probe);
    const page = getComputedStyle(probe).color;
    probe.remove();
    // The colour a box shows: its own background, or the first opaque one around it.
    const shown = node => {
        for (; node; node = node.parentElement) {
            const colour = getComputedStyle(node).backgroundColor;
            if (colour !== 'rgba(0, 0, 0, 0)' && colour !== 'transparent') return colour;
        }
        return page;
    };
    // Every figure, or the one given (a page draws a figure only when it is scrolled to).
    const figures = only ? [only] : Array.from(document.querySelectorAll('div.pe-chart'));
    return figures.map(figure => {
        const svg = figure.querySelector('svg');
        const text = svg.querySelector('text');
        const bindings = figure.querySelector('.vega-bindings');
        // The text beside the controls: their names and the values the sliders show.
        const words = bindings ? Array.from(bindings.querySelectorAll('.vega-bind span'),
            span => getComputedStyle(span).color) : [];
        return {name: figure.dataset.peChart, page, words,
                controls: bindings ? shown(bindings) : null,
                background: getComputedStyle(svg).backgroundColor,
                text: text ? getComputedStyle(text).fill : null,
                label: svg.getAttribute('aria-label') || ''};
    });
}"""


# --------------------------------------------------------------------------- every screen

WIDE_WIDTH = 1280
CHAPTER_PAGES = [p for p in PAGES if re.match(r"book/\d\d_", p)]
SAMPLE_CHAPTER = "book/02_sinusoidal_formula.html"


OVERFLOWING = """(selector) => Array.from(document.querySelectorAll(selector))
    .filter(el => el.getClientRects().length > 0 && el.scrollWidth > el.clientWidth + 1)
    .map(el => ({what: el.tagName + ' ' + (el.textContent || '').trim().slice(0, 50),
                 needed: el.scrollWidth, shown: el.clientWidth}))"""


def _open_wide(visit, relpath: str):
    page_visit = visit(relpath, viewport={"width": WIDE_WIDTH, "height": 900})
    page = page_visit.page
    page_visit.settle()
    if page.locator("div.math").count():
        page.wait_for_function(
            "() => document.documentElement.dataset.peMathFitted === 'true'",
            timeout=MATH_TIMEOUT_MS,
        )
    return page


def _edition() -> str:
    """The language of the built book under test: "en" or "ko"."""
    language = re.search(r'<html lang="(\w+)"', (HTML_DIR / "search.html").read_text("utf-8"))
    return language.group(1) if language else "en"


# --------------------------------------------------------------------------- the reader's screen
# Issue 25: figures in shape, formulas without scrollbars, lines visible in both themes, no
# serious accessibility fault, a phone that does not wait.

AXE = ROOT / "tests" / "book" / "axe-core" / "axe.min.js"


def _open(browser, base_url: str, relpath: str, theme: str | None = None, **options) -> PageVisit:
    """``relpath`` loaded and settled: network idle, every formula typeset and fitted, every figure
    drawn (a reader's page does each as it nears the screen: here all are asked for)."""
    script = f"localStorage.setItem('mode', '{theme}')" if theme else None
    page_visit = PageVisit(browser, base_url, relpath, init_script=script, **options)
    page = page_visit.page
    page.goto(page_visit.url, wait_until="load")
    page_visit.settle()
    if page.locator("div.math, span.math").count():
        page.wait_for_function(
            "() => document.documentElement.dataset.peMathFitted === 'true'",
            timeout=MATH_TIMEOUT_MS,
        )
    if relpath in PAGES_WITH_FIGURES:
        _draw_figures(page)
    return page_visit


def _evaluate_open(browser, base_url: str, relpath: str, script: str, **options):
    """``script``'s value on ``relpath`` opened as :func:`_open` opens it (then closed)."""
    page_visit = _open(browser, base_url, relpath, **options)
    try:
        return page_visit.page.evaluate(script)
    finally:
        page_visit.close()


# Issue 25: a phone does not wait on layout work. The formulas are typeset when the book is built
# and fitted as the page loads (one layout); pe-charts.js draws the figures near the screen, and a
# figure far below waits until the reader scrolls to it, and is then drawn.
LAZY_PAGE = "book/07_rope_alibi.html"


def _open_as_loaded(browser, base_url: str, relpath: str, **options) -> PageVisit:
    """``relpath`` as a phone shows it after loading: nothing asked for beyond that."""
    page_visit = PageVisit(
        browser, base_url, relpath, viewport={"width": NARROW_WIDTH, "height": 800}, **options
    )
    page = page_visit.page
    page.goto(page_visit.url, wait_until="load")
    page_visit.settle()
    page.wait_for_function(
        "() => document.documentElement.dataset.peMathFitted === 'true'", timeout=MATH_TIMEOUT_MS
    )
    page.wait_for_timeout(1000)  # what the first screen starts (figures) settles
    return page_visit
