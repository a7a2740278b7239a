"""What graded mode knows about each exercise of chapters 1-14: its references, its draws.

For every checker (by its exercise name, ``check_<name>`` without ``check_``):

- **references**: the ``pe_book`` functions the checker compares with (dotted names;
  a class stands for its constructor). ``python -m pe_book grade`` watches every
  function of the modules that hold them (:func:`modules`: a module's helpers compute
  the same answer), and of the checker modules, in the student's kernel, and marks a
  submission that calls one anywhere (the exercise's cells, another cell, another
  exercise's function): it copied the answer.
  ``tests/test_grade_catalog.py`` checks that each is called by its checker.
- **allowed**: functions (or a class's methods) of those modules the student may call:
  what the exercise's statement allows (exercise 5.3 may use ``decay.dot_profile``),
  or the chapter's data (chapter 14 reads the study through ``results.Runs``).
- **draw**: cases drawn from the grader's secret seed (:mod:`~.secret`) by a function
  of :mod:`~.draws`, inside the domain the exercise's statement promises, added after
  the fixed cases; ``None`` with a reason where the checker's inputs are already
  secret (its :func:`~.secret.seeded` generator or :func:`~.secret.shuffled` order) or
  there are none.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pe_book.exercises import draws
from pe_book.exercises.draws import Draw

__all__ = ["EXERCISES", "Draw", "Graded", "blocked", "entry", "module_of", "modules", "watched"]

#: Every checker module: a submission that calls into one is using the checker's code.
CHECKER_MODULES = tuple(
    f"pe_book.exercises.{name}"
    for name in (
        "ch01_symmetry", "ch02_taylor", "ch03_sinusoidal", "ch04_trig", "ch05_decay",
        "ch06_relative", "ch07_rope", "ch08_context", "ch09_alibi", "ch10_beyond",
        "ch11_study", "ch12_cost", "ch13_models", "ch14_review",
    )
)  # fmt: skip


@dataclass(frozen=True)
class Graded:
    """An exercise in graded mode: the functions it may not call, its secret draw."""

    references: tuple[str, ...]
    draw: Callable[[np.random.Generator], list[Draw]] | None = None
    fixed: str = ""  # why there is no draw
    allowed: tuple[str, ...] = ()  # functions of the references' modules it may call


def entry(name: str) -> Graded:
    """Exercise ``name``'s entry; a checker missing from :data:`EXERCISES` has no
    references and no draw (tests/test_grade_catalog.py keeps that from happening)."""
    return EXERCISES.get(name, Graded((), None, "not in graded.EXERCISES"))


def module_of(dotted: str) -> str:
    """The module a dotted name lives in (``pe_book.alibi`` for
    ``pe_book.alibi.alibi_slopes``; a module's own name for a module)."""
    name = dotted
    while name:
        try:
            importlib.import_module(name)
            return name
        except ImportError:
            name = name.rpartition(".")[0]
    raise ImportError(f"no module holds {dotted}")


def modules(name: str) -> set[str]:
    """The modules that hold exercise ``name``'s references: watched whole."""
    return {module_of(dotted) for dotted in entry(name).references}


def watched(name: str) -> list[str]:
    """What a submission may not call for exercise ``name``: its references, every
    function of their modules, and the checkers' modules."""
    return sorted({*entry(name).references, *modules(name), *CHECKER_MODULES})


def blocked(name: str) -> tuple[list[str], list[str]]:
    """What is blocked in the kernel while exercise ``name``'s function runs (the modules
    of its references and the checkers'), and what of those its statement allows."""
    return sorted({*modules(name), *CHECKER_MODULES}), list(entry(name).allowed)


def _code_keys(dotted: str) -> tuple[str, set[tuple[str, int] | None]]:
    """The (file, first line) of the function ``dotted`` names, or (file, {None}) for a
    module: every function in that file."""
    module_name, _, attribute = dotted.rpartition(".")
    try:
        module = importlib.import_module(dotted)
        return str(Path(inspect.getfile(module)).resolve()), {None}
    except ImportError:
        pass
    target: Any = importlib.import_module(module_name)
    for part in attribute.split("."):
        target = getattr(target, part)
    function = inspect.unwrap(
        getattr(target, "__init__", target) if isinstance(target, type) else target
    )
    code = function.__code__
    return str(Path(code.co_filename).resolve()), {
        (str(Path(code.co_filename).resolve()), code.co_firstlineno)
    }


_SEEDED = "its random inputs come from a generator keyed by the secret"
_RUNS = "pe_book.results.Runs"  # the study's records, read by chapter 14's cells

#: Every checker's exercise name -> what graded mode knows of it.
EXERCISES: dict[str, Graded] = {
    # chapter 1
    "permutation_matrix": Graded(
        ("pe_book.symmetry.permutation_matrix",), draws.permutation_matrix
    ),
    "attention": Graded(("pe_book.attention.attention",), draws.attention),
    "recover_positions": Graded((), draws.recover_positions),
    "invisible_positions": Graded((), None, _SEEDED),
    # chapter 2
    "taylor_terms": Graded(("pe_book.taylor.taylor_terms",), None, _SEEDED),
    "circle_solution": Graded(("pe_book.taylor.circle_solution",), draws.circle_solution),
    "diagonal_leak": Graded((), draws.diagonal_leak),
    # chapter 3
    "sinusoidal_table": Graded(("pe_book.sinusoidal.sinusoidal_table",), draws.sinusoidal_table),
    "turning_pairs": Graded(  # its statement forbids both
        ("pe_book.sinusoidal.wavelengths", "pe_book.sinusoidal.frequencies"), draws.turning_pairs
    ),
    "base_for_wavelength": Graded((), draws.base_for_wavelength),
    "layout_permutation": Graded(
        ("pe_book.sinusoidal.layout_permutation",), draws.layout_permutation
    ),
    # chapter 4
    "shift_matrix": Graded(("pe_book.sinusoidal.shift_matrix",), draws.shift_matrix),
    "bilinear_terms": Graded((), None, _SEEDED),
    "direction_matrix": Graded((), None, "it has no inputs: one matrix is the answer"),
    # chapter 5
    "dot_profile": Graded(("pe_book.decay.dot_profile",), draws.offset_profile),
    "integral_profile": Graded(("pe_book.decay.integral_profile",), draws.integral_profile),
    "reach": Graded(  # its statement: "You may use decay.dot_profile"
        ("pe_book.decay.first_offset_at_or_below",),
        draws.reach,
        allowed=("pe_book.decay.dot_profile",),
    ),
    # chapter 6
    "relative_indices": Graded(("pe_book.relative.relative_indices",), draws.relative_indices),
    "t5_bucket": Graded(("pe_book.relative.t5_bucket",), draws.t5_bucket),
    "similarity_by_offset": Graded(
        ("pe_book.learned.similarity_by_offset",), draws.similarity_by_offset
    ),
    # chapter 7
    "rope_rotation": Graded(
        ("pe_book.rope.apply_rope", "pe_book.rope_kernel"), draws.rope_rotation
    ),
    "layout_conversion": Graded((), None, _SEEDED),
    "decay_bound": Graded(("pe_book.decay.rope_decay_bound",), draws.offset_profile),
    # chapter 8
    "ntk_frequencies": Graded(("pe_book.rope_scaling.scaled_frequencies",), draws.ntk),
    "dynamic_frequencies": Graded(("pe_book.rope_scaling.scaled_frequencies",), draws.dynamic),
    "llama3_frequencies": Graded(("pe_book.rope_scaling.scaled_frequencies",), draws.llama3),
    # chapter 9
    "alibi_slopes": Graded(("pe_book.alibi.alibi_slopes",), draws.alibi_slopes),
    "decoding_bias": Graded(("pe_book.alibi.alibi_bias",), draws.decoding_bias),
    "mean_distance": Graded(("pe_book.alibi.mean_distance",), draws.mean_distance),
    # chapter 10
    "cpd_margin": Graded(("pe_book.kerple.cpd_margin",), draws.cpd_margin),
    "p_rope_frequencies": Graded(("pe_book.p_rope.p_rope_frequencies",), draws.p_rope),
    "cope_positions": Graded(("pe_book.cope.cope_positions",), None, _SEEDED),
    "mla_cache_ratio": Graded(
        ("pe_book.mla.mha_cache_floats", "pe_book.mla.mla_cache_floats"), draws.mla_cache_ratio
    ),
    # chapter 11
    "perplexity": Graded(("pe_book.evaluation.perplexity",), draws.perplexity),
    "short_context_fraction": Graded(
        ("pe_book.evaluation.short_context_fraction",), draws.short_context_fraction
    ),
    "degradation": Graded(("pe_book.results.degradation",), draws.degradation),
    "context_effect": Graded(("pe_book.intervals.context_effect",), draws.context_effect),
    # chapter 12
    "shaw_parameters": Graded(("pe_book.relative.ShawAttention",), draws.shaw_parameters),
    "shaw_table_bytes": Graded(("pe_book.relative.ShawAttention",), draws.shaw_table_bytes),
    "scaling_exponent": Graded(("pe_book.cost.scaling_exponent",), draws.scaling_exponent),
    # chapter 13
    "kv_cache_bytes": Graded(("pe_book.open_models.kv_cache_bytes",), draws.kv_cache_bytes),
    "mrope_ids": Graded(("pe_book.mrope.mrope_position_ids",), draws.mrope_ids),
    "query_temperature": Graded(("pe_book.irope.temperature_scale",), draws.query_temperature),
    "sink_gap": Graded(("pe_book.sinks.sink_gap",), draws.sink_gap),
    # chapter 14
    "offset_only": Graded((), None, "its score functions come in a secret order, seeded"),
    # the chapter's data is a results.Runs (its set-up loads it, its solutions print from it)
    "extra_context": Graded(
        ("pe_book.results.extra_context_of",), draws.extra_context, allowed=(_RUNS,)
    ),
    "cheapest_keeper": Graded(
        ("pe_book.results.cheapest_keeper",), draws.cheapest_keeper, allowed=(_RUNS,)
    ),
}
