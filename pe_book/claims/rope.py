"""Evidence for the claims about rotary position embeddings (chapter 7)."""

from __future__ import annotations

from collections.abc import Callable

import sympy as sp
import torch

from pe_book import decay, rope, sinusoidal, symbolic
from pe_book.attention import attention
from pe_book.claims import Finding, evidence

Rotate = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]  # (x (L, d), positions) -> rotated


def pe_book_rope(x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    return rope.apply_rope(x, positions)


def _symbolic_score(
    rotation: Callable[[sp.Expr], sp.Matrix] = symbolic.rotation,
) -> tuple[sp.Expr, tuple[sp.Symbol, ...]]:
    """SymPy: ⟨R(mθ)q, R(nθ)k⟩ for symbolic q, k (d = 2), m, n, θ; and the symbols m, n, c."""
    q0, q1, k0, k1, m, n, c, theta = sp.symbols("q_0 q_1 k_0 k_1 m n c theta", real=True)
    score = (rotation(m * theta) * sp.Matrix([q0, q1])).dot(
        rotation(n * theta) * sp.Matrix([k0, k1])
    )
    return score, (m, n, c)


def _symbolic_shift_residue(
    rotation: Callable[[sp.Expr], sp.Matrix] = symbolic.rotation,
) -> sp.Expr:
    """SymPy: ⟨R((m+c)θ)q, R((n+c)θ)k⟩ − ⟨R(mθ)q, R(nθ)k⟩, simplified (0: shift-free)."""
    score, (m, n, c) = _symbolic_score(rotation)
    return sp.simplify(sp.expand_trig(score.subs({m: m + c, n: n + c}) - score))


def _symbolic_sees_offset(rotation: Callable[[sp.Expr], sp.Matrix] = symbolic.rotation) -> bool:
    """SymPy: is ∂score/∂m not identically 0, i.e. does the score change with m − n at all?

    One point where the derivative is not 0 proves it: q = k = (1, 0), θ = 1, m = 1, n = 0,
    where RoPE's derivative is −sin 1."""
    score, (m, n, _c) = _symbolic_score(rotation)
    q0, q1, k0, k1, theta = sp.symbols("q_0 q_1 k_0 k_1 theta", real=True)
    point = {q0: 1, q1: 0, k0: 1, k1: 0, theta: 1, m: 1, n: 0}
    return sp.N(sp.diff(score, m).subs(point)) != 0


def _largest_changes(rotate: Rotate) -> tuple[float, float, float]:
    """The code, d = 64, 50 seeded (m, n, c) below 10^4: the largest change of the score when
    m and n both move by c, when m alone moves by 1, and the largest |score|."""
    generator = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 1, 64, dtype=torch.float64, generator=generator)
    m, n, c = torch.randint(0, 10_000, (3, 50), generator=generator)

    def score(mi: int, ni: int) -> float:
        return (rotate(q, torch.tensor([mi])) @ rotate(k, torch.tensor([ni])).T).item()

    shifted, one_step, size = 0.0, 0.0, 0.0
    for mi, ni, ci in zip(m.tolist(), n.tolist(), c.tolist(), strict=True):
        here = score(mi, ni)
        shifted = max(shifted, abs(here - score(mi + ci, ni + ci)))
        one_step = max(one_step, abs(here - score(mi + 1, ni)))
        size = max(size, abs(here))
    return shifted, one_step, size


