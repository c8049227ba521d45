r"""``check_alibi_slopes`` and ``check_alibi_bias``: ALiBi's slopes and bias, checked.

ALiBi (Press et al., 2022, section 3) adds :math:`-s_h\,(i - j)` to the attention score of query
position ``i`` and key position ``j <= i`` in head ``h``, and masks future keys. The slopes, for
``n`` heads, ``n`` a power of two, are :math:`s_h = 2^{-8h/n}`, :math:`h = 1, \dots, n`; for
other ``n``, the authors' code (``get_slopes`` in ``fairseq/models/transformer.py`` of
github.com/ofirpress/attention_with_linear_biases) takes the slopes of the closest power of two
below, :math:`n_0`, followed by every other slope of :math:`2 n_0` heads (``[0::2]``), as many as
needed. The references are :func:`pe_lib.encodings.alibi.alibi_slopes` and :func:`pe_lib.encodings.alibi.alibi_bias`,
computed in float64.

**Tolerance.** A slope may differ from the reference by :math:`8\,\varepsilon\,s_h`, a bias entry
by :math:`8\,\varepsilon\,(1 + \max |\mathrm{bias}|)` of its row, :math:`\varepsilon` the machine
epsilon of what the student returned (float64's for Python floats).

**Bias up to a constant per row.** A softmax does not change when a row of scores is shifted by a
constant, and the authors' code adds :math:`s_h\,j`, which differs from :math:`-s_h\,(i - j)` by
:math:`s_h\,i`. So a bias is accepted when each row differs from the reference by a constant on
its visible keys. A masked entry is ``-inf`` or at least 5000 below the row's largest entry
(``-1e4`` as in Hugging Face's older masks, ``-1e9``, ``torch.finfo(dtype).min``): its softmax
weight is 0 either way.
"""

from __future__ import annotations

import numbers
import random
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from .._validation import check_bool, check_callable
from ..encodings.alibi import alibi_bias, alibi_slopes
from ._core import (
    EPS64,
    EXCEPTION,
    Catalogue,
    CheckFailed,
    Diagnosis,
    NotAnArray,
    as_float64,
    call_student,
    check_seed,
    diagnose,
    draw_cases,
    text,
)

__all__ = ["check_alibi_bias", "check_alibi_slopes"]

#: The mistakes :func:`check_alibi_slopes` recognises, in the order it looks for them.
SLOPES_MISTAKES = Catalogue("check_alibi_slopes")
#: The mistakes :func:`check_alibi_bias` recognises, in the order it looks for them.
BIAS_MISTAKES = Catalogue("check_alibi_bias")

_SLOPES_RULE = (
    "for n heads, n a power of two: s_h = 2 ** (-8h / n), h = 1 .. n (start = ratio = "
    "2 ** (-8 / n)); otherwise, with n0 the largest power of two below n: the n0 slopes of n0 "
    "heads, then slopes(2 * n0)[0::2][: n - n0]."
)

