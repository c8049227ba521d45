"""Write the student edition's source tree: the book with every exercise and no solution.

Usage: ``python tools/student_edition.py OUT_DIR`` (``make student`` uses ``_build/student/src``).

The chapters gate each solution with sphinx-exercise's ``solution-start`` and ``solution-end``
directives in their markdown cells. A student notebook is its chapter with everything from a
``solution-start`` fence to the end of the matching ``solution-end`` directive removed: the
markdown between the gates and every code cell (with its outputs) inside them. Text in the same
cell before the start gate or after the end gate (an exercise, the next exercise) stays. The
chapters themselves are only read.

OUT_DIR gets a complete Jupyter Book (a file whose content is unchanged is not written again,
so a second build reads only what changed): ``_config.yml`` (the book's, with the edition's title and
the repository branch ``student`` that its launch and source buttons point at: the Pages workflow
publishes the student notebooks there), ``_toc.yml``, and ``book/`` with the student notebooks,
the pages, ``references.bib``, ``_static`` and ``_templates``. The notebooks keep the chapters'
stored outputs of the cells that remain, so the edition builds without executing them; the tests
execute them (``tests/book/test_student.py``).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[1]
# The branch the launch buttons (Binder, Colab) and the source button of the edition name.
STUDENT_BRANCH = "student"
EDITION = "student edition"
# The PDFs' names on the published site (.github/workflows/book.yml puts them there).
PDF = "book.pdf"
STUDENT_PDF = "book-student.pdf"

# A directive's opening fence: ``` or ::: (three or more), then {name}.
FENCE = re.compile(r"^(?P<fence>`{3,}|:{3,})\{(?P<name>[a-z-]+)\}")


class GateError(ValueError):
    """A chapter's solution gates do not pair up."""


def _strip_gated_lines(lines: list[str], inside: bool, where: str) -> tuple[list[str], bool]:
    """The lines outside solution gates, and whether the cell ends inside one."""
    kept: list[str] = []
    closing: str | None = None  # the fence that closes an open solution-end directive
    for number, line in enumerate(lines, 1):
        if closing is not None:  # inside the solution-end directive, up to its closing fence
            if line.strip() == closing:
                closing = None
                inside = False
            continue
        opening = FENCE.match(line)
        name = opening["name"] if opening else None
        if name == "solution-start":
            if inside:
                raise GateError(f"{where}, line {number}: solution-start inside a solution")
            inside = True
        elif name == "solution-end":
            if not inside:
                raise GateError(f"{where}, line {number}: solution-end without solution-start")
            assert opening is not None
            closing = opening["fence"]
            if line.rstrip().endswith(closing) and line.strip() != closing:
                closing = None  # a one-line directive
                inside = False
        elif not inside:
            kept.append(line)
    if closing is not None:
        raise GateError(f"{where}: the solution-end directive is not closed")
    return kept, inside


def strip_solutions(notebook: nbformat.NotebookNode, name: str) -> int:
    """Remove every gated solution from ``notebook`` in place; returns how many it removed."""
    cells = []
    inside = False
    removed = 0
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "markdown":
            if not inside:
                cells.append(cell)
            continue
        source = cell.source.splitlines()
        starts = sum(
            1 for line in source if (m := FENCE.match(line)) and m["name"] == "solution-start"
        )
        removed += starts
        kept, inside = _strip_gated_lines(source, inside, f"{name}, cell {index}")
        text = "\n".join(kept).strip("\n")
        if text.strip():
            cell.source = text
            cells.append(cell)
    if inside:
        raise GateError(f"{name}: a solution-start has no solution-end")
    notebook.cells = cells
    return removed


def chapters() -> list[Path]:
    return sorted((ROOT / "book").glob("[0-9]*.ipynb"))


class _Tree:
    """Files written into a folder only where their content changed, so that Sphinx, whose saved
    environment keys on modification times, reads again only the chapters that did change. A
    change to any other file (a stylesheet, a template, the configuration) can change every page,
    and Sphinx would not copy a changed static file when no page is out of date: then every file
    is marked as new (``finish``). Files of an earlier tree not written again are removed."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.written: set[Path] = set()
        self.changed: set[Path] = set()

    def write(self, relative: str, data: bytes) -> None:
        path = self.root / relative
        self.written.add(path)
        if path.is_file() and path.read_bytes() == data:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        self.changed.add(path)

    def copy(self, source: Path, relative: str) -> None:
        files = sorted(source.rglob("*")) if source.is_dir() else [source]
        for file in files:
            if file.is_file():
                inner = file.relative_to(source).as_posix() if source.is_dir() else ""
                self.write(f"{relative}/{inner}".rstrip("/"), file.read_bytes())

    def finish(self, keep: tuple[str, ...], chapters: set[Path]) -> None:
        """Remove the files not written (but those named in ``keep``); if a file other than a
        chapter changed or went, mark every file as new."""
        gone = False
        for path in sorted(self.root.rglob("*"), reverse=True):
            if path.is_file() and path not in self.written and path.name not in keep:
                path.unlink()
                gone = True
            elif path.is_dir() and not any(path.iterdir()):
                path.rmdir()
        if gone or self.changed - chapters:
            for path in self.written:
                os.utime(path)


def write_source_tree(out: Path) -> dict[str, int]:
    """The student edition's book in ``out``; returns the solutions removed per chapter."""
    tree = _Tree(out)
    for path in (ROOT / "book").iterdir():
        if path.suffix == ".ipynb" or path.name.startswith("."):
            continue
        tree.copy(path, f"book/{path.name}")
    removed = {}
    for chapter in chapters():
        notebook = nbformat.read(chapter, as_version=4)
        removed[chapter.name] = strip_solutions(notebook, chapter.name)
        text = nbformat.writes(notebook)
        tree.write(f"book/{chapter.name}", (text if text.endswith("\n") else text + "\n").encode())

    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    config["title"] = f"{config['title']} ({EDITION})"
    config["repository"]["branch"] = STUDENT_BRANCH
    # The notebooks carry the chapters' outputs of the cells they keep; the tests execute them.
    config["execute"]["execute_notebooks"] = "off"
    # The student edition has no Korean counterpart for a language switch to lead to.
    config["sphinx"]["config"]["html_context"].pop("edition_switch", None)
    # The footer's link to the PDF names the student edition's PDF.
    footer = config["html"].get("extra_footer", "")
    config["html"]["extra_footer"] = footer.replace(f"/{PDF}", f"/{STUDENT_PDF}").replace(
        "The whole book as one PDF", "The student edition as one PDF"
    )
    text = "# Generated by tools/student_edition.py from the book's _config.yml: do not edit.\n"
    text += yaml.safe_dump(config, sort_keys=False, allow_unicode=True)
    tree.write("_config.yml", text.encode("utf-8"))
    tree.copy(ROOT / "_toc.yml", "_toc.yml")
    # conf.py is written by `jupyter-book config sphinx` from the files above.
    tree.finish(keep=("conf.py",), chapters={out / "book" / name for name in removed})
    return removed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the folder to write (replaced if it exists)")
    args = parser.parse_args()
    try:
        removed = write_source_tree(args.out)
    except GateError as error:
        print(f"student_edition: {error}", file=sys.stderr)
        raise SystemExit(1) from None
    if sum(removed.values()) == 0:
        print("student_edition: no solution gates found in any chapter", file=sys.stderr)
        raise SystemExit(1)
    summary = ", ".join(f"{name}: {count}" for name, count in removed.items())
    print(f"student_edition: wrote {args.out} (solutions removed: {summary})")


if __name__ == "__main__":
    main()
