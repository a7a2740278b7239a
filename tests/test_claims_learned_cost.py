"""004-learned-cost decides "no more computation" by counting a training step's FLOPs."""

from __future__ import annotations

from pe_book.claims import Verdict, run
from pe_book.claims.relative import step_flops


def one_hot_lookup_flops(position: str) -> int:
    """A learned table read as one_hot(positions) @ table, as some code does: 2·B·L·L·d
    multiply-adds forward (B = 2, L = 64, d = 128) and twice that backward."""
    extra = 3 * 2 * 2 * 64 * 64 * 128 if position == "learned" else 0
    return step_flops(position) + extra


def test_the_learned_table_adds_no_matrix_product():
    assert step_flops("learned") == step_flops("sinusoidal") > 0
    finding = run("004-learned-cost")
    assert finding.verdict == Verdict.CAVEAT and "FLOPs" in " ".join(finding.shown)


def test_a_lookup_done_as_a_product_loses_the_caveat():
    finding = run("004-learned-cost", flops=one_hot_lookup_flops)
    assert finding.verdict == Verdict.HOLDS
