"""Evidence for the claims about learned absolute and relative positions (chapter 6)."""

from __future__ import annotations

from collections.abc import Callable

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


def step_flops(position: str) -> int:
    """Multiply-add FLOPs of one training step (forward and backward) of chapter 11's model
    with ``position``, batch 2 at L = 64 (torch's FlopCounterMode: it counts the matrix
    products, which is where a model's arithmetic is; additions and lookups count 0)."""
    from torch.utils.flop_counter import FlopCounterMode

    from pe_book import data
    from pe_book.model import CharLM
    from pe_book.positions import ModelConfig

    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = CharLM(ModelConfig(position, vocab_size=len(data.VOCAB)))
        tokens = torch.randint(0, len(data.VOCAB), (2, 64))
    with torch.enable_grad(), FlopCounterMode(display=False) as counter:
        logits = model(tokens)
        nn.functional.cross_entropy(logits.flatten(0, 1), tokens.flatten()).backward()
    return int(counter.get_total_flops())


@evidence("004-learned-cost")
def learned_cost(flops: Callable[[str], int] = step_flops) -> Finding:
    """More parameters by definition; their share of BERT-base; the step's arithmetic.

    "No more computation" is decided by counting, not timing: the learned model's training
    step does exactly the matrix products of the sinusoidal one (a table lookup and an
    addition are not products). Chapter 12's timed ratio is shown beside it, one
    measurement under load, too noisy to decide a difference of a few percent.
    """
    from pe_book.claims.cost import committed_rows  # chapter 12's committed cost run

    count = _parameters(learned.LearnedPositions(512, 768))
    share = count / BERT_BASE_PARAMETERS
    table, fixed = flops("learned"), flops("sinusoidal")
    at_1024 = {row.position: row for row in committed_rows() if row.seq_len == 1024}
    train = at_1024["learned"].train_ms / at_1024["sinusoidal"].train_ms
    infer = at_1024["learned"].infer_ms / at_1024["sinusoidal"].infer_ms
    small_and_free = share < 0.01 and table == fixed
    return Finding(
        holds=count > 0,
        caveat="a small share, and no more computation" if small_and_free else None,
        shown=(
            f"{count:,} parameters, {share:.2%} of BERT-base's 110 million",
            f"FLOPs of a training step of chapter 11's model (L = 64, batch 2): learned"
            f" {table:,}, sinusoidal {fixed:,}",
            f"timed once in chapter 12's cost run, L = 1024, learned / sinusoidal: training"
            f" step {train:.2f}×, inference {infer:.2f}× (load noise, not arithmetic)",
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


@evidence("004-relative-loses-absolute")
def relative_loses_absolute(layer: Callable[..., torch.Tensor] | None = None) -> Finding:
    """The source's example: can the first of twelve identical tokens still be told apart?

    What relative positions lose is shown beside it: shifting every position by
    the same amount changes nothing.
    """
    layer = layer or shaw_layer()
    token = torch.randn(1, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    same = token.expand(12, 16)
    outputs = layer(same)
    shifted = layer(same, positions=torch.arange(12) + 1000)
    shift_change = float((outputs - shifted).abs().max())
    first = float(torch.cdist(outputs[:1], outputs[1:]).min())  # first output to its nearest
    closest = float(torch.pdist(outputs).min())
    return Finding(
        holds=first < 1e-6,  # the first token's output is shared by another: it is lost
        shown=(
            f"12 identical tokens (Shaw, K = 3): the first output is {first:.2f} from the"
            f" nearest other (lost would be < 1e-6); no two outputs closer than {closest:.2f}",
            "what is lost: shifting every position by 1,000 changes the outputs by "
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
