"""pe_lib.encodings.relative: PE(pos + k) = M_k PE(pos), with M_k orthogonal and independent of pos."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from pe_lib import relative_shift_matrix, sinusoidal_table

even_d_models = st.integers(min_value=1, max_value=32).map(lambda half: 2 * half)
layouts = st.sampled_from(["interleaved", "half"])
bases = st.floats(min_value=1.5, max_value=1e5, allow_nan=False, allow_infinity=False)


@given(
    d_model=even_d_models,
    pos=st.integers(min_value=0, max_value=20_000),
    k=st.integers(min_value=-20_000, max_value=20_000),
    layout=layouts,
    base=bases,
)
def test_shift_identity(d_model, pos, k, layout, base):
    if pos + k < 0:
        pos = -k  # the table starts at position 0
    matrix = relative_shift_matrix(k, d_model, base=base, layout=layout)
    here = sinusoidal_table(1, d_model, base=base, offset=pos, layout=layout, dtype=torch.float64)
    there = sinusoidal_table(
        1, d_model, base=base, offset=pos + k, layout=layout, dtype=torch.float64
    )
    torch.testing.assert_close(matrix @ here[0], there[0], rtol=0, atol=1e-9)


@pytest.mark.parametrize("layout", ["interleaved", "half"])
@pytest.mark.parametrize("k", [1, 7, 250])
def test_one_matrix_shifts_every_position(layout, k):
    """The same M_k maps every row of a table to the row k further on."""
    table = sinusoidal_table(600, 16, layout=layout, dtype=torch.float64)
    matrix = relative_shift_matrix(k, 16, layout=layout)
    torch.testing.assert_close(table[:-k] @ matrix.T, table[k:], rtol=0, atol=1e-10)
    backwards = relative_shift_matrix(-k, 16, layout=layout)
    torch.testing.assert_close(table[k:] @ backwards.T, table[:-k], rtol=0, atol=1e-10)


@given(
    d_model=even_d_models,
    a=st.integers(min_value=-5000, max_value=5000),
    b=st.integers(min_value=-5000, max_value=5000),
    layout=layouts,
)
def test_orthogonal_group_structure(d_model, a, b, layout):
    m_a = relative_shift_matrix(a, d_model, layout=layout)
    m_b = relative_shift_matrix(b, d_model, layout=layout)
    identity = torch.eye(d_model, dtype=torch.float64)
    torch.testing.assert_close(m_a @ m_a.T, identity, rtol=0, atol=1e-12)
    torch.testing.assert_close(relative_shift_matrix(-a, d_model, layout=layout), m_a.T)
    torch.testing.assert_close(
        m_a @ m_b, relative_shift_matrix(a + b, d_model, layout=layout), rtol=0, atol=1e-9
    )
    assert torch.equal(relative_shift_matrix(0, d_model, layout=layout), identity)


def test_interleaved_matrix_is_block_diagonal_2x2():
    matrix = relative_shift_matrix(3, 10)
    pair_of_row = torch.arange(10) // 2
    outside_blocks = pair_of_row[:, None] != pair_of_row[None, :]
    assert torch.count_nonzero(matrix[outside_blocks]) == 0
    assert torch.count_nonzero(matrix[~outside_blocks]) == 20


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_dtype_argument(dtype):
    matrix = relative_shift_matrix(5, 8, dtype=dtype)
    assert matrix.dtype == dtype and matrix.shape == (8, 8)
    assert torch.equal(matrix, relative_shift_matrix(5, 8).to(dtype))


@pytest.mark.parametrize("d_model", [1, 3, 513])
def test_odd_d_model_has_no_shift_matrix(d_model):
    with pytest.raises(ValueError, match=rf"d_model must be even.*got {d_model}"):
        relative_shift_matrix(1, d_model)
