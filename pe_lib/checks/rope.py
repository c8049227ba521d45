r"""``check_rope``: a rotary position embedding, checked against its definition.

RoFormer (Su et al., 2021), eq. 34: channel pair ``i`` of a query or key at position ``m`` is
rotated by the angle :math:`m\,\theta_i`, :math:`\theta_i = \mathrm{base}^{-2i/d}`
(``d = head_dim``):

.. math::

    \begin{pmatrix} y_a \\ y_b \end{pmatrix}
    = \begin{pmatrix} \cos m\theta_i & -\sin m\theta_i \\ \sin m\theta_i & \cos m\theta_i
      \end{pmatrix} \begin{pmatrix} x_a \\ x_b \end{pmatrix},

pair ``i`` being channels ``(2i, 2i+1)`` in the ``"interleaved"`` layout (RoFormer, Meta's Llama
code) and ``(i, i + d/2)`` in the ``"half"`` layout (GPT-NeoX, Hugging Face's ``rotate_half``).
With a ``scaling`` (a ``config.json`` ``rope_scaling`` entry) the :math:`\theta_i` and the
factor multiplying cos and sin are those of :func:`pe_lib.rope_scaling.rope_frequencies`, which
equal those of the code the models run (Hugging Face transformers' ``ROPE_INIT_FUNCTIONS``, to
float32 rounding): a rotation built as transformers builds it passes. Every message about wrong
values names the reference it was compared with.

The reference is computed here in float64 from the student's own input values, so a result is
compared with the exact rotation of exactly what the student received.

**Tolerance.** Pair ``i`` of a result may differ from the reference by at most
:math:`\lVert x_{\mathrm{pair}} \rVert\, a\,(4\,\varepsilon_v + \min(u\,\varepsilon_{32}\,
|m\theta_i|,\ 0.01))`, ``a`` the attention factor, :math:`\varepsilon_v` the machine epsilon of
the input's dtype but at least float32's, :math:`u = \ln \mathrm{base} + 4` (+4 with a scaling)
rounding steps in forming the angle, and 0.01 the cap
:data:`~pe_lib.checks._core.ANGLE_ERROR_CAP` (:class:`~pe_lib.checks._core.Tolerance`). Angles
formed in float32, as Meta's and Hugging Face's code do, pass for every input dtype at every
probed position (up to 10,001); angles formed in bfloat16 or float16 do not.

**Diagnosis.** A result that is not within the tolerance is compared with what each mistake would
give (the other layout, :math:`-\theta`, positions off by the offset, the scaling not applied or
applied twice, another base, half-precision angles), in the order of ``check_rope.mistakes``.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from .._validation import (
    check_callable,
    check_choice,
    check_floating_dtype,
    check_head_dim,
    check_layout,
    check_positive_int,
)
from ..rope_scaling import ScalingConfig, frequencies_of, resolve_scaling, rope_frequencies
from ._core import (
    EPS32,
    EPS_BF16,
    Catalogue,
    CheckFailed,
    Tolerance,
    angle_ulps,
    call_student,
    dtype_name,
    fmt_base,
    particle,
    say,
)

__all__ = ["CONVENTIONS", "Convention", "check_rope"]

#: The mistakes :func:`check_rope` recognises, in the order it looks for them.
MISTAKES = Catalogue("check_rope")

_FIX_ROTATE = (
    "rotate channel pair i at position m by the angle m * theta_i, theta_i = base ** (-2i / "
    "head_dim), angles formed in float32 or float64: y_a = x_a cos - x_b sin, y_b = x_a sin + "
    "x_b cos."
)
_FIX_ROTATE_KO = (
    "위치 m에서 채널 쌍 i를 각도 m * theta_i, theta_i = base ** (-2i / head_dim)만큼 돌려라. "
    "각도는 float32나 float64로 만들고, y_a = x_a cos - x_b sin, y_b = x_a sin + x_b cos."
)

_EXCEPTION = MISTAKES.declare(
    "exception",
    "{call} raised {error_type}: {error}.",
    "fix that error first (the traceback above this one shows where it happened). The checker "
    "passes x of shape (batch, heads, seq_len, head_dim) in each dtype it checks (float64, "
    "float32 and bfloat16 unless told otherwise), at positions from 0 up to 10001 (up to "
    "max_len - 1 if you pass max_len=, the size of your cache), one decoding step at a time "
    "too (seq_len 1).",
    ko=(
        "{call:이} {error_type:을} 일으켰다. 오류 내용: {error}",
        "그 오류부터 고쳐라(이 오류 위의 traceback이 어디서 일어났는지 보여 준다). 검사기는 shape이 (batch, heads, seq_len, head_dim)인 x를 검사하는 dtype마다(따로 정하지 않으면 float64, float32, bfloat16) 위치 0부터 10001까지(캐시 크기를 max_len 인자로 넘기면 max_len - 1까지) 넘기며, 한 번에 한 단계씩 디코딩하는 경우(seq_len 1)도 넘긴다.",
    ),
)
_IN_PLACE = MISTAKES.declare(
    "in_place",
    "{call} changed its input in place (e.g. x[..., 0::2] = ... or x.mul_(cos)).",
    "build a new tensor (torch.cat / torch.stack of the rotated halves or pairs) and leave the "
    "caller's queries and keys untouched.",
    ko=(
        "{call:이} 입력을 제자리에서(in place) 바꿨다(예: x[..., 0::2] = ... 또는 x.mul_(cos)).",
        "새 텐서를 만들고(회전한 절반이나 쌍을 torch.cat / torch.stack으로), 호출한 쪽의 쿼리와 키는 건드리지 마라.",
    ),
)
_WRONG_TYPE = MISTAKES.declare(
    "wrong_type",
    "{call} returned {what}, not a torch tensor.",
    "return the rotated tensor (for rotate(q, k, offset): the pair (q_rotated, k_rotated)).",
    ko=(
        "{call:이} torch 텐서가 아니라 {what:을} 반환했다.",
        "회전한 텐서를 반환하라(rotate(q, k, offset)이면 쌍 (q_rotated, k_rotated)).",
    ),
)
_SHAPE = MISTAKES.declare(
    "shape",
    "{call} returned shape {shape} for an input of shape {x_shape}.",
    "return a tensor of the shape of the input: the rotation acts on the last dimension "
    "(head_dim) and keeps every other.",
    ko=(
        "{call:이} shape {x_shape}인 입력에 대해 shape {shape:을} 반환했다.",
        "입력과 shape이 같은 텐서를 반환하라: 회전은 마지막 차원(head_dim)에 작용하고 다른 차원은 모두 그대로 둔다.",
    ),
)
_DTYPE = MISTAKES.declare(
    "dtype",
    "{call} returned a {found} tensor for a {wanted} input.",
    "compute in float32 if you like, then cast the result back: return out.type_as(x) "
    "(or out.to(x.dtype)).",
    ko=(
        "{call:이} {wanted} 입력에 대해 {found} 텐서를 반환했다.",
        "원하면 float32로 계산하되, 결과를 다시 변환하라: return out.type_as(x)(또는 out.to(x.dtype)).",
    ),
)
_NOT_FINITE = MISTAKES.declare(
    "not_finite",
    "the result holds NaN or infinite values, the first at position {position}. A rotation "
    "keeps the length of every pair.",
    "look for an overflow (e.g. positions or base ** (2i / d) in float16, whose largest "
    "value is 65504) or a division by zero; form the angles in float32 or float64.",
    ko=(
        "결과에 NaN이나 무한대 값이 있고, 첫 번째는 위치 {position}에 있다. 회전은 모든 쌍의 길이를 그대로 둔다.",
        "오버플로(예: float16으로 계산한 위치나 base ** (2i / d). float16의 최댓값은 65504다)나 0으로 나누기를 찾아보라. 각도는 float32나 float64로 만들어라.",
    ),
)
_INTERLEAVED_AS_HALF = MISTAKES.declare(
    "layout",
    'the result is the rotation in the "half" layout (pairs (i, i + head_dim/2), Hugging '
    'Face\'s rotate_half), but the "interleaved" layout was asked for (pairs (2i, 2i+1), as '
    "in RoFormer and Meta's Llama code). Weights trained with one layout give wrong scores "
    "with the other.",
    "pair channel 2i with channel 2i+1: x_a = x[..., 0::2], x_b = x[..., 1::2], and put the "
    "rotated pairs back interleaved (torch.stack((y_a, y_b), dim=-1).flatten(-2)); or pass "
    'layout="half" if that is the layout you mean.',
    ko=(
        "결과가 '절반' 레이아웃(쌍 (i, i + head_dim/2), Hugging Face의 rotate_half)의 회전인데, 요청한 것은 '교대' 레이아웃(쌍 (2i, 2i+1), RoFormer와 Meta의 Llama 코드처럼)이다. 한 레이아웃으로 학습한 가중치를 다른 레이아웃에 쓰면 어텐션 점수가 틀어진다.",
        '채널 2i와 채널 2i+1을 짝지어라: x_a = x[..., 0::2], x_b = x[..., 1::2]로 두고, 회전한 쌍을 다시 교대로 넣어라(torch.stack((y_a, y_b), dim=-1).flatten(-2)). 그 레이아웃을 뜻한 것이라면 layout="half"를 넘겨라.',
    ),
)
_HALF_AS_INTERLEAVED = MISTAKES.declare(
    "layout",
    'the result is the rotation in the "interleaved" layout (pairs (2i, 2i+1), as in '
    'RoFormer and Meta\'s Llama code), but the "half" layout was asked for (pairs '
    "(i, i + head_dim/2), Hugging Face's rotate_half). Weights trained with one layout give "
    "wrong scores with the other.",
    "pair channel i with channel i + head_dim/2: x_a, x_b = x.chunk(2, dim=-1), and return "
    'torch.cat((y_a, y_b), dim=-1); or pass layout="interleaved" if that is the layout you '
    "mean.",
    ko=(
        "결과가 '교대' 레이아웃(쌍 (2i, 2i+1), RoFormer와 Meta의 Llama 코드처럼)의 회전인데, 요청한 것은 '절반' 레이아웃(쌍 (i, i + head_dim/2), Hugging Face의 rotate_half)이다. 한 레이아웃으로 학습한 가중치를 다른 레이아웃에 쓰면 어텐션 점수가 틀어진다.",
        '채널 i와 채널 i + head_dim/2를 짝지어라: x_a, x_b = x.chunk(2, dim=-1)로 두고 torch.cat((y_a, y_b), dim=-1)을 반환하라. 그 레이아웃을 뜻한 것이라면 layout="interleaved"를 넘겨라.',
    ),
)
_MIXED_LAYOUT = MISTAKES.declare(
    "layout",
    "the channels are paired in the {layout!r} layout, but cos and sin are laid out for the "
    "{other!r} one ({laid_out}), so the two channels of a pair turn by different angles.",
    "lay cos and sin out like the pairs: torch.cat((freqs, freqs), dim=-1) with rotate_half "
    "(pairs (i, i + head_dim/2)), freqs.repeat_interleave(2, dim=-1) with interleaved pairs "
    "(2i, 2i+1).",
    ko=(
        "채널은 {layout!r} 레이아웃으로 짝지어졌는데, cos와 sin은 {other!r} 레이아웃으로 놓였다({laid_out}). 그래서 한 쌍의 두 채널이 서로 다른 각도로 돈다.",
        "cos와 sin을 쌍과 같이 놓아라: rotate_half(쌍 (i, i + head_dim/2))에는 torch.cat((freqs, freqs), dim=-1), 교대 쌍 (2i, 2i+1)에는 freqs.repeat_interleave(2, dim=-1).",
    ),
)
_SIGN = MISTAKES.declare(
    "sign",
    "the result rotates every pair by -m * theta_i: the rotation goes the wrong way "
    "(sin has the wrong sign, or rotate_half returns (x1, -x2) instead of (-x2, x1)).",
    "y_a = x_a cos(m theta_i) - x_b sin(m theta_i), y_b = x_a sin(m theta_i) + x_b "
    "cos(m theta_i); in the half layout rotate_half(x) = torch.cat((-x2, x1), dim=-1).",
    ko=(
        "결과가 모든 쌍을 -m * theta_i만큼 돌린다. 회전 방향이 반대다(sin의 부호가 틀렸거나, rotate_half가 (-x2, x1) 대신 (x1, -x2)를 반환한다).",
        "y_a = x_a cos(m theta_i) - x_b sin(m theta_i), y_b = x_a sin(m theta_i) + x_b cos(m theta_i). 절반 레이아웃에서는 rotate_half(x) = torch.cat((-x2, x1), dim=-1).",
    ),
)
_FIX_OFFSET = (
    "position j of a call at offset p is p + j: positions = torch.arange(offset, offset + "
    "seq_len). When decoding with a key-value cache, offset is the number of tokens already "
    "cached, and the new token's query and key are rotated at that absolute position."
)
_FIX_OFFSET_KO = (
    "오프셋 p에서 호출했을 때 j번째 위치는 p + j이다. positions = torch.arange(offset, offset + "
    "seq_len). 키-값 캐시로 디코딩할 때 offset은 이미 캐시된 토큰 수이고, 새 토큰의 쿼리와 키는 "
    "그 절대 위치에서 회전한다."
)
_OFFSET_IGNORED = MISTAKES.declare(
    "offset",
    "the result is the rotation at positions {found} instead of {wanted}: the decoding offset "
    "is ignored, so every step is rotated as if it were the start of the sequence.",
    _FIX_OFFSET,
    ko=(
        "결과가 위치 {wanted:이} 아니라 {found}에서의 회전이다. 디코딩 오프셋을 무시해서 모든 단계를 시퀀스의 시작인 것처럼 돌린다.",
        _FIX_OFFSET_KO,
    ),
)
_OFFSET_TWICE = MISTAKES.declare(
    "offset",
    "the result is the rotation at positions {found} instead of {wanted}: the offset is added "
    "twice.",
    _FIX_OFFSET,
    ko=(
        "결과가 위치 {wanted:이} 아니라 {found}에서의 회전이다. 오프셋을 두 번 더했다.",
        _FIX_OFFSET_KO,
    ),
)
_OFFSET_BY_ONE = MISTAKES.declare(
    "offset",
    "the result is the rotation at positions {found} instead of {wanted}: the positions are "
    "off by {by}.",
    _FIX_OFFSET + " The first token of a sequence is at position 0.",
    ko=(
        "결과가 위치 {wanted:이} 아니라 {found}에서의 회전이다. 위치가 {by}만큼 어긋나 있다.",
        _FIX_OFFSET_KO + " 시퀀스의 첫 토큰은 위치 0에 있다.",
    ),
)
_NOT_ROTATED = MISTAKES.declare(
    "not_rotated",
    "the result is the input unchanged: nothing is rotated (for rotate(q, k, offset): is one of "
    "the two returned before rotating it?).",
    _FIX_ROTATE,
    ko=(
        "결과가 입력 그대로다. 아무것도 회전하지 않았다(rotate(q, k, offset)이면, 둘 가운데 하나를 회전하기 전에 반환하지 않았는가?).",
        _FIX_ROTATE_KO,
    ),
)
_FIX_SCALING = (
    "take theta'_i and the attention factor from the scaling once, e.g. "
    "pe_lib.rope_scaling.rope_frequencies(head_dim, base=base, scaling=scaling), and rotate by "
    'm * theta\'_i; for "linear" (position interpolation) that is the angle of position '
    "m / factor."
)
_FIX_SCALING_KO = (
    "theta'_i와 어텐션 인수를 스케일링에서 한 번만 가져와라. 예: "
    "pe_lib.rope_scaling.rope_frequencies(head_dim, base=base, scaling=scaling). 그리고 "
    'm * theta\'_i만큼 돌려라. "linear"(position interpolation)이면 그것은 위치 m / factor의 '
    "각도이다."
)
_SCALING_MISSING = MISTAKES.declare(
    "scaling",
    "the result is plain RoPE: the {rope_type!r} scaling (factor {factor}) is not applied.",
    _FIX_SCALING,
    ko=(
        "결과가 기본 RoPE이다. {rope_type!r} 스케일링(factor {factor})이 적용되지 않았다.",
        _FIX_SCALING_KO,
    ),
)
_SCALING_TWICE = MISTAKES.declare(
    "scaling",
    "the result is the {rope_type!r} scaling with factor {factor}**2 = {squared}: the factor "
    "is applied twice (e.g. positions divided by it and the frequencies too).",
    _FIX_SCALING,
    ko=(
        "결과가 factor {factor}**2 = {squared}인 {rope_type!r} 스케일링이다. factor를 두 번 적용했다(예: 위치도 나누고 주파수도 나눴다).",
        _FIX_SCALING_KO,
    ),
)
_SCALING_INVERTED = MISTAKES.declare(
    "scaling",
    "the result turns each pair by m * theta_i**2 / theta'_i: the {rope_type!r} scaling is "
    'inverted (for "linear": positions multiplied by the factor {factor} instead of divided '
    "by it).",
    _FIX_SCALING,
    ko=(
        '결과가 각 쌍을 m * theta_i**2 / theta\'_i만큼 돌린다. {rope_type!r} 스케일링이 뒤집혔다("linear"이면 위치를 factor {factor:로} 나누지 않고 곱했다).',
        _FIX_SCALING_KO,
    ),
)
_ATTENTION_FACTOR = MISTAKES.declare(
    "scaling",
    "the angles are right, but cos and sin are not multiplied by the attention factor "
    "{attention_factor} of the {rope_type!r} scaling.",
    "multiply cos and sin by the attention factor (YaRN's sqrt(1/t) = 0.1 ln(factor) + 1), "
    "the second value rope_frequencies returns.",
    ko=(
        "각도는 맞지만, cos와 sin에 {rope_type!r} 스케일링의 어텐션 인수 {attention_factor:를} 곱하지 않았다.",
        "cos와 sin에 어텐션 인수(YaRN의 sqrt(1/t) = 0.1 ln(factor) + 1), 즉 rope_frequencies가 반환하는 두 번째 값을 곱하라.",
    ),
)
_BASE = MISTAKES.declare(
    "base",
    "the result is RoPE with base {found}, not {base}: pair i turns by {found} ** (-2i / "
    "{head_dim}) per position.{hint}",
    "use theta_i = base ** (-2i / head_dim) with base={base} and i = 0 .. head_dim/2 - 1 the "
    "pair index: theta = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / "
    "head_dim).",
    ko=(
        "결과가 base {base:가} 아니라 base {found}인 RoPE이다. 쌍 i가 위치마다 {found} ** (-2i / {head_dim})만큼 돈다.{hint}",
        "쌍 번호 i = 0 .. head_dim/2 - 1에 대해 base={base:로} theta_i = base ** (-2i / head_dim)를 써라: theta = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim).",
    ),
)
_PRECISION = MISTAKES.declare(
    "precision",
    "the result is the rotation with angles formed in half precision (bfloat16 or float16): "
    "at position {position} it is off by up to {error} where float32 angles are off by at "
    "most {allowed}. bfloat16 keeps 8 significant bits: between 1024 and 2048 only multiples "
    "of 8 exist, so position 1001 becomes 1000.",
    "form positions, frequencies and angles in float32 (or float64), whatever x's dtype: "
    "angles = positions.float()[:, None] * theta.float()[None, :]; cast only cos and sin (or "
    "the result) to x's dtype. In a module, a frequency buffer is cast by module.to("
    "torch.bfloat16): compute the frequencies in forward, or keep them out of the buffers.",
    ko=(
        "결과가 각도를 반정밀도(bfloat16 또는 float16)로 만든 회전이다. 위치 {position}에서 최대 {error}만큼 어긋나는데, float32 각도는 많아야 {allowed}만큼 어긋난다. bfloat16은 유효 비트가 8개뿐이라 1024와 2048 사이에는 8의 배수만 있으므로, 위치 1001이 1000이 된다.",
        "x의 dtype과 상관없이 위치, 주파수, 각도를 float32(또는 float64)로 만들어라: angles = positions.float()[:, None] * theta.float()[None, :]. cos와 sin(또는 결과)만 x의 dtype으로 변환하라. 모듈에서는 주파수 버퍼가 module.to(torch.bfloat16)로 변환된다. 주파수를 forward에서 계산하거나 버퍼에 두지 마라.",
    ),
)
_COMPLEX_BUFFER = MISTAKES.declare(
    "complex_buffer",
    "module.to(torch.{dtype}) cast the complex {names} to real {dtype} tensors, which keeps "
    "the real parts (cos m theta_i) and drops the imaginary ones (sin m theta_i): the rotation "
    "became a multiplication by the cosines.",
    "keep complex frequencies out of the module's buffers (compute freqs_cis in forward, or "
    "store the float32 angles and build torch.polar(ones, angles) in forward), or cast only "
    "the floating weights to the low precision.",
    ko=(
        "module.to(torch.{dtype})가 복소수 {names:을} 실수 {dtype} 텐서로 변환해, 실수부(cos m theta_i)는 남고 허수부(sin m theta_i)는 버려졌다. 회전이 코사인을 곱하는 것으로 바뀌었다.",
        "복소수 주파수를 모듈의 버퍼에 두지 마라(freqs_cis를 forward에서 계산하거나, float32 각도를 저장하고 forward에서 torch.polar(ones, angles)를 만들어라). 아니면 부동소수점 가중치만 낮은 정밀도로 변환하라.",
    ),
)
_WRONG_VALUES = MISTAKES.declare(
    "wrong_values",
    "at position {position}, pair {pair} (channels {channels}), the result is off by {error} "
    "(allowed {allowed}): it turns that pair by {found} rad where {position} * theta_{pair} "
    "is {wanted} rad (mod 2*pi), and scales its length by {ratio} where {factor} is right.",
    _FIX_ROTATE,
    ko=(
        "위치 {position}, 쌍 {pair}(채널 {channels})에서 결과가 {error}만큼 어긋난다(허용 {allowed}): 그 쌍을 {found} rad만큼 돌리는데 {position} * theta_{pair:는} {wanted} rad(mod 2*pi)이고, 길이를 {ratio}배 하는데 맞는 값은 {factor}이다.",
        _FIX_ROTATE_KO,
    ),
)


@dataclass(frozen=True)
class Convention:
    """How the checker calls the student's code.

    Attributes:
        signature: the call as the messages show it.
        inputs: how many tensors of shape ``(batch, heads, seq_len, head_dim)`` it takes.
        call: ``call(rotate, inputs, offset, context)``, the outputs, one per input.
    """

    signature: str
    inputs: int
    call: Callable[[Callable[..., object], list[torch.Tensor], int, str], list[object]]


def _call_positions(
    rotate: Callable[..., object], xs: list[torch.Tensor], offset: int, context: str
) -> list[object]:
    positions = torch.arange(offset, offset + xs[0].shape[-2], device=xs[0].device)
    call = f"rotate(x, positions) {context}"
    return [call_student(_EXCEPTION, call, rotate, xs[0], positions)]


def _call_offset(
    rotate: Callable[..., object], xs: list[torch.Tensor], offset: int, context: str
) -> list[object]:
    call = f"rotate(x, {offset}) {context}"
    return [call_student(_EXCEPTION, call, rotate, xs[0], offset)]


def _call_qk(
    rotate: Callable[..., object], xs: list[torch.Tensor], offset: int, context: str
) -> list[object]:
    call = f"rotate(q, k, {offset}) {context}"
    out = call_student(_EXCEPTION, call, rotate, xs[0], xs[1], offset)
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        if isinstance(out, (tuple, list)):
            what = say(
                f"a {type(out).__name__} of length {len(out)}",
                f"길이 {len(out)}인 {type(out).__name__}",
            )
        else:
            what = say(f"a {type(out).__name__}", f"{type(out).__name__} 객체")
        what += say(
            " instead of the pair (q_rotated, k_rotated)", "(쌍 (q_rotated, k_rotated)가 아니라)"
        )
        raise _WRONG_TYPE.fail(call=call, what=what)
    return list(out)


#: The calling conventions ``check_rope`` knows, by name (its ``convention=`` argument).
CONVENTIONS: dict[str, Convention] = {
    "positions": Convention("rotate(x, positions)", 1, _call_positions),
    "offset": Convention("rotate(x, offset)", 1, _call_offset),
    "qk": Convention("rotate(q, k, offset)", 2, _call_qk),
}

#: ``(offset, seq_len)`` of each call: a prefill from 0, then decoding steps and chunks.
_PROBES = ((0, 8), (8, 1), (100, 4), (1000, 3), (10_000, 2))
_MIN_LEN = 9
_BATCH, _HEADS = 2, 2
_DTYPES = (torch.float64, torch.float32, torch.bfloat16)
#: Extra rounding steps in the angle when a scaling changes the frequencies (a division, a blend).
_SCALING_ULPS = 4.0
_FITTED_DIGITS = range(1, 7)


@MISTAKES.attach
def check_rope(
    rotate: Callable[..., object],
    *,
    head_dim: int = 16,
    base: float | None = None,
    layout: str = "interleaved",
    scaling: Mapping[str, Any] | None = None,
    convention: str = "positions",
    dtypes: Sequence[torch.dtype] = _DTYPES,
    max_len: int | None = None,
) -> None:
    r"""Check a RoPE rotation (a function or an ``nn.Module``) against RoFormer's eq. 34.

    The checker calls ``rotate`` on random queries and keys ``x`` of shape
    ``(2, 2, seq_len, head_dim)`` = ``(batch, heads, seq_len, head_dim)``, at the positions
    ``offset .. offset + seq_len - 1`` of a prefill (offset 0, seq_len 8) and of later decoding
    steps and chunks (offsets 8, 100, 1000 and 10000; with ``max_len``, those below it and a
    last chunk at ``max_len - 2, max_len - 1``, the boundary of a cache), in each of ``dtypes``. The result must
    be the rotation of pair ``i`` at position ``m`` by :math:`m\,\theta_i`,
    :math:`\theta_i = \mathrm{base}^{-2i/d}`, within the tolerance of the module docstring, with
    the shape and dtype of ``x``, and ``x`` left unchanged.

    ``convention`` says how ``rotate`` is called (the keys of ``pe_lib.checks.rope.CONVENTIONS``):

    * ``"positions"``: ``rotate(x, positions) -> y``, ``positions`` an int64 tensor of shape
      ``(seq_len,)`` holding ``offset .. offset + seq_len - 1``; ``y`` of the shape of ``x``;
    * ``"offset"``: ``rotate(x, offset) -> y``, ``offset`` an int: a module's
      ``forward(x, offset)`` for decoding with a key-value cache;
    * ``"qk"``: ``rotate(q, k, offset) -> (q_rotated, k_rotated)``, as
      :class:`pe_lib.rope.RotaryEmbedding` (``q`` and ``k`` of the same shape).

    An ``nn.Module`` is probed in eval mode under ``torch.no_grad()`` (its training flag is
    restored); for bfloat16 inputs a copy of it cast with ``.to(torch.bfloat16)`` is called, as
    a model run in bfloat16 would be. ``"dynamic"`` scaling uses the frequencies of the current
    length, ``offset + seq_len``, as :func:`pe_lib.rope.apply_rope` does.

    At the first wrong result ``.mistake`` (one of ``check_rope.mistakes``) is:

    * ``"exception"``: ``rotate`` raised (the error is chained);
    * ``"in_place"``: the input was modified;
    * ``"wrong_type"``, ``"shape"``, ``"dtype"``: not a tensor (or, for ``"qk"``, not a pair of
      tensors), or not the shape or dtype of the input;
    * ``"not_finite"``: NaN or infinite values;
    * ``"layout"``: the rotation in the other layout (``"half"`` for ``"interleaved"`` or back),
      or pairs of one layout with cos and sin laid out for the other;
    * ``"sign"``: rotation by :math:`-m\,\theta_i`;
    * ``"offset"``: positions off by the decoding offset (ignored or added twice) or by one;
    * ``"not_rotated"``: the input returned unchanged (where that is not an offset mistake);
    * ``"scaling"``: the scaling not applied, applied twice, inverted, or its attention factor
      missing;
    * ``"base"``: RoPE with another base (also what an exponent without its factor 2 gives:
      base ** 0.5);
    * ``"precision"``: within the error of angles formed in bfloat16 or float16, not of float32;
    * ``"complex_buffer"``: a module whose complex buffer (Meta's ``freqs_cis``) its cast to
      bfloat16 or float16 made real, so the sines are lost;
    * ``"wrong_values"``: anything else; the message names the first pair found wrong, the angle
      it turns by and the angle it should.

    Args:
        rotate: the student's function or module, called as ``convention`` says.
        head_dim: size of the vectors passed to it, even; for a module, the module's own.
        base: the frequency base, > 1; ``None``: ``scaling["rope_theta"]``, which an entry
            without ``base`` must hold; 10000 for plain RoPE.
        layout: ``"interleaved"`` (pairs ``(2i, 2i+1)``) or ``"half"`` (pairs ``(i, i + d/2)``).
        scaling: ``None`` (plain RoPE), a ``config.json`` ``rope_scaling`` mapping (any method
            of :data:`pe_lib.rope_scaling.ROPE_SCALINGS`), or a
            :class:`~pe_lib.rope_scaling.ScalingConfig` from
            :func:`~pe_lib.rope_scaling.resolve_scaling` (needed where the method takes an
            argument such as ``max_position_embeddings``). A ``partial_rotary_factor`` below 1
            is refused: every channel is checked as rotated.
        convention: ``"positions"``, ``"offset"`` or ``"qk"`` (see above).
        dtypes: the input dtypes to check, each float64, float32, bfloat16 or float16; default
            all but float16.
        max_len: ``None`` (positions up to 10001 are probed) or the number of positions the code
            supports, at least 9 (a cache of cos and sin for positions ``0 .. max_len - 1``).

    Returns:
        ``None`` when every result is right.

    Raises:
        TypeError: ``rotate`` is not callable, or an argument has the wrong type.
        ValueError: an argument is out of range (odd ``head_dim``, ``base <= 1``, an unknown
            layout, convention or ``scaling`` key, an empty ``dtypes``, ``max_len < 9``).
        CheckFailed: a result is wrong; ``.mistake`` says how (see above).
    """
    signature = CONVENTIONS.get(convention, CONVENTIONS["positions"]).signature
    check_callable("rotate", rotate, f"a function or nn.Module (called as {signature})")
    head_dim = check_head_dim("head_dim", head_dim)
    config = resolve_scaling(scaling, base)
    layout = check_layout("layout", layout)
    convention = check_choice("convention", convention, tuple(CONVENTIONS))
    checked_dtypes = _check_dtypes(dtypes)
    probes = _probes(max_len)
    frequencies_of(config, head_dim, seq_len=1)  # head_dim against the method
    if config.rotary_dim(head_dim) != head_dim:
        raise ValueError(
            f"check_rope checks rotations of all head_dim channels; scaling's "
            f"partial_rotary_factor {config.params['partial_rotary_factor']!r} rotates "
            f"{config.rotary_dim(head_dim)} of {head_dim}: check the rotated channels alone "
            f"with head_dim={config.rotary_dim(head_dim)} and no partial_rotary_factor"
        )

    spec = _Spec(head_dim, config.base, layout, config, config.rope_type)
    generator = torch.Generator().manual_seed(0)
    with _probing(rotate) as module_for:
        for dtype in checked_dtypes:
            student = module_for(dtype)
            for offset, seq_len in probes:
                shape = (_BATCH, _HEADS, seq_len, head_dim)
                xs = [
                    torch.randn(shape, generator=generator, dtype=torch.float64).to(dtype)
                    for _ in range(CONVENTIONS[convention].inputs)
                ]
                _check_call(student, CONVENTIONS[convention], spec, xs, offset)


def _probes(max_len: object) -> tuple[tuple[int, int], ...]:
    """``_PROBES`` below ``max_len``, then the last two positions; all of them for ``None``."""
    if max_len is None:
        return _PROBES
    max_len = check_positive_int("max_len", max_len)
    if max_len < _MIN_LEN:
        raise ValueError(
            f"max_len must be at least {_MIN_LEN} (a prefill of positions 0..7 and a decoding "
            f"step at 8 are probed), got {max_len}"
        )
    inside = tuple((o, n) for o, n in _PROBES if o + n <= max_len - 2)
    return (*inside, (max_len - 2, 2))


def _check_dtypes(dtypes: object) -> tuple[torch.dtype, ...]:
    allowed = (torch.float64, torch.float32, torch.bfloat16, torch.float16)
    if isinstance(dtypes, (torch.dtype, str, bytes)) or not isinstance(dtypes, Sequence):
        raise TypeError(
            f"dtypes must be a sequence of torch dtypes such as (torch.float32,), got "
            f"{dtypes!r} of type {type(dtypes).__name__}"
        )
    if not dtypes:
        raise ValueError("dtypes must name at least one dtype to check, got an empty sequence")
    checked = tuple(check_floating_dtype(f"dtypes[{i}]", d) for i, d in enumerate(dtypes))
    for i, dtype in enumerate(checked):
        if dtype not in allowed:
            raise ValueError(
                f"dtypes[{i}] must be one of float64, float32, bfloat16, float16, got {dtype}"
            )
    return checked


@dataclass(frozen=True)
class _Student:
    """What is called for one dtype: the student's code, its device, and a note for messages."""

    rotate: Callable[..., object]
    device: torch.device
    note: str = ""
    #: complex buffers or parameters the cast to ``dtype`` made real (their imaginary parts lost)
    lost_imaginary: tuple[str, ...] = ()


def _made_real(module: nn.Module, cast: nn.Module) -> tuple[str, ...]:
    """The names of ``module``'s complex tensors that are real in its ``cast`` copy."""
    before = {**dict(module.named_buffers()), **dict(module.named_parameters())}
    after = {**dict(cast.named_buffers()), **dict(cast.named_parameters())}
    return tuple(
        name
        for name, tensor in before.items()
        if tensor.is_complex() and name in after and not after[name].is_complex()
    )


def _device_of(module: nn.Module) -> torch.device:
    for tensor in [*module.parameters(), *module.buffers()]:
        return tensor.device
    return torch.device("cpu")


@contextmanager
def _probing(rotate: Callable[..., object]) -> Iterator[Callable[[torch.dtype], _Student]]:
    """No autograd; a module in eval mode (restored after), cast to bfloat16/float16 for those."""
    cpu = torch.device("cpu")
    if not isinstance(rotate, nn.Module):
        with torch.no_grad():
            yield lambda dtype: _Student(rotate, cpu)
        return
    module = rotate
    modes = {m: m.training for m in module.modules()}
    casts: dict[torch.dtype, _Student] = {}

    def module_for(dtype: torch.dtype) -> _Student:
        if dtype not in (torch.bfloat16, torch.float16):
            return _Student(module, _device_of(module))
        if dtype not in casts:
            try:
                with warnings.catch_warnings():  # torch warns of the imaginary parts it drops
                    warnings.simplefilter("ignore", UserWarning)
                    cast = copy.deepcopy(module).to(dtype)
                note = say(
                    f" (a copy of the module cast with .to(torch.{dtype_name(dtype)}))",
                    f" (.to(torch.{dtype_name(dtype)})로 변환한 모듈의 사본)",
                )
                casts[dtype] = _Student(cast, _device_of(cast), note, _made_real(module, cast))
            except Exception:  # a module that cannot be copied is probed as it is
                casts[dtype] = _Student(module, _device_of(module))
        return casts[dtype]

    module.eval()
    try:
        with torch.no_grad():
            yield module_for
    finally:
        for m, training in modes.items():
            m.train(training)


@dataclass(frozen=True)
class _Spec:
    """What the rotation must be."""

    head_dim: int
    base: float
    layout: str
    scaling: ScalingConfig
    rope_type: str

    def frequencies(self, seq_len: int) -> tuple[torch.Tensor, float]:
        return frequencies_of(self.scaling, self.head_dim, seq_len)

    @property
    def reference(self) -> str:
        """What the rotation was compared with, for messages."""
        if self.rope_type == "default":
            return say(
                f"plain RoPE, theta_i = {fmt_base(self.base)} ** (-2i / {self.head_dim})",
                f"기본 RoPE, theta_i = {fmt_base(self.base)} ** (-2i / {self.head_dim})",
            )
        return say(
            f"the {self.rope_type!r} frequencies of pe_lib.rope_scaling.rope_frequencies: "
            f"{self.scaling.entry.reference}",
            f"pe_lib.rope_scaling.rope_frequencies의 {self.rope_type!r} 주파수: "
            f"{self.scaling.entry.reference}",
        )

    def ulps(self, base: float | None = None) -> float:
        extra = 0.0 if self.rope_type == "default" else _SCALING_ULPS
        return angle_ulps(self.base if base is None else base) + extra


def _pairs(t: torch.Tensor, layout: str) -> tuple[torch.Tensor, torch.Tensor]:
    """``(x_a, x_b)``, each ``(..., head_dim / 2)``: the two coordinates of every pair."""
    if layout == "half":
        return t.chunk(2, dim=-1)[0], t.chunk(2, dim=-1)[1]
    return t[..., 0::2], t[..., 1::2]


def _unpairs(a: torch.Tensor, b: torch.Tensor, layout: str) -> torch.Tensor:
    """The inverse of :func:`_pairs`: ``(..., head_dim)``."""
    if layout == "half":
        return torch.cat((a, b), dim=-1)
    return torch.stack((a, b), dim=-1).flatten(-2)


def _rotation(x: torch.Tensor, angles: torch.Tensor, factor: float, layout: str) -> torch.Tensor:
    """float64 ``x`` ``(..., seq_len, d)`` rotated by ``angles`` ``(seq_len, d/2)`` in ``layout``."""
    a, b = _pairs(x, layout)
    cos, sin = factor * torch.cos(angles), factor * torch.sin(angles)
    return _unpairs(a * cos - b * sin, a * sin + b * cos, layout)


def _span(first: int, count: int) -> str:
    return str(first) if count == 1 else f"{first}..{first + count - 1}"


class _Result:
    """One output of the student, in float64 pair coordinates, and the tolerance it is held to."""

    def __init__(
        self, spec: _Spec, x: torch.Tensor, y: torch.Tensor, positions: torch.Tensor, seq_len: int
    ) -> None:
        self.spec, self.positions = spec, positions
        self.x64, self.y64 = x.double(), y.double()
        self.theta, self.factor = spec.frequencies(seq_len)
        self.angles = positions.double()[:, None] * self.theta[None, :]  # (seq_len, d/2)
        self.value_eps = max(float(torch.finfo(x.dtype).eps), EPS32)
        a, b = _pairs(self.x64, spec.layout)
        self.norm = torch.sqrt(a * a + b * b)  # (..., seq_len, d/2)

    def allowed(self, angles: torch.Tensor, factor: float, tolerance: Tolerance) -> torch.Tensor:
        """Per pair bound, ``(..., seq_len, d/2)``."""
        return self.norm * abs(factor) * tolerance(angles) + 1e-300

    def error(self, candidate: torch.Tensor) -> torch.Tensor:
        """Per pair, the larger error of its two coordinates, ``(..., seq_len, d/2)``."""
        ya, yb = _pairs(self.y64, self.spec.layout)
        ca, cb = _pairs(candidate, self.spec.layout)
        return torch.maximum((ya - ca).abs(), (yb - cb).abs())

    def tolerance(self, base: float | None = None) -> Tolerance:
        return Tolerance(self.value_eps, EPS32, self.spec.ulps(base))

    def within(
        self,
        candidate: torch.Tensor,
        layout: str,
        angles: torch.Tensor,
        factor: float,
        tolerance: Tolerance,
    ) -> bool:
        """Whether every pair of ``layout`` is within ``tolerance`` of ``candidate``'s.

        ``angles`` ``(seq_len, d/2)`` are the angles of those pairs, for the bound.
        """
        xa, xb = _pairs(self.x64, layout)
        ya, yb = _pairs(self.y64, layout)
        ca, cb = _pairs(candidate, layout)
        error = torch.maximum((ya - ca).abs(), (yb - cb).abs())
        bound = torch.sqrt(xa * xa + xb * xb) * abs(factor) * tolerance(angles) + 1e-300
        return bool((error <= bound).all())

    def matches(
        self,
        angles: torch.Tensor,
        factor: float,
        layout: str | None = None,
        tolerance: Tolerance | None = None,
    ) -> bool:
        """Whether the result is the rotation by ``angles`` (and ``factor``) in ``layout``."""
        layout = layout or self.spec.layout
        candidate = _rotation(self.x64, angles, factor, layout)
        return self.within(candidate, layout, angles, factor, tolerance or self.tolerance())

    def matches_mixed(self, angles: torch.Tensor, factor: float) -> bool:
        """Whether the result pairs channels in its layout with cos and sin of the other."""
        layout = self.spec.layout
        other = "half" if layout == "interleaved" else "interleaved"
        per_channel = _unpairs(angles, angles, other)  # (seq_len, d): each channel's angle
        a, b = _pairs(self.x64, layout)
        partner = _unpairs(-b, a, layout)  # rotate_half in this layout
        candidate = factor * (self.x64 * torch.cos(per_channel) + partner * torch.sin(per_channel))
        angle_a, angle_b = _pairs(per_channel, layout)
        pair_angles = torch.maximum(angle_a.abs(), angle_b.abs())
        return self.within(candidate, layout, pair_angles, factor, self.tolerance())

    def measured(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The angle each pair was turned by, in (-pi, pi], and its length ratio, (..., seq_len, d/2)."""
        xa, xb = _pairs(self.x64, self.spec.layout)
        ya, yb = _pairs(self.y64, self.spec.layout)
        turned = torch.atan2(xa * yb - xb * ya, xa * ya + xb * yb)
        ratio = torch.sqrt(ya * ya + yb * yb) / self.norm.clamp_min(1e-300)
        return turned, ratio


def _check_call(
    student: _Student,
    convention: Convention,
    spec: _Spec,
    xs: list[torch.Tensor],
    offset: int,
) -> None:
    seq_len = xs[0].shape[-2]
    dtype = dtype_name(xs[0].dtype)
    context = say(
        f"with x of shape {tuple(xs[0].shape)} {dtype} at positions {_span(offset, seq_len)}"
        f"{student.note}",
        f"(shape {tuple(xs[0].shape)}, {dtype}인 x, 위치 {_span(offset, seq_len)}{student.note})",
    )
    call = convention.signature.replace("offset", str(offset)) + " " + context
    given = [x.to(student.device, copy=True) for x in xs]
    outputs = convention.call(student.rotate, given, offset, context)
    for x, kept in zip(xs, given, strict=True):
        if not torch.equal(x, kept.cpu()):
            raise _IN_PLACE.fail(call=call)
    positions = torch.arange(offset, offset + seq_len)
    for x, out in zip(xs, outputs, strict=True):
        if not isinstance(out, torch.Tensor):
            raise _WRONG_TYPE.fail(
                call=call, what=say(f"a {type(out).__name__}", f"{type(out).__name__} 객체")
            )
        if out.shape != x.shape:
            raise _SHAPE.fail(call=call, shape=tuple(out.shape), x_shape=tuple(x.shape))
        if out.dtype != x.dtype:
            raise _DTYPE.fail(call=call, found=dtype_name(out.dtype), wanted=dtype)
        out = out.detach().cpu()
        if not bool(torch.isfinite(out).all()):
            bad = (~torch.isfinite(out)).nonzero()[0]
            raise _NOT_FINITE.fail(
                say(f"For {call}, ", f"{call}에서 "), position=offset + int(bad[-2])
            )
        result = _Result(spec, x, out, positions, offset + seq_len)
        if not result.matches(result.angles, result.factor):
            if student.lost_imaginary:
                buffer = say("buffer", "버퍼")
                names = ", ".join(f"{buffer} {name!r}" for name in student.lost_imaginary)
                raise _COMPLEX_BUFFER.fail(
                    say(f"For {call}, ", f"{call}에서 "), names=names, dtype=dtype
                )
            where = say(
                f"For {call}, against {spec.reference}, ",
                f"{particle(call, '을')} {particle(spec.reference, '과')} 비교하면 ",
            )
            raise _diagnose(result, where, offset)


def _diagnose(result: _Result, where: str, offset: int) -> CheckFailed:
    """The mistake that explains a result that is not the rotation."""
    spec, angles, factor = result.spec, result.angles, result.factor
    positions = result.positions
    first = int(positions[0])
    if spec.head_dim >= 4:
        other = "half" if spec.layout == "interleaved" else "interleaved"
        if result.matches(angles, factor, layout=other):
            wrong = _INTERLEAVED_AS_HALF if spec.layout == "interleaved" else _HALF_AS_INTERLEAVED
            return wrong.fail(where)
        if result.matches_mixed(angles, factor):
            laid_out = {
                "interleaved": "freqs.repeat_interleave(2, dim=-1)",
                "half": "torch.cat((freqs, freqs), dim=-1)",
            }[other]
            return _MIXED_LAYOUT.fail(where, layout=spec.layout, other=other, laid_out=laid_out)
    if result.matches(-angles, factor):
        return _SIGN.fail(where)
    theta = result.theta[None, :]

    def at(shift: int) -> torch.Tensor:
        return (positions + shift).double()[:, None] * theta

    seq_len, wanted = len(positions), _span(first, len(positions))
    shifts = [(_OFFSET_IGNORED, -offset), (_OFFSET_TWICE, offset)] if offset > 0 else []
    shifts += [(_OFFSET_BY_ONE, by) for by in (1, -1) if first + by >= 0]
    for mistake, shift in shifts:
        if result.matches(at(shift), factor):
            found = _span(first + shift, seq_len)
            return mistake.fail(where, found=found, wanted=wanted, by=f"{shift:+d}")
    if bool(positions[-1] > 0) and result.matches(torch.zeros_like(angles), 1.0):
        return _NOT_ROTATED.fail(where)
    scaling_mistake = _scaling_mistake(result, where)
    if scaling_mistake is not None:
        return scaling_mistake
    base_mistake = _base_mistake(result, where)
    if base_mistake is not None:
        return base_mistake
    half = Tolerance(max(result.value_eps, EPS_BF16), EPS_BF16, spec.ulps(), math.inf)
    if result.matches(angles, factor, tolerance=half):
        candidate = _rotation(result.x64, angles, factor, spec.layout)
        error = result.error(candidate)
        bound = result.allowed(angles, factor, result.tolerance())
        worst = int((error - bound).flatten().argmax())
        index = torch.unravel_index(torch.tensor(worst), error.shape)
        return _PRECISION.fail(
            where,
            position=int(positions[int(index[-2])]),
            error=f"{float(error.max()):.3g}",
            allowed=f"{float(bound.flatten()[worst]):.3g}",
        )
    return _wrong_values(result, where)


def _scaling_mistake(result: _Result, where: str) -> CheckFailed | None:
    spec = result.spec
    if spec.rope_type == "default":
        return None
    positions = result.positions.double()[:, None]
    plain, _ = rope_frequencies(spec.head_dim, base=spec.base)
    factor = spec.scaling.params.get("factor")
    fields = {"rope_type": spec.rope_type, "factor": factor}
    if result.matches(positions * plain, 1.0):
        return _SCALING_MISSING.fail(where, **fields)
    if isinstance(factor, (int, float)) and factor > 1:
        seq_len = int(result.positions[-1]) + 1
        squared = {**spec.scaling.params, "factor": factor**2}
        twice, twice_factor = frequencies_of(
            dataclasses.replace(spec.scaling, params=squared), spec.head_dim, seq_len
        )
        if result.matches(positions * twice, twice_factor):
            return _SCALING_TWICE.fail(where, squared=f"{factor**2:g}", **fields)
    inverted = plain * plain / result.theta
    if result.matches(positions * inverted, result.factor):
        return _SCALING_INVERTED.fail(where, **fields)
    if result.factor != 1.0 and result.matches(result.angles, 1.0):
        return _ATTENTION_FACTOR.fail(where, attention_factor=f"{result.factor:.6g}", **fields)
    return None


def _fitted_frequencies(result: _Result) -> torch.Tensor | None:
    """Each pair's turn per position, ``(head_dim / 2,)``, for a probe at positions 0, 1, 2, ...

    Read at position 1 (angles below pi, no wrapping), then refined position by position: the
    angle at ``m`` is unwrapped with the estimate so far, so the last position sets the precision.
    """
    positions = result.positions
    if len(positions) < 2 or int(positions[0]) != 0:
        return None
    turned, _ = result.measured()
    angle = turned.flatten(0, -3).median(dim=0).values  # (seq_len, d/2), median over batch, heads
    theta = angle[1]
    if not 0.0 < float(theta[0]) < math.pi:
        return None
    for m in range(2, len(positions)):
        turns = torch.round((m * theta - angle[m]) / (2 * math.pi))
        theta = (angle[m] + 2 * math.pi * turns) / m
    return theta


def _base_mistake(result: _Result, where: str) -> CheckFailed | None:
    """RoPE with another base: fitted from every pair's turn, then rounded and rebuilt."""
    spec = result.spec
    if spec.rope_type != "default" or spec.head_dim < 4:
        return None
    theta = _fitted_frequencies(result)
    if theta is None:
        return None
    # ln theta_i = -(2i / d) ln base: each pair i >= 1 with 0 < theta_i < 1 estimates ln base; an
    # angle measured with absolute error e gives ln base with error (d / 2i) e / theta_i, hence
    # the weights.
    index = torch.arange(1, len(theta), dtype=torch.float64)
    usable = (theta[1:] > 0.0) & (theta[1:] < 1.0)
    if not bool(usable.any()):
        return None
    index, slow = index[usable], theta[1:][usable]
    estimates = -spec.head_dim / (2 * index) * torch.log(slow)
    weights = (2 * index / spec.head_dim * slow) ** 2
    fitted = math.exp(float((weights * estimates).sum() / weights.sum()))
    positions = result.positions.double()[:, None]
    for digits in _FITTED_DIGITS:
        base = float(f"{fitted:.{digits}g}")
        if not math.isfinite(base) or base <= 1.0 or base == spec.base:
            continue
        frequencies, _ = rope_frequencies(spec.head_dim, base=base)
        if result.matches(positions * frequencies, 1.0, tolerance=result.tolerance(base)):
            return _BASE.fail(
                where,
                found=fmt_base(base),
                base=fmt_base(spec.base),
                head_dim=spec.head_dim,
                hint=_base_hint(base, spec.base, spec.head_dim),
            )
    return None


def _base_hint(found: float, base: float, head_dim: int) -> str:
    if math.isclose(found, math.sqrt(base), rel_tol=1e-3):
        return say(
            " That is sqrt(base): the exponent misses its factor 2 (base ** (-i / head_dim)), "
            "or divides by 2 * head_dim.",
            " 그것은 sqrt(base)이다. 지수에 인수 2가 빠졌거나(base ** (-i / head_dim)), "
            "2 * head_dim으로 나눴다.",
        )
    if math.isclose(found, base ** (head_dim / (head_dim - 2)), rel_tol=1e-3):
        return say(
            " That is base ** (head_dim / (head_dim - 2)): the exponent is divided by "
            "head_dim - 2 instead of head_dim (or an NTK base change was applied).",
            " 그것은 base ** (head_dim / (head_dim - 2))이다. 지수를 head_dim이 아니라 "
            "head_dim - 2로 나눴다(또는 NTK base 변경을 적용했다).",
        )
    if math.isclose(found, base * base, rel_tol=1e-3):
        return say(
            " That is base ** 2: the 2 of 2i was applied to the channel index 2i "
            "(base ** (-2j / head_dim) with j = 2i).",
            " 그것은 base ** 2이다. 2i의 2를 채널 번호 2i에 적용했다"
            "(j = 2i로 둔 base ** (-2j / head_dim)).",
        )
    return ""


def _wrong_values(result: _Result, where: str) -> CheckFailed:
    spec = result.spec
    candidate = _rotation(result.x64, result.angles, result.factor, spec.layout)
    error = result.error(candidate)
    bound = result.allowed(result.angles, result.factor, result.tolerance())
    excess = (error - bound).flatten()
    flat = int(excess.argmax())
    index = torch.unravel_index(torch.tensor(flat), error.shape)
    row, pair = int(index[-2]), int(index[-1])
    turned, ratio = result.measured()
    wanted = math.remainder(float(result.angles[row, pair]), 2 * math.pi)
    half = spec.head_dim // 2
    channels = (
        f"{2 * pair}, {2 * pair + 1}" if spec.layout == "interleaved" else f"{pair}, {pair + half}"
    )
    return _WRONG_VALUES.fail(
        where,
        position=int(result.positions[row]),
        pair=pair,
        channels=channels,
        error=f"{float(error.flatten()[flat]):.3g}",
        allowed=f"{float(bound.flatten()[flat]):.3g}",
        found=f"{float(turned[index]):.6f}",
        wanted=f"{wanted:.6f}",
        ratio=f"{float(ratio[index]):.6g}",
        factor=f"{result.factor:.6g}",
    )
