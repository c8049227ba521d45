"""The student edition (``make student``): every exercise, no solution, notebooks that run.

Distinctive lines of every gated solution are read from the full chapters
(``book_sources.solution_lines``). Each must be found in the full edition (so that the search
is not vacuous) and nowhere in the student edition: its HTML pages, its ``_sources`` (what the
download button serves), its notebooks and its PDF. Run with ``make editions-test``.
"""

from __future__ import annotations

import os
import re
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
from book_sources import (
    ROOT,
    chapters,
    html_text,
    normalise,
    notebook_text,
    pdf_text,
    solution_lines,
    text_outside_solutions,
    titles,
    toc_documents,
)
from nbclient import NotebookClient

pytestmark = pytest.mark.editions

STUDENT = ROOT / "_build" / "student"
FULL_HTML = ROOT / "_build" / "html"
FULL_PDF = ROOT / "_build" / "pdf" / "book.pdf"
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
STUDENT_BRANCH = "student"


def _require(*paths: Path) -> None:
    for path in paths:
        if not path.exists():
            (pytest.fail if IN_CI else pytest.skip)(f"no {path}: run `make pdf student`")


@pytest.fixture(scope="module")
def solutions() -> dict[str, list[str]]:
    """Per chapter, the lines of its solutions found nowhere else in the full edition: not in its
    rendered text outside the solution boxes, not in the sources outside the gates."""
    _require(FULL_HTML / "book")
    pages = [html_text(FULL_HTML / f"{doc}.html", leave_out="solution") for doc in toc_documents()]
    elsewhere = "\n".join(pages) + text_outside_solutions()
    # The PDF is searched without spaces (wrapped code may gain or lose one), so a line counts as
    # distinctive only if it is not found elsewhere without spaces either.
    squashed = re.sub(r"\s", "", elsewhere)
    found = {
        chapter.name: [
            line
            for line in solution_lines(chapter)
            if line not in elsewhere and re.sub(r"\s", "", line) not in squashed
        ]
        for chapter in chapters()
    }
    empty = [name for name, lines in found.items() if not lines]
    assert not empty, f"chapters whose solutions give no distinctive line: {empty}"
    return found


def _student_texts() -> dict[str, str]:
    """Every text a student sees, by where it is."""
    _require(STUDENT / "html" / "index.html", STUDENT / "pdf" / "book.pdf", STUDENT / "notebooks")
    texts = {}
    for page in (STUDENT / "html").rglob("*.html"):
        if "_static" not in page.parts:
            texts[page.relative_to(STUDENT).as_posix()] = html_text(page)
    for source in (STUDENT / "html" / "_sources").rglob("*"):
        if source.suffix == ".ipynb":
            texts[source.relative_to(STUDENT).as_posix()] = notebook_text(source)
        elif source.is_file():
            texts[source.relative_to(STUDENT).as_posix()] = normalise(source.read_text("utf-8"))
    for notebook in (STUDENT / "notebooks").glob("*.ipynb"):
        texts[notebook.relative_to(STUDENT).as_posix()] = notebook_text(notebook)
    texts["pdf/book.pdf"] = pdf_text(STUDENT / "pdf" / "book.pdf")
    return texts


def test_solution_lines_are_found_in_the_full_edition(solutions) -> None:
    """The search below is not vacuous: the same lines are in the full edition's HTML and PDF."""
    _require(FULL_HTML / "book", FULL_PDF)
    full_pdf = re.sub(r"\s", "", pdf_text(FULL_PDF))
    for name, lines in solutions.items():
        full_html = html_text(FULL_HTML / "book" / name.replace(".ipynb", ".html"))
        notebook = notebook_text(ROOT / "book" / name)
        assert all(line in notebook for line in lines), name
        in_html = [line for line in lines if line in full_html]
        in_pdf = [line for line in lines if re.sub(r"\s", "", line) in full_pdf]
        assert len(in_html) >= 0.8 * len(lines), f"{name}: {set(lines) - set(in_html)}"
        assert len(in_pdf) >= 0.8 * len(lines), f"{name}: {set(lines) - set(in_pdf)}"


