"""The PDF editions (``make pdf``: ``_build/pdf/book.pdf``; ``make student``:
``_build/student/pdf/book.pdf``), read back with poppler's ``pdftotext``/``pdffonts`` and pypdf.

Titles, exercise titles and Hangul are taken from the sources (``tests/book_sources.py``), so the
checks follow the chapters as they change. Run with ``make editions-test``, which builds both.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from book_sources import (
    GENERATED,
    ROOT,
    hangul_runs,
    normalise,
    pdf_pages_text,
    pdf_text,
    titles,
    toc_documents,
)

pypdf = pytest.importorskip("pypdf")


FULL = ROOT / "_build" / "pdf" / "book.pdf"
STUDENT = ROOT / "_build" / "student" / "pdf" / "book.pdf"
EDITIONS = {"full": FULL, "student": STUDENT}
# The HTML each PDF is printed from (tools/print_pdf.py prints every page of the contents).
SITE = {"full": ROOT / "_build" / "html", "student": ROOT / "_build" / "student" / "html"}
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
# Pages per document of _toc.yml: about 17 now (A4, 10 pt); a PDF far outside this band has lost
# pages (an empty print) or gained blank ones (a broken page break).
PAGES_PER_DOCUMENT = (6, 35)
# A chart drawn as SVG prints as many vector path operations; a page with a blank one, few.
MIN_PATH_OPERATIONS = 40
# A chapter or section number as the PDF prints it before a title ("2.", "2.6.").
SECTION_NUMBER = re.compile(r"^(?:\d+\.)+ ")


@pytest.fixture(scope="module", params=sorted(EDITIONS))
def edition(request) -> tuple[str, Path]:  # every test that reads a PDF uses it
    pdf = EDITIONS[request.param]
    for tool in ("pdftotext", "pdffonts"):
        if shutil.which(tool) is None:
            (pytest.fail if IN_CI else pytest.skip)(
                f"{tool} missing: apt-get install poppler-utils"
            )
    if not pdf.is_file():
        (pytest.fail if IN_CI else pytest.skip)(f"no {pdf}: run `make pdf student`")
    return request.param, pdf


@pytest.mark.editions
def test_tagged_for_screen_readers(edition) -> None:
    """Printed from one page, the PDF keeps Chromium's structure tags (pdfinfo: "Tagged: yes"),
    and its structure tree holds the book's headings."""
    name, pdf = edition
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True)
    assert re.search(r"^Tagged:\s+yes$", info.stdout, re.M), f"{name}: untagged\n{info.stdout}"
    root = pypdf.PdfReader(pdf).trailer["/Root"]
    roles = set()

    def walk(node, depth: int = 0) -> None:
        node = node.get_object()
        if isinstance(node, dict):
            if "/S" in node:
                roles.add(str(node["/S"]))
            if depth < 12 and "/K" in node:
                walk(node["/K"], depth + 1)
        elif isinstance(node, list):
            for child in node:
                walk(child, depth)

    walk(root["/StructTreeRoot"])
    assert {"/H1", "/H2", "/P"} <= roles, f"{name}: structure roles {sorted(roles)}"


def _printed_titles(name: str) -> list:
    found = [title for doc in toc_documents() if doc not in GENERATED for title in titles(doc)]
    return found


@pytest.mark.editions
def test_page_count_in_range(edition) -> None:
    name, pdf = edition
    pages = len(pypdf.PdfReader(pdf).pages)
    low, high = (n * len(toc_documents()) for n in PAGES_PER_DOCUMENT)
    assert low <= pages <= high, f"{name}: {pages} pages, expected {low}..{high}"
    if name == "student":
        assert pages < len(pypdf.PdfReader(FULL).pages), "the student edition is not shorter"


@pytest.mark.editions
def test_every_title_and_exercise_title_printed_in_order(edition) -> None:
    name, pdf = edition
    # The pages after the front matter (whose contents list the titles too), without the footer
    # (the book's title), compared without spaces: a change of font (code in a title) can add or
    # drop one.
    reader = pypdf.PdfReader(pdf)
    front = reader.page_labels.index("1")
    footer = re.compile(rf"{re.escape(normalise(reader.metadata.title))} \d+$")
    pages = [footer.sub("", page) for page in pdf_pages_text(pdf)[front:]]
    text = re.sub(r"\s", "", "".join(pages))
    position, missing = 0, []
    for title in _printed_titles(name):
        for fragment in title.fragments():
            squashed = re.sub(r"\s", "", fragment)
            found = text.find(squashed, position)
            if found < 0:
                missing.append(f"{title.doc}: {fragment!r} (level {title.level})")
            else:
                position = found + len(squashed)
    assert not missing, f"{name}: missing or out of order:\n" + "\n".join(missing)


