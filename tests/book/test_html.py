"""The built book opened the way a reader opens it: every page of ``_build/html`` in headless Chromium.

The pages are served from a local HTTP server on an ephemeral port. Every request that would leave
that server (a CDN, Binder, Colab) is aborted and recorded, so a page passes only if it reads
offline. Per page the test checks: no console errors or uncaught exceptions, no failed request to
the local server, no request to any other host, every ``<img>`` decoded (``naturalWidth > 0``),
math typeset when the book was built (KaTeX's HTML with its hidden MathML in every math element,
KaTeX's stylesheet and fonts from ``_static/katex``, no error box, no raw TeX, no math script),
every run of Hangul drawn by the book's Korean web font, every local link pointing at an existing file and, when it has a
``#fragment``, at an existing ``id`` in that file, and every saved ipywidget rendered into a
visible, non-empty area.

Run it with ``make html-test`` after ``make book``. Without a Chromium binary the tests are skipped
with a reason, except in CI (``CI=true``), where a missing browser is a failure.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import shutil
import threading
import time
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urljoin, urlsplit

import pytest
import torch
import yaml

import pe_lib
from pe_lib.rope.scaling import resolve_scaling, rope_frequencies
from pe_lib.viz.charts import CHARTS
from tests.book_sources import toc_documents

try:
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
    from playwright.sync_api import sync_playwright
except ImportError:  # reported by the `browser` fixture (skip outside CI, failure in CI)
    sync_playwright = None
    PlaywrightTimeoutError = TimeoutError
    PlaywrightError = Exception

pytestmark = pytest.mark.html

ROOT = Path(__file__).resolve().parents[2]
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

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# Folders of support files, not pages.
NON_PAGE_DIRS = {"_static", "_sources", "_images", "_sphinx_design_static"}
# A page's equations must be fitted within this time (ms); pe-math.js fits them as soon as the
# page's markup is read.
MATH_TIMEOUT_MS = 10_000
WIDGET_TIMEOUT_MS = 10_000

# Pages that quote the article's Korean sentences (a page with none would make the check vacuous).
PAGES_WITH_HANGUL = {"book/intro.html", "book/01_permutation_invariance.html", "book/summary.html"}
HANGUL_FAMILY = "Noto Sans KR"

WIDGET_VIEW_SELECTOR = 'script[type="application/vnd.jupyter.widget-view+json"]'


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


# --------------------------------------------------------------------------- static HTML parsing


class _IdCollector(HTMLParser):
    """Collects every ``id`` (and legacy ``<a name>``) a page defines."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for key, value in attrs:
            if value is not None and (key == "id" or (tag == "a" and key == "name")):
                self.ids.add(value)


@functools.cache
def ids_in(path: Path) -> frozenset[str]:
    collector = _IdCollector()
    collector.feed(path.read_text(encoding="utf-8"))
    return frozenset(collector.ids)


def local_target(page_url: str, href: str, base_url: str) -> tuple[Path, str] | None:
    """For a link to the local server, the file it names and its fragment; None if external."""
    absolute = urljoin(page_url, href)
    parts = urlsplit(absolute)
    if parts.scheme not in {"http", "https"} or not absolute.startswith(base_url):
        return None
    path = site_file(unquote(parts.path))
    if parts.path.endswith("/") or path.is_dir():
        path = path / "index.html"
    return path, unquote(parts.fragment)


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


# --------------------------------------------------------------------------- per-page checks


# The page's fonts loaded, then two frames drawn.
QUIET_FRAMES = """() => document.fonts.ready.then(() => new Promise(resolve =>
    requestAnimationFrame(() => requestAnimationFrame(resolve))))"""
SETTLE_TIMEOUT_S = 20


# A typeset formula: KaTeX's box (written when the book was built).
TYPESET = ".katex"


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


def _draw_figures(page) -> None:
    """Every explorable figure of the page drawn (``_static/pe-charts.js``), or failed."""
    page.evaluate("() => window.peCharts && peCharts.drawAll()")
    page.wait_for_function(FIGURES_DRAWN, timeout=FIGURE_TIMEOUT_MS)


MATH_STATE = """() => ({
    untypeset: Array.from(document.querySelectorAll('div.math, span.math'))
        .filter(el => !el.querySelector('.katex-html') || !el.querySelector('.katex-mathml math'))
        .map(el => el.textContent.slice(0, 40)),
    errors: Array.from(document.querySelectorAll('.pe-math-error, .katex-error'),
                       el => el.textContent.slice(0, 60)),
    raw: Array.from(document.querySelectorAll('article p, article li, article dd, article td'))
        .map(el => el.innerText)
        .filter(text => /\\\\[([]|[$][$]/.test(text)).map(text => text.slice(0, 60)),
    backslashes: Array.from(document.querySelectorAll('.katex-html'), el => el.textContent)
        .filter(text => text.includes('\\\\')).map(text => text.slice(0, 60)),
    scripts: Array.from(document.scripts, s => s.src).filter(s => /mathjax|katex/i.test(s)),
    stylesheets: Array.from(document.styleSheets, s => s.href || '')
        .filter(href => /katex/i.test(href)).map(href => href.split('?')[0]),
})"""


def check_math(page, base_url: str) -> list[str]:
    """Every Sphinx math element typeset at build time (KaTeX's HTML and hidden MathML), no error
    box, no raw TeX in the text, no math script, KaTeX's stylesheet and font from ``_static``."""
    math_count = page.locator("div.math, span.math").count()
    if math_count == 0:
        return []
    state = page.evaluate(MATH_STATE)
    problems = []
    if state["untypeset"]:
        problems.append(f"math: not typeset: {state['untypeset'][:5]}")
    if state["errors"]:
        problems.append(f"math: KaTeX could not typeset {state['errors']}")
    if state["raw"]:
        problems.append(f"math: raw TeX in the text: {state['raw'][:5]}")
    if state["backslashes"]:
        problems.append(f"math: a TeX backslash shown in a formula: {state['backslashes'][:5]}")
    if state["scripts"]:
        problems.append(
            f"math: a page with formulas typeset loads a math script: {state['scripts']}"
        )
    if state["stylesheets"] != [base_url + "_static/katex/katex.min.css"]:
        problems.append(f"math: KaTeX's stylesheet not from this site's _static: {state}")
    page.evaluate("() => document.fonts.ready")
    if not page.evaluate("() => document.fonts.check('16px KaTeX_Main')"):
        problems.append("math: KaTeX's main font did not load")
    return problems


def check_widgets(page) -> tuple[int, list[str]]:
    """Every saved widget view replaced by a visible, non-empty ``.widget-subarea``."""
    view_count = page.locator(WIDGET_VIEW_SELECTOR).count()
    if view_count == 0:
        return 0, []
    try:
        page.wait_for_function(
            f"""() => Array.from(document.querySelectorAll('{WIDGET_VIEW_SELECTOR}')).every(tag => {{
                const area = tag.previousElementSibling;
                return area && area.classList.contains('widget-subarea')
                    && area.childElementCount > 0 && area.getBoundingClientRect().height > 0;
            }})""",
            timeout=WIDGET_TIMEOUT_MS,
        )
    except PlaywrightTimeoutError as error:  # report which widget stayed blank
        areas = page.evaluate(
            f"""() => Array.from(document.querySelectorAll('{WIDGET_VIEW_SELECTOR}'), tag => {{
                const area = tag.previousElementSibling;
                return area ? area.outerHTML.slice(0, 200) : null;
            }})"""
        )
        return view_count, [
            f"widgets: blank widget area after {WIDGET_TIMEOUT_MS} ms: {areas} ({error})"
        ]
    return view_count, []


