r"""The shift matrix of the sinusoidal encoding: ``PE(pos + k)`` is a linear map of ``PE(pos)``.

This module is about one property of the *additive* sinusoidal table (chapter 4): shifting a
position by ``k`` is a fixed linear map, the same for every ``pos``. It is not an encoding of
its own; the encodings that act inside attention on relative distances, RoPE and ALiBi, live in
:mod:`pe_lib.rope` and :mod:`pe_lib.encodings.alibi` (see :data:`pe_lib.encodings.ENCODINGS`).

From the angle-addition identities, for each frequency :math:`\omega_i`

.. math::

    & \begin{pmatrix} \sin((pos+k)\omega_i) \\ \cos((pos+k)\omega_i) \end{pmatrix} \\
    &= \begin{pmatrix} \cos k\omega_i & \sin k\omega_i \\ -\sin k\omega_i & \cos k\omega_i \end{pmatrix}
      \begin{pmatrix} \sin(pos\,\omega_i) \\ \cos(pos\,\omega_i) \end{pmatrix},

so :math:`PE(pos+k) = M_k\,PE(pos)` with a block-diagonal :math:`M_k` that depends on ``k``
but not on ``pos`` (Vaswani et al., 2017, section 3.5).
"""

from __future__ import annotations

import torch

from .._validation import (
    LAYOUT_ALIASES,
    check_base,
    check_floating_dtype,
    check_layout,
    check_positive_int,
    check_shift,
    check_table_size,
)
from .sinusoidal import DEFAULT_BASE, angular_frequencies

__all__ = ["relative_shift_matrix"]


def relative_shift_matrix(
    k: int,
    d_model: int,
    *,
    base: float = DEFAULT_BASE,
    layout: str = "interleaved",
    dtype: torch.dtype = torch.float64,
) -> torch.Tensor:
    r"""The matrix :math:`M_k` with :math:`PE(pos+k) = M_k\,PE(pos)` for every position.

    Args:
        k: the shift, an int with ``|k| <= 2**53 - 1`` (negative shifts move backwards); the
            angles ``k * omega_i`` are formed in float64, exact in ``k`` up to that bound.
        d_model: embedding size; must be even, because with odd ``d_model`` the last column
            holds :math:`\sin(pos\,\omega)` without its cosine partner and no matrix maps it.
        base: frequency base, > 1.
        layout: ``"interleaved"`` or ``"half"`` (``"concat"``: deprecated), the layout of the table
            it acts on (see :func:`pe_lib.encodings.sinusoidal.sinusoidal_table`).
        dtype: floating dtype of the result; the angles ``k * omega_i`` are float64.

    Returns:
        tensor of shape ``(d_model, d_model)``: 2x2 rotations by ``-k * omega_i`` on each
        sine/cosine pair (block-diagonal for ``"interleaved"``), orthogonal, with
        :math:`M_{-k} = M_k^{\top}`.
    """
    k = check_shift("k", k)
    d_model = check_positive_int("d_model", d_model)
    base = check_base("base", base)
    layout = check_layout("layout", layout, aliases=LAYOUT_ALIASES)
    dtype = check_floating_dtype("dtype", dtype)
    if d_model % 2:
        raise ValueError(
            f"d_model must be even for relative_shift_matrix, got {d_model}: with an odd size the "
            "last column is sin(pos * omega) without its cosine partner, so no matrix maps "
            "PE(pos) to PE(pos + k)"
        )
    check_table_size("d_model", d_model, "d_model", d_model)

    angle = k * angular_frequencies(d_model, base)  # (d/2,) float64
    cos, sin = torch.cos(angle), torch.sin(angle)
    half = d_model // 2
    if layout == "interleaved":
        sin_rows = torch.arange(0, d_model, 2)
        cos_rows = sin_rows + 1
    else:
        sin_rows = torch.arange(half)
        cos_rows = sin_rows + half

    matrix = torch.zeros(d_model, d_model, dtype=torch.float64)
    matrix[sin_rows, sin_rows] = cos  # sin((p+k)w) = cos(kw) sin(pw) + sin(kw) cos(pw)
    matrix[sin_rows, cos_rows] = sin
    matrix[cos_rows, sin_rows] = -sin  # cos((p+k)w) = -sin(kw) sin(pw) + cos(kw) cos(pw)
    matrix[cos_rows, cos_rows] = cos
    return matrix.to(dtype)
