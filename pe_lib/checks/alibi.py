r"""``check_alibi_slopes`` and ``check_alibi_bias``: ALiBi's slopes and bias, checked.

ALiBi (Press et al., 2022, section 3) adds :math:`-s_h\,(i - j)` to the attention score of query
position ``i`` and key position ``j <= i`` in head ``h``, and masks future keys. The slopes, for
``n`` heads, ``n`` a power of two, are :math:`s_h = 2^{-8h/n}`, :math:`h = 1, \dots, n`; for
other ``n``, the authors' code (``get_slopes`` in ``fairseq/models/transformer.py`` of
github.com/ofirpress/attention_with_linear_biases) takes the slopes of the closest power of two
below, :math:`n_0`, followed by every other slope of :math:`2 n_0` heads (``[0::2]``), as many as
needed. The references are :func:`pe_lib.alibi.alibi_slopes` and :func:`pe_lib.alibi.alibi_bias`,
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
from collections.abc import Callable

import numpy as np
import torch

from .._validation import check_bool, check_callable
from ..alibi import alibi_bias, alibi_slopes
from ._core import EPS64, Catalogue, CheckFailed, NotAnArray, as_float64, call_student, say

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
_SLOPES_RULE_KO = (
    "n이 2의 거듭제곱인 헤드 n개에서는 s_h = 2 ** (-8h / n), h = 1 .. n(첫 항 = 공비 = "
    "2 ** (-8 / n))이다. 그렇지 않으면 n0을 n보다 작은 가장 큰 2의 거듭제곱으로 두고, 헤드 n0개의 "
    "기울기 n0개 다음에 slopes(2 * n0)[0::2][: n - n0]을 둔다."
)

_SLOPES_EXCEPTION = SLOPES_MISTAKES.declare(
    "exception",
    "{call} raised {error_type}: {error}.",
    "fix that error first (the traceback above this one shows where it happened); slopes must "
    "accept every head count n >= 1, powers of two or not.",
    ko=(
        "{call:이} {error_type:을} 일으켰다. 오류 내용: {error}",
        "그 오류부터 고쳐라(이 오류 위의 traceback이 어디서 일어났는지 보여 준다). slopes는 2의 거듭제곱이든 아니든 모든 헤드 수 n >= 1을 받아야 한다.",
    ),
)
_SLOPES_TYPE = SLOPES_MISTAKES.declare(
    "wrong_type",
    "slopes({n}) returned {what}.",
    "return the n slopes as a list of floats, a numpy array or a torch tensor.",
    ko=(
        "slopes({n})가 {what:을} 반환했다.",
        "n개의 기울기를 float 리스트, numpy 배열, torch 텐서 가운데 하나로 반환하라.",
    ),
)
_SLOPES_SHAPE = SLOPES_MISTAKES.declare(
    "shape",
    "slopes({n}) returned {count} values (shape {shape}): one slope per head is {n}.",
    "return exactly n slopes, head 1 first.",
    ko=(
        "slopes({n})가 값 {count}개(shape {shape})를 반환했다. 헤드마다 기울기 하나씩이면 {n}개다.",
        "정확히 n개의 기울기를 헤드 1부터 반환하라.",
    ),
)
_SLOPES_NOT_FINITE = SLOPES_MISTAKES.declare(
    "not_finite",
    "slopes({n}) holds NaN or infinite values: {values}.",
    "look for a log2 of 0 or a division by zero; " + _SLOPES_RULE,
    ko=(
        "slopes({n})에 NaN이나 무한대 값이 있다({values}).",
        "0의 log2나 0으로 나누기를 찾아보라. " + _SLOPES_RULE_KO,
    ),
)
_SLOPES_SIGN = SLOPES_MISTAKES.declare(
    "sign",
    "slopes({n}) are the right values with a minus sign: {values}. The slopes are positive; "
    "the bias subtracts them: -s_h * (i - j).",
    "return the positive 2 ** (-8h / n) and put the minus sign in the bias.",
    ko=(
        "slopes({n})가 맞는 값에 마이너스 부호를 붙인 것이다({values}). 기울기는 양수이고, 편향은 -s_h * (i - j)로 그것을 뺀다.",
        "양수 2 ** (-8h / n)를 반환하고, 마이너스 부호는 편향에 넣어라.",
    ),
)
_SLOPES_ORDER = SLOPES_MISTAKES.declare(
    "order",
    "slopes({n}) holds the right values in another order: {values} where head 1 .. {n} have "
    "{wanted}.",
    "keep the authors' order (head h gets slope h of the sequence; for a non-power of two the "
    "extra slopes come after the first n0 and interleave with them, they are not sorted); "
    "a pretrained model's heads expect exactly that order. " + _SLOPES_RULE,
    ko=(
        "slopes({n})에 맞는 값이 다른 순서로 들어 있다({values}). 헤드 1 .. {n:은} {wanted:을} 가져야 한다.",
        "저자들의 순서를 지켜라(헤드 h는 수열의 h번째 기울기를 받는다. 2의 거듭제곱이 아니면 여분의 기울기가 처음 n0개 뒤에 와서 그것들과 엇갈리며, 정렬되어 있지 않다). 사전 학습된 모델의 헤드는 바로 그 순서를 기대한다. "
        + _SLOPES_RULE_KO,
    ),
)
_FROM_ONE = SLOPES_MISTAKES.declare(
    "geometric",
    "slopes({n}) starts at 1: it is 2 ** (-8(h - 1) / n), the index h starting at 0.",
    "h runs from 1 to n: the first slope is 2 ** (-8 / n), the last 2 ** (-8) = 1/256.",
    ko=(
        "slopes({n})가 1에서 시작한다. 번호 h를 0부터 센 2 ** (-8(h - 1) / n)이다.",
        "h는 1부터 n까지다. 첫 기울기는 2 ** (-8 / n), 마지막은 2 ** (-8) = 1/256이다.",
    ),
)
_EIGHT_HEADS = SLOPES_MISTAKES.declare(
    "geometric",
    "slopes({n}) is 1/2, 1/4, 1/8, ...: the sequence of 8 heads, 2 ** (-h), whatever n is. For "
    "{n} heads the ratio is 2 ** (-8 / {n}).",
    _SLOPES_RULE,
    ko=(
        "slopes({n})가 n과 상관없이 1/2, 1/4, 1/8, ...이다. 헤드 8개의 수열 2 ** (-h)이다. 헤드 {n}개의 공비는 2 ** (-8 / {n})이다.",
        _SLOPES_RULE_KO,
    ),
)
_GEOMETRIC = SLOPES_MISTAKES.declare(
    "geometric",
    "for {n} heads, a power of two, slope {head} is {found} where 2 ** (-8 * {head} / {n}) = "
    "{wanted}.",
    _SLOPES_RULE,
    ko=(
        "헤드 {n}개(2의 거듭제곱)에서 기울기 {head:가} {found}인데, 2 ** (-8 * {head} / {n}) = {wanted}이다.",
        _SLOPES_RULE_KO,
    ),
)
_EXTENDED = SLOPES_MISTAKES.declare(
    "non_power_of_two",
    "slopes({n}) is the geometric sequence 2 ** (-8h / {n}), but {n} is not a power of two: "
    "the paper's sequence holds for powers of two only.",
    _SLOPES_RULE,
    ko=(
        "slopes({n})가 등비수열 2 ** (-8h / {n})이지만, {n:은} 2의 거듭제곱이 아니다. 논문의 수열은 2의 거듭제곱에만 성립한다.",
        _SLOPES_RULE_KO,
    ),
)
_NEXT_POWER = SLOPES_MISTAKES.declare(
    "non_power_of_two",
    "slopes({n}) is the first {n} slopes of {upper} heads (the next power of two).",
    _SLOPES_RULE,
    ko=(
        "slopes({n})가 헤드 {upper}개(다음 2의 거듭제곱)의 처음 {n}개 기울기이다.",
        _SLOPES_RULE_KO,
    ),
)
_ODD_SLOPES = SLOPES_MISTAKES.declare(
    "non_power_of_two",
    "slopes({n}) takes slopes({upper})[1::2] for the extra heads: every other slope starting "
    "with the second, which repeats the slopes of {heads}.",
    "take slopes(2 * n0)[0::2], the ones in between: " + _SLOPES_RULE,
    ko=(
        "slopes({n})가 여분의 헤드에 slopes({upper})[1::2]를 쓴다. 두 번째부터 하나 걸러 하나씩 고른 기울기로, {heads}의 기울기를 되풀이한다.",
        "그 사이에 있는 slopes(2 * n0)[0::2]를 골라라: " + _SLOPES_RULE_KO,
    ),
)
_NON_POWER = SLOPES_MISTAKES.declare(
    "non_power_of_two",
    "the slopes are right for powers of two but not for {n} heads: {found} where the authors' "
    "rule gives {wanted}.",
    _SLOPES_RULE,
    ko=(
        "기울기가 2의 거듭제곱에서는 맞지만 헤드 {n}개에서는 틀렸다. 결과는 {found}인데, 저자들의 규칙으로는 {wanted:이} 나온다.",
        _SLOPES_RULE_KO,
    ),
)

#: Head counts probed: powers of two first (8, the paper's example, leading), then others.
_POWERS = (8, 4, 16, 2, 1, 32)
_OTHERS = (3, 5, 6, 7, 12, 20, 24, 40)


@SLOPES_MISTAKES.attach
def check_alibi_slopes(slopes: Callable[[int], object]) -> None:
    r"""Check a function of the ALiBi slopes against the paper and the authors' code.

    ``slopes(n)`` is called for ``n`` = 8, 4, 16, 2, 1, 32 and then 3, 5, 6, 7, 12, 20, 24, 40
    heads. It must return the ``n`` slopes :math:`s_1, \dots, s_n` (a list of floats, a numpy
    array or a torch tensor; shape ``(n,)``, or any shape with ``n`` entries such as
    ``(n, 1, 1)``), equal to :func:`pe_lib.alibi.alibi_slopes` within the tolerance of the module
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
    for n in (*_POWERS, *_OTHERS):
        result = call_student(_SLOPES_EXCEPTION, f"slopes({n})", slopes, n)
        values, eps = _vector(result, n)
        _check_slopes(values, eps, n)


