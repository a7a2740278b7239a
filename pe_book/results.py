"""The committed results of chapter 11's study, as typed records with their derived measures.

``results/extrapolation[-seedN]/<method>.json`` is written by
``python -m pe_book.study``. Chapters, claims and checkers read it through
:func:`load_study`, so that a derived measure (the extra-context cost, the
degradation, "keeps its quality") has one definition. Chapter 12's
``results/cost.json`` is read, and validated, by :func:`pe_book.cost.load_cost`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from pe_book.model import POSITIONS

__all__ = [
    "KEEPS_QUALITY_NATS",
    "RESULTS",
    "SCHEMA_VERSION",
    "STUDIED",
    "StudyResult",
    "cheapest_keeper",
    "degradation",
    "extra_context_cost",
    "keeps_quality",
    "load_result",
    "load_study",
    "stored_results",
    "study_folder",
    "validate_result",
    "versions",
    "write_atomically",
]

#: The schema of a new record: 2 stores every evaluation segment's losses. Records of
#: schema 1 (means only: results/extrapolation*, results/beyond) still validate.
SCHEMA_VERSION = 2
SCHEMAS = (1, 2)

#: The methods of the committed study (chapters 11-13), in the book's order. Chapter 10's
#: methods are registered too and train with ``python -m pe_book.study --positions ...``.
STUDIED = ("none", "sinusoidal", "learned", "shaw", "t5", "rope", "alibi")

#: The results folder of a source checkout (pe_book is installed editable, ``make env``).
RESULTS = Path(__file__).resolve().parents[1] / "results"

#: A method *keeps its quality* on longer inputs when the same characters cost it at
#: most this many nats more with the full context than with a training-length one
#: (about 2% in perplexity; chapter 11, section 11.3).
KEEPS_QUALITY_NATS = 0.02


def versions() -> dict[str, str]:
    import numpy

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "platform": platform.platform(),
    }


def validate_result(record: object) -> dict[str, Any]:
    """Check a result record's structure; returns it, or raises ValueError naming the field."""
    if not isinstance(record, dict):
        raise ValueError("result must be a JSON object")
    expected = {
        "schema": int,
        "position": str,
        "config": dict,
        "corpus_checksum": str,
        "versions": dict,
        "train_seconds": float,
        "wall_seconds": float,
        "train_loss_last_100": float,
        "perplexity": dict,
    }
    for field, kind in expected.items():
        if not isinstance(record.get(field), kind):
            raise ValueError(f"result field {field!r} must be {kind.__name__}")
    if record["schema"] not in SCHEMAS or record["position"] not in POSITIONS:
        raise ValueError("result field 'schema' or 'position' has an unknown value")
    tables = [("perplexity", record["perplexity"])]
    scaled = record.get("rope_scaling", {})
    if not isinstance(scaled, dict):
        raise ValueError("result field 'rope_scaling' must be dict")
    tables += [("rope_scaling", table) for table in scaled.values()]
    for field, table in tables:
        if not isinstance(table, dict):
            raise ValueError(f"result field {field!r} must map lengths to perplexities")
        for length, value in table.items():
            good = value is None or (isinstance(value, float) and value > 1)
            if not length.isdigit() or not good:
                raise ValueError(f"result field {field!r} has a bad entry {length!r}: {value!r}")
    return record


def write_atomically(path: Path, record: dict[str, Any]) -> None:
    """Write JSON to ``path`` via a temporary file in the same folder and os.replace."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(record, out, indent=1)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def load_result(path: Path, config: object, checksum: str) -> dict[str, Any] | None:
    """The stored record if it is valid and was made with this config and corpus, else None.

    ``config`` is the study's (a dataclass, :class:`pe_book.study.StudyConfig`).
    """
    try:
        record = validate_result(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None
    wanted = json.loads(json.dumps(dataclasses.asdict(config)))
    stored = dict(record["config"])
    for settings in (wanted, stored):
        settings.pop("threads", None)  # recorded, but a run on more threads is the same run
    same_config = stored == wanted and record["schema"] == SCHEMA_VERSION
    return record if same_config and record["corpus_checksum"] == checksum else None


def stored_results(folder: str | Path) -> dict[str, dict[str, Any]]:
    """Every valid result file in ``folder``, by method, in the book's method order.

    Raises FileNotFoundError if the folder holds none, ValueError (naming the
    file) if a file does not validate.
    """
    folder = Path(folder)
    results = {}
    for position in POSITIONS:
        path = folder / f"{position}.json"
        if path.is_file():
            try:
                results[position] = validate_result(json.loads(path.read_text(encoding="utf-8")))
            except ValueError as error:
                raise ValueError(f"{path}: {error}") from error
    if not results:
        raise FileNotFoundError(f"no result files in {folder}")
    return results


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
        return extra_context_cost(self.capped_context_loss, self.full_context_loss)

    @property
    def degradation(self) -> float | None:
        """Perplexity in the longest windows divided by perplexity at the training length."""
        return degradation(self.perplexity, self.train_len)

    def keeps_quality(self, threshold: float = KEEPS_QUALITY_NATS) -> bool:
        return keeps_quality(self.capped_context_loss, self.full_context_loss, threshold) is True


def extra_context_cost(capped: float, full: float | None) -> float | None:
    """full - capped (nats per character): what the extra context costs on the same
    characters (negative: it helps); None for a model that cannot run the full context."""
    return None if full is None else full - capped


def keeps_quality(
    capped: float, full: float | None, threshold: float = KEEPS_QUALITY_NATS
) -> bool | None:
    """Whether the extra context costs at most ``threshold`` nats; None if it cannot run."""
    cost = extra_context_cost(capped, full)
    return None if cost is None else cost <= threshold


def degradation(perplexity: Mapping[Any, float | None], train_len: int) -> float | None:
    """Perplexity at the longest length over perplexity at ``train_len`` (lengths as int or
    str keys); None if the model cannot run the longest length."""
    by_length = {int(n): value for n, value in perplexity.items()}
    longest = by_length[max(by_length)]
    return None if longest is None else longest / by_length[int(train_len)]


def cheapest_keeper(
    extra: Mapping[str, float], cost: Mapping[str, float], tolerance: float
) -> str | None:
    """Of the methods whose extra-context cost is at most ``tolerance``, the one with the
    smallest ``cost`` (e.g. its training step relative to NoPE); None if none qualifies."""
    keepers = [method for method, loss in extra.items() if loss <= tolerance]
    return min(keepers, key=cost.__getitem__) if keepers else None


def study_folder(seed: int = 0) -> Path:
    """results/extrapolation for seed 0, results/extrapolation-seed<N> otherwise."""
    return RESULTS / ("extrapolation" if seed == 0 else f"extrapolation-seed{seed}")


def load_study(seed: int = 0, folder: str | Path | None = None) -> dict[str, StudyResult]:
    """The stored study of one seed, validated, by method in the book's order.

    From the committed folders (``folder=None``) only the methods of :data:`STUDIED`,
    so that training another method into them does not change chapters 10-13.
    """
    records = stored_results(folder if folder is not None else study_folder(seed))
    if folder is None:
        records = {p: r for p, r in records.items() if p in STUDIED}
    return {position: StudyResult.from_record(r) for position, r in records.items()}