SLOPES_MISTAKES.uses(EXCEPTION)
_SLOPES_CONTRACT = text("slopes must accept every head count n >= 1, powers of two or not.")
_SLOPES_TYPE = SLOPES_MISTAKES.declare(
    "wrong_type",
    "{call} returned {what}.",
    "return the n slopes as a list of floats, a numpy array or a torch tensor.",
)
_SLOPES_SHAPE = SLOPES_MISTAKES.declare(
    "shape",
    "{call} returned {count} values (shape {shape}): one slope per head is {n}.",
    "return exactly n slopes, head 1 first.",
)
_SLOPES_NOT_FINITE = SLOPES_MISTAKES.declare(
    "not_finite",
    "{call} holds NaN or infinite values: {values}.",
    "look for a log2 of 0 or a division by zero; " + _SLOPES_RULE,
)
_SLOPES_SIGN = SLOPES_MISTAKES.declare(
    "sign",
    "{call} are the right values with a minus sign: {values}. The slopes are positive; "
    "the bias subtracts them: -s_h * (i - j).",
    "return the positive 2 ** (-8h / n) and put the minus sign in the bias.",
)
_SLOPES_ORDER = SLOPES_MISTAKES.declare(
    "order",
    "{call} holds the right values in another order: {values} where head 1 .. {n} have {wanted}.",
    "keep the authors' order (head h gets slope h of the sequence; for a non-power of two the "
    "extra slopes come after the first n0 and interleave with them, they are not sorted); "
    "a pretrained model's heads expect exactly that order. " + _SLOPES_RULE,
)
_FROM_ONE = SLOPES_MISTAKES.declare(
    "geometric",
    "{call} starts at 1: it is 2 ** (-8(h - 1) / n), the index h starting at 0.",
    "h runs from 1 to n: the first slope is 2 ** (-8 / n), the last 2 ** (-8) = 1/256.",
)
_EIGHT_HEADS = SLOPES_MISTAKES.declare(
    "geometric",
    "{call} is 1/2, 1/4, 1/8, ...: the sequence of 8 heads, 2 ** (-h), whatever n is. For "
    "{n} heads the ratio is 2 ** (-8 / {n}).",
    _SLOPES_RULE,
)
_GEOMETRIC = SLOPES_MISTAKES.declare(
    "geometric",
    "for {n} heads, a power of two, slope {head} is {found} where 2 ** (-8 * {head} / {n}) = "
    "{wanted}.",
    _SLOPES_RULE,
)
_EXTENDED = SLOPES_MISTAKES.declare(
    "non_power_of_two",
    "{call} is the geometric sequence 2 ** (-8h / {n}), but {n} is not a power of two: "
    "the paper's sequence holds for powers of two only.",
    _SLOPES_RULE,
)
_NEXT_POWER = SLOPES_MISTAKES.declare(
    "non_power_of_two",
    "{call} is the first {n} slopes of {upper} heads (the next power of two).",
    _SLOPES_RULE,
)
_ODD_SLOPES = SLOPES_MISTAKES.declare(
    "non_power_of_two",
    "{call} takes slopes({upper})[1::2] for the extra heads: every other slope starting "
    "with the second, which repeats the slopes of {heads}.",
    "take slopes(2 * n0)[0::2], the ones in between: " + _SLOPES_RULE,
)
_NON_POWER = SLOPES_MISTAKES.declare(
    "non_power_of_two",
    "the slopes are right for powers of two but not for {n} heads: {found} where the authors' "
    "rule gives {wanted}.",
    _SLOPES_RULE,
)

#: Cases drawn after the fixed ones (head counts up to 96; biases up to 16 heads, 24 keys).
_DRAWN = 4
#: Head counts probed: powers of two first (8, the paper's example, leading), then others.
_POWERS = (8, 4, 16, 2, 1, 32)
_OTHERS = (3, 5, 6, 7, 12, 20, 24, 40)


@SLOPES_MISTAKES.attach
def check_alibi_slopes(slopes: Callable[[int], object], *, seed: int = 0) -> None:
    r"""Check a function of the ALiBi slopes against the paper and the authors' code.

    ``slopes(n)`` is called for ``n`` = 8, 4, 16, 2, 1, 32 and then 3, 5, 6, 7, 12, 20, 24, 40
    heads. It must return the ``n`` slopes :math:`s_1, \dots, s_n` (a list of floats, a numpy
    array or a torch tensor; shape ``(n,)``, or any shape with ``n`` entries such as
    ``(n, 1, 1)``), equal to :func:`pe_lib.encodings.alibi.alibi_slopes` within the tolerance of the module
    docstring: :math:`2^{-8h/n}` for powers of two, the authors' interleaving rule otherwise.

    At the first wrong ``n`` ``.mistake`` (one of ``check_alibi_slopes.mistakes``) is:

    * ``"exception"``, ``"wrong_type"``, ``"shape"``, ``"not_finite"``: it raised, did not
      return numbers, returned another count, or NaN/inf;
    * ``"sign"``: negative slopes;
    * ``"order"``: the right values in another order;
    * ``"geometric"``: wrong slopes for a power of two (the index starting at 0, the 8-head
      sequence 1/2, 1/4, ... for every ``n``, or other values);
    * ``"non_power_of_two"``: right for powers of two, wrong otherwise (the geometric sequence
      extended to ``n``, the first ``n`` slopes of the next power of two, ``[1::2]`` for
      ``[0::2]``, or other values).

    Args:
        slopes: ``slopes(num_heads) -> (num_heads,)``.

    Returns:
        ``None`` when every ``n`` is right.

    Raises:
        TypeError: ``slopes`` is not callable.
        CheckFailed: some slopes are wrong; ``.mistake`` says how (see above).
    """
    check_callable("slopes", slopes, "a function slopes(num_heads) -> (num_heads,) slopes")
    seed = check_seed(seed)
    for case in draw_cases((*_POWERS, *_OTHERS), lambda rng: rng.randint(1, 96), _DRAWN, seed):
        n = case.value
        result = call_student(
            EXCEPTION, f"slopes({n}){case.label}", slopes, n, contract=_SLOPES_CONTRACT
        )
        values, eps = _vector(result, n)
        _check_slopes(values, eps, n, f"slopes({n}){case.label}")


