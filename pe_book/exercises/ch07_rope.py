"""Chapter 7 (RoPE): the rotation, the two layouts, RoFormer's decay bound."""

from __future__ import annotations

import re
from collections.abc import Callable

import torch

from pe_book import decay, rope, sinusoidal
from pe_book.exercises import own_work
from pe_book.exercises.ch05_decay import _profile_cases
from pe_book.exercises.grading import (
    Case,
    ExerciseMismatch,
    _NotAttempted,
    _raised,
    attempt,
    check,
    grader,
)
from pe_book.exercises.policy import _values, judge
from pe_book.exercises.secret import seeded

__all__ = ["check_decay_bound", "check_layout_conversion", "check_rope_rotation"]

#: Exercise 7.1 asks for the float64 angles formed by hand: the package's angle and cos/sin
#: tables (section 7.4) and its rotations hand them over as well (third cold read, s31).
own_work.also_watch(
    "rope_rotation",
    "pe_book.rope.rope_angles",
    "pe_book.rope.rope_cos_sin",
    "pe_book.rope.rotate",
    "pe_book.rope.Rope",
)
#: Exercise 7.3 asks for the partial sums S_ℓ built by hand: the package's helper that
#: builds them, and abel_bound (whose h = e_{d/2-1} gives d/2 times the curve), hand them
#: over (fourth cold read, s31b).
own_work.also_watch("decay_bound", "pe_book.decay._partial_sums", "pe_book.decay.abel_bound")

#: Why exercise 7.1 needs float64 angles (section 7.4 prints it: float32 angles are off by
#: 2.1e-4 rad at position 30,001 for d = 16, 3.8e-4 at 30,002). Float32 angles serve a model
#: of a few thousand positions; the exercise's tolerance is what asks for float64. The most
#: common slip is θ_i alone in float32 (Hugging Face's ``inv_freq = 1.0 / (10000 **
#: (torch.arange(0, d, 2) / d))`` is float32 by default), with the product then in float64:
#: the message names θ_i first.
FLOAT32_ANGLES = (
    "form θ_i and the angles m·θ_i in float64 (θ_i alone in float32, e.g."
    " 10000 ** (torch.arange(0, d, 2) / d), which is float32 by default, is enough to miss):"
    " positions pass 30,000 here, where float32 angles are off by about 2e-4 rad"
    " (section 7.4, d = 16), far more than this exercise's tolerance 1e-6"
)

#: Why exercise 7.3 needs float64 angles (measured: d = 64, offsets to 123,456). The
#: tolerance is relative as well, so a float32 result from float64 angles passes: the
#: bound reaches d/4 + 1/2 at r = 0 (128.5 for d = 512), where float32 rounds by 8e-6.
BOUND_FLOAT32_ANGLES = (
    "form θ_i and the angles r·θ_i in float64: offsets reach 123,456 here, where float32"
    " angles are off by up to 3e-3 rad, far more than this exercise's tolerance (storing"
    " the result in float32 is fine: the tolerance is relative too)"
)


