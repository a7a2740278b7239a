"""The committed results of the studies, as typed records with their derived measures.

``results/extrapolation[-seedN]/<method>.json`` (chapter 9's study, written by
``python -m pe_book.experiments extrapolation``) and ``results/cost.json``
(chapter 10's cost study). Chapters, claims and checkers read them through
:func:`load_study` and :func:`load_cost`, so that a derived measure (the
extra-context cost, the degradation, "keeps its quality") has one definition.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "KEEPS_QUALITY_NATS",
    "RESULTS",
    "StudyResult",
    "load_cost",
    "load_study",
    "study_folder",
]

#: The results folder of a source checkout (pe_book is installed editable, ``make env``).
RESULTS = Path(__file__).resolve().parents[1] / "results"

#: A method *keeps its quality* on longer inputs when the same characters cost it at
#: most this many nats more with the full context than with a training-length one
#: (about 2% in perplexity; chapter 9, section 9.3).
KEEPS_QUALITY_NATS = 0.02


@dataclass(frozen=True)
class StudyResult:
    """One method's record of the extrapolation study (one seed)."""

    position: str
    train_len: int
    perplexity: dict[int, float | None]  # window length n -> perplexity (None: cannot run)
    capped_context_loss: float  # nats per character, context cut to about the training length
    full_context_loss: float | None  # the same characters with the full window (None: cannot run)
    record: dict[str, Any]  # the whole JSON record, for everything else

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> StudyResult:
        same = record["same_targets"]
        return cls(
            position=record["position"],
            train_len=int(record["config"]["train_len"]),
            perplexity={int(n): value for n, value in record["perplexity"].items()},
            capped_context_loss=float(same["capped_context_loss"]),
            full_context_loss=None
            if same["full_context_loss"] is None
            else float(same["full_context_loss"]),
            record=record,
        )

    @property
    def longest(self) -> int:
        return max(self.perplexity)

    @property
    def runs_long(self) -> bool:
        """Whether the method could run windows longer than its training length."""
        return self.perplexity[self.longest] is not None

    @property
    def extra_context_cost(self) -> float | None:
        """Loss with the full context minus loss with a training-length one, same characters."""
        if self.full_context_loss is None:
            return None
        return self.full_context_loss - self.capped_context_loss

    @property
    def degradation(self) -> float | None:
        """Perplexity in the longest windows divided by perplexity at the training length."""
        long, short = self.perplexity[self.longest], self.perplexity[self.train_len]
        return None if long is None or short is None else long / short

    def keeps_quality(self, threshold: float = KEEPS_QUALITY_NATS) -> bool:
        cost = self.extra_context_cost
        return cost is not None and cost <= threshold


def study_folder(seed: int = 0) -> Path:
    """results/extrapolation for seed 0, results/extrapolation-seed<N> otherwise."""
    return RESULTS / ("extrapolation" if seed == 0 else f"extrapolation-seed{seed}")


def load_study(seed: int = 0, folder: str | Path | None = None) -> dict[str, StudyResult]:
    """The stored study of one seed, validated, by method in the book's order."""
    from pe_book.experiments import stored_results  # the validator and file layout

    records = stored_results(folder if folder is not None else study_folder(seed))
    return {position: StudyResult.from_record(r) for position, r in records.items()}


def load_cost(path: str | Path | None = None) -> dict[str, Any]:
    """results/cost.json, validated: {"rows": [CostRow, ...], and its other fields}."""
    from pe_book.cost import CostRow

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
