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
factor multiplying cos and sin are those of :func:`pe_lib.rope.rope_frequencies`, which
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
import random
import re
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
from ..rope.scaling import ScalingConfig, resolve_scaling, rope_frequencies
from ._core import (
    EPS32,
    EXCEPTION,
    IN_PLACE,
    WRONG_TYPE,
    Case,
    Catalogue,
    CheckFailed,
    Diagnosis,
    Tolerance,
    angle_ulps,
    call_student,
    check_seed,
    diagnose,
    draw_cases,
    dtype_name,
    fmt_base,
    kind_of,
    text,
)

__all__ = ["CONVENTIONS", "Convention", "check_rope"]

#: The mistakes :func:`check_rope` recognises, in the order it looks for them.
MISTAKES = Catalogue("check_rope")

_FIX_ROTATE = (
    "rotate channel pair i at position m by the angle m * theta_i, theta_i = base ** (-2i / "
    "head_dim), angles formed in float32 or float64: y_a = x_a cos - x_b sin, y_b = x_a sin + "
    "x_b cos."
)

MISTAKES.uses(EXCEPTION, IN_PLACE, WRONG_TYPE)
_CONTRACT = text(
    "The checker passes x of shape (batch, heads, seq_len, head_dim) in each dtype it checks "
    "(float64, float32 and bfloat16 unless told otherwise), at positions from 0 up to 10001 (up "
    "to max_len - 1 if you pass max_len=, the size of your cache), one decoding step at a time "
    "too (seq_len 1), and with the positions convention packed positions such as 0, 1, 2, 0, 1."
)
_IN_PLACE_EXAMPLE = "x[..., 0::2] = ..., x.mul_(cos)"
_IN_PLACE_INSTEAD = text("torch.cat or torch.stack of the rotated halves or pairs")
_TENSOR = text("a torch tensor")
_QK_PAIR = text("the pair (q_rotated, k_rotated)")
_LENGTH_OF = text("a {kind} of length {length}")
_FIX_TYPE = text(
    "return the rotated tensor (for rotate(q, k, offset): the pair (q_rotated, k_rotated))."
)
_SHAPE = MISTAKES.declare(
    "shape",
    "{call} returned shape {shape} for an input of shape {x_shape}.",
    "return a tensor of the shape of the input: the rotation acts on the last dimension "
    "(head_dim) and keeps every other.",
)
_DTYPE = MISTAKES.declare(
    "dtype",
    "{call} returned a {found} tensor for a {wanted} input.",
    "compute in float32 if you like, then cast the result back: return out.type_as(x) "
    "(or out.to(x.dtype)).",
)
_NOT_FINITE = MISTAKES.declare(
    "not_finite",
    "the result holds NaN or infinite values, the first at position {position}. A rotation "
    "keeps the length of every pair.",
    "look for an overflow (e.g. positions or base ** (2i / d) in float16, whose largest "
    "value is 65504) or a division by zero; form the angles in float32 or float64.",
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
)
_MIXED_LAYOUT = MISTAKES.declare(
    "layout",
    "the channels are paired in the {layout!r} layout, but cos and sin are laid out for the "
    "{other!r} one ({laid_out}), so the two channels of a pair turn by different angles.",
    "lay cos and sin out like the pairs: torch.cat((freqs, freqs), dim=-1) with rotate_half "
    "(pairs (i, i + head_dim/2)), freqs.repeat_interleave(2, dim=-1) with interleaved pairs "
    "(2i, 2i+1).",
)
_SIGN = MISTAKES.declare(
    "sign",
    "the result rotates every pair by -m * theta_i: the rotation goes the wrong way "
    "(sin has the wrong sign, or rotate_half returns (x1, -x2) instead of (-x2, x1)).",
    "y_a = x_a cos(m theta_i) - x_b sin(m theta_i), y_b = x_a sin(m theta_i) + x_b "
    "cos(m theta_i); in the half layout rotate_half(x) = torch.cat((-x2, x1), dim=-1).",
)
_FIX_OFFSET = (
    "position j of a call at offset p is p + j: positions = torch.arange(offset, offset + "
    "seq_len). When decoding with a key-value cache, offset is the number of tokens already "
    "cached, and the new token's query and key are rotated at that absolute position."
)
_OFFSET_IGNORED = MISTAKES.declare(
    "offset",
    "the result is the rotation at positions {found} instead of {wanted}: the decoding offset "
    "is ignored, so every step is rotated as if it were the start of the sequence.",
    _FIX_OFFSET,
)
_OFFSET_TWICE = MISTAKES.declare(
    "offset",
    "the result is the rotation at positions {found} instead of {wanted}: the offset is added "
    "twice.",
    _FIX_OFFSET,
)
_OFFSET_BY_ONE = MISTAKES.declare(
    "offset",
    "the result is the rotation at positions {found} instead of {wanted}: the positions are "
    "off by {by}.",
    _FIX_OFFSET + " The first token of a sequence is at position 0.",
)
_NOT_ROTATED = MISTAKES.declare(
    "not_rotated",
    "the result is the input unchanged: nothing is rotated (for rotate(q, k, offset): is one of "
    "the two returned before rotating it?).",
    _FIX_ROTATE,
)
_FIX_SCALING = (
    "take theta'_i and the attention factor from the scaling once, e.g. "
    "pe_lib.rope.rope_frequencies(head_dim, base=base, scaling=scaling), and rotate by "
    'm * theta\'_i; for "linear" (position interpolation) that is the angle of position '
    "m / factor."
)
_SCALING_MISSING = MISTAKES.declare(
    "scaling",
    "the result is plain RoPE: the {rope_type!r} scaling (factor {factor}) is not applied.",
    _FIX_SCALING,
)
_SCALING_TWICE = MISTAKES.declare(
    "scaling",
    "the result is the {rope_type!r} scaling with factor {factor}**2 = {squared}: the factor "
    "is applied twice (e.g. positions divided by it and the frequencies too).",
    _FIX_SCALING,
)
_SCALING_INVERTED = MISTAKES.declare(
    "scaling",
    "the result turns each pair by m * theta_i**2 / theta'_i: the {rope_type!r} scaling is "
    'inverted (for "linear": positions multiplied by the factor {factor} instead of divided '
    "by it).",
    _FIX_SCALING,
)
_ATTENTION_FACTOR = MISTAKES.declare(
    "scaling",
    "the angles are right, but cos and sin are not multiplied by the attention factor "
    "{attention_factor} of the {rope_type!r} scaling.",
    "multiply cos and sin by the attention factor (YaRN's sqrt(1/t) = 0.1 ln(factor) + 1), "
    "the second value rope_frequencies returns.",
)
_BASE = MISTAKES.declare(
    "base",
    "the result is RoPE with base {found}, not {base}: pair i turns by {found} ** (-2i / "
    "{head_dim}) per position.{hint}",
    "use theta_i = base ** (-2i / head_dim) with base={base} and i = 0 .. head_dim/2 - 1 the "
    "pair index: theta = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / "
    "head_dim).",
)
_PRECISION = MISTAKES.declare(
    "precision",
    "the result is the rotation computed with {recipe}: at position {position} it is off by "
    "{error} where float32 angles are off by at most {allowed}. {dtype} keeps {bits} "
    "significant bits: position {example} becomes {rounded} there.",
    "form positions, frequencies and angles in float32 (or float64), whatever x's dtype: "
    "angles = positions.float()[:, None] * theta.float()[None, :]; cast only cos and sin (or "
    "the result) to x's dtype. In a module, a frequency buffer is cast by module.to("
    "torch.bfloat16): compute the frequencies in forward, or keep them out of the buffers.",
)
_COMPLEX_BUFFER = MISTAKES.declare(
    "complex_buffer",
    "module.to(torch.{dtype}) cast the complex {names} to real {dtype} tensors, which keeps "
    "the real parts (cos m theta_i) and drops the imaginary ones (sin m theta_i): the rotation "
    "became a multiplication by the cosines.",
    "keep complex frequencies out of the module's buffers (compute freqs_cis in forward, or "
    "store the float32 angles and build torch.polar(ones, angles) in forward), or cast only "
    "the floating weights to the low precision.",
)
_WRONG_VALUES_WHAT = (
    "at position {position}, pair {pair} (channels {channels}), the result is off by {error} "
    "(allowed {allowed}): it turns that pair by {found} rad where {position} * theta_{pair} "
    "is {wanted} rad (mod 2*pi), and scales its length by {ratio} where {factor} is right."
)
_WRONG_VALUES = MISTAKES.declare("wrong_values", _WRONG_VALUES_WHAT, _FIX_ROTATE)
_WRONG_VALUES_SCALED = MISTAKES.declare(
    "wrong_values",
    _WRONG_VALUES_WHAT,
    "take theta'_i and the attention factor of the {rope_type!r} scaling once, from "
    "pe_lib.rope.rope_frequencies(head_dim, base=base, scaling=scaling), and rotate pair "
    "i at position m by m * theta'_i, cos and sin multiplied by the attention factor; compare "
    "your theta'_i with those, pair by pair.",
)
_POSITIONS = MISTAKES.declare(
    "positions",
    "the result is the rotation at positions {found}, not at the positions passed, {wanted}: "
    "only the first position is read, and the others are counted from it.",
    "rotate each token at its own position, positions[j]: angles = "
    "positions.to(torch.float64)[:, None] * theta[None, :]. Packed sequences restart their "
    "positions (0, 1, 2, 0, 1), and a batch padded on the left does not start at 0.",
)
_BASE_SCALED = MISTAKES.declare(
    "base",
    "the result is the {rope_type!r} scaling applied to base {found}, not to base {base}.",
    "apply the scaling to the model's own base (rope_theta): "
    "pe_lib.rope.rope_frequencies(head_dim, base={base}, scaling=scaling).",
)
_RECIPES = {
    "positions": text("the positions rounded to {dtype}"),
    "frequencies": text("the frequencies theta_i rounded to {dtype}"),
    "angles": text("the angles m * theta_i rounded to {dtype}"),
    "all": text("positions, frequencies and angles in {dtype}"),
    "inputs": text("positions and frequencies rounded to {dtype}, their product in float32"),
}
_WITH = text("with x of shape {shape} {dtype} at positions {span}{note}")
_FOR = text("For {call}, ")
_AGAINST = text("For {call}, against {reference}, ")
_BUFFER = text("buffer")
_CAST_COPY = text(" (a copy of the module cast with .to(torch.{dtype}))")
_PLAIN = text("plain RoPE, theta_i = {base} ** (-2i / {head_dim})")
_SCALED = text("the {rope_type!r} frequencies of pe_lib.rope.rope_frequencies: {reference}")
_HF = text("the numbers of transformers {version}'s {function} ({file})")
#: The references of :data:`pe_lib.rope.scaling.ROPE_SCALINGS` that are not transformers'.
_REFERENCES = {
    english: text(english)
    for english in (
        "RoFormer's theta_i = base ** (-2i / d)",
        "pe_lib's own static NTK base change, b * factor ** (d / (d - 2))",
    )
}
_SQRT_BASE = text(
    " That is sqrt(base): the exponent misses its factor 2 (base ** (-i / head_dim)), or "
    "divides by 2 * head_dim."
)
_NTK_BASE = text(
    " That is base ** (head_dim / (head_dim - 2)): the exponent is divided by head_dim - 2 "
    "instead of head_dim (or an NTK base change was applied)."
)
_SQUARED_BASE = text(
    " That is base ** 2: the 2 of 2i was applied to the channel index 2i (base ** (-2j / "
    "head_dim) with j = 2i)."
)


