"""check_sinusoidal_table: correct tables pass, and each mistake is named on a planted table.

The tables are written the way a student would write them (small numpy or torch functions),
independently of pe_lib; each wrong one plants exactly one mistake. Every code of the
checker's catalogue has a planted case (see ``test_every_mistake_has_a_planted_case``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
import torch
from checker_failures import failing_with
from hypothesis import given
from hypothesis import strategies as st
from pe_reference import article_table_float32, reference_table

import pe_lib
from pe_lib.checks import CheckFailed, check_sinusoidal_table, set_language

fails_with = failing_with(check_sinusoidal_table)


# Students' tables ----------------------------------------------------------------------------


def student_table(num_positions, d_model, base=10000.0, offset=0, dtype=np.float64):
    """A correct table, the numpy way: pos / base ** (2i / d), sines even, cosines odd."""
    pos = np.arange(offset, offset + num_positions)[:, None]
    angle = pos / base ** (np.arange(0, d_model, 2) / d_model)
    pe = np.zeros((num_positions, d_model))
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle[:, : d_model // 2])
    return pe.astype(dtype)


def article_table(num_positions, d_model, dtype=torch.float32):
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


def paper_angles(pos, d, base=10000.0):
    """pos / base^(2i/d) for a column of positions, one column per sine/cosine pair."""
    return pos / base ** (np.arange(0, d, 2) / d)


def interleave(angle, d, first=np.sin, second=np.cos):
    """A table with ``first(angle)`` in the even columns and ``second(angle)`` in the odd ones."""
    pe = np.zeros((angle.shape[0], d))
    pe[:, 0::2] = first(angle)
    pe[:, 1::2] = second(angle[:, : d // 2])
    return pe


def rows(n):
    return np.arange(n)[:, None]


def concat_table(n, d):
    angle = paper_angles(rows(n), d)
    return np.concatenate([np.sin(angle), np.cos(angle[:, : d // 2])], axis=1)


def cos_then_sin_table(n, d):
    angle = paper_angles(rows(n), d)
    return np.concatenate([np.cos(angle), np.sin(angle)], axis=1)


def tensor2tensor_table(n, d):
    inv_timescales = np.exp(np.arange(d // 2) * -(math.log(10000.0) / (d // 2 - 1)))
    angle = rows(n) * inv_timescales
    return np.concatenate([np.sin(angle), np.cos(angle)], axis=1)


def fairseq_spacing_table(n, d):
    """fairseq's frequencies (SinusoidalPositionalEmbedding.get_embedding), interleaved."""
    inv_timescales = np.exp(np.arange(d // 2) * -(math.log(10000.0) / (d // 2 - 1)))
    return interleave(rows(n) * inv_timescales, d)


def one_column_more_table(n, d):
    """Odd d_model: the table built for d + 1 columns, then its last column dropped."""
    return student_table(n, d + 1)[:, :d]


def angles_in(dtype, n, d):
    """The article's construction with positions, frequencies and angles in ``dtype``."""
    return article_table(n, d, dtype=dtype)


def float16_angles_table(n, d):
    return angles_in(torch.float16, n, d).float()


def bfloat16_angles_table(n, d):
    return angles_in(torch.bfloat16, n, d).float()


def exponent(rule):
    return lambda n, d: loop_table(n, d, rule)


def with_entry_changed(n, d):
    table = student_table(n, d, offset=7)
    table[12, 5] += 0.25
    table[3, 2] -= 0.05
    return table


def with_nan(n, d):
    table = student_table(n, d)
    table[4, 1] = np.nan
    return table


def with_inf(n, d):
    table = student_table(n, d)
    table[4, 1] = np.inf
    return table


# Planted mistakes ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Planted:
    """A table with one mistake, the code it must get, words its message must hold."""

    name: str
    make: Callable[[int, int], object]
    mistake: str
    words: str = ""
    kwargs: tuple[tuple[str, object], ...] = ()
    d_models: tuple[int, ...] = (16, 9)
    num_positions: int = 40


PLANTED = [
    Planted("vector", lambda n, d: np.zeros(d), "shape", "single vector"),
    Planted("batch axis", lambda n, d: student_table(n, d)[None], "shape", "squeeze(0)"),
    Planted("3-D", lambda n, d: np.zeros((2, 3, d)), "shape", "one row per position"),
    Planted("empty", lambda n, d: np.zeros((0, d)), "shape", "empty"),
    Planted("nan", with_nan, "not_finite", "position 4, dimension 1"),
    Planted("inf", with_inf, "not_finite", "position 4, dimension 1"),
    Planted("transposed", lambda n, d: student_table(n, d).T, "transposed", "table.T"),
    Planted(
        "swapped",
        lambda n, d: interleave(paper_angles(rows(n), d), d, np.cos, np.sin),
        "swapped_sin_cos",
        "swapped",
    ),
    Planted("sin | cos", concat_table, "layout", "interleave"),
    Planted("cos | sin", cos_then_sin_table, "layout", "cos | sin", d_models=(16, 8)),
    Planted("tensor2tensor", tensor2tensor_table, "layout", "tensor2tensor", d_models=(16, 8)),
    Planted(
        "d + 1 columns cut", one_column_more_table, "odd_d_model", "d_model + 1", d_models=(9, 33)
    ),
    Planted("i / d", exponent(lambda j, d: (j // 2) / d), "exponent", "misses its factor 2"),
    Planted("j / d per column", exponent(lambda j, d: j / d), "exponent", "its own index j"),
    Planted("2j / d per column", exponent(lambda j, d: 2 * j / d), "exponent", "column index"),
    Planted("2j, j = 2i", exponent(lambda j, d: 2 * (j - j % 2) / d), "exponent", "squares"),
    Planted("i from 1", exponent(lambda j, d: 2 * (j // 2 + 1) / d), "exponent", "starts at 1"),
    Planted(
        "fairseq spacing",
        fairseq_spacing_table,
        "exponent",
        "base ** (-i / (d_model/2 - 1))",
        d_models=(16, 64),
    ),
    Planted(
        "sign",
        lambda n, d: interleave(rows(n) * 10000.0 ** (np.arange(0, d, 2) / d), d),
        "exponent",
        "wrong sign",
    ),
    Planted(
        "deg2rad",
        lambda n, d: interleave(np.deg2rad(paper_angles(rows(n), d)), d),
        "degrees",
        "radians",
    ),
    Planted(
        "degrees",
        lambda n, d: interleave(np.degrees(paper_angles(rows(n), d)), d),
        "degrees",
        "radians",
    ),
    Planted(
        "2 pi",
        lambda n, d: interleave(2 * np.pi * paper_angles(rows(n), d), d),
        "angle_scale",
        "2*pi",
    ),
    Planted(
        "from 1",
        lambda n, d: interleave(paper_angles(rows(n) + 1, d), d),
        "position_offset",
        "np.arange(num_positions)",
    ),
    Planted(
        "offset ignored",
        lambda n, d: student_table(n, d),
        "position_offset",
        "-100",
        kwargs=(("offset", 100),),
    ),
    Planted(
        "offset +17",
        lambda n, d: student_table(n, d, offset=67),
        "position_offset",
        "+17",
        (("offset", 50),),
    ),
    Planted(
        "offset -3",
        lambda n, d: student_table(n, d, offset=47),
        "position_offset",
        "-3",
        (("offset", 50),),
    ),
    Planted("base 1000", lambda n, d: student_table(n, d, base=1000.0), "base", "base 1000"),
    Planted("base 2500", lambda n, d: student_table(n, d, base=2500.0), "base", "2500"),
    Planted(
        "paper base where 500 asked",
        lambda n, d: student_table(n, d),
        "base",
        "base 10000, not the base 500",
        kwargs=(("base", 500.0),),
    ),
    Planted(
        "float16 values in a float32 table",
        lambda n, d: student_table(80, d).astype(np.float16).astype(np.float32),
        "precision",
        "float16",
    ),
    Planted(
        "float32 angles in a float64 table",
        lambda n, d: article_table(2000, d).double(),
        "precision",
        "float32",
    ),
    Planted("float16 angles", float16_angles_table, "precision", "float16", num_positions=100),
    Planted("bfloat16 angles, float32 table", bfloat16_angles_table, "precision", "bfloat16"),
    Planted(
        "bfloat16 angles, bfloat16 table",
        lambda n, d: angles_in(torch.bfloat16, n, d),
        "precision",
        "bfloat16",
        num_positions=200,  # at 40 positions bfloat16 angles are within bfloat16 rounding
    ),
    Planted(
        "bfloat16 values in a float64 table",
        lambda n, d: pe_lib.sinusoidal_table(80, d, dtype=torch.bfloat16).double(),
        "precision",
        "bfloat16",
    ),
    Planted(
        "two entries changed",
        with_entry_changed,
        "wrong_values",
        "2 of 480 values are wrong",
        kwargs=(("offset", 7),),
        d_models=(16,),
        num_positions=30,
    ),
    Planted(
        "random",
        lambda n, d: np.random.default_rng(0).uniform(-1, 1, size=(n, d)),
        "wrong_values",
        "does not recognise",
    ),
]

CASES = [pytest.param(case, d, id=f"{case.name}-d{d}") for case in PLANTED for d in case.d_models]
#: How a student hands the table in: as it was built, or as a float32 torch tensor.
AS_GIVEN, AS_TORCH32 = "as built", "torch float32"


def _as_torch32(table: object) -> object:
    if isinstance(table, np.ndarray) and table.dtype == np.float64:
        return torch.from_numpy(table).float()
    return table


@pytest.mark.parametrize("form", [AS_GIVEN, AS_TORCH32])
@pytest.mark.parametrize(("case", "d_model"), CASES)
def test_planted_mistake_is_named(case: Planted, d_model: int, form: str) -> None:
    table = case.make(case.num_positions, d_model)
    if form == AS_TORCH32:
        if case.mistake == "precision":
            pytest.skip("the precision cases are about their own dtype")
        table = _as_torch32(table)
    error = fails_with(case.mistake, table, **dict(case.kwargs))
    assert case.words in str(error)


def test_every_mistake_has_a_planted_case() -> None:
    assert {case.mistake for case in PLANTED} == set(check_sinusoidal_table.mistakes)


def test_odd_d_model_cut_from_a_wider_table_is_not_called_a_base() -> None:
    """The formula for odd d: frequencies base ** (-2i / d), the last column a sine."""
    error = fails_with("odd_d_model", one_column_more_table(40, 9))
    assert "base 10000" not in str(error) and "ceil(d_model/2) = 5" in str(error)
    check_sinusoidal_table(student_table(40, 9))  # the right odd table
    check_sinusoidal_table(reference_table(40, 9))


def test_bfloat16_angles_are_precision_not_wrong_values() -> None:
    """bfloat16 angles are off by up to ~(ln base + 4) eps_bf16 |angle|, yet on the circle."""
    for table in (bfloat16_angles_table(64, 32), angles_in(torch.bfloat16, 200, 32)):
        error = fails_with("precision", table)
        assert "bfloat16" in str(error)


def _angles_rounded_to(dtype, n, d):
    """float64 frequencies, the product pos * omega_i rounded to ``dtype``, float32 sin and cos."""
    omega = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angles = (torch.arange(n, dtype=torch.float64)[:, None].to(dtype) * omega.to(dtype)).float()
    table = torch.zeros(n, d)
    table[:, 0::2], table[:, 1::2] = angles.sin(), angles.cos()
    return table


@pytest.mark.parametrize("num_positions", [300, 1000, 2000])
@pytest.mark.parametrize("d_model", [16, 64])
def test_the_precision_the_angles_were_formed_in_is_named(num_positions, d_model) -> None:
    """bfloat16 angles are named bfloat16, not float16 (read back from the table: bfloat16
    numbers), and float16 ones float16."""
    for dtype, name, other in (
        (torch.bfloat16, "bfloat16", "in float16"),
        (torch.float16, "float16", "bfloat16"),
    ):
        error = fails_with("precision", _angles_rounded_to(dtype, num_positions, d_model))
        assert f"computing in {name} (machine epsilon" in str(error)
        assert other not in str(error)


def test_a_wrong_entry_under_half_precision_noise_is_not_precision() -> None:
    """A single wrong entry moves its (sin, cos) pair off the unit circle."""
    table = bfloat16_angles_table(64, 16)
    table[3, 4] = -table[3, 4] + 0.2
    with pytest.raises(CheckFailed) as info:
        check_sinusoidal_table(table)
    assert info.value.mistake != "precision"


@pytest.mark.parametrize(("offset", "dtype"), [(10**7, np.float32), (10**12, np.float64)])
def test_far_positions_are_checked(offset: int, dtype) -> None:
    """The rounding bound grows with the angle; capped, it still rejects the wrong rows."""
    check_sinusoidal_table(student_table(40, 16, offset=offset, dtype=dtype), offset=offset)
    fails_with("position_offset", student_table(40, 16, dtype=dtype), offset=offset)
    fails_with("wrong_values", np.zeros((40, 16), dtype=dtype), offset=offset)


def test_float32_angles_far_out_are_precision() -> None:
    """Angles formed in float32 at a million positions are off by about 0.1 radian."""
    offset = 10**6
    pos = torch.arange(offset, offset + 64, dtype=torch.float32)[:, None]
    div = torch.exp(torch.arange(0, 16, 2, dtype=torch.float32) * -(math.log(10000.0) / 16))
    table = torch.zeros(64, 16)
    table[:, 0::2], table[:, 1::2] = torch.sin(pos * div), torch.cos(pos * div)
    fails_with("precision", table, offset=offset)
    check_sinusoidal_table(
        torch.from_numpy(student_table(64, 16, offset=offset)).float(), offset=offset
    )


def test_paper_base_where_its_square_root_was_asked_is_base_not_exponent() -> None:
    """10000 ** (2i/d) is also 100 ** (4i/d): forgetting to pass base is the likelier mistake."""
    error = fails_with("base", student_table(40, 16), base=100.0)
    assert "exponent off by a factor of 2" in str(error)


def test_wrong_values_names_the_largest_error() -> None:
    error = fails_with("wrong_values", with_entry_changed(30, 16), offset=7)
    assert "position 19, dimension 5" in str(error)  # offset 7 + row 12
    assert f"{student_table(30, 16, offset=7)[12, 5]:.6f}" in str(error)


def test_single_row_off_by_one() -> None:
    fails_with("position_offset", student_table(1, 6, offset=1))


@pytest.mark.parametrize("used", [1000.0, 2500.0, 40000.0])
def test_another_base_is_named_and_estimated(used: float) -> None:
    error = fails_with("base", student_table(60, 16, base=used))
    assert f"{used:.0f}" in str(error)


@pytest.mark.parametrize(("num_positions", "d_model"), [(50, 16), (200, 16), (50, 64), (200, 512)])
def test_fairseq_spacing_is_named_not_a_base_nor_precision(num_positions, d_model) -> None:
    """Its frequencies are close to some base's, which once passed for base = 37000 with
    'half-precision-sized errors' on a float64 table, or for angles formed in bfloat16."""
    error = fails_with("exponent", fairseq_spacing_table(num_positions, d_model))
    message = str(error)
    assert "fairseq" in message and "half-precision" not in message and "37" not in message


def test_an_estimated_base_and_an_offset_are_named_in_one_message() -> None:
    table = student_table(60, 16, base=2500.0, offset=3)
    error = fails_with("base", table)
    message = str(error)
    assert "base 2500, not the base 10000" in message and "estimated" in message
    assert "off by +3" in message and "half-precision" not in message
    set_language("ko")
    with pytest.raises(CheckFailed) as korean:
        check_sinusoidal_table(table)
    assert korean.value.mistake == "base"
    assert "base 2500을 쓴다" in str(korean.value) and "추정한 값" in str(korean.value)
    assert "+3만큼 어긋나" in str(korean.value)


def test_an_estimate_that_matches_loosely_says_so() -> None:
    """A base no candidate holds, with an angle scale: matched through the estimate only."""
    angle = 1.7 * paper_angles(rows(60), 16, base=3333.0)
    error = fails_with("angle_scale", interleave(angle, 16))
    message = str(error)
    assert "scaled by 1.7" in message and "3330" in message
    assert "half-precision" not in message


@pytest.mark.parametrize("shape", [(30, 16), (16, 16), (3, 8)])
def test_transposed_of_any_shape(shape) -> None:
    fails_with("transposed", student_table(*shape).T)
    fails_with("transposed", pe_lib.sinusoidal_table(*shape, dtype=torch.float16).T)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_mistakes_are_named_in_every_dtype(dtype) -> None:
    for make, mistake in [
        (lambda n, d: interleave(paper_angles(rows(n), d), d, np.cos, np.sin), "swapped_sin_cos"),
        (lambda n, d: interleave(paper_angles(rows(n) + 1, d), d), "position_offset"),
        (concat_table, "layout"),
        (one_column_more_table, "odd_d_model"),
    ]:
        d_model = 9 if mistake == "odd_d_model" else 16
        fails_with(mistake, torch.from_numpy(make(40, d_model)).to(dtype))


# Correct tables pass -------------------------------------------------------------------------

SHAPES = [(1, 1), (1, 2), (2, 1), (2, 2), (1, 7), (50, 16), (33, 17), (64, 3), (7, 64)]
NUMPY_DTYPES = [np.float16, np.float32, np.float64]
TORCH_DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
@pytest.mark.parametrize("offset", [0, 5])
def test_correct_numpy_tables_pass(shape, dtype, offset) -> None:
    check_sinusoidal_table(student_table(*shape, offset=offset, dtype=dtype), offset=offset)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", TORCH_DTYPES)
def test_correct_torch_tables_pass(shape, dtype) -> None:
    # Angles in float32 for float32 and narrower tables, in float64 for float64 ones.
    angle_dtype = torch.float64 if dtype == torch.float64 else torch.float32
    check_sinusoidal_table(article_table(*shape, dtype=angle_dtype).to(dtype))
    check_sinusoidal_table(pe_lib.sinusoidal_table(*shape, dtype=dtype))


def test_independent_reference_passes() -> None:
    check_sinusoidal_table(reference_table(30, 12))
    check_sinusoidal_table(reference_table(20, 7, offset=3), offset=3)


@pytest.mark.parametrize("base", [100.0, 500.0, 1e6])
def test_correct_table_with_another_base_passes(base: float) -> None:
    check_sinusoidal_table(student_table(40, 12, base=base), base=base)
    check_sinusoidal_table(student_table(40, 12, base=base).astype(np.float16), base=base)


def test_the_articles_float32_table_passes_at_5000_positions() -> None:
    check_sinusoidal_table(article_table_float32(5000, 64))


def test_float16_table_of_float16_values_passes() -> None:
    check_sinusoidal_table(student_table(80, 32).astype(np.float16))


def test_sine_column_index_shared_by_the_pair_is_correct() -> None:
    """base ** (j / d) with j = 2i, the sine's column, used for both columns: the formula."""
    check_sinusoidal_table(loop_table(30, 10, lambda j, d: (j - j % 2) / d))


def test_start_is_the_deprecated_name_of_offset() -> None:
    with pytest.warns(DeprecationWarning, match="start= is deprecated, use offset="):
        check_sinusoidal_table(student_table(10, 8, offset=1024), start=1024)
    with pytest.warns(DeprecationWarning, match="use offset="):
        error = fails_with("position_offset", student_table(10, 8), start=100)
    assert "start=100" in str(error)  # the message repeats the name the caller used


@given(
    num_positions=st.integers(1, 40),
    d_model=st.integers(1, 24),
    offset=st.integers(0, 3000),
    base=st.sampled_from([10.0, 1000.0, 10000.0, 123456.0]),
    dtype=st.sampled_from(TORCH_DTYPES),
)
def test_a_table_equal_to_the_correct_one_always_passes(
    num_positions, d_model, offset, base, dtype
):
    positions = np.arange(offset, offset + num_positions)[:, None]
    angle = positions / base ** (np.arange(0, d_model, 2) / d_model)
    table = interleave(angle, d_model)
    check_sinusoidal_table(torch.from_numpy(table).to(dtype), base=base, offset=offset)


def test_a_large_table_is_checked_row_by_row() -> None:
    """5000 x 512: sampled rows first, then every row; one wrong row past the sample fails."""
    table = pe_lib.sinusoidal_table(5000, 512)
    check_sinusoidal_table(table)
    swapped = table.clone()
    swapped[:, 0::2], swapped[:, 1::2] = table[:, 1::2], table[:, 0::2]
    fails_with("swapped_sin_cos", swapped)
    one_row = table.clone()
    one_row[4321, 100] += 0.5  # row 4321 is not among the sampled rows
    assert "position 4321, dimension 100" in str(fails_with("wrong_values", one_row))


def test_input_is_not_modified() -> None:
    table = torch.tensor(student_table(10, 6), requires_grad=True)
    before = table.detach().clone()
    check_sinusoidal_table(table)
    assert torch.equal(table.detach(), before)


# Bad arguments -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "table",
    [
        [[0.0, 1.0]],
        np.zeros((2, 2), dtype=np.int64),
        torch.zeros(2, 2, dtype=torch.int32),
        np.zeros((2, 2), dtype=np.complex128),
        np.array([["a", "b"]], dtype=object),
        "table",
    ],
)
def test_type_errors_name_the_table(table) -> None:
    with pytest.raises(TypeError, match="^table must be"):
        check_sinusoidal_table(table)


def test_a_meta_tensor_is_a_type_error_naming_the_table() -> None:
    with pytest.raises(TypeError, match="^table must be .* meta device .*'cpu'"):
        check_sinusoidal_table(torch.empty(4, 8, device="meta"))


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"base": 1.0}, ValueError, "base"),
        ({"base": float("nan")}, ValueError, "base"),
        ({"base": "10000"}, TypeError, "base"),
        ({"base": True}, TypeError, "base"),
        ({"offset": -1}, ValueError, "offset"),
        ({"offset": 1.5}, TypeError, "offset"),
        ({"offset": True}, TypeError, "offset"),
        ({"offset": 2**53}, ValueError, "offset"),
        ({"offset": 10**30}, ValueError, "offset"),
        ({"offset": 2**53 - 2}, ValueError, "last position"),
    ],
)
def test_bad_arguments_name_the_argument(kwargs, error, words) -> None:
    with pytest.raises(error, match=words):
        check_sinusoidal_table(student_table(4, 4), **kwargs)
