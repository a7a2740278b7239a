"""What position costs (chapter 12): time and memory of each method relative to NoPE.

For each sequence length L, one :class:`pe_book.model.CharLM` per position
method (the chapter 11 model: same size, ``train_len = L`` so the learned table
fits), and for a method with a fast path (``PositionMethod.fast_path``) one on its plain
path too (``ModelConfig(fused=False)``), is timed side by side, round-robin
(``pe_book.measure.time_round_robin``), on batches of :data:`TOKENS` tokens
(batch = TOKENS / L):

- a training step: forward, backward and an AdamW update on a (batch, L) batch;
- an inference forward pass under ``torch.no_grad``;
- the memory one training step allocates (``pe_book.measure.allocations_mib``):
  the largest net allocation of one operation (an L × L tensor shows here) and
  the sum of all allocations, freed or not (a measure of memory traffic, not of
  peak memory); and, for pe_book's attention kernel, which allocates in C where the
  profiler cannot see, its scratch memory and how many times it ran (the path taken).

A path whose largest allocation, grown as L² from the previous length, would pass
:data:`MEMORY_BUDGET_MIB` is not run at the longer length (the plain paths that build
L × L tensors for the whole batch, at L = 4096).

Ratios are to the "none" (NoPE) model measured in the same run; milliseconds
depend on the machine, ratios much less.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from pe_book import bias_attention, data, positions
from pe_book._validate import validate_int
from pe_book.measure import allocations_mib, cpu_report, time_round_robin
from pe_book.model import CharLM, ModelConfig
from pe_book.results import RESULTS, SCHEMA_VERSION, versions, write_atomically
from pe_book.seed import seed_everything

__all__ = [
    "LENGTHS",
    "MEMORY_BUDGET_MIB",
    "METHOD_LENGTH",
    "METHOD_TARGETS",
    "TOKENS",
    "CostRow",
    "cost_study",
    "load_cost",
    "main",
    "method_benchmark",
    "method_target_met",
    "print_cost",
    "scaling_exponent",
    "skipped_paths",
    "time_exponents",
]

#: Tokens per training step at every length: batch = TOKENS / L (32, 8 and 2 sequences).
TOKENS = 8192
#: The lengths of chapter 12's table.
LENGTHS = (256, 1024, 4096)
#: A path is not run at a length where its largest allocation would pass this (MiB).
MEMORY_BUDGET_MIB = 1024
#: The length at which ``python -m pe_book.bench <method>`` times the model (batch 8).
METHOD_LENGTH = 1024
#: Issue 26's targets for the fast paths, as ratios to NoPE at METHOD_LENGTH; every fast
#: path must also cost at most its plain path (within :data:`SLACK`).
METHOD_TARGETS: dict[str, dict[str, float]] = {
    "alibi": {"train": 1.15},
    "t5": {"train": 1.3, "infer": 1.2},
    "shaw": {"train": 2.5},
}
#: What "at most its plain cost" allows for noise between processes (5%).
SLACK = 1.05


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
    fused: bool = True  # the method's fast path; False: its plain path
    batch: int = 8  # sequences per step
    kernel_calls: int = 0  # runs of pe_book's attention kernel in one training step
    scratch_mib: float = 0.0  # that kernel's scratch memory, all threads (C, unseen above)

    @property
    def sequence_ms(self) -> float:
        """Training-step time per sequence, which the time exponents compare across L."""
        return self.train_ms / self.batch


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


def _model(position: str, seq_len: int, fused: bool, **sizes: int) -> CharLM:
    seed_everything(0)  # the same weights for every path of a method
    config = ModelConfig(
        position, len(data.VOCAB), train_len=seq_len, max_len=max(seq_len, 1024), fused=fused,
        **sizes,
    )  # fmt: skip
    return CharLM(config)


def _scratch_mib(model: CharLM, batch: int, seq_len: int, threads: int) -> float:
    """The kernel's scratch for one layer's backward pass (the larger), all threads."""
    config = model.config
    q = torch.empty(batch, config.n_heads, seq_len, config.dim // config.n_heads)
    return bias_attention.scratch_bytes(q, q, q, backward=True) * threads / 2**20


def _paths(position: str) -> tuple[bool, ...]:
    """(True, False) for a method with a fast path, (True,) for one with a single path."""
    fast = positions.build(ModelConfig(position, len(data.VOCAB))).fast_path
    return (True, False) if fast else (True,)


def cost_study(
    seq_lens: tuple[int, ...] = LENGTHS,
    *,
    tokens: int = TOKENS,
    dim: int = 128,
    n_layers: int = 2,
    n_heads: int = 4,
    repeats: int = 5,
    positions: tuple[str, ...] | None = None,
    threads: int = 2,
    budget_mib: float = MEMORY_BUDGET_MIB,
    previous: tuple[CostRow, ...] = (),
    progress: bool = False,
) -> list[CostRow]:
    """Rows of (L, method, path) timings and memory; "none" must be among ``positions``
    (default: every registered method). Batch = tokens / L (at least 1).

    ``previous`` rows (of shorter lengths, from an earlier run) count for the memory budget
    as this run's own do. ``progress`` shows a bar over the lengths on stderr.
    """
    from tqdm import tqdm

    from pe_book import positions as registry

    names = registry.names() if positions is None else positions
    if "none" not in names:
        raise ValueError("positions must include 'none' (the baseline of every ratio)")
    repeats = validate_int("repeats", repeats, minimum=1)
    tokens = validate_int("tokens", tokens, minimum=1)
    sizes = {"dim": dim, "n_layers": n_layers, "n_heads": n_heads}
    rows: list[CostRow] = []
    threads_before = torch.get_num_threads()
    for seq_len in tqdm(seq_lens, desc="cost, lengths", disable=not progress):
        seq_len = validate_int("seq_len", seq_len, minimum=1)
        batch = max(tokens // seq_len, 1)
        torch.set_num_threads(threads)
        generator = torch.Generator().manual_seed(0)
        tokens_in = torch.randint(0, len(data.VOCAB), (batch, seq_len + 1), generator=generator)
        earlier = {(r.position, r.fused): r for r in [*previous, *rows] if r.seq_len < seq_len}
        models = {}
        for p in names:
            for fused in _paths(p):
                before = earlier.get((p, fused))
                grown = before.largest_alloc_mib * (seq_len / before.seq_len) ** 2 if before else 0
                if p != "none" and grown > budget_mib:
                    continue  # it would build an L × L tensor past the budget
                models[p, fused] = _model(p, seq_len, fused, **sizes)
        steps = {key: _step(m, tokens_in) for key, m in models.items()}
        forwards = {key: _forward(m, tokens_in) for key, m in models.items()}
        memory = {}
        for key, step in steps.items():  # two steps each, a warm-up and a profiled one
            calls = bias_attention.kernel_calls()
            memory[key] = (*allocations_mib(step), (bias_attention.kernel_calls() - calls) // 2)
        train_ms = time_round_robin(steps, rounds=repeats, warmup=0)  # warm already
        infer_ms = time_round_robin(forwards, rounds=repeats, warmup=1)
        base = ("none", True)
        for key, model in models.items():
            largest, total, calls = memory[key]
            scratch = _scratch_mib(model, batch, seq_len, threads) if calls else 0.0
            row = CostRow(
                seq_len, key[0], train_ms[key], train_ms[key] / train_ms[base],
                infer_ms[key], infer_ms[key] / infer_ms[base], largest, total,
                sum(t.numel() for t in model.parameters()), key[1], batch, calls, scratch,
            )  # fmt: skip
            rows.append(row)
    torch.set_num_threads(threads_before)
    return rows


def method_benchmark(
    position: str, seq_len: int = METHOD_LENGTH, batch: int = 8, repeats: int = 5
) -> dict[str, dict[str, float]]:
    """One process's ratios to NoPE of ``position``'s fast and plain paths at ``seq_len``:
    {"fast": {"train": r, "infer": r}, "plain": {...}} (no "plain" without a fast path).

    The chapter 11 model, batch 8, timed round-robin as in :func:`cost_study`;
    ``python -m pe_book.bench <method>`` runs it in fresh processes."""
    generator = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, len(data.VOCAB), (batch, seq_len + 1), generator=generator)
    keys = [("none", True)] + [(position, fused) for fused in _paths(position)]
    models = {key: _model(key[0], seq_len, key[1]) for key in keys}
    result: dict[str, dict[str, float]] = {}
    for kind, make in (("train", _step), ("infer", _forward)):
        ms = time_round_robin({k: make(m, tokens) for k, m in models.items()}, rounds=repeats)
        for key in keys[1:]:
            result.setdefault("fast" if key[1] else "plain", {})[kind] = ms[key] / ms[keys[0]]
    return result


def method_target_met(position: str, ratios: dict[str, dict[str, float]]) -> tuple[bool, str]:
    """Whether ``position`` meets :data:`METHOD_TARGETS` and its fast path costs at most its
    plain one (within :data:`SLACK`); and the sentence saying what was checked."""
    checks = []
    for kind, target in METHOD_TARGETS.get(position, {}).items():
        checks.append((ratios["fast"][kind] <= target, f"{kind} <= {target}x NoPE"))
    if "plain" in ratios:
        for kind in ("train", "infer"):
            met = ratios["fast"][kind] <= SLACK * ratios["plain"][kind]
            checks.append((met, f"fast {kind} <= plain ({SLACK - 1:.0%} allowed for noise)"))
    if not checks:
        return True, "no fast path and no target: nothing to check"
    return all(met for met, _ in checks), "; ".join(text for _, text in checks)


def skipped_paths(
    rows: list[CostRow], budget_mib: float = MEMORY_BUDGET_MIB
) -> list[tuple[int, str, bool, float]]:
    """(L, method, fused, MiB) for every path measured at a shorter length and absent at L:
    the largest allocation its last measured row predicts at L (grown as L²), the reason
    :func:`cost_study` did not run it when that passes ``budget_mib``."""
    lengths = sorted({row.seq_len for row in rows})
    last: dict[tuple[str, bool], CostRow] = {}
    skipped = []
    for seq_len in lengths:
        here = {(row.position, row.fused): row for row in rows if row.seq_len == seq_len}
        for key, before in last.items():
            if key not in here:
                grown = before.largest_alloc_mib * (seq_len / before.seq_len) ** 2
                skipped.append((seq_len, *key, grown))
        last.update(here)
    return skipped


def load_cost(path: str | Path | None = None) -> dict[str, Any]:
    """results/cost.json, validated: {"rows": [CostRow, ...], and its other fields}.

    Complete means: NoPE (ratio 1) and each method's paths at the shortest length; at
    every longer length each path again, unless its largest allocation, grown as L², would
    pass the stored memory budget (:func:`skipped_paths`); no path twice at one length."""
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
    keys = [(row.seq_len, row.position, row.fused) for row in rows]
    if len(set(keys)) != len(keys):
        raise ValueError(f"{path}: a (length, method, path) appears twice")
    for seq_len in lengths:
        if (seq_len, "none", True) not in keys:
            raise ValueError(f"{path}: no NoPE row (the baseline) at L = {seq_len}")
    if any(r.position == "none" and (r.train_ratio, r.infer_ratio) != (1, 1) for r in rows):
        raise ValueError(f"{path}: NoPE's ratios to itself are not 1")
    shortest = min(lengths)
    first = {(row.position, row.fused) for row in rows if row.seq_len == shortest}
    if any((row.position, row.fused) not in first for row in rows):
        raise ValueError(f"{path}: a path is missing at L = {shortest}, the shortest length")
    budget = stored.get("budget_mib", MEMORY_BUDGET_MIB)
    for seq_len, position, fused, grown in skipped_paths(rows, budget):
        if grown <= budget:
            raise ValueError(
                f"{path}: {position} ({'fast' if fused else 'plain'}) is missing at L = "
                f"{seq_len}, where its largest allocation ({grown:.0f} MiB) fits the budget"
            )
    return {**stored, "rows": rows}


def time_exponents(rows: list[CostRow]) -> dict[tuple[str, bool], dict[tuple[int, int], float]]:
    """Per path (method, fused): the exponent p of time per sequence ∝ L^p between each two
    consecutive lengths at which it was measured (:func:`scaling_exponent`, chapter 12)."""
    paths: dict[tuple[str, bool], list[CostRow]] = {}
    for row in sorted(rows, key=lambda r: r.seq_len):
        paths.setdefault((row.position, row.fused), []).append(row)
    exponents: dict[tuple[str, bool], dict[tuple[int, int], float]] = {}
    for key, measured in paths.items():
        exponents[key] = {
            (a.seq_len, b.seq_len): scaling_exponent(
                a.sequence_ms, a.seq_len, b.sequence_ms, b.seq_len
            )
            for a, b in itertools.pairwise(measured)
        }
    return exponents


def scaling_exponent(t1: float, l1: int, t2: float, l2: int) -> float:
    """The exponent p of time ∝ L^p through two measurements (t1 at l1, t2 at l2). Chapter 12."""
    return math.log(t2 / t1) / math.log(l2 / l1)


def print_cost(quick: bool, out: Path | None, lengths: tuple[int, ...] = LENGTHS) -> list[CostRow]:
    """Run the cost study, write it to out/cost.json and print it; returns its rows.

    Rows of other lengths already in out/cost.json are kept (one run per length may then
    fit a machine's quiet time); its time exponents compare rows of one file."""
    seq_lens, repeats = ((64, 128), 2) if quick else (lengths, 3)
    start = time.perf_counter()
    kept: list[CostRow] = []
    if out is not None and (out / "cost.json").exists() and not quick:
        kept = [r for r in load_cost(out / "cost.json")["rows"] if r.seq_len not in seq_lens]
    rows = cost_study(seq_lens, repeats=repeats, previous=tuple(kept), progress=True)
    if out is not None:
        every = sorted(kept + rows, key=lambda r: r.seq_len)  # stable: method order kept
        record = {
            "schema": SCHEMA_VERSION,
            "study": "cost",
            "seq_lens": sorted({r.seq_len for r in every}),
            "tokens": TOKENS,
            "repeats": repeats,
            "budget_mib": MEMORY_BUDGET_MIB,
            "cpu": cpu_report(),  # the CPU, its vector extensions, the kernels' builds
            "versions": versions(),
            "wall_seconds": time.perf_counter() - start,
            "rows": [dataclasses.asdict(row) for row in every],
        }
        write_atomically(out / "cost.json", record)
    print(f"cost per method vs NoPE ({TOKENS:,} tokens a step, dim 128, 2 layers, 4 heads, "
          "2 threads); max and kernel: MiB; kernel runs per training step")  # fmt: skip
    print(
        f"{'L':>5} {'method':<16} {'path':<5} {'train x':>7} {'infer x':>7} {'max':>6}"
        f" {'kernel':>6} {'runs':>4}"
    )
    for row in rows:
        print(
            f"{row.seq_len:>5} {row.position:<16} {'fast' if row.fused else 'plain':<5}"
            f" {row.train_ratio:>7.2f} {row.infer_ratio:>7.2f} {row.largest_alloc_mib:>6.0f}"
            f" {row.scratch_mib:>6.1f} {row.kernel_calls:>4}"
        )
    return rows


def main(argv: list[str]) -> int:
    """``python -m pe_book cost``: chapter 12's table into results/cost.json; the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small run, well under a minute")
    parser.add_argument("--out", type=Path, default=None, help="folder for cost.json")
    parser.add_argument("--lengths", type=int, nargs="+", default=list(LENGTHS), help="L")
    args = parser.parse_args(argv)
    out = args.out or (None if args.quick else Path("results"))
    print_cost(args.quick, out=out, lengths=tuple(args.lengths))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
