"""Every page reads offline: no console error, no failed or outside request, every image
decoded, math typeset at build time, Hangul in the book's font, every local link and #fragment
resolving, every saved widget drawn; each page loads only the files it uses, and its first visit
weighs little; launch buttons, downloads and descriptions are there."""

from __future__ import annotations

import functools
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urljoin, urlsplit

import pytest
import yaml

from tests.book.html.book_pages import (
    CHAPTER_PAGES,
    HANGUL,
    HTML_DIR,
    NOT_FOUND,
    PAGES,
    PAGES_WITH_FIGURES,
    ROOT,
    PageVisit,
    PlaywrightTimeoutError,
    _draw_figures,
    _not_available,
    check_images,
    site_file,
)
from tests.book_sources import toc_documents

pytestmark = pytest.mark.html

WIDGET_TIMEOUT_MS = 10_000

# Pages that quote the article's Korean sentences (a page with none would make the check vacuous).
PAGES_WITH_HANGUL = {"book/intro.html", "book/01_permutation_invariance.html", "book/summary.html"}
HANGUL_FAMILY = "Noto Sans KR"

WIDGET_VIEW_SELECTOR = 'script[type="application/vnd.jupyter.widget-view+json"]'


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
    # Load the font for this page's syllables (its unicode-range names them), then
    # let the page lay itself out with it.
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


# A chapter page's first visit (HTML, styles, scripts, fonts, images), uncompressed.
MAX_CHAPTER_BYTES = 3_000_000


# Files a page may load only where it uses them, each with what uses it: a selector, or a script
# that says whether the page holds a user, run in the page after its own scripts. A page must load
# each file exactly when it holds a user: Vega with a chart, Sphinx's search scripts and index on
# the search page, the copy buttons with code, and so on.
SHOWS_HANGUL = (
    f"() => {HANGUL}.test(document.title + document.body.textContent)"
    " || document.querySelector('#search-results') !== null"
)
# Hangul in the page's own words, not only in text marked as Korean (the language switch).
SHOWS_HANGUL_TEXT = (
    """() => {
    const HANGUL = """
    + HANGUL
    + """;
    const body = document.body.cloneNode(true);
    body.querySelectorAll('[lang|="ko"]').forEach((marked) => marked.remove());
    return HANGUL.test(document.title + body.textContent)
        || document.querySelector('#search-results') !== null;
}"""
)
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
    "_static/pe-scroll-boxes.js": "div.highlight, article table",
    "_static/pe-tooltips.js": "body",
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
    "_static/hangul-text.css": SHOWS_HANGUL_TEXT,
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


@pytest.mark.korean_browser
def test_no_request_failed_over_the_session() -> None:
    """Requests the browser makes on its own (favicon) get answers too; runs after the others."""
    assert not NOT_FOUND, f"paths the server could not serve: {sorted(set(NOT_FOUND))}"
