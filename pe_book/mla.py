"""Multi-head Latent Attention's decoupled RoPE (DeepSeek-V2, 2024). Chapter 13.

DeepSeek-AI, *DeepSeek-V2: A Strong, Economical, and Efficient Mixture-of-Experts
Language Model*, arXiv 2405.04434, sections 2.1.2-2.1.4, eqs. (9)-(19), Table 1
(all of MLA at once: Appendix C, eqs. (37)-(47)).

MLA caches one latent c_n = W^DKV h_n of d_c numbers per token (eq. 9) instead of
H keys and H values; head h rebuilds them as k^C_{n,h} = W^UK_h c_n and
v^C_{n,h} = W^UV_h c_n (eqs. 10-11). The content score then reads

    q^C_{m,h} · k^C_{n,h} = q^C_{m,h}ᵀ W^UK_h c_n = (W^UK_hᵀ q^C_{m,h}) · c_n,

so W^UK can be *absorbed* into the query and attention runs on the cache itself
(:meth:`MLAAttention.content_scores`). RoPE on k^C would put a rotation between
the two: (R_m q)ᵀ R_n W^UK_h c_n = qᵀ R_{n-m} W^UK_h c_n, a matrix that changes with
the key position n, so no single absorbed query serves every cached key ("matrix
multiplication does not obey a commutative law", §2.1.3). The fix, eqs. (14)-(18):
position travels in separate parts, d_h^R per head for queries and *one* key
shared by all heads,

    q^R_{m,h} = RoPE_m(W^QR_h h_m),   k^R_n = RoPE_n(W^KR h_n),
    score_h(m, n) = (q^C_{m,h} · k^C_{n,h} + q^R_{m,h} · k^R_n) / √(d_h + d_h^R),

so the cache per token and layer is c_n and k^R_n: d_c + d_h^R numbers against
multi-head attention's 2 H d_h (Table 1). DeepSeek-V2 (§3.1.2): d_c = 512,
d_h^R = 64, H = 128 heads of d_h = 128: 576 against 32768, 512/9 ≈ 56.9 times less
(the abstract's "93.3%" compares with DeepSeek 67B, another model).

Where this module and DeepSeek's code part from the equations:

- Queries are not compressed: q^C = W^Q h and q^R = RoPE(W^QR h), as in
  DeepSeek-V2-Lite (``q_lora_rank=None``); the paper routes both through
  c^Q = W^DQ h (eqs. 12-14). The cache and the form of the scores are unchanged.
- The equations do not normalise c_n; DeepSeek-V2 adds RMSNorm "after the compressed
  latent vectors" (§3.1.2), as its code does (``kv_norm``, Hugging Face
  ``kv_a_layernorm``). ``latent_norm`` is an ``nn.Identity`` one may replace by it.
- Pairs: DeepSeek's code rotates (2i, 2i+1) as complex numbers (DeepSeek-V3
  ``inference/model.py`` and Hugging Face ``DeepseekV2``'s ``apply_rotary_emb``):
  ``layout="interleaved"``. Hugging Face ``DeepseekV3`` with ``rope_interleave=True``
  rotates the same pairs but writes them de-interleaved, [rotated evens | rotated
  odds], i.e. permutes q^R and k^R alike by ``sinusoidal.layout_permutation``
  (2i -> i, 2i+1 -> i + d/2), which leaves every q^R · k^R unchanged;
  ``rope_interleave=False`` is ``layout="half"``.
- YaRN, which DeepSeek-V2 applies to the decoupled parts (§3.1.4), is left out: θ_i = b^(-2i/d_h^R).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from pe_book._validate import (
    validate_base,
    validate_broadcast,
    validate_choice,
    validate_dtype,
    validate_int,
    validate_tensor,
)
from pe_book.attention import attention, merge_heads, split_heads
from pe_book.rope import Rope
from pe_book.sinusoidal import LAYOUTS

__all__ = ["MLAAttention", "gqa_cache_floats", "mha_cache_floats", "mla_cache_floats"]


def mla_cache_floats(d_latent: int, d_rope: int) -> int:
    """MLA's cache per token and layer, d_c + d_h^R numbers (DeepSeek-V2, Table 1)."""
    return validate_int("d_latent", d_latent, minimum=1) + validate_int(
        "d_rope", d_rope, minimum=2, even=True
    )


def mha_cache_floats(n_heads: int, d_head: int) -> int:
    """Multi-head attention's cache per token and layer, 2 H d_h numbers (Table 1)."""
    return (
        2 * validate_int("n_heads", n_heads, minimum=1) * validate_int("d_head", d_head, minimum=1)
    )


def gqa_cache_floats(n_kv_heads: int, d_head: int) -> int:
    """Grouped-query attention's cache per token and layer, 2 n_g d_h numbers. Chapter 13.

    n_g = ``n_kv_heads`` key/value heads shared by groups of query heads (Table 1's GQA);
    n_g = H is multi-head attention (:func:`mha_cache_floats`), n_g = 1 multi-query.
    """
    return (
        2
        * validate_int("n_kv_heads", n_kv_heads, minimum=1)
        * validate_int("d_head", d_head, minimum=1)
    )


