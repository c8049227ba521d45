r"""A minimal single-head scaled dot-product self-attention (Vaswani et al., 2017, eq. 1).

.. math::

    \mathrm{Attention}(Q, K, V) = \mathrm{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V,

    Q = X W_q,\ K = X W_k,\ V = X W_v.

Nothing in it depends on where a row of :math:`X` sits: permuting the rows of :math:`X`
permutes the rows of the output in the same way (permutation equivariance). Encodings that act
inside attention enter through :func:`scaled_dot_product_attention`: RoPE rotates ``q`` and
``k`` before it is called, ALiBi passes its distance penalty as ``bias``
(see :mod:`pe_lib.encodings`).
"""

from __future__ import annotations

import math
import reprlib
from collections.abc import Callable

import torch
from torch import nn

from .._validation import check_features, check_positive_int

__all__ = ["SelfAttention", "scaled_dot_product_attention"]


def _broadcast_shapes(*shapes: torch.Size | tuple[int, ...]) -> tuple[int, ...]:
    """``torch.broadcast_shapes``; raises ``RuntimeError`` when the shapes do not broadcast."""
    return tuple(torch.broadcast_shapes(*shapes))  # type: ignore[no-untyped-call]


def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    mask: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Returns ``(softmax(q k^T / sqrt(d_k) + bias) v, weights)``.

    Args:
        q: ``(..., q_len, d_k)``.
        k: ``(..., k_len, d_k)``, ``k_len >= 1``.
        v: ``(..., k_len, d_v)``.
        mask: optional bool tensor broadcastable to ``(..., q_len, k_len)``; ``False``
            entries are excluded from the softmax. Every query must keep at least one key.
        bias: optional floating tensor broadcastable to ``(..., q_len, k_len)``, added to the
            scaled scores before the mask and the softmax (ALiBi's distance penalty, for
            instance; ``-inf`` entries exclude a key as the mask does). It is cast to the
            scores' dtype.

    The leading ``...`` dimensions of ``q``, ``k`` and ``v`` broadcast against each other,
    and all three share one floating dtype.

    Returns:
        output ``(..., q_len, d_v)`` and attention weights ``(..., q_len, k_len)``, whose
        rows sum to 1.

    Raises:
        TypeError: a non-tensor or non-floating ``q``/``k``/``v``/``bias``, mixed dtypes, a
            non-bool mask.
        ValueError: mismatched shapes, no keys, a mask or bias that does not broadcast to the
            scores, or a mask row that is all ``False`` (its softmax would be NaN).

    The all-``False`` check reads the mask's values, so a ``torch.compile`` of a caller that
    passes a mask breaks its graph there; without a mask it compiles in one graph.
    """
    _check_attention_inputs(q, k, v, mask, bias)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (..., q_len, k_len)
    if bias is not None:
        scores = scores + bias.to(scores.dtype)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def _check_attention_inputs(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None,
    bias: torch.Tensor | None,
) -> None:
    """The checks of :func:`scaled_dot_product_attention`, on arguments of any type."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor) or not t.is_floating_point():
            raise TypeError(
                f"{name} must be a floating torch.Tensor, got {type(t).__name__}"
                + (f" of dtype {t.dtype}" if isinstance(t, torch.Tensor) else "")
            )
        if t.dim() < 2:
            raise ValueError(
                f"{name} must have shape (..., length, features), got {tuple(t.shape)}"
            )
    if not q.dtype == k.dtype == v.dtype:
        raise TypeError(
            f"q, k and v must share one floating dtype, got q {q.dtype}, k {k.dtype}, v {v.dtype}"
        )
    q_shape, k_shape, v_shape = (tuple(int(s) for s in t.shape) for t in (q, k, v))
    if q_shape[-1] != k_shape[-1]:
        raise ValueError(
            f"q and k must share their last dimension d_k, got q {q_shape} and k {k_shape}"
        )
    if k_shape[-2] != v_shape[-2]:
        raise ValueError(f"k and v must have the same length, got k {k_shape} and v {v_shape}")
    if k_shape[-2] == 0:
        raise ValueError(
            f"k must hold at least one key (k_len >= 1; a softmax over no keys is undefined), "
            f"got k {k_shape}"
        )
    try:
        batch_shape = _broadcast_shapes(q_shape[:-2], k_shape[:-2], v_shape[:-2])
    except RuntimeError:
        raise ValueError(
            "the leading (batch) dimensions of q, k and v must broadcast, got q "
            f"{q_shape}, k {k_shape} and v {v_shape}"
        ) from None
    scores_shape = (*batch_shape, q_shape[-2], k_shape[-2])  # (..., q_len, k_len)
    if bias is not None:
        _check_score_operand(
            "bias", bias, "a floating", torch.Tensor.is_floating_point, scores_shape
        )
    if mask is not None:
        _check_score_operand("mask", mask, "a bool", lambda t: t.dtype == torch.bool, scores_shape)
        if not torch.broadcast_to(mask, scores_shape).any(dim=-1).all():
            raise ValueError(
                "mask must let every query attend to at least one key (a row of False has no "
                f"softmax), got a mask of shape {tuple(mask.shape)} with an all-False row"
            )


