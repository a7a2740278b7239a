"""xPos: RoPE whose pairs also decay with distance (Chapter 10).

Sun, Dong, Patra et al., *A Length-Extrapolatable Transformer* (arXiv 2212.10554, ACL 2023),
section 3.2 and Algorithm 1. Pair i of a query at position m and of a key at position n is
rotated as in RoPE (angle m θ_i, θ_i = b^(-2i/d)) and scaled in opposite directions:

    q'_m = R_m q · ζ_i^(+m/B),     k'_n = R_n k · ζ_i^(-n/B),     pair i,

    ζ_i = (2i/d + γ) / (1 + γ)    (eq. 9; γ = 0.4),   B = 512 (the scale base),

so pair i adds ζ_i^((m-n)/B) times its RoPE term to q'_m · k'_n: the score still depends on
r = m - n only, and every pair decays for r > 0 (ζ_i < 1), the fast pairs (low i) fastest.

What the sources say. The arXiv v1 text gives eq. (9) and Algorithm 1 (Q·T, K·T⁻¹ with
T_mi = ζ̂_i^m) but prints neither γ nor B; it says ζ̂ was chosen so that ζ^n fits float16 at
n = 8192. The official torchscale code (``torchscale/component/xpos_relative_position.py``)
fixes them: scale = (2i + 0.4 d) / (1.4 d) raised to pos / scale_base, scale_base = 512, i.e.
ζ̂_i = ζ_i^(1/B). In the v1 text eq. (6) turns the key by e^(-iθn) under a conjugating inner
product and eq. (10)'s key rows mix signs (neither is a relative encoding as printed);
Algorithm 1 and the code rotate q and k alike, as here.

Centring. torchscale and rotary-embedding-torch (``use_xpos``) centre the positions on the
middle of the window (the latter raises ζ to (pos - L//2)/B); the factors cancel in
q'_m · k'_n up to ζ^((m-n)/B), so the scores equal the paper's uncentred form
(tests/test_xpos.py checks it) while each vector differs by ζ^(±(L//2)/B). pe_book implements
the paper's uncentred form, positions start .. start + L - 1, and refuses positions where it
breaks (next paragraph).

Range. The smallest ratio is ζ_0 = γ/(1+γ) = 2/7. In float32 (and bfloat16) the query factor
ζ_0^(m/B) drops below the smallest normal number at m = 35695 (and is 0 from m = 42494); the
key factor ζ_0^(-n/B) overflows to inf at n = 36261. float16: 3967 and 4533; float64: 289520.
Centring keeps |pos| <= L/2 = 4096 < 4533 at L = 8192, consistent with the paper's float16
remark. :func:`xpos_position_limit` gives the first refused position for a dtype.
"""

from __future__ import annotations

import math

import torch

from pe_book._cached_table import CachedTable
from pe_book._validate import (
    validate_bool,
    validate_choice,
    validate_float_dtype,
    validate_int,
    validate_pairs,
    validate_positions,
    validate_positive_float,
    validate_tensor,
)
from pe_book.positions import ModelConfig, PositionMethod, register
from pe_book.rope import Rope, apply_rope, rope_cos_sin, rotate
from pe_book.sinusoidal import LAYOUTS, pair_fractions

__all__ = [
    "ROLES",
    "XPos",
    "XPosPositions",
    "apply_xpos",
    "blockwise_causal_mask",
    "xpos_position_limit",
    "xpos_ratios",
    "xpos_scales",
]

#: A query is scaled by ζ^(+m/B), a key by ζ^(-n/B).
ROLES = ("query", "key")


def xpos_ratios(dim: int, gamma: float = 0.4) -> torch.Tensor:
    """ζ_i = (2i/d + γ) / (1 + γ), i = 0 .. d/2 - 1; float64, shape (dim/2,). Chapter 10.

    Sun et al. (2022, arXiv 2212.10554, eq. 9, written there i/(d/2)). From γ/(1+γ) at i = 0
    (the fastest pair decays most) up to (1 - 2/d + γ)/(1 + γ) < 1; γ → ∞ gives RoPE (ζ = 1).
    """
    fraction = pair_fractions(dim)  # 2i/d
    gamma = validate_positive_float("gamma", gamma)
    return (fraction + gamma) / (1 + gamma)


def xpos_scales(
    positions: int | torch.Tensor,
    dim: int,
    gamma: float = 0.4,
    scale_base: float = 512.0,
    *,
    role: str = "query",
) -> torch.Tensor:
    """ζ_i^(+m/B) (role "query") or ζ_i^(-m/B) (role "key"); float64, shape (L, dim/2).

    ``positions``: a length L (0 .. L-1) or a 1-D integer tensor. Algorithm 1's T and T⁻¹
    (Sun et al., 2022) with ζ̂ = ζ^(1/B) as in the official code. Chapter 10.
    """
    role = validate_choice("role", role, ROLES)
    scale_base = validate_positive_float("scale_base", scale_base)
    zeta = xpos_ratios(dim, gamma)
    m = validate_positions(positions, name="positions").to(torch.float64)
    sign = 1.0 if role == "query" else -1.0
    return zeta[None, :] ** (sign * m[:, None] / scale_base)  # (L, dim/2)


