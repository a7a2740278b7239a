"""Chapter 10 (methods that change what position means): KERPLE's CPD margin, p-RoPE's
frequencies, CoPE's positions; and MLA's cache, which moves with MLA to the chapter on
today's open models."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from pe_book import cope, kerple, mla, p_rope
from pe_book.exercises.ch08_context import FLOAT32_FREQUENCIES, RTOL
from pe_book.exercises.grading import Case, ExerciseMismatch, check
from pe_book.exercises.secret import seeded
from pe_book.rope_scaling import partial_rotary_frequencies

__all__ = [
    "check_cope_positions",
    "check_cpd_margin",
    "check_mla_cache_ratio",
    "check_p_rope_frequencies",
]

F64 = torch.float64


def _distance(size: int) -> torch.Tensor:
    positions = torch.arange(size, dtype=F64)
    return (positions[:, None] - positions[None, :]).abs()  # (size, size), |m - n|


#: Why the margin is checked in float64: float32 eigenvalues are right only to about
#: 1e-7 of the kernel's largest entry (a relative 1.6e-6 off on the log kernel's case).
FLOAT32_MARGIN = (
    "work in float64: the margin is asked to about 1e-9, and float32 gets an eigenvalue"
    " right only to about 1e-7 of the kernel's largest entry"
)


def check_cpd_margin(reader: Callable[[torch.Tensor], Any]) -> None:
    """Chapter 10: ``reader(kernel)`` returns min aᵀKa over unit vectors a with Σa = 0.

    ``kernel`` is a symmetric float64 (n, n) tensor; the answer (a number) is compared
    with :func:`pe_book.kerple.cpd_margin` to 1e-9 plus a relative 1e-9. The kernels are
    fixtures: KERPLE's two kinds and a power above 2 on a few positions, a distance
    penalty plus a constant (which the margin ignores and K's own eigenvalues do not),
    a random symmetric matrix, and the power 2, whose margin is exactly 0. They tell the
    margin from K's smallest eigenvalue, from the centred matrix's (whose eigenvector 1
    adds a 0), from the centred matrix's with every eigenvalue near 0 dropped (the power
    2 has several), and from a basis e_j - e_last that is not orthonormal.
    """
    symmetric = torch.randn(7, 7, dtype=F64, generator=seeded(10))
    kernels = [
        (
            -torch.tensor([[0.0, 1.0], [1.0, 0.0]], dtype=F64),
            "-|m - n| on 2 positions",
            "two positions: one zero-sum direction",
        ),
        (
            -1.5 * torch.log1p(0.3 * _distance(20)),
            "-1.5 log(1 + 0.3|m - n|), 20 positions",
            "KERPLE's logarithmic kernel",
        ),
        (-(_distance(10) ** 1.5), "-|m - n|^1.5, 10 positions", "a power below 2"),
        (-(_distance(9) ** 3), "-|m - n|^3, 9 positions", "a power above 2: not CPD"),
        (
            -(_distance(8) ** 2),
            "-|m - n|^2, 8 positions",
            "the power 2, the edge of section 10.2: the centred matrix has several zero"
            " eigenvalues",
        ),
        (
            50.0 - 0.5 * _distance(6),
            "50 - 0.5|m - n|, 6 positions",
            "a constant added: K's own eigenvalues move, the margin does not",
        ),
        (
            (symmetric + symmetric.T) / 2,
            "a random symmetric 7 x 7 matrix (seed 10)",
            "a symmetric matrix that is no kernel of distance",
        ),
    ]
    cases = [Case((kernel,), description, kind=kind) for kernel, description, kind in kernels]
    last: list[tuple[torch.Tensor, Any]] = []

    def read(kernel: torch.Tensor) -> Any:
        last[:] = [(kernel, reader(kernel.clone()))]
        return last[0][1]

    try:
        check("cpd_margin", read, kerple.cpd_margin, cases, atol=1e-9, rtol=1e-9,
              float32=FLOAT32_MARGIN)  # fmt: skip
    except ExerciseMismatch as error:
        kernel, answer = last[0] if last else (None, None)
        own = None if kernel is None else float(torch.linalg.eigvalsh(kernel)[0])
        if (
            own is not None
            and _equals(answer, own)
            and not _equals(answer, kerple.cpd_margin(kernel))
        ):
            raise ExerciseMismatch(
                f"{error}\nHint: that is K's own smallest eigenvalue, over every unit vector;"
                " the margin takes only those whose entries sum to 0."
            ) from None
        raise


def _equals(answer: Any, value: float) -> bool:
    """Is the reader's answer (a number, or a one-number tensor or list) ``value``, to
    1e-9 plus a relative 1e-9? Anything else is not."""
    try:
        found = torch.as_tensor(answer, dtype=F64).reshape(-1)
    except (TypeError, ValueError, RuntimeError):
        return False
    if found.numel() != 1:
        return False
    return abs(float(found[0]) - value) <= 1e-9 + 1e-9 * abs(value)


def _pair(case: Case, index: tuple[int, ...]) -> str:
    return f"pair i = {index[0]}"


def check_p_rope_frequencies(reader: Callable[[int, float, float], Any]) -> None:
    """Chapter 10: ``reader(dim, p, base)`` returns p-RoPE's θ'_i, shape (dim/2,), to a
    relative 1e-9 (the stopped pairs exactly 0).

    Compared with :func:`pe_book.p_rope.p_rope_frequencies`: the fastest ⌊p·d/2⌋ pairs keep
    θ_i = b^(-2i/d), the others get 0. The cases catch NeoX's re-spread frequencies (d = 128,
    p = 1/4), rounding instead of flooring (p = 0.3 at d = 10), keeping the slow pairs, and
    a base hard-coded to 10000 (d = 64 rotates 16 pairs with b = 500000).
    Float64 is asked for the reason chapter 8's frequencies are
    (:data:`pe_book.exercises.ch08_context.FLOAT32_FREQUENCIES`).
    """
    settings = [
        (128, 0.25, 10000.0, "d = 128, p = 1/4: a quarter of the pairs"),
        (64, 0.5, 500000.0, "half the pairs, Llama 3's base: the base is read"),
        (10, 0.3, 500000.0, "p d/2 = 1.5: floor, not round"),
        (8, 1.0, 10000.0, "p = 1: RoPE"),
        (8, 0.0, 10000.0, "p = 0: NoPE"),
        (128, 0.999, 10000.0, "p just below 1"),
    ]
    cases = [
        Case(args, f"dim={args[0]}, p={args[1]}, base={args[2]:g}", kind=kind)
        for *args, kind in settings
    ]
    last: list[tuple[tuple[Any, ...], Any]] = []

    def read(*args: Any) -> Any:
        last[:] = [(args, reader(*args))]
        return last[0][1]

    try:
        check("p_rope_frequencies", read, p_rope.p_rope_frequencies, cases, atol=0.0,
              rtol=RTOL, float32=FLOAT32_FREQUENCIES, locate=_pair)  # fmt: skip
    except ExerciseMismatch as error:
        if last and _is_neox(*last[0]):
            raise ExerciseMismatch(
                f"{error}\nHint: these are GPT-NeoX's partial-rotary frequencies"
                " (chapter 8), re-spread over the rotated pairs; p-RoPE keeps RoPE's own"
                " θ_i for its fastest pairs."
            ) from None
        raise


def _is_neox(args: tuple[Any, ...], answer: Any) -> bool:
    """Does the answer equal GPT-NeoX's partial rotary frequencies for (dim, p, base)?"""
    try:
        theta, _ = partial_rotary_frequencies(*args)
        found = torch.as_tensor(answer, dtype=F64).reshape(-1)
    except (TypeError, ValueError, RuntimeError):
        return False
    return found.shape == theta.shape and bool(
        torch.allclose(found, theta.to(F64), rtol=1e-9, atol=0)
    )


