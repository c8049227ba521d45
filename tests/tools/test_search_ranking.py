"""book/_ext/search_ranking.py: how densely each page's prose uses each word, abbreviations
counted for the words they stand for, written for the search page's scorer; in a small Sphinx
build and on the functions that do the counting."""

from __future__ import annotations

import json

import pytest
import search_ranking
from conftest import build_site
from docutils import nodes

CONF = """
extensions = ["search_ranking"]
html_static_path = []
"""
INDEX = """Index
=====

.. toctree::

   rope
   other

Words alone.
"""
ROPE = """RoPE
====

Rotary position embedding (RoPE) turns each pair. RoPE keeps distances; RoPE is relative, and
RoPE extends.

.. code-block:: python

   rotary = rotary + rotary  # code is not prose: not counted
"""
OTHER = """Other
=====

The rotary idea is mentioned here, rotary once more, and rotary again, among many other words
that make this page long, longer than the page about it, so that it uses the word less densely.
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = build_site(
        tmp_path_factory.mktemp("site"),
        CONF,
        {"index.rst": INDEX, "rope.rst": ROPE, "other.rst": OTHER},
    )
    text = (out / "_static" / search_ranking.WEIGHTS_FILE).read_text(encoding="utf-8")
    prefix = "window.peSearchWeights = "
    assert text.startswith(prefix)
    weights = text.splitlines()[0]
    return out, json.loads(weights[len(prefix) :].strip().rstrip(";"))


def test_the_page_about_a_word_uses_it_most_densely(built) -> None:
    """ "rotary" (stem "rotari") is written once on the RoPE page, three times on the other, but
    each "RoPE" counts for it: the RoPE page is the densest."""
    _, table = built
    assert set(table["rotari"]) == {"rope", "other"}
    assert table["rotari"]["rope"] > table["rotari"]["other"] > 0


def test_only_prose_is_counted() -> None:
    """Code, a cell's output and math hold words no reader reads as the page's prose."""
    document = nodes.section(
        "",
        nodes.paragraph("", "", nodes.Text("rotary prose"), nodes.literal("", "rotary_dim")),
        nodes.literal_block("", "rotary = 1"),
        nodes.container("", nodes.paragraph("", "rotary printed"), classes=["cell_output"]),
        nodes.paragraph("", "", nodes.math("", "\\theta")),
    )
    assert search_ranking._prose(document) == ["rotary prose"]


def test_the_scorer_is_sphinxs_search_scorer(built) -> None:
    """The scorer is inlined in the search page's language_data.js (html_search_scorer)."""
    out, _ = built
    data = (out / "_static" / "language_data.js").read_text(encoding="utf-8")
    assert "peSearchWeights" in data and "pageBoost" in data


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("RoPE (rotary position embedding) turns", {"RoPE": ["rotary", "position", "embedding"]}),
        ("as rotary position embedding (RoPE) does", {"RoPE": ["rotary", "position", "embedding"]}),
        (
            "ALiBi (attention with linear biases) adds",
            {"ALiBi": ["attention", "with", "linear", "biases"]},
        ),
        (
            "the bias of attention with linear biases (ALiBi)",
            {"ALiBi": ["attention", "with", "linear", "biases"]},
        ),
        ("두 방식은 회전 위치 임베딩(RoPE)이다", {"RoPE": ["회전", "위치", "임베딩"]}),
        # Not definitions: a number in brackets, words that do not start with its letter.
        ("SEEDS (20, 21, 22) were used", {}),
        ("YaRN (the method of chapter 8) stretches", {}),
    ],
)
def test_abbreviations(text: str, expected: dict[str, list[str]]) -> None:
    assert search_ranking.abbreviations(text) == expected


def test_an_abbreviation_counts_once_for_each_word_it_stands_for() -> None:
    words = {"a": (1000, {"rope": 5, "rotari": 1}), "b": (1000, {"rotari": 4, "rope": 0})}
    table = search_ranking.weights(words, {"a": {"rope": ["rotari", "posit", "embed"]}})
    assert table["rotari"] == {"a": 6.0, "b": 4.0}
    assert table["posit"] == {"a": 5.0}
    # Under MIN_COUNT uses, a page is left out.
    assert "embed" not in search_ranking.weights({"c": (1000, {"embed": 2})}, {})


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("wavelengths?", "wavelength"),
        ("frequenc(?:y|ies)", "frequency"),
        ("train(?:s|ed|ing)?", "train"),
        ("positional encodings?|position encodings?", "positional encoding"),
        ("(?<!on )papers?", "paper"),
        ("length generali[sz]ation", "length generalisation"),
        (r"tables? \d+(?: and \d+)?|article's table", None),
    ],
)
def test_a_glossary_pattern_read_as_its_first_english_form(pattern: str, expected) -> None:
    assert search_ranking._literal(pattern) == expected


def test_the_glossary_gives_the_english_word_of_each_korean_term() -> None:
    """The Korean edition counts 파장 for "wavelength", as the book's glossary translates it."""
    terms = search_ranking.glossary()
    assert terms["파장"] == "wavelength"
    assert all(len(korean.split()) == 1 for korean in terms)
