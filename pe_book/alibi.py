"""ALiBi (chapter 9): no position vectors, a penalty linear in distance, one slope per head.

Press, Smith and Lewis, *Train Short, Test Long* (ICLR 2022). Head h adds

    bias_h(m, n) = -s_h · (m - n)          (causal: keys at or before the query)
    bias_h(m, n) = -s_h · |m - n|          (bidirectional variant)

to the score of query position m and key position n (the book's r = m - n).
The slopes s_h form a geometric sequence: for a power of two n_heads = 2^k,

    s_h = 2^(-8 (h + 1) / n_heads),        h = 0 .. n_heads - 1,

i.e. start and ratio both 2^(-8/n_heads). For other head counts the official
code takes the n0 = 2^floor(log2 n_heads) slopes of n0 heads and fills the
remaining n_heads - n0 with every other slope of 2 n0 heads (the ones that
fall between the first set's): s = 2^(-4 (2j + 1) / n0), j = 0, 1, ...
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import torch

from pe_book._validate import validate_int, validate_tensor
from pe_book.attention import attention, query_start
from pe_book.positions import ModelConfig, PositionMethod, register

__all__ = [
    "alibi_attention",
    "alibi_bias",
    "alibi_reach",
    "alibi_slopes",
    "alibi_table",
    "bias_only_weights",
    "extra_coordinate_attention",
    "flex_alibi_attention",
    "flex_attention_available",
    "mean_distance",
    "row_constant_bias",
]


def _power_of_two_slopes(n: int) -> list[float]:
    return [2.0 ** (-8.0 * (h + 1) / n) for h in range(n)]


def alibi_slopes(n_heads: int) -> torch.Tensor:
    """The paper's slopes s_h for ``n_heads`` heads, float64, shape (n_heads,). Chapter 9.

    Power of two: s_h = 2^(-8 (h+1) / n). Otherwise, with n0 = 2^floor(log2 n):
    the n0 slopes of n0 heads, then 2^(-4 (2j+1) / n0) for j < n - n0 (the
    interleaved slopes of 2 n0 heads), as in the official ``get_slopes``.
    """
    n_heads = validate_int("n_heads", n_heads, minimum=1)
    n0 = 2 ** math.floor(math.log2(n_heads))
    slopes = _power_of_two_slopes(n0)
    slopes += _power_of_two_slopes(2 * n0)[0::2][: n_heads - n0]
    return torch.tensor(slopes, dtype=torch.float64)


def _check_slopes(slopes: torch.Tensor) -> torch.Tensor:
    validate_tensor("slopes", slopes, ndim=1, floating=True)
    if not bool(torch.isfinite(slopes).all()) or bool((slopes < 0).any()):
        raise ValueError("slopes must be finite and >= 0 (one per head)")
    return slopes


def alibi_bias(
    q_len: int,
    k_len: int,
    slopes: torch.Tensor,
    *,
    causal: bool = True,
    start: int | None = None,
) -> torch.Tensor:
    """ALiBi bias of shape (n_heads, q_len, k_len), in the slopes' dtype. Chapter 9.

    Query i sits at position m = start + i and key j at n = j; the default
    ``start = k_len - q_len`` puts the queries at the end of the keys (decoding
    with a KV cache), as ``pe_book.attention.causal_mask`` does.

    causal=True: -s_h (m - n). Entries with n > m hold positive values; they are
    meant to be hidden by a causal mask (``alibi_attention`` applies one).
    causal=False: -s_h |m - n|, symmetric in the offset r = m - n.
    """
    q_len = validate_int("q_len", q_len, minimum=1)
    k_len = validate_int("k_len", k_len, minimum=1)
    slopes = _check_slopes(slopes)
    if start is None:
        start = query_start(q_len, k_len)
    start = validate_int("start", start, minimum=0)
    m = torch.arange(q_len, dtype=slopes.dtype)[:, None] + start  # (q_len, 1)
    n = torch.arange(k_len, dtype=slopes.dtype)[None, :]  # (1, k_len)
    distance = m - n if causal else (m - n).abs()  # (q_len, k_len)
    return -slopes[:, None, None] * distance  # (n_heads, q_len, k_len)


def alibi_table(k_len: int, slopes: torch.Tensor) -> torch.Tensor:
    """The causal bias per offset, -s_h · r for r = 0 .. k_len - 1: shape (n_heads, k_len).

    What :func:`alibi_bias` holds on and below the diagonal, one row per head instead of
    an L × L matrix; :mod:`pe_book.bias_attention` reads it inside its kernel. Chapter 12.
    """
    k_len = validate_int("k_len", k_len, minimum=1)
    slopes = _check_slopes(slopes)
    return -slopes[:, None] * torch.arange(k_len, dtype=slopes.dtype)  # (n_heads, k_len)


def row_constant_bias(k_len: int, slopes: torch.Tensor) -> torch.Tensor:
    """The official causal code's bias +s_h · n, shape (n_heads, 1, k_len). Chapter 9.

    The same row for every query: it differs from -s_h (m - n) by s_h · m, a
    constant within row m, which softmax ignores. So it equals ALiBi only where
    the keys after the query are masked (causal attention); without a mask it
    rewards keys far *after* the query.
    """
    k_len = validate_int("k_len", k_len, minimum=1)
    slopes = _check_slopes(slopes)
    n = torch.arange(k_len, dtype=slopes.dtype)
    return (slopes[:, None] * n)[:, None, :]


def alibi_reach(slopes: torch.Tensor, nats: float = 10.0) -> torch.Tensor:
    """Smallest integer distance r with s_h · r >= nats, per head (int64). Chapter 9.

    The bias alone divides the weight of a key r positions back by e^(s_h r)
    relative to the query's own position; past the reach that factor exceeds
    e^nats (for 10 nats, about 22,000). A slope of 0 never gets there: ValueError.
    """
    slopes = _check_slopes(slopes)
    if not isinstance(nats, (int, float)) or isinstance(nats, bool) or not nats > 0:
        raise ValueError(f"nats must be a number > 0, got {nats!r}")
    if bool((slopes == 0).any()):
        raise ValueError("slopes must be > 0 for a finite reach")
    reach = torch.ceil(nats / slopes.double())
    # guard the rounding of nats / s_h: the smallest r that truly passes
    below = (reach - 1) * slopes.double() >= nats
    return (reach - below.double()).to(torch.int64)


def bias_only_weights(slopes: torch.Tensor, m: int) -> torch.Tensor:
    """Attention weights of a query at position m over keys n = 0 .. m from the bias alone.

    What head h does when q · k is the same for every key: weights
    w_h(r) = e^(-s_h r) / sum_{r'=0}^{m} e^(-s_h r'), indexed by the distance
    r = m - n (column r). Shape (n_heads, m + 1), float64. Chapter 9.
    """
    slopes = _check_slopes(slopes).double()
    m = validate_int("m", m, minimum=0)
    distance = torch.arange(m + 1, dtype=torch.float64)
    return torch.softmax(-slopes[:, None] * distance, dim=-1)


def mean_distance(slopes: torch.Tensor, m: int) -> torch.Tensor:
    """Mean distance of the bias-only weights of a query at position m, per head. Chapter 9.

    r̄_h(m) = sum_{r=0}^{m} r w_h(r) with w_h from :func:`bias_only_weights`; for
    s_h > 0 it tends to 1/(e^(s_h) - 1) as m grows (chapter 9 proves the closed
    form), and for s_h = 0 it is m/2. Shape (n_heads,), float64.
    """
    weights = bias_only_weights(slopes, m)
    return weights @ torch.arange(weights.shape[-1], dtype=torch.float64)


def flex_attention_available() -> bool:
    """True if PyTorch's FlexAttention (torch >= 2.5) can be imported here."""
    try:
        from torch.nn.attention import flex_attention  # noqa: F401
    except ImportError:
        return False
    return True