def _query_key(case: Case, index: tuple[int, ...]) -> str:
    return f"query m = {index[0]}, key n = {index[1]}"


def check_cope_positions(reader: Callable[[torch.Tensor, torch.Tensor], Any]) -> None:
    """Chapter 10: ``reader(q, k)`` returns CoPE's positions p_mn, shape (L, L), to 1e-5.

    q and k are float64 (L, d), queries and keys at positions 0 .. L-1; p_mn =
    Σ_{j=n}^{m} σ(q_m · k_j / √d) for n <= m and 0 for n > m, compared with
    :func:`pe_book.cope.cope_positions`. The inputs are fixtures (seeded): they tell the
    sum from j = n to m from a count from the start, from one that lets future keys in,
    from one that leaves key n out, and gates without the 1/√d or by softmax. Precision
    is not the point: float32 passes.
    """
    generator = seeded(11)
    shapes = [
        (1, 4, 1.0, "L = 1: one query, one key"),
        (5, 4, 1.0, "a few positions"),
        (12, 8, 3.0, "large queries: gates near 0 or 1"),
        (9, 16, 0.3, "small queries: gates near 1/2"),
    ]
    cases = []
    for seq_len, dim, scale, kind in shapes:
        q = scale * torch.randn(seq_len, dim, dtype=F64, generator=generator)
        k = torch.randn(seq_len, dim, dtype=F64, generator=generator)
        description = f"L={seq_len}, d={dim}, q scaled by {scale} (seed 11)"
        cases.append(Case((q, k), description, kind=kind))
    check(
        "cope_positions",
        lambda q, k: reader(q.clone(), k.clone()),
        cope.cope_positions,
        cases,
        atol=1e-5,
        locate=_query_key,
    )


def check_mla_cache_ratio(reader: Callable[[int, int, int, int], Any]) -> None:
    """Chapter 10: ``reader(n_heads, d_head, d_latent, d_rope)``: MHA's cache over MLA's.

    Per token and layer, multi-head attention caches 2 H d_h numbers
    (:func:`pe_book.mla.mha_cache_floats`) and MLA d_c + d_h^R
    (:func:`pe_book.mla.mla_cache_floats`). The first case has DeepSeek-V2's sizes; the
    others are fixtures that tell apart the usual slips (no k^R, one k^R per head, no 2).
    MLA leaves chapter 10 for the chapter on today's open models, and this checker with it.
    """

    def reference(n_heads: int, d_head: int, d_latent: int, d_rope: int) -> float:
        return mla.mha_cache_floats(n_heads, d_head) / mla.mla_cache_floats(d_latent, d_rope)

    settings = [(128, 128, 512, 64), (16, 128, 512, 64), (32, 64, 256, 32), (1, 8, 8, 2)]
    cases = [
        Case(args, "n_heads={}, d_head={}, d_latent={}, d_rope={}".format(*args))
        for args in settings
    ]
    check("mla_cache_ratio", lambda *a: float(reader(*a)), reference, cases, atol=1e-9)
