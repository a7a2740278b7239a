"""Chapter 10's second cold read (s31b): the KERPLE claim's caveat is computed, and can go.

The verdict on chi2022-kerple-beats-alibi is "holds with a caveat" because most of
KERPLE's lead in the longest windows is already there at the training length and the
extra-context part clears the margin by less than its rounding. A study in which KERPLE's
extra context helps by a clear 0.1 nats more gives plain "holds": the caveat is read from
the results, not written in.
"""

from __future__ import annotations

from pe_book.claims import Verdict, run
from pe_book.claims import study as study_evidence
from pe_book.results import Runs


def kerple_extrapolating_better(nats: float) -> Runs:
    """The base study with KERPLE's loss in the longest windows, and its full-context loss
    past the first unit, lowered by ``nats`` on every seed (its loss at L unchanged)."""
    base = study_evidence.base_study()
    records, top = dict(base.records), str(max(base.lengths))
    records["kerple"] = {}
    for seed, record in base.records["kerple"].items():
        segment = {**record["segment_loss"], top: [v - nats for v in record["segment_loss"][top]]}
        full = [row[:1] + [v - nats for v in row[1:]] for row in record["full_by_bin"]]
        records["kerple"][seed] = {**record, "segment_loss": segment, "full_by_bin": full}
    return Runs(base.design, records)


def test_kerple_caveat_is_printed_from_the_results():
    found = run("chi2022-kerple-beats-alibi")
    assert found.verdict is Verdict.CAVEAT
    assert "training length" in " ".join(found.shown)


def test_kerple_caveat_goes_when_the_extra_context_carries_the_lead():
    found = run("chi2022-kerple-beats-alibi", runs=kerple_extrapolating_better(0.1))
    assert found.verdict is Verdict.HOLDS, found.caveat


def test_kerple_swapped_with_alibi_does_not_hold():
    from test_claims_mutation import swapped

    found = run("chi2022-kerple-beats-alibi", runs=swapped("kerple", "alibi"))
    assert found.verdict is Verdict.FAILS


# ---- checker messages (defect 12) -----------------------------------------------------


def _message(check, answer) -> str:
    import pytest

    from pe_book.exercises.grading import ExerciseMismatch

    with pytest.raises(ExerciseMismatch) as caught:
        check(answer)
    return str(caught.value)


def test_cpd_margin_names_ks_own_smallest_eigenvalue():
    import torch

    from pe_book import exercises

    text = _message(exercises.check_cpd_margin, lambda k: float(torch.linalg.eigvalsh(k)[0]))
    assert "K's own smallest eigenvalue" in text
    assert "K's own" not in _message(exercises.check_cpd_margin, lambda k: 0.0)


def test_p_rope_names_neox_only_for_neox():
    import math

    import torch

    from pe_book import exercises
    from pe_book.rope_scaling import partial_rotary_frequencies

    def off_by_one(dim, p, base):
        theta = base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
        return torch.where(torch.arange(dim // 2) < math.floor(p * dim / 2) + 1, theta, 0.0)

    neox = _message(
        exercises.check_p_rope_frequencies,
        lambda d, p, b: partial_rotary_frequencies(d, p, b)[0],
    )
    assert "GPT-NeoX" in neox
    plain = _message(exercises.check_p_rope_frequencies, off_by_one)
    assert "NeoX" not in plain and "d = 128, p = 1/4" in plain