@functools.cache
def _compiled_flex() -> Callable[..., torch.Tensor]:
    from torch.nn.attention.flex_attention import flex_attention

    return torch.compile(flex_attention, dynamic=False)


@functools.lru_cache(maxsize=32)
def _block_mask(q_len: int, k_len: int, device: str, block_size: int) -> object:
    from torch.nn.attention.flex_attention import create_block_mask

    start = query_start(q_len, k_len)

    def sees(b: torch.Tensor, h: torch.Tensor, i: torch.Tensor, j: torch.Tensor) -> torch.Tensor:
        return j <= i + start

    return create_block_mask(sees, None, None, q_len, k_len, device=device, BLOCK_SIZE=block_size)


def flex_alibi_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    slopes: torch.Tensor,
    *,
    causal: bool = True,
    block_size: int = 128,
) -> torch.Tensor:
    """ALiBi through PyTorch's FlexAttention: the bias is a ``score_mod`` applied to each
    score inside a kernel that ``torch.compile`` generates (seconds per new shape, then
    cached); a block mask of ``block_size`` skips the blocks above the diagonal. No L × L
    tensor; forward only on the CPU (torch 2.13 has no CPU backward). Chapter 12."""
    validate_tensor("q", q, ndim=4, floating=True)
    if causal and q.shape[-2] > k.shape[-2]:
        raise ValueError(f"q_len must be <= k_len when causal, got {q.shape[-2]} > {k.shape[-2]}")
    start = query_start(q.shape[-2], k.shape[-2])
    s = _check_slopes(slopes).to(q.dtype)

    def score_mod(
        score: torch.Tensor, b: torch.Tensor, h: torch.Tensor, i: torch.Tensor, j: torch.Tensor
    ) -> torch.Tensor:
        distance = i + start - j
        return score - s[h] * (distance if causal else distance.abs())

    block_mask = (
        _block_mask(q.shape[-2], k.shape[-2], str(q.device), block_size) if causal else None
    )
    return _compiled_flex()(q, k, v, score_mod=score_mod, block_mask=block_mask)


