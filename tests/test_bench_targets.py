"""The speed targets of `python -m pe_book.bench ... --check`: the verdict logic on given tables.

Timings themselves are never asserted in tests (they depend on the machine and
its load); these tests feed the checks fixed tables and see both outcomes.
"""

import pytest

from pe_book import bench, cost


def rope_table(interleaved: float, half: float) -> list[tuple[str, float, float, float]]:
    return [
        ("copy q and k (baseline)", 1.0, 1.0, 1.0),
        ("pe_book, interleaved", interleaved, interleaved, interleaved),
        ("pe_book, half", half, half, half),
        ("pe_book, half, plain PyTorch", 1.45, 1.4, 1.5),  # not a default path
        ("transformers (Llama rotate_half)", 4.5, 4.4, 4.6),
    ]


@pytest.mark.parametrize(
    ("interleaved", "half", "met"),
    [(1.05, 1.1, True), (1.1, 1.1, True), (1.11, 1.0, False), (1.0, 1.42, False)],
)
def test_rope_target_needs_both_layouts_within_the_bound_in_every_table(interleaved, half, met):
    tables = {("fresh", "float32"): rope_table(1.0, 1.0), ("reused", "bfloat16"):
              rope_table(interleaved, half)}  # fmt: skip
    assert bench.rope_target_met(tables) is met


def test_rope_target_is_missed_when_a_layout_is_absent():
    table = [row for row in rope_table(1.0, 1.0) if row[0] != "pe_book, half"]
    assert not bench.rope_target_met({("fresh", "float32"): table})
    assert not bench.rope_target_met({})


def alibi_rows(ratio: float, largest: float, seq_len: int = 1024) -> list[tuple]:
    return [
        (seq_len, "causal SDPA, no bias", 1.0, 1.0, 1.0, 4.0),
        (seq_len, "pe_book kernel", ratio, ratio, ratio, largest),
        (seq_len, "materialised bias", 2.8, 2.7, 2.9, 32.0),
    ]


@pytest.mark.parametrize(
    ("ratio", "largest", "met"), [(0.9, 4.0, True), (1.3, 4.0, False), (1.0, 32.0, False)]
)
def test_alibi_target_checks_time_and_the_missing_bias_tensor_on_every_isa(ratio, largest, met):
    tables = {"avx512": alibi_rows(1.0, 4.0), "avx2": alibi_rows(ratio, largest)}
    assert bench.alibi_target_met(tables) is met


@pytest.mark.parametrize(
    ("position", "fast", "plain", "met"),
    [
        ("t5", {"train": 1.2, "infer": 1.1}, {"train": 2.6, "infer": 1.5}, True),
        ("t5", {"train": 1.2, "infer": 1.25}, {"train": 2.6, "infer": 1.5}, False),  # inference
        ("alibi", {"train": 1.16, "infer": 1.0}, {"train": 1.3, "infer": 1.4}, False),
        ("kerple", {"train": 1.0, "infer": 1.0}, {"train": 2.0, "infer": 1.4}, True),
        ("kerple", {"train": 1.2, "infer": 1.0}, {"train": 1.1, "infer": 1.4}, False),  # > plain
        ("cope", {"train": 3.0, "infer": 3.0}, None, True),  # one path, no target
    ],
)
def test_method_targets_and_fast_at_most_plain(position, fast, plain, met):
    ratios = {"fast": fast} | ({"plain": plain} if plain else {})
    assert cost.method_target_met(position, ratios)[0] is met
