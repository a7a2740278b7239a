"""Relative positions (chapter 6): Shaw et al.'s clipped embeddings and T5's bucketed biases.

Sign convention of the book: r = m - n, query position minus key position, so a
key in the past has r > 0.

Shaw, Uszkoreit and Vaswani (2018): with r clipped to [-K, K], learned vectors
a^K_r and a^V_r (one row of a (2K + 1) × d_head table each, shared by all heads)
enter the attention of query m to key n as

    e_mn = q_m · (k_n + a^K_r) / √d_h,      z_m = Σ_n α_mn (v_n + a^V_r).

T5 (Raffel et al., 2020) adds one learned scalar per head and *bucket* to the
scores; buckets are exact for small |r| and logarithmic up to ``max_distance``.
T5's own code measures ``memory_position - query_position`` = n - m = -r, so
``t5_bucket(r)`` here equals T5's bucket of -r: in the bidirectional mode the
upper half of the buckets holds keys *after* the query (r < 0), and in the
causal mode keys after the query (r < 0) all fall in bucket 0.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from pe_book._validate import validate_bool, validate_int, validate_tensor
from pe_book.attention import attention_weights, merge_heads, project_heads, query_start
from pe_book.bias_attention import bias_attention, can_run
from pe_book.positions import ModelConfig, PositionMethod, ScoreBiasMethod, register

__all__ = ["ShawAttention", "T5Bias", "relative_indices", "t5_bucket", "t5_bucket_ranges"]


def relative_indices(
    query_positions: torch.Tensor, key_positions: torch.Tensor, max_offset: int
) -> torch.Tensor:
    """Row of Shaw's (2K + 1)-row table used by each (query m, key n): clip(m - n, -K, K) + K.

    Positions are 1-D integer tensors; returns (len(queries), len(keys)), long. Chapter 6.
    """
    max_offset = validate_int("max_offset", max_offset, minimum=0)
    for name, positions in (("query_positions", query_positions), ("key_positions", key_positions)):
        validate_tensor(name, positions, ndim=1)
        if positions.is_floating_point():
            raise TypeError(f"{name} must be an integer tensor, got {positions.dtype}")
    offsets = query_positions[:, None] - key_positions[None, :]  # r = m - n
    return offsets.clamp(-max_offset, max_offset) + max_offset


class ShawAttention(nn.Module):
    """Multi-head self-attention with Shaw et al.'s clipped relative embeddings (keys and values).

    ``forward(x, positions=None, causal=False)``: x (batch, L, dim) or (L, dim);
    positions (L,) integers, default 0..L-1. Only differences of positions matter,
    so shifting all positions changes nothing. Parameters of the position tables:
    2 (2K + 1) d_head, whatever the length. Chapter 6.

    Two paths, equal to rounding (tests/test_fast_paths.py). The paper's gathers
    a^K_r and a^V_r for every pair (m, n): two L × L × d_head tensors (``fused=False``,
    and whenever positions are given or attention is not causal). The fast path
    (chapter 12), for causal attention over positions 0..L-1: the key term q_m · a^K_r
    needs only the K + 1 *relative logits* q_m · a^K_r, r = 0..K, of each query (Huang
    et al.'s Music Transformer computes these, Q Eᵀ, and "skews" them into an L × L matrix;
    here :mod:`pe_book.bias_attention` reads them by offset inside its kernel, so no L × L
    tensor exists); the value term Σ_n α_mn a^V_r = Σ_r W_mr a^V_r needs only the weight
    W_mr that falls on each clipped offset, which the kernel sums as it goes.
    """

    def __init__(
        self, dim: int, n_heads: int, max_offset: int, *, values: bool = True, fused: bool = True
    ) -> None:
        super().__init__()
        self.dim = validate_int("dim", dim, minimum=1)
        self.n_heads = validate_int("n_heads", n_heads, minimum=1)
        if dim % n_heads:
            raise ValueError(f"dim must be divisible by n_heads, got dim={dim}, n_heads={n_heads}")
        self.max_offset = validate_int("max_offset", max_offset, minimum=0)
        d_head = dim // n_heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.out = nn.Linear(dim, dim, bias=False)
        self.key_table = nn.Embedding(2 * max_offset + 1, d_head)  # a^K_r, row r + K
        self.value_table = nn.Embedding(2 * max_offset + 1, d_head) if values else None  # a^V_r
        self.fused = validate_bool("fused", fused)

    def forward(
        self, x: torch.Tensor, positions: torch.Tensor | None = None, causal: bool = False
    ) -> torch.Tensor:
        validate_tensor("x", x, ndim=(2, 3), floating=True)
        unbatched = x.ndim == 2
        if unbatched:
            x = x.unsqueeze(0)  # (1, L, dim)
        seq_len, given = x.shape[1], positions
        if positions is None:
            positions = torch.arange(seq_len, device=x.device)
        elif positions.shape != (seq_len,):
            raise ValueError(
                f"positions must have shape ({seq_len},), got {tuple(positions.shape)}"
            )
        q, k, v = project_heads(self.qkv, x, self.n_heads)  # each (batch, H, L, d_head)
        if self.fused and causal and given is None and can_run(q, k, v, None):
            z = self._relative_logits_path(q, k, v)
            y = self.out(merge_heads(z))  # (batch, L, dim)
            return y.squeeze(0) if unbatched else y
        index = relative_indices(positions, positions, self.max_offset)  # (L, L)
        a_k = self.key_table(index).to(x.dtype)  # (L, L, d_head): a^K for each (m, n)
        bias = torch.einsum("bhmd,mnd->bhmn", q, a_k) / math.sqrt(q.shape[-1])  # q_m·a^K_r/√d
        weights = attention_weights(q, k, bias=bias, causal=causal)  # (batch, H, L, L)
        z = weights @ v  # Σ_n α_mn v_n
        if self.value_table is not None:
            z = z + torch.einsum("bhmn,mnd->bhmd", weights, self.value_table(index).to(x.dtype))
        y = self.out(merge_heads(z))  # (batch, L, dim)
        return y.squeeze(0) if unbatched else y

    def _relative_logits_path(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor
    ) -> torch.Tensor:
        """Causal, positions 0..L-1: the kernel reads q_m · a^K_r / √d by offset r = 0..K
        (the last shared by every r >= K) and returns the weight per clipped offset."""
        rows = slice(self.max_offset, None)  # offsets r = 0 .. K: rows K .. 2K of the tables
        a_k = self.key_table.weight[rows].to(q.dtype)  # (K + 1, d_head)
        logits = q @ a_k.T / math.sqrt(q.shape[-1])  # (batch, H, L, K + 1): relative logits
        if self.value_table is None:
            return bias_attention(q, k, v, logits)  # Σ_n α_mn v_n
        z, weights = bias_attention(q, k, v, logits, with_bins=True)  # W: (batch, H, L, K + 1)
        return z + weights @ self.value_table.weight[rows].to(q.dtype)  # + Σ_r W_mr a^V_r


def _check_buckets(num_buckets: int, max_distance: int, bidirectional: bool) -> tuple[int, int]:
    num_buckets = validate_int("num_buckets", num_buckets, minimum=2)
    max_distance = validate_int("max_distance", max_distance, minimum=1)
    if bidirectional and num_buckets % 2:
        raise ValueError(f"num_buckets must be even in the bidirectional mode, got {num_buckets}")
    per_side = num_buckets // 2 if bidirectional else num_buckets
    max_exact = per_side // 2
    if max_exact < 1:
        raise ValueError(f"num_buckets={num_buckets} leaves no exact buckets; use at least 4")
    if max_distance <= max_exact:
        raise ValueError(
            f"max_distance must exceed the exact range ({max_exact} offsets), got {max_distance}"
        )
    return per_side, max_exact


def t5_bucket(
    offset: torch.Tensor,
    bidirectional: bool = True,
    num_buckets: int = 32,
    max_distance: int = 128,
    *,
    log_dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """T5's relative-position bucket for each offset r = m - n (the book's sign); long tensor.

    Per direction, ``num_buckets`` (halved in the bidirectional mode) buckets: the
    first half exact (|r| = 0, 1, ..., max_exact - 1), the rest logarithmic,
    bucket = max_exact + ⌊log(|r| / max_exact) / log(max_distance / max_exact) ·
    (buckets - max_exact)⌋, capped at the last bucket (so every |r| >= max_distance
    shares one). Bidirectional: keys after the query (r < 0) use the upper half.
    Causal: r < 0 maps to 0. The logarithm is taken in float32, as in T5 and
    ``transformers``, so bucket edges agree exactly; ``log_dtype=torch.float64`` gives what a
    float64 logarithm makes of them (it moves a distance that sits exactly on an edge, such
    as |r| = 8, 16, 64 with 18 buckets, into the bucket below). Chapter 6.
    """
    validate_tensor("offset", offset, min_ndim=0)
    if offset.is_floating_point():
        raise TypeError(f"offset must be an integer tensor, got {offset.dtype}")
    if log_dtype not in (torch.float32, torch.float64):
        raise ValueError(f"log_dtype must be torch.float32 or torch.float64, got {log_dtype}")
    per_side, max_exact = _check_buckets(num_buckets, max_distance, bidirectional)
    offset = offset.long()
    bucket = torch.zeros_like(offset)
    if bidirectional:
        bucket = bucket + (offset < 0).long() * per_side  # keys after the query: upper half
        distance = offset.abs()
    else:
        distance = offset.clamp(min=0)  # keys after the query are masked anyway
    is_exact = distance < max_exact
    scaled = torch.log(distance.to(log_dtype) / max_exact) / math.log(max_distance / max_exact)
    logarithmic = (max_exact + (scaled * (per_side - max_exact)).long()).clamp(max=per_side - 1)
    return bucket + torch.where(is_exact, distance, logarithmic)


def t5_bucket_ranges(
    num_buckets: int = 32, max_distance: int = 128, *, bidirectional: bool = True
) -> list[tuple[int, int, int | None]]:
    """(bucket, first |r|, last |r| or None: unbounded) for keys at or before the query (r >= 0)."""
    per_side, _ = _check_buckets(num_buckets, max_distance, bidirectional)
    distances = torch.arange(0, 4 * max_distance + 1)
    buckets = t5_bucket(distances, bidirectional, num_buckets, max_distance)
    ranges = []
    for bucket in range(per_side):
        hits = distances[buckets == bucket]
        if hits.numel():
            last = None if bucket == per_side - 1 else int(hits.max())
            ranges.append((bucket, int(hits.min()), last))
    return ranges


class T5Bias(nn.Module):
    """One learned scalar per (bucket, head), added to the attention scores (T5).

    ``forward(q_len, k_len, start=None)`` returns the bias (n_heads, q_len, k_len) for
    queries at positions start .. start + q_len - 1 (by default the last q_len
    positions, as when decoding with a cache) and keys at 0 .. k_len - 1. T5 computes
    it once, in the first layer, and every layer reuses it. Chapter 6.
    """

    def __init__(
        self,
        n_heads: int,
        *,
        bidirectional: bool = True,
        num_buckets: int = 32,
        max_distance: int = 128,
    ) -> None:
        super().__init__()
        self.n_heads = validate_int("n_heads", n_heads, minimum=1)
        _check_buckets(num_buckets, max_distance, bidirectional)
        self.bidirectional, self.num_buckets, self.max_distance = (
            bidirectional,
            num_buckets,
            max_distance,
        )
        self.bias = nn.Embedding(num_buckets, n_heads)

    def table(self, k_len: int) -> torch.Tensor | None:
        """The causal bias per offset r = 0 .. nb - 1, shape (n_heads, nb), or None
        (bidirectional). nb = min(k_len, r_last + 1), r_last the first offset of the last
        bucket, which every farther offset shares (113 for 32 buckets up to 128): what
        :mod:`pe_book.bias_attention` reads inside its kernel. Chapter 12."""
        if self.bidirectional:
            return None
        k_len = validate_int("k_len", k_len, minimum=1)
        offsets = torch.arange(self.max_distance + 1)
        buckets = t5_bucket(offsets, False, self.num_buckets, self.max_distance)
        last = int(torch.nonzero(buckets == self.num_buckets - 1)[0])  # r_last
        n_bins = min(k_len, last + 1)
        return self.bias(buckets[:n_bins].to(self.bias.weight.device)).T  # (n_heads, nb)

    def forward(self, q_len: int, k_len: int, start: int | None = None) -> torch.Tensor:
        q_len = validate_int("q_len", q_len, minimum=1)
        k_len = validate_int("k_len", k_len, minimum=q_len)
        first = query_start(q_len, k_len, start)  # position of the first query
        query = torch.arange(first, first + q_len)[:, None]  # m
        key = torch.arange(k_len)[None, :]  # n
        buckets = t5_bucket(query - key, self.bidirectional, self.num_buckets, self.max_distance)
        return self.bias(buckets).permute(2, 0, 1)  # (n_heads, q_len, k_len)


@register("shaw")
class ShawPositions(PositionMethod):
    """Shaw et al. in chapter 11's model: every layer is a ShawAttention (its own tables)."""

    fast_path = "relative logits and weights per offset in pe_book's kernel"

    def make_attention(self, config: ModelConfig) -> nn.Module:
        return ShawAttention(config.dim, config.n_heads, config.shaw_max_offset, fused=config.fused)

    def layer_inputs(self, seq_len: int, dtype: torch.dtype) -> dict[str, object]:
        return {}  # the relative embeddings live inside each layer


@register("t5")
class T5Positions(ScoreBiasMethod):
    """T5 in chapter 11's model: one learned causal bias, built once per call, shared by layers."""

    fast_path = "bucket value per offset read in pe_book's attention kernel"

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        self.bias = T5Bias(config.n_heads, bidirectional=False, max_distance=config.t5_max_distance)
