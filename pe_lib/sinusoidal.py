r"""The fixed sinusoidal encoding of Vaswani et al. (2017), section 3.5.

.. math::

    \omega_i = \mathrm{base}^{-2i/d_{\mathrm{model}}}, \qquad
    PE(pos, 2i) = \sin(pos\,\omega_i), \qquad PE(pos, 2i+1) = \cos(pos\,\omega_i).

Angles ``pos * omega_i`` are formed in float64 from integer positions and the table is cast
to the requested dtype once, at the end. Forming them in float32 (as most tutorials do) loses
about three decimal digits at position 100,000: see ``benchmarks/accuracy.py``.
"""

from __future__ import annotations

import math

import torch

from ._validation import (
    check_base,
    check_floating_dtype,
    check_layout,
    check_nonnegative_int,
    check_positive_int,
)

__all__ = ["angular_frequencies", "sinusoidal_table", "wavelengths"]

#: Positions processed per chunk, so that a long table never holds more than a few
#: float64 chunks of intermediate angles in memory at once.
_CHUNK_POSITIONS = 4096


def angular_frequencies(d_model: int, base: float = 10000.0) -> torch.Tensor:
    r"""Angular frequency of each sine/cosine pair: :math:`\omega_i = \mathrm{base}^{-2i/d}`.

    Args:
        d_model: embedding size ``d``; any positive int, odd included.
        base: the base of the geometric progression (10000 in the paper), > 1.

    Returns:
        float64 tensor of shape ``(ceil(d_model / 2),)``, decreasing from ``1.0``
        (``i = 0``) towards ``base ** (-1)``.
    """
    d_model = check_positive_int("d_model", d_model)
    base = check_base(base)
    pair_index = torch.arange((d_model + 1) // 2, dtype=torch.float64)  # i = 0 .. ceil(d/2)-1
    return torch.pow(base, -2.0 * pair_index / d_model)


def wavelengths(d_model: int, base: float = 10000.0) -> torch.Tensor:
    r"""Wavelength, in positions, of each sine/cosine pair: :math:`\lambda_i = 2\pi / \omega_i`.

    The wavelengths grow geometrically from :math:`2\pi` (``i = 0``) to just under
    :math:`2\pi \cdot \mathrm{base}`.

    Returns:
        float64 tensor of shape ``(ceil(d_model / 2),)``.
    """
    return 2.0 * math.pi / angular_frequencies(d_model, base)


def sinusoidal_table(
    num_positions: int,
    d_model: int,
    *,
    base: float = 10000.0,
    start: int = 0,
    layout: str = "interleaved",
    dtype: torch.dtype = torch.float32,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    r"""The sinusoidal encoding of positions ``start .. start + num_positions - 1``.

    Column layout:

    * ``"interleaved"`` (the paper's): column ``2i`` is :math:`\sin(pos\,\omega_i)`,
      column ``2i+1`` is :math:`\cos(pos\,\omega_i)`. With odd ``d_model`` the last
      column is a sine, exactly as the formula says.
    * ``"concat"``: all ``ceil(d/2)`` sines, then all ``floor(d/2)`` cosines, with the same
      frequencies (tensor2tensor's and fairseq's layout). The columns are those of the
      interleaved table, permuted.

    Args:
        num_positions: number of rows, >= 1.
        d_model: number of columns, >= 1.
        base: frequency base, > 1.
        start: first position, >= 0.
        layout: ``"interleaved"`` or ``"concat"``.
        dtype: floating dtype of the result; angles are always float64.
        device: device of the result.

    Returns:
        tensor of shape ``(num_positions, d_model)``.
    """
    num_positions = check_positive_int("num_positions", num_positions)
    d_model = check_positive_int("d_model", d_model)
    base = check_base(base)
    start = check_nonnegative_int("start", start)
    layout = check_layout(layout)
    dtype = check_floating_dtype(dtype)

    omega = angular_frequencies(d_model, base)  # (ceil(d/2),) float64
    num_sin, num_cos = omega.numel(), d_model // 2
    if layout == "interleaved":
        sin_columns, cos_columns = slice(0, None, 2), slice(1, None, 2)
    else:
        sin_columns, cos_columns = slice(0, num_sin), slice(num_sin, None)

    table = torch.empty(num_positions, d_model, dtype=dtype)
    for first in range(0, num_positions, _CHUNK_POSITIONS):
        rows = slice(first, min(first + _CHUNK_POSITIONS, num_positions))
        positions = torch.arange(start + rows.start, start + rows.stop, dtype=torch.float64)
        angles = positions[:, None] * omega[None, :]  # (chunk, ceil(d/2)) float64
        table[rows, sin_columns] = torch.sin(angles).to(dtype)
        table[rows, cos_columns] = torch.cos(angles[:, :num_cos]).to(dtype)
    return table.to(device) if device is not None else table
