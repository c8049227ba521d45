"""tools/print_pdf.py and tools/book_pages.py: what is computed before Chromium prints (the front
matter, the footers' counters, the outline's entries) and what is read from the built pages."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from book_pages import Document, Heading, heading_text, plain_math, read_documents
from print_pdf import (
    HEADING_ID,
    first_in_time,
    footer_style,
    front_matter,
    in_time,
    outline_entries,
    prefix,
    roman,
)

DOCUMENTS = [
    Document("book/intro", [Heading(1, "intro", "Intro & more")]),
    Document(
        "book/01_x",
        [Heading(1, "one", "1. One"), Heading(2, "why", "1.1. Why <this>")],
    ),
]


@pytest.mark.parametrize(
    ("number", "text"), [(1, "i"), (4, "iv"), (9, "ix"), (14, "xiv"), (40, "xl"), (1994, "mcmxciv")]
)
def test_roman(number: int, text: str) -> None:
    assert roman(number) == text


@pytest.mark.parametrize("number", [0, -1, 1.5])
def test_roman_needs_a_whole_number_from_one(number: object) -> None:
    with pytest.raises(ValueError, match="number="):
        roman(number)  # type: ignore[arg-type]


def test_footer_counts_the_first_chapter_page_as_one() -> None:
    style = footer_style('The "Book"', 3)
    assert "counter-reset: page -3;" in style
    # The front matter's counter values (-2, -1, 0) are drawn i, ii, iii.
    assert re.search(r'system: fixed -2; symbols: "i" "ii" "iii";', style)
    assert 'content: "The \\"Book\\""' in style
    with pytest.raises(ValueError, match="front_pages=0"):
        footer_style("T", 0)


def test_front_matter_links_every_heading_once() -> None:
    front = front_matter("T", "E", "A", DOCUMENTS)
    targets = re.findall(r'<a href="#([^"]+)">', front)
    assert targets == [
        prefix(0) + HEADING_ID + "intro",
        prefix(1) + HEADING_ID + "one",
        prefix(1) + HEADING_ID + "why",
    ]
    assert "Intro &amp; more" in front and "Why &lt;this&gt;" in front
    assert front.count('class="pe-contents-page"') == 3


def test_outline_entries_name_the_contents_targets() -> None:
    entries = outline_entries(DOCUMENTS)
    assert [(e.level, e.title) for e in entries] == [
        (1, "Intro & more"),
        (1, "1. One"),
        (2, "1.1. Why <this>"),
    ]
    front = front_matter("T", "E", "A", DOCUMENTS)
    assert all(f'href="#{e.destination}"' in front for e in entries)


def test_heading_text_and_math() -> None:
    fragment = (
        '2.6. Odd <span class="math notranslate nohighlight">\\(d_{\\text{model}}\\)</span>'
        '<a class="headerlink" href="#odd" title="Link">#</a>'
    )
    assert heading_text(fragment) == "2.6. Odd d_model"
    assert plain_math("\\sqrt{d}") == "√d"


def test_read_documents(tmp_path: Path) -> None:
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "a.html").write_text(
        '<section id="a-title"><h1>A</h1><section id="s"><h2>S &amp; T</h2>'
        '<a href="b.html#x">b</a></section></section>'
    )
    (tmp_path / "book" / "b.html").write_text("<p>no heading</p>")
    (a,) = read_documents(tmp_path, ["book/a"])
    assert [(h.level, h.anchor, h.text) for h in a.headings] == [
        (1, "a-title", "A"),
        (2, "s", "S & T"),
    ]
    with pytest.raises(ValueError, match="no first heading"):
        read_documents(tmp_path, ["book/a", "book/b"])
    with pytest.raises(FileNotFoundError, match="make book"):
        read_documents(tmp_path, ["book/c"])


def _drawing(hangs: int) -> tuple[list[str], Callable[[], Awaitable[str]]]:
    """An attempt that never finishes on its first ``hangs`` calls (as a page whose drawing
    never ends), then returns at once; and the log of its calls."""
    calls: list[str] = []

    async def attempt() -> str:
        calls.append("attempt")
        if len(calls) <= hangs:
            await asyncio.Event().wait()
        return "drawn"

    return calls, attempt


def test_a_page_that_never_finishes_drawing_is_loaded_again() -> None:
    calls, attempt = _drawing(hangs=1)
    result = asyncio.run(first_in_time(attempt, 0.05, 2, lambda: calls.append("retry")))
    assert result == "drawn" and calls == ["attempt", "retry", "attempt"]


def test_a_page_that_never_finishes_drawing_gives_up_after_its_tries() -> None:
    calls, attempt = _drawing(hangs=3)
    with pytest.raises(asyncio.TimeoutError):
        asyncio.run(first_in_time(attempt, 0.05, 2, lambda: calls.append("retry")))
    assert calls == ["attempt", "retry", "attempt"]


def test_a_step_that_never_finishes_fails_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        asyncio.run(in_time(asyncio.Event().wait(), 0.05, "print 1"))
    assert "print 1 did not finish in 0 s" in capsys.readouterr().err
