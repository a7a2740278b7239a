"""Evidence for the claims about learned absolute and relative positions (chapter 6)."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch
from torch import nn

from pe_book import learned, relative
from pe_book.claims import Finding, evidence
from pe_book.sinusoidal import SinusoidalEncoding

#: BERT-base's parameter count, as Devlin et al. (2019, section 3) give it.
BERT_BASE_PARAMETERS = 110_000_000


def _parameters(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


@evidence("004-learned-512x768")
def learned_512x768() -> Finding:
    """A count: the table's size is its definition."""
    count = _parameters(learned.LearnedPositions(512, 768))
    return Finding(
        holds=count == 512 * 768, shown=(f"LearnedPositions(512, 768): {count:,} parameters",)
    )


@evidence("001-learned-needs-parameters")
def learned_needs_parameters() -> Finding:
    """A count: one trainable row per position, against a fixed buffer."""
    table = _parameters(learned.LearnedPositions(512, 768))
    fixed = _parameters(SinusoidalEncoding(768, max_len=512))
    return Finding(
        holds=table > 0 and fixed == 0,
        shown=(f"learned table {table:,} parameters; sinusoidal encoding {fixed}",),
    )


#: Operations that only re-describe a tensor's memory (no arithmetic): not counted.
_NO_ARITHMETIC = (
    "aten::view", "aten::_unsafe_view", "aten::t", "aten::expand", "aten::detach",
    "aten::transpose", "aten::permute", "aten::slice", "aten::select", "aten::unsqueeze",
    "aten::squeeze", "aten::as_strided", "aten::alias", "aten::lift_fresh",
)  # fmt: skip


class StepWork(NamedTuple):
    """The arithmetic of one training step: matrix-product FLOPs (forward and backward),
    elements written by every other operation of forward and backward, elements written by
    the AdamW update, and the model's parameter count."""

    flops: int
    elementwise: int
    optimizer: int
    parameters: int

    @property
    def total(self) -> int:
        return self.flops + self.elementwise + self.optimizer


def step_work(position: str) -> StepWork:
    """Count one training step (forward, backward, AdamW update) of chapter 11's model with
    ``position``, batch 2 at L = 64: torch's FlopCounterMode counts the matrix products, and
    every other operation counts the elements it writes (about one operation each)."""
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils.flop_counter import FlopCounterMode

    from pe_book import data
    from pe_book.model import CharLM
    from pe_book.positions import ModelConfig

    class Elements(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.count = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if not func._schema.name.startswith(_NO_ARITHMETIC):
                outs = out if isinstance(out, list | tuple) else [out]
                self.count += sum(t.numel() for t in outs if isinstance(t, torch.Tensor))
            return out

    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = CharLM(ModelConfig(position, vocab_size=len(data.VOCAB)))
        tokens = torch.randint(0, len(data.VOCAB), (2, 64))
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=1e-3, foreach=False
    )  # one op per tensor: each counted
    with torch.enable_grad(), FlopCounterMode(display=False) as counter, Elements() as steps:
        logits = model(tokens)
        nn.functional.cross_entropy(logits.flatten(0, 1), tokens.flatten()).backward()
    with Elements() as update:
        optimizer.step()
    return StepWork(int(counter.get_total_flops()), steps.count, update.count, _parameters(model))


@evidence("004-learned-cost")
def learned_cost(work: Callable[[str], StepWork] = step_work) -> Finding:
    """More parameters, and how much more computation they bring: counted, not timed.

    Forward and backward do the same matrix products with a learned table as with a fixed
    one (a lookup and an addition each); what a learned table adds is its gradient and its
    optimizer update, in proportion to its parameters. The evidence counts every operation
    of a training step of chapter 11's model both ways and gives the share that is extra.
    """
    count = _parameters(learned.LearnedPositions(512, 768))
    share = count / BERT_BASE_PARAMETERS
    table, fixed = work("learned"), work("sinusoidal")
    extra = table.total - fixed.total
    extra_share = extra / fixed.total
    return Finding(
        holds=count > 0 and extra > 0,
        caveat=(
            f"more computation only in training, {extra_share:.2%} of a step, none at inference"
            if 0 < extra_share < 0.01 and table.flops == fixed.flops
            else None
        ),
        shown=(
            f"{count:,} parameters, {share:.2%} of BERT-base's 110 million",
            f"a training step of chapter 11's model (L = 64, batch 2; learned / sinusoidal):"
            f" matrix-product FLOPs {table.flops:,} / {fixed.flops:,}; other operations"
            f" {table.elementwise:,} / {fixed.elementwise:,} elements; AdamW update"
            f" {table.optimizer:,} / {fixed.optimizer:,} elements",
            f"extra: {extra:,} operations for the table's {table.parameters - fixed.parameters:,}"
            f" parameters, {extra_share:.3%} of the step; inference: the same products and"
            " one addition either way",
        ),
    )


