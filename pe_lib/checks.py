r"""Homework checkers: call them on your own work; they explain what is wrong.

Each checker returns ``None`` when the answer is right and otherwise raises
:class:`CheckFailed`, an ``AssertionError`` whose ``.mistake`` is a short code (listed in
:data:`TABLE_MISTAKES`, :data:`MODULE_MISTAKES` and :data:`RELATIVE_SHIFT_MISTAKES`) and whose
message says, in plain words, what the checker recognised and how to fix it. A checker
*recognises* a mistake by rebuilding the table (or matrix) that the mistake would produce and
comparing; when nothing it knows fits, it reports where the answer is furthest from the
right one.

The reference is the sinusoidal encoding of Vaswani et al. (2017), section 3.5, computed in
float64 by :func:`pe_lib.sinusoidal.sinusoidal_table`:

.. math::

    PE(pos, 2i) = \sin(pos\,\omega_i), \quad PE(pos, 2i+1) = \cos(pos\,\omega_i), \quad
    \omega_i = \mathrm{base}^{-2i/d_{\mathrm{model}}}.

**Tolerances.** A table of dtype ``D`` is accepted when every entry is within

.. math::

    4\,\varepsilon_{\mathrm{value}} + (\ln \mathrm{base} + 4)\,\varepsilon_{\mathrm{angle}}\,
    |pos\,\omega_i|

of the float64 reference, where :math:`\varepsilon_{\mathrm{value}}` is the machine epsilon
of ``D`` (the rounding of values in :math:`[-1, 1]`) and :math:`\varepsilon_{\mathrm{angle}}`
is that of ``D`` for float32 and float64 tables, and that of float32 for float16 and bfloat16
tables. The second term is the error of forming the angle :math:`pos\,\omega_i` in that
precision (rounding :math:`\omega_i`, whose exponent is up to :math:`\ln \mathrm{base}`, and
the product): a float32 table built the usual way, with float32 angles, passes; so does a
float16 table computed in float32 or float64 and cast at the end. Errors beyond that but
within the same bound with the epsilons of bfloat16 (values) and float16 (angles) are
diagnosed as ``"precision"``.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from ._validation import check_base, check_nonnegative_int, check_positive_int
from .relative import relative_shift_matrix
from .sinusoidal import sinusoidal_table

__all__ = [
    "MODULE_MISTAKES",
    "RELATIVE_SHIFT_MISTAKES",
    "TABLE_MISTAKES",
    "CheckFailed",
    "check_positional_encoding_module",
    "check_relative_shift",
    "check_sinusoidal_table",
]

#: Mistake codes :func:`check_sinusoidal_table` can raise, in the order it looks for them.
TABLE_MISTAKES: tuple[str, ...] = (
    "shape",
    "not_finite",
    "transposed",
    "swapped_sin_cos",
    "layout",
    "exponent",
    "degrees",
    "angle_scale",
    "position_offset",
    "base",
    "precision",
    "wrong_values",
)

#: Mistake codes :func:`check_positional_encoding_module`  can raise, in the order it looks
#: for them.
MODULE_MISTAKES: tuple[str, ...] = (
    "exception",
    "shape",
    "in_place",
    "dropout_in_eval",
    "trainable_table",
    "not_buffer",
    "table_not_added",
    "not_added",
    "position_axis",
    "wrong_table",
    "no_dropout_in_train",
    "dropout_not_on_sum",
    "fixed_length",
    "dtype",
)

#: Mistake codes :func:`check_relative_shift` can raise, in the order it looks for them.
RELATIVE_SHIFT_MISTAKES: tuple[str, ...] = (
    "exception",
    "wrong_type",
    "wrong_shape",
    "not_finite",
    "transposed",
    "sign",
    "layout",
    "wrong_values",
    "not_shift",
)


class CheckFailed(AssertionError):
    """A checker recognised a mistake.

    Attributes:
        mistake: a short code naming the mistake (one of the module's ``*_MISTAKES``).
        message: the explanation, also ``str(exc)``.
    """

    def __init__(self, mistake: str, message: str) -> None:
        super().__init__(message)
        self.mistake = mistake
        self.message = message

    def __reduce__(self):  # keep (mistake, message) through pickling and copying
        return (type(self), (self.mistake, self.message))


# --------------------------------------------------------------------------------------------
# Tolerances
# --------------------------------------------------------------------------------------------

_EPS64 = float(torch.finfo(torch.float64).eps)
_EPS32 = float(torch.finfo(torch.float32).eps)
_EPS16 = float(torch.finfo(torch.float16).eps)
_EPS_BF16 = float(torch.finfo(torch.bfloat16).eps)
_VALUE_ULPS = 4.0
_CHUNK_ROWS = 4096
_SAMPLE_ROWS = 256


@dataclass(frozen=True)
class _Tolerance:
    """Allowed error ``value_ulps * value_eps + angle_ulps * angle_eps * |angle|``."""

    value_eps: float
    angle_eps: float
    angle_ulps: float

    def __call__(self, angles: torch.Tensor) -> torch.Tensor:
        return _VALUE_ULPS * self.value_eps + self.angle_ulps * self.angle_eps * angles.abs()

    def coarser(self) -> _Tolerance:
        """The envelope of a table computed in half precision (see ``"precision"``)."""
        return _Tolerance(
            max(self.value_eps, _EPS_BF16), max(self.angle_eps, _EPS16), self.angle_ulps
        )


def _table_tolerance(value_eps: float, base: float) -> _Tolerance:
    return _Tolerance(value_eps, min(value_eps, _EPS32), math.log(base) + 4.0)


# --------------------------------------------------------------------------------------------
# Converting what the student hands in
# --------------------------------------------------------------------------------------------


def _dtype_name(dtype: object) -> str:
    return str(dtype).removeprefix("torch.")


def _to_float64(array: object, name: str) -> tuple[torch.Tensor, str, float]:
    """A float64 CPU copy of a floating numpy array or torch tensor, its dtype name and eps."""
    if isinstance(array, torch.Tensor):
        if not array.is_floating_point():
            raise TypeError(
                f"{name} must have a floating dtype (float16, bfloat16, float32, float64), "
                f"got {_dtype_name(array.dtype)}"
            )
        eps = float(torch.finfo(array.dtype).eps)
        return array.detach().to("cpu", torch.float64), _dtype_name(array.dtype), max(eps, _EPS64)
    if isinstance(array, np.ndarray):
        if array.dtype.kind != "f":
            raise TypeError(
                f"{name} must have a floating dtype (float16, float32, float64), got {array.dtype}"
            )
        eps = float(np.finfo(array.dtype).eps)
        values = torch.from_numpy(np.asarray(array, dtype=np.float64).copy())
        return values, str(array.dtype), max(eps, _EPS64)
    raise TypeError(
        f"{name} must be a numpy array or a torch tensor, got {type(array).__name__}; "
        "wrap a list with np.asarray(...)"
    )


# --------------------------------------------------------------------------------------------
# Sinusoid models: the correct table and the tables that common mistakes produce
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Waves:
    """A table whose column ``j`` is ``sin`` or ``cos`` of ``scale * (pos + offset) * omega[j]``.

    ``omega``: (d_model,) float64; ``is_sin``: (d_model,) bool.
    """

    omega: torch.Tensor
    is_sin: torch.Tensor
    offset: float = 0.0
    scale: float = 1.0

    def angles(self, positions: torch.Tensor) -> torch.Tensor:
        """(len(positions), d_model) float64."""
        return (positions + self.offset)[:, None] * (self.scale * self.omega)[None, :]

    def values(self, angles: torch.Tensor) -> torch.Tensor:
        return torch.where(self.is_sin, torch.sin(angles), torch.cos(angles))


def _interleaved(d_model: int, exponents: torch.Tensor, base: float, **kw: float) -> _Waves:
    """Columns 2i (sine) and 2i+1 (cosine) with ``omega_j = base ** exponents[j]``."""
    columns = torch.arange(d_model)
    return _Waves(torch.pow(base, exponents), columns % 2 == 0, **kw)


def _pair_exponent(d_model: int) -> torch.Tensor:
    """The correct exponent ``-2i/d`` of each column, i = j // 2 the pair index."""
    pair = torch.div(torch.arange(d_model), 2, rounding_mode="floor").double()
    return -2.0 * pair / d_model


def _correct_waves(d_model: int, base: float, **kw: float) -> _Waves:
    return _interleaved(d_model, _pair_exponent(d_model), base, **kw)


@dataclass(frozen=True)
class _Candidate:
    mistake: str
    what: str  # what the student's table is, in plain words
    fix: str  # how to fix it
    waves: _Waves


_FIX_EXPONENT = (
    "use omega_i = base ** (-2i / d_model) with i = 0, 1, 2, ... the pair index, the same "
    "omega_i for the sine in column 2i and the cosine in column 2i+1; in numpy: "
    "omega = base ** (-np.arange(0, d_model, 2) / d_model)."
)
_FIX_DEGREES = (
    "np.sin, math.sin and torch.sin take radians: use the angle pos * omega_i as it is, "
    "without np.deg2rad, np.radians, np.degrees or math.radians."
)


def _table_candidates(d_model: int, base: float, start: int) -> Iterator[_Candidate]:
    """The tables of the recognised mistakes, most specific first."""
    d = d_model
    column = torch.arange(d).double()
    pair = torch.div(torch.arange(d), 2, rounding_mode="floor").double()
    correct = _correct_waves(d, base)
    yield _Candidate(
        "swapped_sin_cos",
        "The even columns hold cosines and the odd columns sines: sin and cos are swapped.",
        "put sin(pos * omega_i) in column 2i and cos(pos * omega_i) in column 2i+1 "
        "(pe[:, 0::2] = sin, pe[:, 1::2] = cos).",
        _Waves(correct.omega, ~correct.is_sin),
    )
    # Concatenated layouts: all sines, then all cosines (or the reverse).
    num_sin, num_cos = (d + 1) // 2, d // 2
    half_index = torch.cat([torch.arange(num_sin), torch.arange(num_cos)]).double()
    first_half = torch.arange(d) < num_sin
    concat_omega = torch.pow(base, -2.0 * half_index / d)
    fix_layout = (
        "interleave them: sin(pos * omega_i) in column 2i and cos(pos * omega_i) in column "
        "2i+1 (pe[:, 0::2] = sin, pe[:, 1::2] = cos), not torch.cat([sin, cos], dim=-1)."
    )
    yield _Candidate(
        "layout",
        "The table is concatenated, all sines then all cosines (sin | cos), not interleaved.",
        fix_layout,
        _Waves(concat_omega, first_half),
    )
    cos_first = torch.cat([torch.arange(num_sin), torch.arange(num_cos)]).double()
    yield _Candidate(
        "layout",
        "The table is concatenated, all cosines then all sines (cos | sin), not interleaved.",
        fix_layout,
        _Waves(torch.pow(base, -2.0 * cos_first / d), ~first_half),
    )
    if d % 2 == 0 and d >= 4:
        # tensor2tensor's get_timing_signal_1d: log-spaced over d/2 - 1 steps, concatenated.
        t2t_index = torch.cat([torch.arange(d // 2), torch.arange(d // 2)]).double()
        yield _Candidate(
            "layout",
            "The table is tensor2tensor's variant: sines then cosines concatenated, with "
            "omega_i = base ** (-i / (d_model/2 - 1)).",
            fix_layout + " And use omega_i = base ** (-2i / d_model).",
            _Waves(torch.pow(base, -t2t_index / (d // 2 - 1)), first_half),
        )
    if base != 10000.0:
        # The paper's base where another was asked for: checked before the exponent
        # variants, which can coincide with it (10000 ** (2i/d) = 100 ** (4i/d)).
        yield _base_candidate(d, base, 10000.0)
    exponent_variants = [
        (
            -pair / d,
            "The frequencies are base ** (-i / d_model) with i the pair index: the exponent "
            "misses its factor 2, so the wavelengths stop at 2*pi*sqrt(base).",
        ),
        (
            -column / d,
            "Each column used its own index j in base ** (-j / d_model): the cosine in column "
            "2i+1 got base ** (-(2i+1) / d_model) instead of sharing the frequency of its sine.",
        ),
        (
            -2.0 * column / d,
            "The frequencies are base ** (-2j / d_model) with j the column index 0 .. "
            "d_model-1: the 2 of 2i was applied to an index that already counts columns.",
        ),
        (
            -4.0 * pair / d,
            "The frequencies are base ** (-2j / d_model) with j = 2i the column of the sine: "
            "2i already is that column, doubling it squares base.",
        ),
        (
            2.0 * pair / d,
            "The positions are multiplied by base ** (2i / d_model) instead of divided by it: "
            "the exponent has the wrong sign.",
        ),
        (
            -2.0 * (pair + 1) / d,
            "The pair index i starts at 1 instead of 0 in base ** (-2i / d_model): "
            "columns 0 and 1 should have omega = 1.",
        ),
    ]
    for exponent, what in exponent_variants:
        yield _Candidate("exponent", what, _FIX_EXPONENT, _interleaved(d, exponent, base))
    yield _Candidate(
        "degrees",
        "The angles were treated as degrees: the table is sin(radians(pos * omega_i)).",
        _FIX_DEGREES,
        _correct_waves(d, base, scale=math.pi / 180.0),
    )
    yield _Candidate(
        "degrees",
        "The angles were converted from radians to degrees before sin and cos: the table is "
        "sin(degrees(pos * omega_i)).",
        _FIX_DEGREES,
        _correct_waves(d, base, scale=180.0 / math.pi),
    )
    yield _Candidate(
        "angle_scale",
        "The angles are 2*pi * pos * omega_i: omega_i is already an angular frequency "
        "(radians per position).",
        "drop the factor 2*pi: the angle is pos * omega_i.",
        _correct_waves(d, base, scale=2.0 * math.pi),
    )
    for offset in dict.fromkeys([1, -1, -start, 1 - start]):
        if offset != 0:
            yield _Candidate(
                "position_offset",
                _offset_words(start, offset),
                _offset_fix(start),
                _correct_waves(d, base, offset=float(offset)),
            )
    for other_base in (1000.0, 100.0, 10.0, 1e5, 1e6, 5e5):
        if other_base != base:
            yield _base_candidate(d, base, other_base)


def _base_candidate(d_model: int, base: float, other_base: float) -> _Candidate:
    note = ""
    ratio = math.log(other_base) / math.log(base)
    if abs(ratio - 2.0) < 1e-9 or abs(ratio - 0.5) < 1e-9:
        note = (
            f" (The same numbers come from base {_fmt_base(base)} with the exponent off by a "
            "factor of 2; check both.)"
        )
    return _Candidate(
        "base",
        f"The table uses base {_fmt_base(other_base)}, not the base {_fmt_base(base)} asked "
        f"for.{note}",
        f"use omega_i = {_fmt_base(base)} ** (-2i / d_model) (base={_fmt_base(base)}).",
        _correct_waves(d_model, other_base),
    )


def _fmt_base(base: float) -> str:
    return f"{base:.0f}" if base == round(base) and abs(base) < 1e15 else f"{base:.6g}"


def _fmt_offset(offset: float) -> str:
    return f"{int(offset):+d}" if offset == round(offset) else f"{offset:+.4g}"


def _offset_words(start: int, offset: float) -> str:
    first = start + offset
    if first == round(first):
        first_text = f"{int(first)}, {int(first) + 1}"
    else:
        first_text = f"{first:.4g}, {first + 1:.4g}"
    return (
        f"The rows are the positions {first_text}, ... instead of "
        f"{start}, {start + 1}, ...: every position is off by {_fmt_offset(offset)}."
    )


def _offset_fix(start: int) -> str:
    if start == 0:
        return "count positions from 0: pos = np.arange(num_positions) (row r is position r)."
    return (
        f"row r is position start + r: pos = np.arange(start, start + num_positions) "
        f"with start={start}."
    )


# --------------------------------------------------------------------------------------------
# Comparing a table with a model, efficiently
# --------------------------------------------------------------------------------------------


def _sample_rows(num_rows: int) -> torch.Tensor:
    if num_rows <= _SAMPLE_ROWS:
        return torch.arange(num_rows)
    spread = torch.linspace(0, num_rows - 1, _SAMPLE_ROWS - 64).round().long()
    return torch.unique(torch.cat([torch.arange(64), spread]))


def _rows_match(
    values: torch.Tensor,
    positions: torch.Tensor,
    rows: torch.Tensor,
    waves: _Waves,
    tol: _Tolerance,
) -> bool:
    angles = waves.angles(positions[rows])
    return bool(((values[rows] - waves.values(angles)).abs() <= tol(angles)).all())


def _matches(values: torch.Tensor, positions: torch.Tensor, waves: _Waves, tol: _Tolerance) -> bool:
    """Whether every entry of ``values`` (n, d) is within ``tol`` of ``waves`` at ``positions``.

    A sample of rows is compared first, so that a model that does not fit is rejected cheaply.
    """
    num_rows = values.shape[0]
    sample = _sample_rows(num_rows)
    if not _rows_match(values, positions, sample, waves, tol):
        return False
    if sample.numel() == num_rows:
        return True
    return all(
        _rows_match(
            values, positions, torch.arange(first, min(first + _CHUNK_ROWS, num_rows)), waves, tol
        )
        for first in range(0, num_rows, _CHUNK_ROWS)
    )


def _largest_error(
    values: torch.Tensor, expected: torch.Tensor, error: torch.Tensor, start: int
) -> tuple[int, int, float, float]:
    """(position, dimension, expected, found) at the largest entry of ``error``."""
    flat = int(error.argmax())
    row, col = divmod(flat, values.shape[1])
    return start + row, col, float(expected[row, col]), float(values[row, col])


def _evidence(values: torch.Tensor, expected: torch.Tensor, error: torch.Tensor, start: int) -> str:
    pos, dim, want, got = _largest_error(values, expected, error, start)
    return (
        f"Largest difference from the correct table: position {pos}, dimension {dim}: "
        f"expected {want:.6f}, found {got:.6f}."
    )


# --------------------------------------------------------------------------------------------
# Estimating the parameters of an interleaved sinusoid table (base, angle scale, offset)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Fit:
    scale: float
    base: float
    offset: float


_NICE_SCALES = (1.0, math.pi / 180.0, 180.0 / math.pi, 2.0 * math.pi, 1.0 / (2.0 * math.pi))


def _snap(value: float, choices: tuple[float, ...], rel: float) -> float:
    for choice in choices:
        if abs(value / choice - 1.0) <= rel:
            return choice
    return value


def _nice_numbers(value: float) -> list[float]:
    """``value`` rounded to 1, 2 and 3 significant digits, then ``value`` itself."""
    if not math.isfinite(value) or value <= 0:
        return []
    exponent = math.floor(math.log10(value))
    out = [
        round(value / 10.0 ** (exponent - digits + 1)) * 10.0 ** (exponent - digits + 1)
        for digits in (1, 2, 3)
    ]
    return list(dict.fromkeys([*out, value]))


def _fit_interleaved(values: torch.Tensor, start: int, base: float, value_eps: float) -> list[_Fit]:
    """Estimate ``scale``, ``base`` and the position offset of an interleaved sinusoid table.

    Reads each sine/cosine pair's phase ``atan2(sin, cos)``; its step from row to row is
    ``scale * omega_i`` and ``log omega_i`` is linear in ``2i / d``. Returns candidate fits
    (rounded to nice values first), or ``[]`` when the table is not made of such pairs.
    """
    num_rows, d = values.shape
    num_pairs = d // 2
    if num_pairs == 0:
        return []
    sin_cols, cos_cols = values[:, 0 : 2 * num_pairs : 2], values[:, 1 : 2 * num_pairs : 2]
    if ((sin_cols.square() + cos_cols.square()) - 1.0).abs().max() > 0.1:
        return []
    phase = torch.atan2(sin_cols, cos_cols)  # (n, pairs)
    pair_x = 2.0 * torch.arange(num_pairs, dtype=torch.float64) / d
    scales, bases = [1.0], [base]
    if num_rows >= 2:
        step = torch.remainder(phase.diff(dim=0) + math.pi, 2 * math.pi) - math.pi
        omega = step.mean(dim=0)
        if (step - omega).abs().max() > 0.1:
            return []
        measurable = (omega > 0) & (omega < 3.0) & (omega * (num_rows - 1) >= 2000 * value_eps)
        if int(measurable.sum()) >= 2:
            x, y = pair_x[measurable], torch.log(omega[measurable])
            slope = float(((x - x.mean()) * (y - y.mean())).sum() / (x - x.mean()).square().sum())
            intercept = float(y.mean() - slope * x.mean())
            scales = [_snap(math.exp(intercept), _NICE_SCALES, 1e-2)]
            bases = (
                [base]
                if abs(-slope / math.log(base) - 1) < 1e-3
                else _nice_numbers(math.exp(-slope))
            )
        elif bool(measurable[0]):
            scales = [_snap(float(omega[0]), _NICE_SCALES, 1e-2)]
    fits = []
    for scale in scales:
        for fitted_base in bases:
            if not fitted_base > 1.0:
                continue
            omega_model = scale * torch.pow(fitted_base, -pair_x)
            first = _first_position(phase[0], omega_model)
            offset = first - start
            if abs(offset - round(offset)) < 0.05:
                offset = float(round(offset))
            fits.append(_Fit(scale, fitted_base, offset))
    return fits


def _first_position(phase: torch.Tensor, omega: torch.Tensor) -> float:
    """The position whose phases ``pos * omega_i`` (mod 2 pi) are ``phase``.

    Starts from the lowest frequency (no wrap-around for moderate positions) and refines with
    each higher one, choosing the number of whole turns nearest to the current estimate.
    """
    position = None
    for i in reversed(range(omega.numel())):
        w, p = float(omega[i]), float(phase[i])
        if w <= 0:
            continue
        if position is None:
            position = p / w
        else:
            turns = round((position * w - p) / (2 * math.pi))
            position = (p + 2 * math.pi * turns) / w
    return 0.0 if position is None else position


def _fit_candidate(fit: _Fit, d_model: int, base: float, start: int) -> _Candidate | None:
    """Describe the mistakes a fitted (scale, base, offset) stands for; None if it is correct."""
    parts, mistakes = [], []
    if fit.scale != 1.0:
        if fit.scale in (math.pi / 180.0, 180.0 / math.pi):
            mistakes.append("degrees")
            parts.append("the angles were treated as degrees")
        else:
            mistakes.append("angle_scale")
            parts.append(f"the angles are scaled by {fit.scale:.6g}")
    if fit.base != base:
        ratio = math.log(fit.base) / math.log(base)
        if abs(ratio - 0.5) < 1e-3 or abs(ratio - 2.0) < 1e-3:
            mistakes.append("exponent")
            parts.append(
                f"the frequencies fall off as base ** ({ratio:g} * 2i / d_model): the "
                "exponent is off by a factor of 2"
            )
        else:
            mistakes.append("base")
            parts.append(
                f"the frequencies fit base = {_fmt_base(fit.base)} instead of the base "
                f"{_fmt_base(base)} asked for"
            )
    if fit.offset != 0.0:
        mistakes.append("position_offset")
        parts.append(f"every position is off by {_fmt_offset(fit.offset)}")
    if not mistakes:
        return None
    fixes = {
        "degrees": _FIX_DEGREES,
        "angle_scale": "the angle is pos * omega_i, without an extra factor.",
        "exponent": _FIX_EXPONENT,
        "base": f"use omega_i = {_fmt_base(base)} ** (-2i / d_model).",
        "position_offset": _offset_fix(start),
    }
    what = "In your table " + "; ".join(parts) + "."
    fix = " ".join(
        fixes[m] if n == 0 else fixes[m][0].upper() + fixes[m][1:] for n, m in enumerate(mistakes)
    )
    waves = _interleaved(
        d_model, _pair_exponent(d_model), fit.base, offset=fit.offset, scale=fit.scale
    )
    return _Candidate(mistakes[0], what, fix, waves)


# --------------------------------------------------------------------------------------------
# check_sinusoidal_table
# --------------------------------------------------------------------------------------------


def _shape_message(shape: tuple[int, ...]) -> str:
    if len(shape) == 3 and shape[0] == 1:
        hint = "it has a leading batch axis of size 1: drop it with table[0] or table.squeeze(0)."
    elif len(shape) == 1:
        hint = "it is a single vector: build one row per position."
    else:
        hint = "build one row per position and one column per embedding dimension."
    return (
        f"The table must be 2-D, shape (num_positions, d_model), got shape {tuple(shape)}: " + hint
    )


def check_sinusoidal_table(table: object, *, base: float = 10000.0, start: int = 0) -> None:
    r"""Check a sinusoidal position table (Vaswani et al., 2017, section 3.5).

    Row ``r`` must hold position ``start + r`` and column ``j`` of it must be
    :math:`\sin(pos\,\omega_{j/2})` for even ``j`` and :math:`\cos(pos\,\omega_{(j-1)/2})`
    for odd ``j``, :math:`\omega_i = \mathrm{base}^{-2i/d_{\mathrm{model}}}` (the interleaved
    layout of :func:`pe_lib.sinusoidal.sinusoidal_table`). The table is compared with that
    function's float64 values, within the tolerance of its dtype (see the module docstring).
    A table equal to the right one always passes, even where a mistake would give the same
    numbers (tiny tables, such as a single row at position 0).

    Otherwise the checker rebuilds the table each mistake would give and raises the first
    that matches (``.mistake``, in this order; all are in :data:`TABLE_MISTAKES`):

    * ``"shape"``: not 2-D, or empty (a wrong number of dimensions is the student's mistake,
      so it is a ``CheckFailed``, not a ``ValueError``);
    * ``"not_finite"``: NaN or inf;
    * ``"transposed"``: shape ``(d_model, num_positions)``;
    * ``"swapped_sin_cos"``: cosines in the even columns;
    * ``"layout"``: sines and cosines concatenated (sin | cos, cos | sin, or
      tensor2tensor's variant) instead of interleaved;
    * ``"exponent"``: see below;
    * ``"degrees"``: ``sin(radians(angle))`` or ``sin(degrees(angle))``;
    * ``"angle_scale"``: the angle multiplied by ``2*pi``;
    * ``"position_offset"``: positions counted from 1, ``start`` ignored, or off by any
      other constant (estimated from the phases);
    * ``"base"``: another base; common ones are tried, and otherwise the base is estimated
      from the frequencies and reported;
    * ``"precision"``: the right formula with errors too large for the table's dtype but
      within the same bound computed with bfloat16 values and float16 angles (e.g. a float32
      table computed in float16; the message names the precision that explains the error);
    * ``"wrong_values"``: none of the above; the message gives the position and dimension of
      the largest error, expected and found values, and hints (which columns or rows are
      right).

    Which exponents are mistakes: with ``i`` the pair index and ``j`` the column index,
    ``base ** (j / d)`` with ``j = 2i`` the sine's column, used for both columns of the pair,
    *is* the formula. Recognised as ``"exponent"``: ``base ** (i / d)`` (the factor 2
    missing); ``base ** (j / d)`` per column, so each cosine gets ``(2i+1)/d``;
    ``base ** (2j / d)`` per column (the frequently copied loop that uses ``2 * i`` for the
    sine and ``2 * (i + 1)`` for the cosine); ``base ** (2j / d)`` with ``j = 2i`` for both
    columns; ``pos * base ** (2i / d)`` (the sign); and ``i`` counted from 1. When the paper's
    base 10000 is used where another ``base`` was asked for, ``"base"`` is preferred, since
    ``10000 ** (2i/d)`` also equals ``100 ** (4i/d)``.

    Args:
        table: numpy array or torch tensor of shape ``(num_positions, d_model)``, any size
            (odd ``d_model`` included), any floating dtype (float16, bfloat16, float32,
            float64).
        base: the base the table should use, > 1.
        start: the position of the first row, >= 0.

    Returns:
        ``None`` when the table is right.

    Raises:
        TypeError: ``table`` is not a numpy array or torch tensor, or not of a floating dtype.
        ValueError: ``base`` is not > 1 or ``start`` is negative.
        CheckFailed: the table is wrong; ``.mistake`` says how (see above).
    """
    base = check_base(base)
    start = check_nonnegative_int("start", start)
    values, dtype_name, value_eps = _to_float64(table, "table")
    if values.dim() != 2 or values.numel() == 0:
        shape = tuple(values.shape)
        message = (
            f"The table is empty (shape {shape}): it needs at least one position and one dimension."
            if values.dim() == 2
            else _shape_message(shape)
        )
        raise CheckFailed("shape", message)
    finite = torch.isfinite(values)
    if not bool(finite.all()):
        row, col = (int(v) for v in (~finite).nonzero()[0])
        raise CheckFailed(
            "not_finite",
            f"The table holds {int((~finite).sum())} NaN or infinite values, the first at "
            f"position {start + row}, dimension {col} ({float(values[row, col])}). Sines and "
            "cosines lie in [-1, 1]: look for a division by zero or an overflow, e.g. "
            "base ** (2i / d) computed in float16 (its largest value is 65504) or a "
            "0 * inf. Fix: compute the frequencies as base ** (-2i / d_model) in float64 "
            "(or float32), then cast the finished table.",
        )

    num_rows, d_model = values.shape
    tol = _table_tolerance(value_eps, base)
    expected = sinusoidal_table(num_rows, d_model, base=base, start=start, dtype=torch.float64)
    positions = torch.arange(start, start + num_rows, dtype=torch.float64)
    angles = _correct_waves(d_model, base).angles(positions)
    error = (values - expected).abs_()
    allowed = tol(angles)
    if bool((error <= allowed).all()):
        return

    about = (
        f"For a {dtype_name} table of shape {tuple(values.shape)} "
        f"(base={_fmt_base(base)}, start={start}): "
    )
    evidence = _evidence(values, expected, error, start)

    # Transposed: the table read as (d_model, num_positions) is right.
    transposed = values.T
    t_positions = torch.arange(start, start + d_model, dtype=torch.float64)
    for level in (tol, tol.coarser()):
        if _matches(transposed, t_positions, _correct_waves(num_rows, base), level):
            raise CheckFailed(
                "transposed",
                about + "the table is transposed: it has one row per dimension and one column "
                f"per position, shape (d_model, num_positions) = {tuple(values.shape)}. "
                f"Fix: return table.T, shape ({d_model}, {num_rows}), or build it with "
                "positions along the rows: angles = pos[:, None] * omega[None, :].",
            )

    def failed(candidate: _Candidate, note: str = "") -> CheckFailed:
        return CheckFailed(
            candidate.mistake, f"{about}{candidate.what}{note} {evidence} Fix: {candidate.fix}"
        )

    candidates = list(_table_candidates(d_model, base, start))
    for candidate in candidates:
        if _matches(values, positions, candidate.waves, tol):
            raise failed(candidate)
    fits = _fit_interleaved(values, start, base, value_eps)
    fitted = [c for c in (_fit_candidate(f, d_model, base, start) for f in fits) if c is not None]
    for candidate in fitted:
        if _matches(values, positions, candidate.waves, tol):
            raise failed(candidate)

    coarse = tol.coarser()
    if bool((error <= coarse(angles)).all()):
        worst = float(error.max())
        raise CheckFailed(
            "precision",
            about + f"the formula is right, but the values are off by up to {worst:.2e}, more "
            f"than rounding to {dtype_name} explains (at most {float(allowed.max()):.1e} "
            f"here). {_precision_source(error, angles, tol.angle_ulps)} {evidence} "
            "Fix: form the angles pos * omega_i in float64 (or float32) from integer "
            "positions, take sin and cos, and cast the table to the dtype you want once, at "
            "the end.",
        )
    for candidate in candidates + fitted:
        if _matches(values, positions, candidate.waves, coarse):
            raise failed(candidate, " The values also carry half-precision-sized errors.")
    raise CheckFailed(
        "wrong_values",
        about + _wrong_values_message(values, expected, error, allowed, start, fits, base),
    )


def _precision_source(error: torch.Tensor, angles: torch.Tensor, angle_ulps: float) -> str:
    """Name the precision whose rounding explains ``error``.

    Rounding a value in [-1, 1] errs by up to eps/2, and an angle formed in that precision
    adds about ``angle_ulps * eps * |angle|``; the error per unit of that scale is compared
    with each dtype's eps.
    """
    per_eps = float((error / (1.0 + angle_ulps * angles.abs())).max())
    for name, eps in (("float32", _EPS32), ("float16", _EPS16), ("bfloat16", _EPS_BF16)):
        if per_eps <= eps:
            return f"Errors of this size come from computing in {name} (machine epsilon {eps:.1e})."
    return "Errors of this size come from forming the angles in half precision."


def _wrong_values_message(
    values: torch.Tensor,
    expected: torch.Tensor,
    error: torch.Tensor,
    allowed: torch.Tensor,
    start: int,
    fits: list[_Fit],
    base: float,
) -> str:
    pos, dim, want, got = _largest_error(values, expected, error, start)
    wrong = error > allowed
    hints = []
    even_wrong, odd_wrong = bool(wrong[:, 0::2].any()), bool(wrong[:, 1::2].any())
    if even_wrong and not odd_wrong:
        hints.append("The cosine columns (odd) are right; the sine columns (even) are not.")
    elif odd_wrong and not even_wrong:
        hints.append("The sine columns (even) are right; the cosine columns (odd) are not.")
    wrong_rows = wrong.any(dim=1)
    if not bool(wrong_rows[0]) and values.shape[0] > 1:
        first = int(wrong_rows.nonzero()[0])
        hints.append(
            f"Positions up to {start + first - 1} are right; position {start + first} is not."
        )
    for fit in fits:
        if fit.base != base and fit.scale == 1.0:
            hints.append(f"The frequencies look roughly like base = {fit.base:.4g}.")
            break
    return (
        f"{int(wrong.sum())} of {wrong.numel()} values are wrong, and the checker does not "
        f"recognise a common mistake. The largest error is at position {pos}, dimension {dim}: "
        f"expected {want:.6f}, found {got:.6f} (difference {abs(got - want):.2e}). "
        + "".join(f"{hint} " for hint in hints)
        + "Fix: compare your table, entry by entry, with PE(pos, 2i) = sin(pos * omega_i), "
        "PE(pos, 2i+1) = cos(pos * omega_i), omega_i = base ** (-2i / d_model), for example "
        "against pe_lib.sinusoidal_table(num_positions, d_model, base=base, start=start)."
    )


# --------------------------------------------------------------------------------------------
# check_positional_encoding_module
# --------------------------------------------------------------------------------------------

_DEFAULT_CLASS_D_MODEL = 16
_SHORT_LEN = 12
_LONG_LEN = 6000  # beyond the article's default max_len = 5000
_LONG_LEN_CAP = 100_000
_DROPOUT_ATTRIBUTES = ("dropout", "p", "dropout_p", "drop_prob", "dropout_rate", "p_drop")


def _instantiate(cls: type, d_model: int) -> nn.Module:
    """``cls(d_model)``, then ``cls(d_model=d_model)`` if the first raises ``TypeError``."""
    try:
        return cls(d_model)
    except TypeError as positional_error:
        try:
            return cls(d_model=d_model)
        except TypeError as keyword_error:
            raise CheckFailed(
                "exception",
                f"Could not build {cls.__name__}({d_model}) nor {cls.__name__}(d_model="
                f"{d_model}): {keyword_error}. Fix: give __init__ a first argument d_model and "
                "defaults for the others (max_len=5000, dropout=0.1), or pass an instance.",
            ) from positional_error
        except Exception as error:
            raise _student_exception(f"{cls.__name__}(d_model={d_model})", error) from error
    except Exception as error:
        raise _student_exception(f"{cls.__name__}({d_model})", error) from error


def _student_exception(call: str, error: BaseException) -> CheckFailed:
    return CheckFailed(
        "exception",
        f"{call} raised {type(error).__name__}: {error}. Fix that error first (the traceback "
        "above this one shows where it happened).",
    )


def _device_of(module: nn.Module) -> torch.device:
    for tensor in [*module.parameters(), *module.buffers()]:
        return tensor.device
    return torch.device("cpu")


@contextmanager
def _probing(module: nn.Module) -> Iterator[None]:
    """No autograd, a private RNG stream, and every submodule's training flag restored."""
    modes = [(sub, sub.training) for sub in module.modules()]
    try:
        with torch.no_grad(), torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            yield
    finally:
        for sub, training in modes:
            sub.training = training


def _find_dropout_p(module: nn.Module) -> float | None:
    """The dropout probability of the module, if one > 0 can be found, else None."""
    for sub in module.modules():
        if isinstance(sub, nn.modules.dropout._DropoutNd) and 0.0 < float(sub.p) < 1.0:
            return float(sub.p)
    for name in _DROPOUT_ATTRIBUTES:
        value = getattr(module, name, None)
        if isinstance(value, numbers.Real) and not isinstance(value, bool) and 0 < value < 1:
            return float(value)
    return None


def _table_rows(module: nn.Module, d_model: int) -> int | None:
    """The number of positions the module prepared: ``max_len`` or its table's length."""
    sizes = []
    max_len = getattr(module, "max_len", None)
    if isinstance(max_len, numbers.Integral) and not isinstance(max_len, bool) and max_len > 0:
        sizes.append(int(max_len))
    tensors = [*module.buffers(), *module.parameters()]
    tensors += [v for v in vars(module).values() if isinstance(v, torch.Tensor)]
    for tensor in tensors:
        if tensor.dim() >= 2 and tensor.shape[-1] == d_model:
            sizes.append(int(tensor.shape[-2]))
    return max(sizes) if sizes else None


def _call(module: nn.Module, x: torch.Tensor, what: str) -> torch.Tensor:
    """``module(x)`` on a copy of ``x``; student errors become ``CheckFailed``."""
    given = x.clone()
    try:
        out = module(given)
    except Exception as error:
        raise _student_exception(
            f"module(x) with x of shape {tuple(x.shape)} ({what})", error
        ) from error
    if not isinstance(out, torch.Tensor):
        raise CheckFailed(
            "shape",
            f"module(x) returned a {type(out).__name__}, not a tensor. Fix: return one tensor, "
            "x + PE, of the shape of x.",
        )
    if not torch.equal(given, x):
        raise CheckFailed(
            "in_place",
            "module(x) changed its input x in place (e.g. x += pe, or x.add_(pe)). Fix: "
            "write x = x + pe, which makes a new tensor and leaves the caller's x untouched.",
        )
    if out.shape != x.shape:
        hint = ""
        if out.shape == x.shape[1:]:
            hint = " That is the shape of the table alone: add it to x."
        raise CheckFailed(
            "shape",
            f"module(x) with x of shape {tuple(x.shape)} = (batch, seq_len, d_model) returned "
            f"shape {tuple(out.shape)}: a positional encoding keeps the shape of its input.{hint} "
            "Fix: return x + PE[:seq_len], with PE[:seq_len] of shape (seq_len, d_model) "
            "broadcast over the batch.",
        )
    return out


def _module_tolerance(x: torch.Tensor, angles: torch.Tensor, base: float) -> torch.Tensor:
    """Error allowed for float32 ``x + PE``: rounding of the sum, and float32 angles."""
    return _EPS32 * (8.0 * (1.0 + x.abs()) + (math.log(base) + 4.0) * angles.abs())


def check_positional_encoding_module(module_or_class: object, d_model: int | None = None) -> None:
    r"""Check a PyTorch module that adds the fixed sinusoidal encoding to token embeddings.

    The module must map ``x`` of shape ``(batch, seq_len, d_model)`` to
    ``dropout(x + PE[:seq_len])`` (Vaswani et al., 2017, sections 3.5 and 5.4), with the
    table of :func:`pe_lib.sinusoidal.sinusoidal_table` (base 10000). The checks run on small
    inputs (batch 2, 12 positions, float32), without autograd, on a private random-number
    stream (the global one is left as it was); the training flag of every submodule is
    restored afterwards, and parameters are not changed. They run in this order, and the
    first failure is raised (``.mistake`` in :data:`MODULE_MISTAKES`):

    1. ``"exception"`` (building or calling the module raised; the original error is
       chained), ``"shape"`` (the output is not a tensor of the input's shape),
       ``"in_place"`` (the caller's ``x`` was modified);
    2. ``"dropout_in_eval"``: two calls in eval mode differ;
    3. ``"trainable_table"``: a parameter (or a buffer) requires grad; a fixed encoding has
       nothing to learn;
    4. ``"not_buffer"``: the table is a plain tensor attribute, which ``module.to(device)``
       would not move;
    5. in eval mode ``module(x)`` must equal ``x + PE``: ``"table_not_added"`` (the output is
       ``x``), ``"not_added"`` (``x`` multiplied by the table, scaled before the addition,
       or ignored), ``"position_axis"`` (positions read along the batch axis, as in the
       ``(seq_len, batch, d_model)`` layout), ``"wrong_table"`` (a table is added but not
       the sinusoidal one; the message includes :func:`check_sinusoidal_table`'s diagnosis
       of it);
    6. dropout in train mode, only when a probability ``p > 0`` can be found (an
       ``nn.Dropout`` submodule, or a float attribute named ``dropout`` or ``p``); skipped
       otherwise, since ``p = 0`` is a legitimate choice: ``"no_dropout_in_train"``
       (nothing dropped) and ``"dropout_not_on_sum"`` (the output is not
       ``dropout(x + PE)``);
    7. ``"fixed_length"``: a sequence longer than the module prepared for (its ``max_len``,
       or its table's length, plus 16; 6000 when neither is found, beyond the article's
       default 5000; skipped beyond 100,000) must work and give the formula's values. The
       formula holds for every position, so a fixed encoding should compute the rows it
       lacks;
    8. ``"dtype"``: float64 and bfloat16 inputs must give outputs of the same dtype.

    So :class:`pe_lib.modules.LearnedPositionalEncoding` fails with ``"trainable_table"``
    (step 3) before its fixed length (step 7) is looked at, and the article's
    ``PositionalEncoding`` (a float32 table of ``max_len`` rows, sliced with
    ``pe[:seq_len]``) fails with ``"fixed_length"`` (it would also fail ``"dtype"``).

    Args:
        module_or_class: an ``nn.Module`` instance, or a subclass of ``nn.Module``, which is
            built with ``cls(d_model)``, or ``cls(d_model=d_model)`` if that raises
            ``TypeError`` (other arguments keep their defaults).
        d_model: the embedding size. For an instance, ``None`` means ``module.d_model``;
            for a class, ``None`` means 16.

    Returns:
        ``None`` when every check passes.

    Raises:
        TypeError: ``module_or_class`` is neither an ``nn.Module`` nor a subclass of it.
        ValueError: ``d_model`` is not a positive int, is missing for an instance without a
            ``d_model`` attribute, or differs from that attribute.
        CheckFailed: the module is wrong; ``.mistake`` says how (see above).
    """
    if isinstance(module_or_class, type):
        if not issubclass(module_or_class, nn.Module):
            raise TypeError(
                f"module_or_class must be an nn.Module instance or subclass, got the class "
                f"{module_or_class.__name__}"
            )
        d_model = (
            _DEFAULT_CLASS_D_MODEL if d_model is None else check_positive_int("d_model", d_model)
        )
        module = _instantiate(module_or_class, d_model)
        if not isinstance(module, nn.Module):
            raise TypeError(f"{module_or_class.__name__}(...) did not return an nn.Module")
    elif isinstance(module_or_class, nn.Module):
        module = module_or_class
        own = getattr(module, "d_model", None)
        if d_model is None:
            if not isinstance(own, numbers.Integral) or isinstance(own, bool):
                raise ValueError(
                    "d_model is None and the module has no int attribute d_model: pass "
                    "d_model=<the embedding size the module was built with>"
                )
            d_model = int(own)
        d_model = check_positive_int("d_model", d_model)
        if isinstance(own, numbers.Integral) and not isinstance(own, bool) and own != d_model:
            raise ValueError(f"d_model must match the module's d_model={own}, got {d_model}")
    else:
        raise TypeError(
            "module_or_class must be an nn.Module instance or subclass, got "
            f"{type(module_or_class).__name__}"
        )
    with _probing(module):
        _check_module(module, d_model)


def _check_module(module: nn.Module, d_model: int) -> None:
    device = _device_of(module)
    generator = torch.Generator().manual_seed(0)
    prepared = _table_rows(module, d_model)
    seq_len = _SHORT_LEN if prepared is None else max(1, min(_SHORT_LEN, prepared))
    x = torch.randn(2, seq_len, d_model, generator=generator).to(device)

    # 1-2. It runs, keeps the shape, and is deterministic in eval mode.
    module.eval()
    out = _call(module, x, "eval mode")
    again = _call(module, x, "eval mode")
    if not torch.equal(out, again):
        raise CheckFailed(
            "dropout_in_eval",
            "In eval mode, two calls module(x) on the same x gave different outputs: dropout "
            "(or some other randomness) is still active. Fix: use an nn.Dropout submodule, "
            "self.dropout = nn.Dropout(p), which module.eval() switches off, or pass "
            "training=self.training to F.dropout.",
        )

    # 3-4. No trainable table; the table is registered.
    for name, tensor in [*module.named_parameters(), *module.named_buffers()]:
        if tensor.requires_grad:
            kind = "parameter" if isinstance(tensor, nn.Parameter) else "buffer"
            raise CheckFailed(
                "trainable_table",
                f"The module has a trainable {kind} {name!r} of shape {tuple(tensor.shape)}: "
                "an optimizer would change it, but the sinusoidal encoding is fixed — it has "
                "nothing to learn. Fix: store the table with self.register_buffer('pe', pe) "
                "(not nn.Parameter), computed without requires_grad.",
            )
    for name, value in vars(module).items():
        if isinstance(value, torch.Tensor) and value.dim() >= 2 and value.shape[-1] == d_model:
            raise CheckFailed(
                "not_buffer",
                f"The table is a plain tensor attribute self.{name} of shape "
                f"{tuple(value.shape)}: module.to(device) and module.half() do not see it, so "
                "it stays behind on the CPU. Fix: self.register_buffer("
                f"{name!r}, table) in __init__.",
            )

    # 5. The sinusoidal table is added.
    base = 10000.0
    table = sinusoidal_table(seq_len, d_model, dtype=torch.float64)
    angles = _correct_waves(d_model, base).angles(torch.arange(seq_len, dtype=torch.float64))
    out0 = _call(module, torch.zeros_like(x), "eval mode").double().cpu()
    x64, out64 = x.double().cpu(), out.double().cpu()
    allowed = _module_tolerance(x64, angles, base)

    def close(a: torch.Tensor, b: torch.Tensor) -> bool:
        return bool(((a - b).abs() <= allowed).all())

    if not close(out64, x64 + table):
        _diagnose_addition(x64, out64, out0, table, allowed, d_model)

    # 6. Dropout acts in train mode (when a p > 0 can be found).
    p = _find_dropout_p(module)
    if p is not None:
        _check_train_dropout(module, d_model, seq_len, p, device, generator)

    # 7. Lengths beyond what was prepared.
    long_len = _LONG_LEN if prepared is None else prepared + 16
    if long_len <= _LONG_LEN_CAP:
        _check_long_length(module, d_model, long_len, prepared, device)

    # 8. The output dtype follows the input.
    for dtype in (torch.float64, torch.bfloat16):
        result = _call(module, x.to(dtype), f"{_dtype_name(dtype)} input")
        if result.dtype != dtype:
            raise CheckFailed(
                "dtype",
                f"For x of dtype {_dtype_name(dtype)}, module(x) returned "
                f"{_dtype_name(result.dtype)}: the output should keep the input's dtype "
                "(type promotion with a float32 table changes it). Fix: cast the table to x's "
                "dtype when adding it: x + self.pe[:seq_len].to(x.dtype).",
            )


def _diagnose_addition(
    x: torch.Tensor,
    out: torch.Tensor,
    out0: torch.Tensor,
    table: torch.Tensor,
    allowed: torch.Tensor,
    d_model: int,
) -> None:
    """Raise the mistake that explains ``out != x + table`` (all float64, CPU)."""

    def close(a: torch.Tensor, b: torch.Tensor) -> bool:
        return bool(((a - b).abs() <= allowed).all())

    fix_add = "Fix: return x + PE[:seq_len] (then dropout), with PE of shape (seq_len, d_model)."
    if close(out, x):
        raise CheckFailed(
            "table_not_added",
            "In eval mode module(x) returned x unchanged: the table is never added (was the "
            "sum assigned to a name that is not returned?). " + fix_add,
        )
    if close(out, table.expand_as(x)):
        raise CheckFailed(
            "not_added",
            "In eval mode module(x) returned the table itself, whatever x is: the token "
            "embeddings are lost. " + fix_add,
        )
    if close(out, x * table):
        raise CheckFailed(
            "not_added",
            "In eval mode module(x) is x * PE: the table multiplies the embeddings instead of "
            "being added to them (module(zeros) is all zeros). " + fix_add,
        )
    if close(out0, table.expand_as(x)):
        dx = out - out0
        scale = float((dx * x).sum() / (x * x).sum())
        if close(dx, scale * x):
            sqrt_hint = ""
            if abs(scale - math.sqrt(d_model)) < 1e-3 * math.sqrt(d_model):
                sqrt_hint = (
                    f" That is sqrt(d_model) = {math.sqrt(d_model):.4g}: the paper scales the "
                    "embeddings in the embedding layer (section 3.4), not in the encoding."
                )
            raise CheckFailed(
                "not_added",
                f"In eval mode module(x) is {scale:.4g} * x + PE: x is scaled before the table "
                f"is added.{sqrt_hint} " + fix_add,
            )
    added = out - x
    if not close(added, out0):
        raise CheckFailed(
            "not_added",
            "In eval mode module(x) - x depends on x, so module(x) is not x plus a table "
            "(module(zeros) gives the table). " + fix_add,
        )
    batch = x.shape[0]
    by_batch = sinusoidal_table(batch, d_model, dtype=torch.float64)[:, None, :]
    if close(out0, by_batch.expand_as(x)):
        raise CheckFailed(
            "position_axis",
            "The module adds PE(b) to every token of batch item b: it reads the positions "
            "along dim 0, as in the (seq_len, batch, d_model) layout of the PyTorch "
            "tutorial. Inputs here are (batch, seq_len, d_model). Fix: index the table with "
            "x.size(1) and add PE[:seq_len] of shape (seq_len, d_model) (or (1, seq_len, "
            "d_model)).",
        )
    if not close(out0[0], out0[-1]):
        raise CheckFailed(
            "wrong_table",
            "The module adds different tables to different batch items; every sequence "
            "should get the same PE[:seq_len]. " + fix_add,
        )
    try:
        check_sinusoidal_table(out0[0].float())
    except CheckFailed as inner:
        raise CheckFailed(
            "wrong_table",
            "The module adds a table to x, but not the sinusoidal one. Checking that table "
            f"(module(zeros)[0]) found {inner.mistake!r}: {inner.message}",
        ) from inner
    raise CheckFailed(
        "wrong_table",
        "The module adds a table to x that is close to, but not within float32 rounding of, "
        "the sinusoidal one. " + fix_add,
    )


def _check_train_dropout(
    module: nn.Module,
    d_model: int,
    seq_len: int,
    p: float,
    device: torch.device,
    generator: torch.Generator,
) -> None:
    # Enough entries that about 50 are dropped, so "none dropped" is no accident.
    batch = max(2, math.ceil(50.0 / (p * seq_len * d_model)))
    if batch * seq_len * d_model > 4_000_000:
        return
    x = torch.randn(batch, seq_len, d_model, generator=generator).to(device)
    module.train()
    out = _call(module, x, "train mode").double().cpu()
    module.eval()
    total = x.double().cpu() + sinusoidal_table(seq_len, d_model, dtype=torch.float64)
    angles = _correct_waves(d_model, 10000.0).angles(torch.arange(seq_len, dtype=torch.float64))
    allowed = _module_tolerance(total, angles, 10000.0) / (1.0 - p)
    dropped = out == 0
    if bool(((out - total).abs() <= allowed).all()):
        raise CheckFailed(
            "no_dropout_in_train",
            f"The module has dropout p={p:g}, but in train mode module(x) = x + PE with "
            "nothing dropped. Fix: return self.dropout(x + pe) in forward.",
        )
    kept = ~dropped
    if not bool(dropped.any()) or not bool(
        ((out[kept] - total[kept] / (1.0 - p)).abs() <= allowed[kept]).all()
    ):
        raise CheckFailed(
            "dropout_not_on_sum",
            f"In train mode (dropout p={p:g}), module(x) is not dropout(x + PE): the entries "
            f"that are kept should be (x + PE) / (1 - p) and the rest 0. Fix: add first, then "
            "apply dropout once to the sum: return self.dropout(x + pe).",
        )


def _check_long_length(
    module: nn.Module, d_model: int, long_len: int, prepared: int | None, device: torch.device
) -> None:
    prepared_text = (
        f"it was built for {prepared} positions"
        if prepared is not None
        else "longer than the article's default max_len=5000"
    )
    fix = (
        "Fix: when seq_len > max_len, compute the missing rows from the formula on the fly "
        "(positions = torch.arange(seq_len), angles = positions[:, None] * omega[None, :], "
        "then sin and cos), or build the table for the length you are given: the sinusoidal "
        "formula holds for every position, which is its advantage over a learned table."
    )
    x = torch.zeros(1, long_len, d_model, device=device)
    try:
        out = module(x.clone())
    except Exception as error:
        raise CheckFailed(
            "fixed_length",
            f"module(x) failed for seq_len={long_len} ({prepared_text}) with "
            f"{type(error).__name__}: {error}. {fix}",
        ) from error
    if not isinstance(out, torch.Tensor) or out.shape != x.shape:
        shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise CheckFailed(
            "fixed_length",
            f"For seq_len={long_len} ({prepared_text}) module(x) returned {shape} instead of "
            f"shape {tuple(x.shape)}. {fix}",
        )
    table = sinusoidal_table(long_len, d_model, dtype=torch.float64)
    angles = _correct_waves(d_model, 10000.0).angles(torch.arange(long_len, dtype=torch.float64))
    error = (out[0].double().cpu() - table).abs()
    wrong_rows = (error > _module_tolerance(torch.zeros(()), angles, 10000.0)).any(dim=1)
    if bool(wrong_rows.any()):
        first = int(wrong_rows.nonzero()[0])
        raise CheckFailed(
            "fixed_length",
            f"For seq_len={long_len} ({prepared_text}) the module adds wrong values from "
            f"position {first} on. {fix}",
        )


# --------------------------------------------------------------------------------------------
# check_relative_shift
# --------------------------------------------------------------------------------------------

_SHIFT_D_MODELS = (2, 4, 8, 16)
_SHIFTS = (0, 1, -1, 3, -7, 40)
_SHIFT_MARGIN = -min(_SHIFTS)


def _probe_windows(d_model: int, base: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows of :func:`sinusoidal_table` around about 40 probe positions.

    Probes are 0..15 and 24 more spread up to ``2*pi*base`` (where the slowest pair turns
    once), so that the rows span every direction. Returns the probe positions ``(P,)`` and,
    for each, the rows of positions ``probe .. probe + span - 1``, shape ``(P, span, d_model)``
    float64, where the source position is ``probe + _SHIFT_MARGIN`` and ``source + k`` stays
    inside the window for every ``k`` in ``_SHIFTS``.
    """
    spread = torch.logspace(1.3, math.log10(2 * math.pi * base), 24, dtype=torch.float64)
    probes = torch.cat([torch.arange(16, dtype=torch.float64), spread.round()]).unique()
    span = _SHIFT_MARGIN + max(_SHIFTS) + 1
    windows = torch.stack(
        [
            sinusoidal_table(span, d_model, base=base, start=int(p), dtype=torch.float64)
            for p in probes.tolist()
        ]
    )
    return probes + _SHIFT_MARGIN, windows


def _matrix_from(result: object, k: int, d_model: int) -> tuple[torch.Tensor, float]:
    """The student's M_k as a float64 CPU tensor, and the eps of its dtype."""
    where = f"build({k}, {d_model})"
    if isinstance(result, torch.Tensor):
        if result.is_complex() or result.dtype == torch.bool:
            raise CheckFailed(
                "wrong_type",
                f"{where} returned a {_dtype_name(result.dtype)} tensor. Fix: return a real "
                "matrix (float64 is best).",
            )
        eps = float(torch.finfo(result.dtype).eps) if result.is_floating_point() else _EPS64
        return result.detach().to("cpu", torch.float64), max(eps, _EPS64)
    if isinstance(result, np.ndarray):
        if result.dtype.kind not in "iuf":
            raise CheckFailed(
                "wrong_type",
                f"{where} returned a numpy array of dtype {result.dtype}. Fix: return a real "
                "matrix (float64 is best).",
            )
        eps = float(np.finfo(result.dtype).eps) if result.dtype.kind == "f" else _EPS64
        return torch.from_numpy(np.asarray(result, dtype=np.float64).copy()), max(eps, _EPS64)
    raise CheckFailed(
        "wrong_type",
        f"{where} returned a {type(result).__name__}. Fix: return a numpy array or a torch "
        "tensor of shape (d_model, d_model) (np.array(...) turns nested lists into one).",
    )


def _same_sign_sines(k: int, d_model: int, base: float, sign: float) -> torch.Tensor:
    """M_k with both sines of each 2x2 block given the same sign (not a rotation)."""
    matrix = relative_shift_matrix(k, d_model, base=base).clone()
    sin_rows = torch.arange(0, d_model, 2)
    matrix[sin_rows, sin_rows + 1] = sign * matrix[sin_rows, sin_rows + 1].abs()
    matrix[sin_rows + 1, sin_rows] = sign * matrix[sin_rows + 1, sin_rows].abs()
    return matrix


def check_relative_shift(build: Callable[[int, int], object], *, base: float = 10000.0) -> None:
    r"""Check a builder of the shift matrix :math:`M_k` with :math:`PE(pos+k) = M_k\,PE(pos)`.

    ``build(k, d_model)`` is called for ``d_model`` in 2, 4, 8, 16 and ``k`` in 0, 1, -1, 3,
    -7, 40, and each result is checked on about 40 positions from 0 to
    :math:`2\pi \cdot \mathrm{base}` (so that every sine/cosine pair turns through a whole
    circle): the float64 rows of :func:`pe_lib.sinusoidal.sinusoidal_table` must satisfy
    :math:`PE(pos+k) = M_k\,PE(pos)` (``PE`` as a column vector, interleaved layout) within
    the rounding of ``M_k``'s dtype. Such an ``M_k`` is unique: block-diagonal with 2x2
    rotations :math:`[[\cos k\omega_i, \sin k\omega_i], [-\sin k\omega_i, \cos k\omega_i]]`
    (Vaswani et al., 2017, section 3.5).

    At the first failing ``(k, d_model)``, named in the message, ``.mistake`` (in
    :data:`RELATIVE_SHIFT_MISTAKES`) is:

    * ``"exception"``: ``build`` raised (the original error is chained);
    * ``"wrong_type"``: not a real numpy array or torch tensor;
    * ``"wrong_shape"``: not ``(d_model, d_model)``;
    * ``"not_finite"``: NaN or inf entries;
    * ``"transposed"``: :math:`M_k^\top`. This is also :math:`M_{-k}`: transposed blocks,
      both sines with flipped signs, and ``-k`` in place of ``k`` all give this one matrix,
      so they cannot be told apart and the message names all three;
    * ``"sign"``: the two sines of a block with the same sign (not a rotation), or the whole
      matrix negated;
    * ``"layout"``: the matrix for the concatenated sin | cos layout;
    * ``"wrong_values"``: 2x2 rotation blocks by the wrong angles (the message names the
      first wrong block, its angle and the expected ``k * omega_i``);
    * ``"not_shift"``: anything else (the identity for ``k != 0`` included).

    Args:
        build: ``build(k, d_model)`` returning a numpy array or torch tensor of shape
            ``(d_model, d_model)``.
        base: the base of the encoding, > 1.

    Returns:
        ``None`` when every ``M_k`` is right.

    Raises:
        TypeError: ``build`` is not callable.
        ValueError: ``base`` is not > 1.
        CheckFailed: a matrix is wrong; ``.mistake`` says how (see above).
    """
    if not callable(build):
        raise TypeError(
            f"build must be a callable build(k, d_model) -> (d_model, d_model) matrix, got "
            f"{type(build).__name__}"
        )
    base = check_base(base)
    for d_model in _SHIFT_D_MODELS:
        source, windows = _probe_windows(d_model, base)
        for k in _SHIFTS:
            rows = windows[:, _SHIFT_MARGIN]  # PE(source)
            shifted = windows[:, _SHIFT_MARGIN + k]  # PE(source + k)
            _check_one_shift(build, k, d_model, base, source, rows, shifted)


def _check_one_shift(
    build: Callable[[int, int], object],
    k: int,
    d_model: int,
    base: float,
    source: torch.Tensor,
    rows: torch.Tensor,
    shifted: torch.Tensor,
) -> None:
    where = f"For k={k}, d_model={d_model}"
    try:
        result = build(k, d_model)
    except Exception as error:
        raise CheckFailed(
            "exception",
            f"build({k}, {d_model}) raised {type(error).__name__}: {error}. Fix that error "
            "first (the traceback above this one shows where it happened); build must accept "
            "any int k, negative and 0 included, and any even d_model.",
        ) from error
    matrix, eps = _matrix_from(result, k, d_model)
    if tuple(matrix.shape) != (d_model, d_model):
        raise CheckFailed(
            "wrong_shape",
            f"{where}, build returned shape {tuple(matrix.shape)}. Fix: return the full "
            f"(d_model, d_model) = ({d_model}, {d_model}) matrix, block-diagonal with one 2x2 "
            "rotation per sine/cosine pair.",
        )
    if not bool(torch.isfinite(matrix).all()):
        raise CheckFailed(
            "not_finite",
            f"{where}, the matrix holds NaN or infinite values. Its entries are cosines and "
            "sines of k * omega_i, all in [-1, 1]. Fix: look for a division by zero or a "
            "NaN in the frequencies.",
        )
    mapped = rows @ matrix.T  # row r: M_k @ PE(pos_r)
    angle_ulps = math.log(base) + 4.0
    largest_angle = float((source + abs(k)).max())
    allowed = 8.0 * eps * (d_model + angle_ulps * (1 + abs(k))) + 8.0 * angle_ulps * _EPS64 * (
        1 + largest_angle
    )
    residual = (mapped - shifted).abs()
    if bool((residual <= allowed).all()):
        return

    entry_allowed = 8.0 * eps * (4.0 + angle_ulps * (1 + abs(k))) + 1e-12

    def equals(reference: torch.Tensor) -> bool:
        return bool(((matrix - reference).abs() <= entry_allowed).all())

    reference = relative_shift_matrix(k, d_model, base=base)
    rotation = "[[cos(k*w_i), sin(k*w_i)], [-sin(k*w_i), cos(k*w_i)]]"
    if equals(reference.T):
        raise CheckFailed(
            "transposed",
            f"{where}, your matrix is M_k transposed, which is also M_(-k): it shifts by -k. "
            "Either a 2x2 block is transposed, or both sines have the wrong sign, or k "
            f"entered as -k. Fix: each block must be {rotation}, so that "
            "sin((pos+k)w) = cos(kw) sin(pos w) + sin(kw) cos(pos w) fills the sine row; "
            "check with PE(pos+k) = M_k @ PE(pos), PE(pos) a column vector.",
        )
    if equals(-reference) or equals(-reference.T):
        raise CheckFailed(
            "sign",
            f"{where}, your matrix is -M_k (or -M_k transposed): every entry has the wrong "
            f"sign. Fix: each block must be {rotation}; M_0 is the identity.",
        )
    if equals(_same_sign_sines(k, d_model, base, 1.0)) or equals(
        _same_sign_sines(k, d_model, base, -1.0)
    ):
        raise CheckFailed(
            "sign",
            f"{where}, the two sines in each 2x2 block have the same sign, so the block is not "
            "a rotation. Fix: the sine row gets +sin(k*w_i) and the cosine row -sin(k*w_i): "
            f"{rotation} (from the angle-addition formulas).",
        )
    if d_model >= 4 and equals(relative_shift_matrix(k, d_model, base=base, layout="concat")):
        raise CheckFailed(
            "layout",
            f"{where}, your matrix acts on the concatenated layout (all sines, then all "
            "cosines), but PE here is interleaved: sine in column 2i, cosine in column 2i+1. "
            f"Fix: put the 2x2 block {rotation} on rows and columns 2i, 2i+1.",
        )
    if k != 0 and equals(torch.eye(d_model, dtype=torch.float64)):
        raise CheckFailed(
            "not_shift",
            f"{where}, your matrix is the identity: it leaves PE(pos) where it is instead of "
            f"moving it by k. Fix: block i must be {rotation}, which is the identity only "
            "for k = 0.",
        )
    message = _rotation_angles_message(matrix, k, d_model, base, entry_allowed)
    if message is not None:
        raise CheckFailed("wrong_values", f"{where}, {message}")
    row, col = divmod(int(residual.argmax()), d_model)
    raise CheckFailed(
        "not_shift",
        f"{where}, M_k @ PE(pos) differs from PE(pos + k) by {float(residual.max()):.3e} at "
        f"pos={int(source[row])}, dimension {col}, and the matrix is not a set of 2x2 "
        "rotations."
        + (" For k=0 it must be the identity." if k == 0 else "")
        + f" Fix: build M_k block-diagonal, block i = {rotation} on rows and columns "
        "2i, 2i+1, with w_i = base ** (-2i / d_model).",
    )


def _rotation_angles_message(
    matrix: torch.Tensor, k: int, d_model: int, base: float, allowed: float
) -> str | None:
    """If ``matrix`` is made of 2x2 rotation blocks with wrong angles, say which block."""
    pairs = d_model // 2
    blocks = matrix.reshape(pairs, 2, pairs, 2).permute(0, 2, 1, 3)  # (pair, pair, 2, 2)
    diagonal = blocks[torch.arange(pairs), torch.arange(pairs)]  # (pairs, 2, 2)
    off = blocks.clone()
    off[torch.arange(pairs), torch.arange(pairs)] = 0
    c, s = diagonal[:, 0, 0], diagonal[:, 0, 1]
    is_rotation = (
        bool((off.abs() <= allowed).all())
        and bool(((diagonal[:, 1, 1] - c).abs() <= allowed).all())
        and bool(((diagonal[:, 1, 0] + s).abs() <= allowed).all())
        and bool(((c * c + s * s - 1).abs() <= 4 * allowed).all())
    )
    if not is_rotation:
        return None
    found = torch.atan2(s, c)
    omega = torch.pow(base, -2.0 * torch.arange(pairs, dtype=torch.float64) / d_model)
    wanted = torch.remainder(k * omega + math.pi, 2 * math.pi) - math.pi
    gap = torch.remainder(found - wanted + math.pi, 2 * math.pi) - math.pi
    i = int(gap.abs().argmax())
    return (
        f"your matrix is made of 2x2 rotations, but block {i} (rows {2 * i}, {2 * i + 1}) "
        f"rotates by {float(found[i]):.6f} rad where k * w_{i} = {k} * {float(omega[i]):.6g} "
        f"is {float(wanted[i]):.6f} rad (mod 2*pi). Fix: use w_i = base ** (-2i / d_model) "
        "and the angle k * w_i in block i."
    )