# Wraps every run of Hangul in the rendered page in its own <span>, so that the browser can say
# which font drew it; returns how many runs it wrapped. Closed <details> (solutions) are opened.
WRAP_HANGUL_RUNS = r"""() => {
    document.querySelectorAll('details').forEach(d => { d.open = true; });
    const run = /[\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\uac00-\ud7ff]+/g;
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    const nodes = [];
    while (walker.nextNode()) {
        const node = walker.currentNode;
        const parent = node.parentElement;
        if (!parent || parent.closest('script, style, noscript, textarea')) continue;
        if (run.test(node.data)) nodes.push(node);
        run.lastIndex = 0;
    }
    let count = 0;
    for (const node of nodes) {
        const fragment = document.createDocumentFragment();
        let last = 0;
        for (const match of node.data.matchAll(run)) {
            fragment.append(node.data.slice(last, match.index));
            const span = document.createElement('span');
            span.dataset.hangulRun = String(count++);
            span.textContent = match[0];
            fragment.append(span);
            last = match.index + match[0].length;
        }
        fragment.append(node.data.slice(last));
        node.replaceWith(fragment);
    }
    return count;
}"""


def check_hangul(page) -> tuple[int, list[str]]:
    """Every visible run of Hangul drawn entirely by the book's Korean web font.

    Chromium reports, per element, the fonts that actually drew its glyphs
    (``CSS.getPlatformFontsForNode``). A run that fell back to a system font, or to a font
    without Korean glyphs (drawn as missing-glyph boxes), shows another family there.
    """
    runs = page.evaluate(WRAP_HANGUL_RUNS)
    if runs == 0:
        return 0, []
    # Load the font files that hold this page's syllables (each covers a unicode-range), then
    # let the page lay itself out with them.
    page.evaluate(
        """(family) => {
            const text = Array.from(document.querySelectorAll('span[data-hangul-run]'),
                                    span => span.textContent).join('');
            return document.fonts.load(`16px "${family}"`, text).then(() => document.fonts.ready);
        }""",
        HANGUL_FAMILY,
    )
    cdp = page.context.new_cdp_session(page)
    cdp.send("DOM.enable")
    cdp.send("CSS.enable")
    root = cdp.send("DOM.getDocument", {"depth": -1})["root"]["nodeId"]
    node_ids = cdp.send(
        "DOM.querySelectorAll", {"nodeId": root, "selector": "span[data-hangul-run]"}
    )["nodeIds"]
    problems, drawn = [], 0
    for node_id in node_ids:
        fonts = cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node_id})["fonts"]
        if not fonts:  # not rendered (hidden at this width): nothing was drawn
            continue
        drawn += 1
        others = [
            f
            for f in fonts
            if not (f["isCustomFont"] and f["familyName"].startswith(HANGUL_FAMILY))
        ]
        if others:
            text = cdp.send("DOM.getOuterHTML", {"nodeId": node_id})["outerHTML"]
            problems.append(f"Hangul {text} drawn with {others}, not the web font {HANGUL_FAMILY}")
    cdp.detach()
    return drawn, problems


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


def check_links(page, page_url: str, base_url: str) -> list[str]:
    """Every link to the local site names an existing file, and its fragment an existing id."""
    hrefs = page.evaluate(
        "() => Array.from(document.querySelectorAll('a[href]'), a => a.getAttribute('href'))"
    )
    problems = []
    for href in sorted(set(hrefs)):
        if href.startswith(("mailto:", "javascript:")):
            continue
        target = local_target(page_url, href, base_url)
        if target is None:
            continue
        path, fragment = target
        if not path.is_file():
            problems.append(f"broken link {href!r}: no file {path}")
        elif fragment and path.suffix == ".html" and fragment not in ids_in(path):
            problems.append(f"broken anchor {href!r}: no id {fragment!r} in {path.name}")
    return problems


@pytest.mark.korean_browser
@pytest.mark.parametrize("relpath", PAGES or ["<no pages built>"])
def test_page_reads_offline(visit, relpath: str) -> None:
    if not PAGES:
        _not_available(f"no HTML pages under {HTML_DIR}: run `make book` first")
    page_visit = visit(relpath)
    page = page_visit.page
    page_visit.settle()
    problems = check_math(page, page_visit.base_url)
    _, widget_problems = check_widgets(page)
    problems += widget_problems
    hangul_runs, hangul_problems = check_hangul(page)
    problems += hangul_problems
    if relpath in PAGES_WITH_HANGUL and hangul_runs == 0:
        problems.append("Hangul: this page quotes the article in Korean, and none was drawn")
    problems += check_images(page)
    # index.html redirects to the root document: check the page the reader ends up on.
    problems += check_links(page, page.url, page_visit.base_url)
    page_visit.settle()
    problems += page_visit.problems
    assert not problems, f"{relpath}:\n  " + "\n  ".join(problems)


# --------------------------------------------------------------------------- launch buttons


def _config() -> dict:
    return yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))


CHAPTER_NOTEBOOKS = sorted(
    p.relative_to(ROOT).as_posix() for p in (ROOT / "book").glob("[0-9]*.ipynb")
)


@pytest.mark.parametrize("notebook", CHAPTER_NOTEBOOKS)
def test_chapter_offers_launch_buttons_and_download(visit, notebook: str) -> None:
    """Binder (JupyterLab), Colab, Thebe's "Live Code" and the .ipynb download, on every chapter,
    as a reader finds them: links and a button by their names. Binder's and Colab's links open
    this notebook of the configured repository (the services' documented URLs); the download
    gives the notebook itself."""
    relpath = notebook.replace(".ipynb", ".html")
    if not (HTML_DIR / relpath).is_file():
        _not_available(f"{HTML_DIR / relpath} is not built: run `make book` first")
    config = _config()
    owner_repo = urlsplit(config["repository"]["url"]).path.strip("/")
    branch = config["repository"]["branch"]
    book_path = "/".join(p for p in (config["repository"].get("path_to_book", ""), notebook) if p)
    page = visit(relpath).page

    # In the launch and download menus, hidden until opened: by name, hidden or not.
    def link(name: str) -> str:
        links = page.get_by_role("link", name=re.compile(rf"(^| ){name}$"), include_hidden=True)
        assert links.count() == 1, f"{links.count()} links named {name!r} on {relpath}"
        return links.first.get_attribute("href")

    binder = urlsplit(link("Binder"))
    assert binder.netloc == urlsplit(config["launch_buttons"]["binderhub_url"]).netloc
    assert binder.path == f"/v2/gh/{owner_repo}/{branch}", binder
    assert dict(parse_qsl(binder.query)) == {"urlpath": f"lab/tree/{book_path}"}, binder
    colab = urlsplit(link("Colab"))
    assert colab.netloc == urlsplit(config["launch_buttons"]["colab_url"]).netloc
    assert colab.path == f"/github/{owner_repo}/blob/{branch}/{book_path}", colab
    live = page.get_by_role("button", name=re.compile("Live Code"), include_hidden=True)
    assert live.count() == 1, "no Thebe 'Live Code' button"
    assert page.evaluate("typeof initThebeSBT") == "function", "the Live Code button does nothing"

    download = page.request.get(urljoin(page.url, link(r"\.ipynb")))
    assert download.ok, f"the .ipynb download fails: HTTP {download.status}"
    assert download.json()["cells"], "the downloaded notebook has no cells"


def test_every_toc_document_is_built() -> None:
    missing = [f"{doc}.html" for doc in toc_documents() if f"{doc}.html" not in PAGES]
    if not PAGES:
        _not_available(f"no HTML pages under {HTML_DIR}: run `make book` first")
    assert not missing, f"in _toc.yml but not built: {missing}"


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
# Where a control moves to: a quarter of its range, else its end (a text box gets other columns).
NEW_TEXT_VALUE = "3, 8, 21"

FIGURES_DRAWN = """() => Array.from(document.querySelectorAll('div.pe-chart'))
    .every(figure => figure.dataset.peChartState)"""