@evidence("004-learned-no-extrapolation")
def learned_no_extrapolation() -> Finding:
    """A table has no row past its last: pe_book's refuses, MiniLM's real table has 512 rows."""
    try:
        learned.LearnedPositions(512, 16).positions(1, start=512)
        refused = False
    except ValueError:
        refused = True
    table = learned.minilm_position_table_or_none()
    rows = "not installed" if table is None else f"{table.shape[0]} rows"
    return Finding(
        holds=refused, shown=(f"position 512 refused: {refused}; MiniLM's table: {rows}",)
    )


def shaw_layer(seed: int = 0) -> Callable[..., torch.Tensor]:
    """pe_book's ShawAttention (d = 16, 2 heads, K = 3), float64, initialised from ``seed``."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        module = relative.ShawAttention(dim=16, n_heads=2, max_offset=3).double()

    def layer(x: torch.Tensor, positions: torch.Tensor | None = None) -> torch.Tensor:
        with torch.no_grad():
            return module(x, positions=positions)

    return layer


def _first_token_margin(
    layer: Callable[..., torch.Tensor], token: torch.Tensor, seq_len: int
) -> tuple[float, float, float]:
    """Identical tokens through ``layer``: the first output's distance to its nearest other,
    the median of that distance over the other outputs, and the mean output norm."""
    outputs = layer(token.expand(seq_len, -1))
    distances = torch.cdist(outputs, outputs).fill_diagonal_(float("inf"))
    nearest = distances.min(1).values
    return float(nearest[0]), float(nearest[1:].median()), float(outputs.norm(dim=-1).mean())


@evidence("004-relative-loses-absolute")
def relative_loses_absolute(layer: Callable[..., torch.Tensor] | None = None) -> Finding:
    """The source's example: can the first of many identical tokens still be told apart?

    Shaw's layer, bidirectional, at 12 and 200 identical tokens: the first output's distance
    to its nearest other, against the same distance for the other outputs and the output's
    norm. The claim says relative positions *may* lose which token is first: it holds if at
    the longer length the first output is no further from its neighbour than 5% of its norm,
    with a caveat if it is still not lost outright (no other output equals it). What
    relative positions lose for certain is shown beside it: shifting every position by the
    same amount changes nothing.
    """
    layer = layer or shaw_layer()
    token = torch.randn(1, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    short, long = (_first_token_margin(layer, token, n) for n in (12, 200))
    shifted = layer(token.expand(12, 16), positions=torch.arange(12) + 1000)
    shift_change = float((layer(token.expand(12, 16)) - shifted).abs().max())
    first, norm = long[0], long[2]
    faint = first <= 0.05 * norm
    lengths = [
        f"{n} identical tokens (Shaw, K = 3): the first output is {f:.3f} from its nearest"
        f" other (the others: median {o:.3f}); outputs of norm about {m:.1f}"
        for n, (f, o, m) in ((12, short), (200, long))
    ]
    return Finding(
        holds=faint,
        caveat=(
            "not lost outright: the first output stays distinct, but by a margin that shrinks"
            " with the length"
            if faint and first > 1e-6
            else None
        ),
        shown=(
            *lengths,
            f"at 200 tokens the first output is {first / norm:.1%} of its norm from the next"
            " (faint: below 5%; lost: 0)",
            "what is lost for certain: shifting every position by 1,000 changes the outputs by "
            + ("< 1e-12" if shift_change < 1e-12 else f"{shift_change:.2g}"),
        ),
    )


def t5_buckets(offsets: torch.Tensor) -> torch.Tensor:
    return relative.t5_bucket(offsets)  # T5's encoder: bidirectional, 32 buckets, up to 128


@evidence("004-t5-clipped-relative")
def t5_clipped_relative(
    bucket: Callable[[torch.Tensor], torch.Tensor] = t5_buckets,
    bias_table: torch.Tensor | None = None,
) -> Finding:
    """Shaw's scheme clips offsets and adds vectors; T5 buckets offsets and adds one scalar."""
    table = relative.T5Bias(n_heads=12).bias.weight if bias_table is None else bias_table
    far = int(bucket(torch.arange(16, 128)).unique().numel())
    vectors = table.dim() != 2 or table.shape[1] != 12  # T5: one scalar per (bucket, head)
    return Finding(
        holds=vectors and far == 1,
        shown=(
            f"offsets 16 to 127 fall into {far} buckets (clipping: 1); bias table"
            f" {tuple(table.shape)} (buckets, heads)",
        ),
    )
