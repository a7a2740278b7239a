"""What position costs (chapter 12): time and memory of each method relative to NoPE.

For each sequence length L, one :class:`pe_book.model.CharLM` per position
method (the chapter 11 model: same size, ``train_len = L`` so the learned table
fits) is timed side by side, round-robin (``pe_book.measure.time_round_robin``):

- a training step: forward, backward and an AdamW update on a (batch, L) batch;
- an inference forward pass under ``torch.no_grad``;
- the memory one training step allocates (``pe_book.measure.allocations_mib``):
  the largest net allocation of one operation (an L × L tensor shows here) and
  the sum of all allocations, freed or not (a measure of memory traffic, not of
  peak memory).

Ratios are to the "none" (NoPE) model measured in the same run; milliseconds
depend on the machine, ratios much less.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from pe_book import data
from pe_book._validate import validate_int
from pe_book.measure import allocations_mib, time_round_robin
from pe_book.model import CharLM, ModelConfig
from pe_book.results import RESULTS, SCHEMA_VERSION, STUDIED, versions, write_atomically
from pe_book.seed import seed_everything

__all__ = ["CostRow", "cost_study", "load_cost", "main", "print_cost", "scaling_exponent"]


@dataclass(frozen=True)
class CostRow:
    """One (L, method) row of chapter 12's cost table: times, ratios to NoPE, memory."""

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
    positions: tuple[str, ...] = STUDIED,
    threads: int = 2,
    progress: bool = False,
) -> list[CostRow]:
    """Rows of (L, method) timings and memory; "none" must be among ``positions``.

    ``progress`` shows a bar over the lengths on stderr (the command line's).
    """
    from tqdm import tqdm

    if "none" not in positions:
        raise ValueError("positions must include 'none' (the baseline of every ratio)")
    batch = validate_int("batch", batch, minimum=1)
    repeats = validate_int("repeats", repeats, minimum=1)
    rows = []
    threads_before = torch.get_num_threads()
    for seq_len in tqdm(seq_lens, desc="cost, lengths", disable=not progress):
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


def load_cost(path: str | Path | None = None) -> dict[str, Any]:
    """results/cost.json, validated: {"rows": [CostRow, ...], and its other fields}."""
    path = Path(path) if path is not None else RESULTS / "cost.json"
    stored = json.loads(path.read_text(encoding="utf-8"))
    for field in ("rows", "seq_lens", "repeats", "versions"):
        if field not in stored:
            raise ValueError(f"{path}: field {field!r} is missing")
    try:
        rows = [CostRow(**row) for row in stored["rows"]]
    except TypeError as error:
        raise ValueError(f"{path}: a row does not match CostRow: {error}") from None
    lengths = {row.seq_len for row in rows}
    if lengths != set(stored["seq_lens"]):
        raise ValueError(f"{path}: rows cover lengths {sorted(lengths)}, not {stored['seq_lens']}")
    return {**stored, "rows": rows}


def scaling_exponent(t1: float, l1: int, t2: float, l2: int) -> float:
    """The exponent p of time ∝ L^p through two measurements (t1 at l1, t2 at l2). Chapter 12."""
    return math.log(t2 / t1) / math.log(l2 / l1)


def print_cost(quick: bool, kernels: bool, out: Path | None) -> None:
    """Run the cost study, write it to out/cost.json, print it (and the kernel tables)."""
    from pe_book import bench

    seq_lens, repeats = ((64, 128), 2) if quick else ((256, 1024), 5)
    start = time.perf_counter()
    rows = cost_study(seq_lens, repeats=repeats, progress=True)
    if out is not None:
        record = {
            "schema": SCHEMA_VERSION,
            "study": "cost",
            "seq_lens": list(seq_lens),
            "repeats": repeats,
            "versions": versions(),
            "wall_seconds": time.perf_counter() - start,
            "rows": [dataclasses.asdict(row) for row in rows],
        }
        write_atomically(out / "cost.json", record)
    print("cost per method vs NoPE (batch 8, dim 128, 2 layers, 4 heads, 2 threads)")
    print(
        f"{'L':>5} {'method':<11} {'train ms':>9} {'x NoPE':>7} {'infer ms':>9} "
        f"{'x NoPE':>7} {'max MiB':>8} {'sum MiB':>8} {'params':>8}"
    )
    for row in rows:
        print(
            f"{row.seq_len:>5} {row.position:<11} {row.train_ms:>9.1f} {row.train_ratio:>7.2f}"
            f" {row.infer_ms:>9.1f} {row.infer_ratio:>7.2f} {row.largest_alloc_mib:>8.0f}"
            f" {row.total_alloc_mib:>8.0f}"
            f" {row.parameters:>8,}"
        )
    if not kernels:
        return
    print("\nRoPE kernels (section 12.6), median over 3 fresh processes, ratio to a copy of q, k:")
    for name, ms, ratio, low, high in bench.rope_benchmark_in_processes(processes=3, repeats=10):
        print(f"  {name:<34} {ms:>7.2f} ms {ratio:>6.2f} [{low:.2f}..{high:.2f}]")
    print("\nALiBi attention (section 12.7), ratio to causal SDPA without bias:")
    for seq_len, name, ms, ratio, largest in bench.alibi_benchmark((1024,), repeats=3):
        print(f"  L={seq_len} {name:<30} {ms:>7.1f} ms {ratio:>6.2f} largest {largest:>5.0f} MiB")


def main(argv: list[str]) -> int:
    """``python -m pe_book cost``: chapter 12's table into results/cost.json; the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-kernels", action="store_true", help="skip the kernel tables")
    parser.add_argument("--quick", action="store_true", help="a small run, well under a minute")
    parser.add_argument("--out", type=Path, default=None, help="folder for cost.json")
    args = parser.parse_args(argv)
    out = args.out or (None if args.quick else Path("results"))
    print_cost(args.quick, kernels=not args.no_kernels, out=out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
