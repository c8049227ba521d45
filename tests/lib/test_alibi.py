"""Tests of pe_lib.encodings.alibi against the rules of Press et al. (2022), derived by hand."""

from __future__ import annotations

import math
import re

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pe_lib.encodings.alibi import alibi_bias, alibi_slopes


def test_slopes_for_8_heads_are_powers_one_half_to_one_256th():
    slopes = alibi_slopes(8)
    assert slopes.dtype == torch.float64 and slopes.shape == (8,)
    assert slopes.tolist() == [
        2.0**-1,
        2.0**-2,
        2.0**-3,
        2.0**-4,
        2.0**-5,
        2.0**-6,
        2.0**-7,
        2.0**-8,
    ]


@pytest.mark.parametrize("num_heads", [1, 2, 4, 16, 32, 64])
def test_power_of_two_slopes_are_geometric_from_2_to_the_minus_8_over_n(num_heads):
    slopes = alibi_slopes(num_heads).tolist()
    first = 2.0 ** (-8 / num_heads)
    assert slopes[0] == pytest.approx(first, rel=1e-15)
    for previous, current in zip(slopes, slopes[1:], strict=False):
        assert current / previous == pytest.approx(first, rel=1e-14)  # ratio = first slope
    assert slopes[-1] == 2.0**-8  # the shallowest slope is always 1/256


def test_slopes_for_6_heads_follow_the_papers_rule():
    # 6 is not a power of two. The largest power of two below it is 4, whose slopes are
    # 2^(-8/4 * h) = 2^-2, 2^-4, 2^-6, 2^-8. The next power, 8, has slopes 2^-1 .. 2^-8;
    # every other one of them starting with the first is 2^-1, 2^-3, 2^-5, 2^-7, and
    # 6 - 4 = 2 of those are appended: 2^-1, 2^-3.
    expected = [2.0**-2, 2.0**-4, 2.0**-6, 2.0**-8, 2.0**-1, 2.0**-3]
    assert alibi_slopes(6).tolist() == expected


def test_slopes_for_12_heads_follow_the_papers_rule():
    # Largest power of two below 12: 8, slopes 2^-1 .. 2^-8. Next power: 16, slopes
    # 2^(-8/16 * h) = 2^-0.5, 2^-1, 2^-1.5, ..., 2^-8; every other one from the first:
    # 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5, ...; 12 - 8 = 4 of them are appended.
    expected = [2.0**-e for e in (1, 2, 3, 4, 5, 6, 7, 8)] + [
        1 / math.sqrt(2),
        1 / (2 * math.sqrt(2)),
        1 / (4 * math.sqrt(2)),
        1 / (8 * math.sqrt(2)),
    ]
    torch.testing.assert_close(
        alibi_slopes(12), torch.tensor(expected, dtype=torch.float64), rtol=1e-15, atol=0
    )


@settings(max_examples=40, deadline=None)
@given(num_heads=st.integers(1, 300))
def test_every_head_count_gets_distinct_slopes_in_0_1(num_heads):
    slopes = alibi_slopes(num_heads)
    assert slopes.shape == (num_heads,)
    assert torch.all((slopes > 0) & (slopes < 1))
    assert len(set(slopes.tolist())) == num_heads
    lower_power = 2 ** int(math.log2(num_heads))
    # The first lower_power slopes are those for lower_power heads (the rule's first part).
    torch.testing.assert_close(slopes[:lower_power], alibi_slopes(lower_power), rtol=0, atol=0)
    # The added slopes are every other slope of twice as many heads, starting with the first:
    # 2^(-8h / (2 lower_power)) for h = 1, 3, 5, ...
    odd_h = 2 * torch.arange(num_heads - lower_power, dtype=torch.float64) + 1
    expected_extra = torch.exp2(-8.0 * odd_h / (2 * lower_power))
    torch.testing.assert_close(slopes[lower_power:], expected_extra, rtol=1e-15, atol=0)


def loop_bias(num_heads: int, q_len: int, k_len: int, causal: bool) -> torch.Tensor:
    """The definition, entry by entry: query row i is position i + k_len - q_len."""
    slopes = alibi_slopes(num_heads).tolist()
    bias = torch.empty(num_heads, q_len, k_len, dtype=torch.float64)
    for h in range(num_heads):
        for i in range(q_len):
            query_position = i + k_len - q_len
            for j in range(k_len):
                distance = query_position - j
                if causal and distance < 0:
                    bias[h, i, j] = -math.inf
                else:
                    bias[h, i, j] = -slopes[h] * abs(distance)
    return bias


