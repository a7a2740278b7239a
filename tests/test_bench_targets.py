"""The speed targets of `python -m pe_book.bench ... --check`: the verdict logic on given tables.

Timings themselves are never asserted in tests (they depend on the machine and
its load); these tests feed the checks fixed tables and see both outcomes.
"""

import pytest

from pe_book import bench


def rope_table(interleaved: float, half: float) -> list[tuple[str, float, float, float, float]]:
    return [
        ("copy q and k (baseline)", 9.0, 1.0, 1.0, 1.0),
        ("pe_book, interleaved", 10.0, interleaved, interleaved, interleaved),
        ("pe_book, half", 10.0, half, half, half),
        ("pe_book, half, plain PyTorch", 13.0, 1.45, 1.4, 1.5),  # not a default path
        ("transformers (Llama rotate_half)", 40.0, 4.5, 4.4, 4.6),
    ]


@pytest.mark.parametrize(
    ("interleaved", "half", "met"),
    [(1.1, 1.2, True), (1.3, 1.3, True), (1.31, 1.1, False), (1.1, 1.42, False)],
)
def test_rope_target_needs_both_default_layouts_within_the_bound(interleaved, half, met):
    assert bench.rope_target_met(rope_table(interleaved, half)) is met


def test_rope_target_is_missed_when_a_layout_is_absent():
    table = [row for row in rope_table(1.1, 1.1) if row[0] != "pe_book, half"]
    assert not bench.rope_target_met(table)


@pytest.mark.parametrize(
    ("ratio", "largest", "met"), [(0.9, 4.0, True), (1.3, 4.0, False), (1.0, 32.0, False)]
)
def test_alibi_target_checks_time_and_the_missing_bias_tensor(ratio, largest, met):
    rows = [
        (1024, "causal SDPA, no bias", 17.0, 1.0, 4.0),
        (1024, "ALiBi, materialised bias", 48.0, 2.8, 32.0),
        (1024, "ALiBi, fused (FlexAttention)", 17.0 * ratio, ratio, largest),
    ]
    assert bench.alibi_target_met(rows) is met
