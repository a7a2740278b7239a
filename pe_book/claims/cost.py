"""Evidence for the claims about cost, from the committed cost study (chapter 12).

Every function takes ``rows``: the cost study's CostRows (default: the committed
``results/cost.json`` through ``pe_book.results.load_cost``), at L = 256 and 1024.
"""

from __future__ import annotations

from collections.abc import Sequence

from pe_book.claims import Finding, evidence
from pe_book.cost import CostRow, load_cost, scaling_exponent


def committed_rows() -> list[CostRow]:
    return load_cost()["rows"]


def _at(rows: Sequence[CostRow], seq_len: int) -> dict[str, CostRow]:
    return {row.position: row for row in rows if row.seq_len == seq_len}


def time_exponents(rows: Sequence[CostRow], short: int = 256, long: int = 1024) -> dict[str, float]:
    """p with training-step time ∝ L^p, between two lengths, per method."""
    a, b = _at(rows, short), _at(rows, long)
    return {p: scaling_exponent(a[p].train_ms, short, b[p].train_ms, long) for p in b}


@evidence("004-t5-costly")
def t5_costly(rows: Sequence[CostRow] | None = None) -> Finding:
    """T5's training step against the sinusoidal model's at L = 1024; and at inference."""
    at = _at(rows or committed_rows(), 1024)
    train = at["t5"].train_ms / at["sinusoidal"].train_ms
    infer = at["t5"].infer_ms / at["sinusoidal"].infer_ms
    return Finding(
        holds=train > 2,
        caveat="in training, where its learned bias needs a gradient"
        if infer < 0.75 * train
        else None,
        shown=(f"L = 1024, T5 / sinusoidal: training step {train:.2f}×, inference {infer:.2f}×",),
    )


@evidence("004-quadratic-cost")
def quadratic_cost(rows: Sequence[CostRow] | None = None) -> Finding:
    """Some method's time grows about as L² with memory as L²; NoPE's grows far slower."""
    rows = rows or committed_rows()
    exponents = time_exponents(rows)
    short, long = _at(rows, 256), _at(rows, 1024)
    growth = {p: long[p].largest_alloc_mib / short[p].largest_alloc_mib for p in long}
    quadratic = [p for p in exponents if exponents[p] > 1.8 and growth[p] >= 15]
    return Finding(
        holds=bool(quadratic),
        caveat="NoPE's step time grows much slower than L²" if exponents["none"] < 1.5 else None,
        shown=(
            "time ∝ L^p between L = 256 and 1024: "
            + ", ".join(f"{p} {e:.2f}" for p, e in exponents.items()),
            "about L² in time with an L × L allocation: " + (", ".join(quadratic) or "none"),
        ),
    )
