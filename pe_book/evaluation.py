"""How a trained character model is scored: windows, sliding windows, perplexity (chapter 11).

Every length scores the same targets: :func:`evaluate` cuts each validation segment into
non-overlapping windows of ``seq_len``; :func:`evaluate_sliding` reads the same targets
through a window capped at the training length; their difference on the same characters
is the extra-context cost of :mod:`pe_book.results`. :func:`rope_scalings` gives the
inference-time scalings of chapter 8 the study reads the RoPE model with.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from pe_book import sinks
from pe_book._validate import validate_int
from pe_book.model import CharLM
from pe_book.rope_scaling import DynamicNTKScaling, LinearScaling, Scaling, YaRNScaling

__all__ = [
    "FIRST_TOKEN_WINDOWS",
    "by_bin",
    "evaluate",
    "evaluate_sliding",
    "first_token_attention",
    "perplexity",
    "rope_scalings",
    "rounded",
    "scaled_rope_losses",
    "short_context_fraction",
]


#: How many validation windows :func:`first_token_attention` averages (chapters 10 and 13).
FIRST_TOKEN_WINDOWS = 8


@torch.no_grad()
def evaluate(model: CharLM, segments: torch.Tensor, seq_len: int) -> torch.Tensor:
    """Loss (nats) of every target of ``segments`` read in windows of seq_len.

    ``segments`` (count, S + 1) from :func:`pe_book.data.eval_segments`, with S a
    multiple of seq_len: each segment is cut into S / seq_len non-overlapping
    windows (a window's last target is the next window's first input), so every
    length scores exactly the same S targets per segment. Returns (count, S);
    entry j is the loss of predicting token j + 1. Raises ValueError if the model
    cannot run at this length (a learned table shorter than seq_len).
    """
    model.eval()
    count, span = segments.shape[0], segments.shape[1] - 1
    if span % seq_len:
        raise ValueError(f"segment length {span} is not a multiple of seq_len={seq_len}")
    inputs = segments[:, :-1].reshape(-1, seq_len)
    targets = segments[:, 1:].reshape(-1, seq_len)
    losses = [
        model.token_losses(x, y) for x, y in zip(inputs.split(8), targets.split(8), strict=True)
    ]
    return torch.cat(losses).double().reshape(count, span)


@torch.no_grad()
def evaluate_sliding(
    model: CharLM, segments: torch.Tensor, window: int, stride: int
) -> torch.Tensor:
    """Loss of every target j >= window - stride of ``segments``, read through a short window.

    Windows of ``window`` tokens move by ``stride``; each scores only its last
    ``stride`` targets, so target j is predicted from the window - stride + 1 ..
    window tokens before it, never more: the same targets as :func:`evaluate`,
    with the context capped at the training length. Returns (count, S - window +
    stride); column c is target j = window - stride + c.
    """
    model.eval()
    span = segments.shape[1] - 1
    if (span - window) % stride:
        raise ValueError(
            f"segment length {span} minus window {window} is not a multiple of {stride}"
        )
    starts = range(0, span - window + 1, stride)
    inputs = torch.stack([segments[:, a : a + window] for a in starts], 1).reshape(-1, window)
    targets = torch.stack([segments[:, a + 1 : a + window + 1] for a in starts], 1)
    targets = targets.reshape(-1, window)
    losses = [
        model.token_losses(x, y)[:, -stride:]
        for x, y in zip(inputs.split(64), targets.split(64), strict=True)
    ]
    return torch.cat(losses).double().reshape(segments.shape[0], -1)


def rope_scalings(length: int, train_len: int) -> dict[str, Scaling]:
    """Inference-time context extension for a RoPE model trained at train_len (chapter 8).

    Position Interpolation and YaRN with factor κ = length / train_len; dynamic NTK
    with factor 1 (its base grows with the current length by itself).
    """
    factor = length / train_len
    return {
        "position interpolation": LinearScaling(factor),
        "dynamic NTK": DynamicNTKScaling(1.0, train_len),
        "YaRN": YaRNScaling(factor, train_len),
    }


def by_bin(losses: torch.Tensor, width: int) -> torch.Tensor:
    """(count, n · width) per-target losses -> (count, n) means over bins of ``width``."""
    return losses.reshape(losses.shape[0], -1, width).mean(-1)


def perplexity(losses: torch.Tensor | list[float]) -> float:
    """exp of the mean loss: perplexity from per-prediction losses in nats. Chapter 11.

    A list is read as float64; a tensor keeps its dtype (the study's are float32).
    """
    if not isinstance(losses, torch.Tensor):
        losses = torch.tensor(list(losses), dtype=torch.float64)
    if losses.numel() == 0:
        raise ValueError("losses must hold at least one loss, got none")
    return math.exp(float(losses.mean()))


def short_context_fraction(seq_len: int, context: int) -> float:
    """Share of a window's predictions with at most ``context`` tokens to condition on.

    Prediction i (1-based) of a window of ``seq_len`` tokens conditions on i
    tokens, so the share is min(context, seq_len) / seq_len: the early-token
    curse of the ALiBi paper's Appendix B (chapter 11, section 11.3).
    """
    seq_len = validate_int("seq_len", seq_len, minimum=1)
    context = validate_int("context", context, minimum=0)
    return min(context, seq_len) / seq_len


def rounded(values: torch.Tensor | float) -> Any:
    """Losses as stored: nested lists of floats rounded to 6 decimals (1e-6 nats)."""
    if isinstance(values, torch.Tensor):
        return [rounded(v) for v in values] if values.ndim else round(float(values), 6)
    return round(float(values), 6)


def first_token_attention(
    model: CharLM, segments: torch.Tensor, unit: int, count: int = FIRST_TOKEN_WINDOWS
) -> dict[str, Any] | None:
    """Attention every layer and head gives the first token of a window (chapter 13's
    sinks), on the first ``count`` segments: windows of ``unit`` tokens, per query
    (layers, H, unit), and of the segments' whole length, per bin of ``unit`` queries."""
    model.eval()
    inputs = segments[:count, :-1]
    short = sinks.attention_to_first_token(model, inputs[:, :unit])
    if short is None:
        return None
    found: dict[str, Any] = {str(unit): rounded(short)}
    try:
        longest = sinks.attention_to_first_token(model, inputs)  # (layers, H, longest)
    except ValueError:  # a learned table cannot run the longest windows
        return found
    layers, heads, length = longest.shape
    binned = longest.reshape(layers, heads, length // unit, unit).mean(-1)
    found[str(length)] = rounded(binned)
    return found


def scaled_rope_losses(
    model: CharLM, segments: torch.Tensor, lengths: tuple[int, ...], train_len: int
) -> dict[str, dict[str, list[float]]]:
    """Each segment's loss for a trained RoPE model read with each scaling of
    :func:`rope_scalings` in windows of every length past ``train_len`` (chapter 11.6)."""
    scaled: dict[str, dict[str, list[float]]] = {}
    for length in lengths:
        if length <= train_len:
            continue
        for name, scaling in rope_scalings(length, train_len).items():
            model.set_rope_scaling(scaling)
            losses = evaluate(model, segments, length).mean(1)  # (count,)
            scaled.setdefault(name, {})[str(length)] = rounded(losses)
    model.set_rope_scaling(None)
    return scaled
