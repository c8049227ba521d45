"""Write the Korean edition's notebooks: each chapter with its prose from the Korean catalogues.

Usage: ``python tools/korean_notebooks.py OUT_DIR [COPY_TO ...]`` (``make book-ko`` writes
``_build/ko/notebooks`` and copies them over the English notebooks in the Korean HTML's
``_sources/book``, which its download buttons serve).

A Korean notebook is its chapter with every markdown cell's prose replaced by its translation in
``locale/ko/LC_MESSAGES/book/<chapter>.po``, the messages Sphinx extracts for the Korean edition.
The cell's MyST source is read with the parser MyST itself uses (markdown-it with MyST's
extensions) and each block Sphinx makes a message of is looked up by the text Sphinx gives it
(its source lines joined with spaces): headings, paragraphs (in lists, quotes and directives too),
table cells, display math, exercise titles; a figure's caption and alt text (cell metadata) are
messages too. Everything else is kept as it is: labels, directive fences and options, code
blocks. A block without a translation stops the tool with its text, and so does a message of the
catalogue that no block used (but the images' paths, which are not prose).

The article's own words, marked in the catalogues with the book's role (``{article}`...```,
which a notebook would show raw), become plain text between quotation marks: the running prose
already puts “…” around them; a table cell or a quote that is the article's words alone gets them
here; a heading (the article's section title) is left plain.

Code cells, their outputs and metadata are the chapter's, byte for byte, with one cell added
after the chapter's first (hidden) cell: ``pe_lib.checks.set_language("ko")``, hidden from the
HTML too (``remove-cell``), so that a wrong answer in a Korean notebook gets its feedback in
Korean. The chapters themselves are only read.
"""

from __future__ import annotations

import argparse
import copy
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from babel.messages.pofile import read_po
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from myst_parser.config.main import MdParserConfig
from myst_parser.parsers.mdit import create_md_parser

ROOT = Path(__file__).resolve().parents[1]
LOCALE = ROOT / "locale" / "ko" / "LC_MESSAGES" / "book"
#: The first cell a Korean notebook adds, after the chapter's hidden first cell.
LANGUAGE_CELL = (
    "# 한국어판: 검사기(pe_lib.checks)의 피드백을 한국어로 보여 준다.\n"
    "import pe_lib.checks\n"
    "\n"
    'pe_lib.checks.set_language("ko")'
)
LANGUAGE_TAGS = ["remove-cell"]
LANGUAGE_CELL_ID = "korean-edition-language"

# The MyST extensions the book enables (_config.yml, parse.myst_enable_extensions).
PARSER = create_md_parser(
    MdParserConfig(
        enable_extensions={"amsmath", "dollarmath", "colon_fence", "deflist", "linkify"},
        dmath_double_inline=True,
    ),
    RendererHTML,
)
# Directives whose argument is a label, not a title (sphinx-exercise's gates).
LABEL_ARGUMENTS = {"solution-start", "solution-end"}


#: The book's role for the article's own words (book/_ext/translations.py).
ARTICLE_ROLE = re.compile(r"\{article\}`([^`]*)`")
#: A quotation in Korean prose.
KOREAN_QUOTE = re.compile(r"“[^”]*”|‘[^’]*’")


def quoted(text: str, *, heading: bool = False) -> str:
    """``text`` with each ``{article}`words``` as plain words between quotation marks: those
    the prose already quotes as they are, the others between “ and ” (in a ``heading``, plain)."""
    spans = [m.span() for m in KOREAN_QUOTE.finditer(text)]

    def plain(role: re.Match[str]) -> str:
        inside = any(start < role.start() and role.end() < end for start, end in spans)
        return role[1] if inside or heading else f"“{role[1]}”"

    return ARTICLE_ROLE.sub(plain, text)


class Untranslated(ValueError):
    """A block of a chapter has no translation in its catalogue (or the catalogue a message
    that no block of the chapter has)."""


def _key(text: str) -> str:
    """A message as Sphinx extracts it: lines joined with spaces, stripped."""
    return text.replace("\n", " ").strip()


