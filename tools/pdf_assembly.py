"""The PDF put together from the parts ``tools/print_pdf.py`` printed (the front matter, then one
part per document): their pages in order, every link between pages made a link to the page and
place in the PDF, the outline (one entry per document's title, one per section under it), page
labels (the front matter in roman numerals, then 1, 2, ...) and the title and author."""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from book_pages import Document

# The id a heading gets (before its section's id) for printing.
HEADING_ID = "pe-print-heading-"


@dataclass
class Part:
    document: Document | None  # None: the front matter
    pdf: bytes
    pages: int
    places: dict[str, tuple[int, float]]  # anchor -> (page in the part, top)


def read_part(document: Document | None, pdf: bytes) -> Part:
    """A printed part, with where each place a link names landed (its named destinations)."""
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(pdf))
    places = {
        unquote(name.lstrip("/")): (reader.get_destination_page_number(dest), float(dest.top))
        for name, dest in reader.named_destinations.items()
    }
    # A link to a section goes to its heading.
    for heading in document.headings if document is not None else []:
        if HEADING_ID + heading.anchor in places:
            places[heading.anchor] = places[HEADING_ID + heading.anchor]
    return Part(document, pdf, len(reader.pages), places)


def assemble(parts: list[Part], base_url: str, title: str, author: str, output: Path) -> int:
    """The parts as one PDF with links between pages, the outline and page labels; returns the
    number of links made into links between pages."""
    from pypdf import PdfReader, PdfWriter
    from pypdf.generic import ArrayObject, Fit, FloatObject, NameObject, NullObject

    writer = PdfWriter()
    first_page: list[int] = []
    for part in parts:
        first_page.append(len(writer.pages))
        for page in PdfReader(io.BytesIO(part.pdf)).pages:
            writer.add_page(page)
    place: dict[str, tuple[int, float]] = {}
    for part, start in zip(parts, first_page, strict=True):
        if part.document is None:
            continue
        top = float(writer.pages[start].mediabox.top)
        place[part.document.name] = (start, top)
        for anchor, (page, y) in part.places.items():
            place[f"{part.document.name}#{anchor}"] = (start + page, y)

    linked, unknown = 0, []
    for part, start in zip(parts, first_page, strict=True):
        own = part.document.name if part.document is not None else None
        for index in range(start, start + part.pages):
            for reference in writer.pages[index].get("/Annots") or []:
                link = reference.get_object()
                if link.get("/Subtype") != "/Link":
                    continue
                action = link.get("/A")
                action = action.get_object() if action is not None else {}
                uri = str(action.get("/URI", ""))
                named = link.get("/Dest", action.get("/D"))
                if uri.startswith(base_url):
                    url = urlsplit(uri)
                    key = url.path.lstrip("/").removesuffix(".html")
                    key += f"#{unquote(url.fragment)}" if url.fragment else ""
                elif named is not None and own is not None and not isinstance(named, list):
                    key = f"{own}#{unquote(str(named).lstrip('/'))}"
                else:
                    continue
                if key not in place:
                    unknown.append(f"page {index + 1}: {key}")
                    continue
                target, y = place[key]
                link[NameObject("/Dest")] = ArrayObject(
                    [
                        writer.pages[target].indirect_reference,
                        NameObject("/XYZ"),
                        NullObject(),
                        FloatObject(y),
                        NullObject(),
                    ]
                )
                if "/A" in link:
                    del link["/A"]
                linked += 1
    if unknown:
        raise ValueError("links to places the PDF does not have:\n  " + "\n  ".join(unknown[:20]))

    for part in parts:
        if part.document is None:
            continue
        parent = None
        for heading in part.document.headings:
            page, y = place[f"{part.document.name}#{heading.anchor}"]
            item = writer.add_outline_item(
                heading.text,
                page,
                parent=parent if heading.level == 2 else None,
                fit=Fit.xyz(top=y),
            )
            if heading.level == 1:
                parent = item
    front = sum(part.pages for part in parts if part.document is None)
    writer.set_page_label(0, front - 1, style="/r")
    writer.set_page_label(front, len(writer.pages) - 1, style="/D", start=1)
    writer.page_mode = "/UseOutlines"
    writer.add_metadata({"/Title": title, "/Author": author})
    output.parent.mkdir(parents=True, exist_ok=True)
    with output.open("wb") as file:
        writer.write(file)
    return linked