def _vector(result: object, n: int) -> tuple[torch.Tensor, float]:
    """The student's slopes as a float64 ``(n,)`` tensor and their epsilon."""
    if isinstance(result, (list, tuple)):
        if not all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in result):
            kinds = sorted({type(v).__name__ for v in result})
            what = _SEQUENCE_OF.render(kind=type(result).__name__, items=", ".join(kinds))
            raise _SLOPES_TYPE.fail(call=f"slopes({n})", n=n, what=what)
        result = np.array([float(v) for v in result], dtype=np.float64)
    try:
        values, _, eps = as_float64(result)
    except NotAnArray as error:
        raise _SLOPES_TYPE.fail(call=f"slopes({n})", n=n, what=str(error)) from None
    if values.numel() != n or sum(size != 1 for size in values.shape) > 1:
        raise _SLOPES_SHAPE.fail(
            call=f"slopes({n})", n=n, count=values.numel(), shape=tuple(values.shape)
        )
    return values.reshape(n), eps


def _geometric(n: int, first: int = 1) -> torch.Tensor:
    """``2 ** (-8h / n)`` for ``h = first .. first + n - 1``, float64."""
    return torch.exp2(torch.arange(first, first + n, dtype=torch.float64) * (-8.0 / n))


@dataclass(frozen=True)
class _Slopes:
    """A student's finite slopes for ``n`` heads that are not the right ones."""

    values: torch.Tensor
    eps: float
    n: int
    call: str

    @property
    def wanted(self) -> torch.Tensor:
        return alibi_slopes(self.n)

    @property
    def lower(self) -> int:
        """The largest power of two at most ``n``."""
        return 1 << (self.n.bit_length() - 1)

    def tolerance(self, reference: torch.Tensor) -> torch.Tensor:
        return 8.0 * max(self.eps, EPS64) * reference.abs() + 1e-300

    def equals(self, candidate: torch.Tensor) -> bool:
        return bool(((self.values - candidate).abs() <= self.tolerance(self.wanted)).all())

    def fields(self, **more: object) -> dict[str, object]:
        return {"call": self.call, "n": self.n, **more}


def _in_another_order(s: _Slopes) -> dict[str, object] | None:
    ordered, wanted = torch.sort(s.values).values, torch.sort(s.wanted).values
    if not bool(((ordered - wanted).abs() <= s.tolerance(wanted)).all()):
        return None
    return s.fields(values=_show(s.values), wanted=_show(s.wanted))


def _first_wrong_of_a_power(s: _Slopes) -> dict[str, object] | None:
    """For a power of two, whatever is wrong: the first wrong slope."""
    if s.lower != s.n:
        return None
    wrong = (s.values - s.wanted).abs() > s.tolerance(s.wanted)
    head = int(wrong.nonzero()[0])
    return s.fields(
        head=head + 1, found=f"{float(s.values[head]):.6g}", wanted=f"{float(s.wanted[head]):.6g}"
    )


