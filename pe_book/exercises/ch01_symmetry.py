"""Chapter 1 (symmetry): permutation matrices, attention, and positions a layer cannot see."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import torch

from pe_book import attention as attn
from pe_book import symmetry
from pe_book.exercises.grading import Case, ExerciseMismatch, attempt, check, grader, show

__all__ = [
    "check_attention",
    "check_invisible_positions",
    "check_permutation_matrix",
    "check_recover_positions",
]


def check_permutation_matrix(reader: Callable[[Sequence[int]], torch.Tensor]) -> None:
    """Chapter 1: ``reader(perm)`` must return P (float32) with P @ X == X[perm]."""
    perms = [p for n in (1, 2, 3) for p in itertools.permutations(range(n))]
    perms += [(4, 0, 3, 1, 2), (5, 4, 3, 2, 1, 0)]
    cases = [Case((list(p),), f"perm={list(p)}") for p in perms]
    check(
        "permutation_matrix",
        reader,
        symmetry.permutation_matrix,
        cases,
        atol=0.0,
        dtype=torch.float32,  # the statement asks for float32
    )


def _attention_cases() -> list[Case]:
    generator = torch.Generator().manual_seed(1)
    cases = []
    for q_len, k_len, dim, causal in [
        (1, 1, 2, False),
        (3, 3, 4, False),
        (4, 4, 8, True),
        (2, 5, 4, False),
        (2, 5, 4, True),
        (5, 5, 3, True),
    ]:
        q = torch.randn(q_len, dim, generator=generator, dtype=torch.float64)
        k = torch.randn(k_len, dim, generator=generator, dtype=torch.float64)
        v = torch.randn(k_len, dim + 1, generator=generator, dtype=torch.float64)
        cases.append(
            Case(
                (q, k, v, causal),
                f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}, causal={causal}",
            )
        )
    return cases


def check_attention(
    reader: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, bool], torch.Tensor],
) -> None:
    """Chapter 1: ``reader(q, k, v, causal)`` must equal softmax(q kᵀ/√d + mask) v."""

    def reference(q, k, v, causal):
        return attn.attention(q, k, v, causal=causal)

    check("attention", reader, reference, _attention_cases(), atol=1e-10)


def check_recover_positions(reader: Callable[[torch.Tensor], torch.Tensor]) -> None:
    """Chapter 1: ``reader(share)`` turns a slice ``bos_share(L)[a:b]`` into positions a..b-1."""
    windows = [(1, 0, 1), (5, 0, 5), (5, 2, 5), (17, 3, 9), (64, 40, 64)]
    cases = [
        Case(
            (symmetry.bos_share(seq_len)[start:stop],),
            f"bos_share(seq_len={seq_len})[{start}:{stop}]",
            expected=torch.arange(start, stop, dtype=torch.float64),
        )
        for seq_len, start, stop in windows
    ]
    check("recover_positions", reader, None, cases, atol=1e-6, dtype=torch.float64)


@grader
def check_invisible_positions(reader: Callable[[torch.Tensor, int], torch.Tensor]) -> str:
    """Chapter 1: ``reader(weight, seq_len)`` returns distinct positions the layer cannot see.

    ``weight`` is a (dim × dim) input projection with a non-trivial null space
    (y = x @ weight.T ignores some directions). The reader returns
    ``positions`` of shape (seq_len, dim) whose rows are pairwise distinct
    (distance > 1e-3) yet ``(x + positions) @ weight.T`` is still exactly
    ``x @ weight.T`` plus one and the same row for every token, so that no
    permutation of the tokens can be detected downstream.
    """
    generator = torch.Generator().manual_seed(2)
    dim, seq_len = 4, 5
    basis = torch.linalg.qr(torch.randn(dim, dim, generator=generator, dtype=torch.float64))[0]
    weight = basis[:, :3] @ basis[:, :3].T  # rank 3: ignores the direction basis[:, 3]
    positions = attempt(reader, weight.clone(), seq_len)
    if not isinstance(positions, torch.Tensor) or positions.shape != (seq_len, dim):
        raise ExerciseMismatch(
            f"expected a tensor of shape {(seq_len, dim)}, got {show(positions)}"
        )
    positions = positions.to(torch.float64)
    distance = torch.cdist(positions, positions) + torch.eye(seq_len, dtype=torch.float64)
    if float(distance.min()) <= 1e-3:
        raise ExerciseMismatch(
            f"two rows are (almost) equal; the vectors must be distinct:\n{positions}"
        )
    seen = positions @ weight.T  # what the layer's projection sees of each position
    spread = float((seen - seen[0]).abs().max())
    if spread > 1e-9:
        raise ExerciseMismatch(
            f"the layer sees different projections of your positions (they differ by up "
            f"to {spread:.3g}), so it can tell the order apart"
        )
    return f"{seq_len} distinct vectors, all invisible to the layer."
