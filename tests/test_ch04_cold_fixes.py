"""What the second cold read of chapter 4 found, kept from coming back.

Wrong answers that passed (or failed without the reason) now fail with it; the shift
claims' evidence is well conditioned and checks what its reason says; the rank text's
claim that the shortfall is the positions', not double precision's, is checked with
30 digits.
"""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from pe_book import claims, exercises, sinusoidal
from pe_book.claims import rotation

F64 = torch.float64


def _shift(shift, dim, base, *, theta_dtype=F64, angle_dtype=F64, backwards=False, half=False):
    """Exercise 4.1's matrix, with the known mistakes switchable."""
    theta = base ** (-2 * torch.arange(dim // 2, dtype=theta_dtype) / dim)
    angle = (shift * theta.to(angle_dtype)).to(F64) * (-1 if backwards else 1)
    matrix = torch.zeros(dim, dim, dtype=F64)
    matrix[0::2, 0::2] = torch.diag(torch.cos(angle))
    matrix[0::2, 1::2] = torch.diag(torch.sin(angle))
    matrix[1::2, 0::2] = torch.diag(-torch.sin(angle))
    matrix[1::2, 1::2] = torch.diag(torch.cos(angle))
    if half:
        perm = sinusoidal.layout_permutation(dim)
        matrix = matrix[perm][:, perm]
    return matrix


def _fails(checker, reader, *needles):
    with pytest.raises(exercises.ExerciseMismatch) as caught:
        checker(reader)
    for needle in needles:
        assert needle in str(caught.value), str(caught.value)
    return str(caught.value)


# ---- exercise 4.1: the mistakes the chapter warns about are named -----------------------


def test_shift_matrix_right_answer_passes(capsys):
    exercises.check_shift_matrix(_shift)
    assert "all 7 cases agree" in capsys.readouterr().out


def test_shift_matrix_turning_the_wrong_way_is_told_so():
    _fails(exercises.check_shift_matrix, lambda *a: _shift(*a, backwards=True), "other way")


def test_shift_matrix_half_layout_is_told_so():
    _fails(exercises.check_shift_matrix, lambda *a: _shift(*a, half=True), "half layout")


@pytest.mark.parametrize(
    "mistake",
    [
        {"theta_dtype": torch.float32},  # θ in float32, then .double(): a float64 result
        {"angle_dtype": torch.float32},  # θ in float64, c·θ in float32
    ],
)
def test_shift_matrix_float32_angles_in_a_float64_matrix_get_the_float32_note(mistake):
    message = _fails(exercises.check_shift_matrix, lambda *a: _shift(*a, **mistake))
    assert "case 6 of 7" in message and "float32 angles" in message


# ---- exercise 4.2: a 2 × 2 answer is told what shape is expected ------------------------


def test_bilinear_terms_matrix_shaped_answer_gets_a_shape_message():
    message = _fails(
        exercises.check_bilinear_terms,
        lambda w: torch.tensor([1.0, 0.0, 0.0, 0.0]).reshape(2, 2),
        "expected 4 numbers",
        "(2, 2)",
    )
    assert "only one element tensors" not in message


# ---- exercise 4.3: section 4.3's J (its answer before) no longer passes ----------------

ROOT3 = 0.75**0.5


def test_direction_matrix_right_answer_passes(capsys):
    exercises.check_direction_matrix(lambda: torch.tensor([[0.5, ROOT3], [-ROOT3, 0.5]]))
    assert "knows the direction" in capsys.readouterr().out


def test_direction_matrix_the_answer_printed_in_section_4_3_fails():
    _fails(exercises.check_direction_matrix, lambda: torch.tensor([[0.0, 1.0], [-1.0, 0.0]]))


def test_direction_matrix_other_way_or_chapter_2_order_is_told_both_causes():
    _fails(
        exercises.check_direction_matrix,
        lambda: torch.tensor([[0.5, -ROOT3], [ROOT3, 0.5]]),
        "other side",
        "(cos, sin)",
    )


def test_direction_matrix_with_m_plus_n_terms_is_told_so():
    _fails(
        exercises.check_direction_matrix,
        lambda: torch.tensor([[1.0, ROOT3], [-ROOT3, 0.0]]),
        "terms in m + n",
    )


# ---- the shift claims' evidence: well conditioned, and it checks what it says ----------


def _float32_table(positions, dim):
    return sinusoidal.sinusoidal_table(positions, dim, dtype=torch.float32).double()


def _cos_sin_table(positions, dim):
    table = rotation.paper_table(positions, dim)
    return table.view(len(positions), dim // 2, 2).flip(-1).reshape(len(positions), dim)


def test_shift_fit_is_well_conditioned():
    assert rotation.fit_condition(rotation.paper_table, 1, 16) < 2
    # 400 consecutive rows: what the evidence used before (condition number 1.6e9)
    consecutive = rotation.paper_table(torch.arange(1, 401), 16)
    assert float(torch.linalg.cond(consecutive)) > 1e8


def test_correct_table_in_float32_still_holds():
    """The cold read's counterfactual: pe_book's own table in float32 flipped both verdicts
    through the ill-conditioned fit (errors 0.53 and 5.1); it is the right table."""
    for claim_id in ("001-shift-is-linear", "001-rotation-matrix"):
        assert str(claims.run(claim_id, table=_float32_table).verdict) == "holds"


def test_random_table_fails_shift_is_linear():
    rows = torch.randn(60_000, 16, generator=torch.Generator().manual_seed(0), dtype=F64)
    finding = claims.run("001-shift-is-linear", table=lambda at, dim: rows[at])
    assert str(finding.verdict) == "does not hold"


def test_rotation_evidence_checks_the_direction_its_reason_states():
    """In (cos, sin) order the same shift is R(+cθ_i): a rotation, but not the clockwise
    −cθ_i of the reason, so the evidence must not pass it."""
    finding = claims.run("001-rotation-matrix", table=_cos_sin_table)
    assert str(finding.verdict) == "does not hold"
    assert "−cθ_i" in claims.get("001-rotation-matrix").reason


def test_shift_is_linear_reason_no_longer_credits_sympy_to_this_evidence():
    reason = claims.get("001-shift-is-linear").reason
    assert not reason.startswith("SymPy proves")


# ---- section 4.3: the rank shortfall at L = 64 is the positions', not float64's --------


def test_rank_26_at_64_positions_holds_with_30_digits():
    mpmath = pytest.importorskip("mpmath")
    with mpmath.workdps(30):
        dim = length = 64
        columns = mpmath.matrix(dim, length)
        for i in range(dim // 2):
            theta = mpmath.mpf(10000) ** (-mpmath.mpf(2 * i) / dim)
            for m in range(length):
                columns[2 * i, m] = mpmath.sin(m * theta)
                columns[2 * i + 1, m] = mpmath.cos(m * theta)
        sigma = sorted((float(s) for s in mpmath.svd_r(columns, compute_uv=False)), reverse=True)
    tolerance = sigma[0] * 64 * 2.0**-52  # torch's default, as the chapter prints it
    assert sum(s > tolerance for s in sigma) == 26
    assert sigma[-1] < 1e-30
    assert all(a / b >= 25 for a, b in itertools.pairwise(sigma[20:26]))
    assert math.isclose(sigma[25], 9.5e-13, rel_tol=0.01)
