"""What the book's sources say it contains, read from ``_toc.yml``, the pages and the chapters.

The edition tests (``tests/book/test_pdf.py``, ``tests/book/test_student.py``) compare the built
PDF and student edition with these: titles in reading order, exercise titles, the Hangul of a
page, and distinctive lines of every solution. Nothing here is a hand-written list, so a new
chapter or a changed heading is picked up.
"""

from __future__ import annotations

import functools
import html
import re
import subprocess
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[1]

HEADING = re.compile(r"^(#{1,3}) +(.+?) *$")
EXERCISE = re.compile(r"^(`{3,}|:{3,})\{exercise\} *(.+?) *$")
GATE = re.compile(r"^(`{3,}|:{3,})\{(solution-start|solution-end)\}")
MATH = re.compile(r"\$[^$]+\$")
HANGUL_WORD = r"[A-Za-z]*[\uac00-\ud7a3][\uac00-\ud7a3A-Za-z]*"
HANGUL_RUN = re.compile(rf"{HANGUL_WORD}(?: {HANGUL_WORD})*")
# Documents that are not read as prose (the API pages, generated from docstrings).
GENERATED = {"book/api"} | {f"book/api/{p.stem}" for p in (ROOT / "book" / "api").glob("*.md")}


def toc_documents() -> list[str]:
    """Every document in reading order, as paths without suffix (``book/intro``, ...)."""
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
    return docs


def source_path(doc: str) -> Path:
    for suffix in (".ipynb", ".md"):
        if (ROOT / f"{doc}{suffix}").is_file():
            return ROOT / f"{doc}{suffix}"
    raise FileNotFoundError(doc)


def markdown_of(doc: str) -> list[str]:
    """The markdown text of a document: the page, or each markdown cell of a notebook."""
    path = source_path(doc)
    if path.suffix == ".md":
        return [path.read_text(encoding="utf-8")]
    notebook = nbformat.read(path, as_version=4)
    return [cell.source for cell in notebook.cells if cell.cell_type == "markdown"]


def _outside_fences(text: str) -> list[str]:
    """The lines of markdown that are not inside a code fence (```python ...```)."""
    lines, fence = [], None
    for line in text.splitlines():
        stripped = line.strip()
        if fence is not None:
            if stripped == fence:
                fence = None
            continue
        opening = re.match(r"^(`{3,}|~{3,})(\w*)$", stripped)
        if opening and opening[2]:  # a fenced code block, not a directive
            fence = opening[1]
            continue
        lines.append(line)
    return lines


@dataclass(frozen=True)
class Title:
    doc: str
    level: int  # 1 chapter (or page), 2 section, 3 subsection; 0 an exercise
    text: str  # as written in the source (markdown and math included)

    def fragments(self, keep_short: bool = False) -> list[str]:
        """The plain-text pieces of the title, as they print: math and markup left out. Pieces
        shorter than three characters are left out too, unless ``keep_short``: then there is one
        piece before and after each piece of math, empty ones included."""
        plain = re.sub(r"`([^`]*)`", r"\1", MATH.sub("\0", self.text))
        plain = re.sub(r"\*\*?([^*\s][^*]*?)\*\*?|\{[a-z]+\}", r"\1", plain)
        plain = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", plain)
        pieces = plain.split("\0")
        return [normalise(p) for p in pieces if keep_short or len(p.strip()) >= 3]


def titles(doc: str) -> list[Title]:
    """The document's headings (levels 1-3) and exercise titles, in the order they appear."""
    found = []
    for text in markdown_of(doc):
        for line in _outside_fences(text):
            if heading := HEADING.match(line):
                found.append(Title(doc, len(heading[1]), heading[2]))
            elif exercise := EXERCISE.match(line):
                found.append(Title(doc, 0, exercise[2]))
    return found


def hangul_runs(doc: str) -> list[str]:
    """Every run of Hangul words in the document's prose (with its Latin-letter particles)."""
    runs = []
    for text in markdown_of(doc):
        runs += [normalise(run) for run in HANGUL_RUN.findall(" ".join(_outside_fences(text)))]
    return runs


def chapters() -> list[Path]:
    return sorted((ROOT / "book").glob("[0-9]*.ipynb"))


