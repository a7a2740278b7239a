"""Evidence for the claims about learned absolute and relative positions (chapter 6)."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch
from torch import nn

from pe_book import learned, relative
from pe_book.claims import Finding, evidence
from pe_book.sinusoidal import SinusoidalEncoding, sinusoidal_table

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
            f"more computation only in training, {extra_share:.3%} of a step, none at inference"
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
    """A table has no row past its last: pe_book's refuses, MiniLM's real table has 512 rows.

    The caveat is the scope of that definition: it takes the trained length to be max_len,
    while a table can have rows its training never reached (MiniLM's model card: its
    fine-tuning used at most 128 tokens of its 512 positions).
    """
    try:
        learned.LearnedPositions(512, 16).positions(1, start=512)
        refused = False
    except ValueError:
        refused = True
    table = learned.minilm_position_table_or_none()
    rows = "not installed" if table is None else f"{table.shape[0]} rows"
    shown = [f"position 512 refused: {refused}; MiniLM's table: {rows}"]
    if table is not None:
        sentences = " ".join(learned.minilm_model_card().split()).split(". ")
        shown += [f"MiniLM's model card: {s.rstrip('.')}." for s in sentences if "length" in s]
    return Finding(
        holds=refused,
        caveat=(
            "only where max_len is the trained length: a table can have rows its training"
            " never reached"
            if refused
            else None
        ),
        shown=tuple(shown),
    )


def shaw_layer(seed: int = 0) -> Callable[..., torch.Tensor]:
    """pe_book's ShawAttention (d = 16, 2 heads, K = 3), float64, initialised from ``seed``."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        module = relative.ShawAttention(dim=16, n_heads=2, max_offset=3).double()

    def layer(
        x: torch.Tensor, positions: torch.Tensor | None = None, causal: bool = False
    ) -> torch.Tensor:
        with torch.no_grad():
            return module(x, positions=positions, causal=causal)

    return layer


#: The layers the first-token evidence is measured in: Shaw's layer from these seeds.
SHAW_SEEDS = range(5)


def _first_token_margin(
    layer: Callable[..., torch.Tensor], token: torch.Tensor, seq_len: int, causal: bool = False
) -> tuple[float, float, float]:
    """Identical tokens through ``layer``: the first output's distance to its nearest other,
    the median of that distance over the other outputs, and the mean output norm."""
    outputs = layer(token.expand(seq_len, -1), causal=causal)
    distances = torch.cdist(outputs, outputs).fill_diagonal_(float("inf"))
    nearest = distances.min(1).values
    return float(nearest[0]), float(nearest[1:].median()), float(outputs.norm(dim=-1).mean())


@evidence("004-relative-loses-absolute")
def relative_loses_absolute(layer: Callable[..., torch.Tensor] | None = None) -> Finding:
    """The source's example: can the first of many identical tokens still be told apart?

    Shaw's layer (seeds 0-4, or ``layer``) at 12 and 200 identical tokens: the first
    output's distance to its nearest other, against the same distance for the other outputs
    and the output's norm, without a mask (bidirectional) and with a causal one. The claim
    says relative positions *may* lose which token is first: it holds if, bidirectional, at
    the longer length the first output is no further from its neighbour than 5% of its norm
    in every layer. The caveats are what the evidence finds beside it: the mark is not lost
    outright (no other output equals the first), and a causal mask keeps it (the first token
    attends only to itself, so its output stays more than 5% of its norm from every other).
    What relative positions lose for certain is shown too: shifting every position by the
    same amount changes nothing.
    """
    layers = [layer] if layer is not None else [shaw_layer(seed) for seed in SHAW_SEEDS]
    seeds = "" if layer is not None else f", seeds {SHAW_SEEDS[0]}-{SHAW_SEEDS[-1]}"
    token = torch.randn(1, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    short, long = (_first_token_margin(layers[0], token, n) for n in (12, 200))
    shifted = layers[0](token.expand(12, 16), positions=torch.arange(12) + 1000)
    shift_change = float((layers[0](token.expand(12, 16)) - shifted).abs().max())
    both = [_first_token_margin(each, token, 200) for each in layers]
    masked = [_first_token_margin(each, token, 200, causal=True) for each in layers]
    faint_share = max(first / norm for first, _, norm in both)
    kept_share = min(first / norm for first, _, norm in masked)
    faint, kept = faint_share <= 0.05, kept_share > 0.05
    outright = min(first for first, _, _ in both) > 1e-6
    caveats = [
        "for bidirectional attention only: a causal mask keeps the first token distinct"
        if kept
        else None,
        "not lost outright: the first output stays distinct, by a margin that shrinks with"
        " the length"
        if outright
        else None,
    ]
    lengths = [
        f"{n} identical tokens (Shaw, K = 3, bidirectional): the first output is {f:.3f} from"
        f" its nearest other (the others: median {o:.3f}); outputs of norm about {m:.1f}"
        for n, (f, o, m) in ((12, short), (200, long))
    ]
    return Finding(
        holds=faint,
        caveat=("; ".join(c for c in caveats if c) or None) if faint else None,
        shown=(
            *lengths,
            f"bidirectional, 200 tokens{seeds}: the first output at most {faint_share:.1%} of"
            " its norm from the next (faint: below 5%; lost: 0)",
            f"causal mask, 200 tokens{seeds}: the first output at least {kept_share:.1%} of its"
            f" norm from the next, the others at most"
            f" {max(other for _, other, _ in masked):.4f} from theirs (kept: above 5%)",
            "what is lost for certain: shifting every position by 1,000 changes the outputs by "
            + ("< 1e-12" if shift_change < 1e-12 else f"{shift_change:.2g}"),
        ),
    )


def t5_buckets(offsets: torch.Tensor) -> torch.Tensor:
    return relative.t5_bucket(offsets)  # T5's encoder: bidirectional, 32 buckets, up to 128


def txl_offset_vectors(offsets: torch.Tensor) -> torch.Tensor:
    """Transformer-XL's R_r: row r of the sinusoidal table (chapter 3), here with d = 16."""
    return sinusoidal_table(int(offsets.max()) + 1, 16, dtype=torch.float64)[offsets]


@evidence("004-t5-clipped-relative")
def t5_clipped_relative(
    bucket: Callable[[torch.Tensor], torch.Tensor] = t5_buckets,
    bias_table: torch.Tensor | None = None,
    txl_vectors: Callable[[torch.Tensor], torch.Tensor] = txl_offset_vectors,
) -> Finding:
    """Shaw's scheme clips offsets and adds vectors; T5 buckets offsets and adds one scalar,
    and Transformer-XL gives every offset its own sinusoid R_r (section 6.4): clipping would
    give all offsets past K one bucket, one vector."""
    table = relative.T5Bias(n_heads=12).bias.weight if bias_table is None else bias_table
    far = int(bucket(torch.arange(16, 128)).unique().numel())
    vectors = table.dim() != 2 or table.shape[1] != 12  # T5: one scalar per (bucket, head)
    txl_far = int(txl_vectors(torch.arange(16, 128)).unique(dim=0).shape[0])
    return Finding(
        holds=vectors and far == 1 and txl_far == 1,
        shown=(
            f"T5: offsets 16 to 127 fall into {far} buckets (clipping: 1); bias table"
            f" {tuple(table.shape)} (buckets, heads)",
            f"Transformer-XL: offsets 16 to 127 get {txl_far} distinct vectors R_r (clipping: 1)",
        ),
    )
