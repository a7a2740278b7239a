"""Checkers for the exercises: run the reader's function against the package.

Each ``check_*`` takes the reader's function, runs it and ``pe_book``'s own
implementation on the same inputs, and either prints that every case agrees
or raises :class:`ExerciseMismatch` describing the first case that does not
(input, expected, got). A stub that still raises ``NotImplementedError`` is
reported as "not attempted yet" without failing, so a chapter runs top to
bottom before the reader has written anything.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from pe_book import (
    alibi,
    decay,
    learned,
    relative,
    rope,
    rope_scaling,
    sinusoidal,
    symmetry,
    taylor,
)
from pe_book import attention as attn

__all__ = [
    "Case",
    "ExerciseMismatch",
    "check",
    "check_alibi_slopes",
    "check_attention",
    "check_base_for_wavelength",
    "check_bilinear_terms",
    "check_cheapest_keeper",
    "check_circle_solution",
    "check_decay_bound",
    "check_decoding_bias",
    "check_degradation",
    "check_diagonal_leak",
    "check_direction_matrix",
    "check_dot_profile",
    "check_integral_profile",
    "check_invisible_positions",
    "check_keeps_quality",
    "check_layout_conversion",
    "check_layout_permutation",
    "check_longest_wavelength",
    "check_mean_distance",
    "check_ntk_frequencies",
    "check_offset_only",
    "check_permutation_matrix",
    "check_perplexity",
    "check_reach",
    "check_recover_positions",
    "check_relative_indices",
    "check_rope_rotation",
    "check_scaling_exponent",
    "check_shaw_parameters",
    "check_shaw_table_bytes",
    "check_shift_matrix",
    "check_short_context_fraction",
    "check_similarity_by_offset",
    "check_sinusoidal_table",
    "check_t5_bucket",
    "check_taylor_terms",
]


_NOT_ATTEMPTED = (
    "{name}: not attempted yet.\n"
    "  Fill in the stub above and rerun this cell; the solution is collapsed below."
)


class ExerciseMismatch(AssertionError):
    """The reader's function disagrees with the package on a case."""


@dataclass(frozen=True)
class Case:
    """One input to an exercise: positional arguments, a readable description,
    and optionally the expected answer (otherwise the reference computes it)."""

    args: tuple[Any, ...]
    description: str
    expected: Any = None


