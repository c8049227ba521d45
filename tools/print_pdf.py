"""Print the HTML book (``make book``'s ``_build/html``, or the student edition's) to one PDF.

Usage: ``python tools/print_pdf.py SOURCE_DIR SITE_DIR OUTPUT.pdf [--edition NAME]``

SOURCE_DIR holds the book's ``_config.yml`` (title, author) and ``_toc.yml`` (the documents, in
reading order); SITE_DIR is its HTML build. The whole book is put together in one browser page and
printed once by Chromium, tagged and with its outline (Playwright's ``page.pdf(tagged=True,
outline=True)``), so the PDF keeps the page's structure for screen readers (what is read from the
build before printing is ``tools/book_pages.py``; what is appended to it after is
``tools/pdf_assembly.py``):

- the site is served from a local HTTP server and its pages opened in Debian's Chromium through
  Playwright, with every request to another host blocked, so the PDF is made offline from the
  book's own ``_static`` (KaTeX's stylesheet and fonts, the Vega bundle, the Korean web font);
- each document is opened in a browser tab and everything the page draws after it loads is
  drawn: the formulas are typeset when the book is built (KaTeX's HTML, printed as text), so there
  is nothing to wait for but a check that each one is there; a reader's page draws each
  explorable figure only as it nears the screen, so the printer asks for them all, every figure
  drawn
  (``peCharts.drawAll()``, ``_static/pe-charts.js``; each ``div.pe-chart`` gets
  ``data-pe-chart-state``), then waits for the web fonts. Then it is prepared
  for paper: solutions open, each explorable figure with a line naming the settings it is printed
  at, every id made unique in the book (the document's prefix before it), links into the book made
  links to those ids and links to pages that are not printed reduced to their text;
- the first document's page becomes the book: its article holds the front matter (a title page,
  then the contents, every chapter and section with the page it starts on and a link to it) and
  every document's article in turn, each starting a page; it gets every stylesheet and style the
  documents had (KaTeX's, vega-embed's, the Korean web font's) and ``print.css``;
- it is printed twice: the first print tells on which page each heading lands (the named
  destination Chromium writes for each heading the contents link to) and how many pages the
  front matter takes; the second prints the contents with those numbers and the footers (the
  book's title, the page number: roman numerals in the front matter, 1, 2, ... from the first
  chapter), and must put every heading on the same page;
- an update appended to the printed bytes then replaces Chromium's outline (every heading of
  every level) with one entry per chapter and one per section under it, and adds page labels
  that match the printed numbers.

Anything that would give a wrong or empty PDF fails with a message and exit status 1: a document
missing from the site, a page without a first heading or (nearly) without text, a formula not
typeset, a figure not drawn, a request that leaves the machine, a link to a place the book does not have.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import html
import http.server
import os
import shutil
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import yaml
from book_pages import Document, read_documents, toc_documents
from chromium_flags import CHROMIUM_FLAGS
from pdf_assembly import OutlineEntry, destinations, finish

# A page must load, and what is drawn after it loads be drawn, within this time (s).
DRAW_TIMEOUT_S = 180
# Loads of a page whose drawing does not finish in time, before the printer gives up.
DRAW_TRIES = 2

# One print of the whole book must finish within this time (s).
PRINT_TIMEOUT_S = 900

T = TypeVar("T")
# Browser tabs that load and prepare the documents side by side.
TABS = 3
# The id a heading gets (after its document's prefix) for the contents and the outline: where
# its section starts can be the page before it (a heading is kept with the text after it).
HEADING_ID = "pe-print-heading-"
# Prints until every heading lands where the contents say (the second print normally agrees).
PRINTS = 3


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (stdlib signature)
        pass


async def first_in_time(
    attempt: Callable[[], Awaitable[T]], seconds: float, tries: int, retrying: Callable[[], None]
) -> T:
    """The result of the first of up to ``tries`` calls of ``attempt`` that finishes within
    ``seconds`` (each late call cancelled); ``retrying()`` is called before each call after the
    first. Raises ``asyncio.TimeoutError`` when none finishes in time."""
    if tries < 1:
        raise ValueError(f"tries must be at least 1, got {tries}")
    for _ in range(tries - 1):
        try:
            return await asyncio.wait_for(attempt(), seconds)
        except asyncio.TimeoutError:
            retrying()
    return await asyncio.wait_for(attempt(), seconds)


async def in_time(step: Awaitable[T], seconds: float, what: str) -> T:
    """``step``'s result, or a failure naming ``what`` when it takes more than ``seconds``."""
    try:
        return await asyncio.wait_for(step, seconds)
    except asyncio.TimeoutError:
        fail(f"{what} did not finish in {seconds:.0f} s")


