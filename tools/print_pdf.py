"""Print the HTML book (``make book``'s ``_build/html``, or the student edition's) to one PDF.

Usage: ``python tools/print_pdf.py SOURCE_DIR SITE_DIR OUTPUT.pdf [--edition NAME]``

SOURCE_DIR holds the book's ``_config.yml`` (title, author) and ``_toc.yml`` (the documents, in
reading order); SITE_DIR is its HTML build. Every document of the table of contents is printed
on its own from its own page, and the parts are put together with pypdf (what is read from the
build before printing is ``tools/book_pages.py``; the assembly is ``tools/pdf_assembly.py``):

- the site is served from a local HTTP server and its pages opened in Debian's Chromium through
  Playwright, with every request to another host blocked, so the PDF is made offline from the
  book's own ``_static`` (MathJax, the Vega bundle, the Korean web font);
- before a page is printed, what is drawn after it loads has been drawn: the math (MathJax's
  start-up promise), the explorable figures (each ``div.pe-chart`` gets ``data-pe-chart-state``
  from ``_static/pe-charts.js``) and the web fonts. A few browser tabs take the documents in
  turn, so that the next ones load while one prints (a tab keeps its renderer from one document
  to the next); they print in order, each numbered on from where the last one ended (the footer
  is ``_static/print.css``'s page margin boxes; the page counter starts at the pages before it);
- each page is prepared for paper with ``print.css`` and a few DOM changes: solutions open, each
  explorable figure with a line naming the settings it is printed at, links into the page kept as
  links inside the PDF, and links to the book's other pages kept for the assembly below (links to
  pages that are not printed, such as the index, lose their link and keep their text);
- the front matter, printed last: a title page (title, edition, author) and the contents, every
  chapter and section with the page it starts on and a link to it, numbered in roman numerals;
- the assembly: the parts' pages in order, every link between pages made a link to the page and
  place in the PDF, the outline (bookmarks: one entry per chapter, one per section under it, with
  the heading's text), and page labels that match the printed numbers.

Where a heading or a link target lands is read from the part's named destinations: Chromium
writes one for every element a link on the page points to, so each page gets an unseen link
(``display: none``) to each of its headings and to every place another page links to.

Anything that would give a wrong or empty PDF fails with a message and exit status 1: a document
missing from the site, a page without a first heading or (nearly) without text, a figure not
drawn, a request that leaves the machine, a link to a place the PDF does not have.
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
from pathlib import Path

import yaml
from book_pages import Document, read_documents, toc_documents
from pdf_assembly import HEADING_ID, Part, assemble, read_part

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
# A page must load, and what is drawn after it loads be drawn, within this time (ms).
DRAW_TIMEOUT_MS = 180_000
# Browser tabs: each loads and draws its next document while another prints; a tab keeps its
# renderer (and what it has parsed and decoded) from one document to the next.
TABS = 3


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (stdlib signature)
        pass


def fail(message: str) -> None:
    print(f"print_pdf: {message}", file=sys.stderr)
    raise SystemExit(1)


def find_chromium() -> str:
    path = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not os.access(path, os.X_OK):
        fail("no Chromium browser found (apt-get install chromium, or set $CHROMIUM)")
    return path


# Runs in each page before it prints; returns what the caller checks.
PREPARE = r"""([printed, targets, headings, headingId]) => {
    // Links: inside the page, to another printed page (kept whole, for the assembly), or to a
    // page that is not printed (the link goes, its text stays).
    for (const a of document.querySelectorAll('a[href]')) {
        const url = new URL(a.href, document.baseURI);
        if (url.origin !== location.origin) continue;
        const path = url.pathname.replace(/^\//, '');
        if (path === location.pathname.replace(/^\//, '') && url.hash) {
            a.setAttribute('href', url.hash);
        } else if (printed.includes(path)) {
            a.setAttribute('href', url.href);
        } else {
            a.removeAttribute('href');
        }
    }
    // Each heading gets an id of its own: where its section starts can be the page before it
    // (a heading is kept with the text after it), and the contents and outline name the heading.
    for (const id of headings) {
        const heading = document.getElementById(id)?.querySelector(':scope > h1, :scope > h2');
        if (heading) {
            heading.id = headingId + id;
            targets.push(heading.id);
        }
    }
    // An unseen link to every place other pages (and the contents) link to: Chromium writes a
    // named destination for each, which tells the assembly where it landed.
    const anchors = document.createElement('nav');
    anchors.style.display = 'none';
    for (const id of targets) {
        const a = document.createElement('a');
        a.setAttribute('href', '#' + encodeURIComponent(id));
        anchors.append(a);
    }
    document.body.append(anchors);
    // The theme's print-only block (the page's title and contents again): the PDF has its own.
    document.getElementById('jb-print-docs-body')?.remove();
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
    const article = document.querySelector('main article');
    return {textLength: article ? article.innerText.length : 0, notes};
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

# The front matter replaces the shell page's article.
FRONT = r"""(front) => {
    document.getElementById('jb-print-docs-body')?.remove();
    const article = document.querySelector('main article');
    article.innerHTML = front;
    return document.fonts.ready.then(() => article.innerText.length);
}"""


def css_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def footer_style(title: str, pages_before: int, front: bool) -> str:
    """The page margin boxes' text (print.css styles them) and where the page count starts."""
    numbering = "counter(page, lower-roman)" if front else "counter(page)"
    style = (
        f"@page {{ @bottom-left {{ content: {css_string(title)}; }}"
        f" @bottom-right {{ content: {numbering}; }} }}\n"
        f"html {{ counter-reset: page {pages_before}; }}\n"
    )
    if front:  # the title page has no footer
        style += (
            "@page :first { @bottom-left { content: none; } @bottom-right { content: none; } }\n"
        )
    return style


def front_matter(
    title: str, edition: str, author: str, documents: list[Document], page_of: dict[str, int]
) -> str:
    """The title page and the contents (chapters and sections, each with its page)."""
    rows = []
    for document in documents:
        for heading in document.headings:
            href = f"/{document.url_path}#{heading.anchor}"
            rows.append(
                f'<li class="pe-contents-level-{heading.level}"><a href="{html.escape(href)}">'
                f'<span class="pe-contents-title">{html.escape(heading.text)}</span>'
                f'<span class="pe-contents-page">{page_of[f"{document.name}#{heading.anchor}"]}'
                "</span></a></li>"
            )
    return (
        '<section class="pe-title-page">'
        f'<p class="pe-print-title">{html.escape(title)}</p>'
        f'<p class="pe-print-edition">{html.escape(edition)}</p>'
        f'<p class="pe-print-author">{html.escape(author)}</p></section>'
        '<nav class="pe-contents"><p class="pe-contents-heading">Contents</p>'
        f"<ol>{''.join(rows)}</ol></nav>"
    )


async def print_parts(
    site: Path, documents: list[Document], title: str, edition: str, author: str
) -> tuple[list[Part], str, int]:
    """Every document printed (in order, numbered on), then the front matter."""
    from playwright.async_api import async_playwright

    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base_url = f"http://127.0.0.1:{server.server_address[1]}/"
    printed = [document.url_path for document in documents]
    problems: list[str] = []

    async def route(route) -> None:
        url = route.request.url
        if url.startswith(base_url) or url.startswith(("data:", "blob:", "about:")):
            await route.continue_()
        else:
            problems.append(f"request leaving localhost (blocked): {url}")
            await route.abort("blockedbyclient")

    def on_response(response) -> None:
        if response.url.startswith(base_url) and response.status >= 400:
            problems.append(f"HTTP {response.status}: {response.url}")

    async def new_tab(context):
        page = await context.new_page()
        page.on("pageerror", lambda error: problems.append(f"{page.url}: uncaught error: {error}"))
        page.on("response", on_response)
        page.set_default_timeout(DRAW_TIMEOUT_MS)
        page.set_default_navigation_timeout(DRAW_TIMEOUT_MS)
        return page

    async def opened(page, path: str) -> None:
        await page.goto(base_url + path, wait_until="load")
        failed = await page.evaluate(WAIT_FOR_DRAWING)
        if failed:
            problems.append(f"{path}: figures not drawn: {failed}")
        await page.add_style_tag(url=base_url + "_static/print.css")

    async def pdf(page, pages_before: int, front: bool) -> bytes:
        await page.add_style_tag(content=footer_style(title, pages_before, front))
        await page.evaluate("document.fonts.ready.then(() => true)")
        if problems:
            fail("\n  ".join(["cannot print the book:", *problems]))
        return await page.pdf(prefer_css_page_size=True, print_background=True)

    parts: list[Part | None] = [None] * len(documents)
    turns = [asyncio.Event() for _ in documents]
    pages_before = 0
    notes = 0

    async def tab(context, first: int) -> None:
        """Documents first, first + TABS, ...: each loaded and prepared, printed in its turn."""
        nonlocal pages_before, notes
        page = await new_tab(context)
        for index in range(first, len(documents), TABS):
            document = documents[index]
            await opened(page, document.url_path)
            anchors = [heading.anchor for heading in document.headings]
            found = await page.evaluate(
                PREPARE, [printed, sorted(document.targets), anchors, HEADING_ID]
            )
            if found["textLength"] < 200:
                problems.append(f"{document.url_path}: the page to print is (nearly) empty")
            await turns[index].wait()
            part = read_part(document, await pdf(page, pages_before, front=False))
            pages_before += part.pages
            notes += found["notes"]
            parts[index] = part
            if index + 1 < len(documents):
                turns[index + 1].set()
        await page.close()

    try:
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(
                executable_path=find_chromium(), args=CHROMIUM_FLAGS
            )
            context = await browser.new_context()
            await context.route("**/*", route)
            turns[0].set()
            await asyncio.gather(*(tab(context, first) for first in range(TABS)))
            printed_parts = [part for part in parts if part is not None]
            page_of, start = {}, 0
            for document, part in zip(documents, printed_parts, strict=True):
                for heading in document.headings:
                    key = f"{document.name}#{heading.anchor}"
                    if heading.anchor not in part.places:
                        fail(f"{key}: its heading was not printed")
                    page_of[key] = start + part.places[heading.anchor][0] + 1
                start += part.pages
            page = await new_tab(context)
            await opened(page, documents[0].url_path)
            front = front_matter(title, edition, author, documents, page_of)
            await page.evaluate(FRONT, front)
            printed_parts.insert(0, read_part(None, await pdf(page, 0, front=True)))
            await browser.close()
    finally:
        server.shutdown()
        server.server_close()
    return printed_parts, base_url, notes


def print_book(source: Path, site: Path, output: Path, edition: str) -> None:
    config = yaml.safe_load((source / "_config.yml").read_text(encoding="utf-8"))
    title, author = config["title"], config.get("author", "")
    try:
        documents = read_documents(site, toc_documents(source))
    except (FileNotFoundError, ValueError) as error:
        fail(str(error))
    parts, base_url, notes = asyncio.run(print_parts(site, documents, title, edition, author))
    try:
        linked = assemble(parts, base_url, title, author, output)
    except ValueError as error:
        fail(str(error))
    if not output.is_file() or output.stat().st_size < 10_000:
        fail(f"{output} was not written, or is (nearly) empty")
    pages = sum(part.pages for part in parts)
    print(
        f"print_pdf: wrote {output} ({len(documents)} documents, {pages} pages, "
        f"{linked} links between pages, {notes} figure notes)"
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
