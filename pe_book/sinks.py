"""Attention sinks: StreamingLLM's kept first tokens, and gpt-oss's learned sink logit.

Chapter 13. Two ideas share the name.

(a) StreamingLLM (Xiao, Tian, Chen, Han and Lewis, "Efficient Streaming Language Models
with Attention Sinks", ICLR 2024, arXiv 2309.17453): models put much attention on the
first tokens whatever they say, so a window cache that evicts them breaks down. Section
3.2's rolling cache keeps the KV of the first ``n_sink`` tokens (4 in the paper) and of the
``window`` most recent ones, and gives RoPE the positions *within the cache*, not in the
text: :func:`streaming_cache_slots`, :func:`cache_positions`.

(b) A learned sink logit per head (OpenAI, "gpt-oss-120b & gpt-oss-20b Model Card", 2025,
arXiv 2508.10925, section 2): the softmax gets one more column, the head's logit z_h,
which takes attention mass but has no value, so a head may attend to nothing:

    w_h(m, n) = exp(s_mn) / (exp(z_h) + sum_n' exp(s_mn'))

With z_h = 0 this is the "off-by-one" softmax_1 (Evan Miller, "Attention Is Off By
One", 2023): :func:`softmax_with_sink`, :func:`sink_attention`.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F

from pe_book._validate import (
    validate_bool,
    validate_finite,
    validate_int,
    validate_qkv,
    validate_tensor,
)
from pe_book.attention import causal_mask

__all__ = [
    "attention_to_first_token",
    "cache_positions",
    "first_token_ratio",
    "sink_attention",
    "sink_gap",
    "softmax_with_sink",
    "streaming_cache_slots",
    "uniform_share",
]


def _check_cache(seq_len: object, n_sink: object, window: object) -> tuple[int, int, int]:
    return (
        validate_int("seq_len", seq_len, minimum=0),
        validate_int("n_sink", n_sink, minimum=0),
        validate_int("window", window, minimum=1),
    )


def streaming_cache_slots(seq_len: int, n_sink: int, window: int) -> torch.Tensor:
    """Text indices of the tokens whose KV StreamingLLM keeps after reading ``seq_len`` tokens.

    Tokens 0 .. seq_len - 1 have been read. While seq_len <= n_sink + window all are kept;
    afterwards the cache holds the n_sink attention sinks 0 .. n_sink - 1 and the window
    seq_len - window .. seq_len - 1, n_sink + window entries in slot order (Xiao et al.
    2024, section 3.2 and figure 4; the official ``StartRecentKVCache`` with
    ``start_size = n_sink``, ``recent_size = window``). ``n_sink = 0`` is plain window
    attention, the baseline that fails in the paper. Returns int64, shape (kept,).
    """
    seq_len, n_sink, window = _check_cache(seq_len, n_sink, window)
    if seq_len <= n_sink + window:
        return torch.arange(seq_len)
    return torch.cat((torch.arange(n_sink), torch.arange(seq_len - window, seq_len)))


def cache_positions(seq_len: int, n_sink: int, window: int) -> tuple[torch.Tensor, int]:
    """Positions RoPE uses under StreamingLLM: (key positions by cache slot, query position).

    After reading seq_len tokens the next token (text index seq_len) attends to the kept
    cache and to itself. Positions are taken "within the cache rather than those in the
    original text" (Xiao et al. 2024, section 3.2): the key in slot s gets position s,
    0 .. kept - 1, and the query gets kept, kept = min(seq_len, n_sink + window). The
    paper's example: cache [0, 1, 2, 3, 6, 7, 8] decoding token 9 uses positions 0 .. 7,
    not [0, 1, 2, 3, 6, 7, 8, 9]. So the offset r between the query and any key is at
    most n_sink + window, however long the stream (the official code caches keys
    unrotated and rotates them afresh at every step, ``pos_shift/modify_llama.py``).
    Returns (int64 tensor of shape (kept,), int).
    """
    kept = streaming_cache_slots(seq_len, n_sink, window).numel()
    return torch.arange(kept), kept


def _check_sink(scores: torch.Tensor, sink_logits: torch.Tensor) -> None:
    validate_tensor("scores", scores, min_ndim=3, floating=True)
    validate_tensor("sink_logits", sink_logits, ndim=1, floating=True)
    heads = scores.shape[-3]
    if sink_logits.shape[0] != heads:
        raise ValueError(
            f"sink_logits must have one entry per head: scores have {heads} heads (dim -3), "
            f"got {sink_logits.shape[0]}"
        )
    for name, value in (("scores", scores), ("sink_logits", sink_logits)):
        validate_finite(name, value)
        if bool((value == math.inf).any()):
            raise ValueError(f"{name} must not contain +inf (-inf marks masked entries)")


def softmax_with_sink(scores: torch.Tensor, sink_logits: torch.Tensor) -> torch.Tensor:
    """Softmax over [scores, z_h] with the sink column dropped, shape of scores (..., H, q, k).

        w_h(m, n) = exp(s_mn) / (exp(z_h) + sum_n' exp(s_mn'))

    As transformers' gpt-oss ``eager_attention_forward``: append z_h as one more column,
    subtract the row maximum over scores *and* sink (so no exponent overflows), softmax,
    drop the last column. OpenAI's reference ``sdpa`` (gpt_oss/torch/model.py) does the
    same without the explicit shift (``torch.softmax`` shifts internally). Each row sums
    to 1 - exp(z_h) / (exp(z_h) + sum exp(s)) < 1; z_h = -inf gives the plain softmax,
    z_h = 0 the off-by-one softmax_1. Masked scores may be -inf: a row whose scores are
    all -inf gets weights 0 (all mass on the sink), unless z_h = -inf too (ValueError).

    Shapes: scores (..., H, q_len, k_len) floating; sink_logits (H,), cast to scores' dtype.
    """
    _check_sink(scores, sink_logits)
    heads, q_len = scores.shape[-3], scores.shape[-2]
    sink = sink_logits.to(device=scores.device, dtype=scores.dtype)
    sink = sink[:, None, None].expand(*scores.shape[:-3], heads, q_len, 1)  # (..., H, q, 1)
    combined = torch.cat((scores, sink), dim=-1)  # (..., H, q, k + 1)
    row_max = combined.max(dim=-1, keepdim=True).values
    if bool((row_max == -math.inf).any()):
        raise ValueError(
            "a row of scores is all -inf and its head's sink logit is -inf: "
            "the softmax has no finite entry (give the sink a finite logit)"
        )
    probs = torch.softmax(combined - row_max, dim=-1)
    return probs[..., :-1]  # drop the sink column: (..., H, q, k)


def sink_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    sink_logits: torch.Tensor,
    *,
    causal: bool = True,
    start: int | None = None,
) -> torch.Tensor:
    """softmax_with_sink(q kᵀ / √d + causal mask, z) v: gpt-oss's attention for one layer.

    Shapes: q (..., H, q_len, d), k (..., H, k_len, d), v (..., H, k_len, d_v),
    sink_logits (H,); returns (..., H, q_len, d_v). With ``causal`` query i at position
    start + i sees keys n <= start + i (``pe_book.attention.causal_mask``; start defaults
    to k_len - q_len). The sink acts as an extra key with score z_h and a zero value:
    the output is a weighted sum of the values with weights summing to less than 1.
    """
    validate_qkv(q, k, v, min_ndim=3)
    validate_finite("q", q, allow_inf=False)  # else a score could be NaN or +inf
    validate_finite("k", k, allow_inf=False)
    causal = validate_bool("causal", causal)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (..., H, q_len, k_len)
    if causal:
        allowed = causal_mask(q.shape[-2], k.shape[-2], start=start).to(q.device)
        scores = scores.masked_fill(~allowed, -math.inf)
    return softmax_with_sink(scores, sink_logits) @ v  # (..., H, q_len, d_v)


@torch.no_grad()
def attention_to_first_token(
    model: torch.nn.Module, tokens: torch.Tensor, chunk: int = 4
) -> torch.Tensor | None:
    """How much attention every layer's heads give the window's first token (chapter 13).

    Runs ``model(tokens)`` (tokens (batch, L) int64) and, at each call of PyTorch's
    scaled-dot-product attention (the path of every layer built on
    :class:`pe_book.attention.MultiHeadSelfAttention`), records the weight
    softmax(q kᵀ/√d + mask)[m, 0] that query m gives key 0, averaged over the batch.
    Returns (n_calls, H, L), one row per layer in order; None when the model's layers
    compute attention their own way (Shaw's and CoPE's), so that no call was seen.
    The first-token share is what StreamingLLM's sinks are (Xiao et al. 2024, section 3.1).
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(
            f"model must be a torch.nn.Module taking tokens, got {type(model).__name__}"
        )
    validate_tensor("tokens", tokens, ndim=2, integer=True)
    if 0 in tokens.shape:
        raise ValueError(f"tokens must hold at least one token, got shape {tuple(tokens.shape)}")
    chunk = validate_int("chunk", chunk, minimum=1)
    original = F.scaled_dot_product_attention
    shares: list[list[torch.Tensor]] = []

    def recording(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, **options: Any) -> Any:
        scores = (q @ k.transpose(-2, -1)).double() / math.sqrt(q.shape[-1])  # (B, H, L, L)
        mask = options.get("attn_mask")
        if options.get("is_causal"):
            allowed = causal_mask(q.shape[-2], k.shape[-2]).to(q.device)
            scores = scores.masked_fill(~allowed, float("-inf"))
        if mask is not None:
            scores = scores + mask.double()
        current.append(torch.softmax(scores, dim=-1)[..., 0].sum(0))  # (H, L)
        return original(q, k, v, **options)

    F.scaled_dot_product_attention = recording
    try:
        for part in tokens.split(chunk):
            current: list[torch.Tensor] = []
            model(part)
            shares.append(current)
    finally:
        F.scaled_dot_product_attention = original
    if not shares or not shares[0]:
        return None
    return torch.stack([torch.stack(calls) for calls in shares]).sum(0) / tokens.shape[0]


