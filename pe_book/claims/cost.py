"""Evidence for the claims about cost, from the committed cost study (chapter 12).

Every function takes ``rows``: the cost study's CostRows (default: the committed
``results/cost.json`` through :func:`pe_book.cost.load_cost`), at L = 256, 1024 and 4096;
a method with a fast path has a row for each path (``CostRow.fused``).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from pe_book.claims import Finding, evidence
from pe_book.cost import METHOD_TARGETS, CostRow, load_cost, scaling_exponent, time_exponents


def committed_rows() -> list[CostRow]:
    return load_cost()["rows"]


def _row(rows: Sequence[CostRow], seq_len: int, position: str, fused: bool = True) -> CostRow:
    """``position``'s row at ``seq_len`` on the fast (``fused``) or plain path; a method with
    one path has one row, which serves as both."""
    found = [row for row in rows if row.seq_len == seq_len and row.position == position]
    return next((row for row in found if row.fused == fused), found[0])


#: How far a measured exponent may sit from the operation counts' (timings 10% off at two
#: lengths 4 times apart move it by up to log(1.1²)/log(4) ≈ 0.14).
EXPONENT_TOLERANCE = 0.15


def _work(seq_len: int, width: int) -> int:
    """Multiply-adds per sequence and layer: L tokens × (12 d² + L d) (chapter 12)."""
    return seq_len * (12 * width**2 + seq_len * width)


@evidence("004-t5-costly")
def t5_costly(rows: Sequence[CostRow] | None = None) -> Finding:
    """T5's training step against the sinusoidal model's at L = 1024, with its bias built as a
    tensor (the plain path, as T5 and the ALiBi paper's measurement did) and read per offset
    inside pe_book's attention kernel (the fast path); and at inference."""
    rows = rows or committed_rows()
    sinusoidal = _row(rows, 1024, "sinusoidal")
    plain, fast = _row(rows, 1024, "t5", False), _row(rows, 1024, "t5", True)
    train, infer = plain.train_ms / sinusoidal.train_ms, plain.infer_ms / sinusoidal.infer_ms
    fast_train = fast.train_ms / sinusoidal.train_ms
    cheap = fast_train <= METHOD_TARGETS["t5"]["train"]  # issue 26's bound for a cheap T5
    caveats = ["only with its bias built as a tensor"] if cheap else []
    if infer < 0.75 * train:
        caveats.append("in training, where that bias needs a gradient")
    return Finding(
        holds=train > 2,
        caveat="; ".join(caveats) or None,
        shown=(
            f"L = 1024, T5 / sinusoidal, bias as a tensor (plain path): training step "
            f"{train:.2f}×, inference {infer:.2f}×",
            f"bias read per offset in the kernel (fast path): training step {fast_train:.2f}×",
        ),
    )


@evidence("004-quadratic-cost")
def quadratic_cost(rows: Sequence[CostRow] | None = None, width: int = 128) -> Finding:
    """Is there an L² part in a step's time, and does it dominate at the lengths measured?

    Per token and layer the model does about 12 d² multiply-adds outside attention
    and about L·d inside it (d = ``width``; chapter 12). NoPE's measured time exponent per
    sequence between each two lengths is compared with what these counts predict; a growth
    faster than linear, steeper at longer lengths and within :data:`EXPONENT_TOLERANCE` of
    the counts at every pair of lengths is the L² part at work.
    """
    rows = rows or committed_rows()
    exponents = time_exponents(list(rows))
    nope = exponents["none", True]
    predicted = {(a, b): scaling_exponent(_work(a, width), a, _work(b, width), b) for a, b in nope}
    crossover = 12 * width  # the L at which attention's L·d equals the other 12 d²
    short, long = sorted({row.seq_len for row in rows})[:2]
    tensors = []  # largest allocation per sequence grown as L²: an L × L tensor per sequence
    for position, fused in exponents:
        a, b = (_row(rows, n, position, fused) for n in (short, long))
        grown = (b.largest_alloc_mib / b.batch) / (a.largest_alloc_mib / a.batch)
        if grown >= 0.9 * (long / short) ** 2:
            plain = not fused and any(r.position == position and r.fused for r in rows)
            tensors.append(position + (" (plain)" if plain else ""))
    close = all(
        p > 1.1 and abs(p - predicted[pair]) < EXPONENT_TOLERANCE for pair, p in nope.items()
    )
    steeper = all(a < b for a, b in itertools.pairwise(nope.values()))  # L²'s share grows
    holds = close and steeper
    pairs = ", ".join(
        f"{a}-{b}: {nope[a, b]:.2f} (predicted {predicted[a, b]:.2f})" for a, b in nope
    )
    return Finding(
        holds=holds,
        caveat=f"slower than L² at the lengths measured (attention's L·d passes the rest at L ≈ "
        f"{crossover:,})"
        if max(nope.values()) < 1.8
        else None,
        shown=(
            f"NoPE, time per sequence ∝ L^p between L = {pairs}; pure L²: 2",
            f"largest allocation per sequence grown as L² from {short} to {long} (an L × L "
            "tensor each): " + (", ".join(tensors) or "none"),
        ),
    )