@pytest.mark.editions
def test_korean_font_embedded_and_hangul_extractable(edition) -> None:
    name, pdf = edition
    fonts = subprocess.run(["pdffonts", str(pdf)], capture_output=True, text=True, check=True)
    korean = [line for line in fonts.stdout.splitlines() if "NotoSansKR" in line]
    assert korean, f"{name}: Noto Sans KR not in the PDF:\n{fonts.stdout}"
    for line in korean:  # name with a subset tag (ABCDEF+), embedded, subset
        assert re.match(r"[A-Z]{6}\+", line) and re.search(r"\byes +yes\b", line), line
    text = pdf_text(pdf)
    runs = hangul_runs("book/intro") + hangul_runs(toc_documents()[1])
    assert runs, "no Hangul in the intro and chapter 1: the check would be empty"
    missing = [run for run in dict.fromkeys(runs) if run not in text]
    assert not missing, f"{name}: Hangul not extractable as text: {missing}"


def _chart_titles(site: Path) -> list[str]:
    """The title of every explorable figure on the pages the PDF was printed from."""
    specs = []
    for doc in toc_documents():
        page = (site / f"{doc}.html").read_text(encoding="utf-8")
        specs += re.findall(
            r'<script type="application/json" class="pe-chart-spec">(.*?)</script>', page, re.S
        )
    assert specs, f"no explorable figure in {site}"
    found = []
    for spec in map(json.loads, specs):
        title = spec.get("title", "")
        found.append(normalise(title if isinstance(title, str) else title.get("text", "")))
    return found


@pytest.mark.editions
def test_every_chart_printed_as_vector_paths(edition) -> None:
    name, pdf = edition
    reader = pypdf.PdfReader(pdf)
    pages = pdf_pages_text(pdf)
    blank = []
    for title in _chart_titles(SITE[name]):
        assert title, "an explorable figure without a title: it cannot be found in the PDF"
        on = [i for i, page in enumerate(pages) if title in page]
        if not on:
            blank.append(f"{title!r}: not printed (its title is drawn with the chart)")
            continue
        data = reader.pages[on[0]].get_contents().get_data().decode("latin-1")
        paths = len(re.findall(r"(?m)(?:^|\s)(?:re|l|c|m)\s*$", data)) + data.count(" re\n")
        if paths < MIN_PATH_OPERATIONS:
            blank.append(f"{title!r}: page {on[0] + 1} has {paths} path operations")
    assert not blank, f"{name}: charts not drawn:\n" + "\n".join(blank)


@pytest.mark.editions
def test_no_text_outside_the_page(edition) -> None:
    """Code wraps, tables and equations fit: no word beyond the page box (pdftotext -bbox)."""
    name, pdf = edition
    result = subprocess.run(
        ["pdftotext", "-bbox", str(pdf), "-"], capture_output=True, text=True, check=True
    )
    outside = []
    for number, page in enumerate(re.findall(r"<page (.*?)</page>", result.stdout, re.S), 1):
        width = float(re.search(r'width="([\d.]+)"', page)[1])
        height = float(re.search(r'height="([\d.]+)"', page)[1])
        words = re.findall(
            r'<word xMin="([\d.-]+)" yMin="([\d.-]+)" xMax="([\d.-]+)" yMax="([\d.-]+)">(.*?)</word>',
            page,
        )
        for x0, y0, x1, y1, word in words:
            x0, y0, x1, y1 = map(float, (x0, y0, x1, y1))
            if all("\ue000" <= char <= "\uf8ff" for char in html.unescape(word)):
                continue  # stretched delimiter pieces (private-use glyphs): pdftotext reports no true box
            if not (x0 >= 0 and x1 <= width and y0 >= 0 and y1 <= height):
                outside.append(f"page {number}: {word!r} at x {x0:.0f}..{x1:.0f}")
    assert not outside, f"{name}: text beyond the page box:\n" + "\n".join(outside[:40])