@dataclass
class Catalogue:
    """One page's messages, msgid -> msgstr, and which of them were used."""

    path: Path
    messages: dict[str, str] = field(default_factory=dict)
    used: set[str] = field(default_factory=set)

    @classmethod
    def read(cls, path: Path) -> Catalogue:
        with path.open("rb") as f:
            catalog = read_po(f)
        messages = {
            str(m.id): str(m.string) for m in catalog if m.id and isinstance(m.id, str) and m.string
        }
        return cls(path, messages)

    def translate(self, text: str, where: str, *, literal: bool = False) -> str:
        """The translation of ``text``; ``literal`` (math) compares without the outer space."""
        key = text.strip() if literal else _key(text)
        for msgid, msgstr in self.messages.items():
            if (msgid.strip() if literal else msgid) == key:
                self.used.add(msgid)
                return msgstr.strip() if literal else msgstr
        raise Untranslated(f"{where}: no translation in {self.path.name} of {key!r}")

    def unused(self) -> list[str]:
        """Messages no block used, but the images' paths (``.. image:: ...``)."""
        return [m for m in self.messages if m not in self.used and not m.startswith(".. image::")]


def _replace_prefixed(lines: list[str], start: int, end: int, content: str, new: str) -> None:
    """Lines ``start .. end - 1`` hold a block whose text (markers and indent removed) begins
    with ``content``'s first line: put ``new`` on the first line, after the same markers, and
    drop the others."""
    first = content.split("\n", 1)[0].strip()
    at = lines[start].find(first)
    if not first or at < 0:
        raise Untranslated(f"cannot find {first!r} on line {start + 1}: {lines[start]!r}")
    lines[start:end] = [lines[start][:at] + new]


def _replace_cells(line: str, cells: list[str], translations: list[str]) -> str:
    """A table row with each cell's text replaced, left to right."""
    out, at = [], 0
    for cell, new in zip(cells, translations, strict=True):
        found = line.find(cell, at)
        if found < 0:
            raise Untranslated(f"cannot find the table cell {cell!r} in {line!r}")
        out.append(line[at:found] + new.replace("|", "\\|"))
        at = found + len(cell)
    return "".join(out) + line[at:]


def translate_markdown(text: str, catalogue: Catalogue, where: str) -> str:
    """``text`` (MyST) with each message replaced by its translation."""
    lines = text.split("\n")
    tokens = PARSER.parse(text)
    # Edits from the last line up, so that earlier line numbers stay valid.
    edits: list[tuple[int, int, list[str]]] = []
    handled: set[int] = set()  # the inline tokens whose text was looked up
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token.type in ("heading_open", "paragraph_open") and token.map:
            inline = tokens[index + 1]
            handled.add(index + 1)
            start, end = token.map
            new = quoted(
                catalogue.translate(inline.content, f"{where}, line {start + 1}"),
                heading=token.type == "heading_open",
            )
            block = lines[start:end]
            _replace_prefixed(block, 0, end - start, inline.content, new)
            edits.append((start, end, block))
        elif token.type == "tr_open" and token.map:
            row_end = next(i for i in range(index, len(tokens)) if tokens[i].type == "tr_close")
            cells = [t.content for t in tokens[index:row_end] if t.type == "inline"]
            handled.update(i for i in range(index, row_end) if tokens[i].type == "inline")
            line = token.map[0]
            news = [
                quoted(catalogue.translate(c, f"{where}, line {line + 1}")) if c.strip() else c
                for c in cells
            ]
            edits.append((line, line + 1, [_replace_cells(lines[line], cells, news)]))
            index = row_end
        elif token.type in ("math_block", "math_block_label", "amsmath") and token.map:
            start, end = token.map
            new = catalogue.translate(token.content, f"{where}, line {start + 1}", literal=True)
            if new != token.content.strip():
                edits.append((start, end, _math_lines(lines[start:end], token.content, new)))
        elif token.type in ("fence", "colon_fence") and token.info.startswith("{") and token.map:
            edits.append(_directive(token, lines, catalogue, where))
        index += 1
    for number, token in enumerate(tokens):
        if token.type == "inline" and token.content.strip() and number not in handled:
            line = token.map[0] + 1 if token.map else "?"
            raise Untranslated(f"{where}, line {line}: a block the tool does not know: {token!r}")
    for start, end, new_lines in sorted(edits, reverse=True):
        lines[start:end] = new_lines
    return "\n".join(lines)


