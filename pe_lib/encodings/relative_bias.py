r"""Relative positions as indices into a learned table: Shaw's clipped distances and T5's buckets.

Before RoPE and ALiBi, relative attention learned one value per *distance* ``j - i`` between a
query at ``i`` and a key at ``j``. Shaw et al. (2018, arXiv 1803.02155, section 3.2) clip the
distance to ``[-k, k]``, so every distance beyond ``k`` shares a row; T5 (Raffel et al. 2020,
section 2.1) learns one scalar bias per head and *bucket*: distances below ``num_buckets / 4``
(one side) each have their own bucket, longer ones share buckets whose widths grow
geometrically up to ``max_distance``, and everything farther falls into the last bucket.
:func:`pe_lib.encodings.alibi.alibi_bias` is the member of the family with nothing learned: one slope
per head, times the distance, never clipped.
"""

from __future__ import annotations

import math

import torch

from .._validation import (
    MAX_EXACT_INT,
    check_bool,
    check_memory,
    check_positive_int,
    check_shift_entries,
    check_table_size,
    naming_allocation,
)

__all__ = ["clipped_relative_positions", "t5_relative_buckets"]


def _distances(q_len: int, k_len: int) -> torch.Tensor:
    """``j - i`` for query ``i`` (rows) and key ``j`` (columns), int64 ``(q_len, k_len)``."""
    return torch.arange(k_len).unsqueeze(0) - torch.arange(q_len).unsqueeze(1)


def clipped_relative_positions(q_len: int, k_len: int, max_distance: int) -> torch.Tensor:
    """Shaw et al.'s index of each query-key pair: ``clip(j - i, -k, k) + k``.

    Returns:
        int64 ``(q_len, k_len)`` in ``[0, 2k]``: the row of the ``2k + 1``-row table of relative
        embeddings that pair uses (added to the key, and to the value, in the paper's
        equations 3 and 4).

    Raises:
        TypeError: a size that is not an int (``bool`` and floats included).
        ValueError: a size < 1 or beyond ``2**53 - 1``, or a ``(q_len, k_len)`` index that needs
            more memory than this machine has (refused before anything is allocated).
    """
    q_len, k_len = check_positive_int("q_len", q_len), check_positive_int("k_len", k_len)
    k = check_positive_int("max_distance", max_distance)
    check_table_size("q_len", q_len, "k_len", k_len)
    # the distances, and the clipped index made from them
    nbytes = 2 * q_len * k_len * 8 + (q_len + k_len) * 8
    what = (
        f"clipped_relative_positions(q_len={q_len}, k_len={k_len}): {q_len * k_len} int64 indices"
    )
    check_memory(what, nbytes)
    with naming_allocation(what, nbytes):
        return _distances(q_len, k_len).clamp(-k, k) + k


def t5_relative_buckets(
    relative_position: torch.Tensor,
    *,
    bidirectional: bool = True,
    num_buckets: int = 32,
    max_distance: int = 128,
) -> torch.Tensor:
    """T5's bucket of each relative position ``j - i``, as the model computes it.

    With ``bidirectional`` (T5's encoder), half of the buckets are for keys after the query.
    On each side, the first half of the buckets hold one distance each (``0 .. n/2 - 1`` for
    ``n`` buckets on that side), and the rest split ``[n/2, max_distance)`` logarithmically:
    the bucket of a longer distance ``r`` is ``n/2 + floor(log(r / (n/2)) / log(max_distance /
    (n/2)) * n/2)``, capped at ``n - 1``. The logarithm is taken in float32 and truncated, as in
    ``T5Attention._relative_position_bucket`` (transformers' ``models/t5/modeling_t5.py``). Where
    the quotient is an integer in exact arithmetic, float32 and float64 can round to either side
    of it: T5's own setting (32 buckets, 128) gives the same buckets in both, but in an encoder
    with 18 buckets and ``max_distance=128``, distances 8, 16 and 64 fall one bucket apart in the
    two. Without ``bidirectional`` (the decoder), keys after the query (``j > i``), masked
    anyway, fall into bucket 0 with distance 0.

    Args:
        relative_position: int64 tensor of ``j - i`` values, any shape, each of absolute value at
            most ``2**53 - 1`` (the distance between two positions, which are at most
            ``2**53 - 1``).
        bidirectional: True for an encoder, False for a causal decoder.
        num_buckets: buckets in all (both sides together when bidirectional); T5 uses 32.
        max_distance: the distance from which all share the last bucket; T5 uses 128.

    Returns:
        int64 tensor of ``relative_position``'s shape, values in ``[0, num_buckets)``.

    Raises:
        TypeError: ``relative_position`` not an int64 tensor; a non-int ``num_buckets`` or
            ``max_distance``, or a non-bool ``bidirectional``.
        ValueError: an entry of ``relative_position`` beyond ``±(2**53 - 1)`` (``-2**63``, whose
            negation overflows int64, included); too few buckets for the logarithmic ones. The
            entries are read on the CPU only, outside ``torch.compile`` (reading a GPU's values
            makes the host wait for the device): elsewhere an entry beyond the bound is not
            refused and is bucketed as its distance says (the last bucket of its side, or
            bucket 0 for a key after the query in a decoder).
    """
    if not isinstance(relative_position, torch.Tensor) or relative_position.dtype != torch.int64:
        got = getattr(relative_position, "dtype", type(relative_position).__name__)
        raise TypeError(f"relative_position must be an int64 tensor of j - i, got {got}")
    check_shift_entries("relative_position", relative_position, "relative positions j - i")
    bidirectional = check_bool("bidirectional", bidirectional)
    buckets = check_positive_int("num_buckets", num_buckets)
    max_distance = check_positive_int("max_distance", max_distance)
    side = buckets // 2 if bidirectional else buckets
    exact = side // 2
    if exact < 1 or max_distance <= exact:
        raise ValueError(
            f"num_buckets={buckets} and max_distance={max_distance} leave no logarithmic buckets: "
            f"need at least {4 if bidirectional else 2} buckets and max_distance > {max(exact, 1)}"
        )
    # every distance from max_distance on shares the last bucket: bounding the distances keeps
    # their negation and absolute value within int64 (that of -2**63 is not) without moving a
    # bucket
    relative_position = relative_position.clamp(-MAX_EXACT_INT, MAX_EXACT_INT)
    if bidirectional:
        offset = (relative_position > 0).to(torch.int64) * side
        distance = relative_position.abs()
    else:
        offset = torch.zeros_like(relative_position)
        distance = (-relative_position).clamp(min=0)
    # float32 on purpose: in some settings the model's rounding moves a bucket boundary.
    scaled = torch.log(distance.float() / exact) / math.log(max_distance / exact) * (side - exact)
    far = (exact + scaled.to(torch.int64)).clamp(max=side - 1)
    return offset + torch.where(distance < exact, distance, far)
