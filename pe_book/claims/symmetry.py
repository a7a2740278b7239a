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


def _pooled(layer: Layer, causal: bool = False) -> Callable[[torch.Tensor], torch.Tensor]:
    return lambda x: layer(x, causal=causal).mean(0)  # (d,): an order-blind read-out


def _pooled_gap(layer: Layer, x_a: torch.Tensor, x_b: torch.Tensor, causal: bool = False) -> float:
    return float((_pooled(layer, causal)(x_a) - _pooled(layer, causal)(x_b)).abs().max())


@evidence("000-full-symmetry")
def full_symmetry(layer: Layer | None = None) -> Finding:
    """Mean-pooled outputs are invariant under all 120 orders; token-wise and causal are not."""
    layer = layer or default_layer()
    x_a, _ = sentences()
    pooled = symmetry.invariance_gap(_pooled(layer), x_a) < TOLERANCE
    tokenwise = symmetry.invariance_gap(layer, x_a) < TOLERANCE
    causal = symmetry.invariance_gap(_pooled(layer, causal=True), x_a) < TOLERANCE
    breaks = [
        text
        for text, kept in [
            ("token-wise outputs move with their tokens", tokenwise),
            ("a causal mask breaks it", causal),
        ]
        if not kept
    ]
    return Finding(
        holds=pooled,
        caveat="; ".join(breaks) or None,
        shown=(
            f"all 120 orders of 5 tokens: pooled output unchanged: {pooled};"
            f" token-wise outputs unchanged: {tokenwise};"
            f" with a causal mask, pooled output unchanged: {causal}",
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
    separated = min(gaps) > TOLERANCE
    return Finding(
        holds=separated,
        shown=(
            f"p_m scaled by 1 down to 1e-6: pooled outputs of a and b differ at every scale:"
            f" {separated}",
        ),
    )


@evidence("001-cat-eats-fish")
def cat_eats_fish(layer: Layer | None = None) -> Finding:
    """The two sentences give the same pooled output; a causal mask alone separates them."""
    layer = layer or default_layer()
    x_a, x_b = sentences()
    same = _pooled_gap(layer, x_a, x_b) < TOLERANCE
    same_causal = _pooled_gap(layer, x_a, x_b, causal=True) < TOLERANCE
    return Finding(
        holds=same,
        caveat=None if same_causal else "a causal mask alone tells them apart",
        shown=(f"pooled outputs equal: {same}; with a causal mask: {same_causal}",),
    )


@evidence("004-unordered-set")
def unordered_set(layer: Layer | None = None) -> Finding:
    """Reordering the input reorders the output (all 120 orders); not under a causal mask."""
    layer = layer or default_layer()
    x_a, _ = sentences()
    equivariant = symmetry.equivariance_gap(layer, x_a) < TOLERANCE
    causal = symmetry.equivariance_gap(lambda x: layer(x, causal=True), x_a) < TOLERANCE
    return Finding(
        holds=equivariant,
        caveat=None if causal else "not under a causal mask",
        shown=(
            f"all 120 orders: outputs reordered with the input: {equivariant};"
            f" with a causal mask: {causal}",
        ),
    )