def _vector(result: object, n: int) -> tuple[torch.Tensor, float]:
    """The student's slopes as a float64 ``(n,)`` tensor and their epsilon."""
    if isinstance(result, (list, tuple)):
        if not all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in result):
            kinds = sorted({type(v).__name__ for v in result})
            what = say(
                f"a {type(result).__name__} of {', '.join(kinds)}",
                f"{', '.join(kinds)}의 {type(result).__name__}",
            )
            raise _SLOPES_TYPE.fail(n=n, what=what)
        result = np.array([float(v) for v in result], dtype=np.float64)
    try:
        values, _, eps = as_float64(result)
    except NotAnArray as error:
        raise _SLOPES_TYPE.fail(n=n, what=str(error)) from None
    if values.numel() != n or sum(size != 1 for size in values.shape) > 1:
        raise _SLOPES_SHAPE.fail(n=n, count=values.numel(), shape=tuple(values.shape))
    return values.reshape(n), eps


def _geometric(n: int, first: int = 1) -> torch.Tensor:
    """``2 ** (-8h / n)`` for ``h = first .. first + n - 1``, float64."""
    return torch.exp2(torch.arange(first, first + n, dtype=torch.float64) * (-8.0 / n))


def _check_slopes(values: torch.Tensor, eps: float, n: int) -> None:
    if not bool(torch.isfinite(values).all()):
        raise _SLOPES_NOT_FINITE.fail(n=n, values=_show(values))
    wanted = alibi_slopes(n)
    tolerance = 8.0 * max(eps, EPS64) * wanted.abs() + 1e-300

    def equals(candidate: torch.Tensor) -> bool:
        return bool(((values - candidate).abs() <= tolerance).all())

    if equals(wanted):
        return
    if equals(-wanted):
        raise _SLOPES_SIGN.fail(n=n, values=_show(values))
    ordered, wanted_ordered = torch.sort(values).values, torch.sort(wanted).values
    if bool(((ordered - wanted_ordered).abs() <= 8.0 * max(eps, EPS64) * wanted_ordered).all()):
        raise _SLOPES_ORDER.fail(n=n, values=_show(values), wanted=_show(wanted))
    lower = 1 << (n.bit_length() - 1)
    if lower == n:
        if equals(_geometric(n, first=0)):
            raise _FROM_ONE.fail(n=n)
        if n != 8 and equals(torch.exp2(-torch.arange(1, n + 1, dtype=torch.float64))):
            raise _EIGHT_HEADS.fail(n=n)
        head = int(((values - wanted).abs() > tolerance).nonzero()[0])  # the first wrong one
        raise _GEOMETRIC.fail(
            n=n,
            head=head + 1,
            found=f"{float(values[head]):.6g}",
            wanted=f"{float(wanted[head]):.6g}",
        )
    if equals(_geometric(n)):
        raise _EXTENDED.fail(n=n)
    upper = 2 * lower
    if equals(alibi_slopes(upper)[:n]):
        raise _NEXT_POWER.fail(n=n, upper=upper)
    if equals(torch.cat((alibi_slopes(lower), alibi_slopes(upper)[1::2][: n - lower]))):
        if n - lower == 1:
            heads = say("head 1", "헤드 1")
        else:
            heads = say(f"heads {_span(1, n - lower)}", f"헤드 {_span(1, n - lower)}")
        raise _ODD_SLOPES.fail(n=n, upper=upper, heads=heads)
    raise _NON_POWER.fail(n=n, found=_show(values), wanted=_show(wanted))