def _odd_slopes(s: _Slopes) -> dict[str, object] | None:
    lower, upper = s.lower, 2 * s.lower
    if lower == s.n or not s.equals(
        torch.cat((alibi_slopes(lower), alibi_slopes(upper)[1::2][: s.n - lower]))
    ):
        return None
    extra = s.n - lower
    heads = str(_HEAD_1) if extra == 1 else _HEADS.render(span=_span(1, extra))
    return s.fields(upper=upper, heads=heads)


def _if(condition: bool, fields: dict[str, object]) -> dict[str, object] | None:
    return fields if condition else None


#: What wrong slopes are compared with, in order; ``"non_power_of_two"`` (the values) if none.
_SLOPE_DIAGNOSES: tuple[Diagnosis[_Slopes], ...] = (
    Diagnosis(_SLOPES_SIGN, lambda s: _if(s.equals(-s.wanted), s.fields(values=_show(s.values)))),
    Diagnosis(_SLOPES_ORDER, _in_another_order),
    Diagnosis(
        _FROM_ONE,
        lambda s: _if(s.lower == s.n and s.equals(_geometric(s.n, first=0)), s.fields()),
    ),
    Diagnosis(
        _EIGHT_HEADS,
        lambda s: _if(
            s.lower == s.n
            and s.n != 8
            and s.equals(torch.exp2(-torch.arange(1, s.n + 1, dtype=torch.float64))),
            s.fields(),
        ),
    ),
    Diagnosis(_GEOMETRIC, _first_wrong_of_a_power),
    Diagnosis(_EXTENDED, lambda s: _if(s.equals(_geometric(s.n)), s.fields())),
    Diagnosis(
        _NEXT_POWER,
        lambda s: _if(s.equals(alibi_slopes(2 * s.lower)[: s.n]), s.fields(upper=2 * s.lower)),
    ),
    Diagnosis(_ODD_SLOPES, _odd_slopes),
)


def _check_slopes(values: torch.Tensor, eps: float, n: int, call: str) -> None:
    if not bool(torch.isfinite(values).all()):
        raise _SLOPES_NOT_FINITE.fail(call=call, n=n, values=_show(values))
    slopes = _Slopes(values, eps, n, call)
    if slopes.equals(slopes.wanted):
        return
    raise diagnose(_SLOPE_DIAGNOSES, slopes) or _NON_POWER.fail(
        **slopes.fields(found=_show(values), wanted=_show(slopes.wanted))
    )


def _span(first: int, count: int) -> str:
    return str(first) if count == 1 else f"{first} .. {first + count - 1}"


def _show(values: torch.Tensor) -> str:
    shown = ", ".join(f"{v:.4g}" for v in values[:10].tolist())
    return f"[{shown}{', ...' if len(values) > 10 else ''}]"


# --- the bias ---------------------------------------------------------------------------------

_FOR = text("For {call}, ")
_HEAD_1 = text("head 1")
_HEADS = text("heads {span}")
_UNMASKED = text(" (not masked)")
_SEQUENCE_OF = text("a {kind} of {items}")
_MASKED_ENTRY = text("{value}, masked (the row's largest entry is {top})")
_BIAS_CONTRACT = (
    "bias(num_heads, q_len, k_len) must return shape (num_heads, q_len, k_len): keys at "
    "positions 0 .. k_len - 1, the queries the last q_len of them, entry [h, i, j] = "
    "-s_h * (p_i - j) for keys at or before the query's position p_i, -inf after it."
)
_BIAS_CONTRACT_TEXT = text(_BIAS_CONTRACT)

