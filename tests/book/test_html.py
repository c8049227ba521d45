"""The built book opened the way a reader opens it: every page of ``_build/html`` in headless Chromium.

The pages are served from a local HTTP server on an ephemeral port. Every request that would leave
that server (a CDN, Binder, Colab) is aborted and recorded, so a page passes only if it reads
offline. Per page the test checks: no console errors or uncaught exceptions, no failed request to
the local server, no request to any other host, every ``<img>`` decoded (``naturalWidth > 0``),
math typeset by the MathJax copy in ``_static`` (one ``mjx-container`` per math element and no
MathJax error node), every local link pointing at an existing file and, when it has a
``#fragment``, at an existing ``id`` in that file, and every saved ipywidget rendered into a
visible, non-empty area.

Run it with ``make html-test`` after ``make book``. Without a Chromium binary the tests are skipped
with a reason, except in CI (``CI=true``), where a missing browser is a failure.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import threading
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pytest
import yaml

try:
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
    from playwright.sync_api import sync_playwright
except ImportError:  # reported by the `browser` fixture (skip outside CI, failure in CI)
    sync_playwright = None
    PlaywrightTimeoutError = TimeoutError

pytestmark = pytest.mark.html

ROOT = Path(__file__).resolve().parents[2]
# $BOOK_HTML_DIR checks another build (e.g. one made with --path-output); default: `make book`'s.
HTML_DIR = Path(os.environ.get("BOOK_HTML_DIR", ROOT / "_build" / "html")).resolve()
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
# Pages that must carry at least one live (saved-state) ipywidget.
PAGES_WITH_WIDGETS = {"book/03_frequency_spectrum.html"}
# A page's math must be typeset within this time (ms); MathJax usually needs well under a second.
MATH_TIMEOUT_MS = 10_000
WIDGET_TIMEOUT_MS = 10_000

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


def _toc_documents() -> list[str]:
    """Documents named in _toc.yml (root and every chapter), as html paths."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    docs = [toc["root"]]

    def walk(entries: list[dict]) -> None:
        for entry in entries:
            if "file" in entry:
                docs.append(entry["file"])
            walk(entry.get("sections", []))

    for part in toc.get("parts", []):
        walk(part.get("chapters", []))
    walk(toc.get("chapters", []))
    return [f"{doc}.html" for doc in docs]


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
    path = HTML_DIR / unquote(parts.path).lstrip("/")
    if parts.path.endswith("/") or path.is_dir():
        path = path / "index.html"
    return path, unquote(parts.fragment)


# --------------------------------------------------------------------------- fixtures


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (stdlib signature)
        pass


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

    def __init__(self, browser, base_url: str, relpath: str) -> None:
        self.url = base_url + relpath
        self.base_url = base_url
        self.problems: list[str] = []
        self.context = browser.new_context()
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("console", self._on_console)
        self.page.on("pageerror", lambda error: self.problems.append(f"uncaught error: {error}"))
        self.page.on("requestfailed", self._on_request_failed)
        self.page.on("response", self._on_response)

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

    def open_page(relpath: str) -> PageVisit:
        page_visit = PageVisit(browser, base_url, relpath)
        visits.append(page_visit)
        page_visit.page.goto(page_visit.url, wait_until="load")
        return page_visit

    yield open_page
    for page_visit in visits:
        page_visit.close()


# --------------------------------------------------------------------------- per-page checks


def check_math(page, base_url: str) -> list[str]:
    """Every Sphinx math element typeset by MathJax, with no MathJax error node."""
    math_count = page.locator("div.math, span.math").count()
    if math_count == 0:
        return []
    try:
        page.wait_for_function(
            "() => window.MathJax && MathJax.startup && MathJax.startup.promise",
            timeout=MATH_TIMEOUT_MS,
        )
    except PlaywrightTimeoutError:
        return [
            f"math: {math_count} math elements, but MathJax did not start in {MATH_TIMEOUT_MS} ms"
        ]
    page.evaluate("() => MathJax.startup.promise")
    problems = []
    typeset = page.locator("div.math mjx-container, span.math mjx-container").count()
    if typeset < math_count:
        problems.append(f"math: only {typeset} of {math_count} math elements typeset by MathJax")
    errors = page.evaluate(
        "() => Array.from(document.querySelectorAll('mjx-merror'),"
        " node => node.getAttribute('data-mjx-error') || node.textContent)"
    )
    if errors:
        problems.append(f"math: MathJax could not typeset {errors}")
    sources = page.evaluate(
        "() => Array.from(document.scripts, s => s.src).filter(s => /\\/mathjax\\//i.test(s))"
    )
    if not sources or not all(src.startswith(base_url + "_static/mathjax/") for src in sources):
        problems.append(f"math: MathJax not loaded from this site's _static: {sources}")
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
            problems.append(f"broken link {href!r}: no file {path.relative_to(HTML_DIR)}")
        elif fragment and path.suffix == ".html" and fragment not in ids_in(path):
            problems.append(f"broken anchor {href!r}: no id {fragment!r} in {path.name}")
    return problems