DESCRIBE_FIGURES = """() => Array.from(document.querySelectorAll('div.pe-chart'), figure => ({
    name: figure.dataset.peChart,
    state: figure.dataset.peChartState,
    controls: Array.from(figure.querySelectorAll('.vega-bindings input, .vega-bindings select'),
        input => ({name: input.name, type: input.type, value: input.value, min: input.min,
                   max: input.max, step: input.step})),
}))"""

# The image of a figure (its SVG) and the rows behind every mark it drew, with the values of its
# parameters: what the reader sees, and what the browser computed to draw it.
READ_FIGURE = """(index) => {
    const figure = document.querySelectorAll('div.pe-chart')[index];
    const view = figure.peView;
    const rows = [];
    const seen = new Set();
    (function walk(node) {
        for (const item of node.items || []) {
            if (item.datum && item.mark && item.mark.marktype !== 'group') {
                const row = {};
                for (const [key, value] of Object.entries(item.datum)) {
                    if (typeof value === 'number' || typeof value === 'string') row[key] = value;
                }
                const key = JSON.stringify(row);
                if (!seen.has(key)) { seen.add(key); rows.push(row); }
            }
            walk(item);
        }
    })(view.scenegraph().root);
    const settings = {};
    for (const input of figure.querySelectorAll('.vega-bindings input')) {
        settings[input.name] = view.signal(input.name);
    }
    const fixed = JSON.parse(figure.nextElementSibling.textContent).usermeta.fixed;
    return {svg: figure.querySelector('svg').outerHTML, rows, settings: {...fixed, ...settings}};
}"""

MOVE_CONTROL = """async ([index, name, value]) => {
    const figure = document.querySelectorAll('div.pe-chart')[index];
    const input = figure.querySelector(`.vega-bindings [name="${name}"]`);
    input.value = value;
    input.dispatchEvent(new Event('input', {bubbles: true}));
    input.dispatchEvent(new Event('change', {bubbles: true}));
    await figure.peView.runAsync();
}"""


def _moved_value(control: dict) -> str:
    if control["type"] != "range":
        return NEW_TEXT_VALUE
    low, high, step = float(control["min"]), float(control["max"]), float(control["step"])
    quarter = low + round((high - low) / 4 / step) * step
    target = quarter if abs(quarter - float(control["value"])) > step / 2 else high
    return f"{target:g}"


def _close(actual: float, expected: float, what: str, problems: list[str]) -> None:
    if not abs(actual - expected) <= 1e-6:
        problems.append(f"{what}: browser {actual!r}, pe_lib {expected!r}")


def _base(settings: dict) -> tuple[int, float]:
    return int(settings["d_model"]), 10.0 ** settings["log10_base"]


def _frequency(settings: dict, drawn: list[dict], problems: list[str]) -> None:
    d_model, base = _base(settings)
    table = pe_lib.sinusoidal_table(
        int(settings["num_positions"]), d_model, base=base, dtype=torch.float64
    )
    for row in drawn:
        expected = float(table[int(row["pos"]), int(row["column"])])
        _close(row["value"], expected, f"PE({row['pos']}, {row['column']})", problems)


def _wavelength(settings: dict, drawn: list[dict], problems: list[str]) -> None:
    expected_all = pe_lib.wavelengths(*_base(settings))
    if len(drawn) != len(expected_all):
        problems.append(f"{len(drawn)} pairs drawn, pe_lib has {len(expected_all)}")
    for row in drawn:
        expected = float(expected_all[int(row["pair"])])
        _close(row["wavelength"] / expected, 1.0, f"wavelength {row['pair']}", problems)


def _dot_product(settings: dict, drawn: list[dict], problems: list[str]) -> None:
    d_model, base = _base(settings)
    last = max(int(row["k"]) for row in drawn)
    table = pe_lib.sinusoidal_table(37 + last + 1, d_model, base=base, dtype=torch.float64)
    for row in drawn:
        k = int(row["k"])
        for pos in (0, 37):  # any position: the dot product depends on k alone
            expected = float(table[pos] @ table[pos + k])
            _close(row["dot"], expected, f"PE({pos}) . PE({pos}+{k})", problems)


def _rotation(settings: dict, drawn: list[dict], problems: list[str]) -> None:
    d_model = int(settings["d_model"])
    pair, pos, k = int(settings["pair"]), int(settings["position"]), int(settings["shift"])
    table = pe_lib.sinusoidal_table(max(pos, pos + k) + 1, d_model, dtype=torch.float64)
    shifted = pe_lib.relative_shift_matrix(k, d_model) @ table[pos]  # M_k PE(pos)
    expected = {"pos": table[pos], "pos + k": shifted}
    for row in drawn:
        vector = expected[row["which"]]
        _close(row["x"], float(vector[2 * pair]), f"{row['which']} sine", problems)
        _close(row["y"], float(vector[2 * pair + 1]), f"{row['which']} cosine", problems)
    if len(drawn) != 2:
        problems.append(f"{len(drawn)} points drawn, expected pos and pos + k")


def _alibi_bias(settings: dict, drawn: list[dict], problems: list[str]) -> None:
    num_heads, last = int(settings["num_heads"]), int(settings["max_distance"])
    slopes = pe_lib.alibi_slopes(num_heads)
    bias = pe_lib.alibi_bias(num_heads, last + 1, last + 1, dtype=torch.float64)
    if {int(row["head"]) for row in drawn} != set(range(num_heads)):
        problems.append(
            f"heads drawn {sorted({row['head'] for row in drawn})}, expected {num_heads}"
        )
    for row in drawn:
        head, distance = int(row["head"]), int(row["distance"])
        _close(row["slope"], float(slopes[head]), f"slope of head {head}", problems)
        expected = float(bias[head, last, last - distance])  # query at `last`, key before it
        _close(row["bias"], expected, f"bias of head {head} at distance {distance}", problems)


def _scaling(settings: dict, drawn: list[dict], problems: list[str]) -> None:
    head_dim, base = int(settings["head_dim"]), float(settings["base"])
    length, factor = int(settings["original_length"]), float(settings["factor"])
    current = round(settings["ell_ratio"] * length)
    original = {"original_max_position_embeddings": length}
    entries = {
        "linear": {"rope_type": "linear", "factor": factor},
        "ntk": {"rope_type": "ntk", "factor": factor},
        # dynamic NTK's own factor (fixed), not the factor control
        "dynamic": resolve_scaling(
            {"rope_type": "dynamic", "factor": float(settings["dynamic_factor"])},
            base,
            max_position_embeddings=length,
        ),
        "yarn": {"rope_type": "yarn", "factor": factor, **original},
        "llama3": {
            "rope_type": "llama3",
            "factor": factor,
            "low_freq_factor": float(settings["low_freq_factor"]),
            "high_freq_factor": float(settings["high_freq_factor"]),
            **original,
        },
    }
    plain, _ = rope_frequencies(head_dim, base=base)
    expected_ratio = {
        method: rope_frequencies(head_dim, base=base, scaling=entry, seq_len=current)[0] / plain
        for method, entry in entries.items()
    }
    if {row["method"] for row in drawn} != set(entries):
        problems.append(f"methods drawn {sorted({row['method'] for row in drawn})}")
    for row in drawn:
        expected = float(expected_ratio[row["method"]][int(row["pair"])])
        _close(row["ratio"], expected, f"{row['method']} pair {row['pair']}", problems)


# pe_lib's side of every figure in pe_lib.viz.charts.CHARTS: the fields of the rows it draws, and the
# comparison of those rows with pe_lib at the figure's settings.
FIGURE_REFERENCES = {
    "frequency": ({"pos", "column", "value"}, _frequency),
    "wavelength": ({"pair", "wavelength"}, _wavelength),
    "dot_product": ({"k", "dot"}, _dot_product),
    "rotation": ({"which", "x", "y"}, _rotation),
    "alibi_bias": ({"head", "slope", "distance", "bias"}, _alibi_bias),
    "scaling": ({"pair", "method", "ratio"}, _scaling),
}


