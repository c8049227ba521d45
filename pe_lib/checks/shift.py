r"""``check_relative_shift``: a builder of the shift matrix :math:`M_k`, checked on real rows.

:math:`PE(pos+k) = M_k\,PE(pos)` with :math:`M_k` block-diagonal, one 2x2 rotation
:math:`[[\cos k\omega_i, \sin k\omega_i], [-\sin k\omega_i, \cos k\omega_i]]` per sine/cosine
pair (Vaswani et al., 2017, section 3.5; :func:`pe_lib.encodings.relative.relative_shift_matrix`).

**Cases.** The readable ones first, ``d_model`` in 2, 4, 8, 16 and ``k`` in 0, 1, -1, 3, -7,
40; then 12 drawn from what the exercise allows (:func:`pe_lib.checks._core.draw_cases`):
``d_model`` even from 18 to 256, ``k`` from a few positions to ten million either way.

**Tolerance.** The exercise asks for a float64 matrix: each block's angle :math:`k\omega_i`
formed in float64 (:math:`u\,\varepsilon_{64}\,|k\omega_i|`, :math:`u = \ln \mathrm{base} + 4`),
its entries rounded to the dtype returned (a float32 matrix cast from float64 values passes).
Angles formed in float32 are off by about :math:`10^{-7} |k\omega_i|`: 0.1 radian at
:math:`k = 3\cdot 10^6`; they are named ``"precision"``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass

import torch

from .._validation import check_base, check_callable
from ..encodings.relative import relative_shift_matrix
from ..encodings.sinusoidal import DEFAULT_BASE, angular_frequencies
from ._core import (
    ANGLE_ERROR_CAP,
    EPS32,
    EPS64,
    EXCEPTION,
    NOT_FINITE,
    SHAPE,
    WRONG_TYPE,
    Case,
    Catalogue,
    Diagnosis,
    NotAnArray,
    angle_ulps,
    as_float64,
    call_student,
    check_seed,
    diagnose,
    draw_cases,
    reference,
    text,
)

__all__ = ["check_relative_shift"]

MISTAKES = Catalogue("check_relative_shift")
_SHAPE = SHAPE.renamed("wrong_shape")
MISTAKES.uses(EXCEPTION, WRONG_TYPE, _SHAPE, NOT_FINITE)

_ROTATION = "[[cos(k*w_i), sin(k*w_i)], [-sin(k*w_i), cos(k*w_i)]]"

_CONTRACT = text(
    "build must accept any int k, negative and 0 included, and any even d_model; the checker "
    "calls it for d_model up to 256 and k up to ten million either way."
)
_WANTED_TYPE = text("a real numpy array or torch tensor")
_FIX_TYPE = text(
    "return a real numpy array or torch tensor of shape (d_model, d_model), float64 is best "
    "(np.array(...) turns nested lists into one)."
)
_FIX_SHAPE = text(
    "return the full (d_model, d_model) matrix, block-diagonal with one 2x2 rotation per "
    "sine/cosine pair."
)
_FIX_FINITE = text("look for a division by zero or a NaN in the frequencies.")
_ROW_COLUMN = text("row {row}, column {column}")

_TRANSPOSED = MISTAKES.declare(
    "transposed",
    "your matrix is M_k transposed, which is also M_(-k): it shifts by -k. Either a 2x2 block "
    "is transposed, or both sines have the wrong sign, or k entered as -k.",
    f"each block must be {_ROTATION}, so that sin((pos+k)w) = cos(kw) sin(pos w) + "
    "sin(kw) cos(pos w) fills the sine row; check with PE(pos+k) = M_k @ PE(pos), PE(pos) a "
    "column vector.",
)
_NEGATED = MISTAKES.declare(
    "sign",
    "your matrix is -M_k (or -M_k transposed): every entry has the wrong sign.",
    f"each block must be {_ROTATION}; M_0 is the identity.",
)
_SAME_SIGN = MISTAKES.declare(
    "sign",
    "the two sines in each 2x2 block have the same sign, so the block is not a rotation.",
    f"the sine row gets +sin(k*w_i) and the cosine row -sin(k*w_i): {_ROTATION} (from the "
    "angle-addition formulas).",
)
_LAYOUT = MISTAKES.declare(
    "layout",
    "your matrix acts on the 'half' layout (all sines, then all cosines), but PE here "
    "is interleaved: sine in column 2i, cosine in column 2i+1.",
    f"put the 2x2 block {_ROTATION} on rows and columns 2i, 2i+1.",
)
_PRECISION = MISTAKES.declare(
    "precision",
    "your matrix is made of the right 2x2 rotations, but their angles were formed in float32: "
    "block {i} (rows {row}, {row_next}) rotates by {found} rad where k * w_{i} is {wanted} rad "
    "(mod 2*pi), off by {gap} rad. Rounding k * w_i to float32 moves it by up to "
    "{float32_bound} rad here, to float64 by {float64_bound}.",
    "form the angles k * w_i in float64 (k and the frequencies as float64 tensors, "
    "torch.arange(..., dtype=torch.float64)), then cast the matrix if you need another dtype.",
)
_WRONG_ANGLES = MISTAKES.declare(
    "wrong_values",
    "your matrix is made of 2x2 rotations, but block {i} (rows {row}, {row_next}) rotates by "
    "{found} rad where k * w_{i} = {k} * {omega} is {wanted} rad (mod 2*pi).",
    "use w_i = base ** (-2i / d_model) and the angle k * w_i in block i.",
)
_IDENTITY = MISTAKES.declare(
    "not_shift",
    "your matrix is the identity: it leaves PE(pos) where it is instead of moving it by k.",
    f"block i must be {_ROTATION}, which is the identity only for k = 0.",
)
_NOT_SHIFT = MISTAKES.declare(
    "not_shift",
    "M_k @ PE(pos) differs from PE(pos + k) by {residual} at pos={position}, dimension {dim}, "
    "and the matrix is not a set of 2x2 rotations.{k0}",
    f"build M_k block-diagonal, block i = {_ROTATION} on rows and columns 2i, 2i+1, with "
    "w_i = base ** (-2i / d_model).",
)
_FOR = text("For k={k}, d_model={d_model}{drawn}, ")
_K0 = text("For k=0 it must be the identity.")

_D_MODELS = (2, 4, 8, 16)
_SHIFTS = (0, 1, -1, 3, -7, 40)
_DRAWN = 12
#: Probe positions spread up to 2*pi*base (one turn of the slowest pair), at most this far.
_FARTHEST_PROBE = 2.0**40


def _draw(rng: random.Random) -> tuple[int, int]:
    """A ``(d_model, k)`` of the space the exercise allows: sizes to 256, shifts to 10**7."""
    d_model = 2 * rng.randint(9, 128)
    magnitude = rng.choice(
        (rng.randint(2, 99), rng.randint(100, 99_999), rng.randint(10**5, 10**7))
    )
    return d_model, magnitude * rng.choice((1, -1))


@MISTAKES.attach
def check_relative_shift(
    build: Callable[[int, int], object], *, base: float = DEFAULT_BASE, seed: int = 0
) -> None:
    r"""Check a builder of the shift matrix :math:`M_k` with :math:`PE(pos+k) = M_k\,PE(pos)`.

    ``build(k, d_model)`` is called for ``d_model`` in 2, 4, 8, 16 and ``k`` in 0, 1, -1, 3,
    -7, 40, then for 12 cases drawn with ``seed``: ``d_model`` even up to 256 and ``k`` up to
    :math:`10^7` either way. Each result is checked on about 40 positions from 0 to
    :math:`2\pi \cdot \mathrm{base}` (so that every sine/cosine pair turns through a whole
    circle; at most :math:`2^{40}`): the float64 rows of the sinusoidal table must satisfy
    :math:`PE(pos+k) = M_k\,PE(pos)` (``PE`` as a column vector, interleaved layout) within the
    rounding of float64 angles and of ``M_k``'s dtype. Such an ``M_k`` is unique: block-diagonal
    with 2x2 rotations :math:`[[\cos k\omega_i, \sin k\omega_i], [-\sin k\omega_i, \cos
    k\omega_i]]` (Vaswani et al., 2017, section 3.5).

    At the first failing ``(k, d_model)``, named in the message (with the seed, for a drawn
    case), ``.mistake`` (one of ``check_relative_shift.mistakes``) is:

    * ``"exception"``: ``build`` raised (the original error is chained);
    * ``"wrong_type"``: not a real numpy array or torch tensor;
    * ``"shape"``: not ``(d_model, d_model)``;
    * ``"not_finite"``: NaN or inf entries;
    * ``"transposed"``: :math:`M_k^\top`. This is also :math:`M_{-k}`: transposed blocks,
      both sines with flipped signs, and ``-k`` in place of ``k`` all give this one matrix,
      so they cannot be told apart and the message names all three;
    * ``"sign"``: the two sines of a block with the same sign (not a rotation), or the whole
      matrix negated;
    * ``"layout"``: the matrix for the ``"half"`` layout (sin | cos);
    * ``"precision"``: the right rotations with angles formed in float32;
    * ``"wrong_values"``: 2x2 rotation blocks by the wrong angles (the message names the
      first wrong block, its angle and the expected ``k * omega_i``);
    * ``"not_shift"``: anything else (the identity for ``k != 0`` included).

    Args:
        build: ``build(k, d_model)`` returning a numpy array or torch tensor of shape
            ``(d_model, d_model)``.
        base: the base of the encoding, a finite number > 1.
        seed: the seed of the drawn cases, an int >= 0.

    Returns:
        ``None`` when every ``M_k`` is right.

    Raises:
        TypeError: ``build`` is not callable, or ``base`` or ``seed`` is not a number.
        ValueError: ``base`` is not a finite number > 1, or ``seed`` is negative.
        CheckFailed: a matrix is wrong; ``.mistake`` says how (see above).
    """
    check_callable("build", build, "a callable build(k, d_model) -> (d_model, d_model) matrix")
    base = check_base("base", base)
    seed = check_seed(seed)
    fixed = [(d_model, k) for d_model in _D_MODELS for k in _SHIFTS]
    for case in draw_cases(fixed, _draw, _DRAWN, seed):
        _check_one(build, case, base)


def _probes(base: float) -> torch.Tensor:
    """About 40 source positions: 0..15 and 24 more spread up to ``2*pi*base``, so that the
    rows span every direction."""
    farthest = min(2 * math.pi * base, _FARTHEST_PROBE)
    spread = torch.logspace(1.3, math.log10(farthest), 24, dtype=torch.float64)
    return torch.tensor(sorted({*range(16), *spread.round().tolist()}), dtype=torch.float64)


@dataclass(frozen=True)
class _Matrix:
    """A student's ``M_k`` (float64) and what it is compared with."""

    matrix: torch.Tensor
    k: int
    d_model: int
    base: float
    #: machine epsilon of the values returned (at least float64's)
    eps: float
    #: per entry, what rounding in at least float32 allows, angles capped (diagnoses only)
    loose: torch.Tensor
    #: per block, how far rounding the angle k * w_i in float64 and in float32 moves it
    float64_bound: torch.Tensor
    float32_bound: torch.Tensor

    def equals(self, candidate: torch.Tensor) -> bool:
        return bool(((self.matrix - candidate).abs() <= self.loose).all())

    def right(self) -> torch.Tensor:
        return relative_shift_matrix(self.k, self.d_model, base=self.base)

    def rotations(self) -> tuple[torch.Tensor, torch.Tensor] | None:
        """The angle of each 2x2 block and how far it is from ``k * w_i``, if the matrix is
        made of 2x2 rotation blocks; else ``None``."""
        pairs, allowed = self.d_model // 2, 32.0 * max(EPS32, self.eps)
        blocks = self.matrix.reshape(pairs, 2, pairs, 2).permute(0, 2, 1, 3)
        diagonal = blocks[torch.arange(pairs), torch.arange(pairs)]  # (pairs, 2, 2)
        off = blocks.clone()
        off[torch.arange(pairs), torch.arange(pairs)] = 0
        c, s = diagonal[:, 0, 0], diagonal[:, 0, 1]
        if not (
            bool((off.abs() <= allowed).all())
            and bool(((diagonal[:, 1, 1] - c).abs() <= allowed).all())
            and bool(((diagonal[:, 1, 0] + s).abs() <= allowed).all())
            and bool(((c * c + s * s - 1).abs() <= 4 * allowed).all())
        ):
            return None
        found = torch.atan2(s, c)
        wanted = self.k * angular_frequencies(self.d_model, self.base)
        gap = torch.remainder(found - wanted + math.pi, 2 * math.pi) - math.pi
        return found, gap

    def block_fields(self, i: int) -> dict[str, object]:
        found, _ = self.rotations() or (torch.zeros(1), None)
        omega = angular_frequencies(self.d_model, self.base)
        wanted = math.remainder(self.k * float(omega[i]), 2 * math.pi)
        return {
            "i": i,
            "row": 2 * i,
            "row_next": 2 * i + 1,
            "found": f"{float(found[i]):.6f}",
            "k": self.k,
            "omega": f"{float(omega[i]):.6g}",
            "wanted": f"{wanted:.6f}",
        }


