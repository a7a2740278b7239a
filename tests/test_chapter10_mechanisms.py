"""What chapter 10 shows working: KERPLE's CPD margin, xPos's blockwise causal mask, and
the study's one-method sentence (pe_book.report.finding)."""

import dataclasses

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pe_book import alibi, kerple, report, results, study, xpos
from pe_book.attention import causal_mask
from pe_book.intervals import crossed_interval

F64 = torch.float64


def _distance(size):
    positions = torch.arange(size, dtype=F64)
    return (positions[:, None] - positions[None, :]).abs()


# ---- kerple.cpd_margin -----------------------------------------------------------------


def test_alibi_bias_is_not_positive_definite_but_is_conditionally_so():
    bias = alibi.alibi_bias(48, 48, alibi.alibi_slopes(1).double(), causal=False)[0]
    assert float(torch.linalg.eigvalsh(bias)[0]) < 0  # trace 0: a negative eigenvalue
    assert kerple.cpd_margin(bias) > 0


@settings(max_examples=40, deadline=None)
@given(
    size=st.integers(2, 40),
    r1=st.floats(0.01, 5.0),
    r2=st.floats(0.01, 3.0),
    kind=st.sampled_from(kerple.KERNELS),
)
def test_kerple_kernels_have_a_non_negative_margin(size, r1, r2, kind):
    r2 = min(r2, 2.0) if kind == "power" else r2
    bias = kerple.kerple_bias(
        size, size, torch.tensor([r1], dtype=F64), torch.tensor([r2], dtype=F64), kind, start=0
    )[0]
    assert kerple.cpd_margin(bias) >= -1e-9 * float(bias.abs().max())


def test_a_power_above_two_is_not_cpd():
    assert kerple.cpd_margin(-(_distance(16) ** 3)) < 0


def test_the_margin_is_the_minimum_over_zero_sum_unit_vectors():
    kernel = -torch.log1p(_distance(12))
    margin = kerple.cpd_margin(kernel)
    vectors = torch.randn(2000, 12, dtype=F64, generator=torch.Generator().manual_seed(0))
    vectors = vectors - vectors.mean(1, keepdim=True)
    vectors = vectors / vectors.norm(dim=1, keepdim=True)
    values = ((vectors @ kernel) * vectors).sum(1)
    assert float(values.min()) >= margin - 1e-12
    assert float(values.min()) < margin + 0.5  # random vectors come near it


def test_a_constant_does_not_change_the_margin():
    kernel = -torch.log1p(_distance(10))
    assert kerple.cpd_margin(kernel + 100.0) == pytest.approx(kerple.cpd_margin(kernel))


@pytest.mark.parametrize(
    ("kernel", "error"),
    [
        (torch.zeros(3, 4, dtype=F64), ValueError),
        (torch.zeros(1, 1, dtype=F64), ValueError),
        (torch.zeros(3, dtype=F64), ValueError),
        (torch.zeros(3, 3, dtype=torch.int64), TypeError),
        (torch.tensor([[0.0, 1.0], [2.0, 0.0]], dtype=F64), ValueError),
        (torch.full((2, 2), float("nan"), dtype=F64), ValueError),
        ([[0.0, 1.0], [1.0, 0.0]], TypeError),
    ],
)
def test_cpd_margin_rejects_bad_kernels_by_name(kernel, error):
    with pytest.raises(error, match="kernel"):
        kerple.cpd_margin(kernel)


# ---- xpos.blockwise_causal_mask ---------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(seq_len=st.integers(1, 80), block=st.integers(1, 30))
def test_blockwise_mask_is_causal_and_keeps_offsets_below_two_blocks(seq_len, block):
    mask = xpos.blockwise_causal_mask(seq_len, block)
    causal = causal_mask(seq_len, seq_len)
    assert not bool((mask & ~causal).any())  # never a key after its query
    offsets = torch.arange(seq_len)[:, None] - torch.arange(seq_len)[None, :]
    assert int(offsets[mask].max()) <= 2 * block - 1
    first = min(seq_len, 2 * block)  # the first two blocks see all of the past
    assert torch.equal(mask[:first, :first], causal[:first, :first])
    seen = mask.sum(1)[block:]  # a query past the first block sees block + m % block + 1 keys
    expected = block + torch.arange(block, max(block, seq_len)) % block + 1
    assert torch.equal(seen, expected)


@pytest.mark.parametrize(
    ("args", "error"),
    [((0, 4), ValueError), ((8, 0), ValueError), ((8.5, 4), TypeError), ((8, "4"), TypeError)],
)
def test_blockwise_mask_rejects_bad_sizes(args, error):
    with pytest.raises(error, match=r"seq_len|block"):
        xpos.blockwise_causal_mask(*args)


# ---- report.finding ---------------------------------------------------------------------

TINY = study.StudyConfig(
    train_len=8,
    steps=3,
    batch=2,
    warmup=1,
    dim=16,
    n_heads=2,
    eval_multiples=(1, 2, 4),
    eval_segments=4,
    sliding_stride=4,
)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("study")
    for seed in (0, 1):
        study.run_study(
            root / "study" / "tiny" / f"seed{seed}",
            dataclasses.replace(TINY, seed=seed),
            ("learned", "alibi", "rope"),
            progress=False,
        )
    return results.Runs.load("tiny", root)


def test_finding_states_the_cost_the_verdict_and_the_comparison(runs):
    text = report.finding(runs, "rope", against="alibi")
    cost, effect = runs.extra_context_cost("rope"), runs.context_effect("rope")
    assert text.startswith("rope (2 seeds): extra-context cost")
    flat = " ".join(text.split())
    assert f"{cost.mean:+.3f} [{cost.low:+.3f}, {cost.high:+.3f}]" in flat
    assert str(effect) in flat and "minus alibi's" in flat
    assert all(len(line) <= 80 for line in text.splitlines())


def test_finding_answers_prints_both_paired_comparisons_and_reads_them(runs):
    text = report.finding(runs, "rope", answers="alibi")
    flat = " ".join(text.split())
    assert "rope minus alibi, paired (2 seeds):" in flat
    past = crossed_interval(runs.extra_context("rope") - runs.extra_context("alibi"))
    assert f"extra-context cost {past.mean:+.3f} [{past.low:+.3f}, {past.high:+.3f}]" in flat
    at_l = runs.difference("rope", "alibi", runs.unit)
    assert f"loss at the training length {at_l.mean:+.3f}" in flat
    assert "Read together: past the training length rope " in flat
    assert all(len(line) <= 80 for line in text.splitlines())


def test_finding_for_a_method_that_cannot_run_or_has_no_runs(runs):
    assert report.finding(runs, "learned") == "learned (2 seeds): cannot run windows of 32."
    assert report.finding(runs, "kerple") == "kerple: no runs in the study's results yet."