def fail(message: str) -> NoReturn:
    print(f"print_pdf: {message}", file=sys.stderr)
    raise SystemExit(1)


def find_chromium() -> str:
    path = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not os.access(path, os.X_OK):
        fail("no Chromium browser found (apt-get install chromium, or set $CHROMIUM)")
    return path


def prefix(index: int) -> str:
    """What goes before every id of the ``index``-th document in the one printed page."""
    return f"d{index}-"


# Runs in each document's page once it is drawn; returns its article prepared for the book.
PREPARE = r"""([printed, own, headings, headingId]) => {
    const article = document.querySelector('main article');
    // Links: into the book (to the id the target has in the one printed page), or to a page that
    // is not printed (the link goes, its text stays); other hosts' links stay as they are.
    for (const a of article.querySelectorAll('a[href]')) {
        const url = new URL(a.href, document.baseURI);
        if (url.origin !== location.origin) continue;
        const target = printed[url.pathname.replace(/^\//, '')];
        if (target) {
            const id = url.hash ? decodeURIComponent(url.hash.slice(1)) : target[1];
            a.setAttribute('href', '#' + target[0] + id);
        } else {
            a.removeAttribute('href');
        }
    }
    for (const id of headings) {
        const heading = document.getElementById(id)?.querySelector(':scope > h1, :scope > h2');
        if (heading) heading.id = headingId + id;
    }
    // Every id and every reference to one made unique in the book (Vega's SVG clip paths too).
    const references = ['for', 'aria-labelledby', 'aria-describedby', 'aria-controls', 'aria-owns'];
    for (const element of article.querySelectorAll('*')) {
        if (element.id) element.id = own + element.id;
        for (const name of references) {
            const value = element.getAttribute(name);
            if (value) element.setAttribute(name, value.split(/\s+/).map(v => own + v).join(' '));
        }
        for (const attribute of Array.from(element.attributes)) {
            if (attribute.value.includes('url(#')) {
                element.setAttribute(attribute.name, attribute.value.replace(/url\(#/g, 'url(#' + own));
            }
        }
    }
    // Images keep their address when the article moves to another page.
    for (const img of article.querySelectorAll('img[src]')) img.setAttribute('src', img.src);
    // Solutions printed open.
    article.querySelectorAll('details').forEach(d => { d.open = true; });
    article.querySelectorAll('.toggle-hidden').forEach(e => e.classList.remove('toggle-hidden'));
    // Each explorable figure: the settings it is printed at.
    let notes = 0;
    for (const figure of article.querySelectorAll('div.pe-chart')) {
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
    return {
        html: article.innerHTML,
        textLength: article.innerText.length,
        notes,
        styles: Array.from(document.querySelectorAll('head style'), s => s.textContent),
        sheets: Array.from(document.querySelectorAll('link[rel="stylesheet"]'), l => l.href),
    };
}"""

WAIT_FOR_DRAWING = r"""async () => {
    const problems = [];
    const math = document.querySelectorAll('div.math, span.math').length;
    if (math) {
        const typeset = document.querySelectorAll(
            'div.math .katex-html, span.math .katex-html').length;
        if (typeset < math) problems.push(`${typeset} of ${math} formulas typeset`);
        const errors = document.querySelectorAll('.pe-math-error, .katex-error').length;
        if (errors) problems.push(`${errors} formulas KaTeX could not typeset`);
    }
    const figures = Array.from(document.querySelectorAll('div.pe-chart'));
    if (figures.length) {
        if (window.peCharts) {
            await peCharts.drawAll();
        } else {
            problems.push(`${figures.length} figures, but no _static/pe-charts.js to draw them`);
        }
        const failed = figures.filter(f => f.dataset.peChartState !== 'drawn');
        if (failed.length) {
            problems.push('figures not drawn: ' + failed.map(f => f.dataset.peChart).join(', '));
        }
    }
    await document.fonts.ready;
    return problems;
}"""