@dataclass(frozen=True)
class Convention:
    """How the checker calls the student's code.

    Attributes:
        signature: the call as the messages show it.
        inputs: how many tensors of shape ``(batch, heads, seq_len, head_dim)`` it takes.
        call: ``call(rotate, inputs, positions, context)``, the outputs, one per input;
            ``positions`` is the int64 tensor of the positions of the call (contiguous for the
            conventions that take an offset, which is its first entry).
    """

    signature: str
    inputs: int
    call: Callable[[Callable[..., object], list[torch.Tensor], torch.Tensor, str], list[object]]


def _call_positions(
    rotate: Callable[..., object], xs: list[torch.Tensor], positions: torch.Tensor, context: str
) -> list[object]:
    call = f"rotate(x, positions) {context}"
    given = positions.to(xs[0].device)
    return [call_student(EXCEPTION, call, rotate, xs[0], given, contract=_CONTRACT)]


def _call_offset(
    rotate: Callable[..., object], xs: list[torch.Tensor], positions: torch.Tensor, context: str
) -> list[object]:
    offset = int(positions[0])
    call = f"rotate(x, {offset}) {context}"
    return [call_student(EXCEPTION, call, rotate, xs[0], offset, contract=_CONTRACT)]


def _call_qk(
    rotate: Callable[..., object], xs: list[torch.Tensor], positions: torch.Tensor, context: str
) -> list[object]:
    offset = int(positions[0])
    call = f"rotate(q, k, {offset}) {context}"
    out = call_student(EXCEPTION, call, rotate, xs[0], xs[1], offset, contract=_CONTRACT)
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        if isinstance(out, (tuple, list)):
            found = _LENGTH_OF.render(kind=type(out).__name__, length=len(out))
        else:
            found = kind_of(out)
        raise WRONG_TYPE.fail(call=call, found=found, wanted=_QK_PAIR, how=_FIX_TYPE)
    return list(out)


