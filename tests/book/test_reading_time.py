"""The main line of each chapter reads within 20 minutes, the whole book's within 3 hours, and
each chapter ends its main line with a short recap.

**The main line** of a chapter is what a learner reads from its title to the first heading
"Going deeper", "Exercises" or "Exercise" (whichever comes first): the markdown cells, and the
code cells shown open. Folded cells (tagged ``hide-input``, ``remove-input`` or ``remove-cell``,
as in ``tests/book/test_reading_line.py``: the hidden set-up cell, asserts that guard the prose,
plotting) are not read on the way, and outputs are not counted.

**Words** are counted as a reader meets them:

- markdown: the whitespace-separated tokens of the cell's text, leaving out the lines that only
  mark up (a fence line such as ``\u0060\u0060\u0060{figure}``, a directive's option such as
  ``:label: fig-x`` or ``:alt: ...``, a target such as ``(sec-x)=``, an HTML comment line);
  formulas and inline code count as the tokens they are written as;
- code, read as prose: the whitespace-separated tokens of the cell's source, comments included
  (``y = f(x)  # the score`` is six).

**Reading time** is words / 180 words a minute, a learner's pace for prose; code is read as if
it were prose, which is kind to it.

**The recap** is a level-2 heading ``## Summary``, the last section of the main line, of at most
five sentences. A sentence ends at ``.``, ``!`` or ``?`` followed by a space or the end of the
text, outside formulas and inline code; a list item is at least one sentence; "e.g.", "i.e.",
"cf.", "vs." and "et al." end none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = sorted((ROOT / "book").glob("[0-9]*.ipynb"))
FOLDED = {"hide-input", "remove-input", "remove-cell"}  # as tests/book/test_reading_line.py
WORDS_PER_MINUTE = 180
CHAPTER_MINUTES = 20
BOOK_MINUTES = 180
RECAP_SENTENCES = 5

END_OF_MAIN_LINE = re.compile(r"^#{1,6}[ \t]+(?:Going deeper|Exercises?)[ \t]*$", re.MULTILINE)
HEADING_2 = re.compile(r"^##[ \t]+(.+?)[ \t]*$", re.MULTILINE)
MARKUP_LINE = re.compile(
    r"^\s*(?:`{3,}|:{3,}|~{3,})\S*.*$"  # a fence or directive line
    r"|^\s*:[\w-]+:(?:\s.*)?$"  # a directive's option
    r"|^\s*\([\w-]+\)=\s*$"  # a target
    r"|^\s*<!--.*-->\s*$"  # an HTML comment
)


@dataclass(frozen=True)
class MainLine:
    name: str
    prose_words: int
    code_words: int
    markdown: str  # the main line's markdown, cells joined

    @property
    def words(self) -> int:
        return self.prose_words + self.code_words

    @property
    def minutes(self) -> float:
        return self.words / WORDS_PER_MINUTE


def prose_words(markdown: str) -> int:
    """The words of markdown a reader reads (see the module's docstring)."""
    return sum(len(line.split()) for line in markdown.splitlines() if not MARKUP_LINE.match(line))


def code_words(source: str) -> int:
    """The words of a code cell read as prose: its whitespace-separated tokens."""
    return len(source.split())


def main_line(path: Path) -> MainLine:
    notebook = nbformat.read(path, as_version=4)
    prose = code = 0
    markdown: list[str] = []
    for cell in notebook.cells:
        tags = set(cell.get("metadata", {}).get("tags", []))
        if tags & FOLDED:
            continue
        if cell.cell_type == "markdown":
            end = END_OF_MAIN_LINE.search(cell.source)
            text = cell.source[: end.start()] if end else cell.source
            prose += prose_words(text)
            markdown.append(text)
            if end:
                break
        elif cell.cell_type == "code":
            code += code_words(cell.source)
    return MainLine(path.stem, prose, code, "\n\n".join(markdown))


def table(lines: list[MainLine]) -> str:
    rows = [f"{'chapter':40} {'prose':>6} {'code':>6} {'words':>6} {'minutes':>7}"]
    rows += [
        f"{m.name:40} {m.prose_words:6d} {m.code_words:6d} {m.words:6d} {m.minutes:7.1f}"
        + ("  over" if m.minutes > CHAPTER_MINUTES else "")
        for m in lines
    ]
    total = sum(m.words for m in lines)
    rows.append(f"{'all chapters':40} {'':6} {'':6} {total:6d} {total / WORDS_PER_MINUTE:7.1f}")
    return "\n".join(rows)


ABBREVIATIONS = re.compile(r"\b(?:e\.g|i\.e|cf|vs|et al)\.", re.IGNORECASE)
SENTENCE_END = re.compile(r"[.!?][\"')\]*_]*(?=\s|$)")
LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+", re.MULTILINE)


def sentences(text: str) -> int:
    """How many sentences a recap has (see the module's docstring)."""
    text = re.sub(r"\$\$.+?\$\$", "F", text, flags=re.DOTALL)
    text = re.sub(r"\$[^$\n]+\$", "F", text)
    text = re.sub(r"`[^`\n]+`", "C", text)
    text = ABBREVIATIONS.sub("X", text)
    text = re.sub(r"\*\*[^*\n]+[.:]\*\*", "T", text)
    count = 0
    for item in LIST_ITEM.split(text):
        ends = list(SENTENCE_END.finditer(item))
        rest = item[ends[-1].end() :] if ends else item
        count += len(ends) + bool(re.search(r"\w", rest))
    return count


def recap(markdown: str) -> tuple[str, str] | None:
    """The main line's last level-2 section, as (heading, text), or ``None`` if it has none."""
    headings = list(HEADING_2.finditer(markdown))
    if not headings:
        return None
    last = headings[-1]
    return last[1], markdown[last.end() :].strip()


LINES = [main_line(path) for path in CHAPTERS]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("A cat. A dog! Why? No.", 4),
        ("- one item\n- two items.", 2),
        ("1. The first, e.g. this one.\n2. At $p = 0.5$ it is `x.y` and 3.5 times more.", 2),
        ("Cited {cite}`vaswani2017attention`. And so on.", 2),
        ("The score (the product). Done", 2),
        ("* **Packing.** Positions reset.\n* **Left padding.** Count from the first token.", 2),
    ],
)
def test_sentences_counted(text: str, expected: int) -> None:
    assert sentences(text) == expected