def _agrees_with_pe_lib(name: str, settings: dict, rows: list[dict]) -> list[str]:
    """The browser's values against pe_lib's, for the figure ``name`` at ``settings``."""
    if name not in FIGURE_REFERENCES:
        return [f"no pe_lib reference for the figure {name!r}"]
    fields, compare = FIGURE_REFERENCES[name]
    drawn = [row for row in rows if fields <= row.keys()]
    if not drawn:
        return [f"figure {name!r} drew none of the values it should compute"]
    problems: list[str] = []
    compare(settings, drawn, problems)
    return problems


def test_every_figure_has_a_pe_lib_reference() -> None:
    assert set(FIGURE_REFERENCES) == set(CHARTS)


def test_book_has_explorable_figures() -> None:
    """At least five figures that recompute in the browser, on at least four chapter pages."""
    assert sum(PAGES_WITH_FIGURES.values()) >= 5 and len(PAGES_WITH_FIGURES) >= 4, (
        f"explorable figures per page: {PAGES_WITH_FIGURES}"
    )


@pytest.mark.korean_browser
@pytest.mark.parametrize("relpath", sorted(PAGES_WITH_FIGURES) or ["<no figures>"])
def test_figures_redraw_and_agree_with_pe_lib(visit, relpath: str) -> None:
    """Every control of every figure redraws it; the values drawn equal pe_lib's within 1e-6."""
    if not PAGES_WITH_FIGURES:
        pytest.fail("no chapter stores an explorable figure")
    page = visit(relpath).page
    _draw_figures(page)
    figures = page.evaluate(DESCRIBE_FIGURES)
    assert len(figures) == PAGES_WITH_FIGURES[relpath]
    problems = []
    for index, figure in enumerate(figures):
        name = figure["name"]
        if figure["state"] != "drawn" or not figure["controls"]:
            problems.append(f"figure {index} ({name}): {figure['state']}, {figure['controls']}")
            continue
        before = page.evaluate(READ_FIGURE, index)
        problems += [
            f"{name} at {before['settings']}: {p}"
            for p in _agrees_with_pe_lib(name, before["settings"], before["rows"])
        ]
        for control in figure["controls"]:
            value = _moved_value(control)
            page.evaluate(MOVE_CONTROL, [index, control["name"], value])
            after = page.evaluate(READ_FIGURE, index)
            if after["svg"] == before["svg"]:
                problems.append(f"{name}: moving {control['name']} to {value} redrew nothing")
            problems += [
                f"{name} at {after['settings']}: {p}"
                for p in _agrees_with_pe_lib(name, after["settings"], after["rows"])
            ]
            before = after
    assert not problems, f"{relpath}:\n  " + "\n  ".join(problems[:20])


# Every control a reader can move in the text of a page (the theme's own buttons, search box and
# menus aside): each must belong to a figure that the browser redraws.
ARTICLE_CONTROLS = """() => Array.from(
    document.querySelectorAll('article input, article select, article textarea'))
    .filter(control => control.type !== 'hidden' && control.getClientRects().length > 0)
    .map(control => ({html: control.outerHTML.slice(0, 160),
                      inFigure: control.closest('div.pe-chart') !== null}))"""


@pytest.mark.parametrize("relpath", PAGES or ["<no pages built>"])
def test_no_control_moves_without_effect(visit, relpath: str) -> None:
    if not PAGES:
        _not_available(f"no HTML pages under {HTML_DIR}: run `make book` first")
    page_visit = visit(relpath)
    page = page_visit.page
    page_visit.settle()
    if relpath in PAGES_WITH_FIGURES:
        _draw_figures(page)
    dead = [c["html"] for c in page.evaluate(ARTICLE_CONTROLS) if not c["inFigure"]]
    assert not dead, f"{relpath}: controls that no figure on the page answers: {dead}"


# --------------------------------------------------------------------------- every reader

NARROW_WIDTH = 400
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


# Alpha of the corners of every figure image, drawn on a canvas: 255 where the figure brings its
# own opaque background, which keeps dark axes and labels readable on the dark theme.
FIGURE_BACKGROUNDS = """() => {
    const results = [];
    for (const img of document.querySelectorAll('article img')) {
        const canvas = document.createElement('canvas');
        canvas.width = img.naturalWidth; canvas.height = img.naturalHeight;
        const context = canvas.getContext('2d');
        context.drawImage(img, 0, 0);
        const corners = [[0, 0], [img.naturalWidth - 1, img.naturalHeight - 1]];
        const alpha = corners.map(([x, y]) => context.getImageData(x, y, 1, 1).data[3]);
        results.push({figure: img.currentSrc.split('/').pop(), opaque: Math.min(...alpha) === 255});
    }
    return results;
}"""

