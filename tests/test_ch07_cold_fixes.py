"""What the second cold read of chapter 7 found (issue 23), kept from coming back.

Exercise 7.1 names the common wrong answers it used to reject with one generic message;
exercise 7.2 accepts an array or a list, as the book's one policy says; claim
001-rope-rotates-qk no longer holds for a method in which relative position never enters
(no rotation at all), and both chapter 7 claims print their counterfactual.
"""

from __future__ import annotations

import pytest
import sympy as sp
import torch

from pe_book import exercises
from pe_book.claims import rope as rope_claims
from pe_book.sinusoidal import layout_permutation

F64 = torch.float64


def _theta(dim: int, step: float = 2.0) -> torch.Tensor:
    return 10000.0 ** (-torch.arange(0, dim // 2, dtype=F64) * step / dim)


def _pairs(x, positions, theta, *, sign=1, layout="interleaved"):
    """RoPE written by hand, with the knobs the common mistakes turn."""
    angle = sign * positions.double()[:, None] * theta
    half = x.shape[-1] // 2
    a, b = (x[:, 0::2], x[:, 1::2]) if layout == "interleaved" else (x[:, :half], x[:, half:])
    first, second = a * angle.cos() - b * angle.sin(), a * angle.sin() + b * angle.cos()
    if layout == "half":
        return torch.cat((first, second), dim=-1)
    out = torch.empty_like(x)
    out[:, 0::2], out[:, 1::2] = first, second
    return out


def _written_in_half_order(x, positions):  # right numbers, pairs written back as [a' | b']
    angle = positions.double()[:, None] * _theta(x.shape[-1])
    a, b = x[:, 0::2], x[:, 1::2]
    return torch.cat((a * angle.cos() - b * angle.sin(), a * angle.sin() + b * angle.cos()), -1)


# ---- exercise 7.1: each common mistake fails, and is named ------------------------------

MISTAKES_7_1 = {
    "the half layout": (
        lambda x, p: _pairs(x, p, _theta(x.shape[-1]), layout="half"),
        "the half layout",
    ),
    "rotating by -m theta": (
        lambda x, p: _pairs(x, p, _theta(x.shape[-1]), sign=-1),
        "−mθ_i",
    ),
    "positions + 1": (lambda x, p: _pairs(x, p + 1, _theta(x.shape[-1])), "(m + 1)θ_i"),
    "theta of the next pair": (
        lambda x, p: _pairs(x, p, _theta(x.shape[-1]) * 10000.0 ** (-2 / x.shape[-1])),
        "pair i + 1's frequency",
    ),
    "theta_i = 10000^(-i/d)": (
        lambda x, p: _pairs(x, p, _theta(x.shape[-1], step=1.0)),
        "10000^(−i/d)",
    ),
    "output written in half order": (_written_in_half_order, "At position 0"),
}


@pytest.mark.parametrize("label", MISTAKES_7_1)
def test_a_common_mistake_in_7_1_fails_and_is_named(label):
    answer, named = MISTAKES_7_1[label]
    with pytest.raises(exercises.ExerciseMismatch) as raised:
        exercises.check_rope_rotation(answer)
    message = str(raised.value)
    assert message.startswith("rope_rotation: ") and named in message, message


def test_the_right_answer_to_7_1_still_passes(capsys):
    exercises.check_rope_rotation(lambda x, p: _pairs(x, p, _theta(x.shape[-1])))
    assert "all 5 cases agree" in capsys.readouterr().out


def test_7_1_float32_message_quotes_the_angle_error_section_7_4_prints():
    assert "2e-4 rad" in exercises.ch07_rope.FLOAT32_ANGLES
    assert "4e-4" not in exercises.ch07_rope.FLOAT32_ANGLES


# ---- exercise 7.2: any array-like answer, judged by its values ---------------------------


def _inverse(q):
    return q[..., torch.argsort(torch.tensor(layout_permutation(q.shape[-1])))]


@pytest.mark.parametrize(
    "convert",
    [lambda q: _inverse(q).numpy(), lambda q: _inverse(q).tolist()],
    ids=["numpy", "list"],
)
def test_7_2_accepts_an_array_or_a_list(convert, capsys):
    exercises.check_layout_conversion(convert)
    assert "interleaved scores = the half-layout ones" in " ".join(capsys.readouterr().out.split())


def test_7_2_names_what_it_got_when_the_answer_holds_no_numbers():
    with pytest.raises(exercises.ExerciseMismatch) as raised:
        exercises.check_layout_conversion(lambda q: "interleaved")
    assert "got str" in str(raised.value)


def test_7_2_names_the_shape_of_a_flattened_answer():
    with pytest.raises(exercises.ExerciseMismatch) as raised:
        exercises.check_layout_conversion(lambda q: _inverse(q).reshape(-1))
    assert "has shape (96,)" in str(raised.value)


# ---- claims: the evidence can fail for the reason the claim gives -----------------------


def test_no_rotation_at_all_no_longer_passes_as_relative_position_entering():
    finding = rope_claims.rope_rotates_qk(
        rotate=lambda x, positions: x, rotation=lambda angle: sp.eye(2)
    )
    assert finding.holds is False
    assert "n = 0 is 0" in finding.shown[0]


def test_rope_rotates_qk_prints_its_counterfactual():
    shown = rope_claims.rope_rotates_qk().shown
    assert "n = 0 is not 0 (m − n enters)" in shown[0]
    assert any(line.startswith("counterfactual, no rotation (NoPE)") for line in shown)


def test_values_claim_prints_its_counterfactual_and_the_layer_kind():
    shown = rope_claims.rope_values_no_position().shown
    assert "bidirectional layer" in shown[1]
    assert shown[2].startswith("counterfactual, the same layer rotating nothing")
    assert "changes by 0.000" in shown[2]


# ---- third cold read (s31): the slips that passed, or were not named ----------------------


def _hf_style_rope(x, positions):
    """θ_i as Hugging Face writes inv_freq (float32 by default), the product in float64."""
    dim = x.shape[-1]
    inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2) / dim))  # float32
    return _pairs(x, positions, inv_freq.double())