def _show(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        with torch.no_grad():
            return f"tensor of shape {tuple(value.shape)}, dtype {value.dtype}:\n{value}"
    return repr(value)


def _agree(expected: Any, got: Any, atol: float) -> str | None:
    """None if the two agree, else the reason they do not."""
    if isinstance(expected, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            return f"expected a torch.Tensor, got {type(got).__name__}"
        if got.shape != expected.shape:
            return f"shape {tuple(got.shape)} instead of {tuple(expected.shape)}"
        if expected.dtype == torch.bool or got.dtype == torch.bool:
            if got.dtype != expected.dtype:
                return f"dtype {got.dtype} instead of {expected.dtype}"
            return None if torch.equal(got, expected) else "values differ"
        worst = float((got.to(expected.dtype) - expected).abs().max()) if got.numel() else 0.0
        return None if worst <= atol else f"values differ by up to {worst:.3g} (tolerance {atol:g})"
    if isinstance(expected, float):
        if not isinstance(got, int | float) or isinstance(got, bool):
            return f"expected a number, got {type(got).__name__}"
        close = math.isclose(got, expected, rel_tol=1e-9, abs_tol=atol)
        return None if close else "values differ"
    return None if got == expected else "values differ"


def check(
    name: str,
    reader: Callable[..., Any],
    reference: Callable[..., Any] | None,
    cases: Iterable[Case],
    *,
    atol: float = 1e-5,
    against: str = "pe_book",
) -> None:
    """Compare ``reader`` with ``reference`` (or each case's ``expected``) on every case.

    Prints that all cases agree, or that the reader's stub still raises
    NotImplementedError ("not attempted yet"); raises ExerciseMismatch on the
    first disagreement or on any other exception from the reader's code.

    The book's ``check_*`` functions are built on it, and a course adds its own
    exercise in a notebook cell with no package edit::

        exercises.check("double", my_double, lambda x: 2 * x,
                        [Case((3,), "x = 3"), Case((0.5,), "x = 0.5", expected=1.0)],
                        against="the course's answer")

    ``against`` names what the reader is compared with in the final message.
    """
    cases = list(cases)
    for index, case in enumerate(cases, start=1):
        if case.expected is None and reference is None:
            raise ValueError(f"{name}: case {index} has no expected answer and no reference")
        expected = reference(*case.args) if case.expected is None else case.expected
        try:
            got = reader(*case.args)
        except NotImplementedError:
            print(_NOT_ATTEMPTED.format(name=name))
            return
        except Exception as exc:
            raise ExerciseMismatch(
                f"{name}: case {index} of {len(cases)} ({case.description}) raised "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        problem = _agree(expected, got, atol)
        if problem:
            raise ExerciseMismatch(
                f"{name}: case {index} of {len(cases)} does not match: {problem}.\n"
                f"input: {case.description}\nexpected: {_show(expected)}\ngot: {_show(got)}"
            )
    print(f"{name}: all {len(cases)} cases agree with {against}.")


# ---- chapter 01 -----------------------------------------------------------------


def check_permutation_matrix(reader: Callable[[Sequence[int]], torch.Tensor]) -> None:
    """Chapter 01: ``reader(perm)`` must return P (float32) with P @ X == X[perm]."""
    perms = [p for n in (1, 2, 3) for p in itertools.permutations(range(n))]
    perms += [(4, 0, 3, 1, 2), (5, 4, 3, 2, 1, 0)]
    cases = [Case((list(p),), f"perm={list(p)}") for p in perms]
    check("permutation_matrix", reader, symmetry.permutation_matrix, cases, atol=0.0)


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
    """Chapter 01: ``reader(q, k, v, causal)`` must equal softmax(q kᵀ/√d + mask) v."""

    def reference(q, k, v, causal):
        return attn.attention(q, k, v, causal=causal)

    check("attention", reader, reference, _attention_cases(), atol=1e-10)


def check_recover_positions(reader: Callable[[torch.Tensor], torch.Tensor]) -> None:
    """Chapter 01: ``reader(share)`` turns a slice ``bos_share(L)[a:b]`` into positions a..b-1."""
    windows = [(1, 0, 1), (5, 0, 5), (5, 2, 5), (17, 3, 9), (64, 40, 64)]
    cases = [
        Case(
            (symmetry.bos_share(seq_len)[start:stop],),
            f"bos_share(seq_len={seq_len})[{start}:{stop}]",
            expected=torch.arange(start, stop, dtype=torch.float64),
        )
        for seq_len, start, stop in windows
    ]
    check("recover_positions", reader, None, cases, atol=1e-6)


def check_invisible_positions(reader: Callable[[torch.Tensor, int], torch.Tensor]) -> None:
    """Chapter 01: ``reader(weight, seq_len)`` returns distinct positions the layer cannot see.

    ``weight`` is a (dim × dim) input projection with a non-trivial null space
    (y = x @ weight.T ignores some directions). The reader returns
    ``positions`` of shape (seq_len, dim) whose rows are pairwise distinct
    (distance > 1e-3) yet ``(x + positions) @ weight.T`` is still exactly
    ``x @ weight.T`` plus one and the same row for every token, so that no
    permutation of the tokens can be detected downstream.
    """
    name = "invisible_positions"
    generator = torch.Generator().manual_seed(2)
    dim, seq_len = 4, 5
    basis = torch.linalg.qr(torch.randn(dim, dim, generator=generator, dtype=torch.float64))[0]
    weight = basis[:, :3] @ basis[:, :3].T  # rank 3: ignores the direction basis[:, 3]
    try:
        positions = reader(weight.clone(), seq_len)
    except NotImplementedError:
        print(_NOT_ATTEMPTED.format(name=name))
        return
    if not isinstance(positions, torch.Tensor) or positions.shape != (seq_len, dim):
        raise ExerciseMismatch(
            f"{name}: expected a tensor of shape {(seq_len, dim)}, got {_show(positions)}"
        )
    positions = positions.to(torch.float64)
    distance = torch.cdist(positions, positions) + torch.eye(seq_len, dtype=torch.float64)
    if float(distance.min()) <= 1e-3:
        raise ExerciseMismatch(
            f"{name}: two rows are (almost) equal; the vectors must be distinct:\n{positions}"
        )
    seen = positions @ weight.T  # what the layer's projection sees of each position
    spread = float((seen - seen[0]).abs().max())
    if spread > 1e-9:
        raise ExerciseMismatch(
            f"{name}: the layer sees different projections of your positions (they differ by up "
            f"to {spread:.3g}), so it can tell the order apart"
        )
    print(f"{name}: {seq_len} distinct vectors, all invisible to the layer.")


# ---- chapter 03 -----------------------------------------------------------------

_TABLE_SIZES = [
    (1, 2, 10000.0),
    (5, 4, 10000.0),
    (16, 8, 100.0),
    (50, 64, 10000.0),
    (7, 10, 500000.0),
]


def check_sinusoidal_table(reader: Callable[[int, int, float], torch.Tensor]) -> None:
    """Chapter 03: ``reader(seq_len, dim, base)`` must return the paper's (interleaved) table."""

    def reference(seq_len: int, dim: int, base: float) -> torch.Tensor:
        return sinusoidal.sinusoidal_table(seq_len, dim, base, dtype=torch.float64)

    cases = [
        Case(size, f"seq_len={size[0]}, dim={size[1]}, base={size[2]:g}") for size in _TABLE_SIZES
    ]
    check(
        "sinusoidal_table",
        lambda *a: torch.as_tensor(reader(*a), dtype=torch.float64),
        reference,
        cases,
        atol=1e-5,  # float32 answers are fine (angles up to 50 rad: about 4e-6 off)
    )


def check_longest_wavelength(reader: Callable[[int, float], float]) -> None:
    """Chapter 03: ``reader(dim, base)`` must return the longest wavelength λ_(d/2-1), a float."""

    def reference(dim: int, base: float) -> float:
        return float(sinusoidal.wavelengths(dim, base)[-1])

    sizes = [(2, 10000.0), (8, 10000.0), (128, 10000.0), (512, 10000.0), (64, 500000.0)]
    check(
        "longest_wavelength",
        reader,
        reference,
        [Case(size, f"dim={size[0]}, base={size[1]:g}") for size in sizes],
    )


def check_layout_permutation(reader: Callable[[int], list[int]]) -> None:
    """Chapter 03: ``reader(dim)`` must return perm with half == interleaved[:, perm]."""
    cases = [Case((dim,), f"dim={dim}") for dim in (2, 4, 6, 8, 16)]
    check(
        "layout_permutation",
        lambda dim: [int(j) for j in reader(dim)],
        sinusoidal.layout_permutation,
        cases,
    )


def check_base_for_wavelength(reader: Callable[[int, float], float]) -> None:
    """Chapter 03: ``reader(dim, longest)`` returns the base with that longest wavelength."""
    targets = [(8, 1000.0), (128, 2 * math.pi * 10000), (512, 60000.0), (64, 1e6)]
    cases = [
        Case(target, f"dim={target[0]}, longest={target[1]:g}", expected=target[1])
        for target in targets
    ]

    def longest_for(dim: int, longest: float) -> float:
        return float(sinusoidal.wavelengths(dim, reader(dim, longest))[-1])

    check("base_for_wavelength", longest_for, None, cases)


# ---- chapter 04 -----------------------------------------------------------------


def check_shift_matrix(reader: Callable[[int, int, float], torch.Tensor]) -> None:
    """Chapter 04: ``reader(offset, dim, base)`` must return M_k with PE(m + k) = M_k PE(m)."""
    sizes = [(0, 2, 10000.0), (1, 4, 10000.0), (5, 8, 100.0), (-3, 6, 10000.0), (40, 16, 1e5)]
    cases = [Case(size, f"offset={size[0]}, dim={size[1]}, base={size[2]:g}") for size in sizes]
    check(
        "shift_matrix",
        lambda *a: torch.as_tensor(reader(*a), dtype=torch.float64),
        sinusoidal.shift_matrix,
        cases,
        atol=1e-6,  # float32 answers are fine
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


def check_bilinear_terms(reader: Callable[[torch.Tensor], tuple]) -> None:
    """Chapter 04: ``reader(w)`` returns (α, β, γ, δ) with, for p = (sin mθ, cos mθ),
    p_mᵀ A p_n = α cos((m−n)θ) + β sin((m−n)θ) + γ cos((m+n)θ) + δ sin((m+n)θ)."""
    name = "bilinear_terms"
    generator = torch.Generator().manual_seed(4)
    matrices = [torch.eye(2, dtype=torch.float64), torch.tensor([[0.0, 1.0], [-1.0, 0.0]])]
    matrices += [torch.randn(2, 2, generator=generator, dtype=torch.float64) for _ in range(4)]
    for index, w in enumerate(matrices, start=1):
        try:
            coefficients = [float(c) for c in reader(w.clone())]
        except NotImplementedError:
            print(_NOT_ATTEMPTED.format(name=name))
            return
        if len(coefficients) != 4:
            raise ExerciseMismatch(f"{name}: expected 4 coefficients, got {len(coefficients)}")
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
                f"{name}: case {index} of {len(matrices)}: A = {w.tolist()}, your coefficients "
                f"{coefficients} miss p_mᵀ A p_n by up to {worst:.3g} (on the first 24 positions)"
            )
    print(f"{name}: all {len(matrices)} matrices agree with p_mᵀ A p_n from pe_book.")


def check_direction_matrix(reader: Callable[[], torch.Tensor]) -> None:
    """Chapter 04: ``reader()`` returns a 2 × 2 A with p_mᵀ A p_n = sin((m − n)θ) always."""
    name = "direction_matrix"
    try:
        w = torch.as_tensor(reader(), dtype=torch.float64)
    except NotImplementedError:
        print(_NOT_ATTEMPTED.format(name=name))
        return
    if w.shape != (2, 2):
        raise ExerciseMismatch(f"{name}: expected a 2 × 2 matrix, got shape {tuple(w.shape)}")
    diff, _ = _pair_angles()
    worst = float((_pair_bilinear(w) - torch.sin(diff)).abs().max())
    if worst > 1e-9:
        raise ExerciseMismatch(
            f"{name}: p_mᵀ A p_n misses sin((m − n)θ) by up to {worst:.3g} for A = {w.tolist()}"
        )
    print(f"{name}: p_mᵀ A p_n = sin((m − n)θ): this score knows the direction.")


# ---- chapter 02 -----------------------------------------------------------------


def _readout_cases() -> list[Case]:
    generator = torch.Generator().manual_seed(2)
    cases = []
    for d in (1, 2, 3):
        weights = [torch.randn(d, d, generator=generator, dtype=torch.float64) for _ in range(3)]
        w_o = torch.randn(d, generator=generator, dtype=torch.float64)

        def f(a, b, weights=weights, w_o=w_o):
            return taylor.attention_readout(a, b, *weights, w_o)

        points = [torch.randn(d, generator=generator, dtype=torch.float64) for _ in range(4)]
        cases.append(Case((f, *points), f"attention read-out with random weights, d={d}"))
    cases.append(
        Case(
            (lambda a, b: (a * b).sum() ** 2, *[torch.ones(2, dtype=torch.float64)] * 4),
            "f(x_m, x_n) = (x_m·x_n)², all inputs 1",
        )
    )
    return cases


def check_taylor_terms(reader: Callable[..., Any]) -> None:
    """Chapter 02: ``reader(f, x_m, x_n, p_m, p_n)`` returns the six terms, in TERM_NAMES order."""
    check(
        "taylor_terms",
        lambda *a: torch.as_tensor(reader(*a), dtype=torch.float64),
        taylor.taylor_terms,
        _readout_cases(),
        atol=1e-9,
    )


def check_circle_solution(reader: Callable[[int, float], torch.Tensor]) -> None:
    """Chapter 02: ``reader(seq_len, theta)`` returns p_m = (cos mθ, sin mθ), shape (L, 2)."""
    cases = [
        Case(args, f"seq_len={args[0]}, theta={args[1]}")
        for args in [(1, 1.0), (5, 0.5), (12, 0.1), (30, 2.0)]
    ]
    check(
        "circle_solution",
        lambda *a: torch.as_tensor(reader(*a), dtype=torch.float64),
        taylor.circle_solution,
        cases,
        atol=1e-12,
    )


def check_diagonal_leak(reader: Callable[[float, float], tuple]) -> None:
    """Chapter 02: ``reader(h1, h2)`` returns (A, B) with, for the paper's order
    p_m = (sin mθ, cos mθ), p_mᵀ diag(h1, h2) p_n = A cos((m − n)θ) + B cos((m + n)θ)."""
    name = "diagonal_leak"
    p = taylor.circle_solution(20, 0.3).flip(-1)  # (20, 2): (sin mθ, cos mθ)
    m = torch.arange(20, dtype=torch.float64)
    diff, total = (m[:, None] - m[None, :]) * 0.3, (m[:, None] + m[None, :]) * 0.3
    for index, (h1, h2) in enumerate([(1.0, 1.0), (1.0, 0.0), (0.3, -2.0), (2.5, 0.5)], 1):
        try:
            coef_diff, coef_total = (float(c) for c in reader(h1, h2))
        except NotImplementedError:
            print(_NOT_ATTEMPTED.format(name=name))
            return
        actual = p @ torch.diag(torch.tensor([h1, h2], dtype=torch.float64)) @ p.T
        claimed = coef_diff * torch.cos(diff) + coef_total * torch.cos(total)
        worst = float((claimed - actual).abs().max())
        if worst > 1e-9:
            raise ExerciseMismatch(
                f"{name}: case {index} (h1={h1}, h2={h2}): your (A, B) = "
                f"({coef_diff}, {coef_total}) misses p_mᵀHp_n by up to {worst:.3g}"
            )
    print(f"{name}: all 4 matrices agree with p_mᵀ H p_n from pe_book.")


# ---- chapter 05 -----------------------------------------------------------------

_PROFILE_CASES = [(64, 10000.0), (128, 100.0), (512, 10000.0), (8, 500000.0)]


def _offset_grid() -> torch.Tensor:
    return torch.tensor([0, 1, 2, 5, 10, 37, 100, 999, 5000, 123456])


def _check_offset_profile(
    name: str,
    reader: Callable[[torch.Tensor, int, float], torch.Tensor],
    reference: Callable[[torch.Tensor, int, float], torch.Tensor],
) -> None:
    """Compare ``reader(offsets, dim, base)`` with ``reference`` on chapter 5's grid."""
    cases = [
        Case(
            (_offset_grid(), dim, base),
            f"offsets {_offset_grid().tolist()}, dim={dim}, base={base:g}",
        )
        for dim, base in _PROFILE_CASES
    ]
    check(
        name,
        lambda *a: torch.as_tensor(reader(*a), dtype=torch.float64),
        reference,
        cases,
        atol=1e-6,
    )


def check_dot_profile(reader: Callable[[torch.Tensor, int, float], torch.Tensor]) -> None:
    """Chapter 05: ``reader(offsets, dim, base)`` returns (2/d) Σ_i cos(r θ_i) per offset."""
    _check_offset_profile("dot_profile", reader, decay.dot_profile)


def check_integral_profile(reader: Callable[[float, float], float]) -> None:
    """Chapter 05: ``reader(r, base)`` returns ∫_0^1 cos(r b^(-t)) dt as a float (r >= 0)."""
    pairs = [(0.0, 10000.0), (1.0, 10000.0), (50.0, 100.0), (3000.0, 10000.0), (2e5, 5e5)]
    cases = [Case(pair, f"r={pair[0]:g}, base={pair[1]:g}") for pair in pairs]
    check(
        "integral_profile",
        lambda r, b: float(reader(r, b)),
        lambda r, b: float(decay.integral_profile([r], b)[0]),
        cases,
        atol=1e-9,
    )


def check_reach(reader: Callable[[int, float, float], int]) -> None:
    """Chapter 05: ``reader(dim, base, level)`` returns the first offset r >= 0 with
    dot_profile(r) <= level (searching r = 0 .. 100,000)."""
    offsets = torch.arange(100_001)

    def reference(dim: int, base: float, level: float) -> int:
        found = decay.first_offset_at_or_below(
            offsets, decay.dot_profile(offsets, dim, base), level
        )
        return -1 if found is None else found

    cases = [
        Case(args, f"dim={args[0]}, base={args[1]:g}, level={args[2]}")
        for args in [(64, 10000.0, 0.0), (128, 100.0, 0.1), (512, 10000.0, 0.5), (16, 1e3, 0.0)]
    ]
    check("reach", lambda *a: int(reader(*a)), reference, cases)


def check_decay_bound(reader: Callable[[torch.Tensor, int, float], torch.Tensor]) -> None:
    """Chapter 05: ``reader(offsets, dim, base)`` returns (1/(d/2)) Σ_j |S_j| per offset."""
    _check_offset_profile("decay_bound", reader, decay.rope_decay_bound)


# ---- chapter 06 -----------------------------------------------------------------


def check_relative_indices(
    reader: Callable[[torch.Tensor, torch.Tensor, int], torch.Tensor],
) -> None:
    """Chapter 06: ``reader(query_positions, key_positions, K)`` returns clip(m - n, -K, K) + K."""
    cases = [
        Case(
            (torch.arange(q), torch.arange(k), big_k),
            f"queries 0..{q - 1}, keys 0..{k - 1}, K={big_k}",
        )
        for q, k, big_k in [(1, 1, 0), (4, 4, 1), (6, 6, 2), (3, 8, 3), (10, 10, 20)]
    ]
    cases.append(
        Case((torch.tensor([7, 8]), torch.arange(3, 10), 2), "queries [7, 8], keys 3..9, K=2")
    )
    check(
        "relative_indices",
        lambda *a: torch.as_tensor(reader(*a)).long(),
        relative.relative_indices,
        cases,
        atol=0.0,
    )


def check_t5_bucket(reader: Callable[..., torch.Tensor]) -> None:
    """Chapter 06: ``reader(offset, bidirectional, num_buckets, max_distance)``: T5 bucket of r."""
    offsets = torch.arange(-300, 301)
    configs = [(True, 32, 128), (False, 32, 128), (True, 16, 64), (False, 8, 20)]
    cases = [
        Case(
            (offsets, *config),
            f"offsets -300..300, bidirectional={config[0]}, "
            f"num_buckets={config[1]}, max_distance={config[2]}",
        )
        for config in configs
    ]
    check(
        "t5_bucket",
        lambda *a: torch.as_tensor(reader(*a)).long(),
        relative.t5_bucket,
        cases,
        atol=0.0,
    )


def check_similarity_by_offset(reader: Callable[[torch.Tensor], torch.Tensor]) -> None:
    """Chapter 06: ``reader(table)`` = mean cos(P_m, P_(m+r)) for r = 0..L-1, float64."""
    generator = torch.Generator().manual_seed(6)
    tables = [
        torch.randn(5, 3, generator=generator),
        torch.randn(40, 16, generator=generator),
        sinusoidal.sinusoidal_table(64, 32),
    ]
    cases = [Case((table,), f"table of shape {tuple(table.shape)}") for table in tables]
    check(
        "similarity_by_offset",
        lambda t: torch.as_tensor(reader(t), dtype=torch.float64),
        learned.similarity_by_offset,
        cases,
        atol=1e-6,
    )


# ---- chapter 07 -----------------------------------------------------------------


def check_rope_rotation(reader: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """Chapter 07: ``reader(x, positions)`` rotates x (L, d) with interleaved pairs, float64."""
    generator = torch.Generator().manual_seed(7)
    cases = []
    for length, dim, start in [(1, 2, 0), (4, 4, 0), (5, 8, 100), (3, 16, 30000)]:
        x = torch.randn(length, dim, generator=generator, dtype=torch.float64)
        positions = torch.arange(start, start + length)
        cases.append(Case((x, positions), f"x {tuple(x.shape)}, positions {positions.tolist()}"))
    check(
        "rope_rotation",
        lambda *a: torch.as_tensor(reader(*a), dtype=torch.float64),
        lambda x, positions: rope.apply_rope(x, positions),
        cases,
        atol=1e-9,
    )


def check_layout_conversion(reader: Callable[[torch.Tensor], torch.Tensor]) -> None:
    """Chapter 07: ``reader(q)`` maps q for interleaved RoPE to q' for half RoPE, same scores."""
    name = "layout_conversion"
    generator = torch.Generator().manual_seed(8)
    for dim in (2, 8, 64):
        q, k = torch.randn(2, 12, dim, generator=generator, dtype=torch.float64)
        try:
            q_half, k_half = reader(q.clone()), reader(k.clone())
        except NotImplementedError:
            print(_NOT_ATTEMPTED.format(name=name))
            return
        expected = rope.apply_rope(q) @ rope.apply_rope(k).T
        got = rope.apply_rope(q_half, layout="half") @ rope.apply_rope(k_half, layout="half").T
        worst = float((got - expected).abs().max())
        if worst > 1e-9:
            raise ExerciseMismatch(
                f"{name}: dim={dim}: half-layout scores differ by up to {worst:.3g}"
            )
    print(f"{name}: for d = 2, 8, 64 half layout = interleaved scores.")


def check_ntk_frequencies(reader: Callable[[int, float, float], torch.Tensor]) -> None:
    """Chapter 07: ``reader(dim, base, factor)`` returns NTK-aware θ_i, float64."""
    cases = [
        Case(args, f"dim={args[0]}, base={args[1]:g}, factor={args[2]}")
        for args in [(4, 10000.0, 2.0), (64, 10000.0, 4.0), (128, 500000.0, 8.0)]
    ]

    def reference(dim: int, base: float, factor: float) -> torch.Tensor:
        return rope_scaling.scaled_frequencies(dim, base, rope_scaling.NTKScaling(factor))[0]

    check(
        "ntk_frequencies",
        lambda *a: torch.as_tensor(reader(*a), dtype=torch.float64),
        reference,
        cases,
        atol=1e-12,
    )


def check_alibi_slopes(reader: Callable[[int], Any]) -> None:
    """Chapter 08: ``reader(n_heads)`` returns the n_heads slopes s_h (any sequence of floats)."""
    cases = [Case((n,), f"n_heads={n}") for n in (1, 2, 4, 8, 16, 3, 6, 12, 20)]
    check(
        "alibi_slopes",
        lambda n: torch.as_tensor(reader(n), dtype=torch.float64),
        alibi.alibi_slopes,
        cases,
        atol=1e-7,
    )


def check_decoding_bias(reader: Callable[[int, int, torch.Tensor], torch.Tensor]) -> None:
    """Chapter 08: ``reader(q_len, k_len, slopes)`` returns the causal bias (H, q_len, k_len).

    The queries are the last q_len of the k_len positions (decoding with a KV cache).
    Only entries a query can see (key position <= query position) are compared.
    """
    name = "decoding_bias"
    for q_len, k_len, heads in [(1, 1, 1), (1, 6, 2), (3, 3, 4), (2, 9, 3), (4, 10, 8)]:
        slopes = alibi.alibi_slopes(heads)
        try:
            got = reader(q_len, k_len, slopes.clone())
        except NotImplementedError:
            print(_NOT_ATTEMPTED.format(name=name))
            return
        expected = alibi.alibi_bias(q_len, k_len, slopes)
        where = f"{name}: q_len={q_len}, k_len={k_len}, {heads} heads"
        if not isinstance(got, torch.Tensor) or got.shape != expected.shape:
            shape = tuple(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__
            raise ExerciseMismatch(f"{where}: expected shape {tuple(expected.shape)}, got {shape}")
        visible = attn.causal_mask(q_len, k_len)
        worst = float((got.double() - expected).abs()[:, visible].max())
        if not worst <= 1e-9:  # also catches NaN
            raise ExerciseMismatch(
                f"{where}: visible entries differ by up to {worst:.3g}\n"
                f"expected {_show(expected)}\ngot {_show(got)}"
            )
    print(f"{name}: all 5 cases agree on the entries each query sees.")


def check_mean_distance(reader: Callable[[float, int], float]) -> None:
    """Chapter 08: ``reader(slope, m)``: mean distance m - n under the bias-only weights."""

    def reference(slope: float, m: int) -> float:
        weights = alibi.bias_only_weights(torch.tensor([slope], dtype=torch.float64), m)[0]
        return float((weights * torch.arange(m + 1, dtype=torch.float64)).sum())

    cases = [
        Case(args, f"slope={args[0]}, m={args[1]}")
        for args in [(0.5, 0), (0.5, 100), (1 / 256, 100), (1 / 256, 5000), (0.0, 10)]
    ]
    check("mean_distance", lambda s, m: float(reader(s, m)), reference, cases, atol=1e-9)


def check_perplexity(reader: Callable[[list[float]], float]) -> None:
    """Chapter 09: ``reader(losses)``: perplexity from per-prediction losses in nats."""
    cases = [
        Case(([0.0],), "one certain prediction", 1.0),
        Case(([math.log(4.0)] * 3,), "three predictions at 1/4 each", 4.0),
        Case(([0.5, 1.5, 2.5],), "losses 0.5, 1.5, 2.5", math.exp(1.5)),
    ]
    check("perplexity", lambda losses: float(reader(losses)), None, cases, atol=1e-9)


def check_short_context_fraction(reader: Callable[[int, int], float]) -> None:
    """Chapter 09: ``reader(seq_len, context)``: share of a window's predictions with
    at most ``context`` tokens to condition on (prediction i, 1-based, sees i tokens)."""

    def count(seq_len: int, context: int) -> float:
        return sum(1 for i in range(1, seq_len + 1) if i <= context) / seq_len

    cases = [
        Case(args, f"seq_len={args[0]}, context={args[1]}")
        for args in [(1000, 100), (2000, 100), (64, 100), (64, 0), (7, 3)]
    ]
    check("short_context_fraction", lambda n, c: float(reader(n, c)), count, cases, atol=1e-12)


def check_degradation(reader: Callable[[dict[str, float | None], int], float | None]) -> None:
    """Chapter 09: ``reader(perplexity, train_len)``: perplexity at the longest length
    divided by perplexity at train_len; None if the model cannot run the longest."""
    table = {"64": 4.0, "128": 5.0, "1024": 10.0}
    cases = [
        Case((table, 64), "4.0 at 64 ... 10.0 at 1024"),
        Case(({"32": 2.0, "64": 1.5}, 32), "2.0 at 32, 1.5 at 64"),
        Case(({"64": 3.6, "128": None, "1024": None}, 64), "cannot run past 64"),
        Case(({"1024": 8.0, "64": 4.0}, 64), "lengths in another order"),
    ]

    def reference(perplexity: dict[str, float | None], train_len: int) -> float | None:
        longest = perplexity[max(perplexity, key=int)]
        return None if longest is None else longest / perplexity[str(train_len)]

    def answer(perplexity: dict[str, float | None], train_len: int) -> float | None:
        got = reader(dict(perplexity), train_len)
        return None if got is None else float(got)

    check("degradation", answer, reference, cases, atol=1e-12)


def check_shaw_parameters(reader: Callable[[int, int, int, bool], int]) -> None:
    """Chapter 10: ``reader(n_layers, max_offset, d_head, values)``: parameters of
    Shaw et al.'s position tables in a model of ``n_layers`` layers."""

    def reference(n_layers: int, max_offset: int, d_head: int, values: bool) -> int:
        layer = relative.ShawAttention(d_head * 2, 2, max_offset, values=values)
        tables = [layer.key_table] + ([layer.value_table] if values else [])
        return n_layers * sum(t.weight.numel() for t in tables if t is not None)

    cases = [
        Case(args, f"n_layers={args[0]}, max_offset={args[1]}, d_head={args[2]}, values={args[3]}")
        for args in [(2, 16, 32, True), (1, 0, 8, True), (12, 16, 64, False), (6, 128, 64, True)]
    ]
    check("shaw_parameters", lambda *a: int(reader(*a)), reference, cases)


def check_shaw_table_bytes(reader: Callable[[int, int], int]) -> None:
    """Chapter 10: ``reader(seq_len, d_head)``: bytes of the float32 tensor of key
    embeddings a^K_(m-n) that Shaw attention gathers for one layer (all m, n)."""

    def reference(seq_len: int, d_head: int) -> int:
        layer = relative.ShawAttention(d_head, 1, 16)
        index = relative.relative_indices(torch.arange(seq_len), torch.arange(seq_len), 16)
        return layer.key_table(index).nbytes

    cases = [
        Case(args, f"seq_len={args[0]}, d_head={args[1]}") for args in [(4, 8), (64, 32), (300, 16)]
    ]
    check("shaw_table_bytes", lambda *a: int(reader(*a)), reference, cases)


def check_scaling_exponent(reader: Callable[[float, int, float, int], float]) -> None:
    """Chapter 10: ``reader(t1, l1, t2, l2)``: the exponent p of t ∝ L^p through two points."""
    cases = [
        Case((1.0, 256, 4.0, 512), "4× the time at 2× the length", 2.0),
        Case((3.0, 100, 3.0, 1000), "the same time", 0.0),
        Case((10.0, 1024, 40.0, 4096), "4× the time at 4× the length", 1.0),
    ]
    check("scaling_exponent", lambda *a: float(reader(*a)), None, cases, atol=1e-12)


def _review_scores() -> list[tuple[str, Callable[..., float], bool]]:
    """(name, score(q, k, m, n), depends on m - n only?) for chapter 11's exercise."""
    dim = 8
    generator = torch.Generator().manual_seed(11)
    table = torch.randn(4096, dim, generator=generator, dtype=torch.float64)
    bucket_bias = torch.randn(32, generator=generator, dtype=torch.float64)
    slope = float(alibi.alibi_slopes(4)[0])

    def sinusoid(m: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        rows = sinusoidal.sinusoidal_table(torch.tensor([m, n]), dim, dtype=torch.float64)
        return rows[0], rows[1]

    def added(q: torch.Tensor, k: torch.Tensor, m: int, n: int) -> float:
        p_m, p_n = sinusoid(m, n)
        return float((q + p_m) @ (k + p_n))

    def rotary(q: torch.Tensor, k: torch.Tensor, m: int, n: int) -> float:
        q_m = rope.apply_rope(q[None], torch.tensor([m]))[0]
        k_n = rope.apply_rope(k[None], torch.tensor([n]))[0]
        return float(q_m @ k_n)

    return [
        ("no position", lambda q, k, m, n: float(q @ k), True),
        ("sinusoidal, added to q and k", added, False),
        ("learned table, added", lambda q, k, m, n: float((q + table[m]) @ (k + table[n])), False),
        ("RoPE", rotary, True),
        ("ALiBi bias", lambda q, k, m, n: float(q @ k) - slope * (m - n), True),
        (
            "T5 bias",
            lambda q, k, m, n: (
                float(q @ k) + float(bucket_bias[relative.t5_bucket(torch.tensor(m - n), False)])
            ),
            True,
        ),
        ("position-weighted score", lambda q, k, m, n: float(q @ k) * (1 + 0.01 * m), False),
    ]


def check_offset_only(reader: Callable[[Callable[..., float]], bool]) -> None:
    """Chapter 11: ``reader(score)`` tells whether score(q, k, m, n) depends on m, n only
    through m - n (q, k: float64 vectors of 8 numbers; m, n: integers 0 .. 2000)."""
    name = "offset_only"
    for index, (label, score, expected) in enumerate(_review_scores(), start=1):
        try:
            got = reader(score)
        except NotImplementedError:
            print(_NOT_ATTEMPTED.format(name=name))
            return
        if got not in (True, False) or bool(got) != expected:  # numpy booleans are fine
            raise ExerciseMismatch(
                f"{name}: case {index} ({label}): expected {expected}, got {got!r}"
            )
    print(f"{name}: all {len(_review_scores())} score functions classified correctly.")


def check_keeps_quality(reader: Callable[[dict[str, Any], float], bool | None]) -> None:
    """Chapter 11: ``reader(record, tolerance)``: None if the study record has no
    full-context loss (the model cannot run long windows), else whether the full
    context costs at most ``tolerance`` nats more than the capped one."""

    def record(capped: float, full: float | None) -> dict[str, Any]:
        return {"same_targets": {"capped_context_loss": capped, "full_context_loss": full}}

    def reference(entry: dict[str, Any], tolerance: float) -> bool | None:
        same = entry["same_targets"]
        if same["full_context_loss"] is None:
            return None
        return same["full_context_loss"] - same["capped_context_loss"] <= tolerance

    cases = [
        Case((record(1.35, 1.365), 0.02), "+0.015 with tolerance 0.02"),
        Case((record(1.26, 1.335), 0.02), "+0.075 with tolerance 0.02"),
        Case((record(1.30, 1.20), 0.0), "-0.10 (the context helps)"),
        Case((record(1.34, None), 0.02), "cannot run long windows"),
    ]
    check("keeps_quality", reader, reference, cases)


def check_cheapest_keeper(
    reader: Callable[[dict[str, float], dict[str, float], float], str | None],
) -> None:
    """Chapter 11: ``reader(extra, cost, tolerance)``: of the methods whose extra-context
    loss is at most ``tolerance`` (``extra``: method -> nats), the one with the smallest
    ``cost`` (method -> ratio to NoPE); None if no method qualifies."""
    extra = {"alibi": 0.013, "shaw": 0.077, "t5": 0.668, "rope": 2.0}
    cost = {"alibi": 1.28, "shaw": 7.23, "t5": 2.58, "rope": 1.01}

    def reference(extra: dict[str, float], cost: dict[str, float], tolerance: float) -> str | None:
        keepers = [method for method, loss in extra.items() if loss <= tolerance]
        return min(keepers, key=cost.__getitem__) if keepers else None

    cases = [
        Case((extra, cost, 0.02), "tolerance 0.02"),
        Case((extra, cost, 0.1), "tolerance 0.1"),
        Case((extra, {**cost, "shaw": 1.1}, 0.1), "tolerance 0.1, a cheaper Shaw"),
        Case((extra, cost, 0.001), "tolerance 0.001"),
    ]
    check("cheapest_keeper", reader, reference, cases)
