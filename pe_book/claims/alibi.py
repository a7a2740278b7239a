"""Evidence for the claims about ALiBi (chapter 9).

``bias(q_len, k_len, slopes)`` builds the (H, q_len, k_len) bias (default pe_book's
``alibi_bias``); ``slopes(n_heads)`` returns one slope per head (default
``alibi_slopes``, the paper's rule).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from pe_book import alibi
from pe_book.attention import attention, attention_weights
from pe_book.bench import allocations_mib
from pe_book.claims import Finding, evidence
from pe_book.positions import ModelConfig

Bias = Callable[[int, int, torch.Tensor], torch.Tensor]
Slopes = Callable[[int], torch.Tensor]


def pe_book_bias(q_len: int, k_len: int, slopes: torch.Tensor) -> torch.Tensor:
    return alibi.alibi_bias(q_len, k_len, slopes)


@evidence("001-alibi-linear-bias")
def alibi_linear_bias(bias: Bias = pe_book_bias) -> Finding:
    """Every diagonal constant (a function of m − n) and every row exactly linear, 8 heads."""
    values = bias(64, 64, alibi.alibi_slopes(8))  # (8, 64, 64)
    spread = max(
        float((values.diagonal(-r, 1, 2) - values[:, r, :1]).abs().max()) for r in range(64)
    )  # 0 iff every diagonal (one offset m − n) holds one value
    curvature = float((values[:, :, 2:] - 2 * values[:, :, 1:-1] + values[:, :, :-2]).abs().max())
    return Finding(
        holds=spread == 0.0 and curvature == 0.0,
        shown=(
            f"8 heads, L = 64: largest spread along a diagonal (one offset m − n): {spread:g};"
            f" largest second difference along a row: {curvature:g} (linear: exactly 0)",
        ),
    )


def _bias_tensor_mib(seq_len: int = 1024, heads: int = 8) -> float:
    q, k, v = torch.randn(3, 1, heads, seq_len, 8, generator=torch.Generator().manual_seed(0))
    slopes = alibi.alibi_slopes(heads)
    return allocations_mib(lambda: alibi.alibi_attention(q, k, v, slopes))[0]


@evidence("001-alibi-simple")
def alibi_simple(bias: Bias = pe_book_bias) -> Finding:
    """The whole method: one expression given the slopes; the official one-row form agrees.

    For every head count 1 to 64 the package's bias is −s_h·(m − n) with its
    slopes; the official code's construction (one row +s_h·n for all queries,
    under the causal mask) gives the same attention weights; no parameters. The
    caveat: without the causal mask that row is not ALiBi's −s_h|m − n| (it rewards
    the keys after the query), so the simple shortcut holds for causal models only.
    """
    counts = range(1, 65)
    one_expression = 0
    distance = (torch.arange(48)[:, None] - torch.arange(48)[None, :]).double()  # m − n
    for heads in counts:
        slopes = alibi.alibi_slopes(heads)
        one_expression += torch.equal(bias(48, 48, slopes), -slopes[:, None, None] * distance)
    generator = torch.Generator().manual_seed(4)
    q, k = torch.randn(2, 1, 8, 48, 16, dtype=torch.float64, generator=generator)
    eight = alibi.alibi_slopes(8)
    full = attention_weights(q, k, bias=bias(48, 48, eight), causal=True)
    one_row = attention_weights(q, k, bias=alibi.row_constant_bias(48, eight), causal=True)
    gap = float((full - one_row).abs().max())
    both_ways = attention_weights(q, k, bias=alibi.alibi_bias(48, 48, eight, causal=False))
    unmasked = attention_weights(q, k, bias=alibi.row_constant_bias(48, eight))
    unmasked_gap = float((both_ways - unmasked).abs().max())
    powers = sum(1 for n in counts if n & (n - 1) == 0)
    method = alibi.AlibiPositions(ModelConfig("alibi", vocab_size=8, n_heads=8))
    parameters = sum(p.numel() for p in method.parameters())
    return Finding(
        holds=one_expression == len(counts) and gap < 1e-12,
        caveat=f"the one-row shortcut holds under the causal mask only (weights off by"
        f" {unmasked_gap:.2f} without it)"
        if unmasked_gap > 1e-6
        else None,
        shown=(
            f"n_H = 1 to 64: the bias is −s_h (m − n) with the package's slopes for"
            f" {one_expression} of {len(counts)} head counts; the slopes are 2^(−8h/n_H) for the"
            f" {powers} powers of two, the official rule's second branch fills the other"
            f" {len(counts) - powers}",
            "the official code's one row +s_h·n under the causal mask, 8 heads, L = 48:"
            " attention weights differ by "
            + ("< 1e-12" if gap < 1e-12 else f"{gap:.2g}")
            + f"; the model's ALiBi module has {parameters} parameters",
            f"without the causal mask, the one row against −s_h |m − n|: attention weights"
            f" differ by {unmasked_gap:.2f}",
        ),
    )


def pe_book_slopes(n_heads: int) -> torch.Tensor:
    return alibi.alibi_slopes(n_heads)


@evidence("004-alibi-penalty-form")
def alibi_penalty_form(slopes: Slopes = pe_book_slopes) -> Finding:
    """Geometric slopes for 2^k heads; the scores are q·k/√d − s_h (m − n); not so for 12 heads."""
    departure = 0.0  # of neighbouring slopes' ratio from 2^(−8/n_H), relative
    for heads in (2, 4, 8, 16, 32, 64):
        ratios = slopes(heads)[1:] / slopes(heads)[:-1]
        departure = max(departure, float((ratios / 2 ** (-8 / heads) - 1).abs().max()))
    geometric = departure < 1e-9
    generator = torch.Generator().manual_seed(3)
    q, k, v = torch.randn(3, 1, 4, 12, 16, dtype=torch.float64, generator=generator)
    four = slopes(4)
    distance = (torch.arange(12)[:, None] - torch.arange(12)[None, :]).double()
    penalised = attention(q, k, v, bias=-four[:, None, None] * distance, causal=True)
    score_gap = float((alibi.alibi_attention(q, k, v, four) - penalised).abs().max())
    same_scores = score_gap < 1e-12
    steps12 = torch.diff(slopes(12).sort(descending=True).values.log2())
    return Finding(
        holds=geometric and same_scores,
        caveat="geometric only for power-of-two head counts"
        if float(steps12.max() - steps12.min()) > 0.1
        else None,
        shown=(
            "2 to 64 heads (powers of two): neighbouring slopes' ratio departs from 2^(−8/n_H)"
            " by " + ("< 1e-9" if geometric else f"{departure:.2g}") + " (relative); ALiBi"
            " attention minus softmax(q·k/√d − s_h (m − n)) v: "
            + ("< 1e-12" if same_scores else f"{score_gap:.2g}"),
            "12 heads, sorted: steps of log2 slope "
            + ", ".join(f"{float(s):.1f}" for s in steps12),
        ),
    )


@evidence("004-alibi-8-heads")
def alibi_8_heads(slopes: Slopes = pe_book_slopes) -> Finding:
    """The source's example list is lost from our copy: it cannot be compared with anything."""
    eight = slopes(8)
    decreasing = bool((eight[1:] < eight[:-1]).all())
    return Finding(
        holds=None,
        missing="source 004's list of 8 slopes (our copy of the source has lost it)",
        shown=(
            "the paper's 8 slopes, for comparison: "
            + ", ".join(f"1/{1 / float(s):.0f}" for s in eight)
            + f" (from the first head to the eighth, decreasing: {decreasing})",
        ),
    )


