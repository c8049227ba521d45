"""check_alibi_slopes and check_alibi_bias: correct work passes, each planted mistake is named.

The slopes and biases are written here as students write them (the authors' ``get_slopes``
retyped, closed forms, the authors' ``s_h * j`` bias, masks of ``-inf``, ``finfo.min`` or
``-1e9``), independently of pe_lib; each wrong one plants one mistake. Every code of both
catalogues has a planted case, and every declared variant is the diagnosis of one.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from checker_failures import failing_with
from hypothesis import given
from hypothesis import strategies as st

from pe_lib.checks import CheckFailed, check_alibi_bias, check_alibi_slopes
from pe_lib.checks.alibi import BIAS_MISTAKES, SLOPES_MISTAKES  # the declarations
from pe_lib.encodings.alibi import alibi_bias, alibi_slopes


def get_slopes(n):
    """The authors' rule (Press et al.'s fairseq get_slopes), retyped."""

    def power_of_two(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start**i for i in range(n)]

    if math.log2(n).is_integer():
        return power_of_two(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_two(closest) + get_slopes(2 * closest)[0::2][: n - closest]


def closed_form(n):
    """2 ** (-8h / n0) for the first n0 heads, 2 ** (-8(2k - 1) / (2 n0)) for the rest, numpy."""
    n0 = 1 << (n.bit_length() - 1)
    first = 2.0 ** (-8.0 * np.arange(1, n0 + 1) / n0)
    rest = 2.0 ** (-8.0 * np.arange(1, 2 * (n - n0), 2) / (2 * n0))
    return np.concatenate([first, rest])


def as_column(n):
    """A (n, 1, 1) float32 tensor, ready to broadcast over (n, q_len, k_len)."""
    return torch.tensor(get_slopes(n), dtype=torch.float32)[:, None, None]


CORRECT_SLOPES = [get_slopes, closed_form, as_column, alibi_slopes]


@pytest.mark.parametrize("slopes", CORRECT_SLOPES, ids=lambda f: f.__name__)
def test_correct_slopes_pass(slopes) -> None:
    check_alibi_slopes(slopes)


def geometric(n, first=1):
    return [2 ** (-8 * h / n) for h in range(first, first + n)]


def raises_for_other_counts(n):
    assert math.log2(n).is_integer(), "only powers of two"
    return geometric(n)


def forgets_return(n):
    get_slopes(n)


def one_short(n):
    return get_slopes(n)[1:]


def divided_by_zero(n):
    return torch.tensor(get_slopes(n)) / (n - n)


def negated(n):
    return [-s for s in get_slopes(n)]


def ascending(n):
    return sorted(get_slopes(n))


def sorted_descending(n):
    """Right for powers of two (already descending), sorted for the others."""
    return sorted(get_slopes(n), reverse=True)


def from_zero(n):
    return geometric(n, first=0)


def eight_head_sequence(n):
    return [2.0**-h for h in range(1, n + 1)]


def exponent_without_8(n):
    return [2 ** (-h / n) for h in range(1, n + 1)]


def next_power(n):
    upper = 1 << (n - 1).bit_length()
    return get_slopes(upper)[:n]


def odd_extra_slopes(n):
    if math.log2(n).is_integer():
        return get_slopes(n)
    closest = 2 ** math.floor(math.log2(n))
    return get_slopes(closest) + get_slopes(2 * closest)[1::2][: n - closest]


def repeats_last(n):
    closest = 2 ** math.floor(math.log2(n))
    return get_slopes(closest) + [get_slopes(closest)[-1]] * (n - closest)


# (slopes, mistake, words the message must contain)
PLANTED_SLOPES = [
    (raises_for_other_counts, "exception", ["slopes(3) raised AssertionError"]),
    (forgets_return, "wrong_type", ["a NoneType"]),
    (one_short, "shape", ["7 values", "one slope per head is 8"]),
    (divided_by_zero, "not_finite", ["inf"]),
    (negated, "sign", ["minus sign"]),
    (ascending, "order", ["another order"]),
    (sorted_descending, "order", ["slopes(3)"]),
    (from_zero, "geometric", ["starts at 1"]),
    (
        eight_head_sequence,
        "geometric",
        ["sequence of 8 heads", "For 4 heads the ratio is 2 ** (-8 / 4)"],
    ),
    (exponent_without_8, "geometric", ["for 8 heads", "slope 1 is 0.917"]),
    (geometric, "non_power_of_two", ["2 ** (-8h / 3)", "not a power of two"]),
    (next_power, "non_power_of_two", ["first 3 slopes of 4 heads"]),
    (odd_extra_slopes, "non_power_of_two", ["[1::2]"]),
    (repeats_last, "non_power_of_two", ["right for powers of two but not for 3 heads"]),
]


@pytest.mark.parametrize(
    ("slopes", "mistake", "words"), PLANTED_SLOPES, ids=[f.__name__ for f, _, _ in PLANTED_SLOPES]
)
def test_planted_slope_mistake_is_named(slopes, mistake, words) -> None:
    message = str(failing_with(check_alibi_slopes)(mistake, slopes))
    for word in words:
        assert word in message, message


# --- the bias -----------------------------------------------------------------------------------


def distances(q_len, k_len):
    """p_i - j, (q_len, k_len): the queries are the last q_len of k_len positions."""
    return (torch.arange(q_len) + k_len - q_len)[:, None] - torch.arange(k_len)[None, :]


def slopes_of(n):
    return torch.tensor(get_slopes(n), dtype=torch.float64)[:, None, None]


def penalty(n, q_len, k_len):
    """-s_h (p_i - j), -inf after the query."""
    d = distances(q_len, k_len)
    return (-slopes_of(n) * d).masked_fill(d < 0, float("-inf"))


def authors_form(n, q_len, k_len):
    """The authors' s_h * j, a row constant away from -s_h (p_i - j), with a -inf mask."""
    bias = slopes_of(n) * torch.arange(k_len)[None, None, :]
    return bias.masked_fill(distances(q_len, k_len) < 0, float("-inf")).float()


