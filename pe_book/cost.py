"""What position costs (chapter 10): time and memory of each method relative to NoPE.

For each sequence length L, one :class:`pe_book.model.CharLM` per position
method (the chapter 9 model: same size, ``train_len = L`` so the learned table
fits) is timed side by side, round-robin (``pe_book.bench.time_round_robin``):

- a training step: forward, backward and an AdamW update on a (batch, L) batch;
- an inference forward pass under ``torch.no_grad``;
- the memory one training step allocates (``pe_book.bench.allocations_mib``):
  the largest net allocation of one operation (an L × L tensor shows here) and
  the sum of all allocations, freed or not (a measure of memory traffic, not of
  peak memory).

Ratios are to the "none" (NoPE) model measured in the same run; milliseconds
depend on the machine, ratios much less.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from pe_book import data
from pe_book._validate import validate_int
from pe_book.bench import allocations_mib, time_round_robin
from pe_book.model import POSITIONS, CharLM, ModelConfig
from pe_book.seed import seed_everything

__all__ = ["CostRow", "cost_study"]


@dataclass(frozen=True)
class CostRow:
    seq_len: int
    position: str
    train_ms: float
    train_ratio: float  # to NoPE at the same length
    infer_ms: float
    infer_ratio: float
    largest_alloc_mib: float  # largest single allocation of one training step
    total_alloc_mib: float  # everything one training step allocates
    parameters: int


def _step(model: CharLM, tokens: torch.Tensor) -> Callable[[], object]:
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def train_step() -> None:
        loss = model.loss(tokens[:, :-1], tokens[:, 1:])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    return train_step


def _forward(model: CharLM, tokens: torch.Tensor) -> Callable[[], object]:
    def infer() -> torch.Tensor:
        with torch.no_grad():
            return model(tokens[:, :-1])

    return infer


def cost_study(
    seq_lens: tuple[int, ...] = (256, 1024),
    *,
    batch: int = 8,
    dim: int = 128,
    n_layers: int = 2,
    n_heads: int = 4,
    repeats: int = 5,
    positions: tuple[str, ...] = POSITIONS,
    threads: int = 2,
) -> list[CostRow]:
    """Rows of (L, method) timings and memory; "none" must be among ``positions``."""
    if "none" not in positions:
        raise ValueError("positions must include 'none' (the baseline of every ratio)")
    batch = validate_int("batch", batch, minimum=1)
    repeats = validate_int("repeats", repeats, minimum=1)
    rows = []
    threads_before = torch.get_num_threads()
    for seq_len in seq_lens:
        seq_len = validate_int("seq_len", seq_len, minimum=1)
        seed_everything(0)
        torch.set_num_threads(threads)
        generator = torch.Generator().manual_seed(0)
        tokens = torch.randint(0, len(data.VOCAB), (batch, seq_len + 1), generator=generator)
        models = {
            p: CharLM(
                ModelConfig(
                    p,
                    len(data.VOCAB),
                    dim=dim,
                    n_layers=n_layers,
                    n_heads=n_heads,
                    train_len=seq_len,
                )
            )
            for p in positions
        }
        steps = {p: _step(m, tokens) for p, m in models.items()}
        forwards = {p: _forward(m, tokens) for p, m in models.items()}
        train_ms = time_round_robin(steps, rounds=repeats, warmup=1)
        infer_ms = time_round_robin(forwards, rounds=repeats, warmup=1)
        for p in positions:
            rows.append(
                CostRow(
                    seq_len,
                    p,
                    train_ms[p],
                    train_ms[p] / train_ms["none"],
                    infer_ms[p],
                    infer_ms[p] / infer_ms["none"],
                    *allocations_mib(steps[p]),
                    sum(t.numel() for t in models[p].parameters()),
                )
            )
    torch.set_num_threads(threads_before)
    return rows
