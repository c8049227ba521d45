"""A chapter executed with other seeds than its own ``SEEDS = (...)``, and the worst seed's value
of each of its claims: what the other-seeds tests of chapters 11 and 14 share.

A claim is ``(what, expression, side, threshold)``: the expression computes, in the chapter's own
names, the worst seed's value; ``side`` is ``">"`` or ``"<"``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

import nbformat
from nbclient import NotebookClient

SEEDS_LINE = re.compile(r"^SEEDS = \((?P<seeds>[0-9, ]+)\)$", re.MULTILINE)
Claim = tuple[str, str, str, float]


def chapter_seeds(notebook: nbformat.NotebookNode) -> tuple[int, ...]:
    """The seeds a chapter names, once, as ``SEEDS = (0, 1, ...)``."""
    found = [m for cell in notebook.cells if cell.cell_type == "code"
             for m in SEEDS_LINE.finditer(cell.source)]  # fmt: skip
    assert len(found) == 1, "a chapter must name its seeds once, as SEEDS = (0, 1, ...)"
    return tuple(int(s) for s in found[0]["seeds"].split(","))


def run_with(
    chapter: Path, seeds: Sequence[int], claims: Sequence[Claim]
) -> tuple[str, dict[str, float]]:
    """Executes ``chapter`` with ``seeds`` in place of its own; returns what its cells printed
    and the worst seed's value of each claim."""
    notebook = nbformat.read(chapter, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.source = SEEDS_LINE.sub(f"SEEDS = {tuple(seeds)}", cell.source)
    assert chapter_seeds(notebook) == tuple(seeds)
    values = ", ".join(f"{name!r}: float({expression})" for name, expression, _, _ in claims)
    notebook.cells.append(
        nbformat.v4.new_code_cell(f"import json\nprint(json.dumps({{{values}}}))")
    )
    NotebookClient(
        notebook, timeout=900, resources={"metadata": {"path": str(chapter.parent)}}
    ).execute()
    *cells, report = (cell for cell in notebook.cells if cell.cell_type == "code")
    printed = "".join(
        output.get("text", "") for cell in cells for output in cell.get("outputs", [])
    )
    return printed, json.loads("".join(output.get("text", "") for output in report.outputs))


def holds(worst: dict[str, float], claim: Claim) -> bool:
    name, _, side, threshold = claim
    return worst[name] > threshold if side == ">" else worst[name] < threshold


def parse_seeds(text: str) -> tuple[int, ...]:
    """Seeds written as ``0-19`` or ``0,1,2``."""
    if "-" in text:
        first, last = (int(part) for part in text.split("-"))
        return tuple(range(first, last + 1))
    return tuple(int(part) for part in text.split(","))


def print_margins(chosen: Sequence[int], worst: dict[str, float], claims: Sequence[Claim]) -> None:
    """Each claim's worst seed beside its threshold, as the picking reports them."""
    width = max(len(name) for name, *_ in claims) + 2
    print(f"worst seed of {len(chosen)} ({chosen[0]} to {chosen[-1]}) against each threshold:")
    for name, _, side, threshold in claims:
        margin = worst[name] - threshold if side == ">" else threshold - worst[name]
        print(f"  {name:<{width}} {worst[name]:.3f} {side} {threshold:<5}  margin {margin:+.3f}")
