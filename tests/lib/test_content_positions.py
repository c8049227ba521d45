"""pe_lib.experiments.content_positions: CoPE, FoX and PaTH against references written apart from pe_lib.

Each function is compared on random inputs with a second implementation written here from the
paper's equations as loops over ``i`` and ``j`` (and the tokens in between), with none of pe_lib's
vectorisation: CoPE (Golovneva et al., 2024, section 3, with the scaling of the authors' code in
facebookresearch/RAM ``projects/cope/src/cope/context_position.py``), FoX (Lin et al., 2025) and
PaTH (Yang et al., 2025), whose products of ``D x D`` matrices are formed explicitly. FoX and
PaTH are also compared with the naive PyTorch references of flash-linear-attention
(``fla/ops/forgetting_attn/naive.py``, ``fla/ops/path_attn/naive.py``, fla-core 0.6.0) where the
package is installed: the two files are loaded alone, since importing ``fla`` itself needs
Triton; without the package those comparisons are skipped.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path
from types import ModuleType

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch.nn import functional as F

from pe_lib import alibi_bias, alibi_slopes
from pe_lib.experiments.content_positions import (
    CONTENT_KINDS,
    ContentPositionModel,
    cope_attention,
    cope_positions,
    cope_scores,
    forgetting_attention,
    forgetting_bias,
    path_attention,
    path_cached_keys,
    path_scores,
)
from pe_lib.experiments.toy import evaluate, train

F64 = torch.float64


def _random(seed: int, *shape: int) -> torch.Tensor:
    return torch.randn(*shape, dtype=F64, generator=torch.Generator().manual_seed(seed))


def _unit(seed: int, *shape: int) -> torch.Tensor:
    return F.normalize(_random(seed, *shape), dim=-1)


def _beta(seed: int, *shape: int) -> torch.Tensor:
    return 2 * torch.rand(*shape, dtype=F64, generator=torch.Generator().manual_seed(seed))


shapes = st.tuples(
    st.integers(1, 2), st.integers(1, 3), st.integers(1, 9), st.sampled_from([1, 2, 4, 6])
)


# --- references: loops from the papers' equations ---------------------------------------------


def cope_reference(q: torch.Tensor, k: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """Scores (q_i . (k_j + e[p_ij])) / sqrt(d), p_ij = sum_{m=j..i} sigmoid(q_i . k_m / sqrt d)
    clipped at the table's last row, e[p] interpolated between floor(p) and ceil(p)."""
    batch, heads, length, size = q.shape
    scores = torch.full((batch, heads, length, length), -math.inf, dtype=q.dtype)
    root = math.sqrt(size)
    for b in range(batch):
        for h in range(heads):
            rows = table if table.dim() == 2 else table[h]
            last = rows.shape[0] - 1
            for i in range(length):
                for j in range(i + 1):
                    p = sum(
                        1 / (1 + math.exp(-float(q[b, h, i] @ k[b, h, m]) / root))
                        for m in range(j, i + 1)
                    )
                    p = min(p, last)
                    low, high = math.floor(p), math.ceil(p)
                    e = (p - low) * rows[high] + (1 - (p - low)) * rows[low]
                    scores[b, h, i, j] = q[b, h, i] @ (k[b, h, j] + e) / root
    return scores


def fox_reference(log_forget: torch.Tensor) -> torch.Tensor:
    """D_ij = sum_{l=j+1..i} log f_l for j <= i, -inf above."""
    batch, heads, length = log_forget.shape
    bias = torch.full((batch, heads, length, length), -math.inf, dtype=log_forget.dtype)
    for i in range(length):
        for j in range(i + 1):
            bias[:, :, i, j] = log_forget[:, :, j + 1 : i + 1].sum(-1)
    return bias


def path_product(w: torch.Tensor, beta: torch.Tensor, i: int, j: int) -> torch.Tensor:
    """H_i H_(i-1) ... H_(j+1) for one head, H_t = I - beta_t w_t w_t^T, as D x D matrices."""
    size = w.shape[-1]
    product = torch.eye(size, dtype=w.dtype)
    for t in range(j + 1, i + 1):
        product = (torch.eye(size, dtype=w.dtype) - beta[t] * torch.outer(w[t], w[t])) @ product
    return product


def path_reference(
    q: torch.Tensor, k: torch.Tensor, w: torch.Tensor, beta: torch.Tensor
) -> torch.Tensor:
    batch, heads, length, size = q.shape
    scores = torch.full((batch, heads, length, length), -math.inf, dtype=q.dtype)
    for b in range(batch):
        for h in range(heads):
            for i in range(length):
                for j in range(i + 1):
                    product = path_product(w[b, h], beta[b, h], i, j)
                    scores[b, h, i, j] = q[b, h, i] @ product @ k[b, h, j] / math.sqrt(size)
    return scores


