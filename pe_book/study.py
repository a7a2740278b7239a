"""Train short, test long: the controlled extrapolation study of chapter 11.

``python -m pe_book.study [--design lm] [--seeds 0-4] [--positions ...]`` trains one
:class:`pe_book.model.CharLM` per position method and seed, at length ``train_len``,
then measures, on the same validation segments for every method and seed:

- the loss of every segment read in windows of 1, 2, 4, 8 and 16 times the unit
  length (non-overlapping windows; perplexity is exp of the mean);
- the loss of the longest windows per bin of ``eval_unit`` targets, and of the same
  targets with the context capped at ``eval_unit`` (sliding windows): their difference
  is the *extra-context cost* that chapter 11's verdicts rest on.

Each segment's numbers are stored (not only the means), so every interval of
:mod:`pe_book.intervals` can be recomputed from ``results/``. A *design* names a
configuration and its methods (:data:`DESIGNS`): ``lm`` (the base study, every
registered method), ``long`` (the train-long reference: trained at the longest test
length with the same tokens per step), ``scale`` (one step up in size), ``lr-low`` and
``lr-high`` (the learning-rate check) and ``quick``. Results go to
``results/study/<design>/seed<N>/<method>.json``, one atomic JSON file per run; a rerun
skips every run whose record exists and matches the current config and corpus, so a
study spans several sittings. (``python -m pe_book.experiments extrapolation`` is
the same command.)
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time
from pathlib import Path
from typing import Any

import torch
from tqdm import tqdm

from pe_book import data
from pe_book._validate import validate_choice, validate_int
from pe_book.evaluation import (
    by_bin,
    evaluate,
    evaluate_sliding,
    first_token_attention,
    rounded,
    scaled_rope_losses,
)
from pe_book.model import POSITIONS, CharLM, ModelConfig
from pe_book.results import (
    RESULTS,
    SCHEMA_VERSION,
    STUDIED,
    load_result,
    versions,
    write_atomically,
)
from pe_book.seed import seed_everything

__all__ = [
    "DESIGNS",
    "QUICK",
    "TRAINABLE",
    "Design",
    "StudyConfig",
    "main",
    "run_method",
    "run_seeds",
    "run_study",
    "study_path",
    "train",
]


@dataclasses.dataclass(frozen=True)
class StudyConfig:
    """Everything that must be equal between methods (and between a run and its resume)."""

    train_len: int = 64
    steps: int = 1500
    batch: int = 32
    learning_rate: float = 3e-3
    warmup: int = 100
    dim: int = 128
    n_layers: int = 2
    n_heads: int = 4
    eval_multiples: tuple[int, ...] = (1, 2, 4, 8, 16)  # test lengths, in units of eval_unit
    eval_segments: int = 64  # evenly spaced validation segments of max length
    sliding_stride: int = 16  # the same-target baseline: windows of eval_unit, this stride
    seed: int = 0
    threads: int = 2  # recorded, but not part of what a resumed run must match
    eval_unit: int | None = None  # the capped context and the unit of the test lengths;
    # None: train_len. The train-long reference sets it to the short models' train_len.

    @property
    def unit(self) -> int:
        """The capped context length, and the unit of ``eval_multiples``."""
        return self.train_len if self.eval_unit is None else self.eval_unit

    @property
    def lengths(self) -> tuple[int, ...]:
        """The test lengths: ``eval_multiples`` times the unit."""
        return tuple(multiple * self.unit for multiple in self.eval_multiples)

    def model_config(self, position: str) -> ModelConfig:
        """The model for one method.

        T5's buckets end at train_len / 2 (``t5_max_distance``), so that its last,
        shared bucket is trained on many distances (here 31 to 63), as in T5, whose
        buckets end at 128 for inputs of 512. With 32 causal buckets 16 are exact, so
        the end is at least 17. With max_distance >= train_len the last buckets
        would be reached rarely or never in training and keep their initial values.
        """
        return ModelConfig(
            position,
            len(data.VOCAB),
            dim=self.dim,
            n_layers=self.n_layers,
            n_heads=self.n_heads,
            train_len=self.train_len,
            t5_max_distance=max(self.train_len // 2, 17),
            max_len=max(self.lengths),
        )


#: The small configuration of chapter 11's live cell (``--quick``).
QUICK = StudyConfig(
    train_len=32,
    steps=200,
    batch=16,
    warmup=20,
    dim=64,
    eval_multiples=(1, 2, 4, 8),
    eval_segments=16,
)


def _learning_rate(step: int, config: StudyConfig) -> float:
    """Linear warm-up, then cosine decay to 10% of the peak."""
    if step < config.warmup:
        return config.learning_rate * (step + 1) / config.warmup
    progress = (step - config.warmup) / max(1, config.steps - config.warmup)
    return config.learning_rate * (0.1 + 0.45 * (1 + math.cos(math.pi * progress)))


def train(
    model: CharLM, corpus: data.Corpus, config: StudyConfig, *, progress: bool = True
) -> list[float]:
    """AdamW on the corpus's training text; returns the loss (nats/char) of every step."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate, weight_decay=0.01)
    offsets = data.batch_offsets(
        corpus.train.numel(), config.train_len, config.batch, config.steps, seed=config.seed
    )
    losses = []
    model.train()
    bar = tqdm(
        range(config.steps),
        desc=model.config.position,
        disable=not progress,
        file=sys.stdout,
        leave=False,
    )
    for step in bar:
        for group in optimizer.param_groups:
            group["lr"] = _learning_rate(step, config)
        loss = model.loss(*data.training_batch(corpus.train, offsets[step], config.train_len))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
        if step % 50 == 0:
            bar.set_postfix(loss=f"{loss.item():.3f}")
    return losses


