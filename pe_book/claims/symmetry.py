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


def position_vectors(seed: int = 1) -> torch.Tensor:
    """Position vectors p_m for the five tokens: 0.5 · N(0, 1), (5, 8) float64 (section 1.5)."""
    generator = torch.Generator().manual_seed(seed)
    return 0.5 * torch.randn(len(SENTENCE_A), DIM, dtype=torch.float64, generator=generator)


def distinct_tokens(seed: int = 2) -> torch.Tensor:
    """Five different random tokens, (5, 8) float64: all 120 of their orders are distinct."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(len(SENTENCE_A), DIM, dtype=torch.float64, generator=generator)


def _gap(value: float) -> str:
    """A largest change, printed with its margin: float64 rounding noise (below 1e-15, where
    its digits vary between machines) as "< 1e-15", anything larger to two digits."""
    return "< 1e-15" if value < 1e-15 else f"{value:.2g}"


def _pooled(layer: Layer, causal: bool = False) -> Callable[[torch.Tensor], torch.Tensor]:
    return lambda x: layer(x, causal=causal).mean(0)  # (d,): an order-blind read-out


def _pooled_gap(layer: Layer, x_a: torch.Tensor, x_b: torch.Tensor, causal: bool = False) -> float:
    return float((_pooled(layer, causal)(x_a) - _pooled(layer, causal)(x_b)).abs().max())


@evidence("000-full-symmetry")
def full_symmetry(layer: Layer | None = None) -> Finding:
    """Mean-pooled outputs are invariant under all 120 orders; token-wise and causal are not."""
    layer = layer or default_layer()
    inputs = (sentences()[0], distinct_tokens())  # sentence a repeats "the": 60 distinct orders

    def largest(gap: Callable[..., float], function: Callable[..., torch.Tensor]) -> float:
        return max(gap(function, x) for x in inputs)

    pooled = largest(symmetry.invariance_gap, _pooled(layer))
    tokenwise = largest(symmetry.invariance_gap, layer)
    moved = largest(symmetry.equivariance_gap, layer)  # token-wise outputs, reordered back
    causal = largest(symmetry.invariance_gap, _pooled(layer, causal=True))
    breaks = [
        text
        for text, gap in [
            (
                "token-wise outputs move with their tokens"
                if moved < TOLERANCE
                else "token-wise outputs change, not only move",
                tokenwise,
            ),
            ("a causal mask breaks it under arbitrary reorderings", causal),
        ]
        if gap >= TOLERANCE
    ]
    return Finding(
        holds=pooled < TOLERANCE,
        caveat="; ".join(breaks) or None,
        shown=(
            "largest change over the 120 permutations of sentence a (60 distinct orders) and"
            f" of 5 distinct random tokens (unchanged would be < {TOLERANCE:.0e}): pooled"
            f" output {_gap(pooled)}; token-wise outputs {_gap(tokenwise)}, or {_gap(moved)}"
            f" once put back in order; pooled output with a causal mask {_gap(causal)}",
        ),
    )


@evidence("000-distinct-vectors-break-symmetry")
def distinct_vectors_break_symmetry(
    layer: Layer | None = None, positions: torch.Tensor | None = None
) -> Finding:
    """Adding p_m (five draws of fixed random vectors, each scaled by 1 down to 1e-6)
    separates the sentences; ``positions`` replaces the draws."""
    layer = layer or default_layer()
    x_a, x_b = sentences()
    draws = (
        [positions] if positions is not None else [position_vectors(seed) for seed in range(1, 6)]
    )
    scales = [10.0**-k for k in range(7)]
    gaps = [
        [_pooled_gap(layer, x_a + s * p, x_b + s * p) for s in scales] for p in draws
    ]  # (draw, scale)
    smallest = min(min(row) for row in gaps)
    which = "its draw" if len(draws) == 1 else f"section 1.5's draw and {len(draws) - 1} more"
    return Finding(
        holds=smallest > TOLERANCE,
        shown=(
            f"p_m ({which}) scaled by 1 down to 1e-6: pooled outputs of a and b differ by"
            f" {_gap(gaps[0][0])} (section 1.5's draw at scale 1) and by at least"
            f" {_gap(smallest)} (equal would be < {TOLERANCE:.0e})",
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
            "all 120 permutations of sentence a: largest departure of the outputs from the"
            " input's reordering"
            f" {_gap(plain)}; with a causal mask {_gap(causal)}"
            f" (reordered exactly would be < {TOLERANCE:.0e})",
        ),
    )
