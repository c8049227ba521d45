"""What pypdf adds to the one PDF ``tools/print_pdf.py`` has Chromium print: the outline (one entry
per document's title, one per section under it), page labels (the front matter in roman
numerals, then 1, 2, ...), the title and author. The PDF is cloned whole, so Chromium's structure
tags (``/StructTreeRoot``, ``/MarkInfo``), its links and its named destinations stay as printed.

Where a heading landed is read from the named destinations Chromium writes for every element a
link points at (the contents link to every heading)."""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote


@dataclass(frozen=True)
class OutlineEntry:
    level: int  # 1: a document's title; 2: a section under it
    title: str
    destination: str  # the id of the heading's element in the printed page


def destinations(pdf: bytes) -> dict[str, tuple[int, float]]:
    """Each named destination of ``pdf``: its (unquoted) name -> (page index, top)."""
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(pdf))
    return {
        unquote(str(name).lstrip("/")): (reader.get_destination_page_number(dest), float(dest.top))
        for name, dest in reader.named_destinations.items()
    }


def finish(
    pdf: bytes,
    outline: list[OutlineEntry],
    front_pages: int,
    title: str,
    author: str,
    output: Path,
) -> None:
    """Write ``pdf`` to ``output`` with ``outline`` in place of Chromium's, page labels (the first
    ``front_pages`` in roman numerals, the rest numbered from 1) and the title and author."""
    from pypdf import PdfReader, PdfWriter
    from pypdf.generic import Fit, NameObject

    if not isinstance(pdf, bytes):
        raise TypeError(f"pdf must be the printed PDF's bytes, not {type(pdf).__name__}")
    reader = PdfReader(io.BytesIO(pdf))
    pages = len(reader.pages)
    if not 0 < front_pages < pages:
        raise ValueError(
            f"front_pages={front_pages}: the front matter must be at least one page and leave "
            f"a page of the book (the PDF has {pages})"
        )
    places = destinations(pdf)
    missing = [entry.destination for entry in outline if entry.destination not in places]
    if missing:
        raise ValueError(f"outline entries with no named destination in the PDF: {missing[:20]}")
    if outline and outline[0].level != 1:
        raise ValueError(f"the outline must start with a document's title, not {outline[0]}")

    writer = PdfWriter(clone_from=reader)
    if "/Outlines" in writer._root_object:  # Chromium's: every heading of every level
        del writer._root_object[NameObject("/Outlines")]
    parent = None
    for entry in outline:
        page, top = places[entry.destination]
        item = writer.add_outline_item(
            entry.title, page, parent=parent if entry.level == 2 else None, fit=Fit.xyz(top=top)
        )
        if entry.level == 1:
            parent = item
    writer.set_page_label(0, front_pages - 1, style="/r")
    writer.set_page_label(front_pages, pages - 1, style="/D", start=1)
    writer.page_mode = "/UseOutlines"
    writer.add_metadata({"/Title": title, "/Author": author})
    output.parent.mkdir(parents=True, exist_ok=True)
    with output.open("wb") as file:
        writer.write(file)
