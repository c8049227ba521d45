"""Printed digits that another CPU cannot change: a rounding margin stated per kind of number.

A number printed with two decimals changes its text when it crosses a rounding edge (``0.125``
between ``0.12`` and ``0.13``). Another CPU's kernels (torch's AVX-512 or generic ones, numpy's
SIMD dispatch, another BLAS) move the last bits of a computation, and a stored output must not
depend on them. How far a value can move depends on where it comes from, so each kind of number
in :data:`KINDS` states its margin and why: a value a formula computes moves by last-bit noise,
while a value that comes out of training moves by much more, because the training's last bits
compound over its steps. :func:`stable` prints a value with as many decimals as its kind's
margin allows, and refuses one that sits on a rounding edge whatever the decimals: print a
verdict against a threshold instead (``"above 0.95: True"``).

Example::

    >>> from pe_lib.digits import stable
    >>> stable(0.98312, 2, "training accuracy")
    '0.98'
    >>> stable(0.98512, 2, "training accuracy")  # 0.985 is an edge: one decimal is safe
    '1.0'
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import torch

from ._validation import check_choice, check_int_in_range

__all__ = ["KINDS", "MAX_DIGITS", "Kind", "margin_of", "stable"]

#: The most decimals :func:`stable` prints (float64 holds about 15 significant digits).
MAX_DIGITS = 12


@dataclass(frozen=True)
class Kind:
    """One kind of printed number: how far another CPU's kernels can move it.

    Attributes:
        margin: the distance a printed value must keep from a rounding edge.
        relative: ``True`` if ``margin`` is a fraction of the value (values that move in
            proportion to their size, such as perplexities and losses), ``False`` if it is an
            absolute distance (values on a fixed scale, such as accuracies in [0, 1]).
        why: where the margin comes from, in one line.
    """

    margin: float
    relative: bool
    why: str


#: The kinds of number the chapters print, each with its margin and where it comes from.
KINDS: Mapping[str, Kind] = MappingProxyType(
    {
        "formula": Kind(
            1.2e-5,
            relative=True,
            why="a value a formula computes in floating point: three times the largest move "
            "between torch's native and generic kernels measured on the chapters' float32 "
            "values, 4.1e-6 of the value (chapter 5's torch.randn samples, on AVX-512); a sum "
            "whose terms cancel moves by a share of the terms: pass their size as relative_to",
        ),
        "training": Kind(
            5e-4,
            relative=True,
            why="a perplexity or loss of a trained model: three times the largest move between "
            "torch's native and generic kernels measured on the chapters' prints, 1.7e-4 of the "
            "value (chapter 9's perplexities, on AVX-512)",
        ),
        "training accuracy": Kind(
            0.0012,
            relative=False,
            why="an accuracy or another share in [0, 1] from a trained model: three times the "
            "largest move between torch's native and generic kernels measured on the chapters' "
            "prints, 3.8e-4 (chapter 7's one-layer learned model at length 32, on AVX-512)",
        ),
    }
)


def _check_value(value: object, name: str = "value") -> float:
    """``value`` as a finite float: a real number, or a tensor or array of one element."""
    if isinstance(value, (torch.Tensor, np.ndarray)):
        size = value.numel() if isinstance(value, torch.Tensor) else value.size
        if size != 1 or value.dtype == torch.bool or value.dtype == np.bool_:
            raise TypeError(
                f"{name} must be a real number (or a tensor or array of one number), got a "
                f"{type(value).__name__} of shape {tuple(value.shape)} and dtype {value.dtype}"
            )
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{name} must be a real number, got {value!r} of type {type(value).__name__}"
        )
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return value


def margin_of(value: float, kind: str, *, relative_to: float | None = None) -> float:
    """The distance from a rounding edge (or a threshold) that ``value`` of kind ``kind`` must
    keep: ``KINDS[kind].margin``, times ``|value|`` (or ``|relative_to|``) for a relative kind.

    Use it for a verdict that no CPU can flip: assert
    ``abs(value - threshold) >= margin_of(value, kind)``, then print ``value > threshold``.
    ``relative_to`` is explained under :func:`stable`.
    """
    value = _check_value(value)
    scale = value if relative_to is None else _check_value(relative_to, "relative_to")
    entry = KINDS[check_choice("kind", kind, tuple(KINDS))]
    return entry.margin * abs(scale) if entry.relative else entry.margin


def stable(value: float, digits: int, kind: str, *, relative_to: float | None = None) -> str:
    """``value`` printed with at most ``digits`` decimals, and with fewer where the last one is
    within the margin of ``kind`` (see :data:`KINDS`) of a rounding edge, so that another CPU's
    kernels cannot change the printed text.

    A value within the margin of zero is printed without a sign (``"0.00"``, never ``"-0.00"``).

    Args:
        value: the number to print: a real number, or a tensor or array holding one.
        digits: the most decimals to print, an int in ``[0, MAX_DIGITS]``.
        kind: a key of :data:`KINDS`, where the value comes from (``"formula"``,
            ``"training"``, ``"training accuracy"``).
        relative_to: for a relative kind, the magnitude the margin is a fraction of, if not
            ``value`` itself. A difference or a spread moves by as much as the values it is
            taken from: print the spread of perplexities over seeds with
            ``relative_to=`` their mean. It has no effect on an absolute kind.

    Returns:
        The text, as ``f"{value:.{n}f}"`` prints it for the largest ``n <= digits`` that keeps
        the margin.

    Raises:
        ValueError: ``value`` is within the margin of a rounding edge even with 0 decimals
            (say ``2.5`` as a perplexity): no number of digits is safe, so print a verdict
            against a threshold instead; or an argument is not allowed.
        TypeError: an argument has the wrong type.
    """
    value = _check_value(value)
    digits = check_int_in_range("digits", digits, 0, MAX_DIGITS)
    margin = margin_of(value, kind, relative_to=relative_to)
    for places in range(digits, -1, -1):
        step = 10.0**-places
        fraction = value / step - math.floor(value / step)  # in [0, 1); the edge is 0.5
        if abs(fraction - 0.5) * step >= margin:
            text = f"{value:.{places}f}"
            return text.lstrip("-") if abs(value) <= margin else text
    raise ValueError(
        f"value={value!r} of kind {kind!r} is within {margin:.3g} (the kind's margin: "
        f"{KINDS[kind].why.split(':')[0]}) of a rounding edge even with 0 decimals; "
        "print a verdict against a threshold instead (e.g. 'above 2: True')"
    )