def _segments(corpus: data.Corpus, config: StudyConfig) -> torch.Tensor:
    """The validation segments every method and seed is scored on (no seed: one text)."""
    return data.eval_segments(corpus.valid, max(config.lengths), config.eval_segments)


def run_method(
    position: str, corpus: data.Corpus, config: StudyConfig, *, progress: bool = True
) -> dict[str, Any]:
    """Train one method with ``config.seed`` and evaluate it; returns the result record.

    Stores, per validation segment: its mean loss at every test length
    (``segment_loss``; None where the model cannot run), and for the longest windows
    its mean loss per bin of ``eval_unit`` targets with the full context
    (``full_by_bin``) and with the context capped at ``eval_unit`` (``capped_by_bin``,
    bins 1.. only: the first bin has no more context to cap).
    """
    seed_everything(config.seed)
    threads_before = torch.get_num_threads()
    torch.set_num_threads(config.threads)
    model = CharLM(config.model_config(position))
    start = time.perf_counter()
    losses = train(model, corpus, config, progress=progress)
    train_seconds = time.perf_counter() - start
    segments = _segments(corpus, config)
    unit = config.unit
    segment_loss: dict[str, list[float] | None] = {}
    full: torch.Tensor | None = None
    for length in config.lengths:
        try:
            scored = evaluate(model, segments, length)  # (count, longest)
        except ValueError:  # the learned table has no rows past train_len
            segment_loss[str(length)] = None
            continue
        segment_loss[str(length)] = rounded(scored.mean(1))
        full = scored if length == max(config.lengths) else full
    # the same targets (j >= unit), with the context capped at unit tokens
    capped = evaluate_sliding(model, segments, unit, config.sliding_stride)
    capped = capped[:, config.sliding_stride :]  # (count, longest - unit): targets j >= unit
    record: dict[str, Any] = {
        "schema": SCHEMA_VERSION,
        "position": position,
        "config": dataclasses.asdict(config),
        "model": dataclasses.asdict(model.config),
        "corpus_checksum": corpus.checksum,
        "versions": versions(),
        "train_seconds": train_seconds,
        "wall_seconds": 0.0,
        "train_loss_last_100": sum(losses[-100:]) / len(losses[-100:]),
        "perplexity": {
            n: None if v is None else math.exp(sum(v) / len(v)) for n, v in segment_loss.items()
        },
        "segment_loss": segment_loss,
        "loss_by_position": None if full is None else rounded(full.mean(0)),
        "full_by_bin": None if full is None else rounded(by_bin(full, unit)),
        "capped_by_bin": rounded(by_bin(capped, unit)),
        "same_targets": {
            "capped_context_loss": float(capped.mean()),
            "full_context_loss": None if full is None else float(full[:, unit:].mean()),
        },
    }
    record["first_token_attention"] = first_token_attention(model, segments, config.unit)
    if model.position.scalable:  # the same trained weights, angles changed at inference
        record["rope_scaling_segment_loss"] = scaled_rope_losses(
            model, segments, config.lengths, config.train_len
        )
        record["rope_scaling"] = {
            name: {n: math.exp(sum(v) / len(v)) for n, v in table.items()}
            for name, table in record["rope_scaling_segment_loss"].items()
        }
    record["wall_seconds"] = time.perf_counter() - start
    torch.set_num_threads(threads_before)
    return record


def run_study(
    out: Path,
    config: StudyConfig,
    positions: tuple[str, ...] = STUDIED,
    *,
    progress: bool = True,
) -> dict[str, dict[str, Any]]:
    """Run (or resume) one seed of a study: one JSON file per method in ``out``."""
    corpus = data.load_corpus()
    results = {}
    for position in positions:
        path = Path(out) / f"{position}.json"
        record = load_result(path, config, corpus.checksum)
        if record is None:
            record = run_method(position, corpus, config, progress=progress)
            write_atomically(path, record)
        results[position] = record
    return results