BIAS_MISTAKES.uses(EXCEPTION)
_BIAS_TYPE = BIAS_MISTAKES.declare(
    "wrong_type",
    "{call} returned {what}.",
    "return a torch tensor or numpy array. " + _BIAS_CONTRACT,
)
_BIAS_SHAPE = BIAS_MISTAKES.declare(
    "shape",
    "{call} returned shape {shape}, not (num_heads, q_len, k_len) = {wanted}.",
    _BIAS_CONTRACT + " A leading batch dimension of 1 is accepted.",
)
_BIAS_NOT_FINITE = BIAS_MISTAKES.declare(
    "not_finite",
    "the bias holds {what} (head {head}, query {query}, key {key}). Only masked entries may be "
    "infinite, and only -inf.",
    "look for 0 * inf (multiplying the mask by a slope) or a division by zero; build the "
    "finite bias first, then masked_fill(future, float('-inf')).",
)
_TRANSPOSED = BIAS_MISTAKES.declare(
    "direction",
    "the bias is transposed: each row holds a key and each column a query, so a query sees the "
    "keys after it and not those before (the distance was taken as j - i with the mask on the "
    "side where j - i is negative, or the matrix was built as [h, j, i]).",
    "entry [h, i, j] (query i, key j) is -s_h * (i - j) for j <= i and -inf for j > i: "
    "distance = i[:, None] - j[None, :], masked where distance < 0.",
)
_SIGN = BIAS_MISTAKES.declare(
    "sign",
    "the bias is +s_h * (i - j): it grows with the distance, so far keys get the most "
    "attention (a slope with a minus sign, or the distance taken as j - i: -s_h * (j - i) is "
    "the same thing).",
    "subtract the penalty: bias = -s_h * (i - j), with s_h > 0 and i - j >= 0 for the keys a "
    "query sees.",
)
_QUERY_OFFSET = BIAS_MISTAKES.declare(
    "query_offset",
    "with q_len={q_len} < k_len={k_len} the queries are placed at positions {found} instead "
    "of the last ones, {wanted}: with a key-value cache the new queries come after the cached "
    "keys.",
    "query row i is at position p_i = i + k_len - q_len: distance = (torch.arange(q_len) + "
    "k_len - q_len)[:, None] - torch.arange(k_len)[None, :].",
)
_SLOPES = BIAS_MISTAKES.declare(
    "slopes",
    "the bias of head {head} falls by {found} per position where its slope for {n} heads is "
    "{wanted}: the slopes are wrong.",
    "use the slopes s_h of the paper and the authors' code (check your slopes function with "
    "check_alibi_slopes), head h - 1 at index h - 1 of the bias.",
)
_NO_MASK = BIAS_MISTAKES.declare(
    "causal_mask",
    "future keys are not masked: entry [h, i, j] with key j after the query's position is "
    "{value} (head {head}, query {query}, key {key}), not -inf, so a query attends to tokens "
    "it must not see yet.",
    "mask them: bias.masked_fill(j > p_i, float('-inf')) (ALiBi's bias replaces neither the "
    "causal mask nor the need for it).",
)
_MASKED = BIAS_MISTAKES.declare(
    "causal_mask",
    "future keys are masked, but the bidirectional bias (causal=False) was asked for: "
    "-s_h * |i - j| on every key.",
    "drop the mask when causal=False and use the absolute distance |i - j|.",
)
_MASKS_SELF = BIAS_MISTAKES.declare(
    "masks_self",
    "the key at the query's own position is masked as well as the future ones: the first "
    "query sees no key at all, and its softmax is NaN.",
    "mask only keys after the query, j > p_i (torch.triu(..., diagonal=1), not diagonal=0).",
)
_BIAS_VALUES = BIAS_MISTAKES.declare(
    "wrong_values",
    "at head {head}, query {query} (position {position}), key {key} the bias is {found} where "
    "the reference is {wanted} (each row compared up to a constant).",
    _BIAS_CONTRACT,
)

#: ``(num_heads, q_len, k_len)`` of each call.
_BIAS_PROBES = ((8, 6, 6), (4, 5, 5), (12, 7, 7), (8, 1, 9), (8, 3, 10))
#: How far below the row's largest entry a masked entry must be (its softmax weight, e**-5000,
#: is 0 in every dtype), so that a -1e4 mask passes under a row constant.
_MASK_GAP = 5e3


