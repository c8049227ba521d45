"""Tests of pe_lib.rope against the published formula (Su et al., 2021) and independent references."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from pe_reference import rope_theta, rotate_pairs

from pe_lib.rope import RotaryEmbedding, apply_rope, rope_angles

LAYOUTS = ("interleaved", "half")
BF16_UNIT_ROUNDOFF = torch.finfo(torch.bfloat16).eps / 2  # 2**-8: one rounding to bfloat16


def complex_rope(x: np.ndarray, positions: np.ndarray, layout: str, base: float = 10000.0):
    """Independent reference: ``x`` (seq_len, d) rotated at ``positions`` (seq_len,), float64."""
    angles = positions[:, None].astype(np.float64) * rope_theta(x.shape[-1], base)
    return rotate_pairs(x, angles, layout)


def half_to_interleaved(head_dim: int) -> torch.Tensor:
    """Channel permutation p with x_interleaved = x_half[..., p]: pair i is (i, i + d/2) -> (2i, 2i+1)."""
    half = head_dim // 2
    return torch.stack((torch.arange(half), torch.arange(half) + half), dim=-1).flatten()


def rotate_at(vector: torch.Tensor, position: int, layout: str) -> torch.Tensor:
    """R_position applied to one vector of shape (d,)."""
    return apply_rope(vector[None, :], torch.tensor([position]), layout=layout)[0]


# --- rope_angles ------------------------------------------------------------------------------


def test_rope_angles_values_shape_and_dtype():
    positions = torch.tensor([[0, 1, 7], [100_000, 3, 2]])
    angles = rope_angles(positions, 8, base=500.0)
    assert angles.shape == (2, 3, 4)
    assert angles.dtype == torch.float64
    expected = positions.numpy()[..., None].astype(np.float64) * rope_theta(8, 500.0)
    np.testing.assert_allclose(angles.numpy(), expected, rtol=1e-15, atol=0)
    assert torch.all(angles[0, 0] == 0)  # position 0 is not rotated


def test_rope_angles_under_autocast_stay_float64():
    with torch.autocast("cpu", dtype=torch.bfloat16):
        angles = rope_angles(torch.arange(20_000, 20_004), 64)
    assert angles.dtype == torch.float64
    np.testing.assert_array_equal(
        angles[:, 0].numpy(), np.arange(20_000, 20_004, dtype=np.float64)
    )  # theta_0 = 1: the angle is the exact position


# --- apply_rope: the formula ------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
def test_apply_rope_equals_complex_formulation(layout):
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 17, 12, dtype=torch.float64, generator=generator)
    positions = torch.tensor(
        [0, 1, 2, 5, 31, 64, 1000, 9999, 10_000, 65_535] + [2**20 + i for i in range(7)]
    )
    out = apply_rope(x, positions, layout=layout, base=10000.0)
    for b in range(2):
        for h in range(3):
            expected = complex_rope(x[b, h].numpy(), positions.numpy(), layout)
            np.testing.assert_allclose(out[b, h].numpy(), expected, rtol=0, atol=1e-9)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_default_positions_are_arange(layout):
    x = torch.randn(2, 9, 6)
    torch.testing.assert_close(
        apply_rope(x, layout=layout), apply_rope(x, torch.arange(9), layout=layout), rtol=0, atol=0
    )


def test_layouts_are_related_by_a_fixed_channel_permutation():
    x_half = torch.randn(3, 4, 25, 16, dtype=torch.float64)
    permutation = half_to_interleaved(16)
    positions = torch.arange(100, 125)
    out_half = apply_rope(x_half, positions, layout="half")
    out_interleaved = apply_rope(x_half[..., permutation], positions, layout="interleaved")
    torch.testing.assert_close(out_half[..., permutation], out_interleaved, rtol=0, atol=1e-12)
    # ... and they are different functions: without the permutation they disagree.
    assert not torch.allclose(apply_rope(x_half, positions, layout="interleaved"), out_half)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_rotation_preserves_norms(layout, dtype):
    x = torch.randn(4, 50, 32, dtype=dtype)
    out = apply_rope(x, torch.arange(1000, 1050), layout=layout)
    torch.testing.assert_close(out.norm(dim=-1), x.norm(dim=-1))
    # pairwise: each channel pair keeps its own norm
    pairs_in = (
        x.unflatten(-1, (16, 2))
        if layout == "interleaved"
        else x.unflatten(-1, (2, 16)).transpose(-1, -2)
    )
    pairs_out = (
        out.unflatten(-1, (16, 2))
        if layout == "interleaved"
        else out.unflatten(-1, (2, 16)).transpose(-1, -2)
    )
    torch.testing.assert_close(pairs_out.norm(dim=-1), pairs_in.norm(dim=-1))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_position_zero_is_identity_and_input_is_not_modified(layout):
    x = torch.randn(3, 1, 8)
    copy = x.clone()
    out = apply_rope(x, torch.zeros(1, dtype=torch.int64), layout=layout)
    torch.testing.assert_close(out, x, rtol=0, atol=0)
    assert out.data_ptr() != x.data_ptr()
    torch.testing.assert_close(x, copy, rtol=0, atol=0)


# --- the relative property --------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    m=st.integers(0, 10**6),
    n=st.integers(0, 10**6),
    shift=st.integers(0, 10**6),
    seed=st.integers(0, 2**16),
    layout=st.sampled_from(LAYOUTS),
)
def test_score_depends_only_on_distance(m, n, shift, seed, layout):
    generator = torch.Generator().manual_seed(seed)
    q, k = torch.randn(2, 16, dtype=torch.float64, generator=generator)
    score = rotate_at(q, m, layout) @ rotate_at(k, n, layout)
    shifted = rotate_at(q, m + shift, layout) @ rotate_at(k, n + shift, layout)
    # the same distance m - n, with the smaller of the two positions moved to 0
    low = min(m, n)
    at_origin = rotate_at(q, m - low, layout) @ rotate_at(k, n - low, layout)
    # float64 angles up to 2e6 rad carry absolute errors of about 2e6 * 2**-53 ~ 2e-10
    tolerance = 1e-8 * q.norm() * k.norm()
    assert abs(score - shifted) <= tolerance
    assert abs(score - at_origin) <= tolerance


def float64_truth_score(q: torch.Tensor, k: torch.Tensor, m: int, n: int, layout: str) -> float:
    """(R_m q)·(R_n k) in float64 from the values of q and k, evaluated as (R_{m-c} q)·(R_{n-c} k).

    With c = min(m, n) the angles are small and exact; the score is the same because it depends
    only on m - n (checked in float64 by the property test above).
    """
    low = min(m, n)
    q_rot = rotate_at(q.double(), m - low, layout)
    return float(q_rot @ rotate_at(k.double(), n - low, layout))


def bf16_score_tolerance(q: torch.Tensor, k: torch.Tensor) -> float:
    """What storing R_m q and R_n k in bfloat16 allows for their dot product.

    Each output entry is the exact rotation rounded once: |error| <= u |entry| with u = 2**-8.
    By Cauchy-Schwarz |(a + da)·(b + db) - a·b| <= (2u + u**2) |a| |b|, and rotations keep
    |a| = |q| and |b| = |k|. A margin of 1e-5 |q||k| covers the float32 rotation itself.
    """
    u = BF16_UNIT_ROUNDOFF
    return (2 * u + u * u + 1e-5) * float(q.double().norm() * k.double().norm())


def naive_bf16_rope(x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """The mistake the precision rules prevent: angles formed in bfloat16 (interleaved layout)."""
    head_dim = x.shape[-1]
    theta = torch.tensor(rope_theta(head_dim), dtype=torch.bfloat16)
    angles = positions.to(torch.bfloat16)[:, None] * theta  # (seq_len, d/2), bfloat16
    cos, sin = angles.cos(), angles.sin()
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack((even * cos - odd * sin, odd * cos + even * sin), dim=-1).flatten(-2)


@settings(max_examples=60, deadline=None)
@given(
    m=st.integers(10_001, 200_000),
    n=st.integers(10_001, 200_000),
    seed=st.integers(0, 2**16),
    layout=st.sampled_from(LAYOUTS),
)
def test_bf16_score_at_large_positions_stays_within_bf16_rounding(m, n, seed, layout):
    generator = torch.Generator().manual_seed(seed)
    q, k = torch.randn(2, 64, generator=generator).to(torch.bfloat16)
    q_rot = apply_rope(q[None, :], torch.tensor([m]), layout=layout)[0]
    k_rot = apply_rope(k[None, :], torch.tensor([n]), layout=layout)[0]
    assert q_rot.dtype == k_rot.dtype == torch.bfloat16
    score = float(q_rot.double() @ k_rot.double())
    error = abs(score - float64_truth_score(q, k, m, n, layout))
    assert error <= bf16_score_tolerance(q, k)


@pytest.mark.parametrize(
    ("m", "n"), [(12_345, 10_007), (30_011, 30_000), (50_001, 50_017), (100_003, 99_990)]
)
def test_bf16_tolerance_catches_bfloat16_angles(m, n):
    """The bound above is tight enough to fail an implementation that forms angles in bf16."""
    generator = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 64, generator=generator).to(torch.bfloat16)
    tolerance = bf16_score_tolerance(q, k)
    truth = float64_truth_score(q, k, m, n, "interleaved")

    def error_of(rope) -> float:
        q_rot = rope(q[None, :], torch.tensor([m]))[0].double()
        return abs(float(q_rot @ rope(k[None, :], torch.tensor([n]))[0].double()) - truth)

    assert error_of(apply_rope) <= tolerance
    assert error_of(naive_bf16_rope) > tolerance


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape", [(2, 4, 40, 32), (4, 8, 300, 64)])  # one block, many blocks
def test_half_precision_output_is_one_rounding_of_the_float64_result(layout, dtype, shape):
    x = torch.randn(shape).to(dtype)
    positions = torch.arange(30_000, 30_000 + shape[-2])
    out = apply_rope(x, positions, layout=layout)
    assert out.dtype == dtype
    truth = apply_rope(x.double(), positions, layout=layout)
    unit_roundoff = torch.finfo(dtype).eps / 2
    error = (out.double() - truth).abs()
    bound = unit_roundoff * truth.abs() + 1e-6 * x.double().abs().amax()
    assert torch.all(error <= bound)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_autocast_changes_nothing(layout):
    x32 = torch.randn(2, 3, 50, 16)
    x16 = x32.to(torch.bfloat16)
    positions = torch.arange(20_000, 20_050)
    plain32, plain16 = (
        apply_rope(x32, positions, layout=layout),
        apply_rope(x16, positions, layout=layout),
    )
    with torch.autocast("cpu", dtype=torch.bfloat16):
        auto32 = apply_rope(x32, positions, layout=layout)
        auto16 = apply_rope(x16, positions, layout=layout)
        # an input that autocast itself produced (a bfloat16 matmul), as in attention
        projected = x32 @ torch.eye(16)
        assert projected.dtype == torch.bfloat16
        auto_projected = apply_rope(projected, positions, layout=layout)
    assert auto32.dtype == torch.float32 and auto16.dtype == torch.bfloat16
    torch.testing.assert_close(auto32, plain32, rtol=0, atol=0)
    torch.testing.assert_close(auto16, plain16, rtol=0, atol=0)
    torch.testing.assert_close(
        auto_projected, apply_rope(projected, positions, layout=layout), rtol=0, atol=0
    )


# --- positions and broadcasting ---------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
def test_per_sequence_positions(layout):
    x = torch.randn(2, 3, 5, 8)
    positions = torch.tensor([[0, 1, 2, 3, 4], [7, 8, 9, 10, 11]])  # (batch, seq_len)
    out = apply_rope(x, positions[:, None, :], layout=layout)  # (batch, 1, seq_len)
    for b in range(2):
        torch.testing.assert_close(out[b], apply_rope(x[b], positions[b], layout=layout))
    full = positions[:, None, :].expand(2, 3, 5)
    torch.testing.assert_close(apply_rope(x, full, layout=layout), out)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_non_contiguous_input(layout):
    base = torch.randn(2, 7, 3, 3 * 8)  # (batch, seq_len, heads, 3 * head_dim), like a qkv output
    q = base[..., 8:16].transpose(1, 2)  # (batch, heads, seq_len, head_dim), strided, odd offset
    assert not q.is_contiguous()
    torch.testing.assert_close(
        apply_rope(q, layout=layout), apply_rope(q.contiguous(), layout=layout)
    )


@pytest.mark.parametrize("layout", LAYOUTS)
def test_gradient_is_the_transposed_rotation(layout):
    x = torch.randn(3, 10, 8, dtype=torch.float64, requires_grad=True)
    upstream = torch.randn(3, 10, 8, dtype=torch.float64)
    positions = torch.arange(5, 15)
    with_graph = apply_rope(x, positions, layout=layout)
    assert with_graph.requires_grad
    (with_graph * upstream).sum().backward()
    # The gradient is R^T upstream = R^{-1} upstream, so rotating it forward gives upstream back.
    torch.testing.assert_close(apply_rope(x.grad, positions, layout=layout), upstream)
    # The autograd path and the no-grad path compute the same values.
    torch.testing.assert_close(
        apply_rope(x.detach(), positions, layout=layout), with_graph.detach()
    )


# --- RotaryEmbedding --------------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
def test_decoding_token_by_token_equals_full_sequence(layout):
    rotary = RotaryEmbedding(16, layout=layout)
    q = torch.randn(2, 4, 12, 16)
    k = torch.randn(2, 2, 12, 16)  # fewer key heads (grouped-query attention) is fine
    q_full, k_full = rotary(q, k)
    q_steps, k_steps = zip(
        *(rotary(q[..., t : t + 1, :], k[..., t : t + 1, :], offset=t) for t in range(12)),
        strict=True,
    )
    torch.testing.assert_close(torch.cat(q_steps, dim=-2), q_full, rtol=0, atol=0)
    torch.testing.assert_close(torch.cat(k_steps, dim=-2), k_full, rtol=0, atol=0)
    # a prompt of 5 tokens, then chunks of 4 and 3
    q_parts, k_parts = zip(
        rotary(q[..., :5, :], k[..., :5, :]),
        rotary(q[..., 5:9, :], k[..., 5:9, :], offset=5),
        rotary(q[..., 9:, :], k[..., 9:, :], offset=9),
        strict=True,
    )
    torch.testing.assert_close(torch.cat(q_parts, dim=-2), q_full, rtol=0, atol=0)
    torch.testing.assert_close(torch.cat(k_parts, dim=-2), k_full, rtol=0, atol=0)


def test_rotary_embedding_caches_tables_but_has_no_state_and_follows_dtype():
    rotary = RotaryEmbedding(8, base=500.0, layout="half", max_len=16)
    assert rotary.state_dict() == {} and list(rotary.parameters()) == []
    # the cached cos and sin: float64, one row per position, one column per channel (each
    # pair's cos twice, its sin negated for the first channel), kept in float64 through casts
    assert [tuple(b.shape) for b in rotary.buffers()] == [(16, 8), (16, 8)]
    for cast in (lambda m: m.to(torch.bfloat16), lambda m: m.half(), lambda m: m.float()):
        assert all(b.dtype == torch.float64 for b in cast(rotary).buffers())
    angles = rope_angles(torch.arange(16), 8, base=500.0)
    cos, sin = angles.cos(), angles.sin()
    torch.testing.assert_close(rotary.cos_table, torch.cat((cos, cos), -1), rtol=0, atol=0)
    torch.testing.assert_close(rotary.sin_table, torch.cat((-sin, sin), -1), rtol=0, atol=0)
    pairs = RotaryEmbedding(8, base=500.0, max_len=16)  # interleaved: pair by pair
    torch.testing.assert_close(pairs.cos_table[:, 0::2], cos, rtol=0, atol=0)
    torch.testing.assert_close(pairs.cos_table[:, 1::2], cos, rtol=0, atol=0)
    torch.testing.assert_close(pairs.sin_table[:, 0::2], -sin, rtol=0, atol=0)
    torch.testing.assert_close(pairs.sin_table[:, 1::2], sin, rtol=0, atol=0)
    q = torch.randn(1, 3, 8, dtype=torch.bfloat16)
    q_rot, k_rot = rotary(q, q, offset=4)
    assert q_rot.dtype == torch.bfloat16
    torch.testing.assert_close(
        q_rot, apply_rope(q, torch.arange(4, 7), base=500.0, layout="half"), rtol=0, atol=0
    )
    torch.testing.assert_close(k_rot, q_rot)
    # beyond the cache, computed on the fly with the same values
    q_far = torch.randn(2, 20, 8)
    torch.testing.assert_close(
        rotary(q_far, q_far, offset=10)[0],
        apply_rope(q_far, torch.arange(10, 30), base=500.0, layout="half"),
        rtol=0,
        atol=0,
    )
    assert (
        "head_dim=8" in repr(rotary) and "'half'" in repr(rotary) and "max_len=16" in repr(rotary)
    )


TRACE_IS_DEPRECATED = pytest.mark.filterwarnings(
    r"ignore:`torch\.jit\.\w+` is deprecated:DeprecationWarning"
)


@TRACE_IS_DEPRECATED
def test_scripting_is_refused_with_the_alternatives():
    with pytest.raises(TypeError, match=r"cannot be compiled with torch.jit.script.*torch.compile"):
        torch.jit.script(RotaryEmbedding(8))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_compiles_in_one_graph(layout):
    """``fullgraph=True`` fails on any graph break; ``aot_eager`` needs no C compiler."""
    torch._dynamo.reset()
    rotary = RotaryEmbedding(
        16,
        layout=layout,
        scaling={
            "rope_type": "yarn",
            "factor": 4.0,
            "original_max_position_embeddings": 8,
            "rope_theta": 10000.0,
        },
    )
    compiled = torch.compile(rotary, fullgraph=True, backend="aot_eager")
    for seq_len, offset in ((5, 0), (7, 3)):
        q, k = torch.randn(2, 4, seq_len, 16), torch.randn(2, 1, seq_len, 16)
        for got, expected in zip(
            compiled(q, k, offset=offset), rotary(q, k, offset=offset), strict=True
        ):
            torch.testing.assert_close(got, expected)


# --- without autograd (written into the output) against the formula (autograd) -----------------


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
@pytest.mark.parametrize(
    "shape", [(70_000, 4), (3, 50_000, 6), (2, 5, 3000, 64), (1, 3, 2, 70_000, 2)]
)
def test_rotation_without_autograd_equals_the_differentiable_formula(layout, dtype, shape):
    """Inputs larger than one staged block (2**18 elements), split along every leading dimension."""
    x = torch.randn(shape).to(dtype)
    positions = torch.randint(0, 10**6, shape[-2:-1])
    without_autograd = apply_rope(x, positions, layout=layout)
    differentiable = apply_rope(x.clone().requires_grad_(), positions, layout=layout).detach()
    torch.testing.assert_close(without_autograd, differentiable)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_rotation_of_strided_input_with_per_vector_positions(layout):
    qkv = torch.randn(4, 1500, 6, 3 * 32)  # (batch, seq_len, heads, 3 * head_dim)
    q = qkv[..., 32:64].transpose(1, 2)  # (batch, heads, seq_len, head_dim), strided
    positions = torch.randint(0, 10**5, (4, 1, 1500))
    out = apply_rope(q, positions, layout=layout)
    torch.testing.assert_close(
        out, apply_rope(q.contiguous(), positions, layout=layout), rtol=0, atol=0
    )
    truth = apply_rope(q.contiguous().double(), positions, layout=layout)
    torch.testing.assert_close(out.double(), truth, rtol=0, atol=1e-5)


def test_fractional_positions():
    x = torch.randn(3, 8, dtype=torch.float64)
    positions = torch.tensor([0.25, 10.5, 1e6 / 3], dtype=torch.float64)
    for layout in LAYOUTS:
        expected = complex_rope(x.numpy(), positions.numpy(), layout)
        np.testing.assert_allclose(
            apply_rope(x, positions, layout=layout).numpy(), expected, atol=1e-9
        )
    np.testing.assert_allclose(
        rope_angles(positions, 8).numpy(), positions.numpy()[:, None] * rope_theta(8), rtol=1e-15
    )


def test_toy_model_with_rope_and_alibi_runs_and_learns_gradients():
    from pe_lib.experiments.toy import ShiftedCopyModel, shifted_copy_batch

    tokens, _ = shifted_copy_batch(2, 10, generator=torch.Generator().manual_seed(0))
    for position in ("rope", "alibi"):
        model = ShiftedCopyModel(position, d_model=16, num_heads=2)
        logits = model(tokens)
        assert logits.shape == (2, 10, 16) and torch.isfinite(logits).all()
        logits.sum().backward()
        assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


# --- errors -----------------------------------------------------------------------------------


def test_theta_is_the_sinusoidal_frequency():
    """RoPE reuses the frequencies of the sinusoidal encoding: theta_i = 10000**(-2i/d)."""
    angles = rope_angles(torch.tensor([1]), 64)[0]
    np.testing.assert_allclose(
        angles.numpy(), [10000 ** (-2 * i / 64) for i in range(32)], rtol=1e-15
    )
    assert angles[-1].item() == pytest.approx(10000 ** (-62 / 64))
    assert math.isclose(angles[0].item(), 1.0)
