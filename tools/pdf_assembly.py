"""What is added to the one PDF ``tools/print_pdf.py`` has Chromium print: the outline (one entry
per document's title, one per section under it), page labels (the front matter in roman
numerals, then 1, 2, ...), the title and author. They are appended to the printed bytes as an
incremental update (ISO 32000-1, 7.5.6), so Chromium's structure tags (``/StructTreeRoot``,
``/MarkInfo``), its links and its named destinations stay exactly as printed, and only the
catalogue, the pages and the named destinations are read: rewriting the whole tagged book with
pypdf (``PdfWriter(clone_from=...)``) read every one of its 76,000 objects, 25 s of the print.

Where a heading landed is read from the named destinations Chromium writes for every element a
link points at (the contents link to every heading)."""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote

if TYPE_CHECKING:
    from pypdf import PdfReader
    from pypdf.generic import DictionaryObject, PdfObject


@dataclass(frozen=True)
class OutlineEntry:
    level: int  # 1: a document's title; 2: a section under it
    title: str
    destination: str  # the id of the heading's element in the printed page


def destinations(pdf: bytes) -> dict[str, tuple[int, float]]:
    """Each named destination of ``pdf``: its (unquoted) name -> (page index, top)."""
    from pypdf import PdfReader

    return _destinations(PdfReader(io.BytesIO(pdf)))


def _destinations(reader: PdfReader) -> dict[str, tuple[int, float]]:
    """:func:`destinations` of a PDF already read."""
    return {
        unquote(str(name).lstrip("/")): (reader.get_destination_page_number(dest), float(dest.top))
        for name, dest in reader.named_destinations.items()
    }


def _last_xref(pdf: bytes) -> int:
    """The offset after the file's last ``startxref`` (where its cross-reference section is)."""
    tail = pdf[-1024:]
    at = tail.rfind(b"startxref")
    if at < 0:
        raise ValueError("the PDF has no startxref near its end: not a complete PDF")
    return int(tail[at + len(b"startxref") :].split()[0])