@BIAS_MISTAKES.attach
def check_alibi_bias(
    bias: Callable[[int, int, int], object], *, causal: bool = True, seed: int = 0
) -> None:
    r"""Check an ALiBi bias builder against the paper (and :func:`pe_lib.encodings.alibi.alibi_bias`).

    ``bias(num_heads, q_len, k_len)`` is called for ``(8, 6, 6)``, ``(4, 5, 5)``,
    ``(12, 7, 7)`` (12 heads: not a power of two), then ``(8, 1, 9)`` and ``(8, 3, 10)``
    (decoding with a key-value cache: the queries are the *last* ``q_len`` of the ``k_len``
    positions). It must return a tensor or array of shape ``(num_heads, q_len, k_len)`` (or
    ``(1, num_heads, q_len, k_len)``) whose entry ``[h, i, j]``, ``p_i = i + k_len - q_len`` the
    query's position, is :math:`-s_h\,(p_i - j)` for ``j <= p_i`` and masked (``-inf``) for
    ``j > p_i``; with ``causal=False`` it is :math:`-s_h\,|p_i - j|` everywhere. Each row may be
    shifted by a constant and masked entries may be very negative instead of ``-inf`` (see the
    module docstring). A function of ``(num_heads, seq_len)`` only is checked as
    ``lambda n, q, k: f(n, k)[:, -q:]``.

    At the first wrong call ``.mistake`` (one of ``check_alibi_bias.mistakes``) is:

    * ``"exception"``, ``"wrong_type"``, ``"shape"``; ``"not_finite"`` for NaN or ``+inf``;
    * ``"direction"``: the bias transposed (query and key swapped);
    * ``"sign"``: :math:`+s_h\,(i - j)`, the bias growing with distance (a negated slope, or
      :math:`-s_h\,(j - i)`, which is the same matrix);
    * ``"query_offset"``: for ``q_len < k_len``, the queries placed at ``0 .. q_len - 1``;
    * ``"slopes"``: the right shape of bias with other slopes (the message names the head);
    * ``"causal_mask"``: future keys not masked (or, with ``causal=False``, masked);
    * ``"masks_self"``: the query's own key masked too;
    * ``"wrong_values"``: anything else.

    Args:
        bias: ``bias(num_heads, q_len, k_len) -> (num_heads, q_len, k_len)``.
        causal: whether future keys must be masked (default) or the bias is bidirectional.

    Returns:
        ``None`` when every bias is right.

    Raises:
        TypeError: ``bias`` is not callable or ``causal`` not a bool.
        CheckFailed: a bias is wrong; ``.mistake`` says how (see above).
    """
    check_callable(
        "bias", bias, "a function bias(num_heads, q_len, k_len) -> (num_heads, q_len, k_len)"
    )
    causal = check_bool("causal", causal)
    seed = check_seed(seed)
    for case in draw_cases(_BIAS_PROBES, _draw_bias, _DRAWN, seed):
        n, q_len, k_len = case.value
        call = f"bias({n}, {q_len}, {k_len}){case.label}"
        result = call_student(EXCEPTION, call, bias, n, q_len, k_len, contract=_BIAS_CONTRACT_TEXT)
        try:
            values, _, eps = as_float64(result)
        except NotAnArray as error:
            raise _BIAS_TYPE.fail(call=call, what=str(error)) from None
        wanted = (n, q_len, k_len)
        if values.dim() == 4 and values.shape[0] == 1:
            values = values[0]
        if tuple(values.shape) != wanted:
            raise _BIAS_SHAPE.fail(call=call, shape=tuple(values.shape), wanted=wanted)
        _check_bias(values, eps, n, q_len, k_len, causal, _FOR.render(call=call))


def _draw_bias(rng: random.Random) -> tuple[int, int, int]:
    """``(num_heads, q_len, k_len)``: any head count, queries the last of the keys."""
    k_len = rng.randint(1, 24)
    return rng.randint(1, 16), rng.randint(1, k_len), k_len


