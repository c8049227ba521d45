"""pe_lib.pretrained.layout.detect_layout: which pairing a checkpoint's query and key rows were trained with.

The tests' tiny Llama (``tests/tiny_models.py``), trained briefly in transformers
(Hugging Face's row order, the ``"half"`` pairing) on text it can only predict through
positions: runs of ``PERIOD`` random tokens repeated, so that the next token is the one
``PERIOD - 1`` back. Its rows as trained are read as ``"half"``; the same rows in llama.cpp's GGUF
order as ``"interleaved"``, at the same perplexity; an untrained model gives no decisive verdict.
The margins (the perplexity ratio) were at least 24 on training seeds 0 to 7 against the
threshold of 2. The real SmolLM2, when its weights are fetched, shows chapter 10's gap.
"""

from __future__ import annotations

import math

import pytest
import torch
from tiny_models import TINY_LLAMA

from pe_lib import pretrained
from pe_lib.models.llama import LlamaSpec, half_rows_to_gguf
from pe_lib.pretrained.layout import LayoutVerdict, detect_layout

transformers = pytest.importorskip("transformers")

TINY = TINY_LLAMA
#: The training seed, the length of the repeated runs, the training steps.
SEED, PERIOD, STEPS = 0, 5, 200


def _repeated_runs(count: int, generator: torch.Generator) -> torch.Tensor:
    """``count`` rows of 40 tokens: ``PERIOD`` random tokens, repeated."""
    runs = torch.randint(0, TINY["vocab_size"], (count, PERIOD), generator=generator)
    return runs.repeat(1, 40 // PERIOD)


def _gguf_rows(weights: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    heads = {"q_proj": TINY["num_attention_heads"], "k_proj": TINY["num_key_value_heads"]}
    return {
        name: half_rows_to_gguf(tensor, heads[name.split(".")[-2]])
        if name.endswith(("q_proj.weight", "k_proj.weight"))
        else tensor
        for name, tensor in weights.items()
    }


def _weights(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: tensor.detach().clone() for name, tensor in model.state_dict().items()}


@pytest.fixture(scope="module")
def tiny() -> tuple[LlamaSpec, dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """The spec, the trained weights and the untrained ones."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        torch.manual_seed(SEED)
        config = transformers.LlamaConfig(**TINY, tie_word_embeddings=True)
        model = transformers.LlamaForCausalLM(config)
        untrained = _weights(model)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        data = torch.Generator().manual_seed(SEED)
        for _ in range(STEPS):
            ids = _repeated_runs(16, data)
            loss = model(input_ids=ids, labels=ids).loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    finally:
        torch.set_num_threads(threads)
    return LlamaSpec.from_config(TINY), _weights(model), untrained


def _text() -> torch.Tensor:
    return _repeated_runs(4, torch.Generator().manual_seed(10_000))  # not a training batch


def test_rows_as_trained_read_as_half(tiny) -> None:
    spec, weights, _ = tiny
    verdict = detect_layout(spec, weights, _text())
    assert isinstance(verdict, LayoutVerdict)
    assert verdict.layout == "half" and verdict.decisive, verdict
    assert verdict.ratio == verdict.perplexity["interleaved"] / verdict.perplexity["half"] > 2
    assert "'half'" in str(verdict)


def test_gguf_rows_read_as_interleaved_at_the_same_perplexity(tiny) -> None:
    spec, weights, _ = tiny
    text = _text()
    hf = detect_layout(spec, weights, text)
    gguf = detect_layout(spec, _gguf_rows(weights), text)
    assert gguf.layout == "interleaved" and gguf.decisive, gguf
    assert math.isclose(gguf.perplexity["interleaved"], hf.perplexity["half"], rel_tol=1e-4)


def test_an_untrained_model_gives_no_decisive_verdict(tiny) -> None:
    spec, _, untrained = tiny
    verdict = detect_layout(spec, untrained, _text())
    assert not verdict.decisive and verdict.ratio < 2, verdict
    assert "not decisive" in str(verdict)


def test_bad_arguments_are_named(tiny) -> None:
    spec, weights, _ = tiny
    with pytest.raises(ValueError, match="ids must have shape"):
        detect_layout(spec, weights, torch.zeros(5, dtype=torch.int64))
    with pytest.raises(ValueError, match="seq_len >= 2"):
        detect_layout(spec, weights, torch.zeros(1, 1, dtype=torch.int64))
    with pytest.raises(ValueError, match="threshold"):
        detect_layout(spec, weights, _text(), threshold=1.0)
    with pytest.raises(TypeError, match="spec"):
        detect_layout(TINY, weights, _text())  # type: ignore[arg-type]


@pytest.mark.integration
@pytest.mark.skipif(
    pretrained._manifest(pretrained.weights_dir()) is None,
    reason=f"the weights' cache is missing (run `{pretrained.FETCH_COMMAND}`)",
)
def test_real_smollm2_was_trained_with_half_pairs() -> None:
    """Chapter 10's gap: SmolLM2's rows, as Hugging Face writes them, are half pairs."""
    from pe_lib.experiments.lm import load_corpus

    spec, weights = pretrained.smollm2_spec(), pretrained.smollm2_weights()
    tokens = pretrained.smollm2_tokenizer().encode(load_corpus()[-24_000:]).ids[-96:]
    ids = torch.tensor(tokens)[None]
    verdict = detect_layout(spec, weights, ids)
    assert verdict.layout == "half" and verdict.ratio > 3, verdict
    heads = {"q_proj": spec.num_heads, "k_proj": spec.num_kv_heads}
    gguf = {
        name: half_rows_to_gguf(tensor, heads[name.split(".")[-2]])
        if name.endswith(("q_proj.weight", "k_proj.weight"))
        else tensor
        for name, tensor in weights.items()
    }
    assert detect_layout(spec, gguf, ids).layout == "interleaved"
