"""Every bad-input path of pe_lib's public functions and constructors.

Each case checks the exception type and that the message names the argument, says what is
allowed ("must ...") and repeats the value given.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch

from pe_lib import (
    LearnedPositionalEncoding,
    PositionalEncoding,
    SelfAttention,
    SinusoidalPositionalEncoding,
    angular_frequencies,
    relative_shift_matrix,
    sinusoidal_table,
    wavelengths,
)

# Bad values for each kind of argument, with the exception each must raise.
BAD_VALUES = {
    "size": [
        (0, ValueError),
        (-3, ValueError),
        (4.0, TypeError),
        (True, TypeError),
        ("8", TypeError),
        (None, TypeError),
        (np.float64(2.0), TypeError),
        (2**53, ValueError),  # beyond float64's exact integers
        (10**30, ValueError),
    ],
    "optional size": [(0, ValueError), (2.5, TypeError), (False, TypeError)],  # None allowed
    "nonnegative": [
        (-1, ValueError),
        (2.0, TypeError),
        (False, TypeError),
        ("0", TypeError),
        (2**53, ValueError),
        (2**60, ValueError),
        (10**30, ValueError),
    ],
    "int": [
        (1.5, TypeError),
        (True, TypeError),
        ("1", TypeError),
        (None, TypeError),
        (2**53, ValueError),
        (-(2**53), ValueError),
        (10**20, ValueError),
    ],
    "base": [
        (1.0, ValueError),
        (1, ValueError),
        (0.5, ValueError),
        (-10000.0, ValueError),
        (math.nan, ValueError),
        (math.inf, ValueError),
        (True, TypeError),
        ("10000", TypeError),
        (None, TypeError),
    ],
    "dropout": [
        (1.0, ValueError),
        (1, ValueError),
        (-0.1, ValueError),
        (1.5, ValueError),
        (math.nan, ValueError),
        (True, TypeError),
        ("0.1", TypeError),
        (None, TypeError),
    ],
    "layout": [
        ("Interleaved", ValueError),
        ("concatenated", ValueError),
        ("", ValueError),
        (None, TypeError),
        (0, TypeError),
    ],
    "dtype": [
        (torch.int64, TypeError),
        (torch.bool, TypeError),
        ("float32", TypeError),
        (np.float32, TypeError),
    ],
}

# (callable, valid arguments, {argument: kind of bad value})
TARGETS = {
    "sinusoidal_table": (
        sinusoidal_table,
        {"num_positions": 4, "d_model": 6},
        {
            "num_positions": "size",
            "d_model": "size",
            "base": "base",
            "offset": "nonnegative",
            "layout": "layout",
            "dtype": "dtype",
        },
    ),
    "angular_frequencies": (
        angular_frequencies,
        {"d_model": 6},
        {"d_model": "size", "base": "base"},
    ),
    "wavelengths": (wavelengths, {"d_model": 6}, {"d_model": "size", "base": "base"}),
    "relative_shift_matrix": (
        relative_shift_matrix,
        {"k": 1, "d_model": 6},
        {"k": "int", "d_model": "size", "base": "base", "layout": "layout", "dtype": "dtype"},
    ),
    "SinusoidalPositionalEncoding": (
        SinusoidalPositionalEncoding,
        {"d_model": 6},
        {"d_model": "size", "max_len": "size", "dropout": "dropout", "base": "base"},
    ),
    "PositionalEncoding": (
        PositionalEncoding,
        {"d_model": 6},
        {"d_model": "size", "max_len": "size", "dropout": "dropout"},
    ),
    "LearnedPositionalEncoding": (
        LearnedPositionalEncoding,
        {"d_model": 6},
        {"d_model": "size", "max_len": "size", "dropout": "dropout"},
    ),
    "SelfAttention": (SelfAttention, {"d_model": 6}, {"d_model": "size", "d_k": "optional size"}),
}

CASES = [
    pytest.param(target, valid, argument, value, error, id=f"{name}-{argument}={value!r}")
    for name, (target, valid, arguments) in TARGETS.items()
    for argument, kind in arguments.items()
    for value, error in BAD_VALUES[kind]
]


@pytest.mark.parametrize(("target", "valid", "argument", "value", "error"), CASES)
def test_bad_argument(target, valid, argument, value, error):
    message = rf"{argument} must .*{re.escape(repr(value))}"
    with pytest.raises(error, match=message):
        target(**(valid | {argument: value}))


MODULES = {
    "sinusoidal": lambda: SinusoidalPositionalEncoding(6, max_len=10),
    "learned": lambda: LearnedPositionalEncoding(6, max_len=10),
    "attention": lambda: SelfAttention(6),
}

BAD_X = [
    pytest.param(
        [[0.0] * 6], TypeError, r"x must be a torch.Tensor .*\[\[0\.0, .*type list", id="list"
    ),
    pytest.param(
        np.zeros((1, 2, 6)), TypeError, r"x must be a torch.Tensor.*ndarray", id="ndarray"
    ),
    pytest.param(
        torch.zeros(1, 2, 6, dtype=torch.long), TypeError, r"x must .*floating.*int64", id="long"
    ),
    pytest.param(
        torch.zeros(1, 2, 6, dtype=torch.bool), TypeError, r"x must .*floating.*bool", id="bool"
    ),
    pytest.param(torch.zeros(2, 6), ValueError, r"x must have shape .*got shape \(2, 6\)", id="2d"),
    pytest.param(
        torch.zeros(1, 1, 2, 6), ValueError, r"x must .*got shape \(1, 1, 2, 6\)", id="4d"
    ),
    pytest.param(
        torch.zeros(1, 2, 5),
        ValueError,
        r"x must .*d_model=6.*got shape \(1, 2, 5\)",
        id="last-dim",
    ),
    pytest.param(
        torch.zeros(1, 2, 7),
        ValueError,
        r"x must .*d_model=6.*got shape \(1, 2, 7\)",
        id="last-dim-7",
    ),
]


@pytest.mark.parametrize("module_name", MODULES)
@pytest.mark.parametrize(("x", "error", "match"), BAD_X)
def test_bad_x(module_name, x, error, match):
    with pytest.raises(error, match=match):
        MODULES[module_name]()(x)


@pytest.mark.parametrize("module_name", ["sinusoidal", "learned"])
@pytest.mark.parametrize(("offset", "error"), BAD_VALUES["nonnegative"])
def test_bad_offset(module_name, offset, error):
    with pytest.raises(error, match=rf"offset must .*{re.escape(repr(offset))}"):
        MODULES[module_name]()(torch.zeros(1, 2, 6), offset=offset)


@pytest.mark.parametrize(
    ("arguments", "error", "match"),
    [
        ({"seq_len": 0}, ValueError, r"seq_len must .*got 0"),
        ({"seq_len": 2.0}, TypeError, r"seq_len must .*got 2\.0"),
        ({"seq_len": 2, "offset": -4}, ValueError, r"offset must .*got -4"),
        ({"seq_len": 2, "offset": True}, TypeError, r"offset must .*got True"),
    ],
)
def test_bad_encoding_window(arguments, error, match):
    with pytest.raises(error, match=match):
        SinusoidalPositionalEncoding(6, max_len=10).encoding(**arguments)


@pytest.mark.parametrize("module", [SinusoidalPositionalEncoding(6), LearnedPositionalEncoding(6)])
def test_empty_sequence_is_rejected_by_the_callers_name(module):
    """An empty sequence is named as the caller's ``x`` with its shape, not as ``seq_len``."""
    with pytest.raises(ValueError, match=r"x must hold at least one position.*\(2, 0, 6\)"):
        module(torch.zeros(2, 0, 6))


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        # float64 holds every integer only up to 2**53: a table there would repeat rows.
        (
            lambda: sinusoidal_table(4, 2, offset=2**53 + 1),
            ValueError,
            r"offset must be a non-negative int at most 2\*\*53 - 1.*got 9007199254740993",
        ),
        (
            lambda: sinusoidal_table(4, 2, offset=10**30),
            ValueError,
            r"offset .*2\*\*53 - 1.*got 1000",
        ),
        (
            lambda: sinusoidal_table(4, 2, offset=2**53 - 2),
            ValueError,
            r"offset \+ num_positions - 1 \(the last position\) must be at most 2\*\*53 - 1.*"
            r"offset=9007199254740990 and num_positions=4",
        ),
        (lambda: sinusoidal_table(4, 2, device="gpu7"), ValueError, r"device must .*'gpu7'"),
        (lambda: sinusoidal_table(4, 2, device=0), TypeError, r"device must .*got 0"),
        (
            lambda: sinusoidal_table(4, 2, device="cuda:99"),
            ValueError,
            r"device must be a device available here, got 'cuda:99'",
        ),
        (
            lambda: sinusoidal_table(2**40, 2**40),
            ValueError,
            r"num_positions \* d_model must be at most 2\*\*63 - 1",
        ),
        (
            lambda: relative_shift_matrix(10**20, 16),
            ValueError,
            r"k must be an int of absolute value at most 2\*\*53 - 1.*got 100000000000000000000",
        ),
        (
            lambda: SinusoidalPositionalEncoding(4)(torch.zeros(1, 3, 4), offset=2**60),
            ValueError,
            r"offset must be a non-negative int at most 2\*\*53 - 1.*got 1152921504606846976",
        ),
        (
            lambda: SinusoidalPositionalEncoding(4)(torch.zeros(1, 3, 4), offset=2**53 - 2),
            ValueError,
            r"offset \+ x.shape\[1\] - 1 \(the last position\).*offset=9007199254740990",
        ),
        (
            lambda: SinusoidalPositionalEncoding(4).encoding(3, offset=2**53 - 2),
            ValueError,
            r"offset \+ seq_len - 1 \(the last position\)",
        ),
        (
            lambda: LearnedPositionalEncoding(4)(torch.zeros(1, 3, 4), offset=2**60),
            ValueError,
            r"offset must be a non-negative int at most 2\*\*53 - 1",
        ),
    ],
)
def test_huge_positions_and_sizes_are_rejected_by_name(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_the_largest_exact_position_still_works():
    """Position 2**53 - 1 is the last one float64 holds: its row is the formula's."""
    last = 2**53 - 1
    row = sinusoidal_table(1, 2, offset=last, dtype=torch.float64)[0]
    expected = torch.tensor([math.sin(float(last)), math.cos(float(last))], dtype=torch.float64)
    torch.testing.assert_close(row, expected, rtol=0, atol=1e-15)
    before = sinusoidal_table(1, 2, offset=last - 1, dtype=torch.float64)[0]
    assert not torch.equal(row, before)