def xpos_position_limit(
    gamma: float = 0.4, scale_base: float = 512.0, dtype: torch.dtype = torch.float32
) -> int:
    """The first position m at which ζ_0^(m/B) < the smallest normal number of ``dtype``.

    ζ_0 = γ/(1+γ) is the smallest ratio, so positions below this limit keep every query
    factor normal and every key factor ζ_0^(-n/B) finite (that one overflows later, since
    ln(max) > ln(1/tiny) in IEEE formats). 35695 for float32 and bfloat16, 3967 for float16,
    289520 for float64 with the paper's γ = 0.4, B = 512 (module docstring). Chapter 10.
    """
    gamma = validate_positive_float("gamma", gamma)
    scale_base = validate_positive_float("scale_base", scale_base)
    dtype = validate_float_dtype("dtype", dtype)
    decay_per_position = math.log((1 + gamma) / gamma) / scale_base  # -ln ζ_0 / B
    return math.floor(-math.log(torch.finfo(dtype).tiny) / decay_per_position) + 1


def _check_range(last: int, dtype: torch.dtype, gamma: float, scale_base: float) -> None:
    limit = xpos_position_limit(gamma, scale_base, dtype)
    if last >= limit:
        raise ValueError(
            f"start + seq_len - 1 (the last position, {last}) must be < {limit} for {dtype}: "
            f"beyond it ζ_0^(m/B) underflows and ζ_0^(-n/B) overflows (see pe_book.xpos)"
        )


def _scale_pairs(x: torch.Tensor, scale: torch.Tensor, layout: str) -> torch.Tensor:
    """Multiply pair i of every row of x (..., L, d) by scale (L, d/2), without copying scale."""
    half = x.shape[-1] // 2
    if layout == "interleaved":  # pairs (2i, 2i+1): (..., L, d/2, 2)
        return (x.unflatten(-1, (half, 2)) * scale[..., None]).flatten(-2)
    return (x.unflatten(-1, (2, half)) * scale[..., None, :]).flatten(-2)  # (i, i + d/2)


def _working(x: torch.Tensor) -> torch.Tensor:
    """x in float32 or wider (bfloat16/float16 are rotated and scaled in float32)."""
    return x if x.dtype in (torch.float32, torch.float64) else x.float()


def apply_xpos(
    x: torch.Tensor,
    role: str,
    start: int = 0,
    *,
    gamma: float = 0.4,
    scale_base: float = 512.0,
    base: float = 10000.0,
    layout: str = "interleaved",
) -> torch.Tensor:
    """xPos of queries or keys x (..., L, d) at positions start .. start + L - 1. Chapter 10.

    query: q'_m = R_m q ⊙ ζ^(m/B);  key: k'_n = R_n k ⊙ ζ^(-n/B), pair by pair (Sun et al.,
    2022, Algorithm 1; ζ from :func:`xpos_ratios`). The rotation is :func:`pe_book.rope.
    apply_rope`'s; scales are computed in float64. Raises ValueError from the position
    :func:`xpos_position_limit` gives for x's dtype on (module docstring: 35695 in float32).
    """
    dim = validate_pairs("x", x)
    role = validate_choice("role", role, ROLES)
    layout = validate_choice("layout", layout, LAYOUTS)
    start = validate_int("start", start, minimum=0)
    gamma = validate_positive_float("gamma", gamma)
    scale_base = validate_positive_float("scale_base", scale_base)
    positions = torch.arange(start, start + x.shape[-2])
    _check_range(start + x.shape[-2] - 1, x.dtype, gamma, scale_base)
    work = _working(x)
    rotated = apply_rope(work, positions, base=base, layout=layout)
    scale = xpos_scales(positions, dim, gamma, scale_base, role=role)
    return _scale_pairs(rotated, scale.to(work.dtype).to(x.device), layout).to(x.dtype)


