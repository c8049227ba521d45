"""Facts the chapters state about the project itself agree with the project.

Chapter 8 says which transformers version the library is compared with and on which models'
entries; those facts live in ``requirements.txt`` and ``tests/lib/test_rope_parity.py``, so a
changed pin or a dropped model fails here rather than leaving the prose behind.
"""

from __future__ import annotations

import re

import nbformat

from tests.book_sources import ROOT

CHAPTER_8 = ROOT / "book" / "08_stretching_rope.ipynb"
PARITY = ROOT / "tests" / "lib" / "test_rope_parity.py"

#: The models chapter 8 names, each with the prefix of its id in test_rope_parity.MODELS.
NAMED_MODELS = {
    "Llama 3.1": "llama-3.1",
    "Llama 3.2": "llama-3.2",
    "Llama 4": "llama-4",
    "Qwen2.5": "qwen2.5",
    "DeepSeek-V3": "deepseek-v3",
    "gpt-oss": "gpt-oss",
    "Gemma 3": "gemma-3",
    "Gemma 4": "gemma-4",
    "Phi-3": "phi-3",
}


def _prose(path) -> str:
    notebook = nbformat.read(path, as_version=4)
    text = "\n".join(c.source for c in notebook.cells if c.cell_type == "markdown")
    return " ".join(text.split())


def test_chapter_8_names_the_pinned_transformers_version() -> None:
    pin = re.search(r"^transformers==(\d+)\.(\d+)\.", (ROOT / "requirements.txt").read_text(), re.M)
    assert pin, "requirements.txt pins no transformers version"
    version = f"{pin[1]}.{pin[2]}"
    prose = _prose(CHAPTER_8)
    assert f"transformers {version}" in prose and f"pins, {version}" in prose
    other = re.compile(rf"transformers (?!{re.escape(version)}\b)\d+\.\d+")
    assert not other.search(prose), "chapter 8 names another transformers version"


def test_models_chapter_8_names_are_the_ones_the_parity_tests_cover() -> None:
    prose = _prose(CHAPTER_8)
    sentence = re.search(r"compare the two on the entries of (.+?) The few values", prose)
    assert sentence, "chapter 8 no longer says which models the tests compare"
    named = {name for name in NAMED_MODELS if name in sentence[1]}
    assert named == set(NAMED_MODELS), f"named in chapter 8: {sorted(named)}"
    from tests.lib.test_rope_parity import MODELS

    ids = [row[0] for row in MODELS]
    missing = [
        n for n, prefix in NAMED_MODELS.items() if not any(i.startswith(prefix) for i in ids)
    ]
    assert not missing, f"chapter 8 names models the parity tests do not cover: {missing}"
    # Phi-3's lists are stand-ins, and the chapter says so.
    assert "Phi-3's with stand-in lists" in sentence[1]