def solution_lines(chapter: Path, min_length: int = 24) -> list[str]:
    """Lines of every gated solution of ``chapter``: the lines of its code cells and its plain
    prose lines (no markup) at least ``min_length`` characters long. Whether a line is
    distinctive (found nowhere else) is for the caller to decide: see ``text_outside_solutions``."""
    inside: list[str] = []
    in_solution = False
    for cell in nbformat.read(chapter, as_version=4).cells:
        lines, in_solution = _gated_lines(cell, in_solution)
        for line, solution in lines:
            plain = cell.cell_type == "code" or not re.search(r"[`$*{}\[\]_\\|<>]", line)
            if solution and plain and len(normalise(line)) >= min_length:
                inside.append(normalise(line))
    return list(dict.fromkeys(inside))


def _gated_lines(cell: Any, in_solution: bool) -> tuple[list[tuple[str, bool]], bool]:
    """The lines of a notebook cell, each with whether it stands inside a gated solution (the
    gate lines themselves left out), given whether the cell starts inside one; and whether it
    ends inside one."""
    lines: list[tuple[str, bool]] = []
    for line in cell.source.splitlines():
        gate = GATE.match(line) if cell.cell_type == "markdown" else None
        if gate:
            in_solution = gate[2] == "solution-start"
        else:
            lines.append((line, in_solution))
    return lines, in_solution


def text_outside_solutions() -> str:
    """The sources of every document with the gated solutions left out (markdown, code and the
    text outputs of the cells outside them), normalised."""
    parts: list[str] = []
    for doc in toc_documents():
        path = source_path(doc)
        if path.suffix == ".md":
            parts.append(path.read_text(encoding="utf-8"))
            continue
        in_solution = False
        for cell in nbformat.read(path, as_version=4).cells:
            lines, in_solution = _gated_lines(cell, in_solution)
            parts += [line for line, solution in lines if not solution]
            if not in_solution:
                parts += [str(output.get("text", "")) for output in cell.get("outputs", [])]
    return normalise("\n".join(parts))


def normalise(text: str) -> str:
    """Whitespace collapsed, typographic quotes and dashes made plain, so that text from a
    source, an HTML page and a PDF compare alike."""
    text = text.replace("\u201c", '"').replace("\u201d", '"').replace("\u2019", "'")
    text = text.replace("\u2018", "'").replace("\u2013", "-").replace("\u2014", "-")
    text = text.replace("\u00ad", "").replace("\ufb01", "fi").replace("\ufb02", "fl")
    return " ".join(text.split())


class _Text(HTMLParser):
    SKIP = {"script", "style"}

    def __init__(self, skip_class: str | None) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skipping = 0
        self.skip_class = skip_class
        self.open_divs: list[bool] = []  # per open <div>: does it start a skipped block?

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.SKIP:
            self.skipping += 1
        elif tag == "div":
            classes = (dict(attrs).get("class") or "").split()
            skipped = self.skip_class is not None and self.skip_class in classes
            self.open_divs.append(skipped)
            self.skipping += skipped

    def handle_endtag(self, tag: str) -> None:
        if tag in self.SKIP and self.skipping:
            self.skipping -= 1
        elif tag == "div" and self.open_divs:
            self.skipping -= self.open_divs.pop()

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.parts.append(data)


def html_text(path: Path, leave_out: str | None = None) -> str:
    """The visible text of an HTML file (scripts and styles left out, and every
    ``<div class="{leave_out}">``, e.g. ``solution``), normalised."""
    parser = _Text(leave_out)
    parser.feed(path.read_text(encoding="utf-8"))
    return normalise(html.unescape("".join(parser.parts)))


def notebook_text(path: Path) -> str:
    """Every cell's source and every text output of a notebook, normalised."""
    notebook = nbformat.read(path, as_version=4)
    parts = []
    for cell in notebook.cells:
        parts.append(cell.source)
        for output in cell.get("outputs", []):
            parts.append(output.get("text", ""))
            for value in output.get("data", {}).values():
                parts.append(value if isinstance(value, str) else "")
    return normalise("\n".join(parts))


@functools.cache
def _pdftotext(pdf: Path, modified: int) -> str:
    """``pdftotext``'s output for the file as it was at ``modified`` (read once per version)."""
    result = subprocess.run(
        ["pdftotext", "-enc", "UTF-8", str(pdf), "-"], capture_output=True, text=True, check=True
    )
    return result.stdout


def pdf_text(pdf: Path) -> str:
    """``pdftotext`` output (reading order), normalised."""
    return normalise(_pdftotext(pdf, pdf.stat().st_mtime_ns))


def pdf_pages_text(pdf: Path) -> list[str]:
    """``pdftotext`` output per page, each normalised."""
    return [normalise(page) for page in _pdftotext(pdf, pdf.stat().st_mtime_ns).split("\f")]
