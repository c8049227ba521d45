r"""The fixed sinusoidal encoding of Vaswani et al. (2017), section 3.5.

.. math::

    \omega_i = \mathrm{base}^{-2i/d_{\mathrm{model}}},

    PE(pos, 2i) = \sin(pos\,\omega_i), \qquad PE(pos, 2i+1) = \cos(pos\,\omega_i).

Angles ``pos * omega_i`` are formed in float64 from integer positions and the table is cast
to the requested dtype once, at the end. Forming them in float32 (as most tutorials do) makes
entries near position 100,000 wrong in the third decimal place (errors between 2e-3 and 2e-2,
measured in chapter 5 and by ``benchmarks/accuracy.py``); formed in float64 and cast once, a
float32 table is within half a float32 rounding step (about 3e-8) of the formula. Float64 holds
every integer exactly only up to :math:`2^{53}`, so positions are bounded by
:data:`MAX_POSITION` ``= 2**53 - 1``: beyond it neighbouring positions would round to the same
float and their rows would silently coincide.
"""

from __future__ import annotations

import math

import torch

from .._validation import (
    LAYOUT_ALIASES,
    MAX_EXACT_INT,
    check_base,
    check_device,
    check_floating_dtype,
    check_layout,
    check_memory,
    check_nonnegative_int,
    check_position_span,
    check_positive_int,
    check_table_size,
    naming_allocation,
    renamed_keyword,
)

__all__ = ["DEFAULT_BASE", "MAX_POSITION", "angular_frequencies", "sinusoidal_table", "wavelengths"]

#: The largest position a table holds exactly, ``2**53 - 1``. IEEE 754 binary64 has a 53-bit
#: significand, so float64 represents every integer only up to ``2**53``.
MAX_POSITION = MAX_EXACT_INT

#: The frequency base of the paper's table (Vaswani et al., 2017, section 3.5), which RoFormer
#: keeps for RoPE (Su et al., 2021): the default wherever a base is asked for.
DEFAULT_BASE = 10000.0

#: Positions processed per chunk, so that a long table never holds more than a few
#: float64 chunks of intermediate angles in memory at once.
_CHUNK_POSITIONS = 4096


def angular_frequencies(d_model: int, base: float = DEFAULT_BASE) -> torch.Tensor:
    r"""Angular frequency of each sine/cosine pair: :math:`\omega_i = \mathrm{base}^{-2i/d}`.

    Args:
        d_model: embedding size ``d``; any positive int up to ``2**53 - 1``, odd included.
        base: the base of the geometric progression (10000 in the paper), a finite float > 1.

    Returns:
        float64 tensor of shape ``(ceil(d_model / 2),)``, decreasing from ``1.0``
        (``i = 0``) towards ``base ** (-1)``.
    """
    d_model = check_positive_int("d_model", d_model)
    base = check_base("base", base)
    return _angular_frequencies(d_model, base, None)


