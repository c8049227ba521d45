r"""``check_sinusoidal_table``: a position table, checked against the formula.

The reference is the sinusoidal encoding of Vaswani et al. (2017), section 3.5, computed in
float64 (:func:`pe_lib.checks._core.reference`):

.. math::

    PE(pos, 2i) = \sin(pos\,\omega_i), \quad PE(pos, 2i+1) = \cos(pos\,\omega_i),

    \omega_i = \mathrm{base}^{-2i/d_{\mathrm{model}}}.

**Tolerance.** A table of dtype ``D`` is accepted when every entry is within
:math:`4\,\varepsilon_{\mathrm{value}} + (\ln \mathrm{base} + 4)\,\varepsilon_{\mathrm{angle}}
\,|pos\,\omega_i|` of the reference, :math:`\varepsilon_{\mathrm{value}}` the machine epsilon
of ``D`` and :math:`\varepsilon_{\mathrm{angle}}` that of the precision the exercise asks the
angles to be formed in, ``angle_dtype`` (:class:`~pe_lib.checks._core.Tolerance`). By default
that is ``D`` for float32 and float64 tables and float32 for float16 and bfloat16 ones: a
float32 table built the usual way, with float32 angles, passes (at the article's 5,000
positions and well beyond); so does a float16 table computed in float32 and cast. An exercise
that asks for float64 angles (chapter 6) passes ``angle_dtype=torch.float64``: float32 angles
are off by 8e-5 at position 1,024, about 10**5 times what float64 angles allow there. That term is capped at 0.01
(:data:`~pe_lib.checks._core.ANGLE_ERROR_CAP`), where the bound would otherwise accept any value
in [-1, 1]: far positions are checked too, and angles too coarse for them are ``"precision"``
(float32 angles from about 10**6 positions on; beyond about 10**13 even float64 cannot form the
angles of the fastest pairs to 0.01, so a float64 table there may be named so too).

**Diagnosis.** A checker *recognises* a mistake by rebuilding the table the mistake would give
(a ``_Waves`` model) and comparing, row by row of one table of diagnoses; tables with another
base, scale or offset are also fitted from the phases of their sine/cosine pairs. A table
named ``"precision"`` carries the evidence of a real computation in a lower precision: values
that are numbers of that precision, or angles, read back from the (sin, cos) pairs, that are.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import torch

from .._validation import (
    MAX_EXACT_INT,
    check_base,
    check_floating_dtype,
    check_nonnegative_int,
    renamed_keyword,
)
from ..encodings.sinusoidal import DEFAULT_BASE, angular_frequencies
from ._core import (
    EPS16,
    EPS32,
    EPS64,
    EPS_BF16,
    Catalogue,
    Diagnosis,
    Mistake,
    NotAnArray,
    Tolerance,
    as_float64,
    column_frequencies,
    diagnose,
    fmt_base,
    reference,
    text,
)

__all__ = ["check_sinusoidal_table"]

MISTAKES = Catalogue("check_sinusoidal_table")

_SHAPE = MISTAKES.declare(
    "shape",
    "The table must be 2-D, shape (num_positions, d_model), got shape {shape}.",
    "{hint}",
)
_EMPTY = MISTAKES.declare(
    "shape",
    "The table is empty (shape {shape}).",
    "it needs at least one position and one dimension.",
)
_NOT_FINITE = MISTAKES.declare(
    "not_finite",
    "The table holds {count} NaN or infinite values, the first at position {position}, "
    "dimension {dim} ({value}). Sines and cosines lie in [-1, 1]: look for a division by zero "
    "or an overflow, e.g. base ** (2i / d) computed in float16 (its largest value is 65504) "
    "or a 0 * inf.",
    "compute the frequencies as base ** (-2i / d_model) in float64 (or float32), then cast "
    "the finished table.",
)
_TRANSPOSED = MISTAKES.declare(
    "transposed",
    "the table is transposed: it has one row per dimension and one column per position, "
    "shape (d_model, num_positions) = {shape}.",
    "return table.T, shape ({d_model}, {num_rows}), or build it with positions along the "
    "rows: angles = pos[:, None] * omega[None, :].",
)
_SWAPPED = MISTAKES.declare(
    "swapped_sin_cos",
    "The even columns hold cosines and the odd columns sines: sin and cos are swapped.",
    "put sin(pos * omega_i) in column 2i and cos(pos * omega_i) in column 2i+1 "
    "(pe[:, 0::2] = sin, pe[:, 1::2] = cos).",
)
_INTERLEAVE = (
    "interleave them: sin(pos * omega_i) in column 2i and cos(pos * omega_i) in column 2i+1 "
    "(pe[:, 0::2] = sin, pe[:, 1::2] = cos), not torch.cat([sin, cos], dim=-1)."
)
_SIN_THEN_COS = MISTAKES.declare(
    "layout",
    "The table is concatenated, all sines then all cosines (sin | cos), not interleaved.",
    _INTERLEAVE,
)
_COS_THEN_SIN = MISTAKES.declare(
    "layout",
    "The table is concatenated, all cosines then all sines (cos | sin), not interleaved.",
    _INTERLEAVE,
)
_TENSOR2TENSOR = MISTAKES.declare(
    "layout",
    "The table is tensor2tensor's variant: sines then cosines concatenated, with "
    "omega_i = base ** (-i / (d_model/2 - 1)).",
    _INTERLEAVE + " And use omega_i = base ** (-2i / d_model).",
)
_ODD_D_MODEL = MISTAKES.declare(
    "odd_d_model",
    "The table was built with d_model + 1 = {wide} columns and cut to {d_model}: its "
    "frequencies are base ** (-2i / {wide}), not base ** (-2i / {d_model}). An odd d_model "
    "needs no extra column: the formula gives ceil(d_model/2) = {pairs} frequencies, and "
    "the last column is the sine of the last one, sin(pos * base ** (-{last_exponent} / "
    "{d_model})).",
    "compute omega_i = base ** (-2i / d_model) with the odd d_model itself, for "
    "i = 0 .. ceil(d_model/2) - 1, then pe[:, 0::2] = sin(pos * omega) and "
    "pe[:, 1::2] = cos(pos * omega[: d_model // 2]).",
)
_FIX_EXPONENT = (
    "use omega_i = base ** (-2i / d_model) with i = 0, 1, 2, ... the pair index, the same "
    "omega_i for the sine in column 2i and the cosine in column 2i+1; in numpy: "
    "omega = base ** (-np.arange(0, d_model, 2) / d_model)."
)
_EXPONENTS: list[tuple[Mistake, float, int, float]] = [
    # (mistake, factor, index, shift): the exponent is factor * (index + shift) / d_model, with
    # index 0 the pair index i and 1 the column index j.
    (
        MISTAKES.declare(
            "exponent",
            "The frequencies are base ** (-i / d_model) with i the pair index: the exponent "
            "misses its factor 2, so the wavelengths stop at 2*pi*sqrt(base).",
            _FIX_EXPONENT,
        ),
        -1.0,
        0,
        0.0,
    ),
    (
        MISTAKES.declare(
            "exponent",
            "Each column used its own index j in base ** (-j / d_model): the cosine in column "
            "2i+1 got base ** (-(2i+1) / d_model) instead of sharing the frequency of its sine.",
            _FIX_EXPONENT,
        ),
        -1.0,
        1,
        0.0,
    ),
    (
        MISTAKES.declare(
            "exponent",
            "The frequencies are base ** (-2j / d_model) with j the column index 0 .. "
            "d_model-1: the 2 of 2i was applied to an index that already counts columns.",
            _FIX_EXPONENT,
        ),
        -2.0,
        1,
        0.0,
    ),
    (
        MISTAKES.declare(
            "exponent",
            "The frequencies are base ** (-2j / d_model) with j = 2i the column of the sine: "
            "2i already is that column, doubling it squares base.",
            _FIX_EXPONENT,
        ),
        -4.0,
        0,
        0.0,
    ),
    (
        MISTAKES.declare(
            "exponent",
            "The positions are multiplied by base ** (2i / d_model) instead of divided by it: "
            "the exponent has the wrong sign.",
            _FIX_EXPONENT,
        ),
        2.0,
        0,
        0.0,
    ),
    (
        MISTAKES.declare(
            "exponent",
            "The pair index i starts at 1 instead of 0 in base ** (-2i / d_model): "
            "columns 0 and 1 should have omega = 1.",
            _FIX_EXPONENT,
        ),
        -2.0,
        0,
        1.0,
    ),
]
_FIX_DEGREES = (
    "np.sin, math.sin and torch.sin take radians: use the angle pos * omega_i as it is, "
    "without np.deg2rad, np.radians, np.degrees or math.radians."
)
_RADIANS = MISTAKES.declare(
    "degrees",
    "The angles were treated as degrees: the table is sin(radians(pos * omega_i)).",
    _FIX_DEGREES,
)
_DEGREES = MISTAKES.declare(
    "degrees",
    "The angles were converted from radians to degrees before sin and cos: the table is "
    "sin(degrees(pos * omega_i)).",
    _FIX_DEGREES,
)
_TWO_PI = MISTAKES.declare(
    "angle_scale",
    "The angles are 2*pi * pos * omega_i: omega_i is already an angular frequency "
    "(radians per position).",
    "drop the factor 2*pi: the angle is pos * omega_i.",
)
_OFFSET = MISTAKES.declare(
    "position_offset",
    "The rows are the positions {found} instead of {wanted}: every position is off by {shift}.",
    "{how}",
)
_BASE = MISTAKES.declare(
    "base",
    "The table uses base {used}, not the base {base} asked for.{note}",
    "use omega_i = {base} ** (-2i / d_model) (base={base}).",
)
_SCALED = MISTAKES.declare(
    "angle_scale",
    "The angles are scaled by {scale}: the table is sin({scale} * pos * omega_i).",
    "the angle is pos * omega_i, without an extra factor.",
)
_FAIRSEQ_SPACING = MISTAKES.declare(
    "exponent",
    "The frequencies are spaced as base ** (-i / (d_model/2 - 1)), i = 0 .. d_model/2 - 1, "
    "the spacing of fairseq's and tensor2tensor's tables (which also concatenate sines and "
    "cosines): the last pair gets exactly 1/base, where the paper's base ** (-2i / d_model) "
    "stops one step short of it.",
    _FIX_EXPONENT,
)
_PRECISION = MISTAKES.declare(
    "precision",
    "the formula is right, but at position {position}, dimension {dim} the value is off by "
    "{error} where {allowed} is allowed ({dtype} values, angles formed in {angle_dtype}). "
    "{source}",
    "form the angles pos * omega_i in {precision} from integer positions, take sin and cos, "
    "and cast the table to the dtype you want once, at the end.",
)
_WRONG_VALUES = MISTAKES.declare(
    "wrong_values",
    "{wrong} of {total} values are wrong, and the checker does not recognise a common "
    "mistake. The largest error is at position {position}, dimension {dim}: expected "
    "{expected}, found {found} (difference {difference}).{hints}",
    "compare your table, entry by entry, with PE(pos, 2i) = sin(pos * omega_i), "
    "PE(pos, 2i+1) = cos(pos * omega_i), omega_i = base ** (-2i / d_model), for example "
    "against pe_lib.sinusoidal_table(num_positions, d_model, base=base, offset=offset).",
)

_CHUNK_ROWS = 4096
_SAMPLE_ROWS = 256
_HALF_NOTE = text("The values also carry half-precision-sized errors.")
#: For a diagnosis read from the table's phases that matches it only loosely.
_ESTIMATE_NOTE = text(
    "These numbers are estimated from the table's phases and match it only to about three "
    "digits: the rule that built it may differ in its details."
)
_ESTIMATED = text(" That base is estimated from the table's frequencies.")
_SQUARED = text(
    " (The same numbers come from base {base} with the exponent off by a factor of 2; check both.)"
)
_FROM_ZERO = text("count positions from 0: pos = np.arange(num_positions) (row r is position r).")
_FROM_OFFSET = text(
    "row r is position {name} + r: pos = np.arange({name}, {name} + num_positions) with "
    "{name}={offset}."
)
_BATCH_AXIS = text(
    "it has a leading batch axis of size 1: drop it with table[0] or table.squeeze(0)."
)
_VECTOR = text("it is a single vector: build one row per position.")
_ROWS_COLUMNS = text("build one row per position and one column per embedding dimension.")
_CONTEXT = text("For a {dtype} table of shape {shape} (base={base}, {offset_name}={offset}): ")
_LARGEST = text(
    "Largest difference from the correct table: position {position}, dimension {dim}: "
    "expected {expected}, found {found}."
)
_ANGLES_OF = text(
    "Errors of this size come from computing in {name} (machine epsilon {eps}): the angles "
    "pos * omega_i read back from the table are {name} numbers."
)
_VALUES_OF = text(
    "Errors of this size come from rounding to {name} (machine epsilon {eps}): every value of "
    "the table is a {name} number, though the table is {dtype}."
)
_FLOAT64_OR_32 = text("float64 (or float32)")
_COSINES_RIGHT = text("The cosine columns (odd) are right; the sine columns (even) are not.")
_SINES_RIGHT = text("The sine columns (even) are right; the cosine columns (odd) are not.")
_ROWS_RIGHT = text("Positions up to {last} are right; position {first} is not.")
_LOOKS_LIKE = text("The frequencies look roughly like base = {base}.")


# Models: the correct table and the tables that mistakes produce ------------------------------


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
        """sin or cos of ``angles``, column by column."""
        return torch.where(self.is_sin, torch.sin(angles), torch.cos(angles))

    def matches(self, values: torch.Tensor, positions: torch.Tensor, tol: Tolerance) -> bool:
        """Every entry of ``values`` (n, d) within ``tol`` of this model at ``positions``.

        A sample of rows is compared first, so that a model that does not fit is rejected
        cheaply; then every row, in chunks.
        """
        num_rows = values.shape[0]
        if not self._rows_match(values, positions, _sample_rows(num_rows), tol):
            return False
        return num_rows <= _SAMPLE_ROWS or all(
            self._rows_match(
                values, positions, torch.arange(first, min(first + _CHUNK_ROWS, num_rows)), tol
            )
            for first in range(0, num_rows, _CHUNK_ROWS)
        )

    def _rows_match(
        self, values: torch.Tensor, positions: torch.Tensor, rows: torch.Tensor, tol: Tolerance
    ) -> bool:
        angles = self.angles(positions[rows])
        return bool(((values[rows] - self.values(angles)).abs() <= tol(angles)).all())


def _sample_rows(num_rows: int) -> torch.Tensor:
    if num_rows <= _SAMPLE_ROWS:
        return torch.arange(num_rows)
    spread = torch.linspace(0, num_rows - 1, _SAMPLE_ROWS - 64).round().long().tolist()
    return torch.tensor(sorted({*range(64), *spread}))


def _interleaved(omega: torch.Tensor, offset: float = 0.0, scale: float = 1.0) -> _Waves:
    """Sines in the even columns, cosines in the odd ones, column frequencies ``omega``."""
    return _Waves(omega, torch.arange(omega.numel()) % 2 == 0, offset, scale)


def _correct(d_model: int, base: float, offset: float = 0.0, scale: float = 1.0) -> _Waves:
    return _interleaved(column_frequencies(d_model, base), offset, scale)


@dataclass(frozen=True)
class _Candidate:
    """A mistake, the fields of its message, and the table it produces."""

    mistake: Mistake
    fields: dict[str, object]
    waves: _Waves

    def diagnosis(self, tol: Tolerance) -> Diagnosis[_Table]:
        """A row of the table of diagnoses: this mistake, if its table matches within ``tol``."""
        return Diagnosis(
            self.mistake,
            lambda t: self.fields if self.waves.matches(t.values, t.positions, tol) else None,
        )


def _candidates(d_model: int, base: float, offset: int, offset_name: str) -> Iterator[_Candidate]:
    """The tables of the recognised mistakes, most specific first."""
    d = d_model
    column = torch.arange(d, dtype=torch.float64)
    pair = torch.div(torch.arange(d), 2, rounding_mode="floor").double()
    correct = _correct(d, base)
    yield _Candidate(_SWAPPED, {}, _Waves(correct.omega, ~correct.is_sin))
    # Concatenated layouts: all sines, then all cosines (or the reverse).
    num_sin, num_cos = (d + 1) // 2, d // 2
    first_half = torch.arange(d) < num_sin
    omega = angular_frequencies(d, base)  # (num_sin,)
    concat_omega = torch.cat([omega, omega[:num_cos]])
    yield _Candidate(_SIN_THEN_COS, {}, _Waves(concat_omega, first_half))
    yield _Candidate(_COS_THEN_SIN, {}, _Waves(concat_omega, ~first_half))
    if d % 2 == 0 and d >= 4:
        # tensor2tensor's get_timing_signal_1d: log-spaced over d/2 - 1 steps, concatenated.
        t2t_index = torch.cat([torch.arange(d // 2), torch.arange(d // 2)]).double()
        yield _Candidate(
            _TENSOR2TENSOR, {}, _Waves(torch.pow(base, -t2t_index / (d // 2 - 1)), first_half)
        )
    if d % 2 == 1:
        fields: dict[str, object] = {
            "wide": d + 1,
            "d_model": d,
            "pairs": num_sin,
            "last_exponent": d - 1,
        }
        yield _Candidate(_ODD_D_MODEL, fields, _interleaved(column_frequencies(d + 1, base)[:d]))
    if base != DEFAULT_BASE:
        # The paper's base where another was asked for: checked before the exponent
        # variants, which can coincide with it (10000 ** (2i/d) = 100 ** (4i/d)).
        yield _base_candidate(d, base, DEFAULT_BASE)
    for mistake, factor, index, shift in _EXPONENTS:
        counted = column if index else pair
        yield _Candidate(mistake, {}, _interleaved(torch.pow(base, factor * (counted + shift) / d)))
    if d % 2 == 0 and d >= 4:
        # fairseq's and tensor2tensor's spacing, interleaved
        yield _Candidate(_FAIRSEQ_SPACING, {}, _interleaved(torch.pow(base, -pair / (d // 2 - 1))))
    yield _Candidate(_RADIANS, {}, _correct(d, base, scale=math.pi / 180.0))
    yield _Candidate(_DEGREES, {}, _correct(d, base, scale=180.0 / math.pi))
    yield _Candidate(_TWO_PI, {}, _correct(d, base, scale=2.0 * math.pi))
    for shift in dict.fromkeys([1, -1, -offset, 1 - offset]):
        if shift != 0:
            yield _Candidate(
                _OFFSET,
                _offset_fields(offset, offset_name, shift),
                _correct(d, base, offset=float(shift)),
            )
    for other_base in (1000.0, 100.0, 10.0, 1e5, 1e6, 5e5):
        if other_base != base:
            yield _base_candidate(d, base, other_base)


def _base_candidate(d_model: int, base: float, used: float) -> _Candidate:
    return _Candidate(_BASE, _base_fields(base, used), _correct(d_model, used))


def _base_fields(base: float, used: float, *, estimated: bool = False) -> dict[str, object]:
    ratio = math.log(used) / math.log(base)
    note = ""
    if estimated:
        note = str(_ESTIMATED)
    elif abs(ratio - 2.0) < 1e-9 or abs(ratio - 0.5) < 1e-9:
        note = _SQUARED.render(base=fmt_base(base))
    return {"used": fmt_base(used), "base": fmt_base(base), "note": note}


def _fmt_shift(shift: float) -> str:
    return f"{int(shift):+d}" if shift == round(shift) else f"{shift:+.4g}"


def _offset_how(offset: int, offset_name: str) -> str:
    if offset == 0:
        return str(_FROM_ZERO)
    return _FROM_OFFSET.render(name=offset_name, offset=offset)


def _offset_fields(offset: int, offset_name: str, shift: float) -> dict[str, object]:
    first = offset + shift
    found = (
        f"{int(first)}, {int(first) + 1}"
        if first == round(first)
        else f"{first:.4g}, {first + 1:.4g}"
    )
    return {
        "found": f"{found}, ...",
        "wanted": f"{offset}, {offset + 1}, ...",
        "shift": _fmt_shift(shift),
        "how": _offset_how(offset, offset_name),
    }


# Fitting base, angle scale and offset from the phases of an interleaved table ---------------


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


def _fit_interleaved(
    values: torch.Tensor, offset: int, base: float, value_eps: float
) -> list[_Fit]:
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
            omega_model = scale * angular_frequencies(d, fitted_base)[:num_pairs]
            shift = _first_position(phase[0], omega_model) - offset
            if abs(shift - round(shift)) < 0.05:
                shift = float(round(shift))
            fits.append(_Fit(scale, fitted_base, shift))
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


def _fit_candidate(
    fit: _Fit, d_model: int, base: float, offset: int, offset_name: str
) -> _Candidate | None:
    """The mistakes a fitted (scale, base, offset) stands for, as one candidate whose message
    is theirs, one after the other; None if the fit is the right table."""
    found: list[tuple[Mistake, dict[str, object]]] = []
    if fit.scale != 1.0:
        named = {math.pi / 180.0: _RADIANS, 180.0 / math.pi: _DEGREES, 2.0 * math.pi: _TWO_PI}
        scale = named.get(fit.scale)
        found.append((scale, {}) if scale else (_SCALED, {"scale": f"{fit.scale:.6g}"}))
    if fit.base != base:
        ratio = math.log(fit.base) / math.log(base)
        if abs(ratio - 0.5) < 1e-3:
            found.append((_EXPONENTS[0][0], {}))  # base ** (-i / d): the factor 2 missing
        elif abs(ratio - 2.0) < 1e-3:
            found.append((_EXPONENTS[3][0], {}))  # base ** (-4i / d): base squared
        else:
            found.append((_BASE, _base_fields(base, fit.base, estimated=True)))
    if fit.offset != 0.0:
        found.append((_OFFSET, _offset_fields(offset, offset_name, fit.offset)))
    if not found:
        return None
    rendered = [m.render(**f) for m, f in found]
    what = " ".join(what for what, _ in rendered)
    hows = [how for _, how in rendered]
    how = " ".join([hows[0], *(h[0].upper() + h[1:] for h in hows[1:])])
    combined = Mistake(found[0][0].code, "{what}", "{how}")
    waves = _correct(d_model, fit.base, offset=fit.offset, scale=fit.scale)
    return _Candidate(combined, {"what": what, "how": how}, waves)


# The checker ---------------------------------------------------------------------------------


def _shape_hint(shape: tuple[int, ...]) -> str:
    if len(shape) == 3 and shape[0] == 1:
        return str(_BATCH_AXIS)
    if len(shape) == 1:
        return str(_VECTOR)
    return str(_ROWS_COLUMNS)


@MISTAKES.attach
def check_sinusoidal_table(
    table: object,
    *,
    base: float = DEFAULT_BASE,
    offset: int | None = None,
    start: int | None = None,
    angle_dtype: torch.dtype | None = None,
) -> None:
    r"""Check a sinusoidal position table (Vaswani et al., 2017, section 3.5).

    Row ``r`` must hold position ``offset + r`` and column ``j`` of it must be
    :math:`\sin(pos\,\omega_{j/2})` for even ``j`` and :math:`\cos(pos\,\omega_{(j-1)/2})`
    for odd ``j``, :math:`\omega_i = \mathrm{base}^{-2i/d_{\mathrm{model}}}` (the interleaved
    layout of :func:`pe_lib.encodings.sinusoidal.sinusoidal_table`; with odd ``d_model`` the last
    column is the sine of the last frequency). The table is compared with the float64 values
    within the tolerance of its dtype (see :mod:`pe_lib.checks.table`). A table equal to the
    right one always passes, even where a mistake would give the same numbers (tiny tables,
    such as a single row at position 0).

    Otherwise the checker rebuilds the table each mistake would give and raises the first
    that matches (``.mistake``, in this order, the codes of
    ``check_sinusoidal_table.mistakes``):

    * ``"shape"``: not 2-D, or empty (a wrong number of dimensions is the student's mistake,
      so it is a ``CheckFailed``, not a ``ValueError``);
    * ``"not_finite"``: NaN or inf;
    * ``"transposed"``: shape ``(d_model, num_positions)``;
    * ``"swapped_sin_cos"``: cosines in the even columns;
    * ``"layout"``: sines and cosines concatenated (sin | cos, cos | sin, or
      tensor2tensor's variant) instead of interleaved;
    * ``"odd_d_model"``: for an odd ``d_model``, a table built with ``d_model + 1`` columns
      and cut (its frequencies are :math:`\mathrm{base}^{-2i/(d+1)}`);
    * ``"exponent"``: see below;
    * ``"degrees"``: ``sin(radians(angle))`` or ``sin(degrees(angle))``;
    * ``"angle_scale"``: the angle multiplied by ``2*pi``;
    * ``"position_offset"``: positions counted from 1, ``offset`` ignored, or off by any
      other constant (estimated from the phases);
    * ``"base"``: another base; common ones are tried, and otherwise the base is estimated
      from the frequencies and reported as an estimate (with an offset or an angle scale
      read from the phases too, each named in one message);
    * ``"precision"``: the right formula, every sine/cosine pair on the unit circle, with
      errors too large for the table's dtype and ``angle_dtype``, and the evidence of a real
      computation in a lower precision: angles, read back from the (sin, cos) pairs, that are
      numbers of bfloat16, float16 or (where more was asked) float32; or values that are
      numbers of such a precision. The message names the entry furthest beyond its
      allowance, the allowance there, and the precision;
    * ``"wrong_values"``: none of the above; the message gives the position and dimension of
      the largest error, expected and found values, and hints (which columns or rows are
      right).

    Which exponents are mistakes: with ``i`` the pair index and ``j`` the column index,
    ``base ** (j / d)`` with ``j = 2i`` the sine's column, used for both columns of the pair,
    *is* the formula. Recognised as ``"exponent"``: ``base ** (i / d)`` (the factor 2
    missing); ``base ** (j / d)`` per column, so each cosine gets ``(2i+1)/d``;
    ``base ** (2j / d)`` per column; ``base ** (2j / d)`` with ``j = 2i`` for both columns;
    ``pos * base ** (2i / d)`` (the sign); ``i`` counted from 1; and fairseq's and
    tensor2tensor's spacing ``base ** (-i / (d/2 - 1))`` in the interleaved layout. When the paper's base
    10000 is used where another ``base`` was asked for, ``"base"`` is preferred, since
    ``10000 ** (2i/d)`` also equals ``100 ** (4i/d)``.

    Args:
        table: numpy array or torch tensor of shape ``(num_positions, d_model)``, any size
            (odd ``d_model`` included), any floating dtype (float16, bfloat16, float32,
            float64); it is not modified.
        base: the base the table should use, a finite number > 1.
        offset: the position of the first row, >= 0 (default 0); the last position,
            ``offset + num_positions - 1``, must be at most ``2**53 - 1``.
        start: deprecated name of ``offset`` (raises a ``DeprecationWarning``).
        angle_dtype: the precision the exercise asks the angles ``pos * omega_i`` to be formed
            in (``torch.float64``, ``torch.float32``, ...); ``None``: the table's own, but at
            least float32.

    Returns:
        ``None`` when the table is right.

    Raises:
        TypeError: ``table`` is not a numpy array or torch tensor, or not of a floating
            dtype; ``offset`` is not an int; both ``offset`` and ``start`` are given;
            ``angle_dtype`` is not a floating torch dtype.
        ValueError: ``base`` is not a finite number > 1, ``offset`` is negative, or the last
            position is beyond ``2**53 - 1``.
        CheckFailed: the table is wrong; ``.mistake`` says how (see above).
    """
    base = check_base("base", base)
    angle_eps = None
    if angle_dtype is not None:
        angle_eps = float(torch.finfo(check_floating_dtype("angle_dtype", angle_dtype)).eps)
    offset_name, given = renamed_keyword("offset", offset, "start", start, 0)
    first = check_nonnegative_int(offset_name, given)
    try:
        values, dtype, value_eps = as_float64(table)
    except NotAnArray as error:
        meta = isinstance(table, torch.Tensor) and table.device.type == "meta"
        hint = (
            "build it on a real device such as 'cpu'"
            if meta
            else "wrap a list with np.asarray(...)"
        )
        raise TypeError(
            "table must be a numpy array or a torch tensor of a floating dtype (float16, "
            f"bfloat16, float32, float64) holding values, got {error.english}; {hint}"
        ) from None
    if values.dim() != 2:
        raise _SHAPE.fail(shape=tuple(values.shape), hint=_shape_hint(tuple(values.shape)))
    if values.numel() == 0:
        raise _EMPTY.fail(shape=tuple(values.shape))
    num_rows, d_model = values.shape
    if first + num_rows - 1 > MAX_EXACT_INT:
        raise ValueError(
            f"{offset_name} + num_positions - 1 (the last position) must be at most 2**53 - 1 "
            "(float64 represents integers exactly only up to 2**53), got "
            f"{offset_name}={first} and a table of {num_rows} rows"
        )
    finite = torch.isfinite(values)
    if not bool(finite.all()):
        row, col = (int(v) for v in (~finite).nonzero()[0])
        raise _NOT_FINITE.fail(
            count=int((~finite).sum()),
            position=first + row,
            dim=col,
            value=float(values[row, col]),
        )
    _diagnose(values, dtype, value_eps, base, first, offset_name, angle_eps)


@dataclass(frozen=True)
class _Table:
    """A finite 2-D table that is not the right one, and what it is compared with."""

    values: torch.Tensor
    dtype: str
    value_eps: float
    base: float
    offset: int
    offset_name: str
    positions: torch.Tensor
    expected: torch.Tensor
    angles: torch.Tensor
    tol: Tolerance

    @property
    def error(self) -> torch.Tensor:
        return (self.values - self.expected).abs()


def _diagnose(
    values: torch.Tensor,
    dtype: str,
    value_eps: float,
    base: float,
    offset: int,
    offset_name: str,
    angle_eps: float | None = None,
) -> None:
    """Return if ``values`` (float64, finite, 2-D) is the table; else raise its mistake."""
    num_rows, d_model = values.shape
    tol = Tolerance.for_table(value_eps, base, angle_eps)
    positions = torch.arange(offset, offset + num_rows, dtype=torch.float64)
    expected, angles = reference(positions, d_model, base)
    if bool(((values - expected).abs() <= tol(angles)).all()):
        return
    table = _Table(
        values, dtype, value_eps, base, offset, offset_name, positions, expected, angles, tol
    )
    context = _CONTEXT.render(
        dtype=dtype,
        shape=tuple(values.shape),
        base=fmt_base(base),
        offset_name=offset_name,
        offset=offset,
    )
    evidence = _evidence(table)
    half = tol.coarser(EPS16)  # mistakes recognised through half-precision noise

    transposed = diagnose([Diagnosis(_TRANSPOSED, _transposed)], table, context)
    if transposed is not None:
        raise transposed
    candidates = list(_candidates(d_model, base, offset, offset_name))
    fits = _fit_interleaved(values, offset, base, value_eps)
    fitted = [
        c
        for c in (_fit_candidate(f, d_model, base, offset, offset_name) for f in fits)
        if c is not None
    ]
    # One table of diagnoses, tried in order: each row rebuilds a mistake's table.
    rows: list[tuple[Diagnosis[_Table], str]] = [
        *((c.diagnosis(tol), evidence) for c in candidates),
        *((c.diagnosis(tol), evidence) for c in fitted),
        (Diagnosis(_PRECISION, _precision), ""),
        *((c.diagnosis(half), f"{_HALF_NOTE} {evidence}") for c in candidates),
        *((c.diagnosis(half), f"{_ESTIMATE_NOTE} {evidence}") for c in fitted),
    ]
    for row, note in rows:
        failure = diagnose([row], table, context, note)
        if failure is not None:
            raise failure
    raise _WRONG_VALUES.fail(
        context,
        **_wrong_values_fields(values, expected, table.error, tol(angles), offset, fits, base),
    )


def _transposed(t: _Table) -> dict[str, object] | None:
    """The table read as (d_model, num_positions) is right."""
    num_rows, d_model = t.values.shape
    t_positions = torch.arange(t.offset, t.offset + d_model, dtype=torch.float64)
    for level in (t.tol, t.tol.coarser(EPS16)):
        if _correct(num_rows, t.base).matches(t.values.T, t_positions, level):
            return {"shape": tuple(t.values.shape), "d_model": d_model, "num_rows": num_rows}
    return None


def _on_unit_circle(values: torch.Tensor, value_eps: float) -> bool:
    """Whether each (sin, cos) pair of columns has norm 1, within the rounding of ``value_eps``.

    Rounding the angle moves a pair along the circle; a wrong entry moves it off.
    """
    pairs = values.shape[1] // 2
    sin, cos = values[:, 0 : 2 * pairs : 2], values[:, 1 : 2 * pairs : 2]
    radius_error = (sin.square() + cos.square() - 1.0).abs()
    return bool((radius_error <= Tolerance.VALUE_ULPS * value_eps).all())


def _largest_error(
    values: torch.Tensor, expected: torch.Tensor, error: torch.Tensor, offset: int
) -> tuple[int, int, float, float]:
    """(position, dimension, expected, found) at the largest entry of ``error``."""
    row, col = divmod(int(error.argmax()), values.shape[1])
    return offset + row, col, float(expected[row, col]), float(values[row, col])


def _evidence(t: _Table) -> str:
    pos, dim, want, got = _largest_error(t.values, t.expected, t.error, t.offset)
    return _LARGEST.render(position=pos, dim=dim, expected=f"{want:.6f}", found=f"{got:.6f}")


#: The precisions a table may have been computed in, coarsest first, with their epsilon.
_LOWER = (
    ("bfloat16", torch.bfloat16, EPS_BF16),
    ("float16", torch.float16, EPS16),
    ("float32", torch.float32, EPS32),
)


def _angles_on_grid(t: _Table, dtype: torch.dtype, value_eps: float) -> bool:
    """Whether the table's angles, read back from its (sin, cos) pairs, are numbers of
    ``dtype``: what a product ``pos * omega_i`` formed in ``dtype`` gives.

    Only angles whose spacing in ``dtype`` is at least 4 times what the values' rounding moves
    a read-back angle by are read (at least 16 of them, so that angles of another precision
    all land near ``dtype`` numbers by chance with a probability below 2**-16); each is taken
    within ``1/64`` of itself of the exact angle, whole turns included (bfloat16 angles beyond
    a few hundred err by more than pi).
    """
    values, angles = t.values, t.angles
    pairs = values.shape[1] // 2
    sin, cos = values[:, 0 : 2 * pairs : 2], values[:, 1 : 2 * pairs : 2]
    exact = angles[:, 0 : 2 * pairs : 2]
    blur = 2.0 * value_eps  # how far the values' rounding moves an angle read back
    spacing = exact.abs() * float(torch.finfo(dtype).eps)
    read = (exact >= 1.0) & (spacing >= 4.0 * blur)
    if (
        int(read.sum()) < 16
    ):  # each lands within blur of a grid point by chance at most half the time
        return False
    exact, turned = exact[read], torch.atan2(sin[read], cos[read])
    window = exact / 64.0
    turns = int(float(window.max()) / (2 * math.pi)) + 2
    on_grid = torch.zeros_like(exact, dtype=torch.bool)
    for k in range(-turns, turns + 1):
        candidate = turned + 2 * math.pi * (torch.round((exact - turned) / (2 * math.pi)) + k)
        near = (candidate - exact).abs() <= window
        grid = (candidate - candidate.to(dtype).to(torch.float64)).abs() <= blur
        on_grid |= near & grid
    return bool(on_grid.all())


def _precision(t: _Table) -> dict[str, object] | None:
    """The right formula computed in a lower precision, named by the evidence it leaves: angles
    read back from the table that are numbers of that precision, or values that are; and every
    error within what computing in that precision gives."""
    values, ulps = t.values, t.tol.angle_ulps
    if not _on_unit_circle(values, max(t.value_eps, EPS_BF16)):
        return None
    # The coarsest precision the values are numbers of: what their rounding is.
    value_eps = next(
        (e for _, d, e in _LOWER if torch.equal(values.to(d).to(torch.float64), values)),
        t.value_eps,
    )
    source = None
    for name, dtype, eps in _LOWER:
        if eps >= t.tol.angle_eps:
            within = Tolerance(max(value_eps, t.value_eps), eps, ulps)(t.angles)
            on_grid = _angles_on_grid(t, dtype, max(value_eps, t.value_eps))
            if bool((t.error <= within).all()) and on_grid:
                source = _ANGLES_OF.render(name=name, eps=f"{eps:.1e}")
                break
        if eps > t.value_eps:
            within = Tolerance(eps, t.tol.angle_eps, ulps, t.tol.angle_cap)(t.angles)
            is_grid = torch.equal(values.to(dtype).to(torch.float64), values)
            if is_grid and bool((t.error <= within).all()):
                source = _VALUES_OF.render(name=name, eps=f"{eps:.1e}", dtype=t.dtype)
                break
    if source is None:
        return None
    allowed = t.tol(t.angles)
    row, col = divmod(int((t.error - allowed).argmax()), values.shape[1])
    angle_dtype = next(
        (n for n, e in (("float64", EPS64), ("float32", EPS32)) if e == t.tol.angle_eps),
        next((n for n, _, e in _LOWER if e == t.tol.angle_eps), f"eps {t.tol.angle_eps:.1e}"),
    )
    return {
        "position": t.offset + row,
        "dim": col,
        "error": f"{float(t.error[row, col]):.2e}",
        "allowed": f"{float(allowed[row, col]):.1e}",
        "dtype": t.dtype,
        "angle_dtype": angle_dtype,
        "source": source,
        "precision": "float64" if t.tol.angle_eps == EPS64 else _FLOAT64_OR_32,
    }


def precision_evidence(values: torch.Tensor, base: float, angle_dtype: torch.dtype) -> str | None:
    """For :mod:`pe_lib.checks.module`: what shows the precision a table (positions from 0) was
    computed in, when it is the right table in a lower precision than ``angle_dtype``; else
    ``None``."""
    floats, dtype, value_eps = as_float64(values)
    num_rows, d_model = floats.shape
    tol = Tolerance.for_table(value_eps, base, float(torch.finfo(angle_dtype).eps))
    positions = torch.arange(num_rows, dtype=torch.float64)
    expected, angles = reference(positions, d_model, base)
    table = _Table(floats, dtype, value_eps, base, 0, "offset", positions, expected, angles, tol)
    found = _precision(table)
    return None if found is None else str(found["source"])


def _wrong_values_fields(
    values: torch.Tensor,
    expected: torch.Tensor,
    error: torch.Tensor,
    allowed: torch.Tensor,
    offset: int,
    fits: list[_Fit],
    base: float,
) -> dict[str, object]:
    pos, dim, want, got = _largest_error(values, expected, error, offset)
    wrong = error > allowed
    hints = []
    even_wrong, odd_wrong = bool(wrong[:, 0::2].any()), bool(wrong[:, 1::2].any())
    if even_wrong and not odd_wrong:
        hints.append(str(_COSINES_RIGHT))
    elif odd_wrong and not even_wrong:
        hints.append(str(_SINES_RIGHT))
    wrong_rows = wrong.any(dim=1)
    if not bool(wrong_rows[0]) and values.shape[0] > 1:
        first = int(wrong_rows.nonzero()[0])
        hints.append(_ROWS_RIGHT.render(last=offset + first - 1, first=offset + first))
    for fit in fits:
        if fit.base != base and fit.scale == 1.0:
            hints.append(_LOOKS_LIKE.render(base=f"{fit.base:.4g}"))
            break
    return {
        "wrong": int(wrong.sum()),
        "total": wrong.numel(),
        "position": pos,
        "dim": dim,
        "expected": f"{want:.6f}",
        "found": f"{got:.6f}",
        "difference": f"{abs(got - want):.2e}",
        "hints": "".join(f" {hint}" for hint in hints),
    }
