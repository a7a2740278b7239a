"""pe_book.sinusoidal against the paper's formula, and the identities chapters 3-4 prove."""

import math

import pytest
import sympy as sp
import torch
from hypothesis import given
from hypothesis import strategies as st

from pe_book import symbolic
from pe_book.sinusoidal import (
    SinusoidalEncoding,
    frequencies,
    layout_permutation,
    position_angles,
    shift_matrix,
    sinusoidal_table,
    wavelengths,
)

dims = st.integers(1, 64).map(lambda half: 2 * half)
bases = st.floats(2.0, 1e6)


def paper_reference(seq_len: int, dim: int, base: float = 10000.0) -> list[list[float]]:
    """Vaswani et al. 2017, section 3.5, entry by entry in float64 (independent of pe_book)."""
    table = []
    for pos in range(seq_len):
        row = []
        for j in range(dim):
            i = j // 2  # dimensions 2i and 2i+1 share the frequency of pair i
            angle = pos / base ** (2 * i / dim)
            row.append(math.sin(angle) if j % 2 == 0 else math.cos(angle))
        table.append(row)
    return table


@given(st.integers(0, 40), dims, bases)
def test_interleaved_table_is_the_papers_formula(seq_len, dim, base):
    expected = torch.tensor(paper_reference(seq_len, dim, base), dtype=torch.float64).reshape(
        seq_len, dim
    )
    got = sinusoidal_table(seq_len, dim, base, dtype=torch.float64)
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-12)


def test_paper_values_at_known_positions():
    table = sinusoidal_table(3, 4, dtype=torch.float64)  # θ = (1, 1/100)
    expected = torch.tensor(
        [
            [0, 1, 0, 1],
            [math.sin(1), math.cos(1), math.sin(0.01), math.cos(0.01)],
            [math.sin(2), math.cos(2), math.sin(0.02), math.cos(0.02)],
        ],
        dtype=torch.float64,
    )
    torch.testing.assert_close(table, expected, rtol=0, atol=1e-15)


@given(st.integers(1, 30), dims, bases)
def test_layouts_differ_by_a_permutation(seq_len, dim, base):
    interleaved = sinusoidal_table(seq_len, dim, base, "interleaved", dtype=torch.float64)
    half = sinusoidal_table(seq_len, dim, base, "half", dtype=torch.float64)
    assert torch.equal(half, interleaved[:, layout_permutation(dim)])


