"""Bad and unusual input to pe_lib.models.grid, pe_lib.encodings.relative_bias and pe_lib.rope.axial.

Each argument the functions cannot serve is refused by a ``ValueError`` or ``TypeError`` that
names it, before torch is reached: sizes whose result no memory holds (the library's up-front
memory check, before the allocator is asked), tables with no rows or no channels, meta tensors
that hold no values, relative positions and coordinates beyond the library's bound
``2**53 - 1``. What the functions' meaning allows is accepted: the ``image_grid_thw`` tensor a
processor returns, numpy's integers for M-RoPE's sections.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from pe_lib.encodings.relative_bias import clipped_relative_positions, t5_relative_buckets
from pe_lib.models.grid import grid_positions, mrope_positions, resize_position_table
from pe_lib.rope.axial import axial_angles, axial_frequencies

BOUND = 2**53 - 1
LIMIT = 64 * 2**30  # a machine of 64 GiB, whatever this one has


@pytest.fixture
def memory_of_64_gib(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("pe_lib._validation.memory_limit", lambda: LIMIT)


# --- sizes that no memory holds ----------------------------------------------------------------


@pytest.mark.usefixtures("memory_of_64_gib")
@pytest.mark.parametrize(
    ("call", "words"),
    [
        (
            lambda: clipped_relative_positions(10**6, 10**6, 3),
            r"clipped_relative_positions\(q_len=1000000, k_len=1000000\)",
        ),
        (lambda: grid_positions(10**6, 10**6), r"grid_positions\(rows=1000000, columns=1000000\)"),
        (
            lambda: resize_position_table(torch.randn(16, 4), 100000, 100000),
            r"resize_position_table\(.*rows=100000, columns=100000\)",
        ),
        (
            lambda: resize_position_table(torch.randn(16, 4), 60000, 60000, method="siglip2"),
            r"rows=60000, columns=60000",
        ),
    ],
)
def test_sizes_beyond_memory_are_refused_up_front(call: object, words: str) -> None:
    with pytest.raises(ValueError, match=words + r".* would need .* more than this machine has"):
        call()  # type: ignore[operator]


@pytest.mark.parametrize(
    ("make", "fits", "refused"),
    [
        (lambda side: clipped_relative_positions(side, side, 3), 200, 300),
        (lambda side: grid_positions(side, side), 150, 200),
        (lambda side: resize_position_table(torch.randn(16, 4), side, side), 150, 200),
    ],
    ids=["clipped_relative_positions", "grid_positions", "resize_position_table"],
)
def test_the_memory_check_counts_what_the_call_makes(
    make: object, fits: int, refused: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # On a machine of 1 MiB: an index of 200 x 200 int64 entries (with the distances it is
    # made from), or 150 x 150 patches of two int64 coordinates or of four float32 channels,
    # fits; a side of 300 or 200 does not. The estimate is the call's own size (twice the
    # result, for what it is made from), not a bound far above or below it.
    monkeypatch.setattr("pe_lib._validation.memory_limit", lambda: 2**20)
    assert len(make(fits)) == fits * (1 if fits == 200 else fits)  # type: ignore[operator]
    with pytest.raises(ValueError, match=r"would need .* more than this machine has \(1.0 MiB\)"):
        make(refused)  # type: ignore[operator]


def test_sizes_beyond_any_tensor_name_the_arguments() -> None:
    with pytest.raises(ValueError, match=r"q_len \* k_len must be at most 2\*\*63 - 1 elements"):
        clipped_relative_positions(2**40, 2**40, 3)
    with pytest.raises(ValueError, match=r"rows \* columns must be at most 2\*\*63 - 1 elements"):
        grid_positions(2**40, 2**40)


def test_where_memory_is_unknown_the_failed_allocation_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("pe_lib._validation.memory_limit", lambda: None)
    with pytest.raises(MemoryError, match=r"grid_positions\(rows=1000000, columns=1000000\)"):
        grid_positions(10**6, 10**6)


def test_the_last_coordinate_of_a_grid_stays_within_the_bound() -> None:
    assert grid_positions(1, 1, start=BOUND).tolist() == [[BOUND, BOUND]]
    with pytest.raises(ValueError, match=r"start \+ max\(rows, columns\) - 1"):
        grid_positions(2, 1, start=BOUND)


# --- resize_position_table: tables it cannot read -----------------------------------------------


@pytest.mark.parametrize("shape", [(0, 4), (16, 0), (0, 0)])
def test_a_table_without_rows_or_channels_is_refused(shape: tuple[int, int]) -> None:
    with pytest.raises(
        ValueError, match=r"table must have shape .*got shape " + re.escape(str(shape))
    ):
        resize_position_table(torch.zeros(shape), 3, 3)


def test_an_integer_table_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="table must be a float tensor .* torch.int64"):
        resize_position_table(torch.zeros(16, 4, dtype=torch.int64), 3, 3)


@pytest.mark.parametrize("method", ["vit", "siglip2"])
def test_a_table_of_one_patch_spreads_over_the_new_grid(method: str) -> None:
    row = torch.randn(1, 5)
    resized = resize_position_table(row, 3, 4, method=method)
    torch.testing.assert_close(resized, row.expand(12, 5))


# --- mrope_positions: the processor's tensor, and meta tensors ----------------------------------


IS_IMAGE = [False] * 2 + [True] * 6 + [False] * 3 + [True] * 2 + [False]
GRIDS = [[1, 4, 6], [1, 2, 4]]


@pytest.mark.parametrize(
    "grids",
    [
        torch.tensor(GRIDS),
        torch.tensor(GRIDS, dtype=torch.int32),
        np.array(GRIDS),
        list(torch.tensor(GRIDS)),
        [tuple(np.int64(v) for v in grid) for grid in GRIDS],
    ],
    ids=["int64 tensor", "int32 tensor", "numpy array", "list of tensors", "numpy ints"],
)
def test_image_grid_thw_as_the_processor_returns_it(grids: object) -> None:
    expected = mrope_positions(IS_IMAGE, GRIDS)
    positions, delta = mrope_positions(IS_IMAGE, grids)  # type: ignore[arg-type]
    assert torch.equal(positions, expected[0]) and delta == expected[1]


def test_is_image_as_a_tensor_or_an_array() -> None:
    expected = mrope_positions(IS_IMAGE, GRIDS)
    for flags in (torch.tensor(IS_IMAGE), np.array(IS_IMAGE)):
        positions, delta = mrope_positions(flags, GRIDS)  # type: ignore[arg-type]
        assert torch.equal(positions, expected[0]) and delta == expected[1]


def test_a_video_in_a_tensor_is_still_refused() -> None:
    flags = [True] * 6 + [False] + [True] * 16
    with pytest.raises(ValueError, match=r"image_grids\[1\] = \(4, 4, 4\) has t=4 time steps"):
        mrope_positions(flags, torch.tensor([[1, 4, 6], [4, 4, 4]]))


@pytest.mark.parametrize(
    ("grids", "error", "words"),
    [
        (torch.tensor([[1.0, 4.0, 6.0]]), TypeError, "image_grids must be an integer tensor"),
        (torch.ones(1, 3, dtype=torch.bool), TypeError, "image_grids must be an integer tensor"),
        (torch.tensor([1, 4, 6]), ValueError, r"image_grids must be .* got shape \(3,\)"),
        (torch.tensor([[1, 4, 6, 1]]), ValueError, r"got shape \(1, 4\)"),
        (torch.tensor([[1, 4, 6]], device="meta"), ValueError, "image_grids .* meta tensor"),
        ([torch.tensor([1, 4, 6], device="meta")], ValueError, r"image_grids\[0\] .* meta"),
        ([[1, 4]], TypeError, r"image_grids\[0\] must be a \(t, rows, columns\) triple"),
        ([[1, 0, 6]], ValueError, r"image_grids\[0\] must be a positive int"),
        ("146", TypeError, "image_grids must be a sequence"),
    ],
)
def test_bad_image_grids_are_named(grids: object, error: type[Exception], words: str) -> None:
    with pytest.raises(error, match=words):
        mrope_positions([True] * 6, grids)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("flags", "error"),
    [
        (torch.ones(6, dtype=torch.bool, device="meta"), ValueError),
        (torch.ones(6, dtype=torch.int64), TypeError),
        (torch.ones(1, 6, dtype=torch.bool), TypeError),
        ([], TypeError),
        ("yes", TypeError),
        (object(), TypeError),
    ],
)
def test_bad_is_image_is_named(flags: object, error: type[Exception]) -> None:
    with pytest.raises(error, match="is_image must be a non-empty 1-D"):
        mrope_positions(flags, [[1, 4, 6]])  # type: ignore[arg-type]


# --- t5_relative_buckets: distances the arithmetic holds ----------------------------------------


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("value", [-(2**63), 2**63 - 1, -(BOUND + 1), BOUND + 1])
def test_t5_refuses_relative_positions_beyond_the_bound(value: int, bidirectional: bool) -> None:
    with pytest.raises(ValueError, match=r"relative_position must be .* at most 2\*\*53 - 1"):
        t5_relative_buckets(torch.tensor([0, value]), bidirectional=bidirectional)
    many = torch.zeros(100, dtype=torch.int64)
    many[57] = value  # more than a few entries: read through aminmax
    with pytest.raises(ValueError, match="relative_position"):
        t5_relative_buckets(many, bidirectional=bidirectional)


def test_t5_at_the_bound_is_in_the_last_bucket() -> None:
    ends = torch.tensor([-BOUND, BOUND])
    assert t5_relative_buckets(ends).tolist() == [15, 31]
    assert t5_relative_buckets(ends, bidirectional=False).tolist() == [31, 0]


def test_t5_where_entries_are_not_read_the_farthest_fall_in_the_last_bucket(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # on a GPU or under torch.compile the entries are not read: -2**63, whose negation
    # overflows int64, must still land in the last bucket rather than outside [0, num_buckets)
    monkeypatch.setattr("pe_lib._validation._readable_here", lambda values: False)
    extremes = torch.tensor([-(2**63), 2**63 - 1, -(2**62)])
    assert t5_relative_buckets(extremes).tolist() == [15, 31, 15]
    assert t5_relative_buckets(extremes, bidirectional=False).tolist() == [31, 0, 31]


def test_t5_on_a_meta_tensor_gives_the_shape() -> None:
    out = t5_relative_buckets(torch.zeros(3, 4, dtype=torch.int64, device="meta"))
    assert out.shape == (3, 4) and out.is_meta


# --- axial RoPE: coordinates and sections -------------------------------------------------------


PIXTRAL = axial_frequencies("pixtral", 8, base=100.0)


@pytest.mark.parametrize(
    ("coordinates", "words"),
    [
        ([[-3, 2]], "non-negative positions, got a minimum of -3"),
        ([[0, BOUND + 1]], rf"at most 2\*\*53 - 1 .* got a maximum of {BOUND + 1}"),
        ([[2**60, 0]], "at most 2"),
    ],
)
def test_axial_angles_refuses_coordinates_beyond_the_bound(
    coordinates: list[list[int]], words: str
) -> None:
    with pytest.raises(ValueError, match="positions must be " + words):
        axial_angles(torch.tensor(coordinates), PIXTRAL)
    with pytest.raises(ValueError, match="positions must be " + words):
        axial_angles(torch.tensor(coordinates * 40), PIXTRAL)  # more than a few: aminmax


def test_axial_angles_at_the_bound_are_exact() -> None:
    angles = axial_angles(torch.tensor([[BOUND, 0]]), PIXTRAL)
    assert float(angles[0, 0]) == float(BOUND) * float(PIXTRAL.theta[0])


def test_axial_angles_on_a_meta_tensor_give_the_shape() -> None:
    angles = axial_angles(torch.zeros(5, 2, dtype=torch.int64, device="meta"), PIXTRAL)
    assert angles.shape == (5, 4) and angles.is_meta


@pytest.mark.parametrize(
    "sections",
    [
        np.array([4, 6, 6]),
        np.array([4, 6, 6], dtype=np.int32),
        [np.int64(4), np.int32(6), 6],
        (np.uint8(4), 6, 6),
    ],
    ids=["int64 array", "int32 array", "numpy ints", "uint8"],
)
def test_numpy_sections_are_accepted(sections: object) -> None:
    for name in ("mrope", "mrope_interleaved"):
        expected = axial_frequencies(name, 32, base=100.0, sections=(4, 6, 6))
        got = axial_frequencies(name, 32, base=100.0, sections=sections)  # type: ignore[arg-type]
        assert torch.equal(got.theta, expected.theta) and torch.equal(got.axes, expected.axes)


@pytest.mark.parametrize(
    ("sections", "error", "words"),
    [
        ((4.0, 6, 6), TypeError, r"sections must be three positive ints .* got \(4.0, 6, 6\)"),
        ((True, 7, 8), TypeError, "sections must be three positive ints"),
        ("466", TypeError, "of type str"),
        (np.array([[4, 6, 6]]), TypeError, "of type ndarray"),
        ((8, 8), ValueError, r"sections must be three positive ints .* got \[8, 8\]"),
        ((0, 8, 8), ValueError, r"got \[0, 8, 8\]"),
        (np.array([4, 6, 5]), ValueError, r"add up to head_dim / 2 = 16 .* \(sum 15\)"),
    ],
)
def test_bad_sections_are_named(sections: object, error: type[Exception], words: str) -> None:
    with pytest.raises(error, match=words):
        axial_frequencies("mrope", 32, base=100.0, sections=sections)  # type: ignore[arg-type]
