"""Chapter 7 (RoPE): the rotation, the two layouts, RoFormer's decay bound."""

from __future__ import annotations

from collections.abc import Callable

import torch

from pe_book import decay, rope, sinusoidal
from pe_book.exercises.ch05_decay import _check_offset_profile
from pe_book.exercises.grading import Case, ExerciseMismatch, attempt, check, grader
from pe_book.exercises.policy import judge
from pe_book.exercises.secret import seeded

__all__ = ["check_decay_bound", "check_layout_conversion", "check_rope_rotation"]

#: Why exercise 7.1 needs float64 angles (section 7.4's table: float32 angles are off by
#: about 4e-4 rad at position 30,000 for d = 16).
FLOAT32_ANGLES = (
    "form the angles m·θ_i in float64, because positions reach 30,002 here, where float32"
    " angles are off by about 4e-4 rad (section 7.4's table), far more than the tolerance 1e-6"
)


def check_rope_rotation(reader: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """Chapter 7: ``reader(x, positions)`` rotates x (L, d) with interleaved pairs, to within
    1e-6 (positions reach 30,002: the angles must be float64)."""
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


@grader
def check_layout_conversion(reader: Callable[[torch.Tensor], torch.Tensor]) -> str:
    """Chapter 7: ``reader(q)`` maps q of a model trained with *half* RoPE to q' that gives
    the same scores under *interleaved* RoPE (to within 1e-6 + a relative 1e-6)."""
    generator = seeded(8)
    for dim in (8, 2, 64):
        q, k = torch.randn(2, 12, dim, generator=generator, dtype=torch.float64)
        q_new, k_new = attempt(reader, q.clone()), attempt(reader, k.clone())
        if not isinstance(q_new, torch.Tensor) or q_new.shape != q.shape:
            raise ExerciseMismatch(f"dim={dim}: expected a tensor of shape {tuple(q.shape)}")
        expected = rope.apply_rope(q, layout="half") @ rope.apply_rope(k, layout="half").T
        got = rope.apply_rope(q_new.double()) @ rope.apply_rope(k_new.double()).T
        problem = judge(
            expected,
            got,
            atol=1e-6,
            rtol=1e-6,
            locate=lambda index: f"query {index[0]}, key {index[1]}",
        )
        if problem:
            message = (
                f"dim={dim}: your vectors' scores under interleaved RoPE differ from the"
                f" half-layout ones: {problem}"
            )
            forward = q[..., sinusoidal.layout_permutation(dim)]
            if torch.allclose(q_new.double(), forward):
                message += (
                    ". Your map takes interleaved vectors to half ones (section 7.2's"
                    " direction); this exercise goes from half to interleaved"
                )
            raise ExerciseMismatch(message)
    return "for d = 8, 2, 64 your interleaved scores = the half-layout ones."


def check_decay_bound(reader: Callable[[torch.Tensor, int, float], torch.Tensor]) -> None:
    """Chapter 7: ``reader(offsets, dim, base)`` returns (1/(d/2)) Σ_ℓ |S_ℓ| per offset."""
    _check_offset_profile("decay_bound", reader, decay.rope_decay_bound)
