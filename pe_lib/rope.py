r"""Rotary position embedding (RoPE) of Su et al. (2021), RoFormer, section 3.4.

Each query or key vector :math:`x \in \mathbb{R}^{d}` (``d = head_dim``, even) is split into
``d/2`` channel pairs, and pair ``i`` at position ``m`` is rotated by the angle
:math:`m\,\theta_i`, with the frequencies of the sinusoidal encoding:

.. math::

    \theta_i = \mathrm{base}^{-2i/d}, \qquad
    \begin{pmatrix} y_a \\ y_b \end{pmatrix}
    = \begin{pmatrix} \cos m\theta_i & -\sin m\theta_i \\ \sin m\theta_i & \cos m\theta_i \end{pmatrix}
      \begin{pmatrix} x_a \\ x_b \end{pmatrix},
    \qquad i = 0, \dots, d/2 - 1.

Written as :math:`R_m x`, rotations compose, :math:`R_m^{\top} R_n = R_{n-m}`, so the attention
score :math:`(R_m q)^{\top} (R_n k) = q^{\top} R_{n-m}\, k` depends on the positions only
through their difference ``n - m``: the score is relative *after* the projections
:math:`W_q, W_k`, which the additive sinusoidal encoding does not achieve.

Two channel layouts pair the coordinates differently (the rotation is the same up to a fixed
permutation of channels):

* ``"interleaved"``: pair ``i`` is channels ``(2i, 2i+1)``, as in RoFormer and Meta's Llama
  code (Touvron et al., 2023);
* ``"half"``: pair ``i`` is channels ``(i, i + d/2)``, the ``rotate_half`` convention of
  GPT-NeoX (Black et al., 2022) and Hugging Face Transformers.

Precision: angles :math:`m\,\theta_i` are formed in float64 from integer positions (as in
:mod:`pe_lib.sinusoidal`) and their cosines and sines are cast once to float32 (float64 for
float64 inputs). The rotation of a float16 or bfloat16 input is computed in float32 and the
result is rounded once to the input dtype. This also holds under ``torch.autocast``: the
computation runs with autocast disabled. Forming angles in bfloat16 instead is badly wrong
beyond a few hundred positions: bfloat16 keeps 8 significant bits, so between 8,192 and 16,384
only multiples of 64 exist. Position 10,001 becomes 9,984, and the angle of the fastest pair
(:math:`\theta_0 = 1` radian per position) is off by 17 radians.
"""

from __future__ import annotations

import torch
from torch import nn

from ._validation import check_base, check_layout, check_nonnegative_int, check_positive_int
from .sinusoidal import angular_frequencies

__all__ = ["RotaryEmbedding", "apply_rope", "rope_angles"]

ROPE_LAYOUTS = ("interleaved", "half")


def _check_head_dim(head_dim: object, name: str = "head_dim") -> int:
    head_dim = check_positive_int(name, head_dim)
    if head_dim % 2:
        raise ValueError(
            f"{name} must be even for RoPE (channels are rotated in pairs), got {head_dim}"
        )
    return head_dim


def _check_positions(positions: object, name: str = "positions") -> torch.Tensor:
    """An int64 tensor with at least one dimension and no negative entry."""
    if not isinstance(positions, torch.Tensor):
        raise TypeError(
            f"{name} must be an int64 torch.Tensor of positions, got {type(positions).__name__}"
        )
    if positions.dtype != torch.int64:
        raise TypeError(
            f"{name} must have dtype torch.int64 (integer positions; angles are formed in "
            f"float64 from them), got {positions.dtype}"
        )
    if positions.dim() == 0:
        raise ValueError(
            f"{name} must have shape (..., seq_len) with at least one dimension, got a 0-d tensor"
        )
    if positions.numel() and int(positions.min()) < 0:
        raise ValueError(
            f"{name} must be non-negative positions, got a minimum of {int(positions.min())}"
        )
    return positions


def _angle_dtype(device: torch.device) -> torch.dtype:
    """float64 wherever the device supports it (Apple's MPS does not)."""
    return torch.float32 if device.type == "mps" else torch.float64


def rope_angles(positions: torch.Tensor, head_dim: int, *, base: float = 10000.0) -> torch.Tensor:
    r"""The rotation angles :math:`m\,\theta_i` with :math:`\theta_i = \mathrm{base}^{-2i/d}`.

    Args:
        positions: int64 tensor of shape ``(..., seq_len)``, non-negative positions ``m``.
        head_dim: size ``d`` of the vectors to be rotated, even and >= 2.
        base: frequency base, > 1 (10000 in RoFormer).

    Returns:
        tensor of shape ``(..., seq_len, head_dim // 2)`` on the device of ``positions``,
        entry ``[..., j, i] = positions[..., j] * theta_i``. Its dtype is float64 whatever
        dtype the caller works in (float32 on Apple's MPS, which has no float64): integer
        positions up to :math:`2^{53}` are exact in float64, and the product is rounded once.
    """
    positions = _check_positions(positions)
    head_dim = _check_head_dim(head_dim)
    base = check_base(base)
    dtype = _angle_dtype(positions.device)
    theta = angular_frequencies(head_dim, base).to(device=positions.device, dtype=dtype)
    with torch.autocast(device_type=positions.device.type, enabled=False):
        return positions.to(dtype)[..., None] * theta  # (..., seq_len, head_dim/2)


