"""Chapter 4 (trig identities): the shift matrix and which bilinear scores see direction.

The two property checkers compute p_mᵀ A p_n from the package's sinusoidal table
and ask whether the reader's coefficients or matrix reproduce it.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from pe_book import sinusoidal
from pe_book.exercises.grading import Case, ExerciseMismatch, attempt, check, grader

__all__ = ["check_bilinear_terms", "check_direction_matrix", "check_shift_matrix"]


def check_shift_matrix(reader: Callable[[int, int, float], torch.Tensor]) -> None:
    """Chapter 4: ``reader(shift, dim, base)`` must return M_c with PE(m + c) = M_c PE(m)."""
    sizes = [(0, 2, 10000.0), (1, 4, 10000.0), (5, 8, 100.0), (-3, 6, 10000.0), (40, 16, 1e5)]
    cases = [Case(size, f"shift={size[0]}, dim={size[1]}, base={size[2]:g}") for size in sizes]
    check(
        "shift_matrix",
        reader,
        sinusoidal.shift_matrix,
        cases,
        atol=1e-6,  # float32 answers are fine
        as_tensor=torch.float64,
    )


def _pair_bilinear(w: torch.Tensor, seq_len: int = 24, dim: int = 8) -> torch.Tensor:
    """p_m^T A p_n for every pair i of the paper's table: shape (dim/2, seq_len, seq_len)."""
    table = sinusoidal.sinusoidal_table(seq_len, dim, dtype=torch.float64)
    pairs = table.view(seq_len, dim // 2, 2).transpose(0, 1)  # (dim/2, L, 2): (sin, cos)
    return pairs @ w.to(torch.float64) @ pairs.transpose(1, 2)


def _pair_angles(seq_len: int = 24, dim: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    """(m - n) θ_i and (m + n) θ_i, each of shape (dim/2, seq_len, seq_len)."""
    m = torch.arange(seq_len, dtype=torch.float64)
    theta = sinusoidal.frequencies(dim)[:, None, None]
    return (m[:, None] - m[None, :]) * theta, (m[:, None] + m[None, :]) * theta


@grader
def check_bilinear_terms(reader: Callable[[torch.Tensor], tuple]) -> str:
    """Chapter 4: ``reader(w)`` returns (α, β, γ, δ) with, for p = (sin mθ, cos mθ),
    p_mᵀ A p_n = α cos((m−n)θ) + β sin((m−n)θ) + γ cos((m+n)θ) + δ sin((m+n)θ)."""
    generator = torch.Generator().manual_seed(4)
    matrices = [torch.eye(2, dtype=torch.float64), torch.tensor([[0.0, 1.0], [-1.0, 0.0]])]
    matrices += [torch.randn(2, 2, generator=generator, dtype=torch.float64) for _ in range(4)]
    for index, w in enumerate(matrices, start=1):
        coefficients = [float(c) for c in attempt(reader, w.clone())]
        if len(coefficients) != 4:
            raise ExerciseMismatch(f"expected 4 coefficients, got {len(coefficients)}")
        alpha, beta, gamma, delta = coefficients
        diff, total = _pair_angles()
        claimed = (
            alpha * torch.cos(diff)
            + beta * torch.sin(diff)
            + gamma * torch.cos(total)
            + delta * torch.sin(total)
        )
        worst = float((claimed - _pair_bilinear(w)).abs().max())
        if worst > 1e-9:
            raise ExerciseMismatch(
                f"case {index} of {len(matrices)}: A = {w.tolist()}, your coefficients "
                f"{coefficients} miss p_mᵀ A p_n by up to {worst:.3g} (on the first 24 positions)"
            )
    return f"all {len(matrices)} matrices agree with p_mᵀ A p_n from pe_book."


@grader
def check_direction_matrix(reader: Callable[[], torch.Tensor]) -> str:
    """Chapter 4: ``reader()`` returns a 2 × 2 A with p_mᵀ A p_n = sin((m − n)θ) always."""
    w = torch.as_tensor(attempt(reader), dtype=torch.float64)
    if w.shape != (2, 2):
        raise ExerciseMismatch(f"expected a 2 × 2 matrix, got shape {tuple(w.shape)}")
    diff, _ = _pair_angles()
    worst = float((_pair_bilinear(w) - torch.sin(diff)).abs().max())
    if worst > 1e-9:
        raise ExerciseMismatch(
            f"p_mᵀ A p_n misses sin((m − n)θ) by up to {worst:.3g} for A = {w.tolist()}"
        )
    return "p_mᵀ A p_n = sin((m − n)θ): this score knows the direction."
