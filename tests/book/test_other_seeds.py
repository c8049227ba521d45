"""Chapter 9's claims hold on other seeds than its own.

The chapter names its seeds once, ``SEEDS = (...)`` in its imports cell, and asserts every claim
on each of them. The claims were picked on the seeds of ``PICKED_ON`` in
``benchmarks/ch9_seeds.py`` (the chapter's among them). Here the chapter is executed top to
bottom with that line replaced by other seeds, none of them used in picking: a claim that held
only on the seeds it was picked on fails here. The solution cells run too (they use the same
seeds).
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = pytest.mark.other_seeds

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = ROOT / "book" / "09_train_short_test_long.ipynb"
SEEDS_LINE = re.compile(r"^SEEDS = \((?P<seeds>[0-9, ]+)\)$", re.MULTILINE)
OTHER_SEEDS = (48, 49, 50, 51, 52)


def _picked_on() -> tuple[int, ...]:
    """``PICKED_ON`` of ``benchmarks/ch9_seeds.py``, the seeds the claims were picked on."""
    spec = importlib.util.spec_from_file_location("ch9_seeds", ROOT / "benchmarks" / "ch9_seeds.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return tuple(module.PICKED_ON)


def _chapter_seeds(notebook: nbformat.NotebookNode) -> tuple[int, ...]:
    found = [m for cell in notebook.cells if cell.cell_type == "code"
             for m in SEEDS_LINE.finditer(cell.source)]  # fmt: skip
    assert len(found) == 1, "chapter 9 must name its seeds once, as SEEDS = (0, 1, ...)"
    return tuple(int(s) for s in found[0]["seeds"].split(","))


def test_claims_hold_on_other_seeds(tmp_path: Path) -> None:
    notebook = nbformat.read(CHAPTER, as_version=4)
    seeds = _chapter_seeds(notebook)
    picked_on = _picked_on()
    assert len(seeds) >= 5 and set(seeds) <= set(picked_on) and len(picked_on) >= 40
    assert len(OTHER_SEEDS) >= 5 and not set(OTHER_SEEDS) & set(picked_on)
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
