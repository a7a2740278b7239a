"""004-learned-cost counts a training step's work, matrix products and the rest, both ways."""

from __future__ import annotations

from pe_book.claims import Verdict, run
from pe_book.claims.relative import StepWork, step_work


def one_hot_lookup_work(position: str) -> StepWork:
    """A learned table read as one_hot(positions) @ table, as some code does: 2·B·L·L·d
    multiply-adds forward (B = 2, L = 64, d = 128) and twice that backward."""
    work = step_work(position)
    extra = 3 * 2 * 2 * 64 * 64 * 128 if position == "learned" else 0
    return work._replace(flops=work.flops + extra)


def test_the_learned_table_adds_no_matrix_product_only_its_update():
    table, fixed = step_work("learned"), step_work("sinusoidal")
    assert table.flops == fixed.flops > 0
    extra_parameters = table.parameters - fixed.parameters
    assert extra_parameters == 64 * 128  # the table: train_len rows of d
    # AdamW writes a fixed number of elements per parameter: its extra work is the table's
    per_parameter = round(fixed.optimizer / fixed.parameters)
    assert abs(table.optimizer - fixed.optimizer - per_parameter * extra_parameters) < 100
    finding = run("004-learned-cost")
    assert finding.verdict == Verdict.CAVEAT and "of the step" in " ".join(finding.shown)


def test_a_lookup_done_as_a_product_loses_the_caveat():
    finding = run("004-learned-cost", work=one_hot_lookup_work)
    assert finding.verdict == Verdict.HOLDS


def test_a_table_that_costs_nothing_does_not_hold():
    finding = run("004-learned-cost", work=lambda position: step_work("sinusoidal"))
    assert finding.verdict == Verdict.FAILS
