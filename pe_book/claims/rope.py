"""Evidence for the claims about rotary position embeddings (chapter 7)."""

from __future__ import annotations

from collections.abc import Callable

import sympy as sp
import torch

from pe_book import data, rope, symbolic
from pe_book.claims import Finding, evidence
from pe_book.model import CharLM, ModelConfig

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


def rope_model(position: str = "rope", seed: int = 0) -> CharLM:
    """The chapter 11 model with this position method, small and seeded, in eval mode."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        config = ModelConfig(position, vocab_size=len(data.VOCAB), dim=32, n_heads=2, train_len=16)
        return CharLM(config).eval()


@evidence("004-rope-values-no-position")
def rope_values_no_position(model: CharLM | None = None) -> Finding:
    """The model on 8 copies of one character: equal outputs at every position; order shows."""
    model = model or rope_model()
    with torch.no_grad():
        outputs = model(torch.full((1, 8), 5))[0]  # (8, vocab)
        spread = float((outputs - outputs[:1]).abs().max())
        tokens = torch.arange(10, 18)[None]  # 8 distinct characters
        prefix_reversed = torch.cat((tokens[:, :-1].flip(1), tokens[:, -1:]), 1)
        last = model(tokens)[0, -1]
        reordered = (last - model(prefix_reversed)[0, -1]).abs().max()
    return Finding(
        holds=spread < 1e-5,
        caveat="outputs still depend on the order" if float(reordered) > 1e-3 else None,
        shown=(
            "8 identical characters: outputs differ between positions by "
            + ("< 1e-5" if spread < 1e-5 else f"{spread:.2g}")
            + " (float32; a position in the values would show)",
            "8 distinct characters, the first 7 reversed: the last output (logits of size"
            f" about {float(last.abs().max()):.1f}) changes by {float(reordered):.3f}",
        ),
    )