# Every chart's background and text colours, with the page's; and its accessible description.
CHART_THEME = """() => {
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
    return Array.from(document.querySelectorAll('div.pe-chart'), figure => {
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


def _luminance(colour: str) -> float:
    """Relative luminance of a CSS ``rgb(...)`` colour (WCAG 2)."""
    channels = [int(float(v)) for v in re.findall(r"[\d.]+", colour)[:3]]

    def linear(value: int) -> float:
        c = value / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = map(linear, channels)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


@pytest.mark.parametrize("relpath", PAGES or ["<no pages built>"])
def test_figures_readable_in_dark_mode(visit, relpath: str) -> None:
    if not PAGES:
        _not_available(f"no HTML pages under {HTML_DIR}: run `make book` first")
    page_visit = visit(relpath, init_script="localStorage.setItem('mode', 'dark')")
    page = page_visit.page
    page_visit.settle()
    assert page.evaluate("() => document.documentElement.dataset.theme") == "dark"
    if relpath in PAGES_WITH_FIGURES:
        _draw_figures(page)
    check_images(page)
    transparent = [f["figure"] for f in page.evaluate(FIGURE_BACKGROUNDS) if not f["opaque"]]
    assert not transparent, f"{relpath}: figures without an opaque background: {transparent}"
    problems = []
    for chart in page.evaluate(CHART_THEME):
        if chart["background"] != chart["page"]:
            problems.append(
                f"{chart['name']}: background {chart['background']}, page {chart['page']}"
            )
        if chart["controls"] is not None and chart["controls"] != chart["page"]:
            problems.append(
                f"{chart['name']}: controls on {chart['controls']}, page {chart['page']}"
            )
        if chart["text"] and _luminance(chart["text"]) < 0.4:
            problems.append(f"{chart['name']}: dark text {chart['text']} on the dark page")
        dark_words = [colour for colour in chart["words"] if _luminance(colour) < 0.4]
        if dark_words:
            problems.append(f"{chart['name']}: controls' text in {dark_words} on the dark page")
        label = chart["label"]
        if "Vega visualization" in label or not label.startswith("Chart:") or len(label) < 60:
            problems.append(f"{chart['name']}: no description of its own: {label!r}")
    assert not problems, f"{relpath} in dark mode:\n  " + "\n  ".join(problems)


# --------------------------------------------------------------------------- every screen

WIDE_WIDTH = 1280
CHAPTER_PAGES = [p for p in PAGES if re.match(r"book/\d\d_", p)]
# A chapter page's first visit (HTML, styles, scripts, fonts, images), uncompressed.
MAX_CHAPTER_BYTES = 3_000_000
SAMPLE_CHAPTER = "book/02_sinusoidal_formula.html"

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


TEXT_CONTROLS = "div.pe-chart .vega-bindings input[type=text]"


@pytest.mark.parametrize("relpath", sorted(PAGES_WITH_FIGURES) or ["<no figures>"])
def test_enter_in_a_chart_control_neither_submits_nor_scrolls(visit, relpath: str) -> None:
    """Enter in every text control keeps URL and scroll; bad input is reported in words."""
    page = visit(relpath, viewport={"width": WIDE_WIDTH, "height": 900}).page
    _draw_figures(page)
    page.evaluate("() => { window.peNotReloaded = true; }")
    boxes = page.locator(TEXT_CONTROLS)
    problems = []
    for index in range(boxes.count()):
        box = boxes.nth(index)
        box.scroll_into_view_if_needed()
        url, scroll = page.url, page.evaluate("() => window.scrollY")
        box.fill("abc, 999, 1")
        box.press("Enter")
        page.wait_for_timeout(500)
        if page.url != url or not page.evaluate("() => window.peNotReloaded === true"):
            problems.append(f"text box {index}: Enter reloaded or left the page ({page.url})")
            break
        if abs(page.evaluate("() => window.scrollY") - scroll) > 2:
            problems.append(f"text box {index}: Enter scrolled the page")
        figure = box.locator("xpath=ancestor::div[contains(@class, 'pe-chart')]")
        message = figure.locator(".pe-chart-message").inner_text()
        if "abc" not in message or "999" not in message:
            problems.append(f"text box {index}: bad input not reported: {message!r}")
        box.fill("0, 1")
        box.press("Enter")
        page.wait_for_timeout(300)
        if figure.locator(".pe-chart-message").inner_text().strip():
            problems.append(f"text box {index}: a message stays after good input")
    assert not problems, f"{relpath}:\n  " + "\n  ".join(problems)


CHARTS_FIT = """() => Array.from(document.querySelectorAll('div.pe-chart'), figure => {
    const svg = figure.querySelector('svg');
    return {name: figure.dataset.peChart, box: figure.clientWidth,
            drawn: Math.round(svg.getBoundingClientRect().width),
            right: Math.round(svg.getBoundingClientRect().right),
            limit: Math.round(figure.getBoundingClientRect().right)};
})"""


@pytest.mark.parametrize("relpath", sorted(PAGES_WITH_FIGURES) or ["<no figures>"])
def test_charts_fit_their_box_after_a_resize(visit, relpath: str) -> None:
    """1280 -> 700 -> 1280: every chart is drawn within its box, and fills a wide one."""
    page = visit(relpath, viewport={"width": WIDE_WIDTH, "height": 900}).page
    _draw_figures(page)
    problems = []
    for width in (700, WIDE_WIDTH):
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(800)
        for chart in page.evaluate(CHARTS_FIT):
            if chart["right"] > chart["limit"] + 1:
                problems.append(
                    f"at {width} px, {chart['name']} is {chart['drawn']} px wide "
                    f"in a {chart['box']} px box"
                )
    assert not problems, f"{relpath}:\n  " + "\n  ".join(problems)


OVERFLOWING = """(selector) => Array.from(document.querySelectorAll(selector))
    .filter(el => el.getClientRects().length > 0 && el.scrollWidth > el.clientWidth + 1)
    .map(el => ({what: el.tagName + ' ' + (el.textContent || '').trim().slice(0, 50),
                 needed: el.scrollWidth, shown: el.clientWidth}))"""
MATH_BOXES = "article div.math > .katex-display"
CODE_BOXES = "article div.cell pre, article div.highlight pre"


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


@pytest.mark.parametrize("relpath", PAGES or ["<no pages built>"])
def test_no_equation_is_cut_at_1280(visit, relpath: str) -> None:
    if not PAGES:
        _not_available(f"no HTML pages under {HTML_DIR}: run `make book` first")
    cut = _open_wide(visit, relpath).evaluate(OVERFLOWING, MATH_BOXES)
    assert not cut, f"{relpath}: display equations wider than the column at 1280 px: {cut}"


@pytest.mark.parametrize("relpath", CHAPTER_PAGES or ["<no pages built>"])
def test_no_code_or_output_scrolls_at_1280(visit, relpath: str) -> None:
    """Chapters keep lines within 76 characters; the column holds 80 at 1280 px."""
    if not CHAPTER_PAGES:
        _not_available(f"no chapter pages under {HTML_DIR}: run `make book` first")
    page = _open_wide(visit, relpath)
    columns = page.evaluate(
        """() => { const pre = document.querySelector('article pre');
        const style = getComputedStyle(pre);
        const canvas = document.createElement('canvas').getContext('2d');
        canvas.font = style.fontSize + ' ' + style.fontFamily;
        const inner = pre.clientWidth - parseFloat(style.paddingLeft)
            - parseFloat(style.paddingRight);
        return inner / canvas.measureText('0').width; }"""
    )
    assert columns >= 80, f"{relpath}: the code column holds {columns:.1f} characters at 1280 px"
    wide = page.evaluate(OVERFLOWING, CODE_BOXES)
    assert not wide, f"{relpath}: code or output scrolls sideways at 1280 px: {wide[:5]}"


# The pixels of the file each image shows (an image with a srcset reports a naturalWidth scaled
# by the density of the copy it chose; the file loaded on its own gives its pixels).
SHARPNESS = """() => Promise.all(Array.from(document.querySelectorAll('article img'))
    .filter(img => img.getClientRects().length > 0 && img.clientWidth > 0)
    .map(async img => {
        const file = new Image();
        file.src = img.currentSrc;
        await file.decode();
        return {src: img.currentSrc.split('/').pop(), natural: file.naturalWidth,
                shown: img.clientWidth, vector: /\\.svg($|\\?)/.test(img.currentSrc)};
    }))"""


@pytest.mark.parametrize("relpath", CHAPTER_PAGES or ["<no pages built>"])
def test_figures_are_sharp_on_high_dpi_screens(visit, relpath: str) -> None:
    """Every figure image is vector, or has at least 1.5 pixels per displayed CSS pixel, on a
    screen with two device pixels per CSS pixel (a figure's ``srcset`` gives a screen of lower
    density a smaller copy)."""
    if not CHAPTER_PAGES:
        _not_available(f"no chapter pages under {HTML_DIR}: run `make book` first")
    page_visit = visit(
        relpath, viewport={"width": WIDE_WIDTH, "height": 900}, device_scale_factor=2
    )
    page = page_visit.page
    page_visit.settle()
    check_images(page)
    soft = [
        f"{img['src']}: {img['natural']} px shown {img['shown']} px wide"
        for img in page.evaluate(SHARPNESS)
        if not img["vector"] and img["natural"] < 1.5 * img["shown"] and "logo" not in img["src"]
    ]
    assert not soft, f"{relpath}: soft figures:\n  " + "\n  ".join(soft)


def _edition() -> str:
    """The language of the built book under test: "en" or "ko"."""
    language = re.search(r'<html lang="(\w+)"', (HTML_DIR / "search.html").read_text("utf-8"))
    return language.group(1) if language else "en"


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


def _search(visit, query: str) -> tuple[object, list[dict]]:
    page = visit(f"search.html?q={query}").page
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


# Files a page may load only where it uses them, each with what uses it: a selector, or a script
# that says whether the page holds a user, run in the page after its own scripts. A page must load
# each file exactly when it holds a user: Vega with a chart, Sphinx's search scripts and index on
# the search page, the copy buttons with code, and so on.
SHOWS_HANGUL = """() => /[\u1100-\u11ff\u3130-\u318f\uac00-\ud7a3]/.test(document.title
    + document.body.textContent) || document.querySelector('#search-results') !== null"""
USERS_OF_FILES = {
    "_static/vega/vega.min.js": "div.pe-chart",
    "_static/vega/vega-embed.min.js": "div.pe-chart",
    "_static/pe-charts.js": "div.pe-chart, .cell_output img",
    "_static/searchtools.js": "#search-results",
    "_static/language_data.js": "#search-results",
    "searchindex.js": "#search-results",
    "_static/pe-search.js": "#search-results",
    "_static/pe-search.css": "#search-results",
    "_static/pe-search-weights.js": "#search-results",
    "_static/pe-scroll-boxes.js": "div.highlight",
    "_static/jupyter-widgets/embed.js": 'script[type="application/vnd.jupyter.widget-state+json"]',
    "_static/katex/katex.min.css": "div.math, span.math",
    "_static/pe-math.js": "div.math, span.math",
    "_static/copybutton.js": "div.highlight",
    "_static/clipboard.min.js": "div.highlight",
    "_static/togglebutton.js": ".toggle, .admonition.dropdown",
    "_static/design-tabs.js": '[class^="sd-"], [class*=" sd-"]',
    "_static/sphinx-design.min.css": '[class^="sd-"], [class*=" sd-"]',
    "_static/sphinx-thebe.js": ".btn-launch-thebe",
    "_static/fonts/noto-sans-kr.css": SHOWS_HANGUL,
    "_static/hangul.css": SHOWS_HANGUL,
}
# Files no page loads: Vega-Lite (the build compiles every chart to Vega), and the theme's whole
# Font Awesome fonts (the pages draw their few glyphs from the subsets of book/_static/
# icon-font.css; a glyph missing there would fetch a whole font).
NEVER_LOADED = ("vega-lite.min.js",) + tuple(
    f"vendor/fontawesome/webfonts/{font}.{kind}"
    for font in ("fa-solid-900", "fa-regular-400", "fa-brands-400")
    for kind in ("woff2", "ttf")
)


def _holds_user(page, user: str) -> bool:
    if user.startswith("() =>"):
        return page.evaluate(user)
    return page.evaluate("(s) => document.querySelector(s) !== null", user)


@pytest.mark.korean_browser
@pytest.mark.parametrize("relpath", PAGES or ["<no pages built>"])
def test_first_visit_weight(browser, base_url, relpath: str) -> None:
    """Prints each page's first-visit weight; a chapter page stays under MAX_CHAPTER_BYTES. A
    page loads each file of USERS_OF_FILES exactly when it holds a user of it, never Vega-Lite,
    and the icons as the small subset."""
    if not PAGES:
        _not_available(f"no HTML pages under {HTML_DIR}: run `make book` first")
    page_visit = PageVisit(browser, base_url, relpath)
    sizes: dict[str, int] = {}

    def record(request) -> None:
        if request.url.startswith(base_url):
            sizes[request.url] = request.sizes()["responseBodySize"]

    try:
        page = page_visit.page
        page.on("requestfinished", record)
        page.goto(page_visit.url, wait_until="load")
        page_visit.settle()
        if relpath in PAGES_WITH_FIGURES:
            _draw_figures(page)
        check_images(page)
        page_visit.settle()
        holds = {path: _holds_user(page, user) for path, user in USERS_OF_FILES.items()}
    finally:
        page_visit.close()
    total = sum(sizes.values())
    print(f"\nfirst visit {relpath}: {total:,} bytes ({total / 1e6:.2f} MB) in {len(sizes)} files")
    loaded = {urlsplit(url).path.lstrip("/"): size for url, size in sizes.items()}
    problems = [
        f"{path} {'loaded, with no' if path in loaded else 'not loaded, with a'} user on the page"
        for path, held in holds.items()
        if (path in loaded) != held
    ]
    problems += [f"{path} loaded" for path in loaded if path.endswith(NEVER_LOADED)]
    assert not problems, f"{relpath}: " + "; ".join(problems)
    icons = [size for path, size in loaded.items() if path.endswith("fontawesome.js")]
    assert all(size < 50_000 for size in icons), f"the whole icon font script: {icons}"
    if relpath in CHAPTER_PAGES:
        assert total < MAX_CHAPTER_BYTES, f"{relpath}: {total / 1e6:.2f} MB on a first visit"


# --------------------------------------------------------------------------- the reader's screen
# Issue 25: figures in shape, formulas without scrollbars, lines visible in both themes, no
# serious accessibility fault, a phone that does not wait.

AXE = ROOT / "tests" / "book" / "axe-core" / "axe.min.js"
# The impacts axe-core rates "serious" and "critical": none may remain on any page.
FORBIDDEN_IMPACTS = {"serious", "critical"}
# Rules of lesser impact that no page may break either: "region", content outside every
# landmark (the book's title stood outside them).
FORBIDDEN_RULES = {"region"}


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


# Each figure image: the aspect it is shown at against its own, once loaded.
FIGURE_SHAPES = """() => Promise.all(Array.from(
        document.querySelectorAll('article .cell_output img'), async img => {
    const file = new Image();  // the pixels of the file shown (naturalWidth is density-scaled)
    if (img.currentSrc) { file.src = img.currentSrc; await file.decode(); }
    return {
    src: img.getAttribute('src').split('/').pop(),
    shown: img.clientWidth / img.clientHeight,
    natural: img.naturalWidth / img.naturalHeight,
    lazy: img.loading === 'lazy',
    srcset: img.hasAttribute('srcset'),
    current: img.currentSrc.split('/').pop(),
    naturalWidth: file.naturalWidth,
    width: img.clientWidth,
};}))"""


@pytest.mark.parametrize("relpath", CHAPTER_PAGES or ["<no pages built>"])
def test_figures_keep_their_shape_load_lazily_and_fit_a_phone(browser, base_url, relpath) -> None:
    """At 400 px every figure keeps its aspect ratio (a circle stays a circle); every figure
    loads lazily; each offers a copy for a phone's column, which the phone takes."""
    if not CHAPTER_PAGES:
        _not_available(f"no HTML pages under {HTML_DIR}: run `make book` first")
    page_visit = _open(browser, base_url, relpath, viewport={"width": NARROW_WIDTH, "height": 800})
    try:
        page = page_visit.page
        before = page.evaluate(FIGURE_SHAPES)
        assert not check_images(page)  # loads every figure (scrolling to each)
        figures = page.evaluate(FIGURE_SHAPES)
    finally:
        page_visit.close()
    squashed = [
        f"{f['src']}: shown {f['shown']:.2f}, natural {f['natural']:.2f}"
        for f in figures
        if abs(f["shown"] / f["natural"] - 1) > 0.02
    ]
    assert not squashed, f"{relpath} at {NARROW_WIDTH} px, figures out of shape: {squashed}"
    eager = [f["src"] for f in before if not f["lazy"]]
    assert not eager, f"{relpath}: figures that load before the reader comes near them: {eager}"
    big = [
        f"{f['src']} loaded {f['current']} ({f['naturalWidth']} px for {f['width']} px)"
        for f in figures
        if f["srcset"] is False or f["naturalWidth"] > 2 * f["width"]
    ]
    assert not big, f"{relpath} at {NARROW_WIDTH} px, figures with no phone-sized copy: {big}"