def blockwise_causal_mask(seq_len: int, block: int) -> torch.Tensor:
    """xPos's blockwise causal attention at inference: bool (seq_len, seq_len). Chapter 10.

    Sun et al. (2022, arXiv 2212.10554, "blockwise causal attention"): cut the sequence
    into blocks of ``block`` positions; query m sees key n when n <= m and n lies in m's
    block or the block before it, n >= (⌊m/block⌋ - 1)·block. So a query sees at most 2·block - 1
    keys back (offsets up to 2·block - 1), however long the sequence; queries in the
    first block see everything before them, as under :func:`pe_book.attention.causal_mask`.
    """
    seq_len = validate_int("seq_len", seq_len, minimum=1)
    block = validate_int("block", block, minimum=1)
    m = torch.arange(seq_len)[:, None]  # (L, 1)
    n = torch.arange(seq_len)[None, :]  # (1, L)
    return (n <= m) & (n >= (m // block - 1) * block)  # (L, L)


class XPos(CachedTable):
    """xPos for a head of size ``dim``: ``forward(q, k, start=0) -> (q', k')``. Chapter 10.

    q and k (..., L, dim) are the same L tokens at positions start .. start + L - 1 (a decoder
    appends k' to its cache, as with :class:`pe_book.rope.Rope`), so q'_m · k'_n =
    Σ_i ζ_i^((m-n)/B) · (pair i of RoPE's q_m · k_n). The rotation is a cached
    :class:`~pe_book.rope.Rope`; the factors ζ^(±m/B) are cached too (float64 for float64
    inputs, float32 otherwise; non-persistent buffers, rebuilt, never rounded, by ``.half()``).

    ``fused=True`` (chapter 12) folds each factor into the rotation's cos and sin once, when
    the tables are built (ζ^(m/B) cos mθ_i, ...), so q and k each take one pass of RoPE's
    kernel instead of a rotation and then a scaling; ``fused=False`` is the paper's order.
    """

    keeps_precision = True  # cos/sin stay float32/float64 under .half() (CachedTable)

    query_scale: torch.Tensor
    key_scale: torch.Tensor
    query_scale64: torch.Tensor
    key_scale64: torch.Tensor
    query_cos: torch.Tensor
    query_sin: torch.Tensor
    key_cos: torch.Tensor
    key_sin: torch.Tensor

    def __init__(
        self,
        dim: int,
        gamma: float = 0.4,
        scale_base: float = 512.0,
        layout: str = "interleaved",
        base: float = 10000.0,
        *,
        max_len: int = 2048,
        fused: bool = True,
    ) -> None:
        super().__init__(dim, base, max_len)
        self.fused = validate_bool("fused", fused)
        self.gamma = validate_positive_float("gamma", gamma)
        self.scale_base = validate_positive_float("scale_base", scale_base)
        self.layout = validate_choice("layout", layout, LAYOUTS)
        self.rope = Rope(dim, base, layout, max_len=max_len)
        self._register_tables()

    def _tables(self, length: int) -> dict[str, torch.Tensor]:
        up = xpos_scales(length, self.dim, self.gamma, self.scale_base, role="query")
        down = xpos_scales(length, self.dim, self.gamma, self.scale_base, role="key")
        # rows past the float32 limit hold 0 or inf; forward never reaches them
        cos, sin = rope_cos_sin(length, self.dim, self.base, dtype=torch.float64)
        tables = {"query_scale": up, "key_scale": down}
        for role, scale in (("query", up), ("key", down)):  # the factor folded into cos, sin
            tables |= {f"{role}_cos": cos * scale, f"{role}_sin": sin * scale}
        return {
            **{name: t.float() for name, t in tables.items()},
            **{name + "64": t for name, t in tables.items()},
        }

    def forward(
        self, q: torch.Tensor, k: torch.Tensor, start: int = 0
    ) -> tuple[torch.Tensor, torch.Tensor]:
        validate_tensor("q", q, min_ndim=2, floating=True, last_dim=self.dim)
        validate_tensor("k", k, min_ndim=2, floating=True, last_dim=self.dim)
        if q.shape[-2] != k.shape[-2]:
            raise ValueError(
                "q and k must hold the same tokens (equal lengths; cached keys are already "
                f"scaled), got {q.shape[-2]} and {k.shape[-2]}"
            )
        start = validate_int("start", start, minimum=0)
        end = start + q.shape[-2]
        for x in (q, k):
            _check_range(end - 1, x.dtype, self.gamma, self.scale_base)
        self._ensure(end)
        out = []
        for x, role in ((q, "query"), (k, "key")):
            if self.fused:  # one pass: RoPE's kernel with the scaled cos and sin
                wide = "64" if x.dtype == torch.float64 else ""
                cos, sin = getattr(self, f"{role}_cos{wide}"), getattr(self, f"{role}_sin{wide}")
                out.append(rotate(x, cos[start:end], sin[start:end], layout=self.layout))
                continue
            name = role + "_scale"
            work = _working(x)
            table = getattr(self, name + ("64" if work.dtype == torch.float64 else ""))
            rotated = self.rope(work, start)  # (..., L, dim)
            out.append(_scale_pairs(rotated, table[start:end], self.layout).to(x.dtype))
        return out[0], out[1]


@register("xpos")
class XPosPositions(PositionMethod):
    """xPos in chapter 11's model: q and k of every layer turned and scaled by one XPos."""

    fast_path = "the decay folded into cos and sin: one pass of RoPE's kernel"

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        self.xpos = XPos(config.dim // config.n_heads, fused=self.fused)

    def rotate(self, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.xpos(q, k)
