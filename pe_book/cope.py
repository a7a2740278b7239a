"""Contextual Position Encoding, CoPE: positions that count what the gates let through (Chapter 10).

Golovneva, Wang, Weston and Sukhbaatar (2024), "Contextual Position Encoding:
Learning to Count What's Important", arXiv 2405.18719, section 3 and its PyTorch
listing. Query m decides, for every key j <= m, whether j counts, with a gate

    g_mj = σ(q_m · k_j / √d),

and the position of key n seen from query m is the number of counted keys from
n to m,

    p_mn = Σ_{j=n}^{m} g_mj   (clamped at P, the paper's npos_max - 1),

a fractional number in (0, m - n + 1]. A learned table e[0], ..., e[P] (one per
layer, shared by its heads) is read at p_mn by linear interpolation (eq. 5),

    e[p] = (p - ⌊p⌋) e[⌈p⌉] + (1 - p + ⌊p⌋) e[⌊p⌋],

and the logit of key n gains q_m · e[p_mn]. As in the listing, the scalars
z_m[p] = q_m · e[p] are computed for the P + 1 integer positions first and then
interpolated (L·(P+1)·d multiplies instead of L²·d for the vectors).
With every gate equal to 1, p_mn = m - n + 1 and CoPE is a relative position
embedding of the offset r = m - n.

The book follows the listing where the paper's equations are looser: the gates
use the scaled logits q·k/√d (eq. 3 writes σ(q·k)) and the position term q·e[p]
is added after the 1/√d scaling (eq. 6 writes q·(k + e[p]) inside one softmax).
The authors' repository (facebookresearch/RAM, projects/cope) divides the sum
q·k + q·e[p] by √d instead: the same model with the table e/√d (tested).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from pe_book._validate import (
    validate_bool,
    validate_broadcast,
    validate_finite,
    validate_int,
    validate_mask,
    validate_qkv,
    validate_tensor,
)
from pe_book.attention import MultiHeadSelfAttention, causal_mask, merge_heads
from pe_book.positions import ModelConfig, PositionMethod, register

__all__ = [
    "CoPEAttention",
    "CoPEPositions",
    "cope_attention",
    "cope_gates",
    "cope_logits",
    "cope_positions",
    "cope_scores",
    "interpolate_embeddings",
    "positions_from_gates",
]


def _work(x: torch.Tensor) -> torch.Tensor:
    """x in float32 or wider: gates are summed over up to L keys (no 16-bit cumsum)."""
    return x if x.dtype in (torch.float32, torch.float64) else x.float()


def _check_qk(q: torch.Tensor, k: torch.Tensor) -> torch.Size:
    """Check q and k and return the scores' shape (..., q_len, k_len)."""
    lead = validate_qkv(q, k)
    for name, x in (("q", q), ("k", k)):  # an inf would make a gate σ(inf - inf) = NaN
        validate_finite(name, x, allow_inf=False)
        if x.shape[-2] == 0:
            raise ValueError(f"{name} must hold at least one token, got shape {tuple(x.shape)}")
    return torch.Size((*lead, q.shape[-2], k.shape[-2]))


def _mask(mask: torch.Tensor | None, scores: torch.Size, device: torch.device) -> torch.Tensor:
    """Boolean (…, q_len, k_len), True where query m may see key n; default the causal mask."""
    q_len, k_len = scores[-2:]
    if mask is None:
        return causal_mask(q_len, k_len).to(device)  # queries at the end of the keys
    return validate_mask("mask", mask, scores).to(device)