def test_7_1_float32_theta_with_a_float64_product_fails_and_names_theta():
    with pytest.raises(exercises.ExerciseMismatch) as raised:
        exercises.check_rope_rotation(_hf_style_rope)
    message = " ".join(str(raised.value).split())
    assert "form θ_i and the angles m·θ_i in float64" in message
    assert "positions pass 30,000 here" in message and "30,002" not in message


def _bound_over(first: int, last: int):
    """(1/(d/2))-style mean of |S_ℓ| for ℓ = first .. last (the exercise's is 1 .. d/2)."""

    def bound(offsets, dim, base):
        theta = float(base) ** (-torch.arange(0, dim, 2, dtype=F64) / dim)
        angles = offsets.double()[:, None] * theta
        partial = torch.polar(torch.ones_like(angles), angles).cumsum(-1).abs()
        every = torch.cat((torch.zeros(len(offsets), 1, dtype=F64), partial), -1)  # S_0 ..
        return every[:, first : last + 1].mean(-1)

    return bound


MISTAKES_7_3 = {
    "S_0 .. S_{d/2-1} (the exclusive cumsum)": (
        lambda o, d, b: _bound_over(0, d // 2 - 1)(o, d, b),
        "you average |S_0| .. |S_{d/2−1}|",
    ),
    "S_0 .. S_{d/2}": (
        lambda o, d, b: _bound_over(0, d // 2)(o, d, b),
        "you average d/2 + 1 terms",
    ),
    "S_1 .. S_{d/2-1}": (
        lambda o, d, b: _bound_over(1, d // 2 - 1)(o, d, b),
        "you leave out S_{d/2}",
    ),
}


@pytest.mark.parametrize("label", MISTAKES_7_3)
def test_an_off_by_one_in_7_3_fails_and_is_named(label):
    answer, named = MISTAKES_7_3[label]
    with pytest.raises(exercises.ExerciseMismatch) as raised:
        exercises.check_decay_bound(answer)
    message = str(raised.value)
    assert message.startswith("decay_bound: ") and f"Known mistake: {named}" in message, message


def test_the_right_answer_to_7_3_still_passes(capsys):
    exercises.check_decay_bound(lambda o, d, b: _bound_over(1, d // 2)(o, d, b))
    assert "all 4 cases agree" in capsys.readouterr().out


def test_long_term_decay_prints_its_counterfactual_and_fails_on_one_frequency():
    finding = rope_claims.long_term_decay()
    assert finding.holds is True and finding.caveat
    assert finding.shown[-1].startswith("counterfactual, one frequency for all pairs")
    assert rope_claims.long_term_decay(base=1 + 1e-6).holds is False


def test_rope_rotates_qk_prints_a_counterfactual_that_is_not_shift_invariant():
    shown = rope_claims.rope_rotates_qk().shown
    assert any(line.startswith("counterfactual, sinusoids added") for line in shown)
