"""Chapter 4 (trig identities): the shift matrix and which bilinear scores see direction.

The two property checkers compute p_mᵀ A p_n from the package's sinusoidal table
and ask whether the reader's coefficients or matrix reproduce it.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable

import torch

from pe_book import sinusoidal
from pe_book.exercises import own_work
from pe_book.exercises.grading import Case, ExerciseMismatch, attempt, check, grader
from pe_book.exercises.policy import float32_note
from pe_book.exercises.secret import seeded

__all__ = ["check_bilinear_terms", "check_direction_matrix", "check_shift_matrix"]

#: Exercise 4.1 asks for M_c built by hand: section 4.1's blocks (symbolic.shift_block, which
#: cell c009 stacks into M_c) and RoPE applied to the identity hand it over as well.
own_work.also_watch(
    "shift_matrix",
    "pe_book.symbolic.shift_block",
    "pe_book.rope.apply_rope",
    "pe_book.rope.rotate",
    "pe_book.rope.Rope",
)

#: Why exercise 4.1 needs float64 angles (measured: d = 16, b = 10^4, c = 10,000).
FLOAT32_ANGLES = (
    "form θ_i and the angles c·θ_i in float64, because shifts reach 12,345 here, and at a"
    " shift of 10,000 float32 angles are already off by 7e-5, seventy times the tolerance"
    " (a float32 matrix built from float64 angles is fine)"
)


def check_shift_matrix(reader: Callable[[int, int, float], torch.Tensor]) -> None:
    """Chapter 4: ``reader(shift, dim, base)`` must return M_c with PE(m + c) = M_c PE(m),
    to within 1e-6 (shifts reach 12,345: the angles must be float64). A miss is told
    when the matrix turns the pairs the wrong way, is in the half layout, or misses
    only at the large shifts (float32 angles, whatever dtype the matrix has)."""
    sizes = [
        (1, 4, 10000.0, "a shift by one"),
        (0, 2, 10000.0, "no shift"),
        (5, 8, 100.0, "a small base"),
        (-3, 6, 10000.0, "a negative shift"),
        (40, 16, 1e5, "a shift of tens"),
        (10_000, 16, 10000.0, "a shift of ten thousand: float32 angles are off here"),
        (-12_345, 16, 10000.0, "a large negative shift"),
    ]
    cases = [
        Case(size, f"shift={size[0]}, dim={size[1]}, base={size[2]:g}", kind=kind)
        for *size, kind in sizes
    ]
    calls: list[tuple[tuple, object]] = []

    def recorded(*args: object) -> object:
        calls.append((args, answer := reader(*args)))
        return answer

    try:
        check(
            "shift_matrix",
            recorded,
            sinusoidal.shift_matrix,
            cases,
            atol=1e-6,  # a float32 matrix is fine, float32 angles are not
            float32=FLOAT32_ANGLES,
            locate=lambda case, index: (
                f"row {index[0]}, column {index[1]}: block of pair {index[0] // 2}"
            ),
        )
    except ExerciseMismatch as mismatch:
        hint = _shift_matrix_hint(*calls[-1], str(mismatch)) if calls else None
        if hint:
            raise ExerciseMismatch(f"{mismatch}\n{hint}") from None
        raise


def _shift_matrix_hint(args: tuple, answer: object, message: str) -> str | None:
    """Why the reader's matrix for ``args`` = (shift, dim, base) missed, if it is one of the
    known mistakes: the other direction, the half layout, or float32 angles."""
    shift, dim, base = args
    try:
        got = torch.as_tensor(answer).to(torch.float64)
        right = sinusoidal.shift_matrix(shift, dim, base).to(torch.float64)
        if got.shape != right.shape:
            return None
    except (TypeError, ValueError, RuntimeError):
        return None
    perm = sinusoidal.layout_permutation(dim)

    def near(other: torch.Tensor) -> bool:
        return bool((got - other).abs().max() <= 1e-6)

    backwards = sinusoidal.shift_matrix(-shift, dim, base).to(torch.float64)
    if shift < 0 and near(backwards):  # the positive shifts before it agreed
        return (
            f"For the negative shift c = {shift} your matrix is M_{-shift}, while every"
            " positive shift agreed: did you drop the sign of c (abs, or a square)?"
            " A negative shift turns each pair the other way."
        )
    if near(backwards):
        return (
            "Your matrix turns every pair the other way: it is M_(−c), the inverse of M_c."
            " In the paper's (sin, cos) order a shift turns each pair clockwise (section 4.1,"
            " 'Which way does it turn?')."
        )
    if near(right[perm][:, perm]) or near(backwards[perm][:, perm]):
        return (
            "Your matrix is in the half layout (pair i in dimensions i and i + d/2);"
            " this exercise uses the interleaved layout, pair i in dimensions 2i and 2i + 1."
        )
    worst = float((got - right).abs().max())
    if abs(shift) >= 10_000 and 1e-6 < worst < 1e-3 and "likely cause" not in message:
        return (
            "Every smaller shift agreed, so the likely cause is float32 angles, even if cast"
            " to float64 afterwards (torch's default dtype is float32, so torch.arange and"
            " base ** (...) give float32 unless asked, and .double() does not bring lost"
            f" digits back): {FLOAT32_ANGLES}."
        )
    return None


def _pair_bilinear(w: torch.Tensor, seq_len: int = 24, dim: int = 8) -> torch.Tensor:
    """p_m^T A p_n for every pair i, p_m = (cos mθ_i, sin mθ_i) (chapter 2's order):
    shape (dim/2, seq_len, seq_len), from the package's (sin, cos) table."""
    table = sinusoidal.sinusoidal_table(seq_len, dim, dtype=torch.float64)
    pairs = table.view(seq_len, dim // 2, 2).transpose(0, 1).flip(-1)  # (dim/2, L, 2): (cos, sin)
    return pairs @ w.to(torch.float64) @ pairs.transpose(1, 2)


def _paper_pair_bilinear(w: torch.Tensor) -> torch.Tensor:
    """The same in the paper's (sin, cos) order: the order of section 4.3 and exercise 4.3."""
    flip = torch.tensor([[0.0, 1.0], [1.0, 0.0]], dtype=torch.float64)
    return _pair_bilinear(flip @ w.to(torch.float64) @ flip)


def _pair_angles(seq_len: int = 24, dim: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    """(m - n) θ_i and (m + n) θ_i, each of shape (dim/2, seq_len, seq_len)."""
    m = torch.arange(seq_len, dtype=torch.float64)
    theta = sinusoidal.frequencies(dim)[:, None, None]
    return (m[:, None] - m[None, :]) * theta, (m[:, None] + m[None, :]) * theta


def _four_numbers(answer: object) -> list[float]:
    """The reader's (α, β, γ, δ) as four floats, or a mismatch that says what came back."""
    try:
        values = torch.as_tensor(answer, dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError):
        try:
            values = torch.tensor([float(x) for x in answer], dtype=torch.float64)
        except (TypeError, ValueError, RuntimeError):
            raise ExerciseMismatch(
                f"expected 4 numbers (α, β, γ, δ), got {type(answer).__name__}"
            ) from None
    if values.dim() != 1 or len(values) != 4:
        raise ExerciseMismatch(
            "expected 4 numbers (α, β, γ, δ) in a tuple, list or 1-D tensor, got shape"
            f" {tuple(values.shape)}"
        )
    return values.tolist()


def _terms(coefficients: list[float]) -> torch.Tensor:
    alpha, beta, gamma, delta = coefficients
    diff, total = _pair_angles()
    return (
        alpha * torch.cos(diff)
        + beta * torch.sin(diff)
        + gamma * torch.cos(total)
        + delta * torch.sin(total)
    )


_TERM_NAMES = ("α cos((m−n)θ)", "β sin((m−n)θ)", "γ cos((m+n)θ)", "δ sin((m+n)θ)")


def _terms_that_miss(difference: torch.Tensor) -> str:
    """Which of the four terms a wrong answer gets wrong, without their values: the
    difference from p_mᵀ A p_n is itself a sum of the four terms, so least squares on
    them finds how much of it each carries."""
    diff, total = _pair_angles()
    basis = torch.stack(
        [torch.cos(diff), torch.sin(diff), torch.cos(total), torch.sin(total)], dim=-1
    ).reshape(-1, 4)
    share = torch.linalg.lstsq(basis, difference.reshape(-1, 1)).solution.flatten()
    wrong = [name for name, x in zip(_TERM_NAMES, share.tolist(), strict=True) if abs(x) > 1e-6]
    right = [name for name in _TERM_NAMES if name not in wrong]
    said = f"the terms that miss: {', '.join(wrong) or 'none of the four'}"
    return said + (f" (right: {', '.join(right)})" if right else "")


@grader
def check_bilinear_terms(reader: Callable[[torch.Tensor], tuple]) -> str:
    """Chapter 4: ``reader(w)`` returns (α, β, γ, δ) with, for chapter 2's order
    p = (cos mθ, sin mθ), p_mᵀ A p_n = α cos((m−n)θ) + β sin((m−n)θ) + γ cos((m+n)θ)
    + δ sin((m+n)θ), to within 1e-6 (section 4.3 did the paper's (sin, cos) order)."""
    generator = seeded(4)
    matrices = [
        ("a random A", torch.randn(2, 2, generator=generator, dtype=torch.float64)),
        ("A = I", torch.eye(2, dtype=torch.float64)),
        ("A = J, antisymmetric", torch.tensor([[0.0, 1.0], [-1.0, 0.0]], dtype=torch.float64)),
    ]
    matrices += [
        ("a random A", torch.randn(2, 2, generator=generator, dtype=torch.float64))
        for _ in range(3)
    ]
    for index, (label, w) in enumerate(matrices, start=1):
        answer = attempt(reader, w.clone())
        coefficients = _four_numbers(answer)
        claimed = _terms(coefficients)
        worst = float((claimed - _pair_bilinear(w)).abs().max())
        if not worst <= 1e-6:
            shown = [[round(x, 4) for x in row] for row in w.tolist()]
            problem = (
                f"case {index} of {len(matrices)} ({label}): A = {shown}, your"
                f" coefficients miss p_mᵀ A p_n by up to {worst:.2g} (on the first 24 positions)"
                f"; {_terms_that_miss(claimed - _pair_bilinear(w))}"
            )
            if float((claimed - _paper_pair_bilinear(w)).abs().max()) <= 1e-6:
                problem += (
                    ". They are right for the paper's (sin, cos) order of section 4.3;"
                    " this exercise uses chapter 2's (cos, sin)"
                )
            note = float32_note(answer, answer) if worst <= 1e-3 else None
            raise ExerciseMismatch(f"{problem}. {note}" if note else problem)
    return f"all {len(matrices)} matrices agree with p_mᵀ A p_n from pe_book to within 1e-6."


#: Exercise 4.3's score, cos((m − n)θ − φ): it peaks where the query is φ ahead of the key.
DIRECTION_PHASE = math.pi / 3


@grader
def check_direction_matrix(reader: Callable[[], torch.Tensor]) -> str:
    """Chapter 4: ``reader()`` returns a 2 × 2 A with p_mᵀ A p_n = cos((m − n)θ − π/3)
    always, for the paper's order p = (sin mθ, cos mθ), to within 1e-6."""
    answer = attempt(reader)
    if hasattr(answer, "tolist") and not isinstance(answer, torch.Tensor):  # SymPy, NumPy
        with contextlib.suppress(TypeError, ValueError):  # torch.as_tensor says what is wrong
            answer = [[float(x) for x in row] for row in answer.tolist()]
    w = torch.as_tensor(answer, dtype=torch.float64)
    if w.shape != (2, 2):
        raise ExerciseMismatch(f"expected a 2 × 2 matrix, got shape {tuple(w.shape)}")
    diff, _ = _pair_angles()
    scores = _paper_pair_bilinear(w)
    worst = float((scores - torch.cos(diff - DIRECTION_PHASE)).abs().max())
    if not worst <= 1e-6:
        problem = f"p_mᵀ A p_n misses cos((m − n)θ − π/3) by up to {worst:.2g}"
        leak = max(abs(float(w[1, 1] - w[0, 0])), abs(float(w[0, 1] + w[1, 0]))) / 2
        if float((scores - torch.cos(diff + DIRECTION_PHASE)).abs().max()) <= 1e-6:
            problem += (
                ": it gives cos((m − n)θ + π/3), the peak on the other side (the key ahead"
                " of the query). Check the sign of the sine term, and the order: this"
                " exercise is in the paper's (sin, cos) order, not chapter 2's (cos, sin)"
            )
        elif leak > 1e-6:
            problem += (
                ": your A has terms in m + n (its symmetric part with trace 0 is not zero),"
                " so the score also depends on where the pair is, not only on m − n"
            )
        raise ExerciseMismatch(problem)
    return (
        "p_mᵀ A p_n = cos((m − n)θ − π/3): it knows the direction. Your A is"
        " cos(π/3) I + sin(π/3) J = R(−π/3): a rotation, with no symmetric traceless part."
    )