def _visible(b: torch.Tensor) -> torch.Tensor:
    """Entries with a softmax weight: finite and less than ``_MASK_GAP`` below the row's largest."""
    finite = torch.isfinite(b)
    top = torch.where(finite, b, -torch.inf).amax(dim=-1, keepdim=True)
    return finite & (b > top - _MASK_GAP)


class _Bias:
    """The student's bias, float64 ``(num_heads, q_len, k_len)``, and how to compare it."""

    def __init__(self, values: torch.Tensor, eps: float) -> None:
        self.values, self.eps = values, max(eps, EPS64)
        self.visible = _visible(values)

    def tolerance(self, candidate: torch.Tensor) -> torch.Tensor:
        size = torch.where(torch.isfinite(candidate), candidate.abs(), 0.0).amax(-1, keepdim=True)
        own = torch.where(self.visible, self.values.abs(), 0.0).amax(-1, keepdim=True)
        return 8.0 * self.eps * (1.0 + size + own)

    def rows_agree(self, candidate: torch.Tensor, where: torch.Tensor) -> bool:
        """Whether bias - candidate is constant along each row on the entries ``where``."""
        if not bool((self.visible | ~where).all()):
            return False
        gap = self.values - torch.where(where, candidate, 0.0)
        high = torch.where(where, gap, -torch.inf).amax(-1, keepdim=True)
        low = torch.where(where, gap, torch.inf).amin(-1, keepdim=True)
        spread = torch.where(where.any(-1, keepdim=True), high - low, 0.0)
        return bool((spread <= self.tolerance(candidate)).all())

    def matches(self, candidate: torch.Tensor) -> bool:
        """Same visible entries as ``candidate``'s finite ones, equal up to a row constant."""
        finite = torch.isfinite(candidate)
        return bool((self.visible == finite).all()) and self.rows_agree(candidate, finite)