def finfo_min_mask(n, q_len, k_len):
    d = distances(q_len, k_len)
    bias = (-slopes_of(n) * d).float()
    return bias.masked_fill(d < 0, torch.finfo(torch.float32).min)


def minus_1e9_batched(n, q_len, k_len):
    """(1, n, q_len, k_len), future keys at -1e9, numpy."""
    d = distances(q_len, k_len).numpy()
    bias = -np.array(get_slopes(n))[:, None, None] * d + np.where(d < 0, -1e9, 0.0)
    return bias[None]


def authors_form_minus_1e4(n, q_len, k_len):
    """s_h * j with Hugging Face's old -10000.0 mask added, in float16."""
    bias = slopes_of(n) * torch.arange(k_len)[None, None, :]
    return (bias + (distances(q_len, k_len) < 0) * -10000.0).half()


def loops(n, q_len, k_len):
    s = get_slopes(n)
    out = torch.full((n, q_len, k_len), float("-inf"))
    for h in range(n):
        for i in range(q_len):
            p = i + k_len - q_len
            for j in range(p + 1):
                out[h, i, j] = -s[h] * (p - j)
    return out


def from_full_square(n, q_len, k_len):
    """A function of (n, seq_len) only, checked through its last q_len rows."""
    return penalty(n, k_len, k_len)[:, -q_len:]


CORRECT_BIAS = [
    penalty,
    authors_form,
    authors_form_minus_1e4,
    finfo_min_mask,
    minus_1e9_batched,
    loops,
    from_full_square,
]


@pytest.mark.parametrize("bias", CORRECT_BIAS, ids=lambda f: f.__name__)
def test_correct_biases_pass(bias) -> None:
    check_alibi_bias(bias)


def test_pe_lib_bias_passes_in_each_dtype() -> None:
    for dtype in (torch.float64, torch.float32, torch.bfloat16, torch.float16):
        check_alibi_bias(lambda n, q, k, dtype=dtype: alibi_bias(n, q, k, dtype=dtype))


def test_bidirectional_bias_passes_with_causal_false() -> None:
    check_alibi_bias(lambda n, q, k: -slopes_of(n) * distances(q, k).abs(), causal=False)
    check_alibi_bias(lambda n, q, k: alibi_bias(n, q, k, causal=False), causal=False)


def square_only(n, q_len, k_len):
    assert q_len == k_len, "queries and keys must have the same length"
    return penalty(n, q_len, k_len)


def as_list(n, q_len, k_len):
    return penalty(n, q_len, k_len).tolist()


def first_head_only(n, q_len, k_len):
    return penalty(n, q_len, k_len)[0]


def mask_by_multiplication(n, q_len, k_len):
    d = distances(q_len, k_len)
    return -slopes_of(n) * d.clamp(min=0) + (d < 0) * float("-inf")  # 0 * -inf = nan


