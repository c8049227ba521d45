"""Chapter 11's claims about the base of RoPE hold on other seeds than its own.

The chapter trains chapter 8's toy with RoPE at bases 10, 10,000 and 1,000,000 once per seed of
its ``SEEDS = (...)`` (named once, in its imports cell) and asserts every claim it makes about
them on each seed. The claims were picked on the seeds of ``PICKED_ON``: running this file as a
script executes the chapter with those seeds and prints, for each claim, the worst seed's value
beside the claim's threshold. Here the chapter is executed top to bottom with ``OTHER_SEEDS``
instead, none of them used in picking: a claim that held only on the seeds it was picked on
fails here.

Run the picking again: ``.venv/bin/python -m tests.book.test_chapter11_other_seeds [seeds]``
(a few minutes on two cores; seeds as ``0-19`` or ``0,1,2``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest

from tests.seed_rerun import chapter_seeds, holds, parse_seeds, print_margins, run_with

pytestmark = pytest.mark.other_seeds

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = ROOT / "book" / "11_todays_models.ipynb"
PICKED_ON = tuple(range(20))
OTHER_SEEDS = (100, 101, 102, 103, 104)

#: Each claim of the chapter's checking cell as (what, the worst seed's value as the chapter's
#: names compute it, the side the claim holds on, its threshold); for the report only: the
#: chapter's own asserts are the check.
CLAIMS = (
    ("every base at L", "min(accuracy(b, L).min() for b in BASES)", ">", 0.98),
    (
        "base 10 minus 10,000 at 2L",
        "(accuracy(10.0, 2 * L) - accuracy(1e4, 2 * L)).min()",
        ">",
        0.25,
    ),
    (
        "base 10 minus 10,000 at 4L",
        "(accuracy(10.0, 4 * L) - accuracy(1e4, 4 * L)).min()",
        ">",
        0.25,
    ),
    (
        "base 1e6 minus 10,000 at 2L",
        "(accuracy(1e6, 2 * L) - accuracy(1e4, 2 * L)).min()",
        ">",
        0.25,
    ),
    (
        "base 1e6 minus 10,000 at 4L",
        "(accuracy(1e6, 4 * L) - accuracy(1e4, 4 * L)).min()",
        ">",
        0.25,
    ),
    ("base 10,000 at 2L", "accuracy(1e4, 2 * L).max()", "<", 0.7),
    ("base 10,000 at 4L", "accuracy(1e4, 4 * L).max()", "<", 0.4),
    ("base 1e6 at 2L", "accuracy(1e6, 2 * L).min()", ">", 0.98),
    ("base 1e6 at 4L", "accuracy(1e6, 4 * L).max()", "<", 0.9),
    ("base 10 at 2L", "accuracy(10.0, 2 * L).min()", ">", 0.85),
    ("base 10 at 4L", "accuracy(10.0, 4 * L).min()", ">", 0.75),
    ("base 10,000, positions 32-63", "span(1e4, L, 2 * L - 1).max()", "<", 0.4),
    ("base 1e6, positions 32-95", "span(1e6, L, 95).min()", ">", 0.9),
    ("base 1e6, positions 104-127", "span(1e6, 104, 4 * L - 1).max()", "<", 0.3),
)


def test_claims_hold_on_other_seeds() -> None:
    seeds = chapter_seeds(nbformat.read(CHAPTER, as_version=4))
    assert len(seeds) >= 5 and set(seeds) <= set(PICKED_ON)
    assert len(OTHER_SEEDS) >= 5 and not set(OTHER_SEEDS) & set(PICKED_ON)
    printed, worst = run_with(CHAPTER, OTHER_SEEDS, CLAIMS)
    assert f"the claims about the bases: checked on each of {len(OTHER_SEEDS)} seeds" in printed
    for claim in CLAIMS:  # the chapter asserted them; the report agrees
        assert holds(worst, claim), claim[0]


if __name__ == "__main__":
    chosen = parse_seeds(sys.argv[1]) if len(sys.argv) > 1 else PICKED_ON
    print_margins(chosen, run_with(CHAPTER, chosen, CLAIMS)[1], CLAIMS)