@pytest.mark.parametrize(
    ("num_heads", "q_len", "k_len"), [(8, 5, 5), (3, 1, 9), (6, 4, 10), (12, 7, 7)]
)
@pytest.mark.parametrize("causal", [True, False])
def test_bias_is_minus_slope_times_distance(num_heads, q_len, k_len, causal):
    bias = alibi_bias(num_heads, q_len, k_len, causal=causal, dtype=torch.float64)
    assert bias.shape == (num_heads, q_len, k_len) and bias.dtype == torch.float64
    torch.testing.assert_close(bias, loop_bias(num_heads, q_len, k_len, causal), rtol=0, atol=0)


def test_bias_examples_by_hand():
    bias = alibi_bias(2, 3, 3)  # slopes 2^-4 = 1/16 and 2^-8 = 1/256
    inf = math.inf
    expected = torch.tensor(
        [
            [[0, -inf, -inf], [-1 / 16, 0, -inf], [-2 / 16, -1 / 16, 0]],
            [[0, -inf, -inf], [-1 / 256, 0, -inf], [-2 / 256, -1 / 256, 0]],
        ]
    )
    torch.testing.assert_close(bias, expected, rtol=0, atol=0)
    # the diagonal is +0.0 (no negative zeros)
    assert not torch.signbit(bias.diagonal(dim1=-2, dim2=-1)).any()
    symmetric = alibi_bias(1, 3, 3, causal=False)  # slope 2^-8
    torch.testing.assert_close(symmetric[0], symmetric[0].T, rtol=0, atol=0)
    assert symmetric[0, 0, 2].item() == -2 / 256


def test_decoding_rows_are_the_last_rows_of_the_full_bias():
    full = alibi_bias(4, 10, 10)
    for step in range(1, 11):
        torch.testing.assert_close(alibi_bias(4, 1, step)[:, 0], full[:, step - 1, :step])
    torch.testing.assert_close(alibi_bias(4, 3, 10), full[:, 7:, :])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_dtype_and_softmax_without_nan(dtype):
    bias = alibi_bias(8, 6, 6, dtype=dtype)
    assert bias.dtype == dtype
    scores = torch.randn(2, 8, 6, 6).to(dtype) + bias
    weights = scores.float().softmax(dim=-1)
    assert torch.isfinite(weights).all()
    assert torch.all(weights.triu(diagonal=1) == 0)  # the bias alone masks future keys
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 8, 6))


def test_adding_a_causal_mask_afterwards_changes_nothing():
    """What pe_lib.experiments.toy does: scores + bias, then its own causal mask."""
    scores = torch.randn(3, 4, 7, 7) + alibi_bias(4, 7, 7)
    causal = torch.ones(7, 7, dtype=torch.bool).tril()
    torch.testing.assert_close(
        scores.masked_fill(~causal, float("-inf")).softmax(-1), scores.softmax(-1)
    )


# --- sizes no machine holds ---------------------------------------------------------------------


def test_a_bias_beyond_the_machines_memory_is_refused_naming_its_size(monkeypatch) -> None:
    """The 8 x 100,000 x 100,000 bias needs 8e10 float64 entries (596 GiB) and their float32
    copy: refused up front (the limit set to 64 GiB, so that the test means the same on any
    machine) rather than left to the kernel's out-of-memory killer."""
    monkeypatch.setattr("pe_lib._validation.memory_limit", lambda: 64 * 2**30)
    with pytest.raises(ValueError, match=r"num_heads=8, q_len=100000, k_len=100000") as error:
        alibi_bias(8, 100_000, 100_000)
    need = re.search(r"would need ([0-9.]+) GiB", str(error.value))
    assert need and 596 < float(need.group(1)) < 2 * 596  # at least the float64 bias itself
    assert "more than this machine has (64.0 GiB)" in str(error.value)
    assert alibi_bias(8, 300, 300).shape == (8, 300, 300)  # 5.9 MiB: below it


def test_the_in_place_bias_is_the_formula_with_a_positive_zero_diagonal() -> None:
    bias = alibi_bias(4, 5, 7, dtype=torch.float64)
    slopes = alibi_slopes(4)[:, None, None]
    distance = torch.arange(2, 7, dtype=torch.float64)[:, None] - torch.arange(7.0)[None, :]
    expected = (-slopes * distance).masked_fill(distance < 0, -math.inf)
    assert torch.equal(bias, expected)
    diagonal = bias[:, torch.arange(5), torch.arange(2, 7)]
    assert (diagonal == 0).all() and not torch.signbit(diagonal).any()
    both_ways = alibi_bias(4, 5, 7, causal=False, dtype=torch.float64)
    assert torch.equal(both_ways, -slopes * distance.abs() + 0.0)
