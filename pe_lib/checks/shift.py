r"""``check_relative_shift``: a builder of the shift matrix :math:`M_k`, checked on real rows.

:math:`PE(pos+k) = M_k\,PE(pos)` with :math:`M_k` block-diagonal, one 2x2 rotation
:math:`[[\cos k\omega_i, \sin k\omega_i], [-\sin k\omega_i, \cos k\omega_i]]` per sine/cosine
pair (Vaswani et al., 2017, section 3.5; :func:`pe_lib.relative.relative_shift_matrix`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from .._validation import check_base, check_callable
from ..relative import relative_shift_matrix
from ..sinusoidal import DEFAULT_BASE, angular_frequencies
from ._core import (
    EPS64,
    Catalogue,
    NotAnArray,
    angle_ulps,
    as_float64,
    call_student,
    reference,
    say,
)

__all__ = ["check_relative_shift"]

MISTAKES = Catalogue("check_relative_shift")

_ROTATION = "[[cos(k*w_i), sin(k*w_i)], [-sin(k*w_i), cos(k*w_i)]]"

_EXCEPTION = MISTAKES.declare(
    "exception",
    "{call} raised {error_type}: {error}.",
    "fix that error first (the traceback above this one shows where it happened); build must "
    "accept any int k, negative and 0 included, and any even d_model.",
    ko=(
        "{call:이} {error_type:을} 일으켰다. 오류 내용: {error}",
        "그 오류부터 고쳐라(이 오류 위의 traceback이 어디서 일어났는지 보여 준다). build는 음수와 0을 포함한 모든 int k와 모든 짝수 d_model을 받아야 한다.",
    ),
)
_WRONG_TYPE = MISTAKES.declare(
    "wrong_type",
    "build({k}, {d_model}) returned {what}.",
    "return a real numpy array or torch tensor of shape (d_model, d_model), float64 is best "
    "(np.array(...) turns nested lists into one).",
    ko=(
        "build({k}, {d_model})가 {what:을} 반환했다.",
        "shape이 (d_model, d_model)인 실수 numpy 배열이나 torch 텐서를 반환하라. float64가 가장 좋다(np.array(...)가 중첩 리스트를 배열 하나로 바꿔 준다).",
    ),
)
_WRONG_SHAPE = MISTAKES.declare(
    "wrong_shape",
    "build returned shape {shape}.",
    "return the full (d_model, d_model) = ({d_model}, {d_model}) matrix, block-diagonal with "
    "one 2x2 rotation per sine/cosine pair.",
    ko=(
        "build가 shape {shape:을} 반환했다.",
        "사인/코사인 쌍마다 2x2 회전 하나를 둔 블록 대각 행렬, 즉 (d_model, d_model) = ({d_model}, {d_model}) 행렬 전체를 반환하라.",
    ),
)
_NOT_FINITE = MISTAKES.declare(
    "not_finite",
    "the matrix holds NaN or infinite values. Its entries are cosines and sines of "
    "k * omega_i, all in [-1, 1].",
    "look for a division by zero or a NaN in the frequencies.",
    ko=(
        "행렬에 NaN이나 무한대 값이 있다. 성분은 k * omega_i의 코사인과 사인이므로 모두 [-1, 1] 안에 있다.",
        "0으로 나누기나 주파수의 NaN을 찾아보라.",
    ),
)
_TRANSPOSED = MISTAKES.declare(
    "transposed",
    "your matrix is M_k transposed, which is also M_(-k): it shifts by -k. Either a 2x2 block "
    "is transposed, or both sines have the wrong sign, or k entered as -k.",
    f"each block must be {_ROTATION}, so that sin((pos+k)w) = cos(kw) sin(pos w) + "
    "sin(kw) cos(pos w) fills the sine row; check with PE(pos+k) = M_k @ PE(pos), PE(pos) a "
    "column vector.",
    ko=(
        "행렬이 M_k의 전치이며, 이것은 M_(-k)이기도 하다. -k만큼 민다. 2x2 블록이 전치되었거나, 두 사인의 부호가 모두 틀렸거나, k가 -k로 들어갔다.",
        f"각 블록은 {_ROTATION}이어야 sin((pos+k)w) = cos(kw) sin(pos w) + sin(kw) cos(pos w)가 사인 행을 채운다. PE(pos)를 열 벡터로 두고 PE(pos+k) = M_k @ PE(pos)로 확인하라.",
    ),
)
_NEGATED = MISTAKES.declare(
    "sign",
    "your matrix is -M_k (or -M_k transposed): every entry has the wrong sign.",
    f"each block must be {_ROTATION}; M_0 is the identity.",
    ko=(
        "행렬이 -M_k(또는 -M_k의 전치)이다. 모든 성분의 부호가 틀렸다.",
        f"각 블록은 {_ROTATION}이어야 한다. M_0은 단위 행렬이다.",
    ),
)
_SAME_SIGN = MISTAKES.declare(
    "sign",
    "the two sines in each 2x2 block have the same sign, so the block is not a rotation.",
    f"the sine row gets +sin(k*w_i) and the cosine row -sin(k*w_i): {_ROTATION} (from the "
    "angle-addition formulas).",
    ko=(
        "각 2x2 블록의 두 사인이 같은 부호라서 블록이 회전이 아니다.",
        f"사인 행에는 +sin(k*w_i), 코사인 행에는 -sin(k*w_i)가 들어간다. 즉 블록은 {_ROTATION}이다(삼각함수의 덧셈 정리).",
    ),
)
_LAYOUT = MISTAKES.declare(
    "layout",
    "your matrix acts on the 'half' layout (all sines, then all cosines), but PE here "
    "is interleaved: sine in column 2i, cosine in column 2i+1.",
    f"put the 2x2 block {_ROTATION} on rows and columns 2i, 2i+1.",
    ko=(
        "행렬이 '절반' 레이아웃(사인 전부, 그다음 코사인 전부)에 작용하지만, 여기서 PE는 교대 레이아웃(열 2i에 사인, 열 2i+1에 코사인)이다.",
        f"행과 열 2i, 2i+1에 2x2 블록을 두어라: {_ROTATION}.",
    ),
)
_WRONG_ANGLES = MISTAKES.declare(
    "wrong_values",
    "your matrix is made of 2x2 rotations, but block {i} (rows {row}, {row_next}) rotates by "
    "{found} rad where k * w_{i} = {k} * {omega} is {wanted} rad (mod 2*pi).",
    "use w_i = base ** (-2i / d_model) and the angle k * w_i in block i.",
    ko=(
        "행렬이 2x2 회전들로 이루어졌지만, 블록 {i}(행 {row}, {row_next})의 회전각이 {found} rad이다. 이 블록은 k * w_{i} = {k} * {omega} = {wanted} rad(mod 2*pi)만큼 회전해야 한다.",
        "w_i = base ** (-2i / d_model)로 두고 블록 i에서 각도 k * w_i를 써라.",
    ),
)
_IDENTITY = MISTAKES.declare(
    "not_shift",
    "your matrix is the identity: it leaves PE(pos) where it is instead of moving it by k.",
    f"block i must be {_ROTATION}, which is the identity only for k = 0.",
    ko=(
        "행렬이 단위 행렬이다. PE(pos)를 k만큼 옮기지 않고 제자리에 둔다.",
        f"블록 i는 {_ROTATION}이어야 하며, 이것은 k = 0일 때만 단위 행렬이다.",
    ),
)
_NOT_SHIFT = MISTAKES.declare(
    "not_shift",
    "M_k @ PE(pos) differs from PE(pos + k) by {residual} at pos={position}, dimension {dim}, "
    "and the matrix is not a set of 2x2 rotations.{k0}",
    f"build M_k block-diagonal, block i = {_ROTATION} on rows and columns 2i, 2i+1, with "
    "w_i = base ** (-2i / d_model).",
    ko=(
        "M_k @ PE(pos)가 pos={position}, 차원 {dim}에서 PE(pos + k)와 {residual}만큼 다르고, 행렬이 2x2 회전들의 모임도 아니다.{k0}",
        f"M_k를 블록 대각으로 만들어라: 행과 열 2i, 2i+1의 블록 i = {_ROTATION}, w_i = base ** (-2i / d_model).",
    ),
)

_D_MODELS = (2, 4, 8, 16)
_SHIFTS = (0, 1, -1, 3, -7, 40)
_MARGIN = -min(_SHIFTS)
#: Probe positions spread up to 2*pi*base (one turn of the slowest pair), at most this far.
_FARTHEST_PROBE = 2.0**40


@MISTAKES.attach
def check_relative_shift(
    build: Callable[[int, int], object], *, base: float = DEFAULT_BASE
) -> None:
    r"""Check a builder of the shift matrix :math:`M_k` with :math:`PE(pos+k) = M_k\,PE(pos)`.

    ``build(k, d_model)`` is called for ``d_model`` in 2, 4, 8, 16 and ``k`` in 0, 1, -1, 3,
    -7, 40, and each result is checked on about 40 positions from 0 to
    :math:`2\pi \cdot \mathrm{base}` (so that every sine/cosine pair turns through a whole
    circle; at most :math:`2^{40}`): the float64 rows of the sinusoidal table must satisfy
    :math:`PE(pos+k) = M_k\,PE(pos)` (``PE`` as a column vector, interleaved layout) within
    the rounding of ``M_k``'s dtype. Such an ``M_k`` is unique: block-diagonal with 2x2
    rotations :math:`[[\cos k\omega_i, \sin k\omega_i], [-\sin k\omega_i, \cos k\omega_i]]`
    (Vaswani et al., 2017, section 3.5).

    At the first failing ``(k, d_model)``, named in the message, ``.mistake`` (one of
    ``check_relative_shift.mistakes``) is:

    * ``"exception"``: ``build`` raised (the original error is chained);
    * ``"wrong_type"``: not a real numpy array or torch tensor;
    * ``"wrong_shape"``: not ``(d_model, d_model)``;
    * ``"not_finite"``: NaN or inf entries;
    * ``"transposed"``: :math:`M_k^\top`. This is also :math:`M_{-k}`: transposed blocks,
      both sines with flipped signs, and ``-k`` in place of ``k`` all give this one matrix,
      so they cannot be told apart and the message names all three;
    * ``"sign"``: the two sines of a block with the same sign (not a rotation), or the whole
      matrix negated;
    * ``"layout"``: the matrix for the ``"half"`` layout (sin | cos);
    * ``"wrong_values"``: 2x2 rotation blocks by the wrong angles (the message names the
      first wrong block, its angle and the expected ``k * omega_i``);
    * ``"not_shift"``: anything else (the identity for ``k != 0`` included).

    Args:
        build: ``build(k, d_model)`` returning a numpy array or torch tensor of shape
            ``(d_model, d_model)``.
        base: the base of the encoding, a finite number > 1.

    Returns:
        ``None`` when every ``M_k`` is right.

    Raises:
        TypeError: ``build`` is not callable, or ``base`` is not a real number.
        ValueError: ``base`` is not a finite number > 1.
        CheckFailed: a matrix is wrong; ``.mistake`` says how (see above).
    """
    check_callable("build", build, "a callable build(k, d_model) -> (d_model, d_model) matrix")
    base = check_base("base", base)
    for d_model in _D_MODELS:
        source, windows = _probe_windows(d_model, base)
        for k in _SHIFTS:
            rows = windows[:, _MARGIN]  # PE(source)
            shifted = windows[:, _MARGIN + k]  # PE(source + k)
            _check_one(build, k, d_model, base, source, rows, shifted)


def _probe_windows(d_model: int, base: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows of the table around about 40 probe positions.

    Probes are 0..15 and 24 more spread up to ``2*pi*base``, so that the rows span every
    direction. Returns the source positions ``(P,)`` and, for each probe, the rows of
    positions ``probe .. probe + span - 1``, shape ``(P, span, d_model)`` float64, where the
    source is ``probe + _MARGIN`` and ``source + k`` stays inside the window for every ``k``.
    """
    farthest = min(2 * math.pi * base, _FARTHEST_PROBE)
    spread = torch.logspace(1.3, math.log10(farthest), 24, dtype=torch.float64)
    probes = torch.tensor(sorted({*range(16), *spread.round().tolist()}), dtype=torch.float64)
    span = _MARGIN + max(_SHIFTS) + 1
    positions = probes[:, None] + torch.arange(span, dtype=torch.float64)[None, :]  # (P, span)
    windows, _ = reference(positions.reshape(-1), d_model, base)
    return probes + _MARGIN, windows.reshape(len(probes), span, d_model)