def key_major(n, q_len, k_len):
    """distance j - i, masked where it is negative: the transposed matrix."""
    d = torch.arange(k_len)[None, :] - torch.arange(q_len)[:, None]
    return (-slopes_of(n) * d).masked_fill(d < 0, float("-inf"))


def positive_slope(n, q_len, k_len):
    d = distances(q_len, k_len)
    return (slopes_of(n) * d).masked_fill(d < 0, float("-inf"))


def j_minus_i(n, q_len, k_len):
    d = distances(q_len, k_len)
    return (-slopes_of(n) * -d).masked_fill(d < 0, float("-inf"))


def queries_from_zero(n, q_len, k_len):
    d = torch.arange(q_len)[:, None] - torch.arange(k_len)[None, :]
    return (-slopes_of(n) * d).masked_fill(d < 0, float("-inf"))


def eight_head_slopes(n, q_len, k_len):
    d = distances(q_len, k_len)
    s = torch.tensor([2.0**-h for h in range(1, n + 1)], dtype=torch.float64)[:, None, None]
    return (-s * d).masked_fill(d < 0, float("-inf"))


def no_mask(n, q_len, k_len):
    return -slopes_of(n) * distances(q_len, k_len)


def symmetric_no_mask(n, q_len, k_len):
    return -slopes_of(n) * distances(q_len, k_len).abs()


def masks_own_key(n, q_len, k_len):
    d = distances(q_len, k_len)
    return (-slopes_of(n) * d).masked_fill(d <= 0, float("-inf"))


def weak_mask(n, q_len, k_len):
    """Future keys at -100: a far past key (distance 200 at slope 1/2) weighs as much."""
    d = distances(q_len, k_len)
    return (-slopes_of(n) * d).masked_fill(d < 0, -100.0)


def squared_distance(n, q_len, k_len):
    d = distances(q_len, k_len)
    return (-slopes_of(n) * d * d).masked_fill(d < 0, float("-inf"))


# (bias, checker kwargs, mistake, words the message must contain)
PLANTED_BIAS = [
    (square_only, {}, "exception", ["bias(8, 1, 9) raised AssertionError"]),
    (as_list, {}, "wrong_type", ["a list"]),
    (first_head_only, {}, "shape", ["(6, 6)", "(8, 6, 6)"]),
    (mask_by_multiplication, {}, "not_finite", ["NaN"]),
    (key_major, {}, "direction", ["transposed"]),
    (positive_slope, {}, "sign", ["+s_h * (i - j)"]),
    (j_minus_i, {}, "sign", ["j - i"]),
    (queries_from_zero, {}, "query_offset", ["positions 0 instead of the last ones, 8"]),
    (eight_head_slopes, {}, "slopes", ["head 1 falls by 0.5", "is 0.25", "for 4 heads"]),
    (no_mask, {}, "causal_mask", ["not masked", "query 0, key 1"]),
    (symmetric_no_mask, {}, "causal_mask", ["not masked"]),
    (weak_mask, {}, "causal_mask", ["is -100"]),
    (penalty, {"causal": False}, "causal_mask", ["causal=False"]),
    (masks_own_key, {}, "masks_self", ["own position"]),
    (squared_distance, {}, "wrong_values", ["query 2 (position 2), key 0", "-2"]),
]


@pytest.mark.parametrize(
    ("bias", "kwargs", "mistake", "words"),
    PLANTED_BIAS,
    ids=[f"{m}-{f.__name__}" for f, _, m, _ in PLANTED_BIAS],
)
def test_planted_bias_mistake_is_named(bias, kwargs, mistake, words) -> None:
    message = str(failing_with(check_alibi_bias)(mistake, bias, **kwargs))
    for word in words:
        assert word in message, message


def in_dtype(function, dtype):
    """``function`` with its tensor, array or list of floats returned as a ``dtype`` tensor."""

    def cast(*args):
        out = function(*args)
        if isinstance(out, np.ndarray):
            out = torch.from_numpy(out)
        if isinstance(out, list) and all(isinstance(v, float) for v in out):
            out = torch.tensor(out)
        return out.to(dtype) if isinstance(out, torch.Tensor) else out

    return cast


DTYPES = [torch.float32, torch.bfloat16, torch.float16]


