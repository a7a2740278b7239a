"""iRoPE, Llama 4's layer plan: RoPE layers with chunked attention interleaved with NoPE layers.

Chapter 13 (and chapter 11's iRoPE model). Meta, "The Llama 4 herd" (blog post, April
2025); there is no paper, so the reference is the released code: Meta's ``llama-models``
(``models/llama4/model.py``, ``args.py``) and Hugging Face transformers
(``models/llama4/modeling_llama4.py``, ``configuration_llama4.py``).
What that code does, and what this module provides:

- **Which layers rotate** (:func:`rope_layers`): layer l (0-based) is a NoPE layer,
  with no position information at all, when (l + 1) mod ``interval`` = 0, so with the
  released interval 4 layers 3, 7, 11, ... are NoPE and the other three in four use RoPE
  (interleaved pairs, base 500000: ``pe_book.rope.apply_rope`` with ``layout="interleaved"``;
  Scout adds Llama 3 frequency scaling, factor 16).
- **Chunked local attention** (:func:`chunked_causal_mask`): the RoPE layers attend only
  within fixed chunks of ``attention_chunk_size`` tokens (transformers' default 8192):
  query m sees key n iff n <= m and floor(n / C) = floor(m / C). The NoPE layers keep
  full causal attention, so only they carry information across chunks.
- **Temperature tuning** (:func:`temperature_scale`, :func:`scale_queries`): at inference
  the NoPE layers multiply the query at position m by
  1 + attn_scale · log(1 + floor((m + 1) / floor_scale)). It resembles Nakanishi's
  Scalable-Softmax (2025, arXiv 2501.19399: s · log n, no floor; Meta cites no source),
  floored so short contexts are untouched.
- **q, k normalisation** (:func:`qk_norm`): the RoPE layers of Scout (``use_qk_norm``)
  divide q and k, after rotation, by their root mean square; NoPE layers do not.
"""

from __future__ import annotations

import math
import numbers

import torch
from torch import nn

from pe_book._validate import (
    validate_bool,
    validate_int,
    validate_mask,
    validate_positions,
    validate_positive_float,
    validate_tensor,
)
from pe_book.attention import MultiHeadSelfAttention, attention, causal_mask, merge_heads
from pe_book.positions import ModelConfig, PositionMethod, register
from pe_book.rope import Rope

__all__ = [
    "IRopeAttention",
    "IRopePositions",
    "chunked_attention",
    "chunked_causal_mask",
    "focused_weight",
    "qk_norm",
    "rope_layers",
    "scale_queries",
    "temperature_scale",
]


def rope_layers(n_layers: int, interval: int | None = 4) -> tuple[bool, ...]:
    """Which of ``n_layers`` layers rotate q and k: True = RoPE layer, False = NoPE layer.

    Layer l (0-based) is NoPE iff (l + 1) mod interval = 0, i.e. every ``interval``-th
    layer counted from 1 (Llama 4 uses interval 4: layers 3, 7, 11, ... are NoPE).
    ``interval=None`` means no NoPE layer (the default of Meta's ``ModelArgs``,
    ``nope_layer_interval: Optional[int] = None``); ``interval=1`` makes every layer NoPE.
    This is transformers' ``Llama4TextConfig.no_rope_layers`` (1 = uses RoPE, despite the
    name), ``int((l + 1) % no_rope_layer_interval != 0)``, and Meta's
    ``TransformerBlock.is_nope_layer``. Returns a tuple of n_layers bools.
    """
    n_layers = validate_int("n_layers", n_layers, minimum=0)
    if interval is None:
        return (True,) * n_layers
    interval = validate_int("interval", interval, minimum=1)
    return tuple((layer + 1) % interval != 0 for layer in range(n_layers))


def _check_attn_scale(attn_scale: object) -> float:
    if isinstance(attn_scale, bool) or not isinstance(attn_scale, numbers.Real):
        raise TypeError(
            f"attn_scale must be a real number, got {type(attn_scale).__name__} {attn_scale!r}"
        )
    attn_scale = float(attn_scale)
    if not (math.isfinite(attn_scale) and attn_scale >= 0):
        raise ValueError(f"attn_scale must be a finite number >= 0, got {attn_scale}")
    return attn_scale