def _same_sign_sines(reference_matrix: torch.Tensor, sign: float) -> torch.Tensor:
    """M_k with both sines of each 2x2 block given the same sign (not a rotation)."""
    matrix = reference_matrix.clone()
    sin_rows = torch.arange(0, matrix.shape[0], 2)
    matrix[sin_rows, sin_rows + 1] = sign * matrix[sin_rows, sin_rows + 1].abs()
    matrix[sin_rows + 1, sin_rows] = sign * matrix[sin_rows + 1, sin_rows].abs()
    return matrix


def _check_one(
    build: Callable[[int, int], object],
    k: int,
    d_model: int,
    base: float,
    source: torch.Tensor,
    rows: torch.Tensor,
    shifted: torch.Tensor,
) -> None:
    where = say(f"For k={k}, d_model={d_model}, ", f"k={k}, d_model={d_model}일 때 ")
    result = call_student(_EXCEPTION, f"build({k}, {d_model})", build, k, d_model)
    try:
        matrix, _, eps = as_float64(result, integers=True)
    except NotAnArray as error:
        raise _WRONG_TYPE.fail(k=k, d_model=d_model, what=str(error)) from None
    if tuple(matrix.shape) != (d_model, d_model):
        raise _WRONG_SHAPE.fail(where, shape=tuple(matrix.shape), d_model=d_model)
    if not bool(torch.isfinite(matrix).all()):
        raise _NOT_FINITE.fail(where)
    mapped = rows @ matrix.T  # row r: M_k @ PE(pos_r)
    ulps = angle_ulps(base)
    largest_angle = float((source + abs(k)).max())
    allowed = 8.0 * eps * (d_model + ulps * (1 + abs(k))) + 8.0 * ulps * EPS64 * (1 + largest_angle)
    residual = (mapped - shifted).abs()
    if bool((residual <= allowed).all()):
        return

    entry_allowed = 8.0 * eps * (4.0 + ulps * (1 + abs(k))) + 1e-12

    def equals(candidate: torch.Tensor) -> bool:
        return bool(((matrix - candidate).abs() <= entry_allowed).all())

    right = relative_shift_matrix(k, d_model, base=base)
    if equals(right.T):
        raise _TRANSPOSED.fail(where)
    if equals(-right) or equals(-right.T):
        raise _NEGATED.fail(where)
    if equals(_same_sign_sines(right, 1.0)) or equals(_same_sign_sines(right, -1.0)):
        raise _SAME_SIGN.fail(where)
    if d_model >= 4 and equals(relative_shift_matrix(k, d_model, base=base, layout="half")):
        raise _LAYOUT.fail(where)
    if k != 0 and equals(torch.eye(d_model, dtype=torch.float64)):
        raise _IDENTITY.fail(where)
    angles = _rotation_angles(matrix, k, d_model, base, entry_allowed)
    if angles is not None:
        raise _WRONG_ANGLES.fail(where, **angles)
    row, col = divmod(int(residual.argmax()), d_model)
    raise _NOT_SHIFT.fail(
        where,
        residual=f"{float(residual.max()):.3e}",
        position=int(source[row]),
        dim=col,
        k0=say(" For k=0 it must be the identity.", " k=0이면 단위 행렬이어야 한다.")
        if k == 0
        else "",
    )


def _rotation_angles(
    matrix: torch.Tensor, k: int, d_model: int, base: float, allowed: float
) -> dict[str, object] | None:
    """If ``matrix`` is made of 2x2 rotation blocks with wrong angles, the first wrong block."""
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
    omega = angular_frequencies(d_model, base)
    wanted = torch.remainder(k * omega + math.pi, 2 * math.pi) - math.pi
    gap = torch.remainder(found - wanted + math.pi, 2 * math.pi) - math.pi
    i = int(gap.abs().argmax())
    return {
        "i": i,
        "row": 2 * i,
        "row_next": 2 * i + 1,
        "found": f"{float(found[i]):.6f}",
        "k": k,
        "omega": f"{float(omega[i]):.6g}",
        "wanted": f"{float(wanted[i]):.6f}",
    }
