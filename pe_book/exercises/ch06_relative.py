"""Chapter 6 (learned and relative positions): clipped offsets, T5's buckets, similarity."""

from __future__ import annotations

import textwrap
from collections.abc import Callable

import numpy as np
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
    in a float tensor (or array), or in an integer type other than long, pass with a note
    that the statement asks for long; an integer type too small for rows up to 2K fails, and
    is named."""
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
            (300, 3, 150, "rows up to 2K = 300, more than 8-bit integers hold"),
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
        if case is not None and _is_right(answers[-1], case):
            raise  # right values, failed for another reason (it called the package)
        if case is not None and _is_reversed(answers[-1], case):
            raise ExerciseMismatch(
                f"{mismatch}\nYour rows are those of the offset n − m, or your matrix is"
                " transposed: the book's r is m − n (query minus key), one row per query"
            ) from None
        small = case is not None and _too_small(answers[-1], 2 * case.args[2])
        if small:
            raise ExerciseMismatch(
                f"{mismatch}\nYour answer is {small}, which cannot hold every row up to 2K:"
                " the rows wrap around; return a long tensor"
            ) from None
        raise
    noted = next((kind for kind in map(_not_long, answers) if kind), None)
    if noted:
        note = (
            f"Note: your answer is {noted}; the values are right, but the statement asks"
            " for long (torch.int64), the type a table is indexed with (.long())."
        )
        print(textwrap.fill(note, 79, initial_indent="  ", subsequent_indent="  "))


def _dtype(answer: object) -> torch.dtype | np.dtype | None:
    return answer.dtype if isinstance(answer, torch.Tensor | np.ndarray) else None


def _not_long(answer: object) -> str | None:
    """'a torch.float64 tensor', 'a NumPy float64 array', ... unless ``answer`` is long."""
    dtype = _dtype(answer)
    if dtype is None or dtype in (torch.int64, np.dtype(np.int64)):
        return None
    return f"a {dtype} tensor" if isinstance(dtype, torch.dtype) else f"a NumPy {dtype} array"


def _too_small(answer: object, largest: int) -> str | None:
    """The integer type of ``answer`` if it cannot hold ``largest``, else None."""
    dtype = _dtype(answer)
    if dtype is None:
        return None
    if isinstance(dtype, torch.dtype):
        if dtype.is_floating_point or dtype.is_complex or dtype == torch.bool:
            return None
        top = torch.iinfo(dtype).max
    elif np.issubdtype(dtype, np.integer):
        top = np.iinfo(dtype).max
    else:
        return None
    return _not_long(answer) if top < largest else None


def _is_right(answer: object, case: Case) -> bool:
    try:
        right = relative.relative_indices(*case.args)
        return bool(torch.equal(torch.as_tensor(answer).long(), right))
    except (TypeError, ValueError, RuntimeError, OverflowError):
        return False


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
        (True, 18, 128, "18 buckets: an odd B = 9 per side; |r| = 8, 16, 64 on bucket edges"),
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
            if _same(answers[-1], relative.t5_bucket(offset, *config)):
                raise  # right values, failed for another reason (it called the package)
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
            if _same(answers[-1], relative.t5_bucket(offset, *config, log_dtype=torch.float64)):
                raise ExerciseMismatch(
                    f"{mismatch}\nYour buckets are what a float64 logarithm gives: a distance"
                    " that sits exactly on a bucket edge falls below it. Take the logarithm in"
                    " float32, as T5 does (the statement)"
                ) from None
        raise


def _same(answer: object, buckets: torch.Tensor) -> bool:
    try:
        return bool(torch.equal(torch.as_tensor(answer).long(), buckets))
    except (TypeError, ValueError, RuntimeError):
        return False


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