def _rotated_with(x: torch.Tensor, positions: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """Interleaved rotation of x by positions·theta (a wrong theta gives a known wrong answer)."""
    angles = positions.double()[:, None] * theta
    return rope.rotate(x, torch.cos(angles), torch.sin(angles))


#: A 16-bit answer misses by its own rounding, not by its angles (fourth cold read, s31b:
#: a correct rotation cast with .half() was told to fix its angles and its pair order).
_SIXTEEN_BITS = re.compile(r"Your answer is (float16|bfloat16), the likely cause: .*?1e-6\.", re.S)
SIXTEEN_BITS = (
    r"Your answer is \1, the likely cause: it is stored in 16 bits, which keep 3 significant"
    " digits or fewer, a rounding far above the tolerance 1e-6: return float32 or float64"
    " (the angles are not the cause)."
)


def _rotation_mistake(reader: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> str | None:
    """Name the common mistake a wrong 7.1 answer matches, if any (nothing expected is shown)."""
    generator = seeded(71)
    x = torch.randn(3, 8, generator=generator, dtype=torch.float64)
    positions = torch.tensor([0, 3, 1000])
    try:
        raw = attempt(reader, x.clone(), positions.clone())
        got = _values(raw)
    except Exception:  # the mismatch already says what the function did
        return None
    if got.shape != x.shape or getattr(raw, "dtype", None) in (torch.float16, torch.bfloat16):
        return None  # a 16-bit answer: its rounding, not its pairs, is what misses

    def close(other: torch.Tensor) -> bool:
        return bool((got - other).abs().max() <= 1e-6)

    pairs = torch.arange(0, 8, 2, dtype=torch.float64)
    known = [
        (
            rope.apply_rope(x, positions, layout="half"),
            "your pairs are (i, i + d/2), the half layout; this exercise pairs (2i, 2i+1)",
        ),
        (
            rope.apply_rope(x, -positions),
            "you turn each pair by −mθ_i (the transpose of the rotation); RoPE turns by +mθ_i:"
            " (x_a cos − x_b sin, x_a sin + x_b cos)",
        ),
        (
            rope.apply_rope(x, positions + 1),
            "you rotate by (m + 1)θ_i: the positions are used as given, 0 means no rotation",
        ),
        (
            _rotated_with(x, positions, 10000.0 ** (-(pairs + 2) / 8)),
            "your θ_i is pair i + 1's frequency: θ_0 = 1 (pair 0 turns by m radians)",
        ),
        (
            _rotated_with(x, positions, 10000.0 ** (-pairs / 2 / 8)),
            "your θ_i = 10000^(−i/d); the exercise's is 10000^(−2i/d), i the pair index",
        ),
    ]
    for answer, mistake in known:
        if close(answer):
            return f"Known mistake: {mistake}."
    if not bool((got[0] - x[0]).abs().max() <= 1e-6):
        return (
            "At position 0 every angle is 0, so RoPE leaves the row unchanged, but yours"
            " changes it: check the order in which you write the pairs back"
        )
    return None


def check_rope_rotation(reader: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """Chapter 7: ``reader(x, positions)`` rotates x (L, d) with interleaved pairs, to within
    1e-6 (positions reach 30,002: the angles must be float64). A wrong answer that matches a
    known mistake (the half layout, −mθ, m + 1, θ of the next pair, 10000^(−i/d), or a row
    at position 0 that is not x) is told which."""
    generator = seeded(7)
    cases = []
    for dim, positions, kind in [
        (4, torch.arange(4), "positions 0..3"),
        (2, torch.arange(1), "one position, one pair"),
        (16, torch.tensor([0, 1, 2, 1001, 30001]), "positions from 0 to 30,001"),
        (8, torch.arange(100, 105), "positions that do not start at 0"),
        (16, torch.arange(30000, 30003), "positions past 30,000"),
    ]:
        x = torch.randn(len(positions), dim, generator=generator, dtype=torch.float64)
        description = f"x {tuple(x.shape)}, positions {positions.tolist()}"
        cases.append(Case((x, positions), description, kind=kind))
    try:
        check(
            "rope_rotation",
            reader,
            lambda x, positions: rope.apply_rope(x, positions),
            cases,
            atol=1e-6,
            float32=FLOAT32_ANGLES,
            locate=lambda case, index: (
                f"row {index[0]} (position {int(case.args[1][index[0]]):,}), column {index[1]}"
            ),
            positions=lambda case: case.args[1],
        )
    except ExerciseMismatch as mismatch:
        message = _SIXTEEN_BITS.sub(SIXTEEN_BITS, str(mismatch))
        mistake = _rotation_mistake(reader)
        if mistake is None and message == str(mismatch):
            raise
        raise ExerciseMismatch(message + (f"\n{mistake}" if mistake else "")) from None


def _same_scores(
    q: torch.Tensor, k: torch.Tensor, q_new: torch.Tensor, k_new: torch.Tensor
) -> bool:
    """Do q_new, k_new give under interleaved RoPE the scores q, k give under half RoPE?"""
    q, k, q_new, k_new = (t.reshape(-1, t.shape[-1]) for t in (q, k, q_new, k_new))
    expected = rope.apply_rope(q, layout="half") @ rope.apply_rope(k, layout="half").T
    got = rope.apply_rope(q_new) @ rope.apply_rope(k_new).T
    return judge(expected, got, atol=1e-6, rtol=1e-6) is None


@grader
def check_layout_conversion(reader: Callable[[torch.Tensor], torch.Tensor]) -> str:
    """Chapter 7: ``reader(q)`` rearranges the coordinates of q (shape (..., d)) of a model
    trained with *half* RoPE into the interleaved order, so that interleaved RoPE gives the
    same scores; the coordinates are compared (to within 1e-6), for 2-D and 4-D inputs."""
    generator = seeded(8)
    shapes = [(12, 8), (12, 2), (12, 64), (2, 3, 5, 16)]  # (..., d): also (batch, heads, L, d)
    for shape in shapes:
        dim = shape[-1]
        q, k = torch.randn(2, *shape, generator=generator, dtype=torch.float64)
        try:
            q_new, k_new = attempt(reader, q.clone()), attempt(reader, k.clone())
        except _NotAttempted:
            raise
        except Exception as exc:  # name the input: a 2-D-only answer fails on the 4-D one
            raise ExerciseMismatch(
                f"input of shape {shape} (any leading dimensions are allowed): your function"
                f" {_raised(exc)}"
            ) from exc
        try:  # a tensor, a NumPy array or a list: the book's one policy
            q_new, k_new = _values(q_new, "numbers"), _values(k_new, "numbers")
        except TypeError as exc:
            raise ExerciseMismatch(f"input of shape {shape}: your answer: {exc}") from None
        if tuple(q_new.shape) != shape:
            raise ExerciseMismatch(
                f"input of shape {shape}: your answer has shape {tuple(q_new.shape)}"
                " (the conversion only reorders the last dimension)"
            )
        permutation = torch.tensor(sinusoidal.layout_permutation(dim))
        expected = q[..., torch.argsort(permutation)]  # half order -> interleaved order
        problem = judge(expected, q_new, atol=1e-6, locate=lambda index: f"coordinate {index[-1]}")
        if problem is None:
            continue
        message = (
            f"input of shape {shape}: your coordinates are not the interleaved ones: {problem}"
        )
        if torch.allclose(q_new, q[..., permutation]):
            message += (
                ". Your map takes interleaved vectors to half ones (section 7.2's"
                " direction); this exercise goes from half to interleaved"
            )
        elif _same_scores(q, k, q_new, k_new):
            message += (
                ". Your vectors do give the same scores (so would a sign flip of q and k, or a"
                " fixed turn of every pair), but the exercise asks for the layout conversion:"
                " the coordinates rearranged, nothing else changed"
            )
        raise ExerciseMismatch(message)
    return (
        "your map puts each half-layout coordinate in its interleaved place, for d = 8, 2,"
        " 64 and a (batch, heads, L, d) input: the interleaved scores = the half-layout ones."
    )


def _bound_variants(offsets: torch.Tensor, dim: int) -> dict[str, torch.Tensor]:
    """|S_ℓ| averaged over the wrong range of ℓ: the off-by-one slips of exercise 7.3."""
    angles = offsets.double()[:, None] * sinusoidal.frequencies(dim)  # (len(offsets), d/2)
    partial = torch.polar(torch.ones_like(angles), angles).cumsum(-1).abs()  # |S_1| .. |S_{d/2}|
    zero = torch.zeros(len(offsets), 1, dtype=torch.float64)  # |S_0|
    return {
        "exclusive": torch.cat((zero, partial[:, :-1]), -1).mean(-1),
        "with S_0": torch.cat((zero, partial), -1).mean(-1),
        "without the last": partial[:, :-1].mean(-1),
    }


#: What each off-by-one slip of exercise 7.3 did, in words (no expected value shown).
BOUND_MISTAKES = {
    "exclusive": (
        "you average |S_0| .. |S_{d/2−1}| (S_0 = 0): the mean runs over ℓ = 1 .. d/2, where"
        " S_1 = z_0 and S_{d/2} is the sum of all d/2 terms (at r = 0 yours gives d/4 − 1/2,"
        " the bound d/4 + 1/2)"
    ),
    "with S_0": "you average d/2 + 1 terms, S_0 = 0 included: the mean runs over ℓ = 1 .. d/2",
    "without the last": (
        "you leave out S_{d/2}, the sum of all d/2 terms: the mean runs over ℓ = 1 .. d/2"
    ),
}


def _bound_mistake(reader: Callable[[torch.Tensor, int, float], torch.Tensor]) -> str | None:
    """Name the off-by-one slip a wrong 7.3 answer matches, if any."""
    offsets, dim = torch.tensor([0, 1, 7, 100, 2500]), 16
    try:
        got = _values(attempt(reader, offsets.clone(), dim, 10000.0)).double().reshape(-1)
    except Exception:  # the mismatch already says what the function did
        return None
    if got.shape != offsets.shape:
        return None
    for key, wrong in _bound_variants(offsets, dim).items():
        if bool((got - wrong).abs().max() <= 1e-5):
            return f"Known mistake: {BOUND_MISTAKES[key]}."
    return None


def check_decay_bound(reader: Callable[[torch.Tensor, int, float], torch.Tensor]) -> None:
    """Chapter 7: ``reader(offsets, dim, base)`` returns (1/(d/2)) Σ_ℓ |S_ℓ| per offset, to
    within 1e-6 + a relative 1e-6 (values reach d/4 + 1/2; offsets reach 123,456, so the
    angles must be float64, while a float32 result from float64 angles passes). An answer
    that averages over the wrong ℓ (S_0 .. S_{d/2−1}, S_0 .. S_{d/2}, or S_1 .. S_{d/2−1})
    is told which."""
    cases = _profile_cases()
    try:
        check(
            "decay_bound",
            reader,
            decay.rope_decay_bound,
            cases,
            atol=1e-6,
            rtol=1e-6,  # a float32 result (8e-6 off at 128.5) passes; float32 angles do not
            float32=BOUND_FLOAT32_ANGLES,
            locate=lambda case, index: f"offset r = {int(case.args[0][index[0]]):,}",
            positions=lambda case: case.args[0],
        )
    except ExerciseMismatch as mismatch:
        mistake = _bound_mistake(reader)
        if mistake is None:
            raise
        raise ExerciseMismatch(f"{mismatch}\n{mistake}") from None