def _check_score_operand(
    name: str,
    value: object,
    kind: str,
    has_kind: Callable[[torch.Tensor], bool],
    scores_shape: tuple[int, ...],
) -> None:
    """``value`` is a tensor of ``kind`` (``has_kind`` holds) that broadcasts to the scores' shape
    (..., q_len, k_len) without growing it."""
    if not isinstance(value, torch.Tensor) or not has_kind(value):
        raise TypeError(
            f"{name} must be {kind} torch.Tensor, got "
            + (
                f"a tensor of dtype {value.dtype}"
                if isinstance(value, torch.Tensor)
                else f"{reprlib.repr(value)} of type {type(value).__name__}"
            )
        )
    if not _fits(value.shape, scores_shape):
        raise ValueError(
            f"{name} must be broadcastable to the scores' shape (..., q_len, k_len) = "
            f"{scores_shape}, got shape {tuple(value.shape)}"
        )


def _fits(shape: torch.Size | tuple[int, ...], target: tuple[int, ...]) -> bool:
    """Whether a tensor of ``shape`` broadcasts to ``target`` without growing it."""
    try:
        return _broadcast_shapes(shape, target) == target
    except RuntimeError:
        return False


class SelfAttention(nn.Module):
    r"""Single-head self-attention: ``Q, K, V = x W_q, x W_k, x W_v``, no output projection.

    Args:
        d_model: size of the input features, >= 1.
        d_k: size of queries and keys (and values), >= 1; defaults to ``d_model``.

    Shapes:
        ``x``: ``(batch, seq_len, d_model)`` -> output ``(batch, seq_len, d_k)`` and
        weights ``(batch, seq_len, seq_len)``.

    Compilation: ``torch.compile(fullgraph=True)`` compiles it in one graph when no mask is
    passed (see :func:`scaled_dot_product_attention`).
    """

    d_model: int
    d_k: int
    w_q: nn.Linear
    w_k: nn.Linear
    w_v: nn.Linear

    def __init__(self, d_model: int, d_k: int | None = None) -> None:
        super().__init__()
        self.d_model = check_positive_int("d_model", d_model)
        self.d_k = self.d_model if d_k is None else check_positive_int("d_k", d_k)
        self.w_q = nn.Linear(self.d_model, self.d_k, bias=False)
        self.w_k = nn.Linear(self.d_model, self.d_k, bias=False)
        self.w_v = nn.Linear(self.d_model, self.d_k, bias=False)

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``x``: ``(batch, seq_len, d_model)`` -> ``(output, weights)``, shapes as above.

        Args:
            x: input features, of the dtype of the module's weights.
            mask: optional bool mask, see :func:`scaled_dot_product_attention`.
        """
        check_features("x", x, self.d_model)
        if x.dtype != self.w_q.weight.dtype:
            raise TypeError(
                f"x must have the dtype of the module's weights, {self.w_q.weight.dtype}, got "
                f"{x.dtype}: convert one of them, e.g. x.to({self.w_q.weight.dtype}) or "
                f"module.to({x.dtype})"
            )
        return scaled_dot_product_attention(self.w_q(x), self.w_k(x), self.w_v(x), mask=mask)