def _same_sign_sines(right: torch.Tensor, sign: float) -> torch.Tensor:
    """M_k with both sines of each 2x2 block given the same sign (not a rotation)."""
    matrix = right.clone()
    sin_rows = torch.arange(0, matrix.shape[0], 2)
    matrix[sin_rows, sin_rows + 1] = sign * matrix[sin_rows, sin_rows + 1].abs()
    matrix[sin_rows + 1, sin_rows] = sign * matrix[sin_rows + 1, sin_rows].abs()
    return matrix


def _when(condition: bool, fields: dict[str, object] | None = None) -> dict[str, object] | None:
    return (fields or {}) if condition else None


def _precision(m: _Matrix) -> dict[str, object] | None:
    """Rotation blocks whose angles are off by what float32 angles explain, not float64."""
    rotations = m.rotations()
    if rotations is None:
        return None
    _, gap = rotations
    error = gap.abs()
    if not bool((error <= m.float32_bound).all()) or bool((error <= m.float64_bound).all()):
        return None
    i = int((error - m.float64_bound).argmax())
    return {
        **m.block_fields(i),
        "gap": f"{float(error[i]):.2e}",
        "float32_bound": f"{float(m.float32_bound[i]):.1e}",
        "float64_bound": f"{float(m.float64_bound[i]):.1e}",
    }