# The smallest text a reader sees in a figure, in CSS px: 9 px, about 6.75 pt, the smallest type
# print journals accept in a figure (and the tick labels that a 400 px screen showed at 5 to 7 px
# before the figures were narrowed).
SMALLEST_SHOWN_TEXT_PX = 9.0
# Each matplotlib figure: the width the page shows it at, and the width it was drawn for (its
# ``width`` attribute, IPython's retina size: 1 CSS px per pixel at matplotlib's 100 dpi).
FIGURE_SCALES = """() => Array.from(document.querySelectorAll('article .cell_output img'), img => ({
    src: img.getAttribute('src').split('/').pop(),
    shown: img.getBoundingClientRect().width,
    drawn: Number(img.getAttribute('width')),
    enlarge: !!img.closest('a[href]'),
}))"""


@pytest.mark.parametrize("relpath", CHAPTER_PAGES or ["<no pages built>"])
def test_figure_text_is_legible_on_a_phone(browser, base_url, relpath) -> None:
    """At 400 px, the smallest text of every matplotlib figure shows at 9 CSS px or more.

    A figure is drawn at 100 dpi, so text of ``s`` points is ``s * 100 / 72`` CSS px where the
    figure is shown at the width it was drawn for; the page scales it to its column. The smallest
    text any figure draws is ``pe_lib.viz.plotting.SMALLEST_TEXT_PT``: the book's figures are shown
    by ``use_book_figures``, which refuses smaller text (and nbval re-executes every chapter).
    Each figure still opens at full size on a tap.
    """
    from pe_lib.viz.plotting import BOOK_RC, SMALLEST_TEXT_PT

    if not CHAPTER_PAGES:
        _not_available(f"no HTML pages under {HTML_DIR}: run `make book` first")
    page_visit = _open(browser, base_url, relpath, viewport={"width": NARROW_WIDTH, "height": 800})
    try:
        page = page_visit.page
        assert not check_images(page)
        figures = page.evaluate(FIGURE_SCALES)
    finally:
        page_visit.close()
    point = BOOK_RC["figure.dpi"] / 72  # CSS px per point where a figure is shown at 1 to 1
    small = [
        f"{f['src']}: drawn {f['drawn']} px wide, shown {f['shown']:.0f} px: "
        f"{SMALLEST_TEXT_PT:g} pt text at {SMALLEST_TEXT_PT * point * f['shown'] / f['drawn']:.1f} px"
        for f in figures
        if SMALLEST_TEXT_PT * point * f["shown"] / f["drawn"] < SMALLEST_SHOWN_TEXT_PX
    ]
    assert not small, (
        f"{relpath} at {NARROW_WIDTH} px, figure text under {SMALLEST_SHOWN_TEXT_PX:g} px:\n  "
        + "\n  ".join(small)
    )
    closed = [f["src"] for f in figures if not f["enlarge"]]
    assert not closed, f"{relpath}: figures that a tap does not open at full size: {closed}"


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
    page_visit = _open(
        browser_with_scrollbars, base_url, relpath, viewport={"width": width, "height": 900}
    )
    try:
        bad = page_visit.page.evaluate(MATH_SCROLLERS)
    finally:
        page_visit.close()
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