class MLAAttention(nn.Module):
    """Causal multi-head latent attention with decoupled RoPE, eqs. (9)-(11), (14)-(19).

    Weights, named after the paper's matrices (``nn.Linear``, no bias):
    ``w_dkv`` W^DKV (d_c × dim), ``w_uk``/``w_uv`` W^UK, W^UV (H d_h × d_c),
    ``w_kr`` W^KR (d_h^R × dim), ``w_q`` W^Q (H d_h × dim; uncompressed, see the
    module docstring), ``w_qr`` W^QR (H d_h^R × dim), ``w_o`` W^O (dim × H d_h).
    Rotation: a :class:`~pe_book.rope.Rope` of dimension d_h^R, ``layout`` as there.

    ``forward(x, start=None, cache=None)``: x (batch, L, dim) or (L, dim) -> same
    shape. Token i of x sits at position start + i. Without a cache, start defaults
    to 0 (any start gives the same output: only q^R · k^R sees positions, through
    m - n). ``cache`` = (c, k^R) of the tokens at positions 0 .. k0 - 1, as returned
    by :meth:`latent`, shapes (batch, k0, d_c) and (batch, k0, d_h^R); then start
    defaults to, and must equal, k0 (the book's start = k_len - q_len).
    """

    def __init__(
        self,
        dim: int,
        n_heads: int,
        d_latent: int,
        d_head: int,
        d_rope: int,
        base: float = 10000.0,
        *,
        layout: str = "interleaved",
        max_len: int = 2048,
    ) -> None:
        super().__init__()
        self.dim = validate_int("dim", dim, minimum=1)
        self.n_heads = validate_int("n_heads", n_heads, minimum=1)
        self.d_latent = validate_int("d_latent", d_latent, minimum=1)
        self.d_head = validate_int("d_head", d_head, minimum=1)
        self.d_rope = validate_int("d_rope", d_rope, minimum=2, even=True)
        layout = validate_choice("layout", layout, LAYOUTS)
        heads_dim, rope_dim = n_heads * d_head, n_heads * d_rope
        self.w_dkv = nn.Linear(dim, d_latent, bias=False)  # (9)   c = W^DKV h
        self.w_uk = nn.Linear(d_latent, heads_dim, bias=False)  # (10)  k^C = W^UK c
        self.w_uv = nn.Linear(d_latent, heads_dim, bias=False)  # (11)  v^C = W^UV c
        self.w_kr = nn.Linear(dim, d_rope, bias=False)  # (15)  k^R = RoPE(W^KR h)
        self.w_q = nn.Linear(dim, heads_dim, bias=False)  # q^C = W^Q h
        self.w_qr = nn.Linear(dim, rope_dim, bias=False)  # (14)  q^R = RoPE(W^QR h)
        self.w_o = nn.Linear(heads_dim, dim, bias=False)  # (19)
        self.latent_norm: nn.Module = nn.Identity()  # DeepSeek-V2: an RMSNorm (§3.1.2)
        self.rope = Rope(d_rope, validate_base(base), layout, max_len=max_len)

    @property
    def cache_floats_per_token(self) -> int:
        """d_c + d_h^R: what :meth:`latent` returns per token."""
        return mla_cache_floats(self.d_latent, self.d_rope)

    @property
    def mha_cache_floats_per_token(self) -> int:
        """2 H d_h: the keys and values multi-head attention of the same heads would cache."""
        return mha_cache_floats(self.n_heads, self.d_head)

    def _batched(self, x: torch.Tensor) -> tuple[torch.Tensor, bool]:
        validate_tensor("x", x, ndim=(2, 3), floating=True, last_dim=self.dim)
        validate_dtype("x", x, self.w_q.weight.dtype, "the layer's weights")
        return (x.unsqueeze(0), True) if x.ndim == 2 else (x, False)

    def latent(self, x: torch.Tensor, start: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
        """The cache entries of x's tokens at positions start ..: c (eq. 9) and k^R (eq. 15).

        Shapes (batch, L, d_c) and (batch, L, d_h^R); x (batch, L, dim) or (L, dim).
        """
        x, _ = self._batched(x)
        start = validate_int("start", start, minimum=0)
        return self.latent_norm(self.w_dkv(x)), self.rope(self.w_kr(x), start)

    def queries(self, x: torch.Tensor, start: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
        """q^C (batch, H, L, d_h) and the rotated q^R (batch, H, L, d_h^R), eq. (14)."""
        x, _ = self._batched(x)
        start = validate_int("start", start, minimum=0)
        q_rope = split_heads(self.w_qr(x), self.n_heads)  # (batch, H, L, d_h^R)
        return split_heads(self.w_q(x), self.n_heads), self.rope(q_rope, start)

    def content_scores(
        self, q_content: torch.Tensor, latent: torch.Tensor, *, absorb: bool = False
    ) -> torch.Tensor:
        """q^C_{m,h} · k^C_{n,h}, unscaled, (batch, H, q_len, k_len), two ways.

        ``absorb=False`` rebuilds every key, k^C_{n,h} = W^UK_h c_n (eq. 10);
        ``absorb=True`` moves W^UK into the query, (W^UK_hᵀ q^C_{m,h}) · c_n, and never
        forms a key: the same numbers to rounding, read straight from the cache.
        q_content (batch, H, q_len, d_h), latent (batch, k_len, d_c).
        """
        validate_tensor("q_content", q_content, ndim=4, floating=True, last_dim=self.d_head)
        validate_tensor("latent", latent, ndim=3, floating=True, last_dim=self.d_latent)
        for name, value in (("q_content", q_content), ("latent", latent)):
            validate_dtype(name, value, self.w_uk.weight.dtype, "the layer's weights")
        if q_content.shape[1] != self.n_heads:
            raise ValueError(
                f"q_content must have n_heads = {self.n_heads} heads (dim 1), "
                f"got shape {tuple(q_content.shape)}"
            )
        batches = {"q_content": q_content.shape[:1], "latent": latent.shape[:1]}
        validate_broadcast(batches, "have batch sizes (dim 0) that broadcast together")
        if absorb:
            w_uk = self.w_uk.weight.view(self.n_heads, self.d_head, self.d_latent)  # W^UK_h
            q_latent = torch.einsum("bhqd,hdc->bhqc", q_content, w_uk)  # (batch, H, q_len, d_c)
            return q_latent @ latent.unsqueeze(1).transpose(-2, -1)
        k_content = split_heads(self.w_uk(latent), self.n_heads)  # (batch, H, k_len, d_h)
        return q_content @ k_content.transpose(-2, -1)

    def scores(self, x: torch.Tensor, start: int = 0) -> torch.Tensor:
        """Eq. (18)'s logits before mask and softmax, (batch, H, L, L) (unbatched: (H, L, L)).

        (q^C · k^C + q^R · k^R) / √(d_h + d_h^R), the two parts computed apart.
        """
        x, unbatched = self._batched(x)
        q_content, q_rope = self.queries(x, start)
        latent, k_rope = self.latent(x, start)
        rope_part = q_rope @ k_rope.unsqueeze(1).transpose(-2, -1)  # one k^R for all heads
        logits = (self.content_scores(q_content, latent) + rope_part) / math.sqrt(
            self.d_head + self.d_rope
        )
        return logits.squeeze(0) if unbatched else logits

    def forward(
        self,
        x: torch.Tensor,
        start: int | None = None,
        cache: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> torch.Tensor:
        x, unbatched = self._batched(x)
        cached = self._check_cache(cache, x)
        if start is None:
            start = cached
        start = validate_int("start", start, minimum=0)
        if cache is not None and start != cached:
            raise ValueError(f"start must equal the cache's length {cached}, got {start}")
        q_content, q_rope = self.queries(x, start)  # (batch, H, q_len, d_h), (.., d_h^R)
        latent, k_rope = self.latent(x, start)  # (batch, q_len, d_c), (batch, q_len, d_h^R)
        if cache is not None:
            latent, k_rope = torch.cat((cache[0], latent), 1), torch.cat((cache[1], k_rope), 1)
        keys = torch.cat(  # (17): [k^C_{n,h}; k^R_n], k^R repeated for every head
            (
                split_heads(self.w_uk(latent), self.n_heads),
                k_rope.unsqueeze(1).expand(-1, self.n_heads, -1, -1),
            ),
            dim=-1,
        )  # (batch, H, k_len, d_h + d_h^R)
        queries = torch.cat((q_content, q_rope), dim=-1)  # (16)
        values = split_heads(self.w_uv(latent), self.n_heads)  # (batch, H, k_len, d_h)
        out = attention(queries, keys, values, causal=True)  # (18): scale 1/√(d_h + d_h^R)
        y = self.w_o(merge_heads(out))  # (19), (batch, q_len, dim)
        return y.squeeze(0) if unbatched else y

    def _check_cache(self, cache: tuple[torch.Tensor, torch.Tensor] | None, x: torch.Tensor) -> int:
        """The number of cached tokens (0 without a cache), after checking the cache's shapes."""
        if cache is None:
            return 0
        if not isinstance(cache, tuple) or len(cache) != 2:
            raise TypeError("cache must be a tuple (latent, k_rope) as returned by latent()")
        latent, k_rope = cache
        validate_tensor("cache latent", latent, ndim=3, floating=True, last_dim=self.d_latent)
        validate_tensor("cache k_rope", k_rope, ndim=3, floating=True, last_dim=self.d_rope)
        for name, value in (("cache latent", latent), ("cache k_rope", k_rope)):
            validate_dtype(name, value, x.dtype, "x")
        if x.shape[1] == 0:
            raise ValueError(
                f"x must hold at least one new token with a cache, got {tuple(x.shape)}"
            )
        if latent.shape[:2] != k_rope.shape[:2] or latent.shape[0] != x.shape[0]:
            raise ValueError(
                "cache latent and k_rope must be (batch, k0, .) with x's batch "
                f"{x.shape[0]}, got {tuple(latent.shape)} and {tuple(k_rope.shape)}"
            )
        return latent.shape[1]