def temperature_scale(
    positions: int | torch.Tensor, floor_scale: float = 8192.0, attn_scale: float = 0.1
) -> torch.Tensor:
    """Llama 4's factor on the NoPE layers' query at position m, float64, shape (L,).

        scale(m) = 1 + attn_scale · log(1 + floor((m + 1) / floor_scale))

    transformers writes ``log1p(floor((m + 1) / floor_scale)) * attn_scale + 1``, Meta
    ``log(floor((m + 1) / floor_scale) + 1) * attn_scale + 1``: the same number. It is
    exactly 1 while m + 1 < floor_scale, steps up where m + 1 reaches a multiple of
    floor_scale, and grows like attn_scale · log(m / floor_scale) far out, which keeps
    the NoPE layers' softmax from flattening as the number of keys grows (Scalable-Softmax,
    Nakanishi 2025, arXiv 2501.19399, multiplies by s · log n without the floor).
    Defaults: floor_scale 8192 and attn_scale 0.1, as in both reference codes.

    ``positions``: the query positions m (a 1-D integer tensor, or a length L for 0..L-1);
    when decoding, m = start + i with start the number of cached tokens. The reference
    code forms (m + 1) / floor_scale in float32; here it is float64, exact for every
    m + 1 < 2^53 (float32 agrees while m + 1 < 2^24).
    """
    m = validate_positions(positions, name="positions")
    if m.numel() and int(m.min()) < 0:
        raise ValueError(f"positions must be >= 0, got {int(m.min())}")
    floor_scale = validate_positive_float("floor_scale", floor_scale)
    attn_scale = _check_attn_scale(attn_scale)
    steps = torch.floor((m.to(torch.float64) + 1.0) / floor_scale)  # (L,)
    return 1.0 + attn_scale * torch.log1p(steps)


def scale_queries(
    q: torch.Tensor,
    *,
    start: int = 0,
    floor_scale: float = 8192.0,
    attn_scale: float = 0.1,
) -> torch.Tensor:
    """q multiplied row by row by :func:`temperature_scale` of its positions (NoPE layers).

    Shapes: q (..., q_len, d), e.g. (batch, H, q_len, d); query i sits at position
    m = start + i (``start`` = cached tokens when decoding). Returns q's shape and dtype;
    the factors are computed in float64 and rounded once to q's dtype.
    """
    validate_tensor("q", q, min_ndim=2, floating=True)
    start = validate_int("start", start, minimum=0)
    positions = torch.arange(q.shape[-2]) + start
    scale = temperature_scale(positions, floor_scale, attn_scale)  # (q_len,)
    return q * scale.to(device=q.device, dtype=q.dtype)[:, None]


def chunked_causal_mask(
    seq_len: int, chunk: int, *, q_len: int | None = None, start: int | None = None
) -> torch.Tensor:
    """Boolean mask of Llama 4's RoPE layers, shape (q_len, seq_len): True where query sees key.

    Query i at position m = start + i sees key n iff n <= m (``pe_book.attention.causal_mask``)
    and floor(n / chunk) = floor(m / chunk): tokens [0, C), [C, 2C), ... attend only within
    their own chunk. ``seq_len`` is the number of keys (tokens so far); ``q_len`` defaults
    to seq_len, ``start`` to seq_len - q_len (queries at the end, as when decoding).
    Equals Meta's ``create_chunked_attention_mask(seq_len, chunk)`` for q_len = seq_len and
    transformers' ``chunked_causal_mask_function`` (no padding) for any q_len.

    Meta's reference generation builds this mask only for passes of more than one token:
    a single-token decoding step gets no mask there, so its RoPE layers see the whole
    cache; transformers applies the chunk rule at every step, as this function does.
    """
    seq_len = validate_int("seq_len", seq_len, minimum=1)
    chunk = validate_int("chunk", chunk, minimum=1)
    q_len = seq_len if q_len is None else validate_int("q_len", q_len, minimum=1)
    allowed = causal_mask(q_len, seq_len, start=start)  # (q_len, seq_len): n <= m
    first = seq_len - q_len if start is None else start
    query_chunk = (torch.arange(q_len) + first) // chunk  # (q_len,)
    key_chunk = torch.arange(seq_len) // chunk  # (seq_len,)
    return allowed & (query_chunk[:, None] == key_chunk[None, :])  # (q_len, seq_len)