def _wrong_angles(m: _Matrix) -> dict[str, object] | None:
    rotations = m.rotations()
    if rotations is None:
        return None
    _, gap = rotations
    wrong = (gap.abs() > m.float64_bound).nonzero()
    return m.block_fields(int(wrong[0])) if len(wrong) else None


#: The mistakes a wrong matrix is compared with, in order; ``"not_shift"`` if none explains it.
_DIAGNOSES: tuple[Diagnosis[_Matrix], ...] = (
    Diagnosis(_TRANSPOSED, lambda m: _when(m.equals(m.right().T))),
    Diagnosis(_NEGATED, lambda m: _when(m.equals(-m.right()) or m.equals(-m.right().T))),
    Diagnosis(
        _SAME_SIGN,
        lambda m: _when(
            m.equals(_same_sign_sines(m.right(), 1.0))
            or m.equals(_same_sign_sines(m.right(), -1.0))
        ),
    ),
    Diagnosis(
        _LAYOUT,
        lambda m: _when(
            m.d_model >= 4
            and m.equals(relative_shift_matrix(m.k, m.d_model, base=m.base, layout="half"))
        ),
    ),
    Diagnosis(
        _IDENTITY,
        lambda m: _when(m.k != 0 and m.equals(torch.eye(m.d_model, dtype=torch.float64))),
    ),
    Diagnosis(_PRECISION, _precision),
    Diagnosis(_WRONG_ANGLES, _wrong_angles),
)


