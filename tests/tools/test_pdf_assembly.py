"""tools/pdf_assembly.py: the outline, page labels and metadata appended to a printed PDF whose
bytes (its structure tags, links and named destinations) stay as printed. The PDF is made here
with pypdf: blank pages, named destinations, and the catalogue entries of a tagged PDF."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from pdf_assembly import OutlineEntry, destinations, finish

pypdf = pytest.importorskip("pypdf")


def _printed(pages: int, places: dict[str, int]) -> bytes:
    """A PDF of ``pages`` blank A4 pages, a named destination per place, marked as tagged, with
    an outline of its own (as Chromium writes one, every heading)."""
    from pypdf.generic import BooleanObject, DictionaryObject, NameObject

    writer = pypdf.PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(595, 842)
    for name, page in places.items():
        writer.add_named_destination(name, page)
    writer.add_outline_item("Chromium's own entry", 0)
    root = writer._root_object
    root[NameObject("/MarkInfo")] = DictionaryObject({NameObject("/Marked"): BooleanObject(True)})
    root[NameObject("/StructTreeRoot")] = writer._add_object(
        DictionaryObject({NameObject("/Type"): NameObject("/StructTreeRoot")})
    )
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def _misplaced(pdf: bytes, update: int) -> list[str]:
    """The entries of the cross-reference section after byte ``update`` whose offset does not
    hold the object they name (a reader would search the file for it, or read another)."""
    lines = pdf[pdf.index(b"xref\n", update) : pdf.index(b"trailer", update)].split(b"\n")[1:]
    wrong, number = [], 0
    for line in filter(None, (line.strip() for line in lines)):
        fields = line.split()
        if len(fields) == 2:  # a subsection: its first number and its length
            number = int(fields[0])
            continue
        offset, kind = int(fields[0]), fields[2]
        if kind == b"n" and not pdf[offset:].startswith(f"{number} 0 obj".encode()):
            wrong.append(f"{number} at {offset}")
        number += 1
    return wrong


OUTLINE = [
    OutlineEntry(1, "Introduction", "d0-top"),
    OutlineEntry(1, "1. Chapter", "d1-top"),
    OutlineEntry(2, "1.1. Section", "d1-section"),
    OutlineEntry(2, "1.2. Another", "d1-another"),
]
PLACES = {"d0-top": 2, "d1-top": 3, "d1-section": 3, "d1-another": 4}


def test_outline_labels_metadata_and_tags(tmp_path: Path) -> None:
    output, printed = tmp_path / "book.pdf", _printed(5, PLACES)
    finish(printed, OUTLINE, 2, "The Book", "Us", output)
    written = output.read_bytes()
    assert written.startswith(printed)  # an update after the printed bytes
    assert _misplaced(written, len(printed)) == []
    reader = pypdf.PdfReader(output, strict=True)
    outline = reader.outline
    assert [item.title for item in outline if not isinstance(item, list)] == [
        "Introduction",
        "1. Chapter",
    ]
    assert [child.title for child in outline[2]] == ["1.1. Section", "1.2. Another"]
    assert [reader.get_destination_page_number(item) for item in outline[2]] == [3, 4]
    assert reader.page_labels == ["i", "ii", "1", "2", "3"]
    assert reader.metadata.title == "The Book" and reader.metadata.author == "Us"
    assert reader.metadata.producer == "pypdf"  # the printer's entries kept
    root = reader.trailer["/Root"]
    assert root["/MarkInfo"]["/Marked"] and "/StructTreeRoot" in root  # still tagged
    assert set(destinations(output.read_bytes())) == set(PLACES)


def test_an_entry_without_a_destination_is_an_error(tmp_path: Path) -> None:
    outline = [*OUTLINE, OutlineEntry(2, "Lost", "d1-lost")]
    with pytest.raises(ValueError, match="no named destination.*d1-lost"):
        finish(_printed(5, PLACES), outline, 2, "T", "A", tmp_path / "book.pdf")


@pytest.mark.parametrize("front_pages", [0, 5])
def test_front_matter_must_leave_the_book_pages(tmp_path: Path, front_pages: int) -> None:
    with pytest.raises(ValueError, match=f"front_pages={front_pages}"):
        finish(_printed(5, PLACES), OUTLINE, front_pages, "T", "A", tmp_path / "book.pdf")


def test_the_outline_starts_with_a_title(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="must start with a document's title"):
        finish(_printed(5, PLACES), OUTLINE[2:], 2, "T", "A", tmp_path / "book.pdf")


def test_pdf_must_be_bytes(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="pdf must be the printed PDF's bytes, not str"):
        finish("book.pdf", OUTLINE, 2, "T", "A", tmp_path / "book.pdf")  # type: ignore[arg-type]
