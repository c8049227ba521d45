r"""Attention with linear biases (ALiBi) of Press et al. (2022).

ALiBi adds no position vector to the tokens. Instead, head ``h`` subtracts a penalty
proportional to the distance between query and key from the attention scores:

.. math::

    \mathrm{scores}_h[i, j] = \frac{q_i^{\top} k_j}{\sqrt{d}} - s_h\,(i - j),
    \qquad j \le i,

with a fixed, head-specific slope :math:`s_h > 0`. For ``n`` heads, ``n`` a power of two, the
slopes are the geometric sequence :math:`s_h = 2^{-8h/n}`, :math:`h = 1, \dots, n`
(for 8 heads: :math:`2^{-1}, 2^{-2}, \dots, 2^{-8}`). Steep slopes make a head look only at the
last few tokens; shallow ones let it see far back.
"""

from __future__ import annotations

import torch

from .._validation import (
    check_bool,
    check_device,
    check_floating_dtype,
    check_memory,
    check_positive_int,
    check_table_size,
    naming_allocation,
)

__all__ = ["alibi_bias", "alibi_slopes"]


def _power_of_two_slopes(num_heads: int) -> torch.Tensor:
    """``2^{-8h/n}`` for ``h = 1 .. n``: exact in float64 when ``n`` is a power of two."""
    exponents = torch.arange(1, num_heads + 1, dtype=torch.float64) * (-8.0 / num_heads)
    return torch.exp2(exponents)


def alibi_slopes(num_heads: int) -> torch.Tensor:
    r"""The head-specific slopes :math:`s_h` of ALiBi (Press et al., 2022, section 3).

    * ``num_heads`` a power of two, ``n``: :math:`s_h = 2^{-8h/n}` for :math:`h = 1, \dots, n`,
      a geometric sequence that starts at, and has the ratio, :math:`2^{-8/n}`.
    * Otherwise, with :math:`n_0` the largest power of two below ``num_heads``: the
      :math:`n_0` slopes for :math:`n_0` heads, followed by the first ``num_heads - n_0`` of
      the slopes for :math:`2 n_0` heads taken at odd indices :math:`h = 1, 3, 5, \dots`
      (every other slope, starting with the steepest), as in the authors' code (``get_slopes``
      in ofirpress/attention_with_linear_biases, ``fairseq/models/transformer.py``). The
      additional slopes interleave between the first ones instead of extending them.

    Args:
        num_heads: number of attention heads, >= 1.

    Returns:
        float64 tensor of shape ``(num_heads,)``, head ``h - 1`` at index ``h - 1``, in the
        order given above (decreasing for powers of two). Every slope is a power of two
        with an exponent that is a multiple of ``8 / (2 n_0)``, so for power-of-two head counts
        the values are exact, also after casting to float32, float16 or bfloat16.
    """
    num_heads = check_positive_int("num_heads", num_heads)
    lower_power = 1 << (num_heads.bit_length() - 1)  # n_0 <= num_heads < 2 n_0
    slopes = _power_of_two_slopes(lower_power)
    if lower_power == num_heads:
        return slopes
    in_between = _power_of_two_slopes(2 * lower_power)[0::2]  # h = 1, 3, 5, ... of 2 n_0
    return torch.cat((slopes, in_between[: num_heads - lower_power]))


def alibi_bias(
    num_heads: int,
    q_len: int,
    k_len: int,
    *,
    causal: bool = True,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    r"""The ALiBi bias to add to attention scores: :math:`-s_h \cdot \mathrm{distance}`.

    Keys sit at positions ``0 .. k_len - 1``. The ``q_len`` queries are the *last* ``q_len``
    positions of that sequence, ``k_len - q_len .. k_len - 1`` (with ``q_len == k_len``, the
    usual self-attention; with ``q_len < k_len``, decoding with a key-value cache: query row
    ``i`` is position ``i + k_len - q_len``). With query position ``p`` and key position ``j``:

    * ``causal=True``: entry ``[h, i, j] = -s_h (p - j)`` for keys at or before the query
      (``j <= p``, so the bias is 0 on the query's own position and negative before it), and
      ``-inf`` for future keys (``j > p``). The bias thus also applies the causal mask; adding
      a separate causal mask as well is harmless. Every row has a finite entry (its own
      position), so a softmax over it never produces NaN.
    * ``causal=False`` (bidirectional attention): ``-s_h |p - j|`` everywhere.

    The authors' code (the ``TransformerDecoder`` of ofirpress/attention_with_linear_biases,
    ``fairseq/models/transformer.py``) adds :math:`s_h \cdot j` instead, which differs from
    :math:`-s_h (p - j)` by :math:`s_h p`, a constant along each row that the softmax ignores;
    here the bias is the distance penalty itself.

    Args:
        num_heads: number of heads, >= 1 (slopes from :func:`alibi_slopes`).
        q_len: number of queries, >= 1 and at most ``k_len``.
        k_len: number of keys, >= 1 and at most ``2**53 - 1`` (distances are formed in
            float64, exact for integers up to that bound).
        causal: whether future keys are masked (``-inf``), see above.
        dtype: floating dtype of the result; computed in float64 and cast once.
        device: device of the result.

    Returns:
        tensor of shape ``(num_heads, q_len, k_len)``.
    """
    num_heads = check_positive_int("num_heads", num_heads)
    q_len = check_positive_int("q_len", q_len)
    k_len = check_positive_int("k_len", k_len)
    if q_len > k_len:
        raise ValueError(
            f"q_len must be at most k_len={k_len} (queries are the last q_len of the k_len "
            f"positions), got q_len={q_len}"
        )
    causal = check_bool("causal", causal)
    dtype = check_floating_dtype("dtype", dtype)
    device = check_device("device", device)
    check_table_size("num_heads * q_len", num_heads * q_len, "k_len", k_len)
    # float64 distances and bias (with the causal mask), then the bias in ``dtype``
    entries = num_heads * q_len * k_len
    nbytes = q_len * k_len * (8 + 1) + entries * 8
    if dtype != torch.float64 or device is not None:
        nbytes += entries * dtype.itemsize
    what = (
        f"alibi_bias(num_heads={num_heads}, q_len={q_len}, k_len={k_len}): {entries} "
        f"{str(dtype).removeprefix('torch.')} entries"
    )
    check_memory(what, nbytes)

    with naming_allocation(what, nbytes):
        query_positions = torch.arange(k_len - q_len, k_len, dtype=torch.float64)  # (q_len,)
        key_positions = torch.arange(k_len, dtype=torch.float64)  # (k_len,)
        distance = query_positions[:, None] - key_positions[None, :]  # (q_len, k_len), p - j
        slopes = alibi_slopes(num_heads)[:, None, None]  # (num_heads, 1, 1)
        # -s (p - j), in place; adding 0.0 turns the diagonal's -0.0 into +0.0.
        bias = (slopes * (distance if causal else distance.abs())).neg_().add_(0.0)
        if causal:
            bias.masked_fill_(distance < 0, float("-inf"))
        return bias.to(dtype=dtype, device=device)