def test_words_counted() -> None:
    markdown = "```{figure} a.png\n:name: fig-a\n:alt: a long alt text\n\nThe caption.\n```\n(sec-a)=\n## A title"
    assert prose_words(markdown) == 5  # "The caption." and "## A title"
    assert code_words("y = f(x)  # the score\n") == 6


@pytest.mark.parametrize("line", LINES, ids=lambda m: m.name)
def test_chapter_main_line_within_20_minutes(line: MainLine) -> None:
    assert line.minutes <= CHAPTER_MINUTES, (
        f"{line.name}: the main line reads {line.words} words, {line.minutes:.1f} minutes at "
        f"{WORDS_PER_MINUTE} words a minute; at most {CHAPTER_MINUTES} minutes. Move detail a "
        f"learner does not need to 'Going deeper', fold asserts and plotting.\n{table(LINES)}"
    )


def test_book_main_line_within_3_hours() -> None:
    minutes = sum(m.minutes for m in LINES)
    assert minutes <= BOOK_MINUTES, (
        f"the main lines read {minutes:.0f} minutes in all; at most {BOOK_MINUTES}.\n{table(LINES)}"
    )


@pytest.mark.parametrize("line", LINES, ids=lambda m: m.name)
def test_chapter_ends_its_main_line_with_a_recap(line: MainLine) -> None:
    last = recap(line.markdown)
    assert last is not None and last[0] == "Summary", (
        f"{line.name}: the main line's last section is {last[0] if last else None!r}; it must be "
        "'## Summary', the chapter's claims with their numbers, just before 'Exercises' or "
        "'Going deeper'"
    )
    count = sentences(last[1])
    assert 0 < count <= RECAP_SENTENCES, (
        f"{line.name}: the summary has {count} sentences; at most {RECAP_SENTENCES}:\n{last[1]}"
    )