def _angular_frequencies(d_model: int, base: float, device: torch.device | None) -> torch.Tensor:
    """:func:`angular_frequencies` for checked arguments, formed on ``device`` (default: the
    current default device)."""
    # -2i for i = 0 .. ceil(d/2) - 1, exact in float64
    exponents = torch.arange(
        0.0, -2.0 * ((d_model + 1) // 2), -2.0, dtype=torch.float64, device=device
    )
    return torch.pow(base, exponents / d_model)


def wavelengths(d_model: int, base: float = DEFAULT_BASE) -> torch.Tensor:
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
    base: float = DEFAULT_BASE,
    offset: int | None = None,
    layout: str = "interleaved",
    dtype: torch.dtype = torch.float32,
    device: torch.device | str | None = None,
    start: int | None = None,
) -> torch.Tensor:
    r"""The sinusoidal encoding of positions ``offset .. offset + num_positions - 1``.

    Column layout:

    * ``"interleaved"`` (the paper's): column ``2i`` is :math:`\sin(pos\,\omega_i)`,
      column ``2i+1`` is :math:`\cos(pos\,\omega_i)`. With odd ``d_model`` the last
      column is a sine, exactly as the formula says.
    * ``"half"``: all ``ceil(d/2)`` sines, then all ``floor(d/2)`` cosines, with the paper's
      frequencies. The columns are those of the interleaved table, permuted; it is the
      split-halves order RoPE calls ``"half"``. ``"concat"``, its older name here, still works
      but raises a ``DeprecationWarning``. tensor2tensor (``get_timing_signal_1d``) and fairseq
      (``SinusoidalPositionalEmbedding.get_embedding``) concatenate sines and cosines in this
      order too, but space their frequencies as ``10000^(-i/(d/2 - 1))`` rather than the
      paper's ``10000^(-2i/d)`` (fairseq's docstring notes the difference), so their tables
      agree with this one in the first sine/cosine pair only.

    Args:
        num_positions: number of rows, >= 1.
        d_model: number of columns, >= 1.
        base: frequency base, a finite float > 1.
        offset: first position, >= 0 (default 0); the last position,
            ``offset + num_positions - 1``, must be at most ``2**53 - 1``
            (:data:`MAX_POSITION`).
        layout: ``"interleaved"`` or ``"half"`` (``"concat"``: deprecated, say ``"half"``).
        dtype: floating dtype of the result; angles are always float64.
        device: device of the result.
        start: deprecated name of ``offset`` (raises a ``DeprecationWarning``).

    Returns:
        tensor of shape ``(num_positions, d_model)``.

    Raises:
        TypeError: a non-int size or position (``bool`` and floats included), a non-floating
            ``dtype``, a non-str ``layout``, or both ``offset`` and ``start``.
        ValueError: a size < 1, a negative position, a last position beyond ``2**53 - 1``, a
            ``base`` that is not a finite number > 1, or an unknown ``layout``.
    """
    num_positions = check_positive_int("num_positions", num_positions)
    d_model = check_positive_int("d_model", d_model)
    base = check_base("base", base)
    offset_name, first_position = renamed_keyword("offset", offset, "start", start, 0)
    first_position = check_nonnegative_int(offset_name, first_position)
    check_position_span(offset_name, first_position, "num_positions", num_positions)
    layout = check_layout("layout", layout, aliases=LAYOUT_ALIASES)
    dtype = check_floating_dtype("dtype", dtype)
    device = check_device("device", device)
    check_table_size("num_positions", num_positions, "d_model", d_model)
    # the table, and per chunk its float64 angles with their sines or cosines
    nbytes = num_positions * d_model * dtype.itemsize
    nbytes += min(num_positions, _CHUNK_POSITIONS) * (d_model + 1) * 8 * 2
    what = (
        f"sinusoidal_table(num_positions={num_positions}, d_model={d_model}): "
        f"{num_positions * d_model} {str(dtype).removeprefix('torch.')} values"
    )
    check_memory(what, nbytes)

    with naming_allocation(what, nbytes):
        omega = angular_frequencies(d_model, base)  # (ceil(d/2),) float64
        num_sin, num_cos = omega.numel(), d_model // 2
        if layout == "interleaved":
            sin_columns, cos_columns = slice(0, None, 2), slice(1, None, 2)
        else:
            sin_columns, cos_columns = slice(0, num_sin), slice(num_sin, None)

        table = torch.empty(num_positions, d_model, dtype=dtype)
        for first in range(0, num_positions, _CHUNK_POSITIONS):
            rows = slice(first, min(first + _CHUNK_POSITIONS, num_positions))
            positions = torch.arange(
                first_position + rows.start, first_position + rows.stop, dtype=torch.float64
            )
            angles = positions[:, None] * omega[None, :]  # (chunk, ceil(d/2)) float64
            table[rows, sin_columns] = torch.sin(angles).to(dtype)
            table[rows, cos_columns] = torch.cos(angles[:, :num_cos]).to(dtype)
        return table.to(device) if device is not None else table