@pytest.mark.parametrize("relpath", PAGES or ["<no pages built>"])
def test_page_reads_offline(visit, relpath: str) -> None:
    if not PAGES:
        _not_available(f"no HTML pages under {HTML_DIR}: run `make book` first")
    page_visit = visit(relpath)
    page = page_visit.page
    page.wait_for_load_state("networkidle")
    problems = check_math(page, page_visit.base_url)
    widget_count, widget_problems = check_widgets(page)
    problems += widget_problems
    if relpath in PAGES_WITH_WIDGETS and widget_count == 0:
        problems.append("widgets: this page should show a saved ipywidget, and it has none")
    problems += check_images(page)
    # index.html redirects to the root document: check the page the reader ends up on.
    problems += check_links(page, page.url, page_visit.base_url)
    page.wait_for_load_state("networkidle")
    problems += page_visit.problems
    assert not problems, f"{relpath}:\n  " + "\n  ".join(problems)


# --------------------------------------------------------------------------- launch buttons


def _config() -> dict:
    return yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))


CHAPTER_NOTEBOOKS = sorted(
    p.relative_to(ROOT).as_posix() for p in (ROOT / "book").glob("[0-9]*.ipynb")
)


@pytest.mark.parametrize("notebook", CHAPTER_NOTEBOOKS)
def test_chapter_offers_launch_buttons_and_download(notebook: str) -> None:
    """Binder (JupyterLab), Colab, Thebe's "Live code" and the .ipynb download, on every chapter."""
    page_path = HTML_DIR / notebook.replace(".ipynb", ".html")
    if not page_path.is_file():
        _not_available(f"{page_path} is not built: run `make book` first")
    html = page_path.read_text(encoding="utf-8")
    config = _config()
    owner_repo = urlsplit(config["repository"]["url"]).path.strip("/")
    branch = config["repository"]["branch"]
    book_path = "/".join(p for p in (config["repository"].get("path_to_book", ""), notebook) if p)
    binder = config["launch_buttons"]["binderhub_url"].rstrip("/")
    colab = config["launch_buttons"]["colab_url"].rstrip("/")

    expected_binder = f"{binder}/v2/gh/{owner_repo}/{branch}?urlpath=lab/tree/{book_path}"
    expected_colab = f"{colab}/github/{owner_repo}/blob/{branch}/{book_path}"
    assert f'href="{expected_binder}"' in html, f"no Binder (JupyterLab) button {expected_binder}"
    assert f'href="{expected_colab}"' in html, f"no Colab button {expected_colab}"
    assert re.search(r'onclick="initThebeSBT\(\)"[^>]*>.*?Live Code</span>', html, re.S), (
        "no Thebe 'Live Code' button"
    )
    thebe_repo = re.search(r'binderOptions:\s*{\s*repo:\s*"([^"]+)",\s*ref:\s*"([^"]+)"', html)
    assert thebe_repo, "no Thebe Binder configuration on the page"
    assert thebe_repo.groups() == (owner_repo, branch), f"Thebe connects to {thebe_repo.groups()}"

    download = re.search(r'href="([^"]*_sources/[^"]*\.ipynb)"', html)
    assert download, "no .ipynb download link"
    downloaded = (page_path.parent / download.group(1)).resolve()
    assert downloaded.is_file(), f"download link points at a missing file: {download.group(1)}"
    cells = json.loads(downloaded.read_text(encoding="utf-8"))["cells"]
    assert cells, f"the downloadable {downloaded.name} has no cells"


def test_every_toc_document_is_built() -> None:
    missing = [doc for doc in _toc_documents() if doc not in PAGES]
    if not PAGES:
        _not_available(f"no HTML pages under {HTML_DIR}: run `make book` first")
    assert not missing, f"in _toc.yml but not built: {missing}"
