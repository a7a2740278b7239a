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
def quadratic_cost(rows: Sequence[CostRow] | None = None, width: int = 128) -> Finding:
    """Is there an L² part in a step's time, and does it dominate at the lengths measured?

    Per token and layer the model does about 12 d² multiply-adds outside attention
    and about L·d inside it (d = ``width``; chapter 12). NoPE's measured time
    exponent between L = 256 and 1024 is compared with what these counts predict;
    a measured growth faster than linear and matching them is the L² part at work.
    """
    rows = rows or committed_rows()
    exponents = time_exponents(rows)
    work = {n: n * (12 * width**2 + n * width) for n in (256, 1024)}
    predicted = scaling_exponent(work[256], 256, work[1024], 1024)
    measured = exponents["none"]
    crossover = 12 * width  # the L at which attention's L·d equals the other 12 d²
    short, long = _at(rows, 256), _at(rows, 1024)
    growth = {p: long[p].largest_alloc_mib / short[p].largest_alloc_mib for p in long}
    tensors = [p for p in exponents if growth[p] >= 15]  # an L × L allocation: 16-fold
    return Finding(
        holds=measured > 1.1 and abs(measured - predicted) < 0.1,
        caveat=f"far slower than L² below L ≈ {crossover:,}" if measured < 1.8 else None,
        shown=(
            "time ∝ L^p between L = 256 and 1024: "
            + ", ".join(f"{p} {e:.2f}" for p, e in exponents.items()),
            f"NoPE measured p = {measured:.2f}; the operation counts predict {predicted:.2f}"
            f" (pure L²: 2); attention's share passes the rest at L ≈ {crossover:,} (d = {width})",
            "largest allocation 16-fold for 4 times L (an L × L tensor per batch): "
            + (", ".join(tensors) or "none"),
        ),
    )
