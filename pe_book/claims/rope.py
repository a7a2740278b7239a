"""Evidence for the claims about rotary position embeddings (chapter 7)."""

from __future__ import annotations

from collections.abc import Callable

import sympy as sp
import torch

from pe_book import rope, symbolic
from pe_book.attention import attention
from pe_book.claims import Finding, evidence

Rotate = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]  # (x (L, d), positions) -> rotated


def pe_book_rope(x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    return rope.apply_rope(x, positions)


def _symbolic_shift_residue(
    rotation: Callable[[sp.Expr], sp.Matrix] = symbolic.rotation,
) -> sp.Expr:
    """SymPy: ⟨R((m+c)θ)q, R((n+c)θ)k⟩ − ⟨R(mθ)q, R(nθ)k⟩, simplified (0: shift-free)."""
    q0, q1, k0, k1, m, n, c, theta = sp.symbols("q_0 q_1 k_0 k_1 m n c theta", real=True)
    score = (rotation(m * theta) * sp.Matrix([q0, q1])).dot(
        rotation(n * theta) * sp.Matrix([k0, k1])
    )
    return sp.simplify(sp.expand_trig(score.subs({m: m + c, n: n + c}) - score))


@evidence("001-rope-rotates-qk")
def rope_rotates_qk(
    rotate: Rotate = pe_book_rope,
    rotation: Callable[[sp.Expr], sp.Matrix] = symbolic.rotation,
) -> Finding:
    """A proof that the rotated score depends on m − n only, tied to the code on samples.

    ``rotation(angle)`` is the 2 × 2 matrix the proof uses; ``rotate`` the code.
    """
    generator = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 1, 64, dtype=torch.float64, generator=generator)
    m, n, c = torch.randint(0, 10_000, (3, 50), generator=generator)
    worst, size = 0.0, 0.0
    for mi, ni, ci in zip(m.tolist(), n.tolist(), c.tolist(), strict=True):
        here = (rotate(q, torch.tensor([mi])) @ rotate(k, torch.tensor([ni])).T).item()
        moved = (rotate(q, torch.tensor([mi + ci])) @ rotate(k, torch.tensor([ni + ci])).T).item()
        worst, size = max(worst, abs(here - moved)), max(size, abs(here))
    residue = _symbolic_shift_residue(rotation)
    return Finding(
        holds=residue == 0 and worst < 1e-9,
        shown=(
            "SymPy, symbolic q, k, m, n, θ and shift c: score(m + c, n + c) − score(m, n)"
            + (" simplifies to 0" if residue == 0 else " does not simplify to 0"),
            "the code, d = 64, 50 random (m, n, c) up to 10^4: largest change of the score "
            + ("< 1e-9" if worst < 1e-9 else f"{worst:.2g}")
            + f" (the largest score {size:.1f})",
        ),
    )


def rope_layer(
    rotate: Rotate = pe_book_rope, seed: int = 0
) -> Callable[[torch.Tensor], torch.Tensor]:
    """One bidirectional attention layer (d = 16, float64, seeded weights) whose queries and
    keys go through ``rotate`` at positions 0..L-1 and whose values do not: section 7.3's
    layer. Without a causal mask, any order it sees comes from ``rotate``."""
    generator = torch.Generator().manual_seed(seed)
    wq, wk, wv = torch.randn(3, 16, 16, dtype=torch.float64, generator=generator) / 4

    def layer(tokens: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(len(tokens))
        return attention(
            rotate(tokens @ wq, positions), rotate(tokens @ wk, positions), tokens @ wv
        )

    return layer


@evidence("004-rope-values-no-position")
def rope_values_no_position(rotate: Rotate = pe_book_rope) -> Finding:
    """Does the output of a RoPE layer carry positional information? The claim says no.

    Its premise is true by construction (values are not rotated: identical tokens get
    identical outputs, shown); its conclusion is tested: reverse the first 7 of 8 distinct
    tokens and see whether the last output changes. It holds only if it does not (to 1e-9
    of the output's size), as for a layer that rotates nothing.
    """
    layer = rope_layer(rotate)
    generator = torch.Generator().manual_seed(1)
    tokens = torch.randn(8, 16, dtype=torch.float64, generator=generator)
    same = tokens[:1].expand(8, 16)
    spread = float((layer(same) - layer(same)[:1]).abs().max())
    last = layer(tokens)[-1]
    reordered = torch.cat((tokens[:-1].flip(0), tokens[-1:]))
    change = float((layer(reordered)[-1] - last).abs().max())
    size = float(last.abs().max())
    return Finding(
        holds=change <= 1e-9 * size,
        shown=(
            "premise, true by construction: 8 identical tokens give outputs equal within "
            + ("1e-12" if spread < 1e-12 else f"{spread:.2g} (not equal!)")
            + " at every position (nothing positional is averaged)",
            f"conclusion, tested: 8 distinct tokens, the first 7 reversed: the last output"
            f" (entries up to {size:.2f}) changes by {change:.3f}, {change / size:.0%} of its"
            " size (no positional information would leave it unchanged)",
        ),
    )
