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


# ---- third cold read (s31): evidence that uses its input, checkers that see more ---------


def test_component_identities_table_half_uses_the_identities_it_is_given():
    """A flipped sign used to fail the proof while the table line still said < 1e-12."""
    even, odd = rotation.source_identities()
    finding = claims.run("000-component-identities", identities=(even, -odd))
    assert str(finding.verdict) == "does not hold"
    assert "largest difference from PE(m + c) 2 " in finding.shown[1], finding.shown[1]
    assert rotation.identities_on_table((even, -odd), rotation.paper_table) > 1


def test_no_global_rotation_fails_on_a_random_table():
    """Comparing the angle at rows 0 and c passed a random table (closest 4.3e-6 rad)."""

    def random_rows(at, dim):  # row m drawn from seed m: a table, without 245 MB of it
        seeds = [torch.Generator().manual_seed(int(pos)) for pos in at]
        return torch.stack([torch.randn(dim, dtype=F64, generator=g) for g in seeds])

    finding = claims.run("001-no-global-rotation", table=random_rows)
    assert str(finding.verdict) == "does not hold"
    assert "no rotation" in finding.shown[0]


def test_no_global_rotation_fails_when_all_pairs_share_one_frequency():
    def one_frequency(positions, dim):
        return sinusoidal.sinusoidal_table(positions, 2, dtype=F64).repeat(1, dim // 2)

    finding = claims.run("001-no-global-rotation", table=one_frequency)
    assert str(finding.verdict) == "does not hold"
    assert "differ by 0 rad" in finding.shown[0] and "a rotation" in finding.shown[0]


def test_closest_angles_wraps_through_two_pi():
    gap, pair = rotation.closest_angles(torch.tensor([0.001, 1.0, 2 * math.pi - 0.001], dtype=F64))
    assert math.isclose(gap, 0.002, rel_tol=1e-9) and pair == [0, 2]


def _shift_block_answer(shift, dim, base):
    import sympy as sp

    from pe_book import symbolic

    thetas = [float(t) for t in sinusoidal.frequencies(dim, base)]
    blocks = sp.diag(*(symbolic.shift_block(shift, t) for t in thetas)).evalf()
    return torch.tensor(sp.matrix2numpy(blocks, dtype=float))


def _rope_answer(shift, dim, base):
    from pe_book.rope import apply_rope

    return apply_rope(torch.eye(dim, dtype=F64), torch.full((dim,), shift), base=base)


@pytest.mark.parametrize(
    ("reader", "called"),
    [(_shift_block_answer, "symbolic.shift_block"), (_rope_answer, "rope.apply_rope")],
)
def test_shift_matrix_built_from_package_blocks_or_rope_is_not_own_work(reader, called):
    _fails(exercises.check_shift_matrix, reader, called, "write it yourself")


def test_shift_matrix_dropped_sign_is_told_so():
    message = _fails(exercises.check_shift_matrix, lambda c, d, b: _shift(abs(c), d, b))
    assert "case 4 of 7" in message and "drop the sign" in message
    assert "other way: it is M_(−c)" not in message


@pytest.mark.parametrize(
    ("flip", "missing"),
    [(1, "β sin((m−n)θ)"), (2, "γ cos((m+n)θ)"), (3, "δ sin((m+n)θ)")],
)
def test_bilinear_terms_sign_error_names_the_term_that_misses(flip, missing):
    def answer(w):
        (a11, a12), (a21, a22) = w.tolist()
        terms = [(a11 + a22) / 2, (a21 - a12) / 2, (a11 - a22) / 2, (a12 + a21) / 2]
        terms[flip] = -terms[flip]
        return tuple(terms)

    message = _fails(exercises.check_bilinear_terms, answer, f"the terms that miss: {missing} (")
    assert "-1.6052762948770103" not in message and "-1.6053" in message  # A to 4 digits


def test_direction_matrix_accepts_a_sympy_matrix_and_says_what_kind_it_is(capsys):
    import sympy as sp

    half, root = sp.Rational(1, 2), sp.sqrt(3) / 2
    exercises.check_direction_matrix(lambda: sp.Matrix([[half, root], [-root, half]]))
    assert "R(−π/3): a rotation" in capsys.readouterr().out
    _fails(exercises.check_direction_matrix, lambda: sp.Matrix([[0, 1], [-1, 0]]), "misses")


def test_exact_singular_values_match_the_30_digit_rank_and_refuse_bad_input():
    from pe_book.diagnostics import exact_singular_values

    sigma = exact_singular_values(8, 4, digits=20)
    columns = sinusoidal.sinusoidal_table(8, 4, dtype=F64).T
    assert torch.allclose(torch.tensor(sigma, dtype=F64), torch.linalg.svdvals(columns))
    for bad in (
        {"seq_len": 0, "dim": 4},
        {"seq_len": 8, "dim": 5},
        {"seq_len": 8, "dim": 4, "digits": 8},
    ):
        with pytest.raises(ValueError, match=r"seq_len|dim|digits"):
            exact_singular_values(**bad)


def test_counterfactual_tables_are_what_they_say():
    positions = torch.tensor([3, 7, 3])
    rows = rotation.random_table(positions, 6)
    assert torch.equal(rows[0], rows[2]) and not torch.equal(rows[0], rows[1])
    one = rotation.one_frequency_table(positions, 6)
    assert torch.equal(one[:, 0:2], one[:, 4:6])