@given(dims)
def test_layout_permutation_is_a_permutation_sines_first(dim):
    perm = layout_permutation(dim)
    assert sorted(perm) == list(range(dim))
    assert all(j % 2 == 0 for j in perm[: dim // 2]) and all(j % 2 == 1 for j in perm[dim // 2 :])


@given(dims, bases)
def test_frequencies_and_wavelengths(dim, base):
    theta, lam = frequencies(dim, base), wavelengths(dim, base)
    assert theta.dtype == torch.float64 and theta.shape == (dim // 2,)
    assert theta[0] == 1.0 and bool((theta[1:] < theta[:-1]).all())
    torch.testing.assert_close(theta * lam, torch.full_like(theta, 2 * math.pi))
    assert math.isclose(float(lam[-1]), 2 * math.pi * base ** (1 - 2 / dim), rel_tol=1e-12)


@given(st.integers(0, 10**6), st.integers(-1000, 1000), dims, bases)
def test_shift_is_a_rotation(pos, shift, dim, base):
    """PE(m + c) = M_c PE(m), with M_c independent of m (chapter 4)."""
    if pos + shift < 0:
        shift = -pos
    rows = sinusoidal_table(torch.tensor([pos, pos + shift]), dim, base, dtype=torch.float64)
    torch.testing.assert_close(
        shift_matrix(shift, dim, base) @ rows[0], rows[1], rtol=0, atol=1e-9
    )


@given(st.integers(-500, 500), dims, bases)
def test_shift_matrix_is_orthogonal_and_composes(shift, dim, base):
    m_c = shift_matrix(shift, dim, base)
    eye = torch.eye(dim, dtype=torch.float64)
    torch.testing.assert_close(m_c.T @ m_c, eye, rtol=0, atol=1e-12)
    torch.testing.assert_close(
        shift_matrix(shift, dim, base) @ shift_matrix(3, dim, base),
        shift_matrix(shift + 3, dim, base),
        rtol=0,
        atol=1e-9,
    )


@given(st.integers(1, 200), dims, bases)
def test_every_pair_lies_on_the_unit_circle(seq_len, dim, base):
    table = sinusoidal_table(seq_len, dim, base, dtype=torch.float64)
    pairs = table.view(seq_len, dim // 2, 2)
    torch.testing.assert_close(
        pairs.pow(2).sum(-1), torch.ones(seq_len, dim // 2, dtype=torch.float64)
    )
    torch.testing.assert_close(
        table.norm(dim=-1), torch.full((seq_len,), math.sqrt(dim / 2), dtype=torch.float64)
    )


@given(st.integers(1, 60), dims, bases)
def test_dot_product_depends_on_the_offset_only(seq_len, dim, base):
    table = sinusoidal_table(seq_len, dim, base, dtype=torch.float64)
    gram = table @ table.T
    offsets = torch.arange(seq_len)[:, None] - torch.arange(seq_len)[None, :]
    expected = torch.cos(offsets[..., None].to(torch.float64) * frequencies(dim, base)).sum(-1)
    torch.testing.assert_close(gram, expected, rtol=0, atol=1e-9)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_output_dtype_is_rounded_once_from_float64_angles(dtype):
    positions = torch.tensor([60_000, 60_001, 99_999])
    table = sinusoidal_table(positions, 64, dtype=dtype)
    exact = sinusoidal_table(positions, 64, dtype=torch.float64)
    assert table.dtype == dtype
    torch.testing.assert_close(
        table.to(torch.float64), exact.to(dtype).to(torch.float64), rtol=0, atol=0
    )
    assert not torch.equal(table[0], table[1])  # neighbours stay apart, even in 16 bits


def test_angles_are_exact_for_large_integer_positions():
    angles = position_angles(torch.tensor([2**40 + 1]), 2)
    assert float(angles[0, 0]) == 2**40 + 1


def test_symbolic_shift_block_matches_the_package():
    shift, theta = sp.symbols("c theta", real=True)
    block = symbolic.shift_block(shift, theta)

    def numeric(k, t):
        c, s = math.cos(k * t), math.sin(k * t)
        return torch.tensor([[c, s], [-s, c]], dtype=torch.float64)

    symbolic.compare_with_code(block, numeric, [shift, theta])
    # and the package's shift matrix has exactly these blocks (θ_0 = 1 for the first pair)
    torch.testing.assert_close(shift_matrix(5, 2), numeric(5, 1.0))


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"seq_len": 4, "dim": 7}, ValueError, "dim must be even"),
        ({"seq_len": 4, "dim": 0}, ValueError, "dim must be an int >= 2"),
        ({"seq_len": -1, "dim": 8}, ValueError, "seq_len must be an int >= 0"),
        ({"seq_len": 4, "dim": 8, "base": 1.0}, ValueError, "base must be a finite number > 1"),
        ({"seq_len": 4, "dim": 8, "layout": "pairs"}, ValueError, "layout must be one of"),
        ({"seq_len": 4.0, "dim": 8}, TypeError, "seq_len must be an int"),
        ({"seq_len": torch.tensor([0.0, 1.5]), "dim": 8}, TypeError, "integer tensor"),
        (
            {"seq_len": torch.zeros(2, 2, dtype=torch.long), "dim": 8},
            ValueError,
            "positions must have rank 1",
        ),
        ({"seq_len": 4, "dim": 8, "dtype": torch.long}, TypeError, "floating-point torch.dtype"),
    ],
)
def test_bad_input_is_refused_with_a_clear_message(kwargs, error, message):
    with pytest.raises(error, match=message):
        sinusoidal_table(**kwargs)


def test_module_adds_the_table_and_grows_without_recomputing_per_call():
    encoding = SinusoidalEncoding(8, max_len=4)
    x = torch.zeros(2, 3, 8)
    torch.testing.assert_close(encoding(x), sinusoidal_table(3, 8).expand(2, 3, 8))
    table_before = encoding.table
    encoding(x)
    assert encoding.table is table_before  # same buffer: nothing rebuilt
    long = encoding(torch.zeros(10, 8), start=5)  # needs 15 rows: grows to 16
    assert encoding.table.shape == (16, 8)
    torch.testing.assert_close(long, sinusoidal_table(torch.arange(5, 15), 8))
    assert "table" not in encoding.state_dict()  # a buffer, but not saved in checkpoints


def test_module_rejects_bad_input():
    with pytest.raises(ValueError, match="x must have last dimension dim=8"):
        SinusoidalEncoding(8)(torch.zeros(3, 6))
    with pytest.raises(ValueError, match="start must be an int >= 0"):
        SinusoidalEncoding(8)(torch.zeros(3, 8), start=-1)
    with pytest.raises(ValueError, match="dim must be even"):
        SinusoidalEncoding(7)


def test_encoding_table_grows_to_a_power_of_two_and_keeps_its_dtype():
    encoding = SinusoidalEncoding(8, max_len=4, dtype=torch.float64)
    encoding(torch.zeros(5, 8, dtype=torch.float64))  # needs 5 rows: 8
    assert encoding.table.shape == (8, 8) and encoding.table.dtype == torch.float64
    expected = sinusoidal_table(8, 8, dtype=torch.float64)
    assert torch.equal(encoding.table, expected)
    assert "table" not in encoding.state_dict()  # non-persistent
