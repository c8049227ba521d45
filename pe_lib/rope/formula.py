r"""Rotary position embedding (RoPE) of Su et al. (2021), RoFormer, section 3.2: the formula.

Shape legend: ``...`` leading dimensions (batch, heads), ``s`` positions (``seq_len``), ``d``
channels of a query or key (``head_dim``, even), ``n`` rotated channel pairs (``d/2``, fewer
under partial rotation).

1. **theta.** Pair ``i`` turns by :math:`\theta_i = \mathrm{base}^{-2i/d}` per position, the
   frequencies of the sinusoidal encoding (:func:`~pe_lib.rope.scaling.rope_frequencies`,
   ``(n,)``). A context-extension scaling (``scaling=``, a ``config.json`` ``rope_scaling``
   entry: position interpolation, NTK, YaRN, Llama 3.1, ...) replaces them by its
   :math:`\theta'_i` and gives an attention factor that multiplies cos and sin (YaRN's
   :math:`\sqrt{1/t}`, so that the logits :math:`q^{\top}k` are multiplied by :math:`1/t`).
2. **Angles.** Position ``m`` turns pair ``i`` by :math:`m\,\theta_i`: ``(..., s, n)``.
3. **Rotation.** Pair ``i`` of the vector at position ``m`` becomes

   .. math::

       \begin{pmatrix} y_a \\ y_b \end{pmatrix}
       = \begin{pmatrix} \cos m\theta_i & -\sin m\theta_i \\ \sin m\theta_i & \cos m\theta_i \end{pmatrix}
         \begin{pmatrix} x_a \\ x_b \end{pmatrix},

   in one of two channel layouts (the same rotation up to a fixed permutation of channels):
   ``"interleaved"``, pair ``i`` is channels ``(2i, 2i+1)`` (RoFormer; Meta's Llama,
   ``apply_rotary_emb`` in ``llama/model.py`` of github.com/meta-llama/llama); ``"half"``, pair
   ``i`` is ``(i, i + d/2)`` (the ``rotate_half`` of GPT-NeoX's
   ``megatron/model/positional_embeddings.py`` and of Hugging Face Transformers). Written for
   all pairs at once: ``y = x * [cos, cos] + swap(x) * [-sin, sin]``, ``swap`` exchanging each
   pair's two channels.
4. **Partial rotation.** With ``n < d/2`` pairs (``partial_rotary_factor`` in GPT-NeoX, Phi and
   Gemma 4), the first ``2n`` channels are rotated, paired within them in the chosen layout, and
   the others pass unchanged, as Transformers' ``modeling_gpt_neox.py`` (``rotary_ndims``) and
   ``modeling_gptj.py`` (``rotary_dim``, interleaved) do.

Written :math:`R_m x`, rotations compose, :math:`R_m^{\top} R_n = R_{n-m}`, so the attention
score :math:`(R_m q)^{\top} (R_n k) = q^{\top} R_{n-m}\, k` depends on the positions only
through their difference ``n - m``, *after* the projections :math:`W_q, W_k`.

Precision: angles are formed in float64 from the positions and their cosines and sines are
rounded once to float32 (float64 for float64 inputs); a float16 or bfloat16 input is rotated in
float32 and rounded once to its dtype, also under ``torch.autocast`` (every operation is
elementwise, on no autocast list, with explicit dtypes). Angles formed in bfloat16 would be
badly wrong beyond a few hundred positions: between 8,192 and 16,384 bfloat16 holds only
multiples of 64, so position 10,001 becomes 9,984 and the fastest pair is off by 17 radians.
The sin table is that of the signed angles ``-m theta_i, m theta_i`` (cos is even and sin odd
to the last bit), so no table is assembled after the cos and sin.

The module that rotates queries and keys in attention, with its cache of cos and sin and the
offset of decoding, is :class:`~pe_lib.rope.RotaryEmbedding`.

Speed: :mod:`pe_lib.rope.fast` keeps the frequencies between calls and, on the CPU without
autograd from ``2**16`` elements, writes the same rotation block by block; its
:func:`~pe_lib.rope.fast.dispatch` is the one place that chooses. This module is what runs under
autograd, ``torch.compile`` (one graph, fused into one kernel) and on GPUs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from .._precision import compute_dtype_for
from .._validation import (
    check_head_dim,
    check_layout,
    check_positions,
    check_positions_match,
    check_rotary_input,
    check_rotary_tables,
)
from . import fast
from .scaling import ScalingConfig, length_for, resolve_scaling, rope_frequencies

__all__ = ["apply_rope", "rope_angles", "rope_frequencies", "rotate"]


# --- 1. theta, per channel --------------------------------------------------------------------


def _signed(theta: torch.Tensor, layout: str) -> torch.Tensor:
    """``(..., n)`` -> ``(..., 2n)``: each value once per channel of its pair in ``layout``'s
    order, negated for the first channel (half: ``[-t, t]``; interleaved: ``[-t_0, t_0, -t_1,
    t_1, ...]``). The cos and sin of these angles are the tables ``[cos, cos]`` and
    ``[-sin, sin]`` of step 3."""
    if layout == "half":
        return torch.cat((-theta, theta), dim=-1)
    return torch.stack((-theta, theta), dim=-1).flatten(-2)


def _signed_theta(
    config: ScalingConfig,
    head_dim: int,
    seq_len: float | None,
    layout: str,
    device: torch.device | None,
) -> tuple[torch.Tensor, float]:
    """The (scaled) theta_i, :func:`_signed` in ``layout``, ``(2n,)`` on ``device``, and the
    attention factor."""
    theta, attention_factor = config.frequencies(head_dim, seq_len, device)
    return _signed(theta, layout), attention_factor


def _theta_on(
    config: ScalingConfig,
    head_dim: int,
    seq_len: float | None,
    layout: str,
    device: torch.device,
) -> tuple[torch.Tensor, float]:
    """:func:`_signed_theta` on ``device`` in its angle dtype: kept between calls where
    :func:`pe_lib.rope.fast.dispatch` says so, else formed where the call runs (on ``device``
    itself where it holds float64, so a compiled graph holds no copy from the host)."""
    if fast.dispatch().keep:
        return fast.kept_frequencies(_signed_theta, config, head_dim, seq_len, layout, device)
    on = device if compute_dtype_for(device) == torch.float64 else None
    theta, attention_factor = _signed_theta(config, head_dim, seq_len, layout, on)
    return fast.moved(theta, device), attention_factor


# --- 2. angles, and their cos and sin ---------------------------------------------------------


def _angles(positions: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """positions ``(..., s)`` times theta ``(n,)`` -> ``(..., s, n)`` in theta's dtype (int64
    positions are converted exactly in the product itself)."""
    if positions.is_floating_point() and positions.dtype != theta.dtype:
        positions = positions.to(theta.dtype)
    return positions[..., None] * theta


def _tables(
    config: ScalingConfig,
    head_dim: int,
    seq_len: float | None,
    positions: torch.Tensor,
    dtype: torch.dtype,
    layout: str,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``[cos, cos]`` and ``[-sin, sin]`` ``(..., s, 2n)`` in ``layout``'s channel order on the
    positions' device, times the attention factor: float64 angles, each rounded once to ``dtype``."""
    theta, attention_factor = _theta_on(config, head_dim, seq_len, layout, positions.device)
    angles = _angles(positions, theta)
    cos, sin = torch.cos(angles), torch.sin(angles)
    if attention_factor != 1.0:
        cos, sin = cos * attention_factor, sin * attention_factor
    return cos.to(dtype), sin.to(dtype)