def _span(first: int, count: int) -> str:
    return str(first) if count == 1 else f"{first} .. {first + count - 1}"


def _show(values: torch.Tensor) -> str:
    shown = ", ".join(f"{v:.4g}" for v in values[:10].tolist())
    return f"[{shown}{', ...' if len(values) > 10 else ''}]"


# --- the bias ---------------------------------------------------------------------------------

_BIAS_CONTRACT = (
    "bias(num_heads, q_len, k_len) must return shape (num_heads, q_len, k_len): keys at "
    "positions 0 .. k_len - 1, the queries the last q_len of them, entry [h, i, j] = "
    "-s_h * (p_i - j) for keys at or before the query's position p_i, -inf after it."
)
_BIAS_CONTRACT_KO = (
    "bias(num_heads, q_len, k_len)는 shape (num_heads, q_len, k_len)을 반환해야 한다. 키는 위치 "
    "0 .. k_len - 1에 있고, 쿼리는 그 가운데 마지막 q_len개이며, 성분 [h, i, j]는 쿼리 위치 p_i "
    "이전(같은 위치 포함)의 키에 대해 -s_h * (p_i - j), 그 뒤의 키에 대해 -inf이다."
)

_BIAS_EXCEPTION = BIAS_MISTAKES.declare(
    "exception",
    "{call} raised {error_type}: {error}.",
    "fix that error first (the traceback above this one shows where it happened). "
    + _BIAS_CONTRACT,
    ko=(
        "{call:이} {error_type:을} 일으켰다. 오류 내용: {error}",
        "그 오류부터 고쳐라(이 오류 위의 traceback이 어디서 일어났는지 보여 준다). "
        + _BIAS_CONTRACT_KO,
    ),
)
_BIAS_TYPE = BIAS_MISTAKES.declare(
    "wrong_type",
    "{call} returned {what}.",
    "return a torch tensor or numpy array. " + _BIAS_CONTRACT,
    ko=(
        "{call:이} {what:을} 반환했다.",
        "torch 텐서나 numpy 배열을 반환하라. " + _BIAS_CONTRACT_KO,
    ),
)
_BIAS_SHAPE = BIAS_MISTAKES.declare(
    "shape",
    "{call} returned shape {shape}, not (num_heads, q_len, k_len) = {wanted}.",
    _BIAS_CONTRACT + " A leading batch dimension of 1 is accepted.",
    ko=(
        "{call:이} (num_heads, q_len, k_len) = {wanted:이} 아니라 shape {shape:을} 반환했다.",
        _BIAS_CONTRACT_KO + " 앞에 크기 1인 배치 차원이 있어도 된다.",
    ),
)
_BIAS_NOT_FINITE = BIAS_MISTAKES.declare(
    "not_finite",
    "the bias holds {what} (head {head}, query {query}, key {key}). Only masked entries may be "
    "infinite, and only -inf.",
    "look for 0 * inf (multiplying the mask by a slope) or a division by zero; build the "
    "finite bias first, then masked_fill(future, float('-inf')).",
    ko=(
        "편향에 {what:이} 있다(헤드 {head}, 쿼리 {query}, 키 {key}). 마스크된 성분만 무한대일 수 있고, 그것도 -inf뿐이다.",
        "0 * inf(마스크에 기울기를 곱하기)나 0으로 나누기를 찾아보라. 유한한 편향을 먼저 만들고 그다음 masked_fill(future, float('-inf'))를 하라.",
    ),
)
_TRANSPOSED = BIAS_MISTAKES.declare(
    "direction",
    "the bias is transposed: each row holds a key and each column a query, so a query sees the "
    "keys after it and not those before (the distance was taken as j - i with the mask on the "
    "side where j - i is negative, or the matrix was built as [h, j, i]).",
    "entry [h, i, j] (query i, key j) is -s_h * (i - j) for j <= i and -inf for j > i: "
    "distance = i[:, None] - j[None, :], masked where distance < 0.",
    ko=(
        "편향이 전치되었다. 행마다 키, 열마다 쿼리가 있어서 쿼리가 앞의 키가 아니라 뒤의 키를 본다(거리를 j - i로 잡고 j - i가 음수인 쪽에 마스크를 두었거나, 행렬을 [h, j, i]로 만들었다).",
        "성분 [h, i, j](쿼리 i, 키 j)는 j <= i이면 -s_h * (i - j), j > i이면 -inf이다. distance = i[:, None] - j[None, :]로 두고 distance < 0인 곳을 마스크하라.",
    ),
)
_SIGN = BIAS_MISTAKES.declare(
    "sign",
    "the bias is +s_h * (i - j): it grows with the distance, so far keys get the most "
    "attention (a slope with a minus sign, or the distance taken as j - i: -s_h * (j - i) is "
    "the same thing).",
    "subtract the penalty: bias = -s_h * (i - j), with s_h > 0 and i - j >= 0 for the keys a "
    "query sees.",
    ko=(
        "편향이 +s_h * (i - j)이다. 거리에 따라 커지므로 먼 키가 가장 많은 어텐션을 받는다(기울기에 마이너스 부호가 붙었거나, 거리를 j - i로 잡았다. -s_h * (j - i)도 같은 값이다).",
        "페널티를 빼라: bias = -s_h * (i - j). s_h > 0이고, 쿼리가 보는 키에서는 i - j >= 0이다.",
    ),
)
_QUERY_OFFSET = BIAS_MISTAKES.declare(
    "query_offset",
    "with q_len={q_len} < k_len={k_len} the queries are placed at positions {found} instead "
    "of the last ones, {wanted}: with a key-value cache the new queries come after the cached "
    "keys.",
    "query row i is at position p_i = i + k_len - q_len: distance = (torch.arange(q_len) + "
    "k_len - q_len)[:, None] - torch.arange(k_len)[None, :].",
    ko=(
        "q_len={q_len} < k_len={k_len}에서 쿼리가 마지막 위치 {wanted:이} 아니라 위치 {found}에 놓였다. 키-값 캐시가 있으면 새 쿼리는 캐시된 키 뒤에 온다.",
        "쿼리 행 i는 위치 p_i = i + k_len - q_len에 있다. 즉 distance = (torch.arange(q_len) + k_len - q_len)[:, None] - torch.arange(k_len)[None, :]로 계산하라.",
    ),
)
_SLOPES = BIAS_MISTAKES.declare(
    "slopes",
    "the bias of head {head} falls by {found} per position where its slope for {n} heads is "
    "{wanted}: the slopes are wrong.",
    "use the slopes s_h of the paper and the authors' code (check your slopes function with "
    "check_alibi_slopes), head h - 1 at index h - 1 of the bias.",
    ko=(
        "헤드 {head}의 편향이 위치마다 {found}씩 줄어드는데, 헤드 {n}개에서 그 헤드의 기울기는 {wanted}이다. 기울기가 틀렸다.",
        "논문과 저자들의 코드의 기울기 s_h를 쓰고(기울기 함수는 check_alibi_slopes로 검사하라), 헤드 h - 1을 편향의 인덱스 h - 1에 두어라.",
    ),
)
_NO_MASK = BIAS_MISTAKES.declare(
    "causal_mask",
    "future keys are not masked: entry [h, i, j] with key j after the query's position is "
    "{value} (head {head}, query {query}, key {key}), not -inf, so a query attends to tokens "
    "it must not see yet.",
    "mask them: bias.masked_fill(j > p_i, float('-inf')) (ALiBi's bias replaces neither the "
    "causal mask nor the need for it).",
    ko=(
        "미래의 키가 마스크되지 않았다. 키 j가 쿼리 위치 뒤에 있는 성분 [h, i, j]가 -inf가 아니라 {value}이다(헤드 {head}, 쿼리 {query}, 키 {key}). 그래서 쿼리가 아직 보면 안 되는 토큰에 어텐션한다.",
        "그것들을 마스크하라: bias.masked_fill(j > p_i, float('-inf'))(ALiBi의 편향은 인과 마스크를 대신하지 않으며, 인과 마스크가 여전히 필요하다).",
    ),
)
_MASKED = BIAS_MISTAKES.declare(
    "causal_mask",
    "future keys are masked, but the bidirectional bias (causal=False) was asked for: "
    "-s_h * |i - j| on every key.",
    "drop the mask when causal=False and use the absolute distance |i - j|.",
    ko=(
        "미래의 키가 마스크되었지만, 요청한 것은 양방향 편향(causal=False)이다. 양방향 편향에서는 모든 키가 -s_h * |i - j|를 받는다.",
        "causal=False이면 마스크를 빼고 절대 거리 |i - j|를 써라.",
    ),
)
_MASKS_SELF = BIAS_MISTAKES.declare(
    "masks_self",
    "the key at the query's own position is masked as well as the future ones: the first "
    "query sees no key at all, and its softmax is NaN.",
    "mask only keys after the query, j > p_i (torch.triu(..., diagonal=1), not diagonal=0).",
    ko=(
        "미래의 키뿐 아니라 쿼리 자신의 위치에 있는 키도 마스크되었다. 첫 쿼리가 키를 하나도 보지 못해 소프트맥스가 NaN이다.",
        "쿼리 뒤의 키, j > p_i만 마스크하라(diagonal=0이 아니라 torch.triu(..., diagonal=1)).",
    ),
)
_BIAS_VALUES = BIAS_MISTAKES.declare(
    "wrong_values",
    "at head {head}, query {query} (position {position}), key {key} the bias is {found} where "
    "the reference is {wanted} (each row compared up to a constant).",
    _BIAS_CONTRACT,
    ko=(
        "헤드 {head}, 쿼리 {query}(위치 {position}), 키 {key}에서 편향이 {found}인데, 기준값은 {wanted}이다(각 행은 상수 차이까지 비교한다).",
        _BIAS_CONTRACT_KO,
    ),
)