def test_no_solution_anywhere_in_the_student_edition(solutions) -> None:
    texts = _student_texts()
    assert any(key.startswith("html/_sources/") for key in texts), "no _sources in the HTML"
    assert len([key for key in texts if key.startswith("notebooks/")]) == len(chapters())
    squashed_pdf = re.sub(r"\s", "", texts["pdf/book.pdf"])
    leaks = []
    for name, lines in solutions.items():
        for line in lines:
            leaks += [
                f"{name}: {line!r} in {where}" for where, text in texts.items() if line in text
            ]
            if re.sub(r"\s", "", line) in squashed_pdf:
                leaks.append(f"{name}: {line!r} in the PDF")
    assert not leaks, "solutions in the student edition:\n" + "\n".join(leaks[:40])


def test_every_exercise_is_in_the_student_edition() -> None:
    texts = _student_texts()
    pdf = re.sub(r"\s", "", texts["pdf/book.pdf"])
    missing = []
    for chapter in chapters():
        doc = f"book/{chapter.stem}"
        page = texts[f"html/{doc}.html"]
        notebook = texts[f"notebooks/{chapter.name}"]
        exercises = [title for title in titles(doc) if title.level == 0]
        assert exercises, f"{chapter.name} has no exercise"
        for title in exercises:
            for fragment in title.fragments():
                if fragment not in page or re.sub(r"\s", "", fragment) not in pdf:
                    missing.append(f"{chapter.name}: {fragment!r}")
            if title.text not in notebook:
                missing.append(f"{chapter.name}: {title.text!r} not in the notebook")
    assert not missing, "exercises missing from the student edition:\n" + "\n".join(missing)


def test_launch_and_source_links_name_the_student_notebooks() -> None:
    _require(STUDENT / "html" / "index.html")
    for chapter in chapters():
        page = (STUDENT / "html" / "book" / f"{chapter.stem}.html").read_text("utf-8")
        launches = re.findall(r'href="(https://(?:colab|mybinder)[^"]+)"', page)
        assert launches, f"{chapter.name}: no launch links"
        for url in launches:
            assert f"/{STUDENT_BRANCH}" in url and "/main" not in url, url
        download = re.search(r'href="([^"]*_sources/[^"]+\.ipynb)"', page)
        assert download, f"{chapter.name}: no notebook download"
        served = (STUDENT / "html" / "book" / download[1]).resolve()
        assert served.read_bytes() == (STUDENT / "notebooks" / chapter.name).read_bytes()


def _code(notebook: nbformat.NotebookNode) -> list[tuple[str, list]]:
    return [
        (cell.source, cell.get("outputs", []))
        for cell in notebook.cells
        if cell.cell_type == "code"
    ]


def _execute(notebook_path: Path, workdir: Path) -> list[str]:
    notebook = nbformat.read(notebook_path, as_version=4)
    client = NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(workdir)}}
    )
    try:
        client.execute()
    except Exception as error:  # noqa: BLE001 (the notebook's error, reported by name)
        return [f"{notebook_path.name}: {type(error).__name__}: {str(error)[-600:]}"]
    return []


def test_student_notebooks_run_top_to_bottom(tmp_path: Path) -> None:
    """Each student notebook runs in a fresh kernel. One whose code cells are the first code cells
    of its chapter, with the same stored outputs, runs exactly what nbval runs of the chapter (in
    `make test`, where the chapter runs top to bottom and its outputs are compared), so only the
    others are executed here, in a copy of the book's folder (for its data files).
    $PE_EXECUTE_STUDENT=1 executes every one."""
    _require(STUDENT / "notebooks", STUDENT / "src" / "book")
    notebooks = sorted((STUDENT / "notebooks").glob("*.ipynb"))
    assert [path.name for path in notebooks] == [path.name for path in chapters()]
    to_run = []
    for path in notebooks:
        student = _code(nbformat.read(path, as_version=4))
        chapter = _code(nbformat.read(ROOT / "book" / path.name, as_version=4))
        if os.environ.get("PE_EXECUTE_STUDENT") == "1" or student != chapter[: len(student)]:
            to_run.append(path)
    workdir = tmp_path / "book"
    shutil.copytree(STUDENT / "src" / "book", workdir, ignore=shutil.ignore_patterns("_static"))
    with ThreadPoolExecutor(max_workers=2) as pool:
        errors = [e for found in pool.map(lambda nb: _execute(nb, workdir), to_run) for e in found]
    assert not errors, "\n".join(errors)
