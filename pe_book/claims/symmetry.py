"""Evidence for the claims about attention and order (chapter 1).

Each function examines a ``layer``: a callable ``layer(x, causal=False)`` that maps
L tokens (L, d) to L outputs, by default a seeded float64 multi-head layer of
pe_book (d = 8, two heads). The sentences are *the cat eats the fish* and *the
fish eats the cat*, one fixed random vector per word; "equal" means equal to
1e-12 (float64 rounding is far below it).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from pe_book import symmetry
from pe_book.attention import MultiHeadSelfAttention
from pe_book.claims import Finding, evidence

Layer = Callable[..., torch.Tensor]

DIM, HEADS = 8, 2
WORDS = ("the", "cat", "eats", "fish")
SENTENCE_A = ("the", "cat", "eats", "the", "fish")
SENTENCE_B = ("the", "fish", "eats", "the", "cat")
TOLERANCE = 1e-12


def default_layer(seed: int = 0) -> Layer:
    """pe_book's MultiHeadSelfAttention (d = 8, 2 heads), float64, initialised from ``seed``."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        module = MultiHeadSelfAttention(DIM, HEADS).double().eval()

    def layer(x: torch.Tensor, causal: bool = False) -> torch.Tensor:
        with torch.no_grad():
            return module(x, causal=causal)

    return layer


def sentences(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """The two sentences as (5, 8) float64 matrices, one fixed random vector per word."""
    table = torch.randn(
        len(WORDS), DIM, dtype=torch.float64, generator=torch.Generator().manual_seed(seed)
    )
    rows = [[WORDS.index(w) for w in sentence] for sentence in (SENTENCE_A, SENTENCE_B)]
    return table[rows[0]], table[rows[1]]  # (5, 8) each


def _gap(value: float) -> str:
    """A largest change, printed as the margin: rounding noise shows as below the tolerance."""
    return f"< {TOLERANCE:.0e}" if value < TOLERANCE else f"{value:.2g}"


def _pooled(layer: Layer, causal: bool = False) -> Callable[[torch.Tensor], torch.Tensor]:
    return lambda x: layer(x, causal=causal).mean(0)  # (d,): an order-blind read-out


def _pooled_gap(layer: Layer, x_a: torch.Tensor, x_b: torch.Tensor, causal: bool = False) -> float:
    return float((_pooled(layer, causal)(x_a) - _pooled(layer, causal)(x_b)).abs().max())


@evidence("000-full-symmetry")
def full_symmetry(layer: Layer | None = None) -> Finding:
    """Mean-pooled outputs are invariant under all 120 orders; token-wise and causal are not."""
    layer = layer or default_layer()
    x_a, _ = sentences()
    pooled = symmetry.invariance_gap(_pooled(layer), x_a)
    tokenwise = symmetry.invariance_gap(layer, x_a)
    causal = symmetry.invariance_gap(_pooled(layer, causal=True), x_a)
    breaks = [
        text
        for text, gap in [
            ("token-wise outputs move with their tokens", tokenwise),
            ("a causal mask breaks it", causal),
        ]
        if gap >= TOLERANCE
    ]
    return Finding(
        holds=pooled < TOLERANCE,
        caveat="; ".join(breaks) or None,
        shown=(
            f"largest change over all 120 orders of 5 tokens (unchanged: < {TOLERANCE:.0e}):"
            f" pooled output {_gap(pooled)}; token-wise outputs {_gap(tokenwise)};"
            f" pooled output with a causal mask {_gap(causal)}",
        ),
    )


@evidence("000-distinct-vectors-break-symmetry")
def distinct_vectors_break_symmetry(
    layer: Layer | None = None, positions: torch.Tensor | None = None
) -> Finding:
    """Adding p_m (fixed random vectors, scaled by 1 down to 1e-6) separates the sentences."""
    layer = layer or default_layer()
    x_a, x_b = sentences()
    if positions is None:
        generator = torch.Generator().manual_seed(1)
        positions = 0.5 * torch.randn(
            len(SENTENCE_A), DIM, dtype=torch.float64, generator=generator
        )
    scales = [10.0**-k for k in range(7)]
    gaps = [_pooled_gap(layer, x_a + s * positions, x_b + s * positions) for s in scales]
    smallest = min(gaps)
    return Finding(
        holds=smallest > TOLERANCE,
        shown=(
            f"p_m scaled by 1 down to 1e-6: pooled outputs of a and b differ by {_gap(gaps[0])}"
            f" at scale 1 and by {_gap(smallest)} at the scale where they differ least"
            f" (1e-{gaps.index(smallest)}; equal would be < {TOLERANCE:.0e})",
        ),
    )


@evidence("001-cat-eats-fish")
def cat_eats_fish(layer: Layer | None = None) -> Finding:
    """The two sentences give the same pooled output; a causal mask alone separates them."""
    layer = layer or default_layer()
    x_a, x_b = sentences()
    plain = _pooled_gap(layer, x_a, x_b)
    causal = _pooled_gap(layer, x_a, x_b, causal=True)
    return Finding(
        holds=plain < TOLERANCE,
        caveat=None if causal < TOLERANCE else "a causal mask alone tells them apart",
        shown=(
            f"pooled outputs of the two sentences differ by {_gap(plain)};"
            f" with a causal mask by {_gap(causal)} (equal would be < {TOLERANCE:.0e})",
        ),
    )


@evidence("004-unordered-set")
def unordered_set(layer: Layer | None = None) -> Finding:
    """Reordering the input reorders the output (all 120 orders); not under a causal mask."""
    layer = layer or default_layer()
    x_a, _ = sentences()
    plain = symmetry.equivariance_gap(layer, x_a)
    causal = symmetry.equivariance_gap(lambda x: layer(x, causal=True), x_a)
    return Finding(
        holds=plain < TOLERANCE,
        caveat=None if causal < TOLERANCE else "not under a causal mask",
        shown=(
            "all 120 orders: largest departure of the outputs from the input's reordering"
            f" {_gap(plain)}; with a causal mask {_gap(causal)}"
            f" (reordered exactly would be < {TOLERANCE:.0e})",
        ),
    )
