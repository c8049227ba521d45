r"""RoPE with several coordinates: each frequency pair turns by one coordinate of the token.

A token of an image has a row and a column; a token of a multimodal sequence also a time. Axial
RoPE keeps RoPE's rotation and gives every channel pair ``i`` one *axis* ``a_i`` to read:

.. math::

    \text{angle}_i = \text{positions}[a_i] \cdot \theta_i .

Because each pair still turns by a position times a frequency, the query-key score of two
tokens depends on the *difference* of their coordinates, axis by axis: a 2D offset on a grid,
a (time, row, column) offset for M-RoPE. Models differ only in which frequencies they use, which
pair reads which axis, and where a pair's two channels sit; each is one entry of
:data:`AXIAL_LAYOUTS`, built from a head size and a base, and equal to the code that runs the
model (transformers 5.23, the file named in each entry's docstring):

- ``"pixtral"``: Pixtral's vision encoder: the head's frequencies, even ones to rows, odd ones to
  columns;
- ``"qwen2_vl_vision"``: Qwen2-VL's vision tower: half the head's frequencies, rows then columns;
- ``"llama4_vision"``: Llama 4's vision encoder: a quarter of the frequencies, x then y, pairs
  interleaved;
- ``"mrope"``: Qwen2-VL's language model (M-RoPE, arXiv 2409.12191 section 2.1): consecutive
  sections of frequencies for time, rows and columns;
- ``"mrope_interleaved"``: Qwen3-VL's language model: the same three axes dealt out in turn.

:func:`axial_angles` turns positions into angles for :func:`pe_lib.rope.rotate`;
:mod:`pe_lib.models.grid` makes the positions of an image's patches and of a text-and-image sequence.
"""

from __future__ import annotations

import numbers
import reprlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from .._validation import (
    check_base,
    check_choice,
    check_instance,
    check_position_entries,
    check_positive_int,
)

__all__ = ["AXIAL_LAYOUTS", "AxialFrequencies", "axial_angles", "axial_frequencies"]


@dataclass(frozen=True)
class AxialFrequencies:
    """The frequencies of an axial RoPE and the axis each pair reads.

    Attributes:
        theta: float64 tensor ``(pairs,)``, the angular frequency of each channel pair.
        axes: int64 tensor ``(pairs,)``, the coordinate each pair turns by (0 = the first
            coordinate of a position: time for M-RoPE, the row or x on a grid, as the entry says).
        num_axes: how many coordinates a position has.
        layout: where pair ``i``'s channels sit, as :func:`pe_lib.rope.rotate` takes it:
            ``"half"`` (``i`` and ``i + pairs``) or ``"interleaved"`` (``2i`` and ``2i + 1``).
    """

    theta: torch.Tensor
    axes: torch.Tensor
    num_axes: int
    layout: str

    @property
    def pairs(self) -> int:
        """The number of channel pairs, ``head_dim / 2``."""
        return int(self.theta.numel())


def _geometric(base: float, count: int, step: int, dim: int) -> torch.Tensor:
    """``base ** -(step * k / dim)`` for ``k < count``, in float64."""
    exponents = torch.arange(count, dtype=torch.float64) * step / dim
    return torch.as_tensor(base, dtype=torch.float64) ** -exponents


def _axes(*runs: tuple[int, int]) -> torch.Tensor:
    """The axes of consecutive runs ``(axis, length)``."""
    return torch.cat([torch.full((length,), axis, dtype=torch.int64) for axis, length in runs])


def _head_dim(head_dim: object, multiple: int) -> int:
    size = check_positive_int("head_dim", head_dim)
    if size % multiple:
        raise ValueError(f"head_dim must be a multiple of {multiple} for this layout, got {size}")
    return size


