"""Chapter 14's claims about the toy task hold on other seeds than its own.

The chapter trains chapter 7's toy model with no positions, RoPE, CoPE, FoX and PaTH once per
seed of its ``SEEDS = (...)`` (named once, in the toy task's cell) and asserts every claim it
makes about them on each seed. The claims were picked on the seeds of ``PICKED_ON``: running this
file as a script executes the chapter with those seeds and prints, for each claim, the worst
seed's value beside the claim's threshold. Here the chapter is executed top to bottom with
``OTHER_SEEDS`` instead, none of them used in picking: a claim that held only on the seeds it was
picked on fails here.

Run the picking again: ``.venv/bin/python -m tests.book.test_chapter14_other_seeds [seeds]``
(about a minute per three seeds on two cores; seeds as ``0-9`` or ``0,1,2``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest

from tests.seed_rerun import chapter_seeds, holds, parse_seeds, print_margins, run_with

pytestmark = pytest.mark.other_seeds

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = ROOT / "book" / "14_positions_without_rotation.ipynb"
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


def test_claims_hold_on_other_seeds() -> None:
    seeds = chapter_seeds(nbformat.read(CHAPTER, as_version=4))
    assert len(seeds) >= 3 and set(seeds) <= set(PICKED_ON)
    assert len(OTHER_SEEDS) >= 5 and not set(OTHER_SEEDS) & set(PICKED_ON)
    printed, worst = run_with(CHAPTER, OTHER_SEEDS, CLAIMS)
    assert f"the toy's claims: checked on each of {len(OTHER_SEEDS)} seeds" in printed
    for claim in CLAIMS:  # the chapter asserted them; the report agrees
        assert holds(worst, claim), claim[0]


if __name__ == "__main__":
    chosen = parse_seeds(sys.argv[1]) if len(sys.argv) > 1 else PICKED_ON
    print_margins(chosen, run_with(CHAPTER, chosen, CLAIMS)[1], CLAIMS)