def _full_width(
    cos: torch.Tensor, sin: torch.Tensor, layout: str
) -> tuple[torch.Tensor, torch.Tensor]:
    """Given cos and sin ``(..., n)`` -> ``[cos, cos]`` and ``[-sin, sin]`` ``(..., 2n)``."""
    if layout == "half":
        return torch.cat((cos, cos), dim=-1), _signed(sin, layout)
    return torch.stack((cos, cos), dim=-1).flatten(-2), _signed(sin, layout)


# --- 3. and 4. the rotation, whole or partial -------------------------------------------------


def _swap(x: torch.Tensor, layout: str) -> torch.Tensor:
    """Each pair's two channels exchanged: half ``(x1, x2) -> (x2, x1)``; interleaved
    ``(x_{2i}, x_{2i+1}) -> (x_{2i+1}, x_{2i})``."""
    if layout == "half":
        return x.roll(x.shape[-1] // 2, dims=-1)
    return x.view(*x.shape[:-1], x.shape[-1] // 2, 2).flip(-1).flatten(-2)


def _rotate(
    x: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    layout: str,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """``x * cos + swap(x) * sin`` on the first ``2n`` channels (``cos``, ``sin``: the
    ``(..., s, 2n)`` tables in the rotation dtype), the others unchanged, rounded once to
    ``x.dtype``. A float16 or bfloat16 ``x`` is read as float32 by type promotion (exactly)."""
    if fast.dispatch(x).blocked:
        return fast.rotate_into(x, cos, sin, layout, out)
    rotary = cos.shape[-1]
    if rotary == x.shape[-1]:
        result = torch.addcmul(x * cos, _swap(x, layout), sin)
        result = result if result.dtype == x.dtype else result.to(x.dtype)
    else:  # partial rotation: the channels beyond the first 2n pass unchanged
        turned = torch.addcmul(x[..., :rotary] * cos, _swap(x[..., :rotary], layout), sin)
        result = torch.cat((turned.to(x.dtype), x[..., rotary:]), dim=-1)
    return result if out is None else out.copy_(result)


def _rotation_dtype(x: torch.Tensor) -> torch.dtype:
    return torch.float64 if x.dtype == torch.float64 else torch.float32


# --- the public functions ---------------------------------------------------------------------


def rope_angles(
    positions: torch.Tensor,
    head_dim: int,
    *,
    base: float | None = None,
    scaling: Mapping[str, Any] | ScalingConfig | None = None,
    seq_len: int | None = None,
) -> torch.Tensor:
    r"""The rotation angles :math:`m\,\theta_i` with :math:`\theta_i = \mathrm{base}^{-2i/d}`.

    Args:
        positions: tensor of shape ``(..., seq_len)``, non-negative positions ``m``: int64, or
            float64 for fractional positions (position interpolation rotates by ``m / factor``).
        head_dim: size ``d`` of the vectors to be rotated, even and >= 2.
        base: frequency base, > 1 (10000 in RoFormer, the default, unless ``scaling`` holds a
            ``rope_theta``).
        scaling: ``None`` or a ``config.json`` ``rope_scaling`` mapping: the angles use its
            :math:`\theta'_i` (:func:`rope_frequencies`; its attention factor is not an angle and
            is not applied here).
        seq_len: the current sequence length, for scalings whose frequencies depend on it
            (``"dynamic"``, ``"longrope"``): an int, at least the last position + 1, checked
            whatever the scaling. Default: the last position + 1, fractional for fractional
            positions as transformers' ``max(position_ids) + 1`` (``modeling_rope_utils.py``):
            positions ``[0.0, 511.5]`` give 512.5, beyond a LongRoPE ``L`` of 512.

    Returns:
        tensor of shape ``(..., seq_len, head_dim // 2)`` on the device of ``positions``,
        entry ``[..., j, i] = positions[..., j] * theta_i``. Its dtype is float64 whatever
        dtype the caller works in (float32 on Apple's MPS, which has no float64): integer
        positions up to :math:`2^{53}` are exact in float64, and the product is rounded once.
    """
    positions = check_positions("positions", positions)
    head_dim = check_head_dim("head_dim", head_dim)
    config = resolve_scaling(scaling, base)
    length = length_for(config, positions, seq_len, "rope_angles")
    theta, _ = config.frequencies(head_dim, length)
    return _angles(positions, fast.moved(theta, positions.device))


def rotate(
    x: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    layout: str = "interleaved",
    *,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    r"""Rotates the channel pairs of ``x`` by given cosines and sines: the RoPE rotation alone.

    Pair ``i`` of vector ``j`` becomes
    :math:`(x_a \cos_{j,i} - x_b \sin_{j,i},\; x_b \cos_{j,i} + x_a \sin_{j,i})`. The tables
    may carry a common scale (an attention factor, or xPos's per-position scale), so a new
    rotary encoding builds its tables and calls this.

    Shapes:
        ``x``: ``(..., seq_len, head_dim)``; ``cos``, ``sin``: ``(..., seq_len, n)`` with
        ``n <= head_dim / 2`` pairs, leading sizes 1 (shared) or those of ``x``; output: as ``x``.

    Args:
        x: floating tensor, ``head_dim`` even.
        cos, sin: floating tensors of one shape. With ``n < head_dim / 2`` (partial rotation,
            GPT-NeoX's and Phi's ``partial_rotary_factor``), the first ``2n`` channels are
            rotated in ``layout`` and the others pass unchanged.
        layout: ``"interleaved"`` (pair ``i`` is channels ``(2i, 2i+1)``) or ``"half"`` (pair
            ``i`` is ``(i, i + n)``).
        out: optional buffer of ``x``'s shape, dtype and device, sharing no memory with ``x``,
            into which the result is written and returned. Not differentiable.

    Returns:
        the rotated ``x``, in ``x``'s dtype. It is computed in float64 for float64 ``x`` and in
        float32 otherwise (``cos`` and ``sin`` are cast to that dtype) and rounded once,
        also inside ``torch.autocast``. Differentiable in ``x``, ``cos`` and ``sin``.
    """
    x = check_rotary_input("x", x)
    layout = check_layout("layout", layout)
    cos, sin = check_rotary_tables(x, cos, sin)
    if out is not None:
        out = fast.check_out("out", out, x)
    dtype = _rotation_dtype(x)
    return _rotate(x, *_full_width(cos.to(dtype), sin.to(dtype), layout), layout, out)


def apply_rope(
    x: torch.Tensor,
    positions: torch.Tensor | None = None,
    *,
    base: float | None = None,
    layout: str = "interleaved",
    scaling: Mapping[str, Any] | ScalingConfig | None = None,
    seq_len: int | None = None,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    r"""Rotates each channel pair of ``x`` at position ``m`` by :math:`m\,\theta_i` (RoFormer, eq. 34).

    Args:
        x: queries or keys, shape ``(..., seq_len, head_dim)`` with ``head_dim`` even, e.g.
            ``(batch, heads, seq_len, head_dim)``; float16, bfloat16, float32 or float64.
        positions: int64 (or float64, for fractional positions), non-negative, at most
            ``2**53 - 1``: entries checked on the CPU only (on a GPU, reading them would make
            every call wait for the device; there a negative entry rotates backwards and a NaN
            gives NaN). ``None`` (default) means ``0 .. seq_len - 1``. Shape
            ``(seq_len,)``: the same positions for every leading index of ``x``. Or one
            position per vector: shape ``x.shape[:-1]``, where a leading size may be 1 to be
            shared, e.g. ``(batch, 1, seq_len)`` for ``x`` of shape
            ``(batch, heads, seq_len, head_dim)`` (left-padded batches). No other shape is
            accepted: in particular ``(batch, seq_len)`` for a 4-d ``x`` is rejected rather
            than aligned with the wrong axis; write ``positions[:, None, :]``.
        base: frequency base, > 1 (default ``DEFAULT_BASE`` = 10000, or ``scaling``'s
            ``rope_theta``).
        layout: ``"interleaved"`` (pairs ``(2i, 2i+1)``, RoFormer and Llama) or ``"half"``
            (pairs ``(i, i + head_dim/2)``, GPT-NeoX and Hugging Face ``rotate_half``).
        scaling: ``None`` (plain RoPE) or a ``config.json`` ``rope_scaling`` mapping (see
            :mod:`pe_lib.rope.scaling`): the angles use its :math:`\theta'_i` and cos and sin are
            multiplied by its attention factor.
        seq_len: the current sequence length, for scalings whose frequencies depend on it
            (``"dynamic"``, ``"longrope"``): an int, at least the last position + 1, checked
            whatever the scaling. Default: the last position + 1, fractional for fractional
            positions as transformers' ``max(position_ids) + 1`` (``modeling_rope_utils.py``):
            positions ``[0.0, 511.5]`` give 512.5, beyond a LongRoPE ``L`` of 512. Queries and
            keys compared with each other must use the same one.
        out: optional buffer of ``x``'s shape, dtype and device, sharing no memory with ``x``:
            the rotation is written into it (same values, one rounding) and it is returned.
            Saves allocating a fresh output at every call; not differentiable (an input that
            requires grad raises ``ValueError``).

    Returns:
        a new tensor (or ``out``) of the shape, dtype and device of ``x``. Angles are float64; the rotation
        runs in float32 for float16, bfloat16 and float32 inputs (float64 for float64) and is
        rounded once to ``x.dtype``, also inside ``torch.autocast``. Differentiable in ``x``.
    """
    x = check_rotary_input("x", x)
    config = resolve_scaling(scaling, base)
    layout = check_layout("layout", layout)
    if out is not None:
        out = fast.check_out("out", out, x)
    if positions is None:
        positions = torch.arange(x.shape[-2], device=x.device)
    else:
        positions = check_positions("positions", positions)
        check_positions_match("positions", positions, x)
    length = length_for(config, positions, seq_len, "apply_rope")
    cos, sin = _tables(config, x.shape[-1], length, positions, _rotation_dtype(x), layout)
    return _rotate(x, cos, sin, layout, out)
