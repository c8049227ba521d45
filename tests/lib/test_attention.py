"""pe_lib.models.attention: shapes, softmax rows, permutation equivariance, masks, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from pe_lib import SelfAttention, scaled_dot_product_attention


def reference_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask=None) -> np.ndarray:
    """softmax(q k^T / sqrt(d_k)) v in float64 numpy (Vaswani et al., 2017, eq. 1)."""
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    return weights @ v


@pytest.fixture
def generator():
    return torch.Generator().manual_seed(0)


def test_function_matches_reference_with_leading_dimensions(generator):
    q = torch.randn(2, 3, 5, 4, generator=generator, dtype=torch.float64)
    k = torch.randn(2, 3, 6, 4, generator=generator, dtype=torch.float64)
    v = torch.randn(1, 3, 6, 7, generator=generator, dtype=torch.float64)  # broadcasts
    out, weights = scaled_dot_product_attention(q, k, v)
    assert out.shape == (2, 3, 5, 7) and weights.shape == (2, 3, 5, 6)
    np.testing.assert_allclose(out.numpy(), reference_attention(q.numpy(), k.numpy(), v.numpy()))
    assert torch.all(weights >= 0)
    torch.testing.assert_close(weights.sum(dim=-1), torch.ones(2, 3, 5, dtype=torch.float64))


@pytest.mark.parametrize(("d_model", "d_k"), [(8, None), (8, 3), (1, 1)])
def test_module_shapes_and_weight_rows(d_model, d_k, generator):
    torch.manual_seed(0)
    attention = SelfAttention(d_model, d_k)
    x = torch.randn(2, 5, d_model, generator=generator)
    out, weights = attention(x)
    assert out.shape == (2, 5, d_k or d_model) and weights.shape == (2, 5, 5)
    torch.testing.assert_close(weights.sum(dim=-1), torch.ones(2, 5))
    expected = reference_attention(
        *(w(x).detach().double().numpy() for w in (attention.w_q, attention.w_k, attention.w_v))
    )
    np.testing.assert_allclose(out.detach().numpy(), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("seed", range(4))
def test_permutation_equivariance(seed):
    """Permuting the input rows permutes the output rows and both axes of the weights."""
    torch.manual_seed(seed)
    attention = SelfAttention(6).double()
    x = torch.randn(3, 7, 6, dtype=torch.float64)
    permutation = torch.randperm(7)
    out, weights = attention(x)
    out_p, weights_p = attention(x[:, permutation])
    torch.testing.assert_close(out_p, out[:, permutation])
    torch.testing.assert_close(weights_p, weights[:, permutation][:, :, permutation])
    # Hence any order-free pooling of the output cannot tell the two orders apart.
    torch.testing.assert_close(out_p.mean(dim=1), out.mean(dim=1))


def test_causal_mask(generator):
    x = torch.randn(2, 6, 4, generator=generator, dtype=torch.float64)
    causal = torch.ones(6, 6, dtype=torch.bool).tril()  # broadcast over the batch
    out, weights = scaled_dot_product_attention(x, x, x, mask=causal)
    assert torch.all(weights[:, ~causal] == 0)
    torch.testing.assert_close(weights.sum(dim=-1), torch.ones(2, 6, dtype=torch.float64))
    np.testing.assert_allclose(
        out.numpy(), reference_attention(x.numpy(), x.numpy(), x.numpy(), causal.numpy())
    )
    # Row i sees only rows 0..i: changing the last row leaves the others untouched.
    changed = x.clone()
    changed[:, -1] += 10.0
    out_changed, _ = scaled_dot_product_attention(changed, changed, changed, mask=causal)
    torch.testing.assert_close(out_changed[:, :-1], out[:, :-1])


def test_an_all_true_mask_changes_nothing(generator):
    x = torch.randn(1, 4, 3, generator=generator)
    plain = scaled_dot_product_attention(x, x, x)
    masked = scaled_dot_product_attention(x, x, x, mask=torch.ones(1, 4, dtype=torch.bool))
    for a, b in zip(plain, masked, strict=True):
        torch.testing.assert_close(a, b)


Q = torch.zeros(2, 3, 4)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"q": [[0.0]]}, TypeError, r"q must be a floating torch.Tensor, got list"),
        ({"k": torch.zeros(2, 3, 4, dtype=torch.long)}, TypeError, r"k .*got Tensor .*int64"),
        ({"v": torch.zeros(4)}, ValueError, r"v must have shape \(\.\.\., length.*got \(4,\)"),
        ({"k": Q.double()}, TypeError, r"share one floating dtype.*k torch.float64"),
        ({"k": torch.zeros(2, 3, 5)}, ValueError, r"q and k .* d_k.*\(2, 3, 5\)"),
        ({"v": torch.zeros(2, 2, 4)}, ValueError, r"k and v .*same length.*\(2, 2, 4\)"),
        ({"k": torch.zeros(3, 3, 4)}, ValueError, r"leading \(batch\).*k \(3, 3, 4\)"),
        ({"mask": torch.ones(3, 3)}, TypeError, r"mask must be a bool.*float32"),
        ({"mask": [[True]]}, TypeError, r"mask must be a bool.*\[\[True\]\] of type list"),
        ({"mask": torch.ones(4, 4, dtype=torch.bool)}, ValueError, r"mask .*got shape \(4, 4\)"),
        ({"mask": torch.ones(5, 2, 3, 3, dtype=torch.bool)}, ValueError, r"got shape \(5, 2"),
        ({"mask": torch.zeros(3, 3, dtype=torch.bool)}, ValueError, "all-False row"),
    ],
)
def test_attention_errors(kwargs, error, match):
    arguments = {"q": Q, "k": Q, "v": Q} | kwargs
    mask = arguments.pop("mask", None)
    with pytest.raises(error, match=match):
        scaled_dot_product_attention(**arguments, mask=mask)


def test_partly_empty_mask_row_is_rejected():
    mask = torch.ones(3, 3, dtype=torch.bool)
    mask[1] = False
    with pytest.raises(ValueError, match=r"at least one key.*shape \(3, 3\)"):
        scaled_dot_product_attention(Q, Q, Q, mask=mask)


def test_module_rejects_a_dtype_other_than_its_weights():
    with pytest.raises(TypeError, match=r"x must have the dtype .*float32, got torch.float64"):
        SelfAttention(4)(Q.double())


# --- the score bias (how ALiBi enters attention) --------------------------------------------------


def test_bias_is_added_to_the_scaled_scores_before_the_softmax():
    generator = torch.Generator().manual_seed(3)
    q = torch.randn(2, 4, 5, 8, dtype=torch.float64, generator=generator)
    k = torch.randn(2, 4, 6, 8, dtype=torch.float64, generator=generator)
    v = torch.randn(2, 4, 6, 3, dtype=torch.float64, generator=generator)
    bias = torch.randn(4, 5, 6, dtype=torch.float64, generator=generator)
    out, weights = scaled_dot_product_attention(q, k, v, bias=bias)
    expected = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(8) + bias, dim=-1)
    torch.testing.assert_close(weights, expected)
    torch.testing.assert_close(out, expected @ v)


def test_minus_infinity_in_the_bias_excludes_a_key_like_the_mask():
    generator = torch.Generator().manual_seed(4)
    q, k, v = (torch.randn(5, 4, generator=generator) for _ in range(3))
    causal = torch.ones(5, 5, dtype=torch.bool).tril()
    bias = torch.zeros(5, 5).masked_fill(~causal, -math.inf)
    masked = scaled_dot_product_attention(q, k, v, mask=causal)
    biased = scaled_dot_product_attention(q, k, v, bias=bias)
    torch.testing.assert_close(biased, masked)


@pytest.mark.parametrize(
    ("bias", "error", "match"),
    [
        (torch.zeros(3, 3, dtype=torch.int64), TypeError, r"bias must be a floating .*int64"),
        ([[0.0]], TypeError, r"bias must be a floating torch.Tensor, got \[\[0\.0\]\]"),
        (torch.zeros(4, 3), ValueError, r"bias must be broadcastable .*\(3, 3\).*\(4, 3\)"),
        (torch.zeros(2, 3, 3), ValueError, r"bias must be broadcastable .*got shape \(2, 3, 3\)"),
    ],
)
def test_bad_bias(bias, error, match):
    q = torch.zeros(3, 4)
    with pytest.raises(error, match=match):
        scaled_dot_product_attention(q, q, q, bias=bias)


def test_no_keys_is_rejected_by_name():
    with pytest.raises(ValueError, match=r"k must hold at least one key.*\(0, 4\)"):
        scaled_dot_product_attention(torch.zeros(3, 4), torch.zeros(0, 4), torch.zeros(0, 4))


# --- compiling ------------------------------------------------------------------------


def test_self_attention_compiles_in_one_graph_without_a_mask():
    """With a mask, the all-False-row check reads its values: the docstring says the graph
    breaks there, and ``fullgraph=True`` refuses it."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    module = SelfAttention(8).eval()
    x = torch.randn(2, 5, 8)
    compiled = torch.compile(module, fullgraph=True, backend="aot_eager")
    for got, expected in zip(compiled(x), module(x), strict=True):
        torch.testing.assert_close(got, expected, rtol=0, atol=1e-6)
