"""Scaled dot-product attention: the layer every chapter puts positions into.

Chapter 1 derives its symmetry; later chapters add a bias to its scores
(ALiBi, T5), rotate its queries and keys (RoPE), or add vectors to its input
(sinusoidal, learned). The formula, for one head::

    Attention(Q, K, V) = softmax(Q Kᵀ / √d + B + M) V

with B an optional additive bias and M the causal mask (0 where a query may
look, -inf where it may not). ``attention`` runs it through
``torch.nn.functional.scaled_dot_product_attention``; ``attention_weights``
spells the softmax out for plots and proofs, and the tests check the two agree.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from pe_book._validate import (
    validate_dtype,
    validate_finite,
    validate_int,
    validate_qkv,
    validate_tensor,
)

__all__ = [
    "MultiHeadSelfAttention",
    "attention",
    "attention_weights",
    "causal_mask",
    "merge_heads",
    "project_heads",
    "query_start",
    "split_heads",
]


def query_start(q_len: int, k_len: int, start: int | None = None) -> int:
    """The position of the first query when q_len queries attend to k_len keys.

    The default, ``k_len - q_len``, puts the queries at the *end* of the keys, as in
    decoding with a KV cache (bottom-right alignment); for ``q_len == k_len`` it is
    0. An explicit ``start`` must lie in [0, k_len - q_len]. Every causal mask and
    relative bias of the book places its queries with this one function.
    """
    q_len = validate_int("q_len", q_len, minimum=1)
    k_len = validate_int("k_len", k_len, minimum=1)
    if start is None:
        return max(k_len - q_len, 0)
    start = validate_int("start", start, minimum=0)
    if start > max(k_len - q_len, 0):
        raise ValueError(
            f"start must be in [0, k_len - q_len] = [0, {max(k_len - q_len, 0)}], got {start}"
        )
    return start


def causal_mask(q_len: int, k_len: int, *, start: int | None = None) -> torch.Tensor:
    """Boolean mask of shape (q_len, k_len): True where query i may attend to key j.

    Query i sits at absolute position ``start + i``, key j at position j, and a
    query sees every key at or before its own position: ``j <= start + i``.
    The default ``start = k_len - q_len`` puts the queries at the *end* of the
    keys, as in decoding with a KV cache (bottom-right alignment); for
    ``q_len == k_len`` it is the usual lower-triangular mask.
    """
    q_len = validate_int("q_len", q_len, minimum=1)
    k_len = validate_int("k_len", k_len, minimum=1)
    if q_len > k_len:
        raise ValueError(f"q_len must be <= k_len for a causal mask, got {q_len} > {k_len}")
    start = query_start(q_len, k_len, start)
    query_pos = torch.arange(q_len).unsqueeze(1) + start  # (q_len, 1)
    key_pos = torch.arange(k_len).unsqueeze(0)  # (1, k_len)
    return key_pos <= query_pos  # (q_len, k_len)


def _additive_mask(
    q: torch.Tensor, k: torch.Tensor, bias: torch.Tensor | None, causal: bool
) -> torch.Tensor | None:
    """Bias plus causal mask as one float tensor broadcastable to (..., q_len, k_len)."""
    q_len, k_len = q.shape[-2], k.shape[-2]
    if bias is not None:
        validate_tensor("bias", bias, min_ndim=2, floating=True)
        validate_finite("bias", bias)
        try:
            torch.broadcast_shapes(bias.shape, (*q.shape[:-2], q_len, k_len))
        except RuntimeError:
            raise ValueError(
                f"bias of shape {tuple(bias.shape)} does not broadcast to the scores' shape "
                f"{(*q.shape[:-2], q_len, k_len)}"
            ) from None
        bias = bias.to(q.dtype)
    if causal:
        allowed = causal_mask(q_len, k_len).to(q.device)  # (q_len, k_len)
        mask = torch.zeros(q_len, k_len, dtype=q.dtype, device=q.device)
        mask = mask.masked_fill(~allowed, float("-inf"))
        bias = mask if bias is None else bias + mask
    if bias is not None and 2 < bias.ndim < q.ndim:
        # PyTorch's fused CPU attention kernel takes 2-D or 4-D masks only; a 3-D
        # (heads, q_len, k_len) mask sends it to the unfused path, which builds the
        # full (batch, heads, q_len, k_len) scores (chapter 12 measures the cost).
        bias = bias.reshape((1,) * (q.ndim - bias.ndim) + tuple(bias.shape))
    return bias


def attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    causal: bool = False,
) -> torch.Tensor:
    """softmax(q kᵀ / √d + bias + causal mask) v, for any leading (batch, head) dims.

    Shapes: q (..., q_len, d), k (..., k_len, d), v (..., k_len, d_v);
    bias broadcastable to (..., q_len, k_len); returns (..., q_len, d_v).
    With ``causal=True`` query i sees keys j <= i + (k_len - q_len) (see
    ``causal_mask``). Chapter 1.
    """
    validate_qkv(q, k, v)  # shapes, one dtype, leading dims that broadcast
    if causal and bias is None and q.shape[-2] == k.shape[-2]:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)  # fused fast path
    mask = _additive_mask(q, k, bias, causal)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def attention_weights(
    q: torch.Tensor,
    k: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    causal: bool = False,
) -> torch.Tensor:
    """The attention matrix softmax(q kᵀ / √d + bias + causal mask), shape (..., q_len, k_len).

    Each row sums to 1. ``attention(q, k, v, ...)`` equals ``attention_weights(q, k, ...) @ v``;
    this explicit form exists for figures and proofs. Chapter 1.
    """
    validate_qkv(q, k)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (..., q_len, k_len)
    mask = _additive_mask(q, k, bias, causal)
    if mask is not None:
        scores = scores + mask
    return torch.softmax(scores, dim=-1)


def split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """(batch, seq, n_heads * d_head) -> (batch, n_heads, seq, d_head)."""
    batch, seq_len, width = x.shape
    return x.view(batch, seq_len, n_heads, width // n_heads).transpose(1, 2)


def project_heads(
    qkv: nn.Linear, x: torch.Tensor, n_heads: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """q, k, v for every head: x (batch, seq, dim) through the stacked W_q | W_k | W_v.

    Each comes back as (batch, n_heads, seq, d_head). Every attention layer of the
    book (MultiHeadSelfAttention, ShawAttention) projects and splits with this.
    """
    dim = qkv.out_features // 3
    q, k, v = qkv(x).split(dim, dim=-1)  # each (batch, seq, dim)
    return tuple(split_heads(t, n_heads) for t in (q, k, v))  # (batch, H, seq, d_head)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """(batch, n_heads, seq, d_head) -> (batch, seq, n_heads * d_head)."""
    batch, n_heads, seq_len, d_head = x.shape
    return x.transpose(1, 2).reshape(batch, seq_len, n_heads * d_head)


class MultiHeadSelfAttention(nn.Module):
    """Multi-head self-attention with no notion of position of its own.

    ``forward(x)`` computes, per head h with d_head = dim / n_heads,
    ``softmax(Q_h K_hᵀ / √d_head + B_h + M) V_h`` where Q, K, V = x W_q, x W_k, x W_v,
    concatenates the heads and applies the output projection W_o.
    Positions enter only through what the caller adds to ``x`` or passes as ``bias``.

    Shapes: x (batch, seq, dim) or (seq, dim); bias broadcastable to
    (batch, n_heads, seq, seq); output has the shape of x. Chapter 1.
    """

    def __init__(self, dim: int, n_heads: int, *, qkv_bias: bool = False) -> None:
        super().__init__()
        self.dim = validate_int("dim", dim, minimum=1)
        self.n_heads = validate_int("n_heads", n_heads, minimum=1)
        if dim % n_heads:
            raise ValueError(f"dim must be divisible by n_heads, got dim={dim}, n_heads={n_heads}")
        self.qkv = nn.Linear(dim, 3 * dim, bias=qkv_bias)  # W_q | W_k | W_v stacked
        self.out = nn.Linear(dim, dim, bias=qkv_bias)  # W_o

    def _heads(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, bool]:
        """Project x to per-head q, k, v, each (batch, n_heads, seq, d_head)."""
        validate_tensor("x", x, ndim=(2, 3), floating=True, last_dim=self.dim)
        validate_dtype("x", x, self.qkv.weight.dtype, "the layer's weights")
        unbatched = x.ndim == 2
        if unbatched:
            x = x.unsqueeze(0)  # (1, seq, dim)
        q, k, v = project_heads(self.qkv, x, self.n_heads)  # each (batch, H, seq, d_head)
        return q, k, v, unbatched

    def forward(
        self,
        x: torch.Tensor,
        *,
        bias: torch.Tensor | None = None,
        causal: bool = False,
        rotate: Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]
        | None = None,
        table: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``rotate(q, k)`` turns queries and keys before the scores (RoPE, chapter 7);
        ``table`` (H, nb) is a causal bias per offset r = m - n, read inside the kernel of
        :mod:`pe_book.bias_attention` (chapter 12) instead of an L × L ``bias``."""
        q, k, v, unbatched = self._heads(x)
        if rotate is not None:
            q, k = rotate(q, k)
        if table is not None:
            if not causal or bias is not None:
                raise ValueError("table is a causal bias: pass causal=True and no bias")
            from pe_book.bias_attention import bias_attention  # imports this module

            z = bias_attention(q, k, v, table[None, :, None, :])  # (batch, H, seq, d_head)
        else:
            z = attention(q, k, v, bias=bias, causal=causal)
        y = merge_heads(z)  # (batch, seq, dim)
        y = self.out(y)
        return y.squeeze(0) if unbatched else y

    def weights(
        self, x: torch.Tensor, *, bias: torch.Tensor | None = None, causal: bool = False
    ) -> torch.Tensor:
        """Attention matrices, (batch, n_heads, seq, seq); (n_heads, seq, seq) if x is unbatched."""
        q, k, _, unbatched = self._heads(x)
        w = attention_weights(q, k, bias=bias, causal=causal)  # (batch, H, seq, seq)
        return w.squeeze(0) if unbatched else w
