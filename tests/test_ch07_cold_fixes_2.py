"""Chapter 7's fourth cold read (s31b): exercise 7.3 passed with the package's own partial
sums (decay._partial_sums) or with abel_bound at h = e_{d/2-1}; both now fail in practice
mode with the write-it-yourself message, while the chapter's solution still passes. And a
correct exercise 7.1 rotation returned in float16 or bfloat16 was told to fix its angles and
its pair order: it is now told that its 16 bits are the cause, and nothing else."""

from __future__ import annotations

import pytest
import torch

from pe_book import decay, exercises
from pe_book.exercises.grading import ExerciseMismatch


def _package_partial_sums(offsets, dim, base):
    return decay._partial_sums(torch.as_tensor(offsets).double(), dim, base).abs().mean(-1)


def _package_abel_bound(offsets, dim, base):
    q, k = torch.zeros(2, dim, dtype=torch.float64)
    q[-2], k[-2] = 1, 1  # h = e_{d/2-1}: the only step is the last, of size 1
    return decay.abel_bound(q, k, offsets, base) / (dim // 2)


def _bound_by_hand(offsets, dim, base):
    theta = base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    phases = offsets.double()[:, None] * theta
    return torch.polar(torch.ones_like(phases), phases).cumsum(-1).abs().mean(-1)


@pytest.mark.parametrize(
    "answer, name",
    [(_package_partial_sums, "_partial_sums"), (_package_abel_bound, "abel_bound")],
)
def test_package_bound_helpers_are_not_own_work(answer, name) -> None:
    with pytest.raises(ExerciseMismatch, match=f"pe_book.decay.{name}"):
        exercises.check_decay_bound(answer)


def test_bound_by_hand_still_passes() -> None:
    exercises.check_decay_bound(_bound_by_hand)


def _rope_by_hand(x, positions):
    dim = x.shape[-1]
    theta = 10000.0 ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    angle = positions.double()[:, None] * theta
    even, odd = x[:, 0::2], x[:, 1::2]
    out = torch.empty_like(x)
    out[:, 0::2] = even * torch.cos(angle) - odd * torch.sin(angle)
    out[:, 1::2] = even * torch.sin(angle) + odd * torch.cos(angle)
    return out


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_sixteen_bit_rotation_is_told_its_bits(dtype) -> None:
    with pytest.raises(ExerciseMismatch) as caught:
        exercises.check_rope_rotation(lambda x, p: _rope_by_hand(x, p).to(dtype))
    message = str(caught.value)
    assert "stored in 16 bits" in message and "return float32 or float64" in message
    assert "float64 (θ_i alone in float32" not in message  # not the angles
    assert "order in which you write the pairs" not in message  # nor the pairs
