r"""Attention sinks: where a softmax that must sum to one puts the attention it does not need.

A softmax gives every query a total weight of one. When no key is relevant, trained models put
that weight on the first tokens, which every query sees (Xiao et al., 2023, arXiv:2309.17453,
"StreamingLLM", section 3.1). Two ways of keeping such a sink are in use:

* :func:`streaming_cache`: StreamingLLM's cache (section 3.2) keeps the first ``sinks`` tokens
  and the last ``window`` ones and evicts the middle; positions are the slots *within the
  cache*, which StreamingLLM gives by storing keys before rotation and rotating them when they
  are read (rotated keys rotated again when they move do the same:
  :meth:`pe_lib.models.inference.KVCache.keep`);
* :func:`softmax_with_sinks`: gpt-oss's learned sinks, one logit per head that joins every
  query's softmax in its denominator and carries no value and no position (transformers 5.23,
  ``eager_attention_forward`` in ``models/gpt_oss/modeling_gpt_oss.py``).
"""

from __future__ import annotations

import torch

from .._validation import (
    check_instance,
    check_memory,
    check_nonnegative_int,
    check_positive_int,
    naming_allocation,
)

__all__ = ["softmax_with_sinks", "streaming_cache"]


def softmax_with_sinks(scores: torch.Tensor, sinks: torch.Tensor) -> torch.Tensor:
    """The attention weights of ``scores`` with one sink logit per head in the denominator.

    Args:
        scores: floating logits of shape ``(..., heads, queries, keys)`` (masked keys ``-inf``).
        sinks: floating sink logits of shape ``(heads,)``.

    Returns:
        weights of the shape of ``scores``; each row sums to ``1 - w_sink < 1``, where ``w_sink``
        is what the sink took: ``exp(s_h) / (exp(s_h) + sum_j exp(scores_j))``.

    Both tensors are on one device (the meta device included: the weights are then a shape
    without values); ``sinks`` is cast to the dtype of ``scores``.

    Raises:
        TypeError: a tensor is not floating point.
        ValueError: the shapes do not fit, or the tensors are on different devices.
    """
    scores = check_instance("scores", scores, torch.Tensor)
    sinks = check_instance("sinks", sinks, torch.Tensor)
    for name, value in (("scores", scores), ("sinks", sinks)):
        if not value.is_floating_point():
            raise TypeError(f"{name} must be a floating tensor, got {value.dtype}")
    if scores.dim() < 3 or sinks.shape != (scores.shape[-3],):
        raise ValueError(
            f"sinks must have shape (heads,) with heads = scores.shape[-3], and scores shape "
            f"(..., heads, queries, keys); got sinks {tuple(sinks.shape)} and scores "
            f"{tuple(scores.shape)}"
        )
    if sinks.device != scores.device:
        raise ValueError(
            f"sinks must be on the device of scores ({scores.device}), got sinks on {sinks.device}"
        )
    column = sinks.to(scores.dtype)[:, None, None].expand(*scores.shape[:-1], 1)
    logits = torch.cat((scores, column), dim=-1)
    # the sink's column is dropped after the softmax: it holds no value
    return logits.softmax(dim=-1)[..., :-1]


def streaming_cache(length: int, sinks: int, window: int) -> tuple[torch.Tensor, torch.Tensor]:
    """StreamingLLM's cache after ``length`` tokens: which tokens it keeps, at which positions.

    Args:
        length: tokens seen so far, >= 1.
        sinks: the first tokens always kept (the paper keeps 4), >= 0.
        window: the most recent tokens kept, >= 1.

    Returns:
        ``(kept, positions)``: int64 tensors of the same length, the kept tokens' indices in the
        text (increasing) and the positions they are rotated at, their slots in the cache
        ``0, 1, ..., len(kept) - 1``.

    Raises:
        TypeError, ValueError: an argument is not an int in its range, or the kept tokens'
            indices need more memory than this machine has (refused before anything is
            allocated).
    """
    length = check_positive_int("length", length)
    sinks = check_nonnegative_int("sinks", sinks)
    window = check_positive_int("window", window)
    count = min(length, sinks + window)
    # the two int64 results, and the two ranges the first is joined from
    nbytes = 32 * count
    what = (
        f"streaming_cache(length={length}, sinks={sinks}, window={window}): {count} kept "
        f"tokens' int64 indices and positions"
    )
    check_memory(what, nbytes)
    with naming_allocation(what, nbytes):
        if length <= sinks + window:
            kept = torch.arange(length)
        else:
            kept = torch.cat((torch.arange(sinks), torch.arange(length - window, length)))
        return kept, torch.arange(count)
