"""A character-level corpus from Python's own standard library (chapter 11).

Every Python installation ships its standard library as source, so the corpus
needs no download. The files are *pinned*: ``pe_book/data/stdlib_files.txt``
lists them (relative paths, sorted; tests, IDLE, lib2to3, demos, the
machine-specific ``_sysconfigdata_*`` and the ``encodings`` package excluded: its
generated codec tables are near-copies of one another, so a split by file would
leave copies of validation text in the training text), and ``Corpus.checksum`` (SHA-256
of the encoded tokens) is recorded with every result, so text from a different
Python build is detected rather than silently compared.

Vocabulary (fixed, not learned from the data): tab, newline and the 95
printable ASCII characters, plus one token for everything else (index 0).
Split by file: every tenth file of the sorted list (index % 10 == 0) is
validation text, the rest is training text.
"""

from __future__ import annotations

import hashlib
import sysconfig
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
import torch

from pe_book._validate import validate_int, validate_tensor

__all__ = [
    "VOCAB",
    "Corpus",
    "batch_offsets",
    "decode",
    "encode",
    "eval_segments",
    "load_corpus",
    "pinned_files",
    "training_batch",
]

OTHER = "\N{REPLACEMENT CHARACTER}"
#: The character model's vocabulary: OTHER, tab, newline and printable ASCII.
VOCAB: tuple[str, ...] = (OTHER, "\t", "\n", *(chr(c) for c in range(32, 127)))
_INDEX = np.zeros(128, dtype=np.uint8)
for _i, _ch in enumerate(VOCAB[1:], start=1):
    _INDEX[ord(_ch)] = _i
VALIDATION_EVERY = 10


def encode(text: str) -> torch.Tensor:
    """Characters -> token ids (uint8) in ``VOCAB``; anything outside it -> 0."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    ids = np.where(codes < 128, _INDEX[np.minimum(codes, 127)], 0).astype(np.uint8)
    return torch.from_numpy(ids.copy())


def decode(tokens: torch.Tensor) -> str:
    """Token ids -> text (ids outside the vocabulary raise ValueError)."""
    validate_tensor("tokens", tokens, ndim=1)
    if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= len(VOCAB)):
        raise ValueError(f"tokens must be ids in 0..{len(VOCAB) - 1}")
    return "".join(VOCAB[i] for i in tokens.tolist())


def pinned_files() -> list[str]:
    """The pinned file list (paths relative to the standard library), sorted."""
    text = resources.files("pe_book").joinpath("data/stdlib_files.txt").read_text("utf-8")
    return [line for line in text.splitlines() if line and not line.startswith("#")]


@dataclass(frozen=True)
class Corpus:
    """Encoded training and validation text, with what identifies it."""

    train: torch.Tensor  # uint8 token ids, the training files concatenated
    valid: torch.Tensor  # uint8 token ids, the validation files concatenated
    files: tuple[str, ...]
    checksum: str  # SHA-256 over train then valid tokens
    python: str  # the standard library the text was read from

    @property
    def vocab_size(self) -> int:
        return len(VOCAB)


def load_corpus(stdlib: str | Path | None = None) -> Corpus:
    """Read and encode the pinned files from ``stdlib`` (default: this Python's).

    Raises FileNotFoundError naming the first pinned file that is missing, so a
    different Python version fails loudly instead of training on other text.
    """
    root = Path(stdlib if stdlib is not None else sysconfig.get_paths()["stdlib"])
    files = pinned_files()
    parts: dict[bool, list[torch.Tensor]] = {True: [], False: []}
    for index, name in enumerate(files):
        path = root / name
        if not path.is_file():
            raise FileNotFoundError(
                f"pinned corpus file {name!r} not found under {root}; the corpus is the "
                "standard library of CPython 3.11 (see pe_book/data/stdlib_files.txt)"
            )
        text = path.read_text(encoding="utf-8", errors="replace")
        parts[index % VALIDATION_EVERY == 0].append(encode(text + "\n"))
    train, valid = torch.cat(parts[False]), torch.cat(parts[True])
    digest = hashlib.sha256(train.numpy().tobytes())
    digest.update(valid.numpy().tobytes())
    return Corpus(train, valid, tuple(files), digest.hexdigest(), str(root))


def batch_offsets(n_tokens: int, seq_len: int, batch: int, steps: int, seed: int) -> torch.Tensor:
    """Start offsets of every training window, shape (steps, batch), int64.

    Drawn once from a seeded generator, so every method sees the same text in
    the same order. Each window needs seq_len + 1 tokens (inputs and targets).
    """
    n_tokens = validate_int("n_tokens", n_tokens, minimum=1)
    seq_len = validate_int("seq_len", seq_len, minimum=1)
    batch = validate_int("batch", batch, minimum=1)
    steps = validate_int("steps", steps, minimum=0)
    if n_tokens < seq_len + 1:
        raise ValueError(f"n_tokens must be >= seq_len + 1 = {seq_len + 1}, got {n_tokens}")
    generator = torch.Generator().manual_seed(validate_int("seed", seed))
    return torch.randint(0, n_tokens - seq_len, (steps, batch), generator=generator)


def training_batch(
    tokens: torch.Tensor, offsets: torch.Tensor, seq_len: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs and next-character targets, each (batch, seq_len) int64."""
    validate_tensor("tokens", tokens, ndim=1)
    validate_tensor("offsets", offsets, ndim=1)
    seq_len = validate_int("seq_len", seq_len, minimum=1)
    index = offsets[:, None] + torch.arange(seq_len + 1)  # (batch, seq_len + 1)
    window = tokens[index].long()
    return window[:, :-1], window[:, 1:]


def eval_segments(tokens: torch.Tensor, seg_len: int, count: int) -> torch.Tensor:
    """``count`` segments of seg_len + 1 tokens, evenly spaced over ``tokens``, int64.

    Shape (count, seg_len + 1): segment i starts at round(i · (N - seg_len - 1) /
    (count - 1)). Spread over all of the validation text rather than taken from
    its start, and never overlapping (ValueError if the text is too short).
    """
    validate_tensor("tokens", tokens, ndim=1)
    seg_len = validate_int("seg_len", seg_len, minimum=1)
    count = validate_int("count", count, minimum=1)
    span = tokens.numel() - (seg_len + 1)
    if span < 0 or (count > 1 and span / (count - 1) < seg_len + 1):
        raise ValueError(
            f"tokens too short for {count} non-overlapping segments of {seg_len + 1} tokens "
            f"(have {tokens.numel()})"
        )
    starts = torch.linspace(0, span, count).round().long() if count > 1 else torch.zeros(1).long()
    return torch.stack([tokens[s : s + seg_len + 1] for s in starts.tolist()]).long()