def uniform_share(n_queries: int, bin_size: int = 1) -> torch.Tensor:
    """1/(m + 1), the share of key 0 under an even spread, per query or bin: float64 (n,).

    Query m (0-based) sees the m + 1 keys 0 .. m under the causal mask. With
    ``bin_size`` = B > 1 entry j is the mean of 1/(m + 1) over queries m = jB .. jB + B - 1,
    as the study stores its long windows (means over bins of L queries). Chapter 13.
    """
    n_queries = validate_int("n_queries", n_queries, minimum=1)
    bin_size = validate_int("bin_size", bin_size, minimum=1)
    queries = torch.arange(n_queries * bin_size, dtype=torch.float64)
    return (1.0 / (queries + 1.0)).reshape(n_queries, bin_size).mean(1)


def first_token_ratio(shares: object, bin_size: int = 1) -> torch.Tensor:
    """Attention on the first token over the even share, (..., n) -> (..., n) float64.

    ``shares[..., j]`` is the weight query j (or bin j of ``bin_size`` queries) gives
    key 0, e.g. a record's ``first_token_attention`` ([layer][head][query]); the ratio
    is 1 for a head that spreads evenly (chapter 10's counting NoPE head), below 1 for
    one that looks elsewhere, and about (m + 1) w for a sink holding a fixed share w
    (StreamingLLM's first tokens), growing with m. Chapter 13.
    """
    values = torch.as_tensor(shares, dtype=torch.float64)
    validate_tensor("shares", values, min_ndim=1, floating=True)
    if bool(((values < 0) | (values > 1) | values.isnan()).any()):
        raise ValueError("shares must be attention weights in [0, 1]")
    return values / uniform_share(values.shape[-1], bin_size)


def sink_gap(share: float, n_keys: int) -> float:
    """How far key 0's score must exceed the others' for it to take ``share``. Chapter 13.

    With key 0 at score s + g and the other n_keys - 1 keys at s, softmax gives key 0
    w = e^g / (e^g + n_keys - 1), so g = log(w (n_keys - 1) / (1 - w)): it grows like
    log n_keys, the price of parking a head's weight on one key as the context grows.
    """
    n_keys = validate_int("n_keys", n_keys, minimum=2)
    if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share < 1:
        raise ValueError(f"share must be a number strictly between 0 and 1, got {share!r}")
    return math.log(share * (n_keys - 1) / (1.0 - share))
