"""Print the single-page HTML book (``jupyter-book build --builder singlehtml``) to a PDF.

Usage: ``python tools/print_pdf.py SINGLEHTML_DIR OUTPUT.pdf [--edition NAME]``

The page is served from a local HTTP server and opened in Debian's Chromium through Playwright,
with every request to another host blocked, so the PDF is made offline from the book's own
``_static`` (MathJax, the Vega bundle, the Korean web font). Before printing it waits for what is
drawn after the page loads: the math (MathJax's start-up promise), the explorable figures (each
``div.pe-chart`` gets ``data-pe-chart-state`` from ``_static/pe-charts.js``) and the web fonts.
It then prepares the page for paper, with ``_static/print.css`` and a few DOM changes:

- links into the single page (``book/intro.html#target``) become ``#target``, so that Chromium
  writes them as links inside the PDF, and an image's link to its own file is removed;
- a title page with the book's title, author and edition, and the linked table of contents;
- each explorable figure gets a line naming the settings it is printed at.

Chromium writes the PDF's outline (bookmarks) from the headings, and page numbers in the footer.
Anything that would give a wrong or empty PDF fails with a message and exit status 1: the
single-page build's ``index.html`` is only a redirect, so the page it names is printed, and a page
without chapters is refused.
"""

from __future__ import annotations

import argparse
import functools
import html
import http.server
import os
import re
import shutil
import sys
import threading
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
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
# The page must load, and what is drawn after it loads be drawn, within this time (ms).
DRAW_TIMEOUT_MS = 180_000
# The copy of the single page at the site's root, where its relative links and assets resolve.
PRINTED_PAGE = "print.html"

FOOTER = (
    '<div style="width:100%; font-size:8pt; font-family:sans-serif; color:#555;'
    ' padding:0 18mm; display:flex; justify-content:space-between;">'
    '<span>{title}</span><span><span class="pageNumber"></span> / '
    '<span class="totalPages"></span></span></div>'
)

# Runs in the page before printing; returns what the caller checks.
PREPARE = r"""([pageName, edition]) => {
    // Links into the single page become links inside the document.
    for (const a of document.querySelectorAll('a[href]')) {
        const url = new URL(a.href, document.baseURI);
        if (url.origin === location.origin && url.pathname.endsWith('/' + pageName) && url.hash) {
            a.setAttribute('href', url.hash);
        } else if (url.origin === location.origin && url.pathname.includes('/_images/')
                   && a.querySelector('img')) {
            // An image linked to its own file (Sphinx does so for scaled images): on paper the
            // image is all there is, and the link would name the print server.
            a.removeAttribute('href');
        }
    }
    // Solutions printed open.
    document.querySelectorAll('details').forEach(d => { d.open = true; });
    document.querySelectorAll('.toggle-hidden').forEach(e => e.classList.remove('toggle-hidden'));
    // Each explorable figure: the settings it is printed at.
    let notes = 0;
    for (const figure of document.querySelectorAll('div.pe-chart')) {
        const spec = JSON.parse(figure.nextElementSibling.textContent);
        const settings = (spec.params || []).filter(p => p.bind && p.bind.input)
            .map(p => `${(p.bind.name || p.name).trim()} = ${p.value}`);
        if (settings.length === 0) continue;
        const note = document.createElement('p');
        note.className = 'pe-chart-print-note';
        note.textContent = `Printed at its starting settings (${settings.join(', ')}); `
            + 'in the HTML edition its sliders change them and the figure recomputes.';
        figure.after(note);
        notes += 1;
    }
    // The title page: the theme's print-only block (title and contents) gets the edition.
    const block = document.getElementById('jb-print-docs-body');
    if (block) {
        const line = document.createElement('p');
        line.className = 'pe-print-edition';
        line.textContent = edition;
        block.querySelector('h1').after(line);
    }
    const text = (document.querySelector('main article') || document.body).innerText;
    return {
        titlePage: Boolean(block),
        chapters: document.querySelectorAll('span[id^="document-"]').length,
        textLength: text.length,
        notes,
    };
}"""