# The first document's page becomes the book: the front matter and every document's article.
ASSEMBLE = r"""async ([front, articles, styles, sheets]) => {
    document.getElementById('jb-print-docs-body')?.remove();
    const loads = [];
    const linked = new Set(Array.from(document.querySelectorAll('link[rel="stylesheet"]'), l => l.href));
    for (const href of sheets) {
        if (linked.has(href)) continue;
        linked.add(href);
        const link = document.createElement('link');
        link.rel = 'stylesheet';
        link.href = href;
        loads.push(new Promise((resolve, reject) => {
            link.onload = resolve;
            link.onerror = () => reject(new Error('stylesheet not loaded: ' + href));
        }));
        document.head.append(link);
    }
    const present = new Set(Array.from(document.querySelectorAll('head style'), s => s.textContent));
    for (const text of styles) {
        if (present.has(text)) continue;
        present.add(text);
        const style = document.createElement('style');
        style.textContent = text;
        document.head.append(style);
    }
    const article = document.querySelector('main article');
    article.innerHTML = front
        + articles.map(a => `<div class="pe-print-document">${a}</div>`).join('');
    await Promise.all(loads);
    // The pages load their figures lazily, as they near the screen; a printed book loads them all.
    const images = Array.from(article.querySelectorAll('img'));
    for (const img of images) img.loading = 'eager';
    await Promise.all(images.map(img => img.decode().catch(() => {
        throw new Error('image not loaded: ' + img.src);
    })));
    await document.fonts.ready;
    const nowhere = Array.from(article.querySelectorAll('a[href^="#"]'),
        a => decodeURIComponent(a.getAttribute('href').slice(1)))
        .filter(id => id && !document.getElementById(id));
    return {nowhere: Array.from(new Set(nowhere)), textLength: article.innerText.length};
}"""

# The contents' page numbers, written in once the first print has told them.
NUMBER_CONTENTS = r"""(numbers) => {
    for (const span of document.querySelectorAll('.pe-contents-page')) {
        span.textContent = numbers[span.dataset.heading];
    }
}"""

# Each document starts a page; the front matter is the named page `front`.
LAYOUT_STYLE = """@media print {
  .pe-print-document { break-before: page; }
  .pe-front { page: front; }
}
"""