@pytest.mark.parametrize("dtype", DTYPES)
def test_correct_work_passes_in_each_dtype(dtype) -> None:
    for slopes in CORRECT_SLOPES:
        check_alibi_slopes(in_dtype(slopes, dtype))
    for bias in CORRECT_BIAS:
        if bias is not authors_form_minus_1e4:  # float16 values: exact only as float16
            check_alibi_bias(in_dtype(bias, dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_planted_mistakes_are_named_in_each_dtype(dtype) -> None:
    for slopes, mistake, _ in PLANTED_SLOPES:
        with pytest.raises(CheckFailed) as info:
            check_alibi_slopes(in_dtype(slopes, dtype))
        assert info.value.mistake == mistake, (slopes.__name__, str(info.value))
    for bias, kwargs, mistake, _ in PLANTED_BIAS:
        with pytest.raises(CheckFailed) as info:
            check_alibi_bias(in_dtype(bias, dtype), **kwargs)
        assert info.value.mistake == mistake, (bias.__name__, str(info.value))


def test_every_mistake_has_a_planted_case() -> None:
    assert {m for _, m, _ in PLANTED_SLOPES} == set(check_alibi_slopes.mistakes)
    assert {m for _, _, m, _ in PLANTED_BIAS} == set(check_alibi_bias.mistakes)


def _messages(checker, cases):
    out = []
    for function, kwargs in cases:
        with pytest.raises(CheckFailed) as info:
            checker(function, **kwargs)
        out.append(str(info.value))
    return out


@pytest.mark.parametrize("which", ["slopes", "bias"])
def test_every_variant_of_a_mistake_is_planted(which) -> None:
    """Each declared record (a mistake may have variants) is the diagnosis of a planted case."""
    if which == "slopes":
        catalogue = SLOPES_MISTAKES
        messages = _messages(check_alibi_slopes, [(f, {}) for f, _, _ in PLANTED_SLOPES])
    else:
        catalogue = BIAS_MISTAKES
        messages = _messages(check_alibi_bias, [(f, kw) for f, kw, _, _ in PLANTED_BIAS])
    for record in catalogue:
        fixed = record.what.split("{")[0]
        assert any(fixed in m and record.how.split("{")[0] in m for m in messages), record


@given(order=st.permutations(range(8)))
def test_any_other_order_of_the_slopes_is_named_order(order) -> None:
    def slopes(n):
        right = get_slopes(n)
        return [right[i] for i in order] if n == 8 else right

    if list(order) == sorted(order):
        check_alibi_slopes(slopes)
        return
    with pytest.raises(CheckFailed) as info:
        check_alibi_slopes(slopes)
    assert info.value.mistake == "order", str(info.value)


@given(
    n=st.sampled_from([3, 5, 6, 7, 12, 20, 24, 40]),
    head=st.integers(0, 39),
    relative=st.floats(1e-6, 0.5),
)
def test_one_wrong_slope_for_a_non_power_of_two_is_named(n, head, relative) -> None:
    head = head % n

    def slopes(m):
        right = get_slopes(m)
        if m == n:
            right[head] *= 1.0 + relative
        return right

    with pytest.raises(CheckFailed) as info:
        check_alibi_slopes(slopes)
    assert info.value.mistake == "non_power_of_two", str(info.value)


@given(k=st.integers(1, 10), slope=st.sampled_from([0.0, -0.25, 2.0]))
def test_a_bias_is_accepted_up_to_a_row_constant_only(k, slope) -> None:
    """Adding c_i = k * i (a constant per row) passes; adding slope * j (per key) does not."""

    def shifted(n, q_len, k_len):
        rows = k * torch.arange(q_len, dtype=torch.float64)[None, :, None]
        keys = slope * torch.arange(k_len, dtype=torch.float64)[None, None, :]
        return penalty(n, q_len, k_len) + rows + keys

    if slope == 0.0:
        check_alibi_bias(shifted)
        return
    with pytest.raises(CheckFailed):
        check_alibi_bias(shifted)


def test_student_errors_are_chained() -> None:
    with pytest.raises(CheckFailed) as info:
        check_alibi_slopes(raises_for_other_counts)
    assert isinstance(info.value.__cause__, AssertionError)


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda: check_alibi_slopes(8), TypeError, ["slopes must be a function", "int"]),
        (lambda: check_alibi_bias([1.0]), TypeError, ["bias must be a function", "list"]),
        (lambda: check_alibi_bias(penalty, causal=1), TypeError, ["causal", "1"]),
        (lambda: check_alibi_bias(penalty, causal="yes"), TypeError, ["causal", "'yes'"]),
    ],
)
def test_bad_arguments_name_the_argument(call, error, words) -> None:
    with pytest.raises(error) as info:
        call()
    for word in words:
        assert word in str(info.value), str(info.value)
