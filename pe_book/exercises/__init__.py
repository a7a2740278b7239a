"""Checkers for the exercises, one module per chapter on one grading framework.

Every chapter from chapter 1 on ends with exercises checked here; the preface
(chapter 0) states the answer policy.

Each ``check_<name>(reader)`` runs the reader's function and ``pe_book``'s own
implementation on the same inputs and either prints that every case agrees or
raises :class:`ExerciseMismatch` naming the first case that does not (its input,
its input class and the first index that misses, never the expected values); a
stub that still raises ``NotImplementedError`` is reported as "not attempted yet"
without failing. Answers are judged by the book's one policy, implemented in
:mod:`~.policy`: values at the exercise's tolerance, in any dtype, with float32
named when it is the likely cause of a miss. Chapters call them as
``exercises.check_<name>``; a course adds its own exercise with
:func:`check` and :class:`Case` (see :mod:`pe_book.exercises.grading`).

==================================  =========================================
module                              chapter
==================================  =========================================
:mod:`~.grading`                    the framework: check, Case, grader
:mod:`~.policy`                     the answer policy: judge, float32_note
:mod:`~.ch01_symmetry`              1, symmetry
:mod:`~.ch02_taylor`                2, the Taylor expansion
:mod:`~.ch03_sinusoidal`            3, the sinusoidal encoding
:mod:`~.ch04_trig`                  4, trig identities
:mod:`~.ch05_decay`                 5, decay
:mod:`~.ch06_relative`              6, learned and relative positions
:mod:`~.ch07_rope`                  7, RoPE
:mod:`~.ch08_context`               8, longer contexts for RoPE
:mod:`~.ch09_alibi`                 9, ALiBi
:mod:`~.ch10_beyond`                10, methods that change what position means
:mod:`~.ch11_study`                 11, train short, test long
:mod:`~.ch12_cost`                  12, what position costs
:mod:`~.ch14_review`                14, review
:mod:`~.ch13_models`                13, position in today's open models
:mod:`~.secret`                     graded mode: inputs from a secret seed
:mod:`~.graded`                     graded mode: each exercise's references, draws
:mod:`~.draws`                      graded mode: the secret draws themselves
:mod:`~.notebook`                   the exercises in a notebook; student edition
:mod:`~.book`                       the book and submissions, as graded
:mod:`~.remote`                     a submission's kernel, called from the grader
:mod:`~.shim`                       the grader's side inside that kernel
:mod:`~.fingerprints`               what a code object computes (the watch's key)
:mod:`~.wire`                       answers as plain data across the boundary
==================================  =========================================

``python -m pe_book grade`` (:mod:`pe_book.grade`) runs these same checkers on a
submitted notebook's functions, called in the submission's own kernel.

Every reference a checker compares with is a public function of the package
(``alibi.mean_distance``, ``results.degradation``, ``evaluation.perplexity``, ...);
numbers a checker invents for its cases are labelled as fixtures.
"""

from __future__ import annotations

from pe_book.exercises.ch01_symmetry import (
    check_attention,
    check_invisible_positions,
    check_permutation_matrix,
    check_recover_positions,
)
from pe_book.exercises.ch02_taylor import (
    check_circle_solution,
    check_diagonal_leak,
    check_taylor_terms,
)
from pe_book.exercises.ch03_sinusoidal import (
    check_base_for_wavelength,
    check_layout_permutation,
    check_sinusoidal_table,
    check_turning_pairs,
)
from pe_book.exercises.ch04_trig import (
    check_bilinear_terms,
    check_direction_matrix,
    check_shift_matrix,
)
from pe_book.exercises.ch05_decay import (
    check_dot_profile,
    check_integral_profile,
    check_reach,
)
from pe_book.exercises.ch06_relative import (
    check_relative_indices,
    check_similarity_by_offset,
    check_t5_bucket,
)
from pe_book.exercises.ch07_rope import (
    check_decay_bound,
    check_layout_conversion,
    check_rope_rotation,
)
from pe_book.exercises.ch08_context import (
    check_dynamic_frequencies,
    check_llama3_frequencies,
    check_ntk_frequencies,
)
from pe_book.exercises.ch09_alibi import (
    check_alibi_slopes,
    check_decoding_bias,
    check_mean_distance,
)
from pe_book.exercises.ch10_beyond import (
    check_cope_positions,
    check_cpd_margin,
    check_mla_cache_ratio,
    check_p_rope_frequencies,
)
from pe_book.exercises.ch11_study import (
    check_context_effect,
    check_degradation,
    check_perplexity,
    check_short_context_fraction,
)
from pe_book.exercises.ch12_cost import (
    check_scaling_exponent,
    check_shaw_parameters,
    check_shaw_table_bytes,
)
from pe_book.exercises.ch13_models import (
    check_kv_cache_bytes,
    check_mrope_ids,
    check_query_temperature,
    check_sink_gap,
)
from pe_book.exercises.ch14_review import (
    check_cheapest_keeper,
    check_extra_context,
    check_offset_only,
)
from pe_book.exercises.grading import Case, ExerciseMismatch, check

__all__ = [
    "Case",
    "ExerciseMismatch",
    "check",
    "check_alibi_slopes",
    "check_attention",
    "check_base_for_wavelength",
    "check_bilinear_terms",
    "check_cheapest_keeper",
    "check_circle_solution",
    "check_context_effect",
    "check_cope_positions",
    "check_cpd_margin",
    "check_decay_bound",
    "check_decoding_bias",
    "check_degradation",
    "check_diagonal_leak",
    "check_direction_matrix",
    "check_dot_profile",
    "check_dynamic_frequencies",
    "check_extra_context",
    "check_integral_profile",
    "check_invisible_positions",
    "check_kv_cache_bytes",
    "check_layout_conversion",
    "check_layout_permutation",
    "check_llama3_frequencies",
    "check_mean_distance",
    "check_mla_cache_ratio",
    "check_mrope_ids",
    "check_ntk_frequencies",
    "check_offset_only",
    "check_p_rope_frequencies",
    "check_permutation_matrix",
    "check_perplexity",
    "check_query_temperature",
    "check_reach",
    "check_recover_positions",
    "check_relative_indices",
    "check_rope_rotation",
    "check_scaling_exponent",
    "check_shaw_parameters",
    "check_shaw_table_bytes",
    "check_shift_matrix",
    "check_short_context_fraction",
    "check_similarity_by_offset",
    "check_sink_gap",
    "check_sinusoidal_table",
    "check_t5_bucket",
    "check_taylor_terms",
    "check_turning_pairs",
]
