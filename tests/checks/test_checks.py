"""Tests of pe_lib.checks: every diagnosis against a planted wrong implementation.

The implementations below are written the way a student would write them (small numpy or
torch functions), independently of pe_lib; each wrong one plants exactly one mistake.
"""

from __future__ import annotations

import copy
import math
import pickle
import time

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

import pe_lib
from pe_lib.checks import (
    MODULE_MISTAKES,
    RELATIVE_SHIFT_MISTAKES,
    TABLE_MISTAKES,
    CheckFailed,
    check_positional_encoding_module,
    check_relative_shift,
    check_sinusoidal_table,
)


def fails_with(mistake: str, codes: tuple[str, ...], check, *args, **kwargs) -> CheckFailed:
    """Run a checker that must fail with ``mistake``; return the exception."""
    assert mistake in codes
    with pytest.raises(CheckFailed) as info:
        check(*args, **kwargs)
    assert info.value.mistake == mistake, str(info.value)
    assert "Fix" in str(info.value), "every message says how to fix the mistake"
    return info.value


# --------------------------------------------------------------------------------------------
# Students' tables
# --------------------------------------------------------------------------------------------


def student_table(num_positions, d_model, base=10000.0, start=0, dtype=np.float64):
    """A correct table, the numpy way: pos / base ** (2i / d), sines even, cosines odd."""
    pos = np.arange(start, start + num_positions)[:, None]
    two_i = np.arange(0, d_model, 2)
    angle = pos / base ** (two_i / d_model)
    pe = np.zeros((num_positions, d_model))
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle[:, : d_model // 2])
    return pe.astype(dtype)


def article_table_torch(num_positions, d_model, dtype=torch.float32):
    """The article's construction: exp/log frequencies, angles in ``dtype`` (odd d allowed)."""
    pe = torch.zeros(num_positions, d_model, dtype=dtype)
    pos = torch.arange(num_positions, dtype=dtype).unsqueeze(1)
    div = torch.exp(torch.arange(0, d_model, 2, dtype=dtype) * -(math.log(10000.0) / d_model))
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div[: d_model // 2])
    return pe


def loop_table(num_positions, d_model, exponent):
    """The loop form: ``exponent(j, d)`` gives the exponent of column j."""
    pe = np.zeros((num_positions, d_model))
    for pos in range(num_positions):
        for j in range(d_model):
            angle = pos / 10000.0 ** exponent(j, d_model)
            pe[pos, j] = math.sin(angle) if j % 2 == 0 else math.cos(angle)
    return pe


def paper_angles(pos, d):
    """pos / 10000^(2i/d) for a column of positions, one column per sine/cosine pair."""
    return pos / 10000.0 ** (np.arange(0, d, 2) / d)


def interleave(angle, d, first=np.sin, second=np.cos):
    """A table with ``first(angle)`` in the even columns and ``second(angle)`` in the odd ones."""
    pe = np.zeros((angle.shape[0], d))
    pe[:, 0::2] = first(angle)
    pe[:, 1::2] = second(angle[:, : d // 2])
    return pe


def swapped_table(n, d):
    return interleave(paper_angles(np.arange(n)[:, None], d), d, first=np.cos, second=np.sin)


def concat_table(n, d):
    angle = paper_angles(np.arange(n)[:, None], d)
    return np.concatenate([np.sin(angle), np.cos(angle)], axis=1)


def tensor2tensor_table(n, d):
    pos = np.arange(n)[:, None]
    inv_timescales = np.exp(np.arange(d // 2) * -(math.log(10000.0) / (d // 2 - 1)))
    angle = pos * inv_timescales
    return np.concatenate([np.sin(angle), np.cos(angle)], axis=1)


def degrees_table(n, d):
    return interleave(np.deg2rad(paper_angles(np.arange(n)[:, None], d)), d)


def radians_to_degrees_table(n, d):
    return interleave(np.degrees(paper_angles(np.arange(n)[:, None], d)), d)


def two_pi_table(n, d):
    return interleave(2 * np.pi * paper_angles(np.arange(n)[:, None], d), d)


def from_one_table(n, d):
    return interleave(paper_angles(np.arange(1, n + 1)[:, None], d), d)  # positions from 1


def float16_angles_table(n, d):
    """Angles formed in float16, then the table stored in float32."""
    pos = torch.arange(n, dtype=torch.float16)[:, None]
    div = torch.exp(torch.arange(0, d, 2, dtype=torch.float16) * -(math.log(10000.0) / d))
    pe = torch.zeros(n, d, dtype=torch.float16)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)
    return pe.float()


# --------------------------------------------------------------------------------------------
# check_sinusoidal_table: correct tables pass
# --------------------------------------------------------------------------------------------

SHAPES = [(1, 1), (1, 2), (2, 1), (2, 2), (1, 7), (50, 16), (33, 17), (64, 3), (7, 64)]
NUMPY_DTYPES = [np.float16, np.float32, np.float64]
TORCH_DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
@pytest.mark.parametrize("start", [0, 5])
def test_correct_numpy_tables_pass(shape, dtype, start):
    check_sinusoidal_table(student_table(*shape, start=start, dtype=dtype), start=start)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", TORCH_DTYPES)
def test_correct_torch_tables_pass(shape, dtype):
    # Angles in float32 for float32 and narrower tables, in float64 for float64 ones.
    angle_dtype = torch.float64 if dtype == torch.float64 else torch.float32
    check_sinusoidal_table(article_table_torch(*shape, dtype=angle_dtype).to(dtype))
    check_sinusoidal_table(pe_lib.sinusoidal_table(*shape, dtype=dtype))


@pytest.mark.parametrize("base", [100.0, 500.0, 1e6])
def test_correct_table_with_another_base_passes(base):
    check_sinusoidal_table(student_table(40, 12, base=base), base=base)
    check_sinusoidal_table(student_table(40, 12, base=base).astype(np.float16), base=base)


def test_float32_angles_pass_for_long_float32_tables():
    """The article's float32 construction is within the float32 tolerance at 5000 positions."""
    check_sinusoidal_table(article_table_torch(5000, 64))


def test_sine_column_index_shared_by_the_pair_is_correct():
    """base ** (j / d) with j = 2i, the sine's column, used for both columns: the formula."""

    def exponent(j, d):
        return (j - j % 2) / d

    check_sinusoidal_table(loop_table(30, 10, exponent))


@given(
    num_positions=st.integers(1, 40),
    d_model=st.integers(1, 24),
    start=st.integers(0, 3000),
    base=st.sampled_from([10.0, 1000.0, 10000.0, 123456.0]),
    dtype=st.sampled_from(TORCH_DTYPES),
)
def test_a_table_equal_to_the_correct_one_always_passes(num_positions, d_model, start, base, dtype):
    table = pe_lib.sinusoidal_table(num_positions, d_model, base=base, start=start, dtype=dtype)
    check_sinusoidal_table(table, base=base, start=start)


def test_large_table_is_checked_quickly():
    table = pe_lib.sinusoidal_table(5000, 512)
    wrong = table.clone()
    wrong[:, 0::2], wrong[:, 1::2] = table[:, 1::2], table[:, 0::2]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        began = time.process_time()
        check_sinusoidal_table(table)
        passing = time.process_time() - began
        began = time.process_time()
        fails_with("swapped_sin_cos", TABLE_MISTAKES, check_sinusoidal_table, wrong)
        failing = time.process_time() - began
    finally:
        torch.set_num_threads(threads)
    print(f"5000 x 512: pass {passing:.3f} s, diagnosis {failing:.3f} s (CPU time)")
    assert passing < 0.5
    assert failing < 1.0


# --------------------------------------------------------------------------------------------
# check_sinusoidal_table: each mistake is named
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("d_model", [8, 16, 9])
def test_swapped_sin_cos(d_model):
    table = swapped_table(30, d_model)[:, :d_model] if d_model % 2 == 0 else None
    if table is None:  # odd d_model: the student slices the sines to fit the odd columns
        pos = np.arange(30)[:, None]
        angle = pos / 10000.0 ** (np.arange(0, d_model, 2) / d_model)
        table = np.zeros((30, d_model))
        table[:, 0::2] = np.cos(angle)
        table[:, 1::2] = np.sin(angle[:, : d_model // 2])
    error = fails_with("swapped_sin_cos", TABLE_MISTAKES, check_sinusoidal_table, table)
    assert "swapped" in str(error)


EXPONENT_MISTAKES = {
    "pair index without the 2": lambda j, d: (j // 2) / d,
    "own column index per column": lambda j, d: j / d,
    "2j with j the column index": lambda j, d: 2 * j / d,
    "2j with j the sine's column": lambda j, d: 2 * (j - j % 2) / d,
    "pair index from 1": lambda j, d: 2 * (j // 2 + 1) / d,
}


@pytest.mark.parametrize("variant", sorted(EXPONENT_MISTAKES))
@pytest.mark.parametrize("d_model", [6, 16])
def test_exponent_variants(variant, d_model):
    table = loop_table(40, d_model, EXPONENT_MISTAKES[variant])
    error = fails_with("exponent", TABLE_MISTAKES, check_sinusoidal_table, table)
    assert "-2i / d_model" in str(error)


def test_exponent_with_the_wrong_sign():
    pos = np.arange(20)[:, None]
    angle = pos * 10000.0 ** (np.arange(0, 8, 2) / 8)  # multiplied instead of divided
    table = np.zeros((20, 8))
    table[:, 0::2], table[:, 1::2] = np.sin(angle), np.cos(angle)
    error = fails_with("exponent", TABLE_MISTAKES, check_sinusoidal_table, table)
    assert "sign" in str(error)


@pytest.mark.parametrize("make", [concat_table, tensor2tensor_table])
def test_concatenated_layout(make):
    error = fails_with("layout", TABLE_MISTAKES, check_sinusoidal_table, make(30, 16))
    assert "interleave" in str(error)


def test_cos_then_sin_concatenated():
    table = concat_table(30, 16)
    table = np.concatenate([table[:, 8:], table[:, :8]], axis=1)
    fails_with("layout", TABLE_MISTAKES, check_sinusoidal_table, table)


def test_positions_counted_from_one():
    error = fails_with(
        "position_offset", TABLE_MISTAKES, check_sinusoidal_table, from_one_table(30, 16)
    )
    assert "+1" in str(error)
    assert "np.arange(num_positions)" in str(error)


def test_start_ignored():
    error = fails_with(
        "position_offset", TABLE_MISTAKES, check_sinusoidal_table, student_table(30, 16), start=100
    )
    assert "-100" in str(error)


@pytest.mark.parametrize("offset", [17, -3])
def test_any_constant_position_offset_is_estimated(offset):
    table = student_table(30, 16, start=50 + offset)
    error = fails_with("position_offset", TABLE_MISTAKES, check_sinusoidal_table, table, start=50)
    assert f"{offset:+d}" in str(error)


def test_single_row_off_by_one():
    fails_with(
        "position_offset", TABLE_MISTAKES, check_sinusoidal_table, student_table(1, 6, start=1)
    )


@pytest.mark.parametrize("used", [1000.0, 2500.0, 40000.0])
def test_another_base_is_named_and_estimated(used):
    table = student_table(60, 16, base=used)
    error = fails_with("base", TABLE_MISTAKES, check_sinusoidal_table, table)
    assert f"{used:.0f}" in str(error)


def test_default_base_used_where_another_was_asked():
    error = fails_with(
        "base", TABLE_MISTAKES, check_sinusoidal_table, student_table(60, 16), base=500.0
    )
    assert "10000" in str(error) and "500" in str(error)


def test_paper_base_where_its_square_root_was_asked_is_base_not_exponent():
    """10000 ** (2i/d) is also 100 ** (4i/d): forgetting to pass base is the likelier mistake."""
    error = fails_with(
        "base", TABLE_MISTAKES, check_sinusoidal_table, student_table(40, 16), base=100.0
    )
    assert "exponent off by a factor of 2" in str(error)


@pytest.mark.parametrize("dtype", TORCH_DTYPES)
def test_mistakes_are_named_in_every_dtype(dtype):
    swapped = torch.from_numpy(swapped_table(40, 16)).to(dtype)
    fails_with("swapped_sin_cos", TABLE_MISTAKES, check_sinusoidal_table, swapped)
    from_one = torch.from_numpy(from_one_table(40, 16)).to(dtype)
    fails_with("position_offset", TABLE_MISTAKES, check_sinusoidal_table, from_one)
    concatenated = torch.from_numpy(concat_table(40, 16)).to(dtype)
    fails_with("layout", TABLE_MISTAKES, check_sinusoidal_table, concatenated)


@pytest.mark.parametrize("shape", [(30, 16), (16, 16), (3, 8)])
def test_transposed(shape):
    table = student_table(*shape).T
    error = fails_with("transposed", TABLE_MISTAKES, check_sinusoidal_table, table)
    assert "table.T" in str(error)


def test_transposed_torch_float16():
    table = pe_lib.sinusoidal_table(40, 8, dtype=torch.float16).T
    fails_with("transposed", TABLE_MISTAKES, check_sinusoidal_table, table)


@pytest.mark.parametrize("make", [degrees_table, radians_to_degrees_table])
def test_degrees(make):
    error = fails_with("degrees", TABLE_MISTAKES, check_sinusoidal_table, make(40, 16))
    assert "radians" in str(error)


def test_two_pi_factor():
    fails_with("angle_scale", TABLE_MISTAKES, check_sinusoidal_table, two_pi_table(40, 16))


def test_float16_sized_error_in_a_float32_table_is_precision():
    table = student_table(80, 32).astype(np.float16).astype(np.float32)
    error = fails_with("precision", TABLE_MISTAKES, check_sinusoidal_table, table)
    assert "float16" in str(error)
    check_sinusoidal_table(table.astype(np.float16))  # the same values, as float16: right


def test_bfloat16_sized_error_in_a_float64_table_is_precision():
    table = pe_lib.sinusoidal_table(80, 32, dtype=torch.bfloat16).double()
    error = fails_with("precision", TABLE_MISTAKES, check_sinusoidal_table, table)
    assert "bfloat16" in str(error)


def test_float32_angles_in_a_float64_table_is_precision():
    error = fails_with(
        "precision", TABLE_MISTAKES, check_sinusoidal_table, article_table_torch(2000, 16).double()
    )
    assert "float32" in str(error)


def test_float16_angles_is_precision():
    fails_with("precision", TABLE_MISTAKES, check_sinusoidal_table, float16_angles_table(100, 16))


def test_wrong_values_names_the_largest_error():
    table = student_table(30, 16, start=7)
    table[12, 5] += 0.25
    table[3, 2] -= 0.05
    error = fails_with("wrong_values", TABLE_MISTAKES, check_sinusoidal_table, table, start=7)
    message = str(error)
    assert "position 19, dimension 5" in message  # start 7 + row 12
    assert f"{student_table(30, 16, start=7)[12, 5]:.6f}" in message
    assert "2 of 480 values are wrong" in message


def test_random_table_is_wrong_values():
    table = np.random.default_rng(0).uniform(-1, 1, size=(20, 8))
    fails_with("wrong_values", TABLE_MISTAKES, check_sinusoidal_table, table)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_not_finite(bad):
    table = student_table(10, 4)
    table[4, 1] = bad
    error = fails_with("not_finite", TABLE_MISTAKES, check_sinusoidal_table, table)
    assert "position 4, dimension 1" in str(error)


@pytest.mark.parametrize(
    "table", [np.zeros(8), np.zeros((1, 10, 8)), np.zeros((2, 3, 4)), np.zeros((0, 8))]
)
def test_shape(table):
    with pytest.raises(CheckFailed) as info:
        check_sinusoidal_table(table)
    assert info.value.mistake == "shape"


@pytest.mark.parametrize(
    "table",
    [
        [[0.0, 1.0]],
        np.zeros((2, 2), dtype=np.int64),
        torch.zeros(2, 2, dtype=torch.int32),
        np.zeros((2, 2), dtype=np.complex128),
        "table",
    ],
)
def test_type_errors(table):
    with pytest.raises(TypeError, match="table"):
        check_sinusoidal_table(table)


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [({"base": 1.0}, ValueError), ({"start": -1}, ValueError), ({"start": 1.5}, TypeError)],
)
def test_bad_arguments(kwargs, error):
    with pytest.raises(error):
        check_sinusoidal_table(student_table(4, 4), **kwargs)


def test_input_is_not_modified():
    table = torch.tensor(student_table(10, 6), requires_grad=True)
    before = table.detach().clone()
    check_sinusoidal_table(table)
    assert torch.equal(table.detach(), before)


# --------------------------------------------------------------------------------------------
# CheckFailed
# --------------------------------------------------------------------------------------------


def test_check_failed_is_an_assertion_error_with_a_mistake():
    error = CheckFailed("layout", "sin | cos is concatenated")
    assert isinstance(error, AssertionError)
    assert error.mistake == "layout"
    assert str(error) == "sin | cos is concatenated"
    for copied in (pickle.loads(pickle.dumps(error)), copy.copy(error)):
        assert (copied.mistake, str(copied)) == ("layout", "sin | cos is concatenated")


# --------------------------------------------------------------------------------------------
# check_positional_encoding_module
# --------------------------------------------------------------------------------------------


class ArticlePositionalEncoding(nn.Module):
    """The article's module, re-implemented: a float32 table of max_len rows."""

    def __init__(self, d_model: int, max_len: int = 5000, dropout: float = 0.1):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        pe = torch.zeros(max_len, d_model)
        pos = torch.arange(max_len).unsqueeze(1)
        div = torch.exp(torch.arange(0, d_model, 2) * -(math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div)
        self.register_buffer("pe", pe)

    def forward(self, x):
        x = x + self.pe[: x.size(1)]
        return self.dropout(x)


def sinusoid(seq_len, d_model, base=10000.0):
    pos = torch.arange(seq_len, dtype=torch.float64)[:, None]
    angle = pos / base ** (torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    pe = torch.zeros(seq_len, d_model, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(angle), torch.cos(angle)
    return pe


class OnTheFly(nn.Module):
    """A correct student module: the table computed for each length, cast to x's dtype."""

    def __init__(self, d_model, dropout=0.1):
        super().__init__()
        self.d_model = d_model
        self.dropout = nn.Dropout(dropout)

    def table(self, seq_len):
        return sinusoid(seq_len, self.d_model)

    def forward(self, x):
        return self.dropout(x + self.table(x.size(1)).to(x.dtype))


class Multiplied(OnTheFly):
    def forward(self, x):
        return self.dropout(x * self.table(x.size(1)).to(x.dtype))


class ScaledByRootD(OnTheFly):
    def forward(self, x):
        return self.dropout(x * math.sqrt(self.d_model) + self.table(x.size(1)).to(x.dtype))


class ReturnsTable(OnTheFly):
    def forward(self, x):
        return self.dropout(self.table(x.size(1)).to(x.dtype).expand_as(x).clone())


class ForgetsToAdd(OnTheFly):
    def forward(self, x):
        y = x + self.table(x.size(1)).to(x.dtype)  # noqa: F841 (the planted mistake)
        return self.dropout(x)


class SequenceFirst(OnTheFly):
    """The PyTorch tutorial's layout: positions along dim 0."""

    def forward(self, x):
        return self.dropout(x + self.table(x.size(0)).to(x.dtype)[:, None, :])


class WrongBase(OnTheFly):
    def table(self, seq_len):
        return sinusoid(seq_len, self.d_model, base=1000.0)


class DropoutAlways(OnTheFly):
    def forward(self, x):
        return nn.functional.dropout(x + self.table(x.size(1)).to(x.dtype), 0.1, training=True)


class DropoutUnused(OnTheFly):
    def forward(self, x):
        return x + self.table(x.size(1)).to(x.dtype)


class DropoutBeforeAdding(OnTheFly):
    def forward(self, x):
        return self.dropout(x) + self.table(x.size(1)).to(x.dtype)


class NoDropoutAtAll(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.d_model = d_model

    def forward(self, x):
        return x + sinusoid(x.size(1), self.d_model).to(x.dtype)


class InPlace(OnTheFly):
    def forward(self, x):
        x += self.table(x.size(1)).to(x.dtype)
        return self.dropout(x)


class ReturnsTableOnly(OnTheFly):
    def forward(self, x):
        return self.table(x.size(1)).to(x.dtype)


class Raises(OnTheFly):
    def forward(self, x):
        raise RuntimeError("not implemented yet")


class TableAsParameter(nn.Module):
    def __init__(self, d_model, max_len=5000):
        super().__init__()
        self.pe = nn.Parameter(sinusoid(max_len, d_model).float())

    def forward(self, x):
        return x + self.pe[: x.size(1)]


class TableAsAttribute(nn.Module):
    def __init__(self, d_model, max_len=5000):
        super().__init__()
        self.pe = sinusoid(max_len, d_model).float()  # not registered

    def forward(self, x):
        return x + self.pe[: x.size(1)]


class FrozenSinusoidTable(nn.Module):
    """A buffer table, fixed, that refuses lengths beyond max_len."""

    def __init__(self, d_model, max_len=64):
        super().__init__()
        self.max_len = max_len
        self.register_buffer("pe", sinusoid(max_len, d_model))

    def forward(self, x):
        if x.size(1) > self.max_len:
            raise ValueError(f"seq_len {x.size(1)} > max_len {self.max_len}")
        return x + self.pe[: x.size(1)].to(x.dtype)


class FixedTableNoDtypeCast(OnTheFly):
    def forward(self, x):
        return self.dropout(x + self.table(x.size(1)).float())


class KeywordOnly(OnTheFly):
    def __init__(self, *, d_model, dropout=0.0):
        super().__init__(d_model, dropout)


def test_pe_lib_sinusoidal_module_passes():
    check_positional_encoding_module(pe_lib.SinusoidalPositionalEncoding, d_model=16)
    check_positional_encoding_module(pe_lib.PositionalEncoding(24, max_len=50))
    check_positional_encoding_module(pe_lib.SinusoidalPositionalEncoding(9, dropout=0.0))


@pytest.mark.parametrize("cls", [OnTheFly, NoDropoutAtAll, KeywordOnly])
def test_correct_student_modules_pass(cls):
    check_positional_encoding_module(cls, d_model=8)


def test_learned_encoding_fails_as_trainable_before_fixed_length():
    error = fails_with(
        "trainable_table",
        MODULE_MISTAKES,
        check_positional_encoding_module,
        pe_lib.LearnedPositionalEncoding,
    )
    assert "'weight'" in str(error) and "register_buffer" in str(error)


def test_article_module_fails_fixed_length():
    error = fails_with(
        "fixed_length",
        MODULE_MISTAKES,
        check_positional_encoding_module,
        ArticlePositionalEncoding,
        d_model=8,
    )
    assert "5016" in str(error) and "on the fly" in str(error)
    assert isinstance(error.__cause__, RuntimeError)


def test_small_max_len_is_probed_beyond_it():
    error = fails_with(
        "fixed_length",
        MODULE_MISTAKES,
        check_positional_encoding_module,
        FrozenSinusoidTable(8),
        d_model=8,
    )
    assert "80" in str(error)  # max_len 64 + 16


PLANTED_MODULES = [
    (Multiplied, "not_added", "x * PE"),
    (ScaledByRootD, "not_added", "sqrt(d_model)"),
    (ReturnsTable, "not_added", "table itself"),
    (ForgetsToAdd, "table_not_added", "never added"),
    (SequenceFirst, "position_axis", "(seq_len, batch, d_model)"),
    (WrongBase, "wrong_table", "'base'"),
    (DropoutAlways, "dropout_in_eval", "eval"),
    (DropoutUnused, "no_dropout_in_train", "self.dropout(x + pe)"),
    (DropoutBeforeAdding, "dropout_not_on_sum", "dropout(x + PE)"),
    (InPlace, "in_place", "x = x + pe"),
    (ReturnsTableOnly, "shape", "add it to x"),
    (Raises, "exception", "not implemented yet"),
    (TableAsParameter, "trainable_table", "'pe'"),
    (TableAsAttribute, "not_buffer", "register_buffer"),
    (FixedTableNoDtypeCast, "dtype", "x.dtype"),
]


@pytest.mark.parametrize(
    ("cls", "mistake", "words"), PLANTED_MODULES, ids=lambda v: getattr(v, "__name__", None)
)
def test_planted_module_mistakes(cls, mistake, words):
    error = fails_with(mistake, MODULE_MISTAKES, check_positional_encoding_module, cls, d_model=16)
    assert words in str(error)


def test_training_modes_parameters_and_rng_are_left_alone():
    module = pe_lib.LearnedPositionalEncoding(8, max_len=32)
    module.train()
    module.dropout.eval()  # mixed modes, restored exactly
    weight = module.weight.detach().clone()
    rng_state = torch.get_rng_state()
    with pytest.raises(CheckFailed):
        check_positional_encoding_module(module)
    assert module.training and not module.dropout.training
    assert torch.equal(module.weight, weight)
    assert torch.equal(torch.get_rng_state(), rng_state)


def test_module_argument_errors():
    with pytest.raises(TypeError, match="module_or_class"):
        check_positional_encoding_module(lambda x: x)
    with pytest.raises(TypeError, match="module_or_class"):
        check_positional_encoding_module(int)
    with pytest.raises(ValueError, match="d_model"):
        check_positional_encoding_module(nn.Identity())
    with pytest.raises(ValueError, match="d_model"):
        check_positional_encoding_module(pe_lib.SinusoidalPositionalEncoding(8), d_model=16)


def test_exception_in_constructor_is_chained():
    class Broken(nn.Module):
        def __init__(self, d_model):
            super().__init__()
            raise ZeroDivisionError("oops")

    error = fails_with("exception", MODULE_MISTAKES, check_positional_encoding_module, Broken)
    assert isinstance(error.__cause__, ZeroDivisionError)


# --------------------------------------------------------------------------------------------
# check_relative_shift
# --------------------------------------------------------------------------------------------


def student_shift(k, d_model, base=10000.0):
    """M_k built block by block: [[cos kw, sin kw], [-sin kw, cos kw]] on rows 2i, 2i+1."""
    m = np.zeros((d_model, d_model))
    for i in range(d_model // 2):
        w = 1.0 / base ** (2 * i / d_model)
        c, s = math.cos(k * w), math.sin(k * w)
        m[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = [[c, s], [-s, c]]
    return m


def test_correct_shift_builders_pass():
    check_relative_shift(student_shift)
    check_relative_shift(lambda k, d: torch.tensor(student_shift(k, d), dtype=torch.float32))
    check_relative_shift(lambda k, d: student_shift(k, d, base=500.0), base=500.0)


def sines_flipped(k, d):
    m = student_shift(k, d)
    for i in range(d // 2):
        m[2 * i, 2 * i + 1] *= -1
        m[2 * i + 1, 2 * i] *= -1
    return m


def same_sign_sines(k, d):
    m = student_shift(k, d)
    for i in range(d // 2):
        m[2 * i + 1, 2 * i] *= -1
    return m


def concat_layout(k, d):
    h = d // 2
    w = 10000.0 ** (-2 * np.arange(h) / d)
    c, s = np.diag(np.cos(k * w)), np.diag(np.sin(k * w))
    return np.block([[c, s], [-s, c]])


def wrong_frequencies(k, d):
    m = np.zeros((d, d))
    for i in range(d // 2):
        w = 1.0 / 10000.0 ** (i / d)  # base ** (i / d): the exponent misses its 2
        c, s = math.cos(k * w), math.sin(k * w)
        m[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = [[c, s], [-s, c]]
    return m


def raises_for_negative_k(k, d):
    if k < 0:
        raise ValueError("k must be >= 0")
    return student_shift(k, d)


PLANTED_SHIFTS = [
    (lambda k, d: student_shift(k, d).T, "transposed", "k=1, d_model=2"),
    (lambda k, d: student_shift(-k, d), "transposed", "M_(-k)"),
    (sines_flipped, "transposed", "both sines"),
    (same_sign_sines, "sign", "same sign"),
    (lambda k, d: -student_shift(k, d), "sign", "k=0, d_model=2"),
    (concat_layout, "layout", "concatenated"),
    (wrong_frequencies, "wrong_values", "block 1"),
    (lambda k, d: student_shift(k + 1, d), "wrong_values", "k=0"),
    (lambda k, d: np.eye(d), "not_shift", "identity"),
    (lambda k, d: np.ones((d, d)), "not_shift", "k=0, d_model=2"),
    (lambda k, d: student_shift(k, d)[:, : d // 2], "wrong_shape", "(2, 1)"),
    (lambda k, d: student_shift(k, d).tolist(), "wrong_type", "list"),
    (lambda k, d: student_shift(k, d) * np.nan, "not_finite", "NaN"),
    (raises_for_negative_k, "exception", "build(-1, 2)"),
]


@pytest.mark.parametrize(("build", "mistake", "words"), PLANTED_SHIFTS)
def test_planted_shift_mistakes(build, mistake, words):
    error = fails_with(mistake, RELATIVE_SHIFT_MISTAKES, check_relative_shift, build)
    assert words in str(error)
    if mistake == "exception":
        assert isinstance(error.__cause__, ValueError)


def test_wrong_frequencies_are_caught_for_larger_d_model():
    """For d_model = 2 the first block is right whatever the exponent: d_model = 4 catches it."""
    error = fails_with(
        "wrong_values", RELATIVE_SHIFT_MISTAKES, check_relative_shift, wrong_frequencies
    )
    assert "d_model=4" in str(error)


def test_build_must_be_callable():
    with pytest.raises(TypeError, match="build"):
        check_relative_shift(np.eye(4))