def chunked_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, chunk: int
) -> torch.Tensor:
    """Causal attention within chunks of ``chunk`` positions, with no L × L mask (chapter 12).

    The same as :func:`pe_book.attention.attention` with the mask of
    :func:`chunked_causal_mask`: the L tokens are padded to a multiple of C and cut into
    chunks, and every chunk runs PyTorch's causal kernel as a sequence of its own (a padded
    key comes after every real query of its chunk, so none sees it). q, k, v: (B, H, L, d),
    the same L tokens; returns (B, H, L, d_v).
    """
    chunk = validate_int("chunk", chunk, minimum=1)
    batch, heads, seq_len, _ = q.shape
    if seq_len <= chunk:
        return attention(q, k, v, causal=True)
    pieces = -(-seq_len // chunk)
    pad = pieces * chunk - seq_len

    def cut(t: torch.Tensor) -> torch.Tensor:  # (B, H, L, d) -> (B, H · pieces, C, d)
        t = torch.nn.functional.pad(t, (0, 0, 0, pad))
        return t.reshape(batch, heads * pieces, chunk, t.shape[-1])

    z = attention(cut(q), cut(k), cut(v), causal=True)  # (B, H · pieces, C, d_v)
    return z.reshape(batch, heads, pieces * chunk, -1)[:, :, :seq_len]


def qk_norm(x: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """x / sqrt(mean_j x_j² + eps) over the last dimension: Llama 4's q, k norm.

    Called ``L2Norm`` in transformers (``Llama4TextL2Norm``) and ``rmsnorm`` without a
    weight in Meta's code: it is an RMS normalisation, so the result has norm ≈ √d, not 1.
    Applied to q and k *after* RoPE, in RoPE layers only, when ``use_qk_norm`` (Scout;
    not Maverick); eps = ``rms_norm_eps`` = 1e-5. Computed in float32 or wider and
    rounded back to x's dtype. Shape: any (..., d), returned unchanged.
    """
    validate_tensor("x", x, min_ndim=1, floating=True)
    eps = validate_positive_float("eps", eps)
    wide = x.to(torch.promote_types(x.dtype, torch.float32))
    return (wide * torch.rsqrt(wide.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


class IRopeAttention(MultiHeadSelfAttention):
    """One layer of iRoPE: a RoPE layer with chunked attention, or a NoPE layer with
    temperature-tuned queries (Llama 4's plan, chapter 13).

    ``forward(x, *, causal=True, rotate, chunk_mask, floor_scale)``: a RoPE layer turns q
    and k with ``rotate`` and lets query m see key n only within its chunk
    (``chunk_mask``, (L, L) bool from :func:`chunked_causal_mask`, or ``chunk``, its size,
    for :func:`chunked_attention`, which needs no mask); a NoPE layer scales
    its queries by :func:`temperature_scale` and attends causally to every key.
    Shapes: x (batch, L, dim) -> same.
    """

    def __init__(self, dim: int, n_heads: int, uses_rope: bool) -> None:
        super().__init__(dim, n_heads)
        self.uses_rope = validate_bool("uses_rope", uses_rope)

    def forward(  # type: ignore[override]
        self,
        x: torch.Tensor,
        *,
        causal: bool = True,
        rotate: object = None,
        chunk_mask: torch.Tensor | None = None,
        floor_scale: float = 8192.0,
        bias: torch.Tensor | None = None,
        chunk: int | None = None,
    ) -> torch.Tensor:
        if causal is not True or bias is not None:
            raise ValueError("IRopeAttention is causal and takes no score bias")
        floor_scale = validate_positive_float("floor_scale", floor_scale)
        q, k, v, unbatched = self._heads(x)  # each (batch, H, L, d_head)
        if self.uses_rope and chunk is not None:  # the fast path: chunks, no mask
            if not callable(rotate):
                raise TypeError(f"rotate must be a function (q, k) -> (q, k), got {rotate!r}")
            q, k = rotate(q, k)
            z = chunked_attention(q, k, v, chunk)
        elif self.uses_rope:
            if not callable(rotate):
                raise TypeError(f"rotate must be a function (q, k) -> (q, k), got {rotate!r}")
            scores = (*q.shape[:-1], k.shape[-2])  # (batch, H, L, L)
            allowed = validate_mask("chunk_mask", chunk_mask, scores)
            q, k = rotate(q, k)
            allowed = allowed.to(q.device)
            mask = torch.zeros(allowed.shape, dtype=q.dtype, device=q.device)
            z = attention(q, k, v, bias=mask.masked_fill(~allowed, float("-inf")))
        else:
            q = scale_queries(q, floor_scale=floor_scale)
            z = attention(q, k, v, causal=True)
        y = self.out(merge_heads(z))  # (batch, L, dim)
        return y[0] if unbatched else y


@register("irope")
class IRopePositions(PositionMethod):
    """iRoPE in chapter 11's model: Llama 4's layer plan at this scale.

    Every fourth layer (the last one when the model has fewer than four) is a NoPE
    layer with temperature-tuned queries and full causal attention; the others rotate q
    and k (RoPE, base 10000 like the book's RoPE model, so that only the plan differs)
    and attend within chunks of ``train_len`` tokens, so their angles never meet an
    offset longer than training showed them. Llama 4 pairs its chunk (8192) with the
    temperature's ``floor_scale`` (8192); here both are ``train_len``.
    """

    fast_path = "chunks through PyTorch's causal kernel, no L × L mask; RoPE's kernel"

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        self.plan = rope_layers(config.n_layers, min(4, config.n_layers))
        self.chunk = config.train_len
        self.rope = Rope(config.dim // config.n_heads, fused=self.fused)
        self._built = 0

    def make_attention(self, config: ModelConfig) -> nn.Module:
        layer = IRopeAttention(config.dim, config.n_heads, self.plan[self._built])
        self._built += 1
        return layer

    def layer_inputs(self, seq_len: int, dtype: torch.dtype) -> dict[str, object]:
        chunks: dict[str, object] = (
            {"chunk": self.chunk}
            if self.fused
            else {"chunk_mask": chunked_causal_mask(seq_len, self.chunk)}
        )
        return {
            "rotate": lambda q, k: (self.rope(q), self.rope(k)),
            "floor_scale": float(self.chunk),
            **chunks,
        }


def focused_weight(
    gap: float,
    positions: int | torch.Tensor,
    floor_scale: float = 8192.0,
    attn_scale: float = 0.1,
    *,
    tuned: bool = True,
) -> torch.Tensor:
    """Weight a NoPE layer's query at position m gives the one key that stands out. Chapter 13.

    One key scores ``gap`` above the m other keys it sees (equal among themselves); the
    temperature τ(m) = :func:`temperature_scale` multiplies every score, so the gap
    becomes τ(m) · gap and

        w(m) = e^(τ g) / (e^(τ g) + m),     τ = 1 without tuning (``tuned=False``).

    Without tuning w falls towards 0 as m grows: the softmax flattens over more keys.
    float64, shape (L,) for ``positions`` as in :func:`temperature_scale`.
    """
    if isinstance(gap, bool) or not isinstance(gap, int | float) or not math.isfinite(gap):
        raise TypeError(f"gap must be a finite real number, got {gap!r}")
    tuned = validate_bool("tuned", tuned)
    scale = temperature_scale(positions, floor_scale, attn_scale)  # (L,), validates
    m = validate_positions(positions, name="positions").to(torch.float64)
    tau = scale if tuned else torch.ones_like(scale)
    return torch.sigmoid(tau * gap - torch.log(m.clamp(min=1.0))) * (m > 0) + (m == 0)
