"""pe_lib.encodings.sinusoidal: frequencies, wavelengths and tables against an independent reference."""

from __future__ import annotations

import math
import os
import re

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from pe_reference import reference_table

from pe_lib import angular_frequencies, relative_shift_matrix, sinusoidal_table, wavelengths
from pe_lib.encodings.sinusoidal import _CHUNK_POSITIONS

d_models = st.integers(min_value=1, max_value=48)
bases = st.floats(min_value=1.5, max_value=1e5, allow_nan=False, allow_infinity=False)
offsets = st.integers(min_value=0, max_value=1_000_000)
layouts = st.sampled_from(["interleaved", "half"])

# Max abs error allowed against the float64 reference: float64 angles agree to ~1e-10 at
# position 1e6 (the reference divides by base^(2i/d), pe_lib multiplies by base^(-2i/d)), and a
# float32 result adds at most half an ulp of 1 (6e-8).
ATOL = {torch.float64: 1e-9, torch.float32: 1e-7}


@given(
    num_positions=st.integers(min_value=1, max_value=24),
    d_model=d_models,
    base=bases,
    offset=offsets,
    layout=layouts,
    dtype=st.sampled_from([torch.float32, torch.float64]),
)
def test_table_matches_reference(num_positions, d_model, base, offset, layout, dtype):
    table = sinusoidal_table(
        num_positions, d_model, base=base, offset=offset, layout=layout, dtype=dtype
    )
    assert table.shape == (num_positions, d_model)
    assert table.dtype == dtype
    expected = reference_table(num_positions, d_model, base=base, offset=offset, layout=layout)
    np.testing.assert_allclose(table.double().numpy(), expected, rtol=0, atol=ATOL[dtype])


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
@pytest.mark.parametrize("device", [None, "cpu", torch.device("cpu")])
def test_dtype_and_device_arguments(dtype, device):
    table = sinusoidal_table(50, 9, offset=1000, dtype=dtype, device=device)
    assert table.dtype == dtype and table.device.type == "cpu" and table.shape == (50, 9)
    # Cast from float64 values: within half an ulp of the largest magnitude, 1.
    half_ulp = torch.finfo(dtype).eps / 2
    expected = reference_table(50, 9, offset=1000)
    np.testing.assert_allclose(table.double().numpy(), expected, rtol=0, atol=half_ulp + 1e-12)


def test_meta_device_and_defaults():
    on_meta = sinusoidal_table(7, 6, device="meta", dtype=torch.float64)
    assert on_meta.device.type == "meta" and on_meta.shape == (7, 6)
    default = sinusoidal_table(7, 6)
    assert default.dtype == torch.float32 and default.device.type == "cpu"
    torch.testing.assert_close(default, sinusoidal_table(7, 6, layout="interleaved"))


@given(d_model=d_models, offset=offsets, base=bases)
def test_half_layout_is_a_permutation_of_interleaved(d_model, offset, base):
    interleaved = sinusoidal_table(5, d_model, base=base, offset=offset, dtype=torch.float64)
    half = sinusoidal_table(
        5, d_model, base=base, offset=offset, layout="half", dtype=torch.float64
    )
    sines_then_cosines = list(range(0, d_model, 2)) + list(range(1, d_model, 2))
    assert sorted(sines_then_cosines) == list(range(d_model))
    assert torch.equal(half, interleaved[:, sines_then_cosines])


@given(d_model=d_models, offset=offsets, base=bases)
def test_squared_norm(d_model, offset, base):
    """Each sin/cos pair contributes sin^2 + cos^2 = 1, so ||PE(pos)||^2 = d/2 for even d.

    For odd d = 2m + 1 the last column is a sine without its cosine partner, at frequency
    omega_m = base^(-2m/d) = base^(-(d-1)/d): ||PE(pos)||^2 = (d-1)/2 + sin^2(pos * omega_m).
    """
    table = sinusoidal_table(20, d_model, base=base, offset=offset, dtype=torch.float64)
    squared_norms = (table**2).sum(dim=1).numpy()
    positions = np.arange(offset, offset + 20, dtype=np.float64)
    if d_model % 2 == 0:
        expected = np.full(20, d_model / 2)
    else:
        last_frequency = base ** (-(d_model - 1) / d_model)
        expected = (d_model - 1) / 2 + np.sin(positions * last_frequency) ** 2
    np.testing.assert_allclose(squared_norms, expected, rtol=0, atol=1e-9)


