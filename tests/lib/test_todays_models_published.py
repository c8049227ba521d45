"""Chapter 11's table, checked against the same files typed by another hand, and against
transformers.

The chapter types, for each row of its table, the keys of the cited ``config.json`` that set
positions (``PUBLISHED``, and ``CARDS`` for the entries model cards recommend) and computes every
column from them. ``tests/lib/test_rope_parity.py`` typed the rotary entries of several of the same
models from the same files, each with its source: where both have a model, the two must agree,
head size and ``max_position_embeddings`` included where the chapter types them. And for every
row, the frequencies and the attention factor that pe_lib computes from each layer type's entry,
as transformers 5.23's configuration class reads the row, equal those of transformers' own
``ROPE_INIT_FUNCTIONS``: the table's scaling column and the chapter's count of the rows that
sharpen the softmax rest on what the models run.
"""

from __future__ import annotations

import html
import math
from pathlib import Path
from typing import Any

import nbformat
import pytest
import torch

transformers = pytest.importorskip("transformers")
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS  # noqa: E402

from pe_lib.models.layer_pattern import layer_pattern  # noqa: E402
from pe_lib.rope.scaling import rope_frequencies  # noqa: E402
from tests.lib.test_rope_parity import MODELS  # noqa: E402

CHAPTER = Path(__file__).resolve().parents[2] / "book" / "11_todays_models.ipynb"
#: float32 rounding of transformers' frequencies, relative (as the parity tests allow).
RTOL = 2e-6
#: The chapter's rows with a parity entry: chapter row -> (parity id, layer type or None).
SAME_MODEL = {
    "Llama 3.1 8B": ("llama-3.1-8b", None),
    "Llama 3.2 1B": ("llama-3.2-1b", None),
    "Llama 4 Scout": ("llama-4-scout", None),
    "Qwen2.5 7B": ("qwen2.5-7b-yarn", None),  # the model card's entry
    "DeepSeek-V3": ("deepseek-v3", None),
    "gpt-oss 20b": ("gpt-oss-20b", None),
    "Gemma 3 4B": ("gemma-3-4b-full_attention", "full_attention"),
    "Phi-3 mini 128k": ("phi-3-mini-128k", None),
}


@pytest.fixture(scope="module")
def chapter() -> dict[str, Any]:
    """The names the chapter's table cell defines (the cell run as it is, without display)."""
    notebook = nbformat.read(CHAPTER, as_version=4)
    (source,) = [
        cell.source
        for cell in notebook.cells
        if cell.cell_type == "code" and "PUBLISHED = {" in cell.source
    ]
    names: dict[str, Any] = {
        "html": html,
        "math": math,
        "torch": torch,
        "transformers": transformers,
        "layer_pattern": layer_pattern,
        "HTML": str,
        "display": lambda *args: None,
        "print": lambda *args, **kwargs: None,
    }
    exec(compile(source, str(CHAPTER), "exec"), names)
    return names


def _named(entry: dict[str, Any]) -> dict[str, Any]:
    """An entry with its method under ``rope_type`` (``type`` is the older name) and the
    LongRoPE lists left out (the chapter does not type them)."""
    entry = {k: v for k, v in entry.items() if k not in ("short_factor", "long_factor")}
    if "type" in entry:
        entry["rope_type"] = entry.pop("type")
    return entry


@pytest.mark.parametrize("model", sorted(SAME_MODEL))
def test_rows_agree_with_the_entries_the_parity_tests_typed(chapter, model):
    parity_id, layer_type = SAME_MODEL[model]
    _, theirs, head_dim, max_positions, _ = next(row for row in MODELS if row[0] == parity_id)
    config = chapter["config_of"](model, card=True)
    ours = config.rope_parameters if layer_type is None else config.rope_parameters[layer_type]
    theirs = theirs if layer_type is None else theirs[layer_type]
    wanted = _named(theirs)
    got = {k: v for k, v in _named(dict(ours)).items() if k in wanted}
    assert got == wanted, model
    rotary = config.qk_rope_head_dim if model == "DeepSeek-V3" else chapter["head_size"](config)
    assert rotary == head_dim, model
    if "max_position_embeddings" in chapter["PUBLISHED"][model]:
        assert config.max_position_embeddings == max_positions, model


def test_every_row_is_read(chapter):
    assert [row[0] for row in chapter["ROWS"]] == list(chapter["PUBLISHED"])
    assert len(chapter["ROWS"]) == 15 and set(chapter["CARDS"]) <= set(chapter["PUBLISHED"])


@pytest.mark.parametrize("card", [False, True], ids=["shipped", "card"])
def test_pe_lib_reads_each_row_as_transformers_runs_it(chapter, card):
    """Frequencies and attention factor of every scaled entry of every row, per layer type."""
    compared = 0
    for model in chapter["PUBLISHED"]:
        if card and model not in chapter["CARDS"]:
            continue
        config = chapter["config_of"](model, card=card)
        for layer_type, entry in chapter["entries"](config):
            kind = entry["rope_type"]
            if kind == "default":
                continue
            theta, factor = ROPE_INIT_FUNCTIONS[kind](config, layer_type=layer_type)
            length = config.max_position_embeddings  # LongRoPE: its long lists
            if kind == "longrope":
                theta, factor = ROPE_INIT_FUNCTIONS[kind](
                    config, seq_len=length, layer_type=layer_type
                )
            ours, our_factor = rope_frequencies(
                chapter["head_size"](config),
                scaling=entry,
                seq_len=length,
                max_position_embeddings=length,
            )
            torch.testing.assert_close(ours, theta.double(), rtol=RTOL, atol=0.0, msg=model)
            assert math.isclose(our_factor, factor, rel_tol=1e-12), model
            compared += 1
    assert compared == (2 if card else 8)


def test_layer_patterns_are_transformers_layer_types(chapter):
    """For each row whose configuration class names its layers' kinds, pe_lib's pattern (read
    from the keys as the file writes them) has the same kinds and windows."""
    checked = 0
    for model, keys in chapter["PUBLISHED"].items():
        config = chapter["config_of"](model)
        kinds = getattr(config, "layer_types", None)
        if not kinds:
            continue
        pattern = layer_pattern(keys)
        assert [layer.attention for layer in pattern] == [
            kind.removesuffix("_attention") for kind in kinds
        ], model
        windows = {layer.window for layer in pattern if layer.attention == "sliding"}
        assert windows <= {getattr(config, "sliding_window", None)}, model
        checked += 1
    assert checked >= 6
