"""Chapter 13 (position in today's open models): a layer plan's KV cache, M-RoPE's
position ids, Llama 4's query temperature and the score a sink needs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from pe_book import irope, mrope, open_models, sinks
from pe_book.exercises.grading import Case, check

__all__ = [
    "check_kv_cache_bytes",
    "check_mrope_ids",
    "check_query_temperature",
    "check_sink_gap",
]

LOCAL, GLOBAL, CHUNKED = "sliding_attention", "full_attention", "chunked_attention"


def check_kv_cache_bytes(reader: Callable[..., Any]) -> None:
    """Chapter 13: ``reader(layer_types, window, seq_len, n_kv_heads, d_head,
    bytes_per_number)`` returns the bytes of keys and values a layer plan caches for
    ``seq_len`` tokens, exactly (a whole number).

    Compared with :func:`pe_book.open_models.kv_cache_bytes`: a full-attention layer
    caches every token, a sliding or chunked layer min(seq_len, window) of them (a chunked
    layer counted at its largest, a whole chunk). The plans are fixtures: Gemma 3's five
    local layers to one global, a text shorter than the window (so min(L, W), not W), a
    text exactly one window long, Llama 4's chunked layers with a text longer and one
    shorter than a chunk (so min there too), Llama 4 Scout's 48 layers at 10,485,759
    tokens (about 5.2e11 bytes, whose odd part exceeds 2^24: a float32 count is not
    exact), all global (plain grouped-query attention) and all local.
    """
    gemma = ([LOCAL] * 5 + [GLOBAL]) * 2
    settings = [
        (gemma, 1024, 32_768, 4, 256, 2, "five local layers to one global, a long text"),
        (gemma, 1024, 700, 4, 256, 2, "a text shorter than the window"),
        (gemma, 1024, 1024, 4, 256, 2, "a text exactly one window long"),
        ([CHUNKED] * 3 + [GLOBAL], 8192, 100_000, 8, 128, 2, "Llama 4's chunked layers"),
        ([CHUNKED] * 3 + [GLOBAL], 8192, 5000, 8, 128, 2, "chunked, a text shorter than a chunk"),
        (
            ([CHUNKED] * 3 + [GLOBAL]) * 12,
            8192,
            10_485_759,
            8,
            128,
            2,
            "Llama 4 Scout's 48 layers near its 10M-token context: a count float32 cannot hold",
        ),
        ([GLOBAL] * 3, 4096, 5000, 8, 128, 4, "all global, float32 numbers"),
        ([LOCAL] * 4, 4096, 5000, 8, 64, 2, "all local"),
    ]
    cases = [
        Case(
            (list(plan), window, seq_len, heads, d_head, size),
            f"{len(plan)} layers ({plan.count(GLOBAL)} global), window={window},"
            f" seq_len={seq_len}, n_kv_heads={heads}, d_head={d_head}, {size} bytes a number",
            kind=kind,
        )
        for plan, window, seq_len, heads, d_head, size, kind in settings
    ]
    check(
        "kv_cache_bytes",
        lambda plan, *rest: reader(list(plan), *rest),
        open_models.kv_cache_bytes,
        cases,
        atol=0.0,
    )


def _component_token(case: Case, index: tuple[int, ...]) -> str:
    return f"component {mrope.COMPONENTS[index[0]]}, token {index[1]}"


def check_mrope_ids(reader: Callable[[list[tuple]], Any]) -> None:
    """Chapter 13: ``reader(segments)`` returns M-RoPE's (3, L) position ids (t, h, w),
    exactly, for segments ("text", n) and ("image" | "video", grid_t, grid_h, grid_w).

    Compared with :func:`pe_book.mrope.mrope_position_ids` (Qwen2-VL, section 2.1): text
    tokens count one by one with t = h = w, a vision token (a, y, x) gets
    start + (a, y, x), and every segment starts one past the largest id so far. The cases
    tell this from counting tokens (start = previous start + tokens), from transformers'
    max(grid_h, grid_w) step after a long video, and from swapping rows and columns.
    """
    settings = [
        ([("text", 4)], "text only: RoPE's positions"),
        ([("text", 2), ("image", 1, 2, 3), ("text", 2)], "an image between texts"),
        ([("image", 1, 3, 2), ("text", 3)], "an image first, taller than wide"),
        ([("text", 1), ("video", 5, 2, 2), ("text", 2)], "a video longer than it is wide"),
        ([("image", 1, 2, 2), ("image", 1, 1, 3)], "two images in a row"),
    ]
    cases = [Case((segments,), repr(segments), kind=kind) for segments, kind in settings]
    check(
        "mrope_ids",
        lambda segments: reader([tuple(s) for s in segments]),
        mrope.mrope_position_ids,
        cases,
        atol=0.0,
        locate=_component_token,
    )


def _position(case: Case, index: tuple[int, ...]) -> str:
    return f"position m = {int(case.args[0][index[0]]):,}"


def check_query_temperature(reader: Callable[[torch.Tensor, float, float], Any]) -> None:
    """Chapter 13: ``reader(positions, floor_scale, attn_scale)`` returns Llama 4's factor
    on the NoPE layers' query at each position m, 1 + a·log(1 + floor((m + 1)/F)), to 1e-6.

    Compared with :func:`pe_book.irope.temperature_scale`. Positions (int64) sit on both
    sides of multiples of F, so floor(m/F) instead of floor((m + 1)/F) misses; m = 0 is
    included, where log instead of log1p misses; far positions tell a floor from none.
    Positions stay below 2^24, F is a whole number and a is at most 0.5 (0.2 in the
    graded draws): float32 is enough, its error staying below 1e-6.
    """
    settings = [
        ([0, 1, 8190, 8191, 8192, 16_382, 16_383], 8192.0, 0.1, "both sides of F and 2F"),
        ([0, 99, 100, 250, 1000], 100.0, 0.5, "a small F and a large a"),
        ([5, 4_000_000, 16_000_000], 8192.0, 0.1, "far positions"),
        ([0, 3, 7, 11], 4.0, 0.0, "a = 0: no tuning"),
    ]
    cases = [
        Case(
            (torch.tensor(positions), floor, scale),
            f"positions {positions}, floor_scale={floor:g}, attn_scale={scale:g}",
            kind=kind,
        )
        for positions, floor, scale, kind in settings
    ]
    check(
        "query_temperature",
        lambda positions, floor, scale: reader(positions.clone(), floor, scale),
        irope.temperature_scale,
        cases,
        atol=1e-6,
        locate=_position,
    )


def check_sink_gap(reader: Callable[[float, int], Any]) -> None:
    """Chapter 13: ``reader(share, n_keys)`` returns the score g by which key 0 must beat
    the n_keys - 1 other keys (all equal) to take ``share`` of the softmax, to 1e-9.

    Compared with :func:`pe_book.sinks.sink_gap`, g = log(w (n - 1)/(1 - w)). The cases
    tell it from counting all n keys as rivals (two keys at w = 1/2 need no gap), from
    the plain log-odds log(w/(1 - w)) and from log(w n).
    """
    settings = [
        (0.5, 2, "two keys, an even split"),
        (0.9, 64, "a training window of the book's study"),
        (0.99, 131_072, "a long context"),
        (0.05, 10, "less than an even share: a negative gap"),
        (0.5, 1_000_001, "half of a million keys"),
    ]
    cases = [
        Case((share, n), f"share={share}, n_keys={n:,}", kind=kind) for share, n, kind in settings
    ]
    check("sink_gap", lambda share, n: float(reader(share, n)), sinks.sink_gap, cases, atol=1e-9)