def _masked_like(values: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return torch.where(torch.isfinite(like), values, -torch.inf)


@dataclass(frozen=True)
class _Probe:
    """A student's bias for one call that is not the reference, and what it is compared with."""

    student: _Bias
    n: int
    q_len: int
    k_len: int
    causal: bool
    reference: torch.Tensor
    causal_reference: torch.Tensor


def _transposed(p: _Probe) -> dict[str, object] | None:
    square = p.q_len == p.k_len
    return _if(square and p.student.matches(p.causal_reference.transpose(-1, -2)), {})


def _query_offset(p: _Probe) -> dict[str, object] | None:
    if p.q_len >= p.k_len:
        return None
    from_zero = alibi_bias(p.n, p.k_len, p.k_len, causal=p.causal, dtype=torch.float64)
    return _if(
        p.student.matches(from_zero[:, : p.q_len]),
        {
            "q_len": p.q_len,
            "k_len": p.k_len,
            "found": _span(0, p.q_len),
            "wanted": _span(p.k_len - p.q_len, p.q_len),
        },
    )


def _other_slopes(p: _Probe) -> dict[str, object] | None:
    slopes = _fitted_slopes(p.student, p.reference, p.n)
    if slopes is None:
        return None
    wanted = alibi_slopes(p.n)
    scaled = _masked_like(p.reference / wanted[:, None, None] * slopes[:, None, None], p.reference)
    if not p.student.matches(scaled):
        return None
    wrong = (slopes - wanted).abs() > 8.0 * p.student.eps * wanted
    head = int(wrong.nonzero()[0]) if bool(wrong.any()) else 0  # the first wrong one
    return {
        "head": head + 1,
        "found": f"{float(slopes[head]):.6g}",
        "wanted": f"{float(wanted[head]):.6g}",
        "n": p.n,
    }


def _no_mask(p: _Probe) -> dict[str, object] | None:
    finite = torch.isfinite(p.causal_reference)
    future = p.student.visible & ~finite
    if not p.causal or not bool(future.any()) or not p.student.rows_agree(p.reference, finite):
        return None
    h, i, j = (int(v) for v in future.nonzero()[0])
    return {"value": f"{float(p.student.values[h, i, j]):.4g}", "head": h, "query": i, "key": j}


def _masks_self(p: _Probe) -> dict[str, object] | None:
    own = torch.zeros_like(p.reference, dtype=torch.bool)
    own[:, torch.arange(p.q_len), torch.arange(p.k_len - p.q_len, p.k_len)] = True
    return _if(p.student.matches(torch.where(own, -torch.inf, p.reference)), {})


#: What a wrong bias is compared with, in order; ``"wrong_values"`` (the first entry) if none.
_BIAS_DIAGNOSES: tuple[Diagnosis[_Probe], ...] = (
    Diagnosis(_TRANSPOSED, _transposed),
    Diagnosis(_SIGN, lambda p: _if(p.student.matches(_masked_like(-p.reference, p.reference)), {})),
    Diagnosis(_QUERY_OFFSET, _query_offset),
    Diagnosis(_SLOPES, _other_slopes),
    Diagnosis(_NO_MASK, _no_mask),
    Diagnosis(_MASKED, lambda p: _if(not p.causal and p.student.matches(p.causal_reference), {})),
    Diagnosis(_MASKS_SELF, _masks_self),
)


def _check_bias(
    values: torch.Tensor, eps: float, n: int, q_len: int, k_len: int, causal: bool, where: str
) -> None:
    bad = torch.isnan(values) | (values == torch.inf)
    if bool(bad.any()):
        h, i, j = (int(v) for v in bad.nonzero()[0])
        what = "NaN" if bool(torch.isnan(values[h, i, j])) else "+inf"
        raise _BIAS_NOT_FINITE.fail(where, what=what, head=h, query=i, key=j)
    student = _Bias(values, eps)
    reference = alibi_bias(n, q_len, k_len, causal=causal, dtype=torch.float64)
    if student.matches(reference):
        return
    causal_reference = alibi_bias(n, q_len, k_len, causal=True, dtype=torch.float64)
    probe = _Probe(student, n, q_len, k_len, causal, reference, causal_reference)
    raise diagnose(_BIAS_DIAGNOSES, probe, where) or _first_difference(
        student, reference, q_len, k_len, where
    )


def _fitted_slopes(student: _Bias, reference: torch.Tensor, n: int) -> torch.Tensor | None:
    """Each head's fall per position along the last query row, if it has two visible keys."""
    row = student.values[:, -1, :]  # (n, k_len), the query at the last position
    visible = student.visible[:, -1, :] & torch.isfinite(reference[:, -1, :])
    k_len = row.shape[-1]
    if k_len < 2 or not bool(visible[:, -2:].all()):
        return None
    return row[:, -1] - row[:, -2]  # -s_h * 0 - (-s_h * 1) = s_h


def _first_difference(
    student: _Bias, reference: torch.Tensor, q_len: int, k_len: int, where: str
) -> CheckFailed:
    """The first entry that is wrong: masked where it must not be (or not where it must), or
    off after shifting its row to agree with the reference at the query's own key."""
    values, visible = student.values, student.visible
    position = torch.arange(k_len - q_len, k_len)  # (q_len,)
    own = values[:, torch.arange(q_len), position][..., None]  # (n, q_len, 1)
    own = torch.where(visible[:, torch.arange(q_len), position][..., None], own, 0.0)
    finite = torch.isfinite(reference)
    shifted = values - own
    off = finite & visible & ((shifted - reference).abs() > student.tolerance(reference))
    wrong = (visible != finite) | off
    h, i, j = (int(v) for v in wrong.nonzero()[0])
    if bool(visible[h, i, j]):
        unmasked = str(_UNMASKED)
        found = f"{float(shifted[h, i, j]):.6g}" + ("" if finite[h, i, j] else unmasked)
    else:
        top = float(torch.where(torch.isfinite(values[h, i]), values[h, i], -torch.inf).max())
        found = _MASKED_ENTRY.render(value=f"{float(values[h, i, j]):.4g}", top=f"{top:.4g}")
    return _BIAS_VALUES.fail(
        where,
        head=h,
        query=i,
        position=int(position[i]),
        key=j,
        found=found,
        wanted=f"{float(reference[h, i, j]):.6g}",
    )
