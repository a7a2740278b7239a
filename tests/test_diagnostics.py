"""pe_book.diagnostics: the Toeplitz deviation is zero exactly for functions of m - n."""

import torch
from hypothesis import given
from hypothesis import strategies as st

from pe_book.diagnostics import toeplitz_deviation


@given(st.integers(1, 12), st.integers(1, 12), st.integers(0, 2**16))
def test_functions_of_the_offset_have_zero_deviation(rows, cols, seed):
    values = torch.randn(rows + cols, generator=torch.Generator().manual_seed(seed))
    offset = torch.arange(rows)[:, None] - torch.arange(cols)[None, :]
    assert toeplitz_deviation(values[offset + cols - 1]) == 0.0


def test_absolute_position_shows_up():
    m = torch.arange(5.0)
    assert toeplitz_deviation(m[:, None] + m[None, :]) == 8.0  # m + n: main diagonal 0, 2, .., 8
    assert toeplitz_deviation(torch.zeros(1, 4)) == 0.0
