"""Tests for pe_lib.experiments.far_context: the measures of whether a model uses what lies far back."""

from __future__ import annotations

import math

import pytest
import torch

from pe_lib.encodings.alibi import alibi_slopes
from pe_lib.experiments.far_context import (
    attention_beyond,
    cache_ngram_losses,
    retrieved,
    rotary_kv_passes,
    window_losses,
)
from pe_lib.experiments.lm import CharTransformer, ngram_perplexity, ngram_probabilities, perplexity
from pe_lib.models.llama import LlamaSpec, RotaryLlama

VOCAB = 11


def _model(position: str, *, layers: int = 1, max_len: int = 64) -> CharTransformer:
    torch.manual_seed(0)
    return CharTransformer(
        position, vocab_size=VOCAB, d_model=16, num_heads=2, num_layers=layers, max_len=max_len
    ).eval()


def _text(n: int, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, VOCAB, (n,), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("position", ["none", "sinusoidal", "rope", "alibi"])
def test_window_losses_are_perplexitys_predictions(position: str) -> None:
    model, ids = _model(position, layers=2), _text(8 * 6 + 3)
    for n in (1, 6, 16):
        losses = window_losses(model, ids, n)
        assert losses.shape == ((ids.numel() - 1) // n, n) and losses.dtype == torch.float64
        assert math.isclose(float(losses.mean().exp()), perplexity(model, ids, n), rel_tol=1e-6)


def test_window_losses_read_each_window_alone() -> None:
    model, ids = _model("rope"), _text(3 * 8 + 1)
    losses = window_losses(model, ids, 8)
    with torch.no_grad():
        logits = model(ids[8:16][None])[0]
    alone = torch.nn.functional.cross_entropy(logits, ids[9:17], reduction="none")
    torch.testing.assert_close(losses[1], alone.double())


def test_window_losses_refuse_what_perplexity_refuses() -> None:
    with pytest.raises(ValueError, match="seq_len=16 is longer than the 8 positions"):
        window_losses(_model("learned", max_len=8), _text(40), 16)
    with pytest.raises(ValueError, match="ids"):
        window_losses(_model("none"), _text(5), 8)
    with pytest.raises(TypeError, match="model"):
        window_losses("model", _text(40), 8)  # type: ignore[arg-type]


def test_ngram_probabilities_give_ngram_perplexity() -> None:
    training, ids = _text(400, 1), _text(60, 2)
    p = ngram_probabilities(training, ids, VOCAB, order=3)
    assert p.shape == (59,) and ((p > 0) & (p <= 1)).all()
    assert math.isclose(
        math.exp(-float(p.log().mean())), ngram_perplexity(training, ids, VOCAB, order=3)
    )


def _cache_reference(base: torch.Tensor, ids: torch.Tensor, n: int, order: int) -> torch.Tensor:
    """The cache n-gram written as a loop over windows and predictions."""
    k = order - 1
    windows = (ids.numel() - 1) // n
    out = torch.empty(windows, n, dtype=torch.float64)
    for w in range(windows):
        x = ids[w * n : (w + 1) * n + 1].tolist()
        for t in range(n):
            p = float(base[w * n + t])
            if t >= k - 1:
                h = x[t - k + 1 : t + 1]
                followers = [x[e + 1] for e in range(k - 1, t) if x[e - k + 1 : e + 1] == h]
                if followers:
                    m_hc = followers.count(x[t + 1])
                    u = len(set(followers))
                    p = (m_hc + u * p) / (len(followers) + u)
            out[w, t] = -math.log(p)
    return out


@pytest.mark.parametrize(("n", "order"), [(8, 2), (16, 3), (32, 5), (3, 5)])
def test_cache_ngram_matches_a_loop(n: int, order: int) -> None:
    # a text that repeats, so that the cache finds matches
    ids = torch.cat([_text(20, 3), _text(20, 3)[:15], _text(60, 4)])
    base = ngram_probabilities(_text(500, 5), ids, VOCAB, order=order)
    got = cache_ngram_losses(base, ids, n, order=order)
    torch.testing.assert_close(got, _cache_reference(base, ids, n, order))


def test_cache_ngram_gains_from_a_longer_window_on_repeated_text() -> None:
    piece = _text(24, 6)
    ids = torch.cat([piece] * 8 + [piece[:1]])  # 193 ids: the same 24 again and again
    base = torch.full((ids.numel() - 1,), 1.0 / VOCAB, dtype=torch.float64)
    short = cache_ngram_losses(base, ids, 24, order=3).reshape(-1, 96)[:, -24:]
    long = cache_ngram_losses(base, ids, 96, order=3)[:, -24:]
    assert float(long.mean()) < 0.5 * float(short.mean())


def test_cache_ngram_refuses_bad_arguments() -> None:
    ids = _text(40)
    base = torch.full((39,), 0.1, dtype=torch.float64)
    with pytest.raises(ValueError, match="order must be at least 2"):
        cache_ngram_losses(base, ids, 8, order=1)
    with pytest.raises(ValueError, match=r"shape \(39,\)"):
        cache_ngram_losses(base[:-1], ids, 8, order=3)
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        cache_ngram_losses(base * 0, ids, 8, order=3)
    with pytest.raises(ValueError, match="more than seq_len=40"):
        cache_ngram_losses(base, ids, 40, order=3)
    with pytest.raises(ValueError, match="1-d int64"):
        cache_ngram_losses(base, ids.float(), 8, order=3)


@pytest.mark.parametrize("layers", [1, 2])
def test_attention_beyond_an_even_spread(layers: int) -> None:
    """With queries and keys zero, every head spreads its attention evenly: a query at t puts
    (t - d + 1) / (t + 1) on the keys d or more back."""
    model = _model("none", layers=layers)
    with torch.no_grad():
        for block in model.blocks:
            block.qkv.weight[:32].zero_()  # type: ignore[index]
            block.qkv.bias[:32].zero_()  # type: ignore[index]
    share = attention_beyond(model, _text(4 * 16 + 1), 16, 5)
    t = torch.arange(16, dtype=torch.float64)
    even = ((t - 5 + 1) / (t + 1)).clamp(min=0)
    assert share.shape == (layers, 2, 16)
    torch.testing.assert_close(share, even.expand(layers, 2, 16))


def test_attention_beyond_alibi_with_zero_scores() -> None:
    """With queries and keys zero, ALiBi's weights are its bias alone: a query at t weighs the
    key j by exp(-s (t - j)), and its share d or more back is a ratio of geometric sums."""
    model = _model("alibi")
    with torch.no_grad():
        model.blocks[0].qkv.weight[:32].zero_()  # type: ignore[index]
        model.blocks[0].qkv.bias[:32].zero_()  # type: ignore[index]
    share = attention_beyond(model, _text(4 * 64 + 1), 64, 16)
    for head, slope in enumerate(alibi_slopes(2).double()):
        for t in (15, 16, 40, 63):
            weights = torch.exp(-slope * torch.arange(t + 1, dtype=torch.float64))  # by distance
            expected = weights[16:].sum() / weights.sum()
            assert math.isclose(
                float(share[0, head, t]), float(expected), rel_tol=1e-5, abs_tol=1e-7
            )


def test_attention_beyond_refuses_bad_distances() -> None:
    with pytest.raises(ValueError, match="distance must be below seq_len=8"):
        attention_beyond(_model("none"), _text(40), 8, 8)
    with pytest.raises(ValueError, match="distance"):
        attention_beyond(_model("none"), _text(40), 8, 0)


def _tiny_llama() -> RotaryLlama:
    spec = LlamaSpec(
        vocab_size=40,
        hidden_size=32,
        intermediate_size=48,
        num_layers=2,
        num_heads=4,
        num_kv_heads=2,
        head_dim=8,
        rope_theta=10_000.0,
        rms_norm_eps=1e-6,
        max_position_embeddings=64,
    )
    g = torch.Generator().manual_seed(0)

    def w(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g) * 0.3

    weights = {"model.embed_tokens.weight": w(40, 32), "model.norm.weight": 1 + w(32)}
    for layer in range(2):
        p = f"model.layers.{layer}."
        weights |= {
            p + "input_layernorm.weight": 1 + w(32),
            p + "post_attention_layernorm.weight": 1 + w(32),
            p + "self_attn.q_proj.weight": w(32, 32),
            p + "self_attn.k_proj.weight": w(16, 32),
            p + "self_attn.v_proj.weight": w(16, 32),
            p + "self_attn.o_proj.weight": w(32, 32),
            p + "mlp.gate_proj.weight": w(48, 32),
            p + "mlp.up_proj.weight": w(48, 32),
            p + "mlp.down_proj.weight": w(32, 48),
        }
    return RotaryLlama(spec, weights)


@pytest.mark.parametrize(
    "scaling",
    [None, {"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 16}],
)
def test_rotary_kv_passes_equal_full_passes(scaling: dict[str, object] | None) -> None:
    model = _tiny_llama()
    prefix = torch.randint(0, 40, (30,), generator=torch.Generator().manual_seed(1))
    tail = torch.randint(0, 40, (5,), generator=torch.Generator().manual_seed(2))
    asks = [(30, tail), (7, tail), (1, tail[:2])]
    got = rotary_kv_passes(model, prefix, asks, scaling=scaling)
    reference = RotaryLlama(model.spec, model.weights, scaling=scaling)
    for (n, ids), logits in zip(asks, got, strict=True):
        with torch.no_grad():
            full = reference(torch.cat([prefix[:n], ids])[None])[0, n:]
        torch.testing.assert_close(logits, full, rtol=1e-4, atol=1e-4)


def test_rotary_kv_passes_refuse_bad_arguments() -> None:
    model, prefix = _tiny_llama(), torch.arange(10)
    with pytest.raises(ValueError, match=r"n must be an int in \[1, 10\]"):
        rotary_kv_passes(model, prefix, [(11, prefix)])
    with pytest.raises(TypeError, match=r"\(n, ids\) pair"):
        rotary_kv_passes(model, prefix, [prefix])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="non-empty sequence"):
        rotary_kv_passes(model, prefix, [])
    with pytest.raises(ValueError, match=r"each in \[0, 40\)"):
        rotary_kv_passes(model, prefix, [(3, torch.tensor([40]))])
    with pytest.raises(ValueError, match="prefix must be a 1-d int64"):
        rotary_kv_passes(model, prefix[None], [(3, prefix)])


def test_retrieved_is_greedy_decoding() -> None:
    logits = torch.full((3, 10), -1.0)
    logits[0, 4], logits[1, 2], logits[2, 7] = 1.0, 1.0, 1.0
    assert retrieved(logits, [4, 2, 7])
    assert not retrieved(logits, [4, 2, 6])
    with pytest.raises(ValueError, match=r"shape \(len\(answer\), vocab\) = \(2, vocab\)"):
        retrieved(logits, [4, 2])