# Issue 25: a phone does not wait on layout work. The formulas are typeset when the book is built
# and fitted as the page loads (one layout); pe-charts.js draws the figures near the screen, and a
# figure far below waits until the reader scrolls to it, and is then drawn.
LAZY_PAGE = "book/07_rope_alibi.html"
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
        chart = page.evaluate(CHART_THEME)[-1]
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


# Every mark of every chart that carries data (lines, points, symbols in the plot, not the
# axes, gridlines or legend), its stroke or fill, with the page's background.
CHART_MARKS = """() => {
    const probe = document.createElement('div');
    probe.style.color = getComputedStyle(document.documentElement)
        .getPropertyValue('--pst-color-background');
    document.body.appendChild(probe);
    const page = getComputedStyle(probe).color;
    probe.remove();
    const marks = [];
    for (const figure of document.querySelectorAll('div.pe-chart')) {
        for (const path of figure.querySelectorAll(
                'svg g.mark-line path, svg g.mark-symbol path, svg g.mark-area path')) {
            if (path.closest('.role-legend, .role-axis')) continue;
            const style = getComputedStyle(path);
            const colour = style.stroke !== 'none' ? style.stroke : style.fill;
            if (colour === 'none' || parseFloat(style.opacity) === 0) continue;
            marks.push({chart: figure.dataset.peChart, colour});
        }
    }
    return {page, marks};
}"""


def _contrast(first: str, second: str) -> float:
    high, low = sorted((_luminance(first), _luminance(second)), reverse=True)
    return (high + 0.05) / (low + 0.05)


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("relpath", sorted(PAGES_WITH_FIGURES) or ["<no figures>"])
def test_every_chart_mark_has_3_to_1_contrast_with_the_page(
    browser, base_url, relpath: str, theme: str
) -> None:
    """WCAG 2.1's 1.4.11 for the explorable figures: each line and point that carries data has at
    least 3:1 contrast with the page, light and dark (charts follow the theme live)."""
    if not PAGES_WITH_FIGURES:
        _not_available(f"no figures under {HTML_DIR}: run `make book` first")
    page_visit = _open(browser, base_url, relpath, theme)
    try:
        page = page_visit.page
        assert page.evaluate("() => document.documentElement.dataset.theme") == theme
        found = page.evaluate(CHART_MARKS)
        # And after the reader switches theme on the page: the charts redraw in its colours.
        other = "dark" if theme == "light" else "light"
        page.evaluate(f"() => document.documentElement.dataset.theme = '{other}'")
        page.wait_for_timeout(1500)
        _draw_figures(page)
        switched = page.evaluate(CHART_MARKS)
    finally:
        page_visit.close()
    problems = []
    for label, result in ((theme, found), (f"switched to {other}", switched)):
        assert result["marks"], f"{relpath}: no chart marks found ({label})"
        weak = {
            f"{m['chart']} {m['colour']}: {_contrast(m['colour'], result['page']):.2f}"
            for m in result["marks"]
            if _contrast(m["colour"], result["page"]) < 3
        }
        problems += [f"{label}, page {result['page']}: {sorted(weak)}"] if weak else []
    assert not problems, f"{relpath}: chart marks below 3:1 with the page: {problems}"


# Each code block or printed output of the page, shown (not in a folded cell), with every line of
# its text that the screen breaks onto two rows or more (its first and last characters on
# different rows), and whether it scrolls and can be reached with the keyboard and says what it is.
LINES_ON_SCREEN = """(selector) => Array.from(document.querySelectorAll(selector))
    .filter(pre => pre.getClientRects().length > 0 && !pre.closest('details:not([open])'))
    .map(pre => {
        const chars = [];
        const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
        while (walker.nextNode()) {
            const node = walker.currentNode;
            for (let i = 0; i < node.data.length; i++) chars.push([node, i, node.data[i]]);
        }
        const box = ([node, i]) => {
            const range = document.createRange();
            range.setStart(node, i);
            range.setEnd(node, i + 1);
            return range.getBoundingClientRect();
        };
        const lines = [[]];
        for (const char of chars) {
            if (char[2] === '\\n') lines.push([]);
            else lines[lines.length - 1].push(char);
        }
        const broken = lines.map(line => line.filter(c => c[2].trim()))
            .filter(line => line.length > 1
                && Math.abs(box(line[0]).top - box(line[line.length - 1]).top) > 2)
            .map(line => line.map(c => c[2]).join('').slice(0, 50));
        return {text: pre.textContent.trim().slice(0, 50), broken,
                scrolls: pre.scrollWidth > pre.clientWidth + 1,
                reachable: pre.tabIndex === 0 && pre.getAttribute('role') === 'region'
                    && (pre.getAttribute('aria-label') || '').length > 0};
    })"""
PHONE_BOXES = "article div.highlight > pre"
# Every folded cell of the page opened, then two frames: how many there were.
OPEN_FOLDED_CELLS = """() => new Promise(resolve => {
    const folded = Array.from(document.querySelectorAll('article details:not([open])'));
    folded.forEach(details => { details.open = true; });
    requestAnimationFrame(() => requestAnimationFrame(() => resolve(folded.length)));
})"""
# Chapters with a folded cell whose code scrolls on a phone.
FOLDED_PAGES = {"book/00_the_path.html"}