#: ``(num_heads, q_len, k_len)`` of each call.
_BIAS_PROBES = ((8, 6, 6), (4, 5, 5), (12, 7, 7), (8, 1, 9), (8, 3, 10))
#: How far below the row's largest entry a masked entry must be (its softmax weight, e**-5000,
#: is 0 in every dtype), so that a -1e4 mask passes under a row constant.
_MASK_GAP = 5e3


@BIAS_MISTAKES.attach
def check_alibi_bias(bias: Callable[[int, int, int], object], *, causal: bool = True) -> None:
    r"""Check an ALiBi bias builder against the paper (and :func:`pe_lib.alibi.alibi_bias`).

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
    for n, q_len, k_len in _BIAS_PROBES:
        call = f"bias({n}, {q_len}, {k_len})"
        result = call_student(_BIAS_EXCEPTION, call, bias, n, q_len, k_len)
        try:
            values, _, eps = as_float64(result)
        except NotAnArray as error:
            raise _BIAS_TYPE.fail(call=call, what=str(error)) from None
        wanted = (n, q_len, k_len)
        if values.dim() == 4 and values.shape[0] == 1:
            values = values[0]
        if tuple(values.shape) != wanted:
            raise _BIAS_SHAPE.fail(call=call, shape=tuple(values.shape), wanted=wanted)
        _check_bias(values, eps, n, q_len, k_len, causal, say(f"For {call}, ", f"{call}에서 "))


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
    if q_len == k_len and student.matches(causal_reference.transpose(-1, -2)):
        raise _TRANSPOSED.fail(where)
    if student.matches(_masked_like(-reference, reference)):
        raise _SIGN.fail(where)
    if q_len < k_len:
        from_zero = alibi_bias(n, k_len, k_len, causal=causal, dtype=torch.float64)[:, :q_len]
        if student.matches(from_zero):
            raise _QUERY_OFFSET.fail(
                where,
                q_len=q_len,
                k_len=k_len,
                found=_span(0, q_len),
                wanted=_span(k_len - q_len, q_len),
            )
    slopes = _fitted_slopes(student, reference, n)
    if slopes is not None:
        scaled = _masked_like(
            reference / alibi_slopes(n)[:, None, None] * slopes[:, None, None], reference
        )
        if student.matches(scaled):
            wanted = alibi_slopes(n)
            wrong = (slopes - wanted).abs() > 8.0 * student.eps * wanted
            head = int(wrong.nonzero()[0]) if bool(wrong.any()) else 0  # the first wrong one
            raise _SLOPES.fail(
                where,
                head=head + 1,
                found=f"{float(slopes[head]):.6g}",
                wanted=f"{float(wanted[head]):.6g}",
                n=n,
            )
    finite = torch.isfinite(causal_reference)
    if causal:
        future = student.visible & ~finite
        if bool(future.any()) and student.rows_agree(reference, finite):
            h, i, j = (int(v) for v in future.nonzero()[0])
            raise _NO_MASK.fail(
                where, value=f"{float(values[h, i, j]):.4g}", head=h, query=i, key=j
            )
    elif student.matches(causal_reference):
        raise _MASKED.fail(where)
    own = torch.zeros_like(finite)
    own[:, torch.arange(q_len), torch.arange(k_len - q_len, k_len)] = True
    if student.matches(torch.where(own, -torch.inf, reference)):
        raise _MASKS_SELF.fail(where)
    raise _first_difference(student, reference, q_len, k_len, where)


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
        unmasked = say(" (not masked)", "(마스크되지 않음)")
        found = f"{float(shifted[h, i, j]):.6g}" + ("" if finite[h, i, j] else unmasked)
    else:
        top = float(torch.where(torch.isfinite(values[h, i]), values[h, i], -torch.inf).max())
        found = say(
            f"{float(values[h, i, j]):.4g}, masked (the row's largest entry is {top:.4g})",
            f"{float(values[h, i, j]):.4g}, 마스크됨(그 행의 가장 큰 성분은 {top:.4g})",
        )
    return _BIAS_VALUES.fail(
        where,
        head=h,
        query=i,
        position=int(position[i]),
        key=j,
        found=found,
        wanted=f"{float(reference[h, i, j]):.6g}",
    )
