"""Chapter 6 (learned and relative positions): clipped offsets, T5's buckets, similarity."""

from __future__ import annotations

import textwrap
from collections.abc import Callable

import torch

from pe_book import learned, relative, sinusoidal
from pe_book.exercises.grading import Case, ExerciseMismatch, check
from pe_book.exercises.secret import seeded

__all__ = ["check_relative_indices", "check_similarity_by_offset", "check_t5_bucket"]


def _recording(reader: Callable[..., object]) -> tuple[list[object], Callable[..., object]]:
    """``reader`` wrapped to keep every answer it gives, so that a miss can be diagnosed
    from the reader's own last answer (a sign flip, a mirrored bucket)."""
    answers: list[object] = []

    def recorded(*args: object) -> object:
        answers.append(answer := reader(*args))
        return answer

    return answers, recorded


def check_relative_indices(
    reader: Callable[[torch.Tensor, torch.Tensor, int], torch.Tensor],
) -> None:
    """Chapter 6: ``reader(query_positions, key_positions, K)`` returns clip(m - n, -K, K) + K
    (exact whole numbers). As everywhere in the book the values are judged, so whole numbers
    in a float tensor pass, with a note that indexing a table needs an integer tensor."""
    cases = [
        Case(
            (torch.arange(q), torch.arange(k), big_k),
            f"queries 0..{q - 1}, keys 0..{k - 1}, K={big_k}",
            kind=kind,
        )
        for q, k, big_k, kind in [
            (4, 4, 1, "K = 1"),
            (1, 1, 0, "one query, K = 0"),
            (6, 6, 2, "offsets past K on both sides"),
            (3, 8, 3, "more keys than queries"),
            (10, 10, 20, "K larger than every offset"),
        ]
    ]
    cases.append(
        Case(
            (torch.tensor([7, 8]), torch.arange(3, 10), 2),
            "queries [7, 8], keys 3..9, K=2",
            kind="positions that do not start at 0",
        )
    )
    answers, recorded = _recording(reader)

    try:
        check(
            "relative_indices",
            recorded,
            relative.relative_indices,
            cases,
            atol=0.0,
            locate=lambda case, index: (
                f"query m = {int(case.args[0][index[0]])}, key n = {int(case.args[1][index[1]])}"
            ),
        )
    except ExerciseMismatch as mismatch:
        case = cases[len(answers) - 1] if 0 < len(answers) <= len(cases) else None
        if case is not None and _is_reversed(answers[-1], case):
            raise ExerciseMismatch(
                f"{mismatch}\nYour rows are those of the offset n − m: the book's r is m − n"
                " (query minus key)"
            ) from None
        raise
    floating = [a for a in answers if isinstance(a, torch.Tensor) and a.is_floating_point()]
    if floating:
        note = (
            f"Note: your answer is {floating[0].dtype}; the values are right, but a table"
            " is indexed with an integer tensor (.long())."
        )
        print(textwrap.fill(note, 79, initial_indent="  ", subsequent_indent="  "))


def _is_reversed(answer: object, case: Case) -> bool:
    """Is ``answer`` the table rows of n − m instead of m − n?"""
    query_positions, key_positions, big_k = case.args
    flipped = (key_positions[None, :] - query_positions[:, None]).clamp(-big_k, big_k) + big_k
    try:
        return bool(torch.equal(torch.as_tensor(answer).long(), flipped))
    except (TypeError, ValueError, RuntimeError):
        return False


def check_t5_bucket(reader: Callable[..., torch.Tensor]) -> None:
    """Chapter 6: ``reader(offset, bidirectional, num_buckets, max_distance)``: T5 bucket of r
    (exact; as in T5, the logarithm in float32 decides the bucket edges)."""
    offsets = torch.arange(-300, 301)
    configs = [
        (True, 32, 128, "T5's settings, bidirectional"),
        (False, 32, 128, "T5's settings, causal"),
        (True, 16, 64, "fewer buckets"),
        (False, 8, 20, "a short max_distance"),
        # |r| = 8, 16, 64 sit on bucket edges that a float64 logarithm moves
        (True, 18, 128, "18 buckets, where |r| = 8, 16 and 64 sit on bucket edges"),
    ]
    cases = [
        Case(
            (offsets, *config),
            f"offsets -300..300, bidirectional={config[0]}, "
            f"num_buckets={config[1]}, max_distance={config[2]}",
            kind=kind,
        )
        for *config, kind in configs
    ]
    answers, recorded = _recording(reader)

    try:
        check(
            "t5_bucket",
            recorded,
            relative.t5_bucket,
            cases,
            atol=0.0,
            locate=lambda case, index: f"offset r = {int(case.args[0][index[0]])}",
        )
    except ExerciseMismatch as mismatch:
        if 0 < len(answers) <= len(cases):
            offset, *config = cases[len(answers) - 1].args
            try:
                mirrored = torch.equal(
                    torch.as_tensor(answers[-1]).long(), relative.t5_bucket(-offset, *config)
                )
            except (TypeError, ValueError, RuntimeError):
                mirrored = False
            if mirrored:
                raise ExerciseMismatch(
                    f"{mismatch}\nYour buckets are those of −r: T5's code measures n − m,"
                    " the book's offset r is m − n (query minus key)"
                ) from None
        raise


def check_similarity_by_offset(reader: Callable[[torch.Tensor], torch.Tensor]) -> None:
    """Chapter 6: ``reader(table)`` = mean cos(P_m, P_(m+r)) for r = 0..L-1, to within 1e-6."""
    generator = seeded(6)
    tables = [
        (torch.randn(5, 3, generator=generator), "a random table, rows of different norms"),
        (torch.randn(40, 16, generator=generator), "a larger random table"),
        (sinusoidal.sinusoidal_table(64, 32), "a sinusoidal table, rows of equal norm"),
    ]
    cases = [
        Case((table,), f"table of shape {tuple(table.shape)}", kind=kind) for table, kind in tables
    ]
    check(
        "similarity_by_offset",
        reader,
        learned.similarity_by_offset,
        cases,
        atol=1e-6,  # float32 arithmetic is enough
        locate=lambda case, index: f"offset r = {index[0]}",
    )