@pytest.mark.parametrize("relpath", CHAPTER_PAGES or ["<no pages built>"])
def test_code_and_output_keep_their_lines_on_a_phone(browser, base_url, relpath: str) -> None:
    """At 400 px no line of code or printed output is broken onto two rows (a continuation at
    column 0, a name split mid-word, a hanging indent turned into an empty line): a line wider
    than the column scrolls inside its box, and each box that scrolls is keyboard-focusable and
    labelled (tabindex 0, role region, an aria-label)."""
    if not CHAPTER_PAGES:
        _not_available(f"no HTML pages under {HTML_DIR}: run `make book` first")
    page_visit = _open(browser, base_url, relpath, viewport={"width": NARROW_WIDTH, "height": 800})
    try:
        page = page_visit.page
        boxes = page.evaluate(LINES_ON_SCREEN, PHONE_BOXES)
        # The reader opens every folded cell: its boxes are measured as they are shown.
        folded = page.evaluate(OPEN_FOLDED_CELLS)
        boxes += [box for box in page.evaluate(LINES_ON_SCREEN, PHONE_BOXES) if box not in boxes]
    finally:
        page_visit.close()
    assert any(box["scrolls"] for box in boxes), f"{relpath}: no box scrolls at 400 px (vacuous)"
    assert folded or relpath not in FOLDED_PAGES, f"{relpath}: no folded cell (a vacuous check)"
    broken = [f"{box['text']!r}: {box['broken'][:2]}" for box in boxes if box["broken"]]
    assert not broken, (
        f"{relpath} at {NARROW_WIDTH} px, lines broken in {len(broken)}: {broken[:3]}"
    )
    unreachable = [box["text"] for box in boxes if box["scrolls"] and not box["reachable"]]
    assert not unreachable, f"{relpath}: scroll boxes not focusable and labelled: {unreachable[:3]}"


# Each printed table (an output of 3 lines or more with 3 columns or more, set apart by two
# spaces or more): whether its box scrolls, and each character of a row that does not stand
# under the same character position of the table's first row (its labels).
TABLE_COLUMNS = """() => Array.from(document.querySelectorAll('article .cell_output div.highlight > pre'))
    .filter(pre => pre.getClientRects().length > 0)
    .map(pre => {
        const lines = [[]];
        const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
        while (walker.nextNode()) {
            const node = walker.currentNode;
            for (let i = 0; i < node.data.length; i++) {
                if (node.data[i] === '\\n') lines.push([]);
                else lines[lines.length - 1].push([node, i, node.data[i]]);
            }
        }
        const rows = lines.filter(line => line.map(c => c[2]).join('').trim()
            .split(/\\s{2,}/).length >= 3);
        return {pre, rows};
    })
    .filter(({rows}) => rows.length >= 3)
    .map(({pre, rows}) => {
        const left = ([node, i]) => {
            const range = document.createRange();
            range.setStart(node, i);
            range.setEnd(node, i + 1);
            return range.getBoundingClientRect().left;
        };
        const labels = rows[0];
        const misplaced = [];
        for (const row of rows.slice(1)) {
            for (let i = 0; i < Math.min(row.length, labels.length); i += 1) {
                if (row[i][2].trim() && Math.abs(left(row[i]) - left(labels[i])) > 1) {
                    misplaced.push(row.map(c => c[2]).join('').trim().slice(0, 40) + ' @' + i);
                    break;
                }
            }
        }
        return {text: labels.map(c => c[2]).join('').trim().slice(0, 50),
                scrolls: pre.scrollWidth > pre.clientWidth + 1,
                reachable: pre.tabIndex === 0 && pre.getAttribute('role') === 'region'
                    && (pre.getAttribute('aria-label') || '').length > 0,
                misplaced};
    })"""
# The chapters whose printed tables fell apart on a phone: chapter 9's zero-shot perplexity by
# length, chapter 7's accuracies.
TABLE_PAGES = ["book/07_rope_alibi.html", "book/09_train_short_test_long.html"]


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("relpath", TABLE_PAGES)
def test_printed_tables_keep_their_columns_on_a_phone(browser, base_url, relpath, theme) -> None:
    """At 400 px, in both themes, every value of a printed table stands under its label (the
    characters of every row at the same positions as the first row's), a table wider than the
    column scrolls in its box, and that box is keyboard-focusable and labelled."""
    if relpath not in PAGES:
        _not_available(f"{relpath} is not built: run `make book` first")
    page_visit = _open(
        browser, base_url, relpath, theme, viewport={"width": NARROW_WIDTH, "height": 800}
    )
    try:
        tables = page_visit.page.evaluate(TABLE_COLUMNS)
    finally:
        page_visit.close()
    assert any(t["scrolls"] for t in tables), f"{relpath}: no table wider than 400 px: {tables}"
    misplaced = [f"{t['text']!r}: {t['misplaced'][:2]}" for t in tables if t["misplaced"]]
    assert not misplaced, f"{relpath} ({theme}): values off their labels: {misplaced[:3]}"
    unreachable = [t["text"] for t in tables if t["scrolls"] and not t["reachable"]]
    assert not unreachable, f"{relpath}: tables that scroll, unlabelled: {unreachable}"


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


@pytest.mark.korean_browser
def test_every_page_has_a_meta_description() -> None:
    """What a search engine shows under the page's title: the page's own words."""
    if not PAGES:
        _not_available(f"no HTML pages under {HTML_DIR}: run `make book` first")
    missing, shared = [], {}
    for relpath in PAGES:
        text = (HTML_DIR / relpath).read_text(encoding="utf-8")
        if relpath == "index.html" and "http-equiv" in text:  # the redirect to the intro
            continue
        found = re.findall(r'<meta name="description" content="([^"]+)"', text)
        if len(found) != 1 or len(found[0]) < 20:
            missing.append(relpath)
        else:
            shared.setdefault(found[0], []).append(relpath)
    assert not missing, f"pages without one description: {missing}"
    repeated = {text: pages for text, pages in shared.items() if len(pages) > 1}
    assert not repeated, f"pages sharing a description: {repeated}"


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


# Every text of a chart (tick labels, titles, legends) inside the chart's own box, at each
# control's smallest and largest setting.
CHART_TEXT_CUT = """async () => {
    const cut = [];
    for (const figure of document.querySelectorAll('div.pe-chart')) {
        const view = figure.peView;
        const sliders = Array.from(figure.querySelectorAll('.vega-bindings input[type=range]'));
        const start = sliders.map(input => input.value);
        // Every slider at its end, together, then each alone.
        const settings = [sliders.map(i => i.min), sliders.map(i => i.max)];
        sliders.forEach((input, k) => {
            for (const end of [input.min, input.max]) {
                settings.push(start.map((value, m) => (m === k ? end : value)));
            }
        });
        settings.push(start);
        for (const values of settings) {
            sliders.forEach((input, k) => {
                input.value = values[k];
                input.dispatchEvent(new Event('input', {bubbles: true}));
            });
            await view.runAsync();
            await new Promise(resolve => setTimeout(resolve, 100));
            const box = figure.querySelector('svg').getBoundingClientRect();
            for (const text of figure.querySelectorAll('svg text')) {
                const r = text.getBoundingClientRect();
                if (!text.textContent.trim() || r.width === 0) continue;
                if (r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.top < box.top - 0.5
                        || r.bottom > box.bottom + 0.5) {
                    const where = sliders.map((input, k) => `${input.name} ${values[k]}`);
                    cut.push(`${figure.dataset.peChart} (${where.join(', ')}): `
                             + `"${text.textContent}"`);
                }
            }
        }
    }
    return Array.from(new Set(cut));
}"""


@pytest.mark.parametrize("width", [NARROW_WIDTH, WIDE_WIDTH])
@pytest.mark.parametrize("relpath", sorted(PAGES_WITH_FIGURES) or ["<no figures>"])
def test_chart_text_is_never_cut(browser, base_url, relpath: str, width: int) -> None:
    """No tick label, title or legend of a chart reaches past its box (chapter 8's log axis cut
    "0.003" to ".003" at factor 16)."""
    if not PAGES_WITH_FIGURES:
        _not_available(f"no figures under {HTML_DIR}: run `make book` first")
    page_visit = _open(browser, base_url, relpath, viewport={"width": width, "height": 900})
    try:
        cut = page_visit.page.evaluate(CHART_TEXT_CUT)
    finally:
        page_visit.close()
    assert not cut, f"{relpath} at {width} px, chart text cut at its box: {cut[:6]}"


@pytest.mark.korean_browser
def test_no_request_failed_over_the_session() -> None:
    """Requests the browser makes on its own (favicon) get answers too; runs after the others."""
    assert not NOT_FOUND, f"paths the server could not serve: {sorted(set(NOT_FOUND))}"


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
