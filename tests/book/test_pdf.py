"""The PDF editions (``make pdf``: ``_build/pdf/book.pdf``; ``make student``:
``_build/student/pdf/book.pdf``), read back with poppler's ``pdftotext``/``pdffonts`` and pypdf.

Titles, exercise titles and Hangul are taken from the sources (``tests/book_sources.py``), so the
checks follow the chapters as they change. Run with ``make editions-test``, which builds both.
"""

from __future__ import annotations

import html
import importlib.util
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
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
SINGLE_PAGE = {
    "full": ROOT / "_build" / "singlehtml",
    "student": ROOT / "_build" / "student" / "singlehtml",
}
STUDENT_TOOL = ROOT / "tools" / "student_edition.py"
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
# Pages per document of _toc.yml: about 17 now (A4, 10 pt); a PDF far outside this band has lost
# pages (an empty print) or gained blank ones (a broken page break).
PAGES_PER_DOCUMENT = (6, 35)
# A chart drawn as SVG prints as many vector path operations; a page with a blank one, few.
MIN_PATH_OPERATIONS = 40
# How much of a title's beginning its outline entry must match.
OUTLINE_PREFIX = 16


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
    # Compared without spaces: a change of font (code in a title) can add or drop one.
    text = re.sub(r"\s", "", pdf_text(pdf))
    position, missing = 0, []
    for title in _printed_titles(name):
        for fragment in title.fragments():
            found = text.find(re.sub(r"\s", "", fragment), position)
            if found < 0:
                missing.append(f"{title.doc}: {fragment!r} (level {title.level})")
            else:
                position = found + len(fragment)
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
    """The title of every explorable figure on the single page the PDF was printed from."""
    page = (site / "print.html").read_text(encoding="utf-8")
    specs = re.findall(
        r'<script type="application/json" class="pe-chart-spec">(.*?)</script>', page, re.S
    )
    assert specs, f"no explorable figure in {site / 'print.html'}"
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
    for title in _chart_titles(SINGLE_PAGE[name]):
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
                continue  # MathJax's stretched delimiter pieces: pdftotext reports no true box
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


@pytest.mark.editions
def test_outline_has_every_chapter_and_section(edition) -> None:
    name, pdf = edition
    reader = pypdf.PdfReader(pdf)

    def flatten(items) -> list[str]:
        out = []
        for item in items:
            out += flatten(item) if isinstance(item, list) else [normalise(item.title)]
        return out

    outline = re.sub(r"\s", "", "|".join(flatten(reader.outline)))
    missing = [
        fragment
        for title in _printed_titles(name)
        if title.level in (1, 2)
        for fragment in title.fragments()
        # Chromium writes a heading that wraps with its lines run together (and sometimes a
        # piece twice): the entry is found by the title's beginning.
        if re.sub(r"\s", "", fragment)[:OUTLINE_PREFIX] not in outline
    ]
    assert not missing, f"{name}: not in the PDF outline: {missing}"


@pytest.mark.parametrize("pdf_name", ["book.pdf", "book-student.pdf"])
def test_published_pdf_is_the_one_the_html_links_to(pdf_name: str) -> None:
    """The footer of the HTML (the full edition's in _config.yml, the student edition's written by
    tools/student_edition.py) names the file the Pages workflow publishes."""
    spec = importlib.util.spec_from_file_location("student_edition", STUDENT_TOOL)
    student_edition = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(student_edition)
    PDF, STUDENT_PDF = student_edition.PDF, student_edition.STUDENT_PDF
    assert {PDF, STUDENT_PDF} == {"book.pdf", "book-student.pdf"}
    footer = yaml.safe_load((ROOT / "_config.yml").read_text("utf-8"))["html"]["extra_footer"]
    assert re.search(rf'href="https://[^"]+/{re.escape(PDF)}"', footer), footer
    workflow = (ROOT / ".github" / "workflows" / "book.yml").read_text("utf-8")
    assert f"_build/html/{pdf_name}" in workflow