def _math_lines(block: list[str], content: str, new: str) -> list[str]:
    text = "\n".join(block)
    inner = content.strip()
    if inner not in text:
        raise Untranslated(f"cannot find the display math {inner[:40]!r}")
    return text.replace(inner, new, 1).split("\n")


def _directive(
    token: Token, lines: list[str], catalogue: Catalogue, where: str
) -> tuple[int, int, list[str]]:
    """A directive's fence: its title (argument) and its body translated, options kept."""
    start, end = token.map  # type: ignore[misc]
    name, _, argument = token.info[1:].partition("}")
    name, argument = name.strip(), argument.strip()
    opening = lines[start]
    if argument and name not in LABEL_ARGUMENTS:
        title = quoted(catalogue.translate(argument, f"{where}, line {start + 1}"))
        opening = opening[: opening.rfind(argument)] + title
    body = lines[start + 1 : end - 1]
    closing = lines[end - 1 : end]
    options = 0
    while options < len(body) and body[options].lstrip().startswith(":"):
        options += 1
    inner = translate_markdown("\n".join(body[options:]), catalogue, f"{where} ({{{name}}})")
    return start, end, [opening, *body[:options], *inner.split("\n"), *closing]


def _is_install_cell(cell: nbformat.NotebookNode) -> bool:
    return cell.cell_type == "code" and 'find_spec("pe_lib")' in cell.source


def korean_notebook(chapter: Path, catalogue: Catalogue) -> nbformat.NotebookNode:
    """The Korean notebook of ``chapter`` (which is only read)."""
    notebook = nbformat.read(chapter, as_version=4)
    korean = copy.deepcopy(notebook)
    for number, cell in enumerate(korean.cells):
        where = f"{chapter.name}, cell {number}"
        if cell.cell_type == "markdown":
            cell.source = translate_markdown(cell.source, catalogue, where)
        mystnb = cell.get("metadata", {}).get("mystnb", {})
        if "caption" in mystnb.get("figure", {}):
            caption = mystnb["figure"]["caption"]
            mystnb["figure"]["caption"] = quoted(catalogue.translate(caption, f"{where} (caption)"))
        if "alt" in mystnb.get("image", {}):
            alt = mystnb["image"]["alt"]
            mystnb["image"]["alt"] = quoted(catalogue.translate(alt, f"{where} (alt text)"))
    first = next((i for i, cell in enumerate(korean.cells) if _is_install_cell(cell)), None)
    if first is None:
        raise Untranslated(f"{chapter.name}: no first cell that installs pe_lib")
    language = nbformat.v4.new_code_cell(LANGUAGE_CELL, metadata={"tags": list(LANGUAGE_TAGS)})
    language.id = LANGUAGE_CELL_ID
    korean.cells.insert(first + 1, language)
    return korean


def chapters() -> list[Path]:
    return sorted((ROOT / "book").glob("[0-9]*.ipynb"))


def write_notebooks(out: Path) -> list[Path]:
    """Every chapter's Korean notebook in ``out``; every catalogue message must be used."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for chapter in chapters():
        catalogue = Catalogue.read(LOCALE / f"{chapter.stem}.po")
        notebook = korean_notebook(chapter, catalogue)
        unused = catalogue.unused()
        if unused:
            raise Untranslated(
                f"{catalogue.path.name}: {len(unused)} messages no block of {chapter.name} "
                f"has (stale?), e.g. {unused[0]!r}"
            )
        text = nbformat.writes(notebook)
        target = out / chapter.name
        target.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
        written.append(target)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the folder to write the notebooks into")
    parser.add_argument(
        "copy_to", type=Path, nargs="*", help="folders that get a copy (e.g. the HTML's _sources)"
    )
    args = parser.parse_args()
    try:
        written = write_notebooks(args.out)
    except Untranslated as error:
        print(f"korean_notebooks: {error}", file=sys.stderr)
        raise SystemExit(1) from None
    for folder in args.copy_to:
        if not folder.is_dir():
            print(f"korean_notebooks: {folder} is not a folder (build the edition first)")
            raise SystemExit(1)
        for path in written:
            shutil.copyfile(path, folder / path.name)
    print(f"korean_notebooks: wrote {len(written)} notebooks to {args.out}")


if __name__ == "__main__":
    main()
