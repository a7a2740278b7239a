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
- **draw**: cases drawn from the grader's secret seed (:mod:`~.secret`), inside the
  domain the exercise's statement promises, added after the fixed cases; ``None`` with
  a reason where the checker's inputs are already secret (its :func:`~.secret.seeded`
  generator or :func:`~.secret.shuffled` order) or there are none.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import torch

from pe_book import symmetry

__all__ = ["EXERCISES", "Draw", "Graded", "entry", "module_of", "modules", "watched"]

#: Every checker module: a submission that calls into one is using the checker's code.
CHECKER_MODULES = tuple(
    f"pe_book.exercises.{name}"
    for name in (
        "ch01_symmetry", "ch02_taylor", "ch03_sinusoidal", "ch04_trig", "ch05_decay",
        "ch06_relative", "ch07_rope", "ch08_context", "ch09_alibi", "ch10_beyond",
        "ch11_study", "ch12_cost", "ch13_models", "ch14_review",
    )
)  # fmt: skip


class Draw(NamedTuple):
    """One drawn case: its arguments, its input class, and its answer when no reference has it."""

    args: tuple[Any, ...]
    kind: str
    expected: Any = None


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


# ---- drawing ------------------------------------------------------------------------


def _log(rng: np.random.Generator, low: float, high: float) -> float:
    """A number between low and high, uniform in its logarithm."""
    return float(math.exp(rng.uniform(math.log(low), math.log(high))))