@evidence("004-alibi-head-reach")
def alibi_head_reach(slopes: Slopes = pe_book_slopes) -> Finding:
    """Distance at which each head's penalty passes 10 nats; and a content score that beats it."""
    eight = slopes(8)
    reach = alibi.alibi_reach(eight, nats=10.0).tolist()
    steepest = int(torch.argmax(eight))
    row = alibi.alibi_bias(1, 101, eight[steepest : steepest + 1])[0, 0]  # query at m = 100
    content = torch.zeros(101, dtype=torch.float64)
    content[100 - 40] = 25.0  # one key, 40 back, 25 nats above the others
    weight = float(torch.softmax(content + row, dim=-1)[100 - 40])
    return Finding(
        holds=reach == [20 * 2**i for i in range(8)],
        caveat="a high enough content score overrides the penalty" if weight > 0.5 else None,
        shown=(
            "reach (10 nats), heads 1-8: " + ", ".join(f"{r:,}" for r in reach),
            f"steepest head, a key 40 back scored 25 nats higher takes weight {weight:.3f}",
        ),
    )


@evidence("004-alibi-memory")
def alibi_memory() -> Finding:
    """The paper's 0-0.7% (quoted); what a bias tensor costs here (measured), and at 16k."""
    largest = _bias_tensor_mib()
    heads, bytes_per_number = 8, 4  # float32
    tensor = heads * 1024**2 * bytes_per_number / 2**20
    long = heads * 16384**2 * bytes_per_number / 2**30
    return Finding(
        holds=True,  # the paper's measurement, quoted: not re-run here
        caveat=f"as a tensor the bias is H·L² numbers: {long:.0f} GiB at L = 16,384"
        if largest >= tensor
        else None,
        shown=(
            f"bias-tensor path, {heads} heads, L = 1024: largest allocation {largest:.0f} MiB"
            f" (H·L² float32 = {tensor:.0f} MiB; {math.prod((heads, 1024, 1024)):,} numbers);"
            f" at L = 16,384 the same tensor is {long:.0f} GiB",
        ),
    )
