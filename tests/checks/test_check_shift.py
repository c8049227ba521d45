"""check_relative_shift: correct builders of M_k pass, each planted mistake is named."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from checker_failures import failing_with

from pe_lib.checks import check_relative_shift

fails_with = failing_with(check_relative_shift)


def student_shift(k, d_model, base=10000.0):
    """M_k built block by block: [[cos kw, sin kw], [-sin kw, cos kw]] on rows 2i, 2i+1."""
    m = np.zeros((d_model, d_model))
    for i in range(d_model // 2):
        w = 1.0 / base ** (2 * i / d_model)
        c, s = math.cos(k * w), math.sin(k * w)
        m[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = [[c, s], [-s, c]]
    return m


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


def half_layout(k, d):
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


def float32_angles(k, d):
    """The right blocks, the angles k * w_i formed in float32."""
    w = 10000.0 ** (-np.arange(0, d, 2, dtype=np.float32) / np.float32(d))
    angle = np.float32(k) * w.astype(np.float32)
    m = np.zeros((d, d))
    for i, a in enumerate(angle):
        c, s = math.cos(a), math.sin(a)
        m[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = [[c, s], [-s, c]]
    return m


def raises_for_negative_k(k, d):
    if k < 0:
        raise ValueError("k must be >= 0")
    return student_shift(k, d)


def torch32(build):
    return lambda k, d: torch.from_numpy(np.asarray(build(k, d))).float()


PLANTED = [
    (lambda k, d: student_shift(k, d).T, "transposed", "k=1, d_model=2"),
    (lambda k, d: student_shift(-k, d), "transposed", "M_(-k)"),
    (sines_flipped, "transposed", "both sines"),
    (same_sign_sines, "sign", "same sign"),
    (lambda k, d: -student_shift(k, d), "sign", "k=0, d_model=2"),
    (half_layout, "layout", "'half' layout"),
    (wrong_frequencies, "wrong_values", "block 1"),
    (lambda k, d: student_shift(k + 1, d), "wrong_values", "k=0"),
    (lambda k, d: np.eye(d), "not_shift", "identity"),
    (lambda k, d: np.ones((d, d)), "not_shift", "k=0, d_model=2"),
    (lambda k, d: student_shift(k, d)[:, : d // 2], "wrong_shape", "(2, 1)"),
    (lambda k, d: student_shift(k, d).tolist(), "wrong_type", "list"),
    (
        lambda k, d: torch.from_numpy(student_shift(k, d)).to(torch.complex64),
        "wrong_type",
        "complex64",
    ),
    (lambda k, d: student_shift(k, d) > 0, "wrong_type", "bool"),
    (lambda k, d: student_shift(k, d) * np.nan, "not_finite", "NaN"),
    (raises_for_negative_k, "exception", "build(-1, 2) raised ValueError"),
    (float32_angles, "precision", "formed in float32"),
]


@pytest.mark.parametrize("form", ["numpy float64", "torch float32"])
@pytest.mark.parametrize(("build", "mistake", "words"), PLANTED)
def test_planted_mistake_is_named(build, mistake, words, form) -> None:
    if form == "torch float32":
        if mistake in ("wrong_type", "exception"):
            pytest.skip("about what build returns or raises, not its dtype")
        build = torch32(build)
    error = fails_with(mistake, build)
    assert words in str(error)
    if mistake == "exception":
        assert isinstance(error.__cause__, ValueError)


def test_every_mistake_has_a_planted_case() -> None:
    assert {mistake for _, mistake, _ in PLANTED} == set(check_relative_shift.mistakes)


def test_correct_shift_builders_pass() -> None:
    check_relative_shift(student_shift)
    check_relative_shift(torch32(student_shift))
    check_relative_shift(lambda k, d: student_shift(k, d, base=500.0), base=500.0)
    check_relative_shift(
        lambda k, d: (
            np.rint(student_shift(0, d)).astype(np.int64) if k == 0 else student_shift(k, d)
        )
    )


def test_a_huge_base_is_probed_within_exact_positions() -> None:
    check_relative_shift(lambda k, d: student_shift(k, d, base=1e300), base=1e300)


def test_wrong_frequencies_are_caught_for_larger_d_model() -> None:
    """For d_model = 2 the first block is right whatever the exponent: d_model = 4 catches it."""
    assert "d_model=4" in str(fails_with("wrong_values", wrong_frequencies))


@pytest.mark.parametrize(
    ("build", "kwargs", "error", "words"),
    [
        (np.eye(4), {}, TypeError, "build"),
        (student_shift, {"base": 1.0}, ValueError, "base"),
        (student_shift, {"base": float("inf")}, ValueError, "base"),
        (student_shift, {"base": "10000"}, TypeError, "base"),
    ],
)
def test_bad_arguments_name_the_argument(build, kwargs, error, words) -> None:
    with pytest.raises(error, match=words):
        check_relative_shift(build, **kwargs)