def _check_x(x: object, name: str = "x") -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(
            f"{name} must have a floating dtype (float16, bfloat16, float32, float64), got {x.dtype}"
        )
    if x.dim() < 2:
        raise ValueError(
            f"{name} must have shape (..., seq_len, head_dim) with at least 2 dimensions, "
            f"got shape {tuple(x.shape)}"
        )
    if x.shape[-1] % 2:
        raise ValueError(
            f"{name} must have an even head_dim (last dimension) for RoPE, channels are rotated "
            f"in pairs; got head_dim={x.shape[-1]} (shape {tuple(x.shape)})"
        )
    return x


def _check_positions_for(x: torch.Tensor, positions: torch.Tensor) -> None:
    """``positions`` is ``(seq_len,)`` or ``x.shape[:-1]`` with leading sizes possibly 1."""
    lead = tuple(x.shape[:-2])
    seq_len = x.shape[-2]
    shape = tuple(positions.shape)
    shared = shape == (seq_len,)
    per_vector = (
        len(shape) == len(lead) + 1
        and shape[-1] == seq_len
        and all(p in (1, s) for p, s in zip(shape[:-1], lead, strict=True))
    )
    if not (shared or per_vector):
        example = "(seq_len,)" if not lead else f"({seq_len},) or {(*lead, seq_len)}"
        raise ValueError(
            f"positions must have shape {example} for x of shape {tuple(x.shape)} (leading "
            f"sizes may be 1, e.g. (batch, 1, seq_len) for (batch, heads, seq_len, head_dim)), "
            f"got shape {shape}"
        )
    if positions.device != x.device:
        raise ValueError(
            f"positions must be on the device of x ({x.device}), got {positions.device}"
        )


def _rotate_half_layout(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Pairs ``(i, i + d/2)``; ``cos``, ``sin``: ``(..., seq_len, d/2)`` broadcastable to ``x``."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    if torch.is_grad_enabled() and x.requires_grad:
        return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)
    # No autograd: write both halves straight into the output, four passes over half of x.
    out = torch.empty(
        torch.broadcast_shapes(x.shape, (*cos.shape[:-1], x.shape[-1])),
        dtype=x.dtype,
        device=x.device,
    )
    out1, out2 = out[..., :half], out[..., half:]
    torch.mul(x1, cos, out=out1)
    out1.addcmul_(x2, sin, value=-1.0)
    torch.mul(x2, cos, out=out2)
    out2.addcmul_(x1, sin)
    return out


def _rotate_interleaved_layout(x: torch.Tensor, angles: torch.Tensor) -> torch.Tensor:
    """Pairs ``(2i, 2i+1)`` read as complex numbers ``x_{2i} + i x_{2i+1}``, times ``e^{i angle}``."""
    pairs = x.unflatten(-1, (-1, 2))  # (..., seq_len, d/2, 2), a view
    if (
        pairs.storage_offset() % 2
        or any(s % 2 for s in pairs.stride()[:-1])
        or pairs.stride(-1) != 1
    ):
        pairs = pairs.contiguous()
    complex_dtype = torch.complex128 if x.dtype == torch.float64 else torch.complex64
    rotation = torch.polar(torch.ones_like(angles), angles).to(complex_dtype)
    rotated = torch.view_as_complex(pairs) * rotation  # (..., seq_len, d/2)
    return torch.view_as_real(rotated).flatten(-2)