#: The calling conventions ``check_rope`` knows, by name (its ``convention=`` argument).
CONVENTIONS: dict[str, Convention] = {
    "positions": Convention("rotate(x, positions)", 1, _call_positions),
    "offset": Convention("rotate(x, offset)", 1, _call_offset),
    "qk": Convention("rotate(q, k, offset)", 2, _call_qk),
}

#: ``(offset, seq_len)`` of each call: a prefill from 0, then decoding steps and chunks.
_PROBES = ((0, 8), (8, 1), (100, 4), (1000, 3), (10_000, 2))
#: With the positions convention: packed sequences (positions restart), then drawn ones.
_PACKED = (0, 1, 2, 0, 1, 2, 3, 0)
_DRAWN = 3
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
    seed: int = 0,
) -> None:
    r"""Check a RoPE rotation (a function or an ``nn.Module``) against RoFormer's eq. 34.

    The checker calls ``rotate`` on random queries and keys ``x`` of shape
    ``(2, 2, seq_len, head_dim)`` = ``(batch, heads, seq_len, head_dim)``, at the positions
    ``offset .. offset + seq_len - 1`` of a prefill (offset 0, seq_len 8) and of later decoding
    steps and chunks (offsets 8, 100, 1000 and 10000; with ``max_len``, those below it and a
    last chunk at ``max_len - 2, max_len - 1``, the boundary of a cache), in each of
    ``dtypes``; with the ``"positions"`` convention also at packed positions (0, 1, 2, 0, 1, 2,
    3, 0) and at 3 sets of positions drawn with ``seed`` (any order, repeats, gaps). The result must
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
    * ``"positions"``: only the first of the positions passed read, the others counted from it
      (wrong on packed sequences);
    * ``"not_rotated"``: the input returned unchanged (where that is not an offset mistake);
    * ``"scaling"``: the scaling not applied, applied twice, inverted, or its attention factor
      missing;
    * ``"base"``: RoPE with another base (also what an exponent without its factor 2 gives:
      base ** 0.5);
    * ``"precision"``: the rotation a computation in bfloat16 or float16 gives (positions,
      frequencies or angles rounded to it, rebuilt and compared), not within float32's error;
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
            of :data:`pe_lib.rope.scaling.ROPE_SCALINGS`), or a
            :class:`~pe_lib.rope.scaling.ScalingConfig` from
            :func:`~pe_lib.rope.scaling.resolve_scaling` (needed where the method takes an
            argument such as ``max_position_embeddings``). A ``partial_rotary_factor`` below 1
            is refused: every channel is checked as rotated.
        convention: ``"positions"``, ``"offset"`` or ``"qk"`` (see above).
        dtypes: the input dtypes to check, each float64, float32, bfloat16 or float16; default
            all but float16.
        max_len: ``None`` (positions up to 10001 are probed) or the number of positions the code
            supports, at least 9 (a cache of cos and sin for positions ``0 .. max_len - 1``).
        seed: the seed of the drawn positions, an int >= 0.

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
    seed = check_seed(seed)
    config.frequencies(head_dim, 1)  # head_dim against the method
    if config.rotary_dim(head_dim) != head_dim:
        raise ValueError(
            f"check_rope checks rotations of all head_dim channels; scaling's "
            f"partial_rotary_factor {config.params['partial_rotary_factor']!r} rotates "
            f"{config.rotary_dim(head_dim)} of {head_dim}: check the rotated channels alone "
            f"with head_dim={config.rotary_dim(head_dim)} and no partial_rotary_factor"
        )

    spec = _Spec(head_dim, config.base, layout, config, config.rope_type)
    cases = [Case(torch.arange(offset, offset + seq_len)) for offset, seq_len in probes]
    if convention == "positions" and not config.entry.needs_seq_len:
        limit = _PROBES[-1][0] + _PROBES[-1][1] if max_len is None else int(max_len)
        packed = torch.tensor(_PACKED)
        cases += [
            Case(packed),
            *draw_cases((), lambda rng: _draw_positions(rng, limit), _DRAWN, seed),
        ]
    generator = torch.Generator().manual_seed(seed)
    with _probing(rotate) as module_for:
        for dtype in checked_dtypes:
            student = module_for(dtype)
            for case in cases:
                shape = (_BATCH, _HEADS, len(case.value), head_dim)
                xs = [
                    torch.randn(shape, generator=generator, dtype=torch.float64).to(dtype)
                    for _ in range(CONVENTIONS[convention].inputs)
                ]
                _check_call(student, CONVENTIONS[convention], spec, xs, case)


def _draw_positions(rng: random.Random, limit: int) -> torch.Tensor:
    """Positions as a batch of packed or padded sequences gives them: a few runs, each from
    its own start, below ``limit``."""
    positions: list[int] = []
    for _ in range(rng.randint(2, 4)):
        length = rng.randint(1, 5)
        start = rng.choice((0, rng.randint(0, max(0, limit - length))))
        positions += range(start, start + length)
    return torch.tensor(positions)


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
                note = _CAST_COPY.render(dtype=dtype_name(dtype))
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
        return self.scaling.frequencies(self.head_dim, seq_len)

    @property
    def reference(self) -> str:
        """What the rotation was compared with, for messages."""
        if self.rope_type == "default":
            return _PLAIN.render(base=fmt_base(self.base), head_dim=self.head_dim)
        return _SCALED.render(
            rope_type=self.rope_type, reference=reference_text(self.scaling.entry.reference)
        )

    def ulps(self, base: float | None = None) -> float:
        extra = 0.0 if self.rope_type == "default" else _SCALING_ULPS
        return angle_ulps(self.base if base is None else base) + extra


def reference_text(english: str) -> str:
    """A scaling's reference (:attr:`pe_lib.rope.scaling.RopeScaling.reference`) in the current
    language."""
    found = re.fullmatch(r"the numbers of transformers (\S+)'s (\w+) \((\S+)\)", english)
    if found:
        version, function, file = found.groups()
        return _HF.render(version=version, function=function, file=file)
    known = _REFERENCES.get(english)
    return english if known is None else str(known)


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


def _show(positions: torch.Tensor) -> str:
    """``0..7`` for contiguous positions, ``0, 1, 2, 0, 1`` otherwise."""
    first, count = int(positions[0]), len(positions)
    if torch.equal(positions, torch.arange(first, first + count)):
        return str(first) if count == 1 else f"{first}..{first + count - 1}"
    return ", ".join(str(int(p)) for p in positions)


def _contiguous(positions: torch.Tensor) -> bool:
    first = int(positions[0])
    return torch.equal(positions, torch.arange(first, first + len(positions)))


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
    case: Case[torch.Tensor],
) -> None:
    positions = case.value
    dtype = dtype_name(xs[0].dtype)
    context = _WITH.render(
        shape=tuple(xs[0].shape), dtype=dtype, span=_show(positions), note=student.note
    )
    call = convention.signature.replace("offset", str(int(positions[0]))) + " " + context
    call += case.label
    given = [x.to(student.device, copy=True) for x in xs]
    outputs = convention.call(student.rotate, given, positions, context + case.label)
    for x, kept in zip(xs, given, strict=True):
        if not torch.equal(x, kept.cpu()):
            raise IN_PLACE.fail(
                call=call, name="x", example=_IN_PLACE_EXAMPLE, instead=_IN_PLACE_INSTEAD
            )
    for x, out in zip(xs, outputs, strict=True):
        if not isinstance(out, torch.Tensor):
            raise WRONG_TYPE.fail(call=call, found=kind_of(out), wanted=_TENSOR, how=_FIX_TYPE)
        if out.shape != x.shape:
            raise _SHAPE.fail(call=call, shape=tuple(out.shape), x_shape=tuple(x.shape))
        if out.dtype != x.dtype:
            raise _DTYPE.fail(call=call, found=dtype_name(out.dtype), wanted=dtype)
        out = out.detach().cpu()
        if not bool(torch.isfinite(out).all()):
            bad = (~torch.isfinite(out)).nonzero()[0]
            raise _NOT_FINITE.fail(_FOR.render(call=call), position=int(positions[int(bad[-2])]))
        result = _Result(spec, x, out, positions, int(positions.max()) + 1)
        if not result.matches(result.angles, result.factor):
            if student.lost_imaginary:
                names = ", ".join(f"{_BUFFER} {name!r}" for name in student.lost_imaginary)
                raise _COMPLEX_BUFFER.fail(_FOR.render(call=call), names=names, dtype=dtype)
            where = _AGAINST.render(call=call, reference=spec.reference)
            raise diagnose(_DIAGNOSES, result, where) or _wrong_values(result, where)


def _when(condition: bool, fields: dict[str, object] | None = None) -> dict[str, object] | None:
    return (fields or {}) if condition else None


def _other(layout: str) -> str:
    return "half" if layout == "interleaved" else "interleaved"


def _other_layout(wanted: str) -> Callable[[_Result], dict[str, object] | None]:
    """The rotation in the other layout, when ``wanted`` is the layout asked for."""

    def explains(r: _Result) -> dict[str, object] | None:
        layout = r.spec.layout
        if layout != wanted or r.spec.head_dim < 4:
            return None
        return _when(r.matches(r.angles, r.factor, layout=_other(layout)))

    return explains


def _mixed_layout(r: _Result) -> dict[str, object] | None:
    if r.spec.head_dim < 4 or not r.matches_mixed(r.angles, r.factor):
        return None
    other = _other(r.spec.layout)
    laid_out = {
        "interleaved": "freqs.repeat_interleave(2, dim=-1)",
        "half": "torch.cat((freqs, freqs), dim=-1)",
    }[other]
    return {"layout": r.spec.layout, "other": other, "laid_out": laid_out}


def _counted_from_first(r: _Result) -> dict[str, object] | None:
    """Only the first position read: ``positions[0] + arange(n)``."""
    if _contiguous(r.positions):
        return None
    counted = int(r.positions[0]) + torch.arange(len(r.positions))
    if not r.matches(counted.double()[:, None] * r.theta[None, :], r.factor):
        return None
    return {"found": _show(counted), "wanted": _show(r.positions)}


def _shifted(mistake: str, by: int | None) -> Callable[[_Result], dict[str, object] | None]:
    """Contiguous positions off by ``by`` (``None``: by minus the offset, ``0``: by the offset)."""

    def explains(r: _Result) -> dict[str, object] | None:
        if not _contiguous(r.positions):
            return None
        first = int(r.positions[0])
        shift = {"ignored": -first, "twice": first}.get(mistake, by or 0)
        if shift == 0 or first + shift < 0:
            return None
        angles = (r.positions + shift).double()[:, None] * r.theta[None, :]
        if not r.matches(angles, r.factor):
            return None
        return {
            "found": _show(r.positions + shift),
            "wanted": _show(r.positions),
            "by": f"{shift:+d}",
        }

    return explains


def _not_rotated(r: _Result) -> dict[str, object] | None:
    return _when(bool(r.positions.max() > 0) and r.matches(torch.zeros_like(r.angles), 1.0))


def _scaling_fields(r: _Result) -> dict[str, object]:
    return {"rope_type": r.spec.rope_type, "factor": r.spec.scaling.params.get("factor")}


def _scaling_missing(r: _Result) -> dict[str, object] | None:
    if r.spec.rope_type == "default":
        return None
    plain, _ = rope_frequencies(r.spec.head_dim, base=r.spec.base)
    return _when(r.matches(r.positions.double()[:, None] * plain, 1.0), _scaling_fields(r))


def _scaling_twice(r: _Result) -> dict[str, object] | None:
    spec = r.spec
    factor = spec.scaling.params.get("factor")
    if spec.rope_type == "default" or not isinstance(factor, (int, float)) or factor <= 1:
        return None
    squared = {**spec.scaling.params, "factor": factor**2}
    twice, twice_factor = dataclasses.replace(spec.scaling, params=squared).frequencies(
        spec.head_dim, int(r.positions.max()) + 1
    )
    if not r.matches(r.positions.double()[:, None] * twice, twice_factor):
        return None
    return {**_scaling_fields(r), "squared": f"{factor**2:g}"}


def _scaling_inverted(r: _Result) -> dict[str, object] | None:
    if r.spec.rope_type == "default":
        return None
    plain, _ = rope_frequencies(r.spec.head_dim, base=r.spec.base)
    inverted = plain * plain / r.theta
    return _when(r.matches(r.positions.double()[:, None] * inverted, r.factor), _scaling_fields(r))


def _attention_factor(r: _Result) -> dict[str, object] | None:
    if r.spec.rope_type == "default" or r.factor == 1.0 or not r.matches(r.angles, 1.0):
        return None
    return {**_scaling_fields(r), "attention_factor": f"{r.factor:.6g}"}


#: Bases a scaled rotation may have been given instead of the model's: the paper's and common
#: models' ``rope_theta``.
_COMMON_BASES = (10_000.0, 500_000.0, 1_000_000.0, 100_000.0, 50_000.0, 5_000_000.0)


def _scaled_base(r: _Result) -> dict[str, object] | None:
    """The scaling applied to another base."""
    spec = r.spec
    if spec.rope_type == "default":
        return None
    for used in _COMMON_BASES:
        if used == spec.base:
            continue
        theta, factor = dataclasses.replace(spec.scaling, base=used).frequencies(
            spec.head_dim, int(r.positions.max()) + 1
        )
        angles = r.positions.double()[:, None] * theta[None, :]
        if r.matches(angles, factor, tolerance=r.tolerance(used)):
            return {
                "rope_type": spec.rope_type,
                "found": fmt_base(used),
                "base": fmt_base(spec.base),
            }
    return None


#: How a half-precision computation forms its angles: (name, angles of positions and theta).
_HALF_RECIPES: tuple[
    tuple[str, Callable[[torch.Tensor, torch.Tensor, torch.dtype], torch.Tensor]], ...
] = (
    ("all", lambda p, t, d: (p.to(d)[:, None] * t.to(d)[None, :]).double()),
    ("inputs", lambda p, t, d: (p.to(d).float()[:, None] * t.to(d).float()[None, :]).double()),
    ("angles", lambda p, t, d: (p.double()[:, None] * t[None, :]).to(d).double()),
    ("positions", lambda p, t, d: p.to(d).double()[:, None] * t[None, :]),
    ("frequencies", lambda p, t, d: p.double()[:, None] * t.to(d).double()[None, :]),
)
#: A position each half precision rounds, to show it (bfloat16 rounds 1001 to 1000).
_EXAMPLE_POSITION = {torch.bfloat16: 1001, torch.float16: 10_001}


def _precision(r: _Result) -> dict[str, object] | None:
    """The rotation a real half-precision computation gives: rebuilt, recipe by recipe."""
    for dtype in (torch.bfloat16, torch.float16):
        for name, angles_of in _HALF_RECIPES:
            angles = angles_of(r.positions, r.theta, dtype)
            if not torch.isfinite(angles).all() or not r.matches(angles, r.factor):
                continue
            candidate = _rotation(r.x64, r.angles, r.factor, r.spec.layout)
            error = r.error(candidate)
            bound = r.allowed(r.angles, r.factor, r.tolerance())
            worst = int((error - bound).flatten().argmax())
            index = torch.unravel_index(torch.tensor(worst), error.shape)
            example = _EXAMPLE_POSITION[dtype]
            shown = dtype_name(dtype)
            return {
                "recipe": _RECIPES[name].render(dtype=shown),
                "position": int(r.positions[int(index[-2])]),
                "error": f"{float(error.flatten()[worst]):.3g}",
                "allowed": f"{float(bound.flatten()[worst]):.3g}",
                "dtype": shown,
                "bits": round(-math.log2(float(torch.finfo(dtype).eps))) + 1,
                "example": example,
                "rounded": int(torch.tensor(float(example)).to(dtype).item()),
            }
    return None


#: The mistakes a wrong rotation is compared with, in order; ``"wrong_values"`` if none.
_DIAGNOSES: tuple[Diagnosis[_Result], ...] = (
    Diagnosis(_INTERLEAVED_AS_HALF, _other_layout("interleaved")),
    Diagnosis(_HALF_AS_INTERLEAVED, _other_layout("half")),
    Diagnosis(_MIXED_LAYOUT, _mixed_layout),
    Diagnosis(_SIGN, lambda r: _when(r.matches(-r.angles, r.factor))),
    Diagnosis(_POSITIONS, _counted_from_first),
    Diagnosis(_OFFSET_IGNORED, _shifted("ignored", None)),
    Diagnosis(_OFFSET_TWICE, _shifted("twice", None)),
    Diagnosis(_OFFSET_BY_ONE, _shifted("by", 1)),
    Diagnosis(_OFFSET_BY_ONE, _shifted("by", -1)),
    Diagnosis(_NOT_ROTATED, _not_rotated),
    Diagnosis(_SCALING_MISSING, _scaling_missing),
    Diagnosis(_SCALING_TWICE, _scaling_twice),
    Diagnosis(_SCALING_INVERTED, _scaling_inverted),
    Diagnosis(_ATTENTION_FACTOR, _attention_factor),
    Diagnosis(_BASE, lambda r: _base_fields(r)),
    Diagnosis(_BASE_SCALED, _scaled_base),
    Diagnosis(_PRECISION, _precision),
)


def _fitted_frequencies(result: _Result) -> torch.Tensor | None:
    """Each pair's turn per position, ``(head_dim / 2,)``, for a probe at positions 0, 1, 2, ...

    Read at position 1 (angles below pi, no wrapping), then refined position by position: the
    angle at ``m`` is unwrapped with the estimate so far, so the last position sets the precision.
    """
    positions = result.positions
    if len(positions) < 2 or not torch.equal(positions, torch.arange(len(positions))):
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


def _base_fields(result: _Result) -> dict[str, object] | None:
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
            return {
                "found": fmt_base(base),
                "base": fmt_base(spec.base),
                "head_dim": spec.head_dim,
                "hint": _base_hint(base, spec.base, spec.head_dim),
            }
    return None


def _base_hint(found: float, base: float, head_dim: int) -> str:
    if math.isclose(found, math.sqrt(base), rel_tol=1e-3):
        return str(_SQRT_BASE)
    if math.isclose(found, base ** (head_dim / (head_dim - 2)), rel_tol=1e-3):
        return str(_NTK_BASE)
    if math.isclose(found, base * base, rel_tol=1e-3):
        return str(_SQUARED_BASE)
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
    scaled = spec.rope_type != "default"
    return (_WRONG_VALUES_SCALED if scaled else _WRONG_VALUES).fail(
        where,
        rope_type=spec.rope_type,
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