def _update(pdf: bytes, objects: dict[int, PdfObject], trailer: DictionaryObject) -> bytes:
    """``pdf`` followed by ``objects`` (number -> object, generation 0), a cross-reference
    section for them and ``trailer`` (to which ``/Prev`` is added)."""
    from pypdf.generic import NameObject, NumberObject

    out = io.BytesIO()
    out.write(pdf if pdf.endswith(b"\n") else pdf + b"\n")
    offsets = {}
    for number in sorted(objects):
        offsets[number] = out.tell()
        out.write(f"{number} 0 obj\n".encode())
        objects[number].write_to_stream(out)
        out.write(b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 1\n0000000000 65535 f\r\n")  # the head of the free list, as ever
    numbers = sorted(offsets)
    runs: list[list[int]] = []
    for number in numbers:  # contiguous subsections
        if runs and number == runs[-1][-1] + 1:
            runs[-1].append(number)
        else:
            runs.append([number])
    for run in runs:
        out.write(f"{run[0]} {len(run)}\n".encode())
        out.write(b"".join(f"{offsets[n]:010d} 00000 n\r\n".encode() for n in run))
    trailer[NameObject("/Prev")] = NumberObject(_last_xref(pdf))
    out.write(b"trailer\n")
    trailer.write_to_stream(out)
    out.write(f"\nstartxref\n{xref}\n%%EOF\n".encode())
    return out.getvalue()


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
    from pypdf import PdfReader
    from pypdf.generic import (
        ArrayObject,
        DictionaryObject,
        FloatObject,
        IndirectObject,
        NameObject,
        NullObject,
        NumberObject,
        TextStringObject,
    )

    if not isinstance(pdf, bytes):
        raise TypeError(f"pdf must be the printed PDF's bytes, not {type(pdf).__name__}")
    reader = PdfReader(io.BytesIO(pdf))
    pages = len(reader.pages)
    if not 0 < front_pages < pages:
        raise ValueError(
            f"front_pages={front_pages}: the front matter must be at least one page and leave "
            f"a page of the book (the PDF has {pages})"
        )
    places = _destinations(reader)
    missing = [entry.destination for entry in outline if entry.destination not in places]
    if missing:
        raise ValueError(f"outline entries with no named destination in the PDF: {missing[:20]}")
    if not outline or outline[0].level != 1:
        raise ValueError(f"the outline must start with a document's title, not {outline[:1]}")

    # Numbers for the new objects: the outline's root, then one per entry, after the printed ones.
    first = int(reader.trailer["/Size"])
    refs = [IndirectObject(first + i, 0, reader) for i in range(len(outline) + 1)]
    # nodes[0] is the outline's root, nodes[i] the dictionary of outline[i - 1];
    # children[i]: the indices of the entries right under nodes[i].
    nodes = [DictionaryObject({NameObject("/Type"): NameObject("/Outlines")})]
    children: dict[int, list[int]] = {0: []}
    for index, entry in enumerate(outline, start=1):
        page, top = places[entry.destination]
        page_ref = reader.pages[page].indirect_reference
        nodes.append(
            DictionaryObject(
                {
                    NameObject("/Title"): TextStringObject(entry.title),
                    NameObject("/Dest"): ArrayObject(
                        [page_ref, NameObject("/XYZ"), NullObject(), FloatObject(top), NullObject()]
                    ),
                }
            )
        )
        if entry.level == 1:
            children[0].append(index)
            children[index] = []
        else:
            children[children[0][-1]].append(index)
    for parent, kids in children.items():
        if not kids:
            continue
        nodes[parent][NameObject("/First")], nodes[parent][NameObject("/Last")] = (
            refs[kids[0]],
            refs[kids[-1]],
        )
        # open: the count of the entries shown under it (all of them, under the root)
        nodes[parent][NameObject("/Count")] = NumberObject(
            len(outline) if parent == 0 else len(kids)
        )
        for before, after in zip(kids, kids[1:], strict=False):
            nodes[before][NameObject("/Next")], nodes[after][NameObject("/Prev")] = (
                refs[after],
                refs[before],
            )
        for kid in kids:
            nodes[kid][NameObject("/Parent")] = refs[parent]
    objects: dict[int, PdfObject] = {ref.idnum: node for ref, node in zip(refs, nodes, strict=True)}

    catalogue_ref = reader.trailer.raw_get("/Root")
    catalogue = DictionaryObject(reader.trailer["/Root"])  # its values as printed
    catalogue[NameObject("/Outlines")] = refs[0]  # in place of Chromium's, every heading
    catalogue[NameObject("/PageLabels")] = DictionaryObject(
        {
            NameObject("/Nums"): ArrayObject(
                [
                    NumberObject(0),
                    DictionaryObject({NameObject("/S"): NameObject("/r")}),
                    NumberObject(front_pages),
                    DictionaryObject(
                        {NameObject("/S"): NameObject("/D"), NameObject("/St"): NumberObject(1)}
                    ),
                ]
            )
        }
    )
    catalogue[NameObject("/PageMode")] = NameObject("/UseOutlines")
    objects[catalogue_ref.idnum] = catalogue
    info_ref = reader.trailer.raw_get("/Info") if "/Info" in reader.trailer else None
    info = DictionaryObject(reader.trailer["/Info"] if info_ref is not None else {})
    info[NameObject("/Title")], info[NameObject("/Author")] = (
        TextStringObject(title),
        TextStringObject(author),
    )
    if info_ref is None:
        info_ref = IndirectObject(first + len(refs), 0, reader)
    objects[info_ref.idnum] = info

    trailer = DictionaryObject(
        {
            NameObject("/Size"): NumberObject(max(first, *objects) + 1),
            NameObject("/Root"): catalogue_ref,
            NameObject("/Info"): info_ref,
        }
    )
    if "/ID" in reader.trailer:
        trailer[NameObject("/ID")] = reader.trailer["/ID"]
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_bytes(_update(pdf, objects, trailer))