@dataclasses.dataclass(frozen=True)
class Design:
    """One configuration of the study and the methods it trains (chapter 11)."""

    config: StudyConfig
    positions: tuple[str, ...]
    purpose: str


#: Every method the character model can train, from the registry (chapters 3-10).
TRAINABLE = POSITIONS

#: Every design of the study by name (``--design``), fixed before its runs (chapter 11).
DESIGNS: dict[str, Design] = {
    "lm": Design(StudyConfig(), TRAINABLE, "the base study: every method, trained at L = 64"),
    "long": Design(
        StudyConfig(train_len=1024, batch=2, eval_unit=64),
        ("sinusoidal", "rope", "alibi", "kerple"),
        "the train-long reference: trained at L = 1024 with the base study's 2,048 tokens "
        "per step, tested like it",
    ),
    "scale": Design(
        StudyConfig(dim=256, n_layers=4, train_len=128, batch=16, eval_multiples=(1, 2, 4, 8)),
        ("none", "shaw", "t5", "alibi", "kerple", "fire"),
        "one step up: 4 layers of width 256 (3.2M parameters, 7.6 times the base) trained at "
        "L = 128 with the base study's 2,048 characters per step and steps (a budget of about "
        "20 minutes of one core per run; more text would cost proportionally more)",
    ),
    "lr-low": Design(
        StudyConfig(learning_rate=1e-3), ("t5", "rope", "alibi"), "the base study at 1e-3"
    ),
    "lr-high": Design(
        StudyConfig(learning_rate=1e-2), ("t5", "rope", "alibi"), "the base study at 1e-2"
    ),
    "quick": Design(QUICK, STUDIED, "a small run for the chapter's live cell"),
}


def study_path(design: str, seed: int, root: Path = RESULTS) -> Path:
    """The folder of one design's runs with one seed: results/study/<design>/seed<N>."""
    validate_choice("design", design, tuple(DESIGNS))
    return Path(root) / "study" / design / f"seed{validate_int('seed', seed, minimum=0)}"


def run_seeds(
    design: str,
    seeds: tuple[int, ...],
    positions: tuple[str, ...] | None = None,
    *,
    root: Path = RESULTS,
    threads: int | None = None,
    progress: bool = True,
) -> dict[int, dict[str, dict[str, Any]]]:
    """Run (or resume) a design for each seed, seed by seed; returns the records."""
    chosen = DESIGNS[validate_choice("design", design, tuple(DESIGNS))]
    config = chosen.config
    if threads is not None:
        config = dataclasses.replace(config, threads=validate_int("threads", threads, minimum=1))
    methods = chosen.positions if positions is None else positions
    return {
        seed: run_study(
            study_path(design, seed, root),
            dataclasses.replace(config, seed=seed),
            tuple(methods),
            progress=progress,
        )
        for seed in seeds
    }


def _table(results: dict[str, dict[str, Any]]) -> str:
    lengths = list(next(iter(results.values()))["perplexity"])
    lines = [f"{'method':<15}" + "".join(f"{'L=' + n:>9}" for n in lengths) + f"{'train s':>9}"]
    for position, record in results.items():
        cells = "".join(
            f"{'-' if v is None else f'{v:.3f}':>9}" for v in record["perplexity"].values()
        )
        lines.append(f"{position:<15}{cells}{record['train_seconds']:>9.0f}")
    return "\n".join(lines)


def _seeds(text: str) -> tuple[int, ...]:
    """'0-4' -> (0, 1, 2, 3, 4); '0,2' -> (0, 2); '3' -> (3,)."""
    seeds: list[int] = []
    for part in text.split(","):
        first, _, last = part.partition("-")
        try:
            low, high = int(first), int(last or first)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"seeds must look like 0-4, 0,2 or 3, got {text!r}"
            ) from None
        if low < 0 or high < low:
            raise argparse.ArgumentTypeError(f"seeds must be a rising range of ints >= 0: {text!r}")
        seeds.extend(range(low, high + 1))
    return tuple(dict.fromkeys(seeds))


def main(argv: list[str]) -> int:
    """``python -m pe_book study``: run (or resume) a design for some seeds; the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--design", choices=tuple(DESIGNS), default="lm", help="which study")
    parser.add_argument("--quick", action="store_true", help="same as --design quick")
    parser.add_argument("--seeds", type=_seeds, default=(0,), help="e.g. 0-4 (default 0)")
    parser.add_argument("--positions", nargs="+", choices=POSITIONS, default=None)
    parser.add_argument("--root", type=Path, default=RESULTS, help="folder holding study/")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads (default 2)")
    args = parser.parse_args(argv)
    design = "quick" if args.quick else args.design
    runs = run_seeds(
        design,
        args.seeds,
        None if args.positions is None else tuple(args.positions),
        root=args.root,
        threads=args.threads,
    )
    for seed, results in runs.items():
        print(f"{design}, seed {seed}: perplexity (characters) on validation text")
        print(_table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