def apply_rope(
    x: torch.Tensor,
    positions: torch.Tensor | None = None,
    *,
    base: float = 10000.0,
    layout: str = "interleaved",
) -> torch.Tensor:
    r"""Rotates each channel pair of ``x`` at position ``m`` by :math:`m\,\theta_i` (RoFormer, eq. 34).

    Args:
        x: queries or keys, shape ``(..., seq_len, head_dim)`` with ``head_dim`` even, e.g.
            ``(batch, heads, seq_len, head_dim)``; float16, bfloat16, float32 or float64.
        positions: int64, non-negative. ``None`` (default) means ``0 .. seq_len - 1``. Shape
            ``(seq_len,)``: the same positions for every leading index of ``x``. Or one
            position per vector: shape ``x.shape[:-1]``, where a leading size may be 1 to be
            shared, e.g. ``(batch, 1, seq_len)`` for ``x`` of shape
            ``(batch, heads, seq_len, head_dim)`` (left-padded batches). No other shape is
            accepted: in particular ``(batch, seq_len)`` for a 4-d ``x`` is rejected rather
            than aligned with the wrong axis; write ``positions[:, None, :]``.
        base: frequency base, > 1.
        layout: ``"interleaved"`` (pairs ``(2i, 2i+1)``, RoFormer and Llama) or ``"half"``
            (pairs ``(i, i + head_dim/2)``, GPT-NeoX and Hugging Face ``rotate_half``).

    Returns:
        a new tensor of the shape, dtype and device of ``x``. Angles are float64; the rotation
        runs in float32 for float16, bfloat16 and float32 inputs (float64 for float64) and is
        rounded once to ``x.dtype``, also inside ``torch.autocast``. Differentiable in ``x``.
    """
    x = _check_x(x)
    base = check_base(base)
    layout = check_layout(layout, ROPE_LAYOUTS)
    head_dim, seq_len = x.shape[-1], x.shape[-2]
    if positions is None:
        positions = torch.arange(seq_len, device=x.device)
    else:
        positions = _check_positions(positions)
        _check_positions_for(x, positions)

    compute_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    with torch.autocast(device_type=x.device.type, enabled=False):
        angles = rope_angles(positions, head_dim, base=base)  # (..., seq_len, d/2) float64
        x_compute = x.to(compute_dtype)
        if layout == "interleaved":
            rotated = _rotate_interleaved_layout(x_compute, angles)
        else:
            cos = torch.cos(angles).to(compute_dtype)
            sin = torch.sin(angles).to(compute_dtype)
            rotated = _rotate_half_layout(x_compute, cos, sin)
    return rotated.to(x.dtype)


class RotaryEmbedding(nn.Module):
    r"""Rotates queries and keys for attention (RoFormer), with a position offset for decoding.

    ``forward(q, k, offset)`` rotates both ``q`` and ``k`` at positions
    ``offset .. offset + seq_len - 1``. That is the key-value-cache convention: at each decoding
    step, pass only the *new* tokens' queries and keys with ``offset`` = the number of tokens
    already cached, then append the rotated keys to the cache. Cached keys are stored already
    rotated and are never passed again, so ``q`` and ``k`` must have the same ``seq_len``
    (a mismatch raises ``ValueError``). Decoding token by token this way gives exactly the
    rotation of the full sequence.

    The module holds no tensors: the angles are recomputed from ``head_dim`` and ``base`` on
    every call (in float64, see :func:`apply_rope`), nothing is cached or mutated in
    ``forward``, and ``state_dict()`` is empty.

    Args:
        head_dim: size of each head's queries and keys, even and >= 2.
        base: frequency base, > 1.
        layout: ``"interleaved"`` or ``"half"`` (see :func:`apply_rope`).

    Shapes:
        ``q``: ``(..., seq_len, head_dim)``; ``k``: ``(..., seq_len, head_dim)`` (leading
        dimensions may differ from ``q``'s, e.g. fewer key heads); outputs: the same as the
        inputs, dtype included.
    """

    def __init__(
        self, head_dim: int, *, base: float = 10000.0, layout: str = "interleaved"
    ) -> None:
        super().__init__()
        self.head_dim = _check_head_dim(head_dim)
        self.base = check_base(base)
        self.layout = check_layout(layout, ROPE_LAYOUTS)

    def extra_repr(self) -> str:
        return f"head_dim={self.head_dim}, base={self.base}, layout={self.layout!r}"

    def forward(
        self, q: torch.Tensor, k: torch.Tensor, offset: int = 0
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Returns ``(q_rot, k_rot)``, both rotated at positions ``offset .. offset + seq_len - 1``."""
        q, k = _check_x(q, "q"), _check_x(k, "k")
        offset = check_nonnegative_int("offset", offset)
        for name, t in (("q", q), ("k", k)):
            if t.shape[-1] != self.head_dim:
                raise ValueError(
                    f"{name} must have head_dim={self.head_dim} as its last dimension, "
                    f"got shape {tuple(t.shape)}"
                )
        if q.shape[-2] != k.shape[-2]:
            raise ValueError(
                f"q and k must have the same seq_len (the new tokens; cached keys are stored "
                f"already rotated and are not passed again), got q {tuple(q.shape)} and "
                f"k {tuple(k.shape)}"
            )
        positions = torch.arange(offset, offset + q.shape[-2], device=q.device)
        rotate = {"base": self.base, "layout": self.layout}
        return apply_rope(q, positions, **rotate), apply_rope(k, positions.to(k.device), **rotate)