def css_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def roman(number: int) -> str:
    """``number`` (1 or more) in lower-case roman numerals."""
    if not isinstance(number, int) or number < 1:
        raise ValueError(f"number={number!r}: roman numerals are for whole numbers from 1")
    digits = [(1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"), (90, "xc")]
    digits += [(50, "l"), (40, "xl"), (10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i")]
    text = ""
    for value, letters in digits:
        count, number = divmod(number, value)
        text += letters * count
    return text


def footer_style(title: str, front_pages: int) -> str:
    """The page margin boxes' text (print.css styles them): the book's title and the page number,
    counted from the first page after the ``front_pages`` of the front matter (those are numbered
    i, ii, ... and the title page has no footer)."""
    if not isinstance(front_pages, int) or front_pages < 1:
        raise ValueError(f"front_pages={front_pages!r}: the front matter has at least one page")
    # Chromium counts pages from the document's first; the count starts at -front_pages so that
    # the first chapter's page is 1, and the front matter's numbers (1 - front_pages .. 0) are
    # drawn by a counter style of fixed symbols: i, ii, ...
    symbols = " ".join(css_string(roman(n)) for n in range(1, front_pages + 1))
    return (
        f"@counter-style pe-front {{ system: fixed {1 - front_pages}; symbols: {symbols}; }}\n"
        f"html {{ counter-reset: page {-front_pages}; }}\n"
        f"@page {{ @bottom-left {{ content: {css_string(title)}; }}"
        " @bottom-right { content: counter(page); } }\n"
        "@page front { @bottom-right { content: counter(page, pe-front); } }\n"
        "@page front:first { @bottom-left { content: none; } @bottom-right { content: none; } }\n"
    )


def front_matter(title: str, edition: str, author: str, documents: list[Document]) -> str:
    """The title page and the contents (chapters and sections, each with a link to its heading
    and a place for the page it starts on)."""
    rows = []
    for index, document in enumerate(documents):
        for heading in document.headings:
            target = prefix(index) + HEADING_ID + heading.anchor
            rows.append(
                f'<li class="pe-contents-level-{heading.level}">'
                f'<a href="#{html.escape(target)}">'
                f'<span class="pe-contents-title">{html.escape(heading.text)}</span>'
                f'<span class="pe-contents-page" data-heading="{html.escape(target)}">000</span>'
                "</a></li>"
            )
    return (
        '<div class="pe-front"><section class="pe-title-page">'
        f'<p class="pe-print-title">{html.escape(title)}</p>'
        f'<p class="pe-print-edition">{html.escape(edition)}</p>'
        f'<p class="pe-print-author">{html.escape(author)}</p></section>'
        '<nav class="pe-contents"><p class="pe-contents-heading">Contents</p>'
        f"<ol>{''.join(rows)}</ol></nav></div>"
    )


def outline_entries(documents: list[Document]) -> list[OutlineEntry]:
    """One entry per document's title, one per section: each names its heading's id."""
    return [
        OutlineEntry(heading.level, heading.text, prefix(index) + HEADING_ID + heading.anchor)
        for index, document in enumerate(documents)
        for heading in document.headings
    ]


async def print_book_pdf(
    site: Path, documents: list[Document], title: str, edition: str, author: str
) -> tuple[bytes, int, int]:
    """The book printed as one tagged PDF; the pages of its front matter; the figure notes."""
    from playwright.async_api import async_playwright

    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base_url = f"http://127.0.0.1:{server.server_address[1]}/"
    # Each printed page's path -> (its documents' id prefix, the id of its title's section).
    printed = {
        document.url_path: [prefix(index), document.headings[0].anchor]
        for index, document in enumerate(documents)
    }
    problems: list[str] = []

    def check() -> None:
        if problems:
            fail("\n  ".join(["cannot print the book:", *problems]))

    async def route(route: Any) -> None:
        url = route.request.url
        if url.startswith(base_url) or url.startswith(("data:", "blob:", "about:")):
            await route.continue_()
        else:
            problems.append(f"request leaving localhost (blocked): {url}")
            await route.abort("blockedbyclient")

    def on_response(response: Any) -> None:
        if response.url.startswith(base_url) and response.status >= 400:
            problems.append(f"HTTP {response.status}: {response.url}")

    async def new_tab(context: Any) -> Any:
        page = await context.new_page()
        page.on("pageerror", lambda error: problems.append(f"{page.url}: uncaught error: {error}"))
        page.on("response", on_response)
        page.set_default_timeout(DRAW_TIMEOUT_S * 1000)
        page.set_default_navigation_timeout(DRAW_TIMEOUT_S * 1000)
        return page

    async def opened(page: Any, path: str) -> None:
        async def load_and_draw() -> list[str]:
            await page.goto(base_url + path, wait_until="load")
            drawn: list[str] = await page.evaluate(WAIT_FOR_DRAWING)
            return drawn

        def retrying() -> None:
            print(
                f"print_pdf: {path}: not drawn in {DRAW_TIMEOUT_S} s; loading it again", flush=True
            )

        try:
            drawn = await first_in_time(load_and_draw, DRAW_TIMEOUT_S, DRAW_TRIES, retrying)
        except asyncio.TimeoutError:
            fail(f"{path}: not drawn in {DRAW_TIMEOUT_S} s, {DRAW_TRIES} times")
        problems.extend(f"{path}: {problem}" for problem in drawn)

    prepared: list[dict[str, Any] | None] = [None] * len(documents)

    async def tab(context: Any, first: int) -> None:
        page = await new_tab(context)
        for index in range(first, len(documents), TABS):
            document = documents[index]
            await opened(page, document.url_path)
            anchors = [heading.anchor for heading in document.headings]
            found = await page.evaluate(PREPARE, [printed, prefix(index), anchors, HEADING_ID])
            if found["textLength"] < 200:
                problems.append(f"{document.url_path}: the page to print is (nearly) empty")
            prepared[index] = found
        await page.close()

    try:
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(
                executable_path=find_chromium(), args=CHROMIUM_FLAGS
            )
            context = await browser.new_context()
            await context.route("**/*", route)
            started = time.monotonic()
            await asyncio.gather(*(tab(context, first) for first in range(TABS)))
            check()
            timings = [f"documents drawn and prepared in {time.monotonic() - started:.0f} s"]
            parts = [part for part in prepared if part is not None]
            styles = list(dict.fromkeys(text for part in parts for text in part["styles"]))
            sheets = list(dict.fromkeys(href for part in parts for href in part["sheets"]))
            book = await new_tab(context)
            await opened(book, documents[0].url_path)
            front = front_matter(title, edition, author, documents)
            assembled = await in_time(
                book.evaluate(ASSEMBLE, [front, [part["html"] for part in parts], styles, sheets]),
                DRAW_TIMEOUT_S,
                "putting the book together",
            )
            if assembled["nowhere"]:
                problems.append(f"links to places the book does not have: {assembled['nowhere']}")
            await book.add_style_tag(url=base_url + "_static/print.css")
            await book.add_style_tag(content=LAYOUT_STYLE)
            check()
            timings.append(f"the book put together in {time.monotonic() - started:.0f} s")

            entries = outline_entries(documents)
            first_chapter = entries[0].destination
            pdf, landed = b"", None
            front_pages, prints = 1, 0
            for _ in range(PRINTS):
                prints += 1
                footer = await book.add_style_tag(content=footer_style(title, front_pages))
                await in_time(
                    book.evaluate("document.fonts.ready.then(() => true)"),
                    DRAW_TIMEOUT_S,
                    "loading the book's fonts",
                )
                pdf = await in_time(
                    book.pdf(
                        prefer_css_page_size=True, print_background=True, tagged=True, outline=True
                    ),
                    PRINT_TIMEOUT_S,
                    f"print {prints}",
                )
                check()
                places = destinations(pdf)
                missing = [e.destination for e in entries if e.destination not in places]
                if missing:
                    fail(f"headings not printed: {missing[:20]}")
                pages = {e.destination: places[e.destination][0] for e in entries}
                if pages == landed and pages[first_chapter] == front_pages:
                    break
                landed, front_pages = pages, pages[first_chapter]
                numbers = {key: str(page - front_pages + 1) for key, page in pages.items()}
                await book.evaluate(NUMBER_CONTENTS, numbers)
                await footer.evaluate("style => style.remove()")
            else:
                fail(f"the headings' pages did not settle after {PRINTS} prints")
            timings.append(f"printed {prints} times in {time.monotonic() - started:.0f} s")
            await browser.close()
    finally:
        server.shutdown()
        server.server_close()
    notes = sum(part["notes"] for part in parts)
    print(f"print_pdf: {'; '.join(timings)}")
    return pdf, front_pages, notes


def print_book(source: Path, site: Path, output: Path, edition: str) -> None:
    config = yaml.safe_load((source / "_config.yml").read_text(encoding="utf-8"))
    title, author = config["title"], config.get("author", "")
    try:
        documents = read_documents(site, toc_documents(source))
    except (FileNotFoundError, ValueError) as error:
        fail(str(error))
    pdf, front_pages, notes = asyncio.run(print_book_pdf(site, documents, title, edition, author))
    try:
        finish(pdf, outline_entries(documents), front_pages, title, author, output)
    except ValueError as error:
        fail(str(error))
    if not output.is_file() or output.stat().st_size < 10_000:
        fail(f"{output} was not written, or is (nearly) empty")
    print(
        f"print_pdf: wrote {output} ({len(documents)} documents, front matter of {front_pages} "
        f"pages, {notes} figure notes; tagged, with its outline)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="the folder with _config.yml and _toc.yml")
    parser.add_argument("site", type=Path, help="the HTML build of that book")
    parser.add_argument("output", type=Path, help="the PDF to write")
    parser.add_argument("--edition", default="The complete edition, with solutions")
    args = parser.parse_args()
    print_book(args.source.resolve(), args.site.resolve(), args.output, args.edition)


if __name__ == "__main__":
    main()