@pytest.mark.editions
def test_internal_links_resolve_to_pages(edition) -> None:
    name, pdf = edition
    reader = pypdf.PdfReader(pdf)
    page_of = {page.indirect_reference.idnum: i for i, page in enumerate(reader.pages)}
    named = reader.named_destinations
    internal, broken = 0, []
    for number, page in enumerate(reader.pages, 1):
        for annotation in page.get("/Annots") or []:
            link = annotation.get_object()
            if link.get("/Subtype") != "/Link":
                continue
            action = link.get("/A")
            action = action.get_object() if action is not None else {}
            uri = action.get("/URI")
            if uri is not None:
                if uri.startswith(("http://127.0.0.1", "http://localhost", "file:")):
                    broken.append(f"page {number}: link to the print server {uri}")
                continue
            dest = link.get("/Dest", action.get("/D"))
            if dest is None:
                continue
            internal += 1
            if isinstance(dest, str | bytes) or hasattr(dest, "original_bytes"):
                target = named.get(str(dest))
                ok = target is not None and target.page is not None
            else:
                ok = dest[0].get_object().indirect_reference.idnum in page_of
            if not ok:
                broken.append(f"page {number}: destination {dest!r} goes nowhere")
    # The contents page alone links to every document of the table of contents.
    assert internal >= len(toc_documents()) - 1, f"{name}: only {internal} internal links"
    assert not broken, f"{name}:\n" + "\n".join(broken[:40])


def _heading_titles() -> list[list]:
    """Per document of the contents, its chapter title (level 1) and section titles (level 2)."""
    found = [[t for t in titles(doc) if t.level in (1, 2)] for doc in toc_documents()]
    assert all(doc and doc[0].level == 1 for doc in found), "a document without a title"
    return found


def _title_pattern(title) -> re.Pattern:
    """What a title prints as in plain text: its words exact, each piece of math any text."""
    pieces = title.fragments(keep_short=True)
    return re.compile(r"\s*.+?\s*".join(re.escape(piece) for piece in pieces))


def _matches(printed: str, title) -> bool:
    return bool(_title_pattern(title).fullmatch(SECTION_NUMBER.sub("", normalise(printed))))


@pytest.mark.editions
def test_outline_is_every_chapter_and_section_once_with_its_exact_title(edition) -> None:
    """The outline: one entry per document with its title, and under it one entry per section, in
    order, each with the heading's exact text (the section number before it)."""
    name, pdf = edition
    reader = pypdf.PdfReader(pdf)
    outline, problems = reader.outline, []
    tops = [item for item in outline if not isinstance(item, list)]
    expected = _heading_titles()
    assert len(tops) == len(expected), f"{name}: {len(tops)} top entries, {len(expected)} titles"
    for position, (doc_titles, item) in enumerate(zip(expected, tops, strict=True)):
        index = outline.index(item)
        children = outline[index + 1] if index + 1 < len(outline) else []
        children = children if isinstance(children, list) else []
        if any(isinstance(child, list) for child in children):
            problems.append(f"{item.title!r}: entries nested below its sections")
        entries = [item.title] + [child.title for child in children]
        if len(entries) != len(doc_titles):
            problems.append(f"document {position + 1}: entries {entries}, titles {doc_titles}")
            continue
        for entry, title in zip(entries, doc_titles, strict=True):
            if not _matches(entry, title):
                problems.append(f"{title.doc}: outline {entry!r} for the heading {title.text!r}")
    assert not problems, f"{name}:\n" + "\n".join(problems)


# The cheat sheet is read on paper: the two sides of one sheet.
CHEAT_SHEET = "book/cheat_sheet"
CHEAT_SHEET_PAGES = 2


@pytest.mark.editions
def test_cheat_sheet_prints_on_two_pages(edition) -> None:
    """The cheat sheet starts a page (as every document does) and the next document starts at most
    two pages later: its outline entry's page and the next one's, one entry per document."""
    name, pdf = edition
    reader = pypdf.PdfReader(pdf)
    tops = [item for item in reader.outline if not isinstance(item, list)]
    documents = toc_documents()
    assert len(tops) == len(documents), f"{name}: {len(tops)} top entries, {len(documents)} docs"
    index = documents.index(CHEAT_SHEET)
    first = reader.get_destination_page_number(tops[index])
    following = (
        reader.get_destination_page_number(tops[index + 1])
        if index + 1 < len(tops)
        else len(reader.pages)
    )
    pages = following - first
    assert 1 <= pages <= CHEAT_SHEET_PAGES, (
        f"{name}: the cheat sheet ({tops[index].title!r}) takes {pages} pages, from page "
        f"{first + 1}; at most {CHEAT_SHEET_PAGES}, the two sides of one sheet"
    )