def softmax_values(scores: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return torch.softmax(scores, dim=-1) @ v


# --- CoPE ---------------------------------------------------------------------------------------


@given(shape=shapes, rows=st.integers(1, 12), per_head=st.booleans(), seed=st.integers(0, 99))
def test_cope_scores_equal_the_loops(shape, rows, per_head, seed):
    batch, heads, length, size = shape
    q, k = 2 * _random(seed, 2, batch, heads, length, size)
    table = _random(seed + 1, *((heads,) if per_head else ()), rows, size)
    ours = cope_scores(q, k, table)
    torch.testing.assert_close(ours, cope_reference(q, k, table), rtol=1e-10, atol=1e-10)
    v = _random(seed + 2, batch, heads, length, 3)
    out, weights = cope_attention(q, k, v, table)
    torch.testing.assert_close(out, softmax_values(ours, v), rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(weights.sum(-1), torch.ones(batch, heads, length, dtype=F64))


@given(shape=shapes, seed=st.integers(0, 99))
def test_cope_positions_count_the_open_gates(shape, seed):
    batch, heads, length, size = shape
    q, k = _random(seed, 2, batch, heads, length, size)
    positions = cope_positions(q, k)
    gates = torch.sigmoid(q @ k.transpose(-1, -2) / math.sqrt(size))
    for i in range(length):
        for j in range(length):
            expected = gates[..., i, j : i + 1].sum(-1) if j <= i else torch.zeros((), dtype=F64)
            torch.testing.assert_close(positions[..., i, j], expected.expand(batch, heads))
    clipped = cope_positions(q, k, max_position=0.5)
    torch.testing.assert_close(clipped, positions.clamp(max=0.5))


def test_cope_positions_are_relative_positions_when_every_gate_opens():
    q = torch.zeros(1, 1, 7, 2, dtype=F64)
    q[..., 0] = 1.0
    k = torch.full_like(q, 80.0)  # sigmoid(80 / sqrt 2): 1 in float64
    expected = (torch.arange(7)[:, None] - torch.arange(7)[None, :] + 1).clamp(min=0).double()
    torch.testing.assert_close(cope_positions(q, k)[0, 0], expected.tril())


def test_cope_with_a_zero_table_is_attention_without_positions():
    q, k = _random(3, 2, 2, 3, 6, 4)
    table = torch.zeros(5, 4, dtype=F64)
    plain = (q @ k.transpose(-1, -2) / 2).masked_fill(~torch.ones(6, 6).tril().bool(), -math.inf)
    torch.testing.assert_close(cope_scores(q, k, table), plain)


# --- FoX ----------------------------------------------------------------------------------------


@given(shape=shapes, seed=st.integers(0, 99))
def test_forgetting_attention_equals_the_loops(shape, seed):
    batch, heads, length, size = shape
    q, k, v = _random(seed, 3, batch, heads, length, size)
    log_forget = F.logsigmoid(_random(seed + 1, batch, heads, length))
    bias = forgetting_bias(log_forget)
    torch.testing.assert_close(bias, fox_reference(log_forget), rtol=1e-12, atol=1e-12)
    out, weights = forgetting_attention(q, k, v, log_forget)
    scores = q @ k.transpose(-1, -2) / math.sqrt(size) + fox_reference(log_forget)
    torch.testing.assert_close(out, softmax_values(scores, v))
    torch.testing.assert_close(weights, torch.softmax(scores, -1))


@pytest.mark.parametrize("heads", [1, 4, 6, 8])
def test_forgetting_bias_with_constant_gates_is_alibi(heads):
    log_forget = -alibi_slopes(heads)[None, :, None].expand(2, heads, 11)
    expected = alibi_bias(heads, 11, 11, dtype=F64)
    torch.testing.assert_close(forgetting_bias(log_forget), expected.expand(2, -1, -1, -1))


def test_forgetting_bias_keeps_float32_and_sums_in_float64():
    log_forget = torch.full((1, 1, 3000), -1e-4, dtype=torch.float32)
    bias = forgetting_bias(log_forget)
    assert bias.dtype == torch.float32
    # float32 cumulative sums of 3000 terms drift; a difference of float64 sums does not
    assert abs(float(bias[0, 0, -1, 0]) - (-1e-4 * 2999)) < 1e-6


# --- PaTH ---------------------------------------------------------------------------------------


@given(shape=shapes, seed=st.integers(0, 99))
def test_path_scores_equal_the_explicit_products(shape, seed):
    batch, heads, length, size = shape
    q, k = _random(seed, 2, batch, heads, length, size)
    w, beta = _unit(seed + 1, batch, heads, length, size), _beta(seed + 2, batch, heads, length)
    ours = path_scores(q, k, w, beta)
    torch.testing.assert_close(ours, path_reference(q, k, w, beta), rtol=1e-9, atol=1e-9)
    v = _random(seed + 3, batch, heads, length, 2)
    out, weights = path_attention(q, k, v, w, beta)
    torch.testing.assert_close(out, softmax_values(ours, v))
    torch.testing.assert_close(weights, torch.softmax(ours, -1))


def test_path_scores_stay_exact_on_long_sequences():
    """The one triangular solve over 128 tokens against the step-by-step cache."""
    q, k = _random(5, 2, 1, 2, 128, 8)
    w, beta = _unit(6, 1, 2, 128, 8), _beta(7, 1, 2, 128)
    scores = path_scores(q, k, w, beta)
    for t in (0, 1, 64, 127):
        keys = path_cached_keys(k, w, beta, t)  # (1, 2, t + 1, 8)
        row = (keys @ q[:, :, t, :, None])[..., 0] / math.sqrt(8)
        torch.testing.assert_close(scores[:, :, t, : t + 1], row, rtol=1e-10, atol=1e-10)


@given(shape=shapes, seed=st.integers(0, 99))
def test_path_cached_keys_are_the_products_and_a_rank_one_update(shape, seed):
    batch, heads, length, size = shape
    k = _random(seed, batch, heads, length, size)
    w, beta = _unit(seed + 1, batch, heads, length, size), _beta(seed + 2, batch, heads, length)
    for step in range(length):
        keys = path_cached_keys(k, w, beta, step)
        assert keys.shape == (batch, heads, step + 1, size)
        for j in range(step + 1):
            expected = path_product(w[0, 0], beta[0, 0], step, j) @ k[0, 0, j]
            torch.testing.assert_close(keys[0, 0, j], expected)
        if step + 1 < length:  # the next step: H_(step+1) on every cached key, as fla decodes
            after = path_cached_keys(k, w, beta, step + 1)[:, :, : step + 1]
            u, b = w[:, :, step + 1, None, :], beta[:, :, step + 1, None, None]
            torch.testing.assert_close(after, keys - b * (keys * u).sum(-1, keepdim=True) * u)


def test_path_without_transforms_is_attention_without_positions_and_reflections_keep_length():
    q, k = _random(8, 2, 1, 3, 9, 4)
    w = _unit(9, 1, 3, 9, 4)
    lower = torch.ones(9, 9, dtype=torch.bool).tril()
    plain = (q @ k.transpose(-1, -2) / 2).masked_fill(~lower, -math.inf)
    torch.testing.assert_close(path_scores(q, k, w, torch.zeros(1, 3, 9, dtype=F64)), plain)
    keys = path_cached_keys(k, w, torch.full((1, 3, 9), 2.0, dtype=F64), 8)
    torch.testing.assert_close(keys.norm(dim=-1), k.norm(dim=-1))


# --- flash-linear-attention's naive references, where installed --------------------------------


def _fla_naive(relative: str) -> ModuleType:
    """One naive reference file of flash-linear-attention, loaded without importing ``fla``."""
    pytest.importorskip("einops")
    spec = importlib.util.find_spec("fla")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("flash-linear-attention (fla-core) is not installed")
    path = Path(next(iter(spec.submodule_search_locations))) / relative
    if not path.is_file():
        pytest.skip(f"this fla-core has no {relative}")
    module_spec = importlib.util.spec_from_file_location(f"fla_naive_{path.parent.name}", path)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def _fla(t: torch.Tensor) -> torch.Tensor:
    """(B, H, L, ...) -> fla's (B, L, H, ...)."""
    return t.transpose(1, 2)


@pytest.mark.parametrize("length", [1, 7, 64, 100])
def test_forgetting_attention_equals_fla_naive(length):
    naive = _fla_naive("ops/forgetting_attn/naive.py")
    q, k, v = _random(length, 3, 2, 3, length, 8)
    log_forget = F.logsigmoid(_random(length + 1, 2, 3, length))
    theirs = naive.naive_forgetting_attn(_fla(q), _fla(k), _fla(v), _fla(log_forget))
    ours, _ = forgetting_attention(q, k, v, log_forget)
    # fla computes in float32
    torch.testing.assert_close(ours, _fla(theirs).double(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("length", [1, 7, 64, 100])
def test_path_attention_equals_fla_naive(length):
    naive = _fla_naive("ops/path_attn/naive.py")
    q, k, v = _random(length, 3, 2, 3, length, 8)
    w, beta = _unit(length + 1, 2, 3, length, 8), _beta(length + 2, 2, 3, length)
    no_gate = torch.zeros(2, length, 3, dtype=F64)  # PaTH alone, without FoX's gate
    theirs = naive.naive_path_attn(
        _fla(q), _fla(k), _fla(v), _fla(w), _fla(beta), no_gate, scale=8**-0.5
    )
    ours, _ = path_attention(q, k, v, w, beta)
    torch.testing.assert_close(ours, _fla(theirs).double(), rtol=1e-5, atol=1e-5)


# --- gradients and dtypes -----------------------------------------------------------------------


@pytest.mark.usefixtures("one_thread_and_seed")
def test_gradients_flow_into_every_input():
    q, k, v = _random(10, 3, 1, 2, 5, 4)
    w, beta = _unit(11, 1, 2, 5, 4), _beta(12, 1, 2, 5)
    log_forget = F.logsigmoid(_random(13, 1, 2, 5))
    table = _random(14, 6, 4)
    torch.autograd.gradcheck(
        lambda *a: forgetting_attention(*a)[0],
        (q.requires_grad_(), k.requires_grad_(), v.requires_grad_(), log_forget.requires_grad_()),
    )
    torch.autograd.gradcheck(
        lambda *a: path_attention(*a)[0], (q, k, v, w.requires_grad_(), beta.requires_grad_())
    )
    torch.autograd.gradcheck(lambda *a: cope_attention(*a)[0], (q, k, v, table.requires_grad_()))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_outputs_keep_the_input_dtype(dtype):
    q, k, v = _random(15, 3, 1, 2, 5, 4).to(dtype)
    w, beta = _unit(16, 1, 2, 5, 4).to(dtype), _beta(17, 1, 2, 5).to(dtype)
    log_forget = F.logsigmoid(_random(18, 1, 2, 5)).to(dtype)
    table = _random(19, 2, 6, 4).to(dtype)
    for out in (
        cope_positions(q, k),
        cope_scores(q, k, table),
        cope_attention(q, k, v, table)[0],
        forgetting_bias(log_forget),
        forgetting_attention(q, k, v, log_forget)[1],
        path_scores(q, k, w, beta),
        path_attention(q, k, v, w, beta)[0],
        path_cached_keys(k, w, beta, 4),
    ):
        assert out.dtype == dtype


# --- the toy model ------------------------------------------------------------------------------


@pytest.mark.usefixtures("one_thread_and_seed")
@pytest.mark.parametrize("kind", CONTENT_KINDS)
def test_the_toy_model_attends_causally_and_trains(kind):
    model = ContentPositionModel(kind, num_heads=2, d_model=16)
    assert repr(model).startswith("ContentPositionModel(\n  kind=")
    tokens = torch.randint(16, (3, 9))
    logits, weights = model(tokens, return_weights=True)
    assert logits.shape == (3, 9, 16) and weights.shape == (3, 2, 9, 9)
    torch.testing.assert_close(weights.sum(-1), torch.ones(3, 2, 9))
    assert not weights.triu(1).any()
    losses = train(model, steps=30, seq_len=12, batch_size=8, lr=1e-2, seed=0)
    assert losses[-1] < losses[0]
    assert 0.0 <= evaluate(model, 16, num_sequences=4) <= 1.0


def test_the_toy_models_parameters():
    base = sum(p.numel() for p in ContentPositionModel("fox").parameters()) - (32 * 4 + 4)
    sizes = {
        kind: sum(p.numel() for p in ContentPositionModel(kind, cope_rows=9).parameters()) - base
        for kind in CONTENT_KINDS
    }
    assert sizes == {"cope": 9 * 8, "fox": 32 * 4 + 4, "path": 32 * 32 + 32 * 4 + 4}
    assert torch.equal(ContentPositionModel("cope").cope_table, torch.zeros(33, 8))


# --- bad arguments ------------------------------------------------------------------------------


def _good() -> dict[str, torch.Tensor]:
    q, k, v = _random(20, 3, 1, 2, 5, 4)
    return {
        "q": q,
        "k": k,
        "v": v,
        "w": _unit(21, 1, 2, 5, 4),
        "beta": _beta(22, 1, 2, 5),
        "log_forget": F.logsigmoid(_random(23, 1, 2, 5)),
        "table": _random(24, 6, 4),
    }


CALLS = {
    "cope_positions": (cope_positions, ("q", "k")),
    "cope_scores": (cope_scores, ("q", "k", "table")),
    "cope_attention": (cope_attention, ("q", "k", "v", "table")),
    "forgetting_bias": (forgetting_bias, ("log_forget",)),
    "forgetting_attention": (forgetting_attention, ("q", "k", "v", "log_forget")),
    "path_scores": (path_scores, ("q", "k", "w", "beta")),
    "path_attention": (path_attention, ("q", "k", "v", "w", "beta")),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_each_tensor_argument_is_checked_by_name(name):
    function, arguments = CALLS[name]
    good = _good()
    function(*(good[a] for a in arguments))  # accepted
    for argument in arguments:
        for bad, error, shown in (
            ([1.0, 2.0], TypeError, "list"),
            (good[argument].long(), TypeError, "int64"),
            (good[argument][None], ValueError, "shape"),
        ):
            given_ = dict(good, **{argument: bad})
            with pytest.raises(error, match=rf"^{argument} must .*{shown}"):
                function(*(given_[a] for a in arguments))


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda g: cope_positions(g["q"], g["k"][..., :3]), ValueError, "q and k must have one"),
        (lambda g: cope_positions(g["q"], g["k"].float()), TypeError, "q and k must share"),
        (lambda g: cope_positions(g["q"][:, :, :0], g["k"][:, :, :0]), ValueError, "at least"),
        (lambda g: cope_positions(g["q"], g["k"], max_position=-1), ValueError, "max_position"),
        (lambda g: cope_positions(g["q"], g["k"], max_position=True), ValueError, "max_position"),
        (lambda g: cope_scores(g["q"], g["k"], g["table"][:, :3]), ValueError, "head_dim=4"),
        (lambda g: cope_scores(g["q"], g["k"], g["table"][:0]), ValueError, "positions >= 1"),
        (lambda g: cope_scores(g["q"], g["k"], _random(1, 3, 6, 4)), ValueError, "heads=2"),
        (lambda g: cope_scores(g["q"], g["k"], g["table"].float()), TypeError, "table must"),
        (
            lambda g: cope_attention(g["q"], g["k"], g["v"][:, :, :4], g["table"]),
            ValueError,
            "v must",
        ),
        (lambda g: forgetting_bias(-g["log_forget"]), ValueError, "log_forget must be <= 0"),
        (lambda g: forgetting_bias(g["log_forget"] * math.inf), ValueError, "finite"),
        (lambda g: forgetting_bias(g["log_forget"][..., :0]), ValueError, "at least one"),
        (
            lambda g: forgetting_attention(g["q"], g["k"], g["v"], g["log_forget"][..., :4]),
            ValueError,
            "log_forget must have shape",
        ),
        (
            lambda g: path_scores(g["q"], g["k"], g["w"][..., :3], g["beta"]),
            ValueError,
            "w must have shape",
        ),
        (
            lambda g: path_scores(g["q"], g["k"], g["w"], g["beta"].float()),
            TypeError,
            "beta must have q's dtype",
        ),
        (
            lambda g: path_scores(g["q"], g["k"], g["w"] * math.nan, g["beta"]),
            ValueError,
            "w must hold finite",
        ),
        (lambda g: path_cached_keys(g["k"], g["w"], g["beta"], 5), ValueError, r"\[0, 5\)"),
        (lambda g: path_cached_keys(g["k"], g["w"], g["beta"], -1), ValueError, "step must"),
        (lambda g: path_cached_keys(g["k"], g["w"], g["beta"], True), TypeError, "step must"),
        (lambda g: path_cached_keys(g["k"], g["w"], g["beta"], 1.0), TypeError, "step must"),
        (lambda g: path_cached_keys("k", g["w"], g["beta"], 1), TypeError, "^k must"),
    ],
)
def test_bad_arguments_are_named(call, error, message):
    with pytest.raises(error, match=message):
        call(_good())


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ({"kind": "rope"}, ValueError, "kind"),
        ({"kind": "cope", "cope_rows": 0}, ValueError, "cope_rows"),
        ({"kind": "fox", "d_model": 30}, ValueError, "num_heads"),
    ],
)
def test_bad_model_arguments_are_named(arguments, error, message):
    with pytest.raises(error, match=message):
        ContentPositionModel(**arguments)
