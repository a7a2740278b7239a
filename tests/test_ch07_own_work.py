"""Exercise 7.1 asks for the float64 angles formed by hand: answers that take them from the
package's tables (rope_angles, rope_cos_sin), as chapter 7's third cold read (s31) found
passing, now fail in practice mode, while the chapter's own solution still passes."""

from __future__ import annotations

import pytest
import torch

from pe_book import exercises, rope
from pe_book.exercises.grading import ExerciseMismatch


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    even, odd = x[:, 0::2], x[:, 1::2]
    out = torch.empty_like(x)
    out[:, 0::2] = even * cos - odd * sin
    out[:, 1::2] = even * sin + odd * cos
    return out


def _from_angles(x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    angle = rope.rope_angles(torch.as_tensor(positions), x.shape[-1])
    return _rotate(x, angle.cos(), angle.sin())


def _from_tables(x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    cos, sin = rope.rope_cos_sin(torch.as_tensor(positions), x.shape[-1])
    return _rotate(x, cos, sin)


def _by_hand(x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    dim = x.shape[-1]
    theta = 10000.0 ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    angle = positions.double()[:, None] * theta
    return _rotate(x, angle.cos(), angle.sin())


@pytest.mark.parametrize(
    "answer, name", [(_from_angles, "rope_angles"), (_from_tables, "rope_cos_sin")]
)
def test_package_tables_are_not_own_work(answer, name) -> None:
    with pytest.raises(ExerciseMismatch, match=f"pe_book.rope.{name}"):
        exercises.check_rope_rotation(answer)


def test_angles_by_hand_still_pass() -> None:
    exercises.check_rope_rotation(_by_hand)