def extra_coordinate_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, slopes: torch.Tensor
) -> torch.Tensor:
    """Causal ALiBi through PyTorch's plain causal attention, with two extra coordinates.

    In causal attention -s_h (m - n) = s_h n - s_h m, and s_h m is the same for every key
    of query m (:func:`row_constant_bias`). So q_m gains the coordinates (1, -s_h m) and
    k_n gains (s_h n, 1): their product adds s_h n - s_h m = -s_h (m - n) to q_m · k_n, and
    ``scaled_dot_product_attention(is_causal=True)`` runs unchanged (v gains two zero
    columns: its kernel wants one head size). The coordinates come *first*, and q is
    scaled by 1/√d beforehand (``scale=1``): the matrix product adds s_h n - s_h m
    (each exact for power-of-two slopes) before q · k, so the logits that matter stay
    small; placed last, q · k would be rounded at the size of s_h m, up to s_h L
    (tests/test_alibi.py measures both). q_len = k_len only. Chapter 12.
    """
    validate_tensor("q", q, ndim=4, floating=True)
    batch, heads, seq_len, dim = q.shape
    if k.shape[-2] != seq_len:
        raise ValueError(f"q_len must equal k_len, got {seq_len} and {k.shape[-2]}")
    s = _check_slopes(slopes).to(q.dtype)[:, None]  # (H, 1)
    position = torch.arange(seq_len, dtype=q.dtype)
    ones = torch.ones(heads, seq_len, dtype=q.dtype)
    q_extra = torch.stack((ones, -s * position), -1).expand(batch, -1, -1, -1)  # (B, H, L, 2)
    k_extra = torch.stack((s * position, ones), -1).expand(batch, -1, -1, -1)
    q2 = torch.cat((q_extra, q / math.sqrt(dim)), -1)  # (B, H, L, d + 2)
    k2 = torch.cat((k_extra, k), -1)
    v2 = torch.nn.functional.pad(v, (0, 2))
    out = torch.nn.functional.scaled_dot_product_attention(q2, k2, v2, is_causal=True, scale=1.0)
    return out[..., : v.shape[-1]]


def alibi_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    slopes: torch.Tensor,
    *,
    causal: bool = True,
    fused: bool = False,
) -> torch.Tensor:
    """softmax(q kᵀ/√d + ALiBi bias [+ causal mask]) v. Chapter 9.

    Shapes: q (B, H, q_len, d), k (B, H, k_len, d), v (B, H, k_len, d_v),
    slopes (H,); returns (B, H, q_len, d_v). Queries sit at the end of the
    keys (KV-cache decoding), matching ``attention(causal=True)``.

    fused=False holds an (H, q_len, k_len) bias in memory: simple, for teaching.
    fused=True never stores it: causal attention reads the bias per offset,
    :func:`alibi_table`, inside pe_book's kernel (:mod:`pe_book.bias_attention`,
    chapter 12; forward and backward); the bidirectional variant uses FlexAttention
    (:func:`flex_alibi_attention`, forward only on the CPU) where it can be imported.
    """
    validate_tensor("q", q, min_ndim=3, floating=True)
    slopes = _check_slopes(slopes)
    if slopes.shape[0] != q.shape[-3]:
        raise ValueError(
            f"slopes must have one entry per head: q has {q.shape[-3]} heads (dim -3), "
            f"got {slopes.shape[0]} slopes"
        )
    if fused and causal and q.dim() == 4:
        from pe_book.bias_attention import bias_attention

        table = alibi_table(k.shape[-2], slopes.to(q.dtype))  # (H, k_len)
        return bias_attention(q, k, v, table[None, :, None, :])
    if fused and flex_attention_available():
        return flex_alibi_attention(q, k, v, slopes, causal=causal)
    bias = alibi_bias(q.shape[-2], k.shape[-2], slopes.to(q.dtype), causal=causal)
    return attention(q, k, v, bias=bias, causal=causal)


@register("alibi")
class AlibiPositions(PositionMethod):
    """ALiBi in chapter 11's model: the bias -s_h (m - n) on every layer's scores, no parameters."""

    fast_path = "bias per offset read in pe_book's attention kernel"
    slopes: torch.Tensor

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        self.register_buffer("slopes", alibi_slopes(config.n_heads).float(), persistent=False)

    def score_bias(
        self, q_len: int, k_len: int, dtype: torch.dtype, start: int | None = None
    ) -> torch.Tensor:
        return alibi_bias(q_len, k_len, self.slopes.to(dtype), start=start)  # (H, q, k)

    def relative_bias(self, k_len: int, dtype: torch.dtype) -> torch.Tensor:
        return alibi_table(k_len, self.slopes.to(dtype))  # (H, k_len): -s_h r
