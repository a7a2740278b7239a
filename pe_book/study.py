"""Train short, test long: the controlled extrapolation study of chapter 11.

``python -m pe_book.study [--quick] [--seed N] [--positions ...] [--out DIR]`` trains
one :class:`pe_book.model.CharLM` per position method with the same seed, data
order, steps and size, at length ``train_len``, then measures perplexity on
validation text at 1, 2, 4, 8 and 16 times that length (non-overlapping
windows), the mean loss at each position of the longest window, and the loss
of the same characters with the context capped at the training length.

Each method's result is one JSON record (:mod:`pe_book.results`), written
atomically; a rerun skips every method whose record exists and matches the
current config and corpus, so an interrupted study resumes where it stopped.
(``python -m pe_book.experiments extrapolation`` is the same command.)
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
from pe_book._validate import validate_int
from pe_book.model import POSITIONS, CharLM, ModelConfig
from pe_book.results import SCHEMA_VERSION, STUDIED, load_result, versions, write_atomically
from pe_book.rope_scaling import DynamicNTKScaling, LinearScaling, Scaling, YaRNScaling
from pe_book.seed import seed_everything

__all__ = [
    "QUICK",
    "StudyConfig",
    "evaluate",
    "evaluate_sliding",
    "main",
    "perplexity",
    "rope_scalings",
    "run_method",
    "run_study",
    "short_context_fraction",
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
    eval_multiples: tuple[int, ...] = (1, 2, 4, 8, 16)
    eval_segments: int = 64  # evenly spaced validation segments of max length
    sliding_stride: int = 16  # the same-target baseline: windows of train_len, this stride
    seed: int = 0
    threads: int = 2

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
        )


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


def _segments(corpus: data.Corpus, config: StudyConfig) -> torch.Tensor:
    longest = max(config.eval_multiples) * config.train_len
    return data.eval_segments(corpus.valid, longest, config.eval_segments)


def _scaled_rope(
    model: CharLM, corpus: data.Corpus, config: StudyConfig
) -> dict[str, dict[str, float]]:
    """Perplexity of the trained RoPE model with each scaling, at lengths past train_len."""
    scaled: dict[str, dict[str, float]] = {}
    segments = _segments(corpus, config)
    for multiple in config.eval_multiples:
        length = multiple * config.train_len
        if length <= config.train_len:
            continue
        for name, scaling in rope_scalings(length, config.train_len).items():
            model.set_rope_scaling(scaling)
            ppl = perplexity(evaluate(model, segments, length))
            scaled.setdefault(name, {})[str(length)] = ppl
    model.set_rope_scaling(None)
    return scaled


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


def run_method(
    position: str, corpus: data.Corpus, config: StudyConfig, *, progress: bool = True
) -> dict[str, Any]:
    """Train one method and evaluate it at every length; returns the result record."""
    seed_everything(config.seed)
    threads_before = torch.get_num_threads()
    torch.set_num_threads(config.threads)
    model = CharLM(config.model_config(position))
    start = time.perf_counter()
    losses = train(model, corpus, config, progress=progress)
    train_seconds = time.perf_counter() - start
    segments = _segments(corpus, config)
    by_length: dict[str, float | None] = {}
    longest: list[float] | None = None
    full: torch.Tensor | None = None
    for multiple in config.eval_multiples:
        length = multiple * config.train_len
        try:
            scored = evaluate(model, segments, length)
        except ValueError:  # the learned table has no rows past train_len
            by_length[str(length)] = None
            continue
        by_length[str(length)] = perplexity(scored)
        if multiple == max(config.eval_multiples):
            longest, full = scored.mean(0).tolist(), scored
    # the same targets (j >= train_len), with the context capped at train_len
    window, stride = config.train_len, config.sliding_stride
    capped = evaluate_sliding(model, segments, window, stride)[:, stride:]
    same_targets = {
        "capped_context_loss": float(capped.mean()),
        "full_context_loss": None if full is None else float(full[:, window:].mean()),
    }
    record: dict[str, Any] = {
        "schema": SCHEMA_VERSION,
        "position": position,
        "config": dataclasses.asdict(config),
        "model": dataclasses.asdict(model.config),
        "corpus_checksum": corpus.checksum,
        "versions": versions(),
        "train_seconds": train_seconds,
        "wall_seconds": time.perf_counter() - start,
        "train_loss_last_100": sum(losses[-100:]) / len(losses[-100:]),
        "perplexity": by_length,
        "loss_by_position": longest,
        "loss_by_position_length": len(longest) if longest else None,
        "same_targets": same_targets,
    }
    if model.position.scalable:  # the same trained weights, angles changed at inference
        record["rope_scaling"] = _scaled_rope(model, corpus, config)
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
    """Run (or resume) the study: one JSON file per method in ``out``."""
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


def _table(results: dict[str, dict[str, Any]]) -> str:
    lengths = list(next(iter(results.values()))["perplexity"])
    lines = [f"{'method':<11}" + "".join(f"{'L=' + n:>11}" for n in lengths) + f"{'train s':>9}"]
    for position, record in results.items():
        cells = "".join(
            f"{'cannot run' if v is None else f'{v:.3f}':>11}"
            for v in record["perplexity"].values()
        )
        lines.append(f"{position:<11}{cells}{record['train_seconds']:>9.0f}")
    for name, table in results.get("rope", {}).get("rope_scaling", {}).items():
        cells = "".join(f"{table[n]:>11.3f}" if n in table else f"{'-':>11}" for n in lengths)
        lines.append(f"  rope + {name}\n{'':<11}{cells}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small run, well under a minute")
    parser.add_argument("--out", type=Path, default=None, help="folder for the JSON results")
    parser.add_argument("--positions", nargs="+", choices=POSITIONS, default=list(STUDIED))
    parser.add_argument(
        "--seed", type=int, default=None, help="another seed (results go to <out>-seed<N>)"
    )
    args = parser.parse_args(argv)
    config = QUICK if args.quick else StudyConfig()
    out = args.out or Path("results") / ("extrapolation-quick" if args.quick else "extrapolation")
    if args.seed is not None:
        config = dataclasses.replace(config, seed=args.seed)
        out = out.with_name(f"{out.name}-seed{args.seed}") if args.out is None else out
    results = run_study(out, config, tuple(args.positions))
    print(f"perplexity (characters) on validation text; trained at L={config.train_len}")
    print(_table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
