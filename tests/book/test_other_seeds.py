"""Chapter 9's claims hold on other seeds than its own.

The chapter names its seeds once, ``SEEDS = (...)`` in its imports cell, and asserts every claim
on each of them. Here the chapter is executed top to bottom with that line replaced by other
seeds, none of them the chapter's: a claim that held only on the chapter's seeds fails here. The
solution cells run too (they use the same seeds).
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = pytest.mark.other_seeds

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = ROOT / "book" / "09_train_short_test_long.ipynb"
SEEDS_LINE = re.compile(r"^SEEDS = \((?P<seeds>[0-9, ]+)\)$", re.MULTILINE)
OTHER_SEEDS = (10, 11, 12, 13, 14)


def _chapter_seeds(notebook: nbformat.NotebookNode) -> tuple[int, ...]:
    found = [m for cell in notebook.cells if cell.cell_type == "code"
             for m in SEEDS_LINE.finditer(cell.source)]  # fmt: skip
    assert len(found) == 1, "chapter 9 must name its seeds once, as SEEDS = (0, 1, ...)"
    return tuple(int(s) for s in found[0]["seeds"].split(","))


def test_claims_hold_on_other_seeds(tmp_path: Path) -> None:
    notebook = nbformat.read(CHAPTER, as_version=4)
    seeds = _chapter_seeds(notebook)
    assert len(seeds) >= 5 and not set(OTHER_SEEDS) & set(seeds)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.source = SEEDS_LINE.sub(f"SEEDS = {OTHER_SEEDS}", cell.source)
    assert _chapter_seeds(notebook) == OTHER_SEEDS
    NotebookClient(
        notebook, timeout=600, resources={"metadata": {"path": str(CHAPTER.parent)}}
    ).execute()
    printed = "".join(
        output.get("text", "")
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
    )
    assert f"checked on each of {len(OTHER_SEEDS)} seeds" in printed