@given(d_model=d_models, base=bases)
def test_frequencies_and_wavelengths(d_model, base):
    omega, lam = angular_frequencies(d_model, base), wavelengths(d_model, base)
    num_pairs = math.ceil(d_model / 2)
    for values in (omega, lam):
        assert values.dtype == torch.float64 and values.shape == (num_pairs,)
    assert omega[0].item() == 1.0
    assert lam[0].item() == pytest.approx(2 * math.pi, rel=1e-15)
    # A geometric progression: consecutive ratios all equal base^(-2/d) (and its inverse).
    ratio = base ** (-2 / d_model)
    np.testing.assert_allclose((omega[1:] / omega[:-1]).numpy(), ratio, rtol=1e-12)
    np.testing.assert_allclose((lam[1:] / lam[:-1]).numpy(), 1 / ratio, rtol=1e-12)
    np.testing.assert_allclose((omega * lam).numpy(), 2 * math.pi, rtol=1e-15)
    # The longest wavelength stays below 2*pi*base (it is 2*pi*base^((d-1)/d) or less).
    assert lam[-1].item() < 2 * math.pi * base


def test_paper_wavelength_range():
    lam = wavelengths(512)
    assert lam[0].item() == pytest.approx(2 * math.pi)
    assert lam[-1].item() == pytest.approx(2 * math.pi * 10000 ** (510 / 512))


@given(offset=st.integers(min_value=0, max_value=10_000), d_model=d_models)
def test_offset_is_a_window_of_a_longer_table(offset, d_model):
    """Rows are computed from integer positions, so a window starting at ``offset`` is
    bitwise the same as the matching rows of a table starting at 0."""
    window = sinusoidal_table(8, d_model, offset=offset, dtype=torch.float64)
    longer = sinusoidal_table(offset + 8, d_model, dtype=torch.float64)
    assert torch.equal(window, longer[offset:])


def test_rows_across_chunk_boundaries():
    num_positions = 2 * _CHUNK_POSITIONS + 3
    table = sinusoidal_table(num_positions, 6, dtype=torch.float64)
    rows = [0, _CHUNK_POSITIONS - 1, _CHUNK_POSITIONS, 2 * _CHUNK_POSITIONS, num_positions - 1]
    for row in rows:
        expected = reference_table(1, 6, offset=row)[0]
        np.testing.assert_allclose(table[row].numpy(), expected, rtol=0, atol=1e-12)


def test_odd_d_model_last_column_is_a_sine():
    table = sinusoidal_table(30, 7, dtype=torch.float64)
    positions = torch.arange(30, dtype=torch.float64)
    torch.testing.assert_close(table[:, 6], torch.sin(positions * 10000.0 ** (-6 / 7)))


DEPRECATED = {
    "sinusoidal_table start=": (
        lambda: sinusoidal_table(9, 6, start=4, dtype=torch.float64),
        lambda: sinusoidal_table(9, 6, offset=4, dtype=torch.float64),
        "start= is deprecated, use offset=",
    ),
    "sinusoidal_table layout='concat'": (
        lambda: sinusoidal_table(9, 7, layout="concat", dtype=torch.float64),
        lambda: sinusoidal_table(9, 7, layout="half", dtype=torch.float64),
        "layout='concat' is deprecated, use layout='half'",
    ),
    "relative_shift_matrix layout='concat'": (
        lambda: relative_shift_matrix(3, 6, layout="concat"),
        lambda: relative_shift_matrix(3, 6, layout="half"),
        "layout='concat' is deprecated, use layout='half'",
    ),
}


@pytest.mark.parametrize("name", DEPRECATED)
def test_deprecated_names_warn_naming_the_new_one_and_mean_it(name):
    """The older names still work, with a DeprecationWarning at the caller's line."""
    old, new, message = DEPRECATED[name]
    with pytest.warns(DeprecationWarning, match=re.escape(message)) as record:
        result = old()
    assert record[0].filename == __file__
    assert torch.equal(result, new())


def test_an_old_and_a_new_name_together_are_refused():
    with pytest.raises(TypeError, match=r"offset and start are the same argument.*offset=1"):
        sinusoidal_table(4, 2, offset=1, start=1)


# --- sizes no machine holds ---------------------------------------------------------------------


def test_a_table_no_memory_could_hold_is_refused_naming_its_size() -> None:
    """2**31 x 2**31 float32 values (16 EiB): refused before anything is allocated."""
    with pytest.raises(ValueError, match=r"num_positions=2147483648, d_model=2147483648") as error:
        sinusoidal_table(2**31, 2**31)
    assert "16.0 EiB" in str(error.value) and "more than this machine has" in str(error.value)


def test_an_allocation_that_fails_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the machine's memory is not known, the allocator is the judge: 2**46 rows of 2
    float32 values (512 TiB, beyond any process's address space) fail at once, and the error
    is raised again naming the sizes and the bytes."""
    monkeypatch.setattr("pe_lib._validation.memory_limit", lambda: None)
    with pytest.raises(MemoryError, match=r"num_positions=70368744177664, d_model=2\).*512\.0 TiB"):
        sinusoidal_table(2**46, 2)


def test_the_memory_limit_is_the_smaller_of_the_machine_and_its_container() -> None:
    from pe_lib._validation import memory_limit

    limit = memory_limit()
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert limit is not None and 0 < limit <= physical
    sinusoidal_table(4096, 64)  # an ordinary table is far below it