def _contents(pdf: Path, front: int) -> list[tuple[str, int]]:
    """The contents' entries (title, page number) as printed on the first ``front`` pages: a line
    that ends in a number ends an entry (the lines before it without one are its beginning)."""
    result = subprocess.run(
        ["pdftotext", "-layout", "-enc", "UTF-8", "-l", str(front), str(pdf), "-"],
        capture_output=True,
        text=True,
        check=True,
    )
    lines = result.stdout.replace("\f", "\n").split("\n")
    start = next(i for i, line in enumerate(lines) if line.strip() == "Contents")
    entries, beginning = [], ""
    for line in lines[start + 1 :]:
        if re.search(r"\s{3}[ivxlc]+$", line.strip()) or not line.strip():
            continue  # the footer (the title, the page in roman numerals), or a gap
        numbered = re.fullmatch(r"\s*(.*?\S)\s+(\d+)\s*", line)
        if numbered:
            entries.append((normalise(f"{beginning} {numbered[1]}"), int(numbered[2])))
            beginning = ""
        else:
            beginning = normalise(f"{beginning} {line}")
    return entries


@pytest.mark.editions
def test_contents_give_the_page_each_chapter_and_section_starts_on(edition) -> None:
    """Every chapter and section is in the contents, in order, with the number of the page (as its
    footer prints it, and as the PDF labels it) on which its heading is printed."""
    name, pdf = edition
    reader = pypdf.PdfReader(pdf)
    labels = reader.page_labels
    front = next(i for i, label in enumerate(labels) if label == "1")
    assert front > 0 and all(not label.isdigit() for label in labels[:front]), labels[: front + 1]
    assert labels[front:] == [str(n) for n in range(1, len(labels) - front + 1)]
    pages = pdf_pages_text(pdf)
    entries = _contents(pdf, front)
    expected = [title for doc in _heading_titles() for title in doc]
    assert len(entries) == len(expected), f"{name}: {len(entries)} entries: {entries}"
    problems = []
    for (entry, number), title in zip(entries, expected, strict=True):
        if not _matches(entry, title):
            problems.append(f"contents entry {entry!r} for the heading {title.text!r}")
            continue
        page = pages[front + number - 1]
        if not re.search(rf"\b{number}$", page):
            problems.append(f"{entry!r}: page {number}'s footer does not say {number}")
        squashed = re.sub(r"\s", "", page)
        missing = [f for f in title.fragments() if re.sub(r"\s", "", f) not in squashed]
        if missing:
            problems.append(f"{entry!r}: {missing} not on page {number}")
    assert not problems, f"{name}:\n" + "\n".join(problems)


# What `make site` assembles for GitHub Pages (the editions-test stage assembles it too).
PUBLISHED = ROOT / "_build" / "site"
FOOTER_PDF_LINK = re.compile(r'<a [^>]*href="https://[^"]+/([^"/]+\.pdf)"')


@pytest.mark.editions
@pytest.mark.parametrize("edition", ["full", "student"])
def test_the_pdf_a_footer_links_to_is_published(edition: str) -> None:
    """Each edition's pages link, in their footer, to the name under which the published site
    holds that edition's PDF (the full edition's footer from _config.yml, the student
    edition's as tools/student_edition.py rewrites it)."""
    if not PUBLISHED.is_dir():
        pytest.fail(f"no {PUBLISHED}: run `make site` (or `make editions-test`)")
    names = set(FOOTER_PDF_LINK.findall((SITE[edition] / "book" / "intro.html").read_text("utf-8")))
    assert len(names) == 1, f"{edition}: the footer should link one PDF, found {names}"
    published = PUBLISHED / names.pop()
    assert published.is_file(), f"{edition}: the footer links {published.name}, not published"
    assert published.read_bytes() == EDITIONS[edition].read_bytes(), (
        f"{published} is not the {edition} edition's PDF"
    )


@pytest.mark.editions
def test_the_published_site_holds_the_korean_edition_under_ko() -> None:
    """The language switch leads to ko/: the site holds the Korean pages there as files."""
    korean = PUBLISHED / "ko" / "book" / "intro.html"
    assert korean.is_file() and not (PUBLISHED / "ko").is_symlink(), korean
    assert '<html lang="ko"' in korean.read_text("utf-8")
