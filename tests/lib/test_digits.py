"""pe_lib.digits: printed digits that no value within a kind's margin can change."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from pe_lib.digits import KINDS, MAX_DIGITS, margin_of, stable

kinds = st.sampled_from(sorted(KINDS))
values = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)


def _decimals(text: str) -> int:
    return len(text.split(".")[1]) if "." in text else 0


@given(value=values, digits=st.integers(min_value=0, max_value=6), kind=kinds)
def test_no_value_within_the_margin_prints_otherwise(value, digits, kind):
    """The property the helper exists for: every value another CPU could have computed (within
    the kind's margin, relative to the value for a relative kind) prints the same text."""
    try:
        text = stable(value, digits, kind)
    except ValueError as error:
        assert "verdict" in str(error)
        # refused only where even 0 decimals sit within the margin of an edge
        edge = math.floor(value) + 0.5
        assert abs(value - edge) < margin_of(value, kind)
        return
    places = _decimals(text)
    assert places <= digits
    margin = margin_of(value, kind) * (1 - 1e-9)
    for moved in (value - margin, value + margin):
        assert f"{moved:.{places}f}".lstrip("-") == text.lstrip("-")
        if abs(moved) > margin_of(value, kind):
            assert f"{moved:.{places}f}" == text  # the sign too, away from zero
    # and the most decimals the margin allows: one more would not be safe
    if places < digits:
        step = 10.0 ** -(places + 1)
        fraction = value / step - math.floor(value / step)
        assert abs(fraction - 0.5) * step < margin_of(value, kind)


@pytest.mark.parametrize(
    ("value", "digits", "kind", "expected"),
    [
        (0.98312, 2, "formula", "0.98"),  # far from 0.985 and 0.975
        (0.125, 2, "formula", "0.1"),  # on the edge 0.125: one decimal fewer
        (0.5, 3, "formula", "0.500"),  # the edges of 3 decimals are 0.0005 away
        (2.0004999999, 3, "formula", "2.00"),  # 1e-10 from the edge 2.0005: two decimals
        (13.4123, 1, "training", "13.4"),  # 0.0377 from 13.45: 0.28 % of the value
        (14.0, 3, "formula", "14.000"),
        (7, 1, "formula", "7.0"),  # an int
        # the module docstring's examples
        (0.98312, 2, "training accuracy", "0.98"),
        (0.98512, 2, "training accuracy", "1.0"),
    ],
)
def test_examples(value, digits, kind, expected):
    assert stable(value, digits, kind) == expected


def test_a_relative_margin_grows_with_the_value():
    # the same distance from an edge, 1e-5: safe at 0.5, not at half a million
    assert stable(0.50001, 0, "formula") == "1"
    with pytest.raises(ValueError, match="verdict"):
        stable(500_000.50001, 0, "formula")


def test_a_spread_keeps_the_margin_of_the_values_it_spreads():
    # a spread over seeds of perplexities near 100 moves as they do: by a share of 100
    mean, spread = 100.0, 0.3
    margin = margin_of(spread, "training", relative_to=mean)
    assert margin == KINDS["training"].margin * mean > margin_of(spread, "training")
    text = stable(spread, 2, "training", relative_to=mean)
    for moved in (spread - 0.999 * margin, spread + 0.999 * margin):
        assert f"{moved:.{_decimals(text)}f}" == text


def test_an_absolute_margin_does_not():
    accuracy = KINDS["training accuracy"]
    assert not accuracy.relative
    assert margin_of(0.9, "training accuracy") == margin_of(0.1, "training accuracy")


def test_no_sign_on_a_zero_that_could_be_either():
    assert float(stable(-1e-9, 2, "training accuracy")) == 0
    assert not stable(-1e-9, 2, "training accuracy").startswith("-")
    assert stable(-0.0, 3, "formula") == "0.000"
    assert stable(-0.25, 2, "formula") == "-0.25"


def test_on_an_edge_even_at_0_decimals_says_to_print_a_verdict():
    assert stable(2.5, 2, "formula") == "2.50"  # the edge of 0 decimals, not of 2
    with pytest.raises(ValueError, match=r"value=2\.5 of kind 'formula'.*verdict"):
        stable(2.5, 0, "formula")
    with pytest.raises(ValueError, match=r"value=0\.5001 .*verdict"):
        stable(0.5001, 0, "training accuracy")


def test_tensors_and_arrays_of_one_number():
    assert stable(torch.tensor(0.25, dtype=torch.float64), 2, "formula") == "0.25"
    assert stable(torch.tensor([[0.25]]), 2, "formula") == "0.25"
    assert stable(np.float32(0.25), 2, "formula") == "0.25"
    assert stable(np.array([0.25]), 2, "formula") == "0.25"


def test_every_kind_states_its_margin_and_why():
    assert {"formula", "training"} <= set(KINDS)
    for name, kind in KINDS.items():
        assert kind.margin > 0, name
        assert len(kind.why.split()) >= 8, name  # a sentence, not a word
    # numbers from training move by far more than a formula's last bits
    assert KINDS["training"].margin >= 10 * KINDS["formula"].margin
    with pytest.raises(TypeError):
        KINDS["mine"] = KINDS["formula"]  # type: ignore[index]  # read-only


@pytest.mark.parametrize(
    ("arguments", "error", "match"),
    [
        ((float("nan"), 2, "formula"), ValueError, r"value must be a finite number, got nan"),
        ((math.inf, 2, "formula"), ValueError, r"value must be a finite number, got inf"),
        (("0.5", 2, "formula"), TypeError, r"value must be a real number, got '0.5' of type str"),
        ((True, 2, "formula"), TypeError, r"value must be a real number, got True of type bool"),
        ((None, 2, "formula"), TypeError, r"value must be a real number, got None"),
        ((torch.zeros(2), 2, "formula"), TypeError, r"value must be .* shape \(2,\)"),
        ((torch.tensor(True), 2, "formula"), TypeError, r"value must be .*dtype torch.bool"),
        ((0.5, -1, "formula"), ValueError, r"digits must be an int in \[0, 12\], got -1"),
        ((0.5, MAX_DIGITS + 1, "formula"), ValueError, r"digits must be an int in \[0, 12\]"),
        ((0.5, 2.0, "formula"), TypeError, r"digits must be an int, got 2.0 of type float"),
        ((0.5, True, "formula"), TypeError, r"digits must be an int, got True"),
        ((0.5, 2, "exact"), ValueError, r"kind must be one of 'formula', .*got 'exact'"),
        ((0.5, 2, None), TypeError, r"kind must be one of .*got None of type NoneType"),
    ],
)
def test_bad_arguments(arguments, error, match):
    with pytest.raises(error, match=match):
        stable(*arguments)


@pytest.mark.parametrize(
    ("relative_to", "error", "match"),
    [
        ("13.4", TypeError, r"relative_to must be a real number, got '13.4' of type str"),
        (math.nan, ValueError, r"relative_to must be a finite number, got nan"),
    ],
)
def test_bad_relative_to(relative_to, error, match):
    with pytest.raises(error, match=match):
        stable(0.2, 1, "training", relative_to=relative_to)


def test_margin_of_checks_its_arguments():
    with pytest.raises(ValueError, match="kind must be one of"):
        margin_of(1.0, "trained")
    with pytest.raises(TypeError, match="value must be a real number"):
        margin_of("1", "formula")