def cope_gates(q: torch.Tensor, k: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """g_mn = σ(q_m · k_n / √d) where ``mask`` allows (default: causal, n <= m), else 0.

    Shapes: q (..., q_len, d), k (..., k_len, d), mask broadcastable to
    (..., q_len, k_len) (bool); returns (..., q_len, k_len) in float32 or wider.
    Golovneva et al. (2024), eq. 3 with the listing's 1/√d.
    """
    scores = _check_qk(q, k)
    q, k = _work(q), _work(k)
    allowed = _mask(mask, scores, q.device)
    logits = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (..., q_len, k_len)
    return torch.sigmoid(logits) * allowed


def positions_from_gates(gates: torch.Tensor, max_positions: int | None = None) -> torch.Tensor:
    """p_mn = Σ_{j >= n} g_mj, clamped at P = ``max_positions`` (None: no clamp).

    With gates zero where the mask forbids (j > m under a causal mask) this is
    Σ_{j=n}^{m} g_mj, eq. 4; the listing computes it as a reversed cumulative sum.
    Gates must lie in [0, 1]; returns the shape of ``gates``. Golovneva et al. (2024).
    """
    validate_tensor("gates", gates, min_ndim=2, floating=True)
    validate_finite("gates", gates)
    if bool((gates < 0).any()) or bool((gates > 1).any()):
        raise ValueError("gates must lie in [0, 1] (they are sigmoids)")
    positions = _work(gates).flip(-1).cumsum(-1).flip(-1)  # Σ over keys j >= n
    if max_positions is not None:
        max_positions = validate_int("max_positions", max_positions, minimum=1)
        positions = positions.clamp(max=max_positions)  # the paper's limit (npos_max - 1)
    return positions


def cope_positions(
    q: torch.Tensor,
    k: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    max_positions: int | None = None,
) -> torch.Tensor:
    """CoPE's position of key n seen from query m: p_mn = Σ_{j=n}^{m} σ(q_m · k_j / √d).

    Shapes: q (..., q_len, d), k (..., k_len, d) -> (..., q_len, k_len), float32 or
    wider; 0 where the mask forbids, in (0, m - n + 1] elsewhere, non-increasing in n,
    clamped at ``max_positions`` if given. Golovneva et al. (2024), eqs. 3-4.
    """
    return positions_from_gates(cope_gates(q, k, mask), max_positions)


def _check_table(table: torch.Tensor, dim: int | None = None) -> None:
    validate_tensor("table", table, ndim=2, floating=True)
    if dim is not None and table.shape[-1] != dim:
        raise ValueError(
            f"table must have one column per feature of q: {dim}, got {table.shape[-1]}"
        )
    if table.shape[0] < 2:
        raise ValueError(f"table must have rows e[0..P] with P >= 1, got {table.shape[0]} rows")
    validate_finite("table", table, allow_inf=False)


def _check_positions(positions: torch.Tensor, max_positions: int) -> None:
    validate_tensor("positions", positions, min_ndim=2, floating=True)
    validate_finite("positions", positions)
    if bool((positions < 0).any()) or bool((positions > max_positions).any()):
        raise ValueError(
            f"positions must lie in [0, P] = [0, {max_positions}] (the table has rows "
            "e[0..P]); clamp them with positions_from_gates(gates, max_positions=P)"
        )


def _split(positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """⌊p⌋, ⌈p⌉ as indices (no gradient) and the weight w = p - ⌊p⌋ (differentiable)."""
    floor = positions.floor()
    return floor.long(), positions.ceil().long(), positions - floor


def cope_logits(q: torch.Tensor, positions: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """q_m · e[p_mn], computed as the listing does: interpolate the scalars z_m[p] = q_m · e[p].

    z_m[p] for the integer p = 0..P (one (q_len, d) @ (d, P + 1) product), then
    w z_m[⌈p⌉] + (1 - w) z_m[⌊p⌋] with w = p - ⌊p⌋, which equals q_m · e[p_mn] for
    the interpolated vector (the interpolation is linear). Shapes: q (..., q_len, d),
    positions (..., q_len, k_len) in [0, P], table (P + 1, d); returns
    (..., q_len, k_len). Golovneva et al. (2024), section 3 and its listing.
    """
    validate_tensor("q", q, min_ndim=2, floating=True)
    _check_table(table, q.shape[-1])
    _check_positions(positions, table.shape[0] - 1)
    if positions.shape[-2] != q.shape[-2]:
        raise ValueError(
            f"positions must have one row per query: q_len = {q.shape[-2]}, "
            f"got shape {tuple(positions.shape)}"
        )
    leading = {"q": q.shape[:-2], "positions": positions.shape[:-2]}
    validate_broadcast(leading, "have leading (batch, head) dimensions that broadcast together")
    work = _work(q)
    z = work @ table.to(work.dtype).T  # (..., q_len, P + 1): z_m[p] for integer p
    floor, ceil, w = _split(positions.to(work.dtype))
    shape = torch.broadcast_shapes(z.shape[:-1], positions.shape[:-1]) + positions.shape[-1:]
    z = z.expand(*shape[:-1], z.shape[-1])
    z_floor = z.gather(-1, floor.expand(shape))  # (..., q_len, k_len)
    z_ceil = z.gather(-1, ceil.expand(shape))
    return z_ceil * w + z_floor * (1 - w)


def interpolate_embeddings(table: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """e[p] = (p - ⌊p⌋) e[⌈p⌉] + (1 - p + ⌊p⌋) e[⌊p⌋] for each p: shape (*positions.shape, d).

    The vector form of eq. 5 (Golovneva et al., 2024), for figures and for checking
    :func:`cope_logits`; attention never builds these (L² d numbers).
    """
    _check_table(table)
    _check_positions(positions, table.shape[0] - 1)
    floor, ceil, w = _split(positions.to(table.dtype))
    return table[ceil] * w[..., None] + table[floor] * (1 - w[..., None])


def cope_scores(
    q: torch.Tensor,
    k: torch.Tensor,
    table: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    gates: torch.Tensor | None = None,
) -> torch.Tensor:
    """The logits q_m · k_n / √d + q_m · e[p_mn], -inf where the mask forbids.

    p is clamped at P = len(table) - 1. ``gates`` (broadcastable to (..., q_len, k_len),
    values in [0, 1]) replaces σ(q·k/√d), for tests and figures: all ones gives the
    relative special case p_mn = m - n + 1. Shapes: q (..., q_len, d), k (..., k_len, d),
    table (P + 1, d) -> (..., q_len, k_len). The listing's ``SelfAttn`` before its softmax.
    """
    scores = _check_qk(q, k)
    _check_table(table, q.shape[-1])
    work_q, work_k = _work(q), _work(k)
    allowed = _mask(mask, scores, q.device)
    logits = work_q @ work_k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (..., q_len, k_len)
    if gates is None:
        gates = torch.sigmoid(logits)
    else:
        validate_tensor("gates", gates, min_ndim=0, floating=True)
        into = f"broadcast to the scores' shape {tuple(logits.shape)}"
        validate_broadcast({"gates": gates.shape}, into, target=logits.shape)
        gates = torch.broadcast_to(gates.to(logits.dtype), logits.shape)
    positions = positions_from_gates(gates * allowed, table.shape[0] - 1)  # p_mn
    scores = logits + cope_logits(work_q, positions, table)
    return scores.masked_fill(~allowed, float("-inf"))


def cope_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    table: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    gates: torch.Tensor | None = None,
) -> torch.Tensor:
    """softmax(q kᵀ/√d + q·e[p] + M) v, M the mask (default causal); shape (..., q_len, d_v).

    v (..., k_len, d_v); the rest as in :func:`cope_scores`. Returns q's dtype.
    Golovneva et al. (2024), section 3 and listing.
    """
    validate_qkv(q, k, v)  # the rest is checked by cope_scores
    weights = torch.softmax(cope_scores(q, k, table, mask, gates=gates), dim=-1)
    return (weights @ _work(v)).to(q.dtype)


class CoPEAttention(MultiHeadSelfAttention):
    """Causal multi-head self-attention with CoPE added to every head's scores.

    Per head h (d_head = dim / n_heads): p_mn = Σ_{j=n}^{m} σ(q_m·k_j/√d_head) from
    that head's q and k, clamped at P = ``max_positions``; scores
    q_m·k_n/√d_head + q_m·e[p_mn] with one learned table e (P + 1 rows of d_head,
    shared by the heads, zero at start as in the listing); then softmax, V and W_o.
    ``max_positions = L`` never clamps a sequence of length L (p_mn <= m + 1 <= L).
    Shapes: x (batch, L, dim) or (L, dim) -> same. ``gates``: as in :func:`cope_scores`,
    broadcastable to (batch, n_heads, L, L). Golovneva et al. (2024), arXiv 2405.18719.
    """

    def __init__(self, dim: int, n_heads: int, max_positions: int) -> None:
        super().__init__(dim, n_heads)  # W_q | W_k | W_v and W_o, no biases
        self.max_positions = validate_int("max_positions", max_positions, minimum=1)
        self.table = nn.Parameter(torch.zeros(max_positions + 1, dim // n_heads))  # e[0..P]

    def _heads(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, bool]:
        """As MultiHeadSelfAttention's, for an x of at least one token and finite entries."""
        validate_tensor("x", x, ndim=(2, 3), floating=True)
        validate_finite("x", x, allow_inf=False)  # else a gate would be NaN
        if x.shape[-2] == 0:
            raise ValueError(f"x must hold at least one token, got shape {tuple(x.shape)}")
        return super()._heads(x)

    def forward(  # type: ignore[override]
        self, x: torch.Tensor, gates: torch.Tensor | None = None, *, causal: bool = True
    ) -> torch.Tensor:
        """``causal`` must be True (the counts run over keys n <= m); the model passes it."""
        if validate_bool("causal", causal) is not True:
            raise ValueError("causal must be True: CoPE counts gates over the keys n <= m")
        q, k, v, unbatched = self._heads(x)
        z = cope_attention(q, k, v, self.table, gates=gates)  # (batch, H, L, d_head)
        y = self.out(merge_heads(z))  # (batch, L, dim)
        return y[0] if unbatched else y

    def weights(self, x: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        """Attention matrices (batch, n_heads, L, L); (n_heads, L, L) if x is unbatched."""
        q, k, _, unbatched = self._heads(x)
        w = torch.softmax(cope_scores(q, k, self.table), dim=-1)
        return w[0] if unbatched else w

    def positions(self, x: torch.Tensor) -> torch.Tensor:
        """Each head's p_mn (clamped at P): (batch, n_heads, L, L); unbatched (n_heads, L, L)."""
        q, k, _, unbatched = self._heads(x)
        p = cope_positions(q, k, max_positions=self.max_positions)
        return p[0] if unbatched else p


@register("cope")
class CoPEPositions(PositionMethod):
    """CoPE in chapter 11's model: every layer is a CoPEAttention with P = the training length.

    Counts above P are clamped to P, as in the paper's listing (chapter 10, section 10.4).
    """

    def make_attention(self, config: ModelConfig) -> nn.Module:
        return CoPEAttention(config.dim, config.n_heads, config.train_len)

    def layer_inputs(self, seq_len: int, dtype: torch.dtype) -> dict[str, object]:
        return {}  # the gates and the position table live inside each layer
