"""What ``tools/print_pdf.py`` reads from an HTML build of the book before printing it: the
documents of ``_toc.yml`` in reading order, each with its headings (level 1, the document's
title, and level 2, its sections: anchor and plain text)."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

SECTION_HEADING = re.compile(
    r'<section\b[^>]*\bid="(?P<id>[^"]+)"[^>]*>\s*(?:<span id="[^"]*"></span>\s*)*'
    r"<h(?P<level>[12])>(?P<html>.*?)</h(?P=level)>",
    re.S,
)
MATH = re.compile(r'<span class="math[^"]*">\\\((.*?)\\\)</span>', re.S)


@dataclass
class Heading:
    level: int  # 1 the document's title, 2 a section
    anchor: str
    text: str  # plain text, with the section number: "2.6. Odd d_model"


@dataclass
class Document:
    name: str  # "book/02_sinusoidal_formula"
    headings: list[Heading]

    @property
    def url_path(self) -> str:
        return f"{self.name}.html"


def plain_math(tex: str) -> str:
    """Inline TeX as plain text for an outline entry: ``d_{\\text{model}}`` -> ``d_model``."""
    tex = re.sub(r"\\(?:text|mathrm|mathit|mathbf|operatorname)\{([^{}]*)\}", r"\1", tex)
    tex = tex.replace("\\sqrt", "√").replace("\\,", " ")
    return re.sub(r"\\([A-Za-z]+)", r"\1", tex).replace("{", "").replace("}", "")


def heading_text(fragment: str) -> str:
    """A heading's HTML as the plain text of an outline entry (its "#" link left out)."""
    fragment = re.sub(r'<a class="headerlink".*?</a>', "", fragment, flags=re.S)
    fragment = MATH.sub(lambda m: plain_math(html.unescape(m[1])), fragment)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", fragment)).split())


def toc_documents(source: Path) -> list[str]:
    """The documents of ``_toc.yml`` in reading order (``book/intro``, ...)."""
    toc = yaml.safe_load((source / "_toc.yml").read_text(encoding="utf-8"))
    names = [toc["root"]]

    def walk(entries: list[dict]) -> None:
        for entry in entries:
            if "file" in entry:
                names.append(entry["file"])
            walk(entry.get("sections", []))

    for part in toc.get("parts", []):
        walk(part.get("chapters", []))
    walk(toc.get("chapters", []))
    return [re.sub(r"\.(md|ipynb)$", "", name) for name in names]


def read_documents(site: Path, names: list[str]) -> list[Document]:
    """Each document's headings, read from its page in ``site``."""
    documents = []
    for name in names:
        page = site / f"{name}.html"
        if not page.is_file():
            raise FileNotFoundError(f"no {page}: build the HTML book first (make book)")
        headings = [
            Heading(int(m["level"]), m["id"], heading_text(m["html"]))
            for m in SECTION_HEADING.finditer(page.read_text(encoding="utf-8"))
        ]
        if not headings or headings[0].level != 1:
            raise ValueError(
                f"{page} has no first heading (<section id=...><h1>): nothing to print"
            )
        documents.append(Document(name, headings))
    return documents
