"""The committed results of chapter 11's study, as records and their derived measures.

``results/study/<design>/seed<N>/<method>.json`` is written by ``python -m pe_book study``
(one record per run, validated by :func:`validate_result`); :class:`Runs` reads a design
back and gives every measure the chapters use (the extra-context cost, the window
effect, paired comparisons) with its interval from :mod:`pe_book.intervals`, so that
each measure has one definition and chapters 10, 11, 13 and 14 cannot disagree.
:class:`TaskRuns` reads the algorithmic tasks (``results/study/tasks``). Chapter 12's
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

import numpy as np
import torch

from pe_book.intervals import (
    EQUIVALENCE_NATS,
    Comparison,
    ContextEffect,
    Interval,
    compare,
    context_effect,
    crossed_interval,
)
from pe_book.model import POSITIONS

__all__ = [
    "RESULTS",
    "SCHEMA_VERSION",
    "STUDIED",
    "Runs",
    "TaskRuns",
    "cheapest_keeper",
    "degradation",
    "extra_context_of",
    "load_result",
    "validate_result",
    "versions",
    "write_atomically",
]

#: The schema of a record: 2 stores every evaluation segment's losses (schema 1 stored
#: means only; its runs were replaced by the five-seed study).
SCHEMA_VERSION = 2

#: The methods of the committed study (chapters 11-13), in the book's order. Chapter 10's
#: methods are registered too and train with ``python -m pe_book.study --positions ...``.
STUDIED = ("none", "sinusoidal", "learned", "shaw", "t5", "rope", "alibi")

#: The results folder of a source checkout (pe_book is installed editable, ``make env``).
RESULTS = Path(__file__).resolve().parents[1] / "results"

def versions() -> dict[str, str]:
    """Python, PyTorch and NumPy versions and the platform a result was made on (stored with it)."""
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
    if record["schema"] != SCHEMA_VERSION or record["position"] not in POSITIONS:
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


@dataclass(frozen=True)
class Runs:
    """One design of the study: every stored run, by method and seed (chapter 11).

    Built by :meth:`load`. Every measure is computed per validation segment and seed and
    summarised by :func:`pe_book.intervals.crossed_interval`; a comparison between
    methods pairs them on the same segments and the same seed numbers (the seed fixes
    the data order, shared by all methods).
    """

    design: str
    records: dict[str, dict[int, dict[str, Any]]]  # method -> seed -> record

    @classmethod
    def load(cls, design: str, root: str | Path = RESULTS) -> Runs:
        """Every valid schema-2 record of ``design``; ValueError names a bad file."""
        folder = Path(root) / "study" / design
        records: dict[str, dict[int, dict[str, Any]]] = {}
        for seed_folder in sorted(folder.glob("seed*")):
            seed = int(seed_folder.name.removeprefix("seed"))
            for position in POSITIONS:
                path = seed_folder / f"{position}.json"
                if not path.is_file():
                    continue
                try:
                    record = validate_result(json.loads(path.read_text(encoding="utf-8")))
                except ValueError as error:
                    raise ValueError(f"{path}: {error}") from error
                if record["schema"] != SCHEMA_VERSION:
                    raise ValueError(f"{path}: schema {record['schema']}, expected 2")
                records.setdefault(position, {})[seed] = record
        if not records:
            raise FileNotFoundError(f"no runs of design {design!r} in {folder}")
        return cls(design, {m: records[m] for m in POSITIONS if m in records})

    @property
    def methods(self) -> tuple[str, ...]:
        return tuple(self.records)

    def seeds(self, *methods: str) -> tuple[int, ...]:
        """The seeds every one of ``methods`` has (all of this design's methods if none)."""
        chosen = methods or self.methods
        common = set.intersection(*(set(self._runs(m)) for m in chosen))
        return tuple(sorted(common))

    def _runs(self, method: str) -> dict[int, dict[str, Any]]:
        if method not in self.records:
            raise KeyError(
                f"method {method!r} has no runs in design {self.design!r}; it has {self.methods}"
            )
        return self.records[method]

    def config(self, method: str) -> dict[str, Any]:
        return next(iter(self._runs(method).values()))["config"]

    @property
    def unit(self) -> int:
        """The capped context and the unit of the test lengths (the short training length)."""
        config = next(iter(next(iter(self.records.values())).values()))["config"]
        return int(config["eval_unit"] or config["train_len"])

    @property
    def lengths(self) -> tuple[int, ...]:
        record = next(iter(next(iter(self.records.values())).values()))
        return tuple(int(n) for n in record["segment_loss"])

    def runs_at(self, method: str, length: int) -> bool:
        """Whether the method can run windows of ``length`` (a learned table cannot)."""
        return all(r["segment_loss"][str(length)] is not None for r in self._runs(method).values())

    def _stack(self, method: str, seeds: tuple[int, ...], pick: Any) -> np.ndarray:
        return np.array([pick(self._runs(method)[seed]) for seed in seeds], dtype=np.float64)

    def segment_losses(
        self,
        method: str,
        length: int,
        seeds: tuple[int, ...] | None = None,
        scaling: str | None = None,
    ) -> np.ndarray:
        """(seeds, segments): each segment's mean loss read in windows of ``length``;
        ``scaling`` names one of RoPE's inference-time scalings (its own windows)."""
        seeds = self.seeds(method) if seeds is None else seeds

        def pick(record: dict[str, Any]) -> list[float]:
            if scaling is None or length <= self.unit:
                values = record["segment_loss"][str(length)]
            else:
                values = record["rope_scaling_segment_loss"][scaling][str(length)]
            if values is None:
                raise ValueError(f"{method} cannot run windows of {length} tokens")
            return values

        return self._stack(method, seeds, pick)

    def extra_context(self, method: str, seeds: tuple[int, ...] | None = None) -> np.ndarray:
        """(seeds, segments): loss with the full context minus loss with the context capped
        at the unit, on the same targets (every target past the first unit of each longest
        window). Negative: the extra context helps."""
        seeds = self.seeds(method) if seeds is None else seeds

        return self._stack(method, seeds, extra_context_of)

    def full_context_loss(self, method: str, seeds: tuple[int, ...] | None = None) -> np.ndarray:
        """(seeds, segments): loss with the full context on the targets past the first unit."""
        seeds = self.seeds(method) if seeds is None else seeds
        return self._stack(method, seeds, lambda r: np.asarray(r["full_by_bin"])[:, 1:].mean(1))

    def loss(self, method: str, length: int, scaling: str | None = None) -> Interval:
        """The mean loss (nats per character) in windows of ``length``, with its interval;
        exp of it is the perplexity."""
        return crossed_interval(self.segment_losses(method, length, scaling=scaling))

    def window_effect(self, method: str, length: int, scaling: str | None = None) -> Interval:
        """Loss in windows of ``length`` minus loss in windows of the unit, the same
        characters (log of the perplexity ratio)."""
        seeds = self.seeds(method)
        longer = self.segment_losses(method, length, seeds, scaling=scaling)
        return crossed_interval(longer - self.segment_losses(method, self.unit, seeds))

    def extra_context_cost(self, method: str) -> Interval:
        """The interval of :meth:`extra_context`'s mean: what the extra context costs."""
        return crossed_interval(self.extra_context(method))

    def context_effect(self, method: str, margin: float = EQUIVALENCE_NATS) -> ContextEffect:
        """Uses it / keeps its quality / hurt by it / inconclusive (pe_book.intervals)."""
        return context_effect(self.extra_context_cost(method), margin)

    def difference(self, a: str, b: str, length: int, other: Runs | None = None) -> Interval:
        """Loss of ``a`` minus loss of ``b`` in windows of ``length``, paired on segments
        and seed numbers; ``b`` from ``other`` (another design) if given."""
        other = self if other is None else other
        seeds = tuple(sorted(set(self.seeds(a)) & set(other.seeds(b))))
        if not seeds:
            raise ValueError(f"{a} and {b} share no seed")
        left = self.segment_losses(a, length, seeds)
        return crossed_interval(left - other.segment_losses(b, length, seeds))

    def compare(
        self,
        a: str,
        b: str,
        length: int,
        margin: float = EQUIVALENCE_NATS,
        other: Runs | None = None,
    ) -> Comparison:
        """Better / worse / practically equal / inconclusive: ``a`` against ``b``."""
        return compare(self.difference(a, b, length, other), margin)

    def gap_to(self, method: str, reference: Runs, reference_method: str) -> Interval:
        """Full-context loss of ``method`` minus that of ``reference_method`` trained long,
        on the same targets past the first unit: what training short leaves on the table."""
        seeds = tuple(sorted(set(self.seeds(method)) & set(reference.seeds(reference_method))))
        if not seeds:
            raise ValueError(f"{method} and the reference {reference_method} share no seed")
        mine = self.full_context_loss(method, seeds)
        return crossed_interval(mine - reference.full_context_loss(reference_method, seeds))

    def bin_losses(self, method: str, seeds: tuple[int, ...] | None = None) -> np.ndarray:
        """(seeds, segments, bins): the longest windows' loss per bin of ``unit`` targets,
        full context (bin 0 is the training length's own positions)."""
        seeds = self.seeds(method) if seeds is None else seeds
        if not self.runs_at(method, max(self.lengths)):
            raise ValueError(f"{method} cannot run the longest windows")
        return np.array(
            [self._runs(method)[seed]["full_by_bin"] for seed in seeds], dtype=np.float64
        )

    def loss_by_bin(self, method: str) -> list[Interval]:
        """The interval of the mean loss in each bin of ``unit`` positions of the longest
        windows (section 11.5's curves)."""
        losses = self.bin_losses(method)
        return [crossed_interval(losses[:, :, b]) for b in range(losses.shape[2])]


def extra_context_of(record: dict[str, Any]) -> np.ndarray:
    """Each segment's extra-context cost in one schema-2 record, (segments,): the loss with
    the full context over the bins past the first ``unit`` of the longest windows, minus
    the loss of the same targets with the context capped at ``unit`` (chapter 11.3).
    Raises ValueError for a model that cannot run the longest windows (a learned table)."""
    if record.get("full_by_bin") is None:
        raise ValueError(f"{record.get('position')} cannot run the longest windows")
    full = np.asarray(record["full_by_bin"], dtype=np.float64)[:, 1:]  # past the first bin
    return full.mean(1) - np.asarray(record["capped_by_bin"], dtype=np.float64).mean(1)


# ---- the algorithmic tasks: results/study/tasks/<task>/seed<N>/<method>.json --------------


@dataclass(frozen=True)
class TaskRuns:
    """The tasks' runs: task -> method -> seed -> record (chapter 11, section 11.7)."""

    records: dict[str, dict[str, dict[int, dict[str, Any]]]]

    @classmethod
    def load(cls, root: str | Path = RESULTS) -> TaskRuns:
        folder = Path(root) / "study" / "tasks"
        records: dict[str, dict[str, dict[int, dict[str, Any]]]] = {}
        for path in sorted(folder.glob("*/seed*/*.json")):
            record = json.loads(path.read_text(encoding="utf-8"))
            if record.get("position") not in POSITIONS or "solved" not in record:
                raise ValueError(f"{path}: not a task record")
            task, seed = path.parent.parent.name, int(path.parent.name.removeprefix("seed"))
            records.setdefault(task, {}).setdefault(record["position"], {})[seed] = record
        if not records:
            raise FileNotFoundError(f"no task runs in {folder}")
        ordered = {
            task: {m: by_method[m] for m in POSITIONS if m in by_method}
            for task, by_method in records.items()
        }
        return cls(ordered)

    @property
    def tasks(self) -> tuple[str, ...]:
        return tuple(self.records)

    def methods(self, task: str) -> tuple[str, ...]:
        return tuple(self.records[task])

    def seeds(self, task: str, method: str) -> tuple[int, ...]:
        return tuple(sorted(self.records[task][method]))

    def config(self, task: str) -> dict[str, Any]:
        return next(iter(next(iter(self.records[task].values())).values()))["config"]

    def solved(self, task: str, method: str, size: int) -> np.ndarray | None:
        """(seeds, problems) of 1 (solved) and 0; None if the method cannot run the size.
        The test problems are the same for every seed and method, so they are crossed."""
        rows = [r["solved"][str(size)] for r in self.records[task][method].values()]
        if any(row is None for row in rows):
            return None
        return np.array([[c == "1" for c in row] for row in rows], dtype=np.float64)

    def accuracy(self, task: str, method: str, sizes: range | list[int]) -> Interval | None:
        """Exact-match accuracy over the given sizes, with its interval (seeds × problems,
        the sizes' problems side by side); None if any size cannot run."""
        parts = [self.solved(task, method, n) for n in sizes]
        if any(part is None for part in parts):
            return None
        return crossed_interval(np.concatenate(parts, axis=1))