def _check_one(
    build: Callable[[int, int], object], case: Case[tuple[int, int]], base: float
) -> None:
    d_model, k = case.value
    where = _FOR.render(k=k, d_model=d_model, drawn=case.label)
    call = f"build({k}, {d_model})"
    result = call_student(EXCEPTION, call, build, k, d_model, contract=_CONTRACT)
    try:
        matrix, _, eps = as_float64(result, integers=True)
    except NotAnArray as error:
        raise WRONG_TYPE.fail(
            where, call=call, found=str(error), wanted=_WANTED_TYPE, how=_FIX_TYPE
        ) from None
    if tuple(matrix.shape) != (d_model, d_model):
        raise _SHAPE.fail(
            where,
            call=call,
            shape=tuple(matrix.shape),
            wanted=f"(d_model, d_model) = ({d_model}, {d_model})",
            how=_FIX_SHAPE,
        )
    finite = torch.isfinite(matrix)
    if not bool(finite.all()):
        row, column = (int(v) for v in (~finite).nonzero()[0])
        raise NOT_FINITE.fail(
            where, call=call, where=_ROW_COLUMN.render(row=row, column=column), how=_FIX_FINITE
        )

    ulps = angle_ulps(base)
    source = _probes(base)
    rows, _ = reference(source, d_model, base)  # PE(source)
    shifted, _ = reference(source + k, d_model, base)  # PE(source + k)
    residual = (rows @ matrix.T - shifted).abs()  # row r: M_k @ PE(pos_r) - PE(pos_r + k)
    largest_angle = float(source.max()) + abs(k)
    allowed = 8.0 * eps * 4.0 + 8.0 * ulps * EPS64 * (1.0 + largest_angle)
    if bool((residual <= allowed).all()):
        return

    block_angles = abs(k) * angular_frequencies(d_model, base)  # (d_model / 2,)
    float32_bound = ulps * EPS32 * block_angles + 8.0 * EPS32
    float64_bound = 8.0 * ulps * EPS64 * (1.0 + block_angles) + 8.0 * eps
    per_row = 8.0 * max(eps, EPS32) * 4.0 + (ulps * EPS32 * block_angles).clamp(max=ANGLE_ERROR_CAP)
    loose = per_row.repeat_interleave(2)[:, None].expand(d_model, d_model)
    evidence = _Matrix(matrix, k, d_model, base, eps, loose, float64_bound, float32_bound)
    failure = diagnose(_DIAGNOSES, evidence, where)
    if failure is not None:
        raise failure
    row, col = divmod(int(residual.argmax()), d_model)
    raise _NOT_SHIFT.fail(
        where,
        residual=f"{float(residual.max()):.3e}",
        position=int(source[row]),
        dim=col,
        k0=f" {_K0}" if k == 0 else "",
    )