def _added_sinusoids(x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """The other counterfactual: chapter 3's sinusoids added to q and k (absolute positions)."""
    return x + sinusoidal.sinusoidal_table(positions, x.shape[-1], dtype=torch.float64)


def _no_rotation(x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """The counterfactual: nothing rotated (NoPE), so no position reaches the score."""
    return x


@evidence("001-rope-rotates-qk")
def rope_rotates_qk(
    rotate: Rotate = pe_book_rope,
    rotation: Callable[[sp.Expr], sp.Matrix] = symbolic.rotation,
) -> Finding:
    """A proof that the rotated score depends on m − n only, and does depend on it (its
    derivative in m is not 0), tied to the code on samples.

    ``rotation(angle)`` is the 2 × 2 matrix the proof uses; ``rotate`` the code. Shift
    invariance alone would let "no rotation at all" pass; the second half rules it out,
    and the evidence prints what that counterfactual gives.
    """
    residue = _symbolic_shift_residue(rotation)
    sees_offset = _symbolic_sees_offset(rotation)
    shifted, one_step, size = _largest_changes(rotate)
    _, blind_step, _ = _largest_changes(_no_rotation)
    added_shift, _, _ = _largest_changes(_added_sinusoids)
    enters = sees_offset and one_step > 1e-6 * size
    return Finding(
        holds=residue == 0 and shifted < 1e-9 and enters,
        shown=(
            "SymPy, symbolic q, k, m, n, θ and shift c: score(m + c, n + c) − score(m, n)"
            + (" simplifies to 0" if residue == 0 else " does not simplify to 0")
            + "; ∂score/∂m at q = k = (1, 0), θ = 1, m = 1, n = 0 "
            + ("is not 0 (m − n enters)" if sees_offset else "is 0 (m − n may never enter)"),
            "the code, d = 64, 50 random (m, n, c) up to 10^4: moving m and n by c changes the"
            " score by "
            + ("< 1e-9" if shifted < 1e-9 else f"{shifted:.2g}")
            + f", moving m alone by 1 by up to {one_step:.2f} (the largest score {size:.1f})",
            f"counterfactual, no rotation (NoPE): shifts change nothing either, but moving m"
            f" alone changes the score by {blind_step:.1f}: relative position does not enter",
            f"counterfactual, sinusoids added to q and k (chapter 3): moving m and n by c changes"
            f" the score by up to {added_shift:.2f}: not shift-invariant",
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
    reordered = torch.cat((tokens[:-1].flip(0), tokens[-1:]))

    def last_change(layer_: Callable[[torch.Tensor], torch.Tensor]) -> tuple[float, float]:
        last = layer_(tokens)[-1]
        return float((layer_(reordered)[-1] - last).abs().max()), float(last.abs().max())

    change, size = last_change(layer)
    blind, _ = last_change(rope_layer(_no_rotation))  # same weights, nothing rotated
    return Finding(
        holds=change <= 1e-9 * size,
        shown=(
            "premise, true by construction: 8 identical tokens give outputs equal within "
            + ("1e-12" if spread < 1e-12 else f"{spread:.2g} (not equal!)")
            + " at every position (nothing positional is averaged)",
            f"conclusion, tested in a bidirectional layer (no causal mask, which would carry"
            f" order by itself): 8 distinct tokens, the first 7 reversed: the last output"
            f" (entries up to {size:.2f}) changes by {change:.3f}, {change / size:.0%} of its"
            " size",
            f"counterfactual, the same layer rotating nothing: it changes by {blind:.3f}"
            " (no positional information leaves it unchanged)",
        ),
    )


def _score_sizes(key_is_query: bool, base: float, dim: int = 128) -> tuple[float, ...]:
    """Root-mean-square score of 100 seeded Gaussian (q, k) pairs turned r apart, at r = 0,
    over r = 1..100, 4,000..5,000, 10,000..20,000 and 50,000..60,000: k = q (a key like its
    query) or k independent."""
    generator = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 100, dim, dtype=torch.float64, generator=generator)
    key = q if key_is_query else k
    windows = (
        torch.tensor([0]),
        torch.arange(1, 101),
        torch.arange(4000, 5001),
        torch.arange(10_000, 20_001),
        torch.arange(50_000, 60_001),
    )
    return tuple(float(decay.rotated_scores(q, key, r, base).pow(2).mean().sqrt()) for r in windows)


@evidence("roformer-long-term-decay")
def long_term_decay(base: float = 10000.0) -> Finding:
    """RoFormer: θ_i = b^(-2i/d) makes the rotated score decay as r grows (d = 128).

    Holds if the relative upper bound falls below a quarter of its r = 0 value by r = 250
    and the scores of a key like its query (k = q) fall below a quarter of their r = 0 size
    by r = 4,000..5,000. Caveats it looks for: the bound's peaks past r = 250 as high as at
    r = 50, k = q scores that stop falling (10,000..20,000 and 50,000..60,000 at least 0.8
    of 4,000..5,000: a floor), and independent (q, k) whose scores keep their size. A single
    frequency for all pairs (b → 1) is the counterfactual: nothing decays.
    """
    offsets = torch.arange(20_001)
    bound = decay.rope_decay_bound(offsets, 128, base)
    peak, where = float(bound[251:].max()), int(bound[251:].argmax()) + 251
    same, other = _score_sizes(True, base), _score_sizes(False, base)
    falls = float(bound[250]) < 0.25 * float(bound[0])
    similar_decays = same[2] < 0.25 * same[0]
    peaks_stop = peak >= float(bound[50])
    flat = other[2] > 0.8 * other[1]
    floor = min(same[3], same[4]) > 0.8 * same[2]
    one_rate = decay.rope_decay_bound(torch.tensor([250]), 128, 1 + 1e-6)
    one_same = _score_sizes(True, 1 + 1e-6)
    return Finding(
        holds=falls and similar_decays,
        caveat=(
            "peaks stop falling; k = q scores reach a floor; independent q, k do not decay"
            if peaks_stop or flat or floor
            else None
        ),
        shown=(
            f"relative upper bound, d = 128: {float(bound[0]):.2f} at r = 0, {float(bound[50]):.2f}"
            f" at r = 50, {float(bound[250]):.2f} at r = 250; past 250 its peaks reach"
            f" {peak:.2f} (r = {where:,})",
            "root-mean-square score at r = 0, 1..100, 4,000..5,000, 10,000..20,000,"
            " 50,000..60,000 (100 Gaussian pairs): k = q "
            + ", ".join(f"{v:.1f}" for v in same)
            + f" (falls, then a floor near 1/{same[0] / min(same[2:]):.0f} of r = 0);"
            " k independent of q "
            + ", ".join(f"{v:.1f}" for v in other)
            + f" (expected: √d = {128**0.5:.1f} at every r)",
            f"counterfactual, one frequency for all pairs (b → 1): the bound is"
            f" {float(one_rate[0]):.2f} at r = 250, and k = q scores {one_same[2]:.1f} at"
            " r = 4,000..5,000: nothing decays",
        ),
    )