def _even(rng: np.random.Generator, low: int, high: int) -> int:
    """An even number in [low, high]."""
    return 2 * int(rng.integers(low // 2, high // 2 + 1))


def _int(rng: np.random.Generator, low: int, high: int) -> int:
    return int(rng.integers(low, high + 1))


def _tensor(rng: np.random.Generator, *shape: int) -> torch.Tensor:
    return torch.from_numpy(rng.standard_normal(shape))


def _positions(rng: np.random.Generator, count: int, high: int) -> torch.Tensor:
    return torch.from_numpy(np.sort(rng.choice(high, size=count, replace=False))).long()


def _permutation_matrix(rng: np.random.Generator) -> list[Draw]:
    return [Draw((rng.permutation(n).tolist(),), "a random permutation") for n in (4, 7, 9)]


def _attention(rng: np.random.Generator) -> list[Draw]:
    draws = []
    for causal in (False, True):
        q_len = _int(rng, 1, 6)
        k_len, dim = _int(rng, q_len, 9), _int(rng, 2, 8)
        args = (_tensor(rng, q_len, dim), _tensor(rng, k_len, dim), _tensor(rng, k_len, dim + 1))
        draws.append(Draw((*args, causal), f"random q, k, v, causal={causal}"))
    return draws


def _recover_positions(rng: np.random.Generator) -> list[Draw]:
    seq_len = _int(rng, 20, 200)
    start = _int(rng, 0, seq_len - 2)
    stop = _int(rng, start + 1, seq_len)
    window = symmetry.bos_share(seq_len)[start:stop]
    return [Draw((window,), "a random window", torch.arange(start, stop, dtype=torch.float64))]


def _circle_solution(rng: np.random.Generator) -> list[Draw]:
    return [Draw((_int(rng, 2, 40), float(rng.uniform(0.05, 3.0))), "random L and θ")]


def _diagonal_leak(rng: np.random.Generator) -> list[Draw]:
    return [Draw(tuple(float(h) for h in rng.uniform(-3, 3, 2)), "random h1, h2") for _ in "ab"]


def _sinusoidal_table(rng: np.random.Generator) -> list[Draw]:
    return [
        Draw((_int(rng, 2, 300), _even(rng, 2, 64), _log(rng, 50, 1e5)), "random L, d, base"),
        Draw((_int(rng, 1500, 3000), _even(rng, 8, 32), 10000.0), "positions in the thousands"),
    ]


def _turning_pairs(rng: np.random.Generator) -> list[Draw]:
    return [
        Draw((int(_log(rng, 2, 200_000)), _even(rng, 2, 512), _log(rng, 100, 1e6)), "random")
        for _ in "ab"
    ]


def _base_for_wavelength(rng: np.random.Generator) -> list[Draw]:
    return [Draw((_even(rng, 4, 512), _log(rng, 100, 1e7)), "random d and wavelength")]


def _layout_permutation(rng: np.random.Generator) -> list[Draw]:
    return [Draw((_even(rng, 10, 40),), "a random even d")]


def _shift_matrix(rng: np.random.Generator) -> list[Draw]:
    return [
        Draw((_int(rng, -50, 50), _even(rng, 2, 16), _log(rng, 100, 1e5)), "a random shift"),
        Draw((_int(rng, 5000, 20000), 16, _log(rng, 1e3, 1e5)), "a shift in the thousands"),
    ]


def _offset_profile(rng: np.random.Generator) -> list[Draw]:
    offsets = torch.cat((torch.tensor([0]), _positions(rng, 9, 150_000)))
    return [Draw((offsets, _even(rng, 8, 256), _log(rng, 100, 1e6)), "random offsets, d, base")]


def _integral_profile(rng: np.random.Generator) -> list[Draw]:
    return [Draw((_log(rng, 0.1, 1e5), _log(rng, 100, 1e6)), "random r and base") for _ in "ab"]


def _reach(rng: np.random.Generator) -> list[Draw]:
    args = (_even(rng, 16, 128), _log(rng, 100, 1e5), float(rng.uniform(-0.3, 0.9)))
    return [Draw(args, "a random level")]


def _relative_indices(rng: np.random.Generator) -> list[Draw]:
    q_start, q_len, k_start, k_len = (_int(rng, low, high) for low, high in [(0, 20), (1, 8)] * 2)
    queries, keys = torch.arange(q_start, q_start + q_len), torch.arange(k_start, k_start + k_len)
    return [Draw((queries, keys, _int(rng, 0, 10)), "random positions and K")]


def _t5_bucket(rng: np.random.Generator) -> list[Draw]:
    buckets = _even(rng, 4, 40)
    args = (torch.arange(-300, 301), bool(rng.integers(2)), buckets, _int(rng, buckets, 300))
    return [Draw(args, "random bucket settings")]


def _similarity_by_offset(rng: np.random.Generator) -> list[Draw]:
    return [Draw((_tensor(rng, _int(rng, 2, 50), _int(rng, 1, 16)),), "a random table")]


def _rope_rotation(rng: np.random.Generator) -> list[Draw]:
    positions = _positions(rng, 6, 50_000)
    return [Draw((_tensor(rng, 6, _even(rng, 2, 32)), positions), "random x and positions")]


def _ntk(rng: np.random.Generator) -> list[Draw]:
    return [Draw((_even(rng, 4, 256), _log(rng, 100, 1e6), _log(rng, 1.5, 32)), "random")]


def _dynamic(rng: np.random.Generator) -> list[Draw]:
    dim, base, factor = _even(rng, 4, 256), _log(rng, 100, 1e6), _log(rng, 1.5, 32)
    original = 2 ** _int(rng, 8, 13)
    longer = _int(rng, original + 1, int(original * factor * 2))
    return [
        Draw((dim, base, factor, original, longer), "longer than the original"),
        Draw((dim, base, factor, original, _int(rng, 1, original)), "within the original"),
    ]


def _llama3(rng: np.random.Generator) -> list[Draw]:
    args = (_even(rng, 4, 256), _log(rng, 1e3, 1e6), _log(rng, 1.5, 32), 2 ** _int(rng, 8, 13))
    return [Draw(args, "random settings")]


def _alibi_slopes(rng: np.random.Generator) -> list[Draw]:
    return [Draw((_int(rng, 1, 64),), "a random number of heads") for _ in "ab"]


def _decoding_bias(rng: np.random.Generator) -> list[Draw]:
    k_len = _int(rng, 2, 20)
    return [Draw((_int(rng, 1, k_len), k_len, _int(rng, 1, 16)), "random lengths and heads")]


def _mean_distance(rng: np.random.Generator) -> list[Draw]:
    return [
        Draw((_log(rng, 1e-6, 1.0), _int(rng, 0, 10_000)), "a random slope and m") for _ in "ab"
    ]


def _cpd_margin(rng: np.random.Generator) -> list[Draw]:
    size = _int(rng, 3, 15)
    positions = torch.arange(size, dtype=torch.float64)
    distance = (positions[:, None] - positions[None, :]).abs()
    power = -(distance ** float(rng.uniform(0.2, 1.9)))
    log = -float(rng.uniform(0.5, 3)) * torch.log1p(float(rng.uniform(0.1, 2)) * distance)
    return [Draw((power,), "a random power kernel"), Draw((log,), "a random log kernel")]


def _p_rope(rng: np.random.Generator) -> list[Draw]:
    return [Draw((_even(rng, 4, 256), float(rng.uniform(0, 1)), _log(rng, 100, 1e6)), "random")]


def _mla_cache_ratio(rng: np.random.Generator) -> list[Draw]:
    args = (_int(rng, 1, 128), _even(rng, 8, 256), _even(rng, 8, 1024), _even(rng, 2, 128))
    return [Draw(args, "random sizes")]


def _perplexity(rng: np.random.Generator) -> list[Draw]:
    return [Draw((rng.uniform(0, 5, _int(rng, 1, 20)).tolist(),), "random losses")]


def _short_context_fraction(rng: np.random.Generator) -> list[Draw]:
    return [Draw((_int(rng, 1, 5000), _int(rng, 0, 6000)), "random lengths") for _ in "ab"]


def _degradation(rng: np.random.Generator) -> list[Draw]:
    lengths = sorted(rng.choice([32, 64, 128, 256, 512, 1024, 2048], 3, replace=False).tolist())
    table: dict[str, float | None] = {str(n): float(rng.uniform(1, 20)) for n in lengths[::-1]}
    cannot = {**table, str(lengths[-1]): None}
    return [
        Draw((table, lengths[0]), "random, longest first"),
        Draw((cannot, lengths[0]), "no long"),
    ]


def _context_effect(rng: np.random.Generator) -> list[Draw]:
    draws = []
    for _ in range(3):
        low = float(rng.uniform(-0.1, 0.1))
        args = (low, low + float(rng.uniform(0.001, 0.1)), float(rng.uniform(0.001, 0.05)))
        draws.append(Draw(args, "a random interval and margin"))
    return draws


def _shaw_parameters(rng: np.random.Generator) -> list[Draw]:
    args = (_int(rng, 1, 24), _int(rng, 0, 256), _even(rng, 2, 128), bool(rng.integers(2)))
    return [Draw(args, "random sizes")]


def _shaw_table_bytes(rng: np.random.Generator) -> list[Draw]:
    return [Draw((_int(rng, 1, 400), _even(rng, 2, 64)), "random sizes")]


def _scaling_exponent(rng: np.random.Generator) -> list[Draw]:
    short = _int(rng, 16, 4096)
    args = (_log(rng, 0.01, 100), short, _log(rng, 0.01, 100), short * _int(rng, 2, 64))
    return [Draw(args, "two random points")]


def _kv_cache_bytes(rng: np.random.Generator) -> list[Draw]:
    kinds = ["sliding_attention", "full_attention", "chunked_attention"]
    plan = [kinds[int(i)] for i in rng.integers(0, 3, _int(rng, 1, 12))]
    args = (plan, _int(rng, 16, 8192), _int(rng, 1, 100_000), _int(rng, 1, 16), _even(rng, 8, 256))
    return [Draw((*args, int(rng.choice([1, 2, 4]))), "a random layer plan")]


def _mrope_ids(rng: np.random.Generator) -> list[Draw]:
    segments: list[tuple[Any, ...]] = [
        ("text", _int(rng, 1, 5))
        if kind == "text"
        else (kind, 1 if kind == "image" else _int(rng, 2, 5), _int(rng, 1, 4), _int(rng, 1, 4))
        for kind in rng.choice(["text", "image", "video"], _int(rng, 2, 4)).tolist()
    ]
    return [Draw((segments,), "random segments")]


def _query_temperature(rng: np.random.Generator) -> list[Draw]:
    positions = _positions(rng, 8, 2**24)
    return [Draw((positions, _log(rng, 2, 10_000), float(rng.uniform(0, 1))), "random positions")]


def _sink_gap(rng: np.random.Generator) -> list[Draw]:
    return [Draw((float(rng.uniform(0.01, 0.99)), int(_log(rng, 2, 1e6))), "random") for _ in "ab"]


def _extra_context(rng: np.random.Generator) -> list[Draw]:
    segments, bins = _int(rng, 1, 4), _int(rng, 2, 5)
    full = rng.uniform(0.5, 3.0, (segments, bins)).tolist()
    capped = rng.uniform(0.5, 3.0, (segments, bins - 1)).tolist()
    return [
        Draw(({"full_by_bin": full, "capped_by_bin": capped},), "random losses by bin"),
        Draw(({"full_by_bin": None, "capped_by_bin": capped},), "no full context"),
    ]


def _cheapest_keeper(rng: np.random.Generator) -> list[Draw]:
    methods = ["alibi", "shaw", "t5", "rope", "none", "kerple", "fire", "xpos"]
    extra = {m: float(rng.uniform(-0.1, 1.0)) for m in methods}
    cost = {m: float(rng.uniform(0.9, 8.0)) for m in methods}
    return [Draw((extra, cost, float(rng.uniform(0, 0.5))), "random losses and costs")]


_SEEDED = "its random inputs come from a generator keyed by the secret"
_RUNS = "pe_book.results.Runs"  # the study's records, read by chapter 14's cells

#: Every checker's exercise name -> what graded mode knows of it.
EXERCISES: dict[str, Graded] = {
    # chapter 1
    "permutation_matrix": Graded(("pe_book.symmetry.permutation_matrix",), _permutation_matrix),
    "attention": Graded(("pe_book.attention.attention",), _attention),
    "recover_positions": Graded((), _recover_positions),
    "invisible_positions": Graded((), None, _SEEDED),
    # chapter 2
    "taylor_terms": Graded(("pe_book.taylor.taylor_terms",), None, _SEEDED),
    "circle_solution": Graded(("pe_book.taylor.circle_solution",), _circle_solution),
    "diagonal_leak": Graded((), _diagonal_leak),
    # chapter 3
    "sinusoidal_table": Graded(("pe_book.sinusoidal.sinusoidal_table",), _sinusoidal_table),
    "turning_pairs": Graded(  # its statement forbids both
        ("pe_book.sinusoidal.wavelengths", "pe_book.sinusoidal.frequencies"), _turning_pairs
    ),
    "base_for_wavelength": Graded((), _base_for_wavelength),
    "layout_permutation": Graded(("pe_book.sinusoidal.layout_permutation",), _layout_permutation),
    # chapter 4
    "shift_matrix": Graded(("pe_book.sinusoidal.shift_matrix",), _shift_matrix),
    "bilinear_terms": Graded((), None, _SEEDED),
    "direction_matrix": Graded((), None, "it has no inputs: one matrix is the answer"),
    # chapter 5
    "dot_profile": Graded(("pe_book.decay.dot_profile",), _offset_profile),
    "integral_profile": Graded(("pe_book.decay.integral_profile",), _integral_profile),
    "reach": Graded(  # its statement: "You may use decay.dot_profile"
        ("pe_book.decay.first_offset_at_or_below",), _reach, allowed=("pe_book.decay.dot_profile",)
    ),
    # chapter 6
    "relative_indices": Graded(("pe_book.relative.relative_indices",), _relative_indices),
    "t5_bucket": Graded(("pe_book.relative.t5_bucket",), _t5_bucket),
    "similarity_by_offset": Graded(
        ("pe_book.learned.similarity_by_offset",), _similarity_by_offset
    ),
    # chapter 7
    "rope_rotation": Graded(("pe_book.rope.apply_rope", "pe_book.rope_kernel"), _rope_rotation),
    "layout_conversion": Graded((), None, _SEEDED),
    "decay_bound": Graded(("pe_book.decay.rope_decay_bound",), _offset_profile),
    # chapter 8
    "ntk_frequencies": Graded(("pe_book.rope_scaling.scaled_frequencies",), _ntk),
    "dynamic_frequencies": Graded(("pe_book.rope_scaling.scaled_frequencies",), _dynamic),
    "llama3_frequencies": Graded(("pe_book.rope_scaling.scaled_frequencies",), _llama3),
    # chapter 9
    "alibi_slopes": Graded(("pe_book.alibi.alibi_slopes",), _alibi_slopes),
    "decoding_bias": Graded(("pe_book.alibi.alibi_bias",), _decoding_bias),
    "mean_distance": Graded(("pe_book.alibi.mean_distance",), _mean_distance),
    # chapter 10
    "cpd_margin": Graded(("pe_book.kerple.cpd_margin",), _cpd_margin),
    "p_rope_frequencies": Graded(("pe_book.p_rope.p_rope_frequencies",), _p_rope),
    "cope_positions": Graded(("pe_book.cope.cope_positions",), None, _SEEDED),
    "mla_cache_ratio": Graded(
        ("pe_book.mla.mha_cache_floats", "pe_book.mla.mla_cache_floats"), _mla_cache_ratio
    ),
    # chapter 11
    "perplexity": Graded(("pe_book.evaluation.perplexity",), _perplexity),
    "short_context_fraction": Graded(
        ("pe_book.evaluation.short_context_fraction",), _short_context_fraction
    ),
    "degradation": Graded(("pe_book.results.degradation",), _degradation),
    "context_effect": Graded(("pe_book.intervals.context_effect",), _context_effect),
    # chapter 12
    "shaw_parameters": Graded(("pe_book.relative.ShawAttention",), _shaw_parameters),
    "shaw_table_bytes": Graded(("pe_book.relative.ShawAttention",), _shaw_table_bytes),
    "scaling_exponent": Graded(("pe_book.cost.scaling_exponent",), _scaling_exponent),
    # chapter 13
    "kv_cache_bytes": Graded(("pe_book.open_models.kv_cache_bytes",), _kv_cache_bytes),
    "mrope_ids": Graded(("pe_book.mrope.mrope_position_ids",), _mrope_ids),
    "query_temperature": Graded(("pe_book.irope.temperature_scale",), _query_temperature),
    "sink_gap": Graded(("pe_book.sinks.sink_gap",), _sink_gap),
    # chapter 14
    "offset_only": Graded((), None, "its score functions come in a secret order, seeded"),
    # the chapter's data is a results.Runs (its set-up loads it, its solutions print from it)
    "extra_context": Graded(
        ("pe_book.results.extra_context_of",), _extra_context, allowed=(_RUNS,)
    ),
    "cheapest_keeper": Graded(
        ("pe_book.results.cheapest_keeper",), _cheapest_keeper, allowed=(_RUNS,)
    ),
}
