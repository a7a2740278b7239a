"""Chapter 10's cold read: regressions for what it found.

- ``004-position-bottleneck`` must not turn on which seeds are stored: a second KERPLE
  seed that agreed with the first widened its interval across the margin and flipped the
  old rule (at least one method "keeps its quality"), so the chapter's assertion failed.
  The rule now decides "the method matters" by a paired difference of extra-context
  costs and states "the whole bottleneck" as a caveat either way.
- Exercise 10.2's checker let an answer that ignores ``base`` pass (five of its six cases
  used 10000, and the sixth rotated only pair 0, where θ_0 = 1 for every base).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from pe_book import claims, exercises
from pe_book.claims import study as study_evidence
from pe_book.results import Runs


def _with_seeds(**changes: dict[int, tuple[str, float]]) -> Runs:
    """The committed study with some methods' seeds replaced: method -> {seed: (source
    method, shift)}, the source's seed-0 record with ``shift`` nats added to every
    full-context loss past the first bin (its extra-context cost moves by ``shift``)."""
    base = study_evidence.base_study()
    records = {m: dict(by_seed) for m, by_seed in base.records.items()}
    for method, seeds in changes.items():
        records[method] = {}
        for seed, (source, shift) in seeds.items():
            record = dict(base.records[source][0])
            full = np.asarray(record["full_by_bin"], dtype=np.float64)
            full[:, 1:] += shift
            records[method][seed] = {**record, "position": method, "full_by_bin": full.tolist()}
    return Runs(base.design, records)


SEED_SETS = {
    "committed": lambda: study_evidence.base_study(),
    # the second KERPLE seed that broke the chapter: it agrees, yet widens the interval
    "kerple, a second agreeing seed": lambda: _with_seeds(
        kerple={0: ("kerple", 0.0), 1: ("kerple", -0.002)}
    ),
    # a seed far off: kerple's interval spans the margin
    "kerple, a second seed far off": lambda: _with_seeds(
        kerple={0: ("kerple", 0.0), 1: ("kerple", 0.02)}
    ),
    # two identical seeds: a keeper over seeds and text
    "kerple, two identical seeds": lambda: _with_seeds(
        kerple={0: ("kerple", 0.0), 1: ("kerple", 0.0)}
    ),
    "kerple not run": lambda: Runs(
        "lm", {m: r for m, r in study_evidence.base_study().records.items() if m != "kerple"}
    ),
}


@pytest.mark.parametrize("name", sorted(SEED_SETS))
def test_position_bottleneck_verdict_does_not_turn_on_the_seeds_stored(name):
    finding = claims.run("004-position-bottleneck", runs=SEED_SETS[name]())
    assert finding.verdict == claims.get("004-position-bottleneck").verdict
    assert finding.shown[0].startswith("the method matters?")
    assert "the whole bottleneck?" in finding.shown[1]


def test_position_bottleneck_caveat_says_what_was_found():
    inconclusive = claims.run(
        "004-position-bottleneck", runs=SEED_SETS["kerple, a second seed far off"]()
    )
    assert "inconclusive: kerple" in inconclusive.shown[1]
    assert "does not show the method to be the whole bottleneck" in inconclusive.caveat
    kept = claims.run("004-position-bottleneck", runs=SEED_SETS["kerple, two identical seeds"]())
    assert "over seeds and text: kerple" in kept.shown[1]
    assert kept.caveat.startswith("kerple keeps its quality, but only as measured")


def test_position_bottleneck_fails_when_the_method_does_not_matter():
    same = _with_seeds(alibi={0: ("sinusoidal", 0.0), 1: ("sinusoidal", 0.0)})
    assert claims.run("004-position-bottleneck", runs=same).verdict == "does not hold"


def test_finding_prints_both_paired_comparisons_and_reads_them():
    from pe_book import report

    study = study_evidence.base_study()  # seed 0 only: its numbers stay as later seeds land
    runs = type(study)(study.design, {m: {0: by_seed[0]} for m, by_seed in study.records.items()})
    text = report.finding(runs, "fire", answers="t5")
    flat = " ".join(text.split())
    assert "fire minus t5, paired (1 seed):" in flat
    assert "extra-context cost -0.288" in flat and "loss at the training length" in flat
    assert "Read together: past the training length fire removes 0.288 of the" in flat
    assert all(len(line) <= 80 for line in text.splitlines())


def _frequencies_ignoring_base(dim, p, base):
    theta = 10000.0 ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    theta[math.floor(p * dim / 2) :] = 0
    return theta


def test_p_rope_checker_rejects_an_answer_that_ignores_base():
    with pytest.raises(exercises.ExerciseMismatch, match=r"dim=64, p=0\.5, base=500000"):
        exercises.check_p_rope_frequencies(_frequencies_ignoring_base)
