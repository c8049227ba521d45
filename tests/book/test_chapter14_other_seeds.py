"""Chapter 14's claims about the toy task hold on other seeds than its own.

The chapter trains chapter 7's toy model with no positions, RoPE, CoPE, FoX and PaTH once per
seed of its ``SEEDS = (...)`` (named once, in the toy task's cell) and asserts every claim it
makes about them on each seed. The claims were picked on the seeds of ``PICKED_ON``: running this
file as a script executes the chapter with those seeds and prints, for each claim, the worst
seed's value beside the claim's threshold. Here the chapter is executed top to bottom with
``OTHER_SEEDS`` instead, none of them used in picking: a claim that held only on the seeds it was
picked on fails here.

Run the picking again: ``.venv/bin/python tests/book/test_chapter14_other_seeds.py [seeds]``
(about a minute per three seeds on two cores; seeds as ``0-9`` or ``0,1,2``).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = pytest.mark.other_seeds

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = ROOT / "book" / "14_positions_without_rotation.ipynb"
SEEDS_LINE = re.compile(r"^SEEDS = \((?P<seeds>[0-9, ]+)\)$", re.MULTILINE)
PICKED_ON = tuple(range(10))
OTHER_SEEDS = (10, 11, 12, 13, 14)

#: Each claim of the chapter's checking cell as (what, the worst seed's value as the chapter's
#: names compute it, the side the claim holds on, its threshold); for the report only: the
#: chapter's own asserts are the check.
CLAIMS = (
    *(
        (f"{kind} at 32", f"min(accuracy[{kind!r}, 32])", ">", 0.95)
        for kind in ("rope", "cope", "fox", "path")
    ),
    ("none at 32", "max(accuracy['none', 32])", "<", 0.3),
    ("fox at 128", "min(accuracy['fox', 128])", ">", 0.95),
    ("path at 128", "min(accuracy['path', 128])", ">", 0.95),
    ("rope at 128", "max(accuracy['rope', 128])", "<", 0.4),
    ("cope at 64", "min(accuracy['cope', 64])", ">", 0.8),
    ("cope at 128, lowest", "min(accuracy['cope', 128])", ">", 0.5),
    ("cope at 128, highest", "max(accuracy['cope', 128])", "<", 0.9),
)


def _chapter_seeds(notebook: nbformat.NotebookNode) -> tuple[int, ...]:
    found = [m for cell in notebook.cells if cell.cell_type == "code"
             for m in SEEDS_LINE.finditer(cell.source)]  # fmt: skip
    assert len(found) == 1, "chapter 14 must name its seeds once, as SEEDS = (0, 1, ...)"
    return tuple(int(s) for s in found[0]["seeds"].split(","))


def run_with(seeds: tuple[int, ...]) -> tuple[str, dict[str, float]]:
    """Executes the chapter with ``seeds`` in place of its own; returns what its cells printed
    and the worst seed's value of each claim."""
    notebook = nbformat.read(CHAPTER, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.source = SEEDS_LINE.sub(f"SEEDS = {tuple(seeds)}", cell.source)
    assert _chapter_seeds(notebook) == tuple(seeds)
    values = ", ".join(f"{name!r}: float({expression})" for name, expression, _, _ in CLAIMS)
    notebook.cells.append(
        nbformat.v4.new_code_cell(f"import json\nprint(json.dumps({{{values}}}))")
    )
    NotebookClient(
        notebook, timeout=900, resources={"metadata": {"path": str(CHAPTER.parent)}}
    ).execute()
    *chapter, report = (cell for cell in notebook.cells if cell.cell_type == "code")
    printed = "".join(
        output.get("text", "") for cell in chapter for output in cell.get("outputs", [])
    )
    return printed, json.loads("".join(output.get("text", "") for output in report.outputs))


def test_claims_hold_on_other_seeds() -> None:
    seeds = _chapter_seeds(nbformat.read(CHAPTER, as_version=4))
    assert len(seeds) >= 3 and set(seeds) <= set(PICKED_ON)
    assert len(OTHER_SEEDS) >= 5 and not set(OTHER_SEEDS) & set(PICKED_ON)
    printed, worst = run_with(OTHER_SEEDS)
    assert f"the toy's claims: checked on each of {len(OTHER_SEEDS)} seeds" in printed
    for name, _, side, threshold in CLAIMS:  # the chapter asserted them; the report agrees
        assert worst[name] > threshold if side == ">" else worst[name] < threshold, name


def _seeds(text: str) -> tuple[int, ...]:
    if "-" in text:
        first, last = (int(part) for part in text.split("-"))
        return tuple(range(first, last + 1))
    return tuple(int(part) for part in text.split(","))


if __name__ == "__main__":
    chosen = _seeds(sys.argv[1]) if len(sys.argv) > 1 else PICKED_ON
    _, worst = run_with(chosen)
    print(f"worst seed of {len(chosen)} ({chosen[0]} to {chosen[-1]}) against each threshold:")
    for name, _, side, threshold in CLAIMS:
        margin = worst[name] - threshold if side == ">" else threshold - worst[name]
        print(f"  {name:<22} {worst[name]:.3f} {side} {threshold:<5}  margin {margin:+.3f}")