def _pixtral(head_dim: int, base: float) -> AxialFrequencies:
    """Pixtral (``PixtralVisionRotaryEmbedding.compute_axial_rope_parameters``,
    ``models/pixtral/modeling_pixtral.py``): the head's ``head_dim / 2`` RoPE frequencies
    :math:`\\theta_k = \\mathrm{base}^{-2k/d}`, the even ones ``k = 0, 2, 4, ...`` to rows and the
    odd ones to columns; positions ``(row, column)`` count from 0 in each image."""
    d = _head_dim(head_dim, 4)
    theta = _geometric(base, d // 2, 2, d)
    return AxialFrequencies(
        torch.cat([theta[0::2], theta[1::2]]), _axes((0, d // 4), (1, d // 4)), 2, "half"
    )


def _qwen2_vl_vision(head_dim: int, base: float) -> AxialFrequencies:
    """Qwen2-VL's vision tower (``Qwen2VLVisionRotaryEmbedding``,
    ``models/qwen2_vl/modeling_qwen2_vl.py``): the RoPE frequencies of a head of size
    ``head_dim / 2``, once for rows and once for columns; positions ``(row, column)``."""
    d = _head_dim(head_dim, 4)
    theta = _geometric(base, d // 4, 2, d // 2)
    return AxialFrequencies(torch.cat([theta, theta]), _axes((0, d // 4), (1, d // 4)), 2, "half")


def _llama4_vision(head_dim: int, base: float) -> AxialFrequencies:
    """Llama 4's vision encoder (``Llama4VisionRotaryEmbedding._compute_freqs_ci``,
    ``models/llama4/modeling_llama4.py``): :math:`\\theta_k = \\mathrm{base}^{-4k/d}` for
    ``k < head_dim / 4``, first for x (the column) then for y (the row), each pair two adjacent
    channels; positions ``(x, y)`` count from 1, and the class token turns by angle 0."""
    d = _head_dim(head_dim, 4)
    theta = _geometric(base, d // 4, 4, d)
    return AxialFrequencies(
        torch.cat([theta, theta]), _axes((0, d // 4), (1, d // 4)), 2, "interleaved"
    )


def _sections(sections: object, pairs: int) -> list[int]:
    """Three positive ints (a sequence or a 1-D array of them, numpy's ints included)."""
    expected = "three positive ints (time, rows, columns), e.g. (16, 24, 24)"
    if isinstance(sections, np.ndarray) and sections.ndim == 1:
        sections = sections.tolist()
    if not isinstance(sections, Sequence) or isinstance(sections, (str, bytes)):
        raise TypeError(
            f"sections must be {expected}, got {reprlib.repr(sections)} of type "
            f"{type(sections).__name__}"
        )
    if not all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in sections):
        raise TypeError(f"sections must be {expected}, got {sections!r}")
    values = [int(v) for v in sections]
    if len(values) != 3 or min(values) < 1:
        raise ValueError(f"sections must be {expected}, got {values}")
    if sum(values) != pairs:
        raise ValueError(
            f"sections must add up to head_dim / 2 = {pairs} frequency pairs, got {values} "
            f"(sum {sum(values)})"
        )
    return values


def _mrope(head_dim: int, base: float, sections: Sequence[int] = (16, 24, 24)) -> AxialFrequencies:
    """Qwen2-VL's M-RoPE (``Qwen2VLRotaryEmbedding``, ``models/qwen2_vl/modeling_qwen2_vl.py``;
    the config's ``mrope_section``): the head's RoPE frequencies in three consecutive sections,
    read from time, rows and columns; positions ``(t, h, w)`` from :func:`pe_lib.models.grid.mrope_positions`."""
    d = _head_dim(head_dim, 2)
    t, h, w = _sections(sections, d // 2)
    return AxialFrequencies(
        _geometric(base, d // 2, 2, d), _axes((0, t), (1, h), (2, w)), 3, "half"
    )


def _mrope_interleaved(
    head_dim: int, base: float, sections: Sequence[int] = (24, 20, 20)
) -> AxialFrequencies:
    """Qwen3-VL's interleaved M-RoPE (``Qwen3VLTextRotaryEmbedding.recomposition_frequencies``,
    ``models/qwen3_vl/modeling_qwen3_vl.py``): frequency ``k`` reads rows when ``k % 3 == 1`` and
    ``k < 3 * sections[1]``, columns when ``k % 3 == 2`` and ``k < 3 * sections[2]``, time
    otherwise, so that each axis spans fast and slow frequencies alike."""
    d = _head_dim(head_dim, 2)
    _, h, w = _sections(sections, d // 2)
    k = torch.arange(d // 2)
    axes = torch.zeros(d // 2, dtype=torch.int64)
    axes[(k % 3 == 1) & (k < 3 * h)] = 1
    axes[(k % 3 == 2) & (k < 3 * w)] = 2
    return AxialFrequencies(_geometric(base, d // 2, 2, d), axes, 3, "half")


#: The axial RoPE layouts by name, each building :class:`AxialFrequencies` from ``head_dim``
#: and ``base`` (M-RoPE's also from ``sections``).
AXIAL_LAYOUTS: dict[str, Callable[..., AxialFrequencies]] = {
    "pixtral": _pixtral,
    "qwen2_vl_vision": _qwen2_vl_vision,
    "llama4_vision": _llama4_vision,
    "mrope": _mrope,
    "mrope_interleaved": _mrope_interleaved,
}


def axial_frequencies(
    name: str, head_dim: int, *, base: float, sections: Sequence[int] | None = None
) -> AxialFrequencies:
    """The frequencies and axes of the axial RoPE ``name`` (a key of :data:`AXIAL_LAYOUTS`).

    Args:
        name: ``"pixtral"``, ``"qwen2_vl_vision"``, ``"llama4_vision"``, ``"mrope"`` or
            ``"mrope_interleaved"``.
        head_dim: the size of a head, a positive multiple of 4 (of 2 for M-RoPE).
        base: the frequency base (``rope_theta``), > 1.
        sections: M-RoPE only: the pairs given to time, rows and columns (the config's
            ``mrope_section``; a sequence or 1-D array of ints, numpy's included), adding up to
            ``head_dim / 2``. Default: the model's, ``(16, 24, 24)`` for ``"mrope"`` and
            ``(24, 20, 20)`` for ``"mrope_interleaved"``.

    Raises:
        TypeError: a non-str ``name``, a non-int ``head_dim``, a non-real ``base``, or
            ``sections`` that are not three ints.
        ValueError: an unknown ``name``; a ``head_dim`` that is not a positive multiple of 4
            (of 2 for M-RoPE); a ``base`` that is not a finite number > 1; ``sections`` that
            are not three positive ints adding up to ``head_dim / 2``, or given to a layout
            other than M-RoPE's.
    """
    name = check_choice("name", name, tuple(AXIAL_LAYOUTS))
    base = check_base("base", base)
    if sections is None:
        return AXIAL_LAYOUTS[name](head_dim, base)
    if not name.startswith("mrope"):
        raise ValueError(f"sections applies to the M-RoPE layouts only, not to name={name!r}")
    return AXIAL_LAYOUTS[name](head_dim, base, sections)


def axial_angles(positions: torch.Tensor, frequencies: AxialFrequencies) -> torch.Tensor:
    """The angle of every channel pair: ``positions[..., axes[i]] * theta[i]``.

    Shapes:
        ``positions``: ``(..., num_axes)`` int64 coordinates, each in ``[0, 2**53 - 1]`` as every
        position of the library (float64 holds the integers exactly up to that bound); output:
        ``(..., pairs)`` float64 (cosines and sines of it are the tables
        :func:`pe_lib.rope.rotate` takes, with ``layout=frequencies.layout``).

    Raises:
        TypeError: ``frequencies`` not :class:`AxialFrequencies`; ``positions`` not an int64
            tensor of shape ``(..., num_axes)``.
        ValueError: a negative coordinate or one beyond ``2**53 - 1``. The entries are read
            on the CPU only, outside ``torch.compile``, as :func:`pe_lib.rope.rope_angles`
            reads its positions (reading a GPU's values makes the host wait for the device).
    """
    frequencies = check_instance("frequencies", frequencies, AxialFrequencies)
    if (
        not isinstance(positions, torch.Tensor)
        or positions.dtype != torch.int64
        or positions.dim() < 1
        or positions.shape[-1] != frequencies.num_axes
    ):
        got = (
            f"{positions.dtype} {tuple(positions.shape)}"
            if isinstance(positions, torch.Tensor)
            else type(positions).__name__
        )
        raise TypeError(
            f"positions must be an int64 tensor of shape (..., {frequencies.num_axes}), one "
            f"coordinate per axis, got {got}"
        )
    check_position_entries("positions", positions)
    coordinates = positions.index_select(-1, frequencies.axes.to(positions.device))
    return coordinates.to(torch.float64) * frequencies.theta.to(positions.device)