WAIT_FOR_DRAWING = r"""async () => {
    if (document.querySelector('div.math, span.math')) {
        while (!(window.MathJax && MathJax.startup && MathJax.startup.promise)) {
            await new Promise(resolve => setTimeout(resolve, 50));
        }
        await MathJax.startup.promise;
    }
    const figures = Array.from(document.querySelectorAll('div.pe-chart'));
    while (!figures.every(f => f.dataset.peChartState)) {
        await new Promise(resolve => setTimeout(resolve, 50));
    }
    await document.fonts.ready;
    return figures.filter(f => f.dataset.peChartState !== 'drawn').map(f => f.dataset.peChart);
}"""


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (stdlib signature)
        pass


def fail(message: str) -> None:
    print(f"print_pdf: {message}", file=sys.stderr)
    raise SystemExit(1)


def single_page(site: Path) -> Path:
    """The page the single-page build's ``index.html`` redirects to."""
    index = site / "index.html"
    if not index.is_file():
        fail(f"no {index}: build the single-page HTML first (--builder singlehtml)")
    text = index.read_text(encoding="utf-8")
    redirect = re.search(r'http-equiv="Refresh" content="0; url=([^"]+)"', text)
    page = site / html.unescape(redirect[1]) if redirect else index
    if not page.is_file():
        fail(f"{index} redirects to {page}, which does not exist")
    return page


def find_chromium() -> str:
    path = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not os.access(path, os.X_OK):
        fail("no Chromium browser found (apt-get install chromium, or set $CHROMIUM)")
    return path


def print_pdf(site: Path, output: Path, edition: str) -> None:
    from playwright.sync_api import sync_playwright

    page_file = single_page(site)
    # Served from the site's root: the single page's links and assets are relative to it.
    shutil.copyfile(page_file, site / PRINTED_PAGE)
    page_name = page_file.relative_to(site).as_posix()
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    title = html.escape(config["title"])

    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base_url = f"http://127.0.0.1:{server.server_address[1]}/"
    problems: list[str] = []

    def route(route) -> None:
        url = route.request.url
        if url.startswith(base_url) or url.startswith(("data:", "blob:", "about:")):
            route.continue_()
        else:
            problems.append(f"request leaving localhost (blocked): {url}")
            route.abort("blockedbyclient")

    def on_response(response) -> None:
        # The single-page builder writes no search index, which the theme's search box asks for.
        missing_search_index = response.url == base_url + "searchindex.js"
        if (
            response.url.startswith(base_url)
            and response.status >= 400
            and not missing_search_index
        ):
            problems.append(f"HTTP {response.status}: {response.url}")

    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=find_chromium(), args=CHROMIUM_FLAGS
            )
            context = browser.new_context()
            context.route("**/*", route)
            page = context.new_page()
            page.on("pageerror", lambda error: problems.append(f"uncaught error: {error}"))
            page.on("response", on_response)
            page.set_default_timeout(DRAW_TIMEOUT_MS)
            page.set_default_navigation_timeout(DRAW_TIMEOUT_MS)
            page.goto(base_url + PRINTED_PAGE, wait_until="load")
            failed = page.evaluate(WAIT_FOR_DRAWING)
            if failed:
                problems.append(f"figures not drawn: {failed}")
            page.add_style_tag(url=base_url + "_static/print.css")
            found = page.evaluate(PREPARE, [page_name, edition])
            page.evaluate("document.fonts.ready")
            if not found["titlePage"]:
                problems.append("no title page: the theme's print block #jb-print-docs-body")
            if found["chapters"] == 0 or found["textLength"] < 1000:
                problems.append(f"the page to print is (nearly) empty: {found}")
            if problems:
                fail("\n  ".join(["cannot print the book:", *problems]))
            output.parent.mkdir(parents=True, exist_ok=True)
            page.pdf(
                path=output,
                format="A4",
                margin={"top": "16mm", "bottom": "18mm", "left": "16mm", "right": "16mm"},
                print_background=True,
                display_header_footer=True,
                header_template="<span></span>",
                footer_template=FOOTER.format(title=title),
                outline=True,
                tagged=True,
            )
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
    if not output.is_file() or output.stat().st_size < 10_000:
        fail(f"{output} was not written, or is (nearly) empty")
    print(
        f"print_pdf: wrote {output} ({found['chapters']} chapters, {found['notes']} figure notes)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", type=Path, help="the single-page build's folder")
    parser.add_argument("output", type=Path, help="the PDF to write")
    parser.add_argument("--edition", default="The complete edition, with solutions")
    args = parser.parse_args()
    print_pdf(args.site.resolve(), args.output, args.edition)


if __name__ == "__main__":
    main()
