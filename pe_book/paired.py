"""One method read against the one whose failure it answers, paired (chapter 10).

Each section of chapter 10 pairs a method with the earlier one whose failure it answers,
on the same seeds and characters (:func:`pe_book.report.finding` with ``answers``): the
difference of extra-context costs and of losses at the training length, each decided by
its interval and the margin of :mod:`pe_book.intervals` (*better*: the whole interval
below minus the margin; *worse*: above it; *practically equal*: inside it; else
*inconclusive*), and a sentence reading the two together.
"""

from __future__ import annotations

import textwrap

from pe_book.intervals import (
    EQUIVALENCE_NATS,
    Comparison,
    ContextEffect,
    Interval,
    compare,
    crossed_interval,
)
from pe_book.results import Runs

__all__ = ["against", "digits_near_margin"]


def _interval(found: Interval, digits: int) -> str:
    return f"{found.mean:+.{digits}f} [{found.low:+.{digits}f}, {found.high:+.{digits}f}]"


def digits_near_margin(found: Interval, margin: float = EQUIVALENCE_NATS) -> int:
    """Decimals to print an interval with (chapter 10): 3, or 4 when an end lies within
    0.001 of ±margin, so that a reader can see on which side of the margin it falls
    (chapter 10's cold read: kerple minus alibi ends at -0.010086, printed as -0.010)."""
    ends = (found.low, found.high)
    near = min(abs(end - edge) for end in ends for edge in (-margin, margin))
    return 4 if near < 1e-3 else 3


def against(runs: Runs, method: str, other: str, margin: float = EQUIVALENCE_NATS) -> list[str]:
    """The lines :func:`pe_book.report.finding` prints with ``answers=other`` (chapter 10):
    ``method`` minus ``other``, paired on their shared seeds and the same characters, for
    the extra-context cost (is the failure past the training length answered?) and the
    loss at the training length (at what price?), each with its verdict, then one sentence
    reading the two together. With two seeds or more, each seed's paired extra-context
    cost follows its interval; with one, a hedge computed from ``other``'s own seeds: how
    far its extra-context cost moves from one seed to another, beside this difference."""
    top = max(runs.lengths)
    shared = tuple(sorted(set(runs.seeds(method)) & set(runs.seeds(other))))
    at_l = runs.difference(method, other, runs.unit)
    seeds = f"seed{'s' * (len(shared) != 1)}"
    lines = [f"  {method} minus {other}, paired ({len(shared)} {seeds}):"]
    past = before = None
    hedge = ""
    if runs.runs_at(method, top) and runs.runs_at(other, top):
        before = runs.extra_context(other, shared)
        paired = runs.extra_context(method, shared) - before
        past = crossed_interval(paired)
        lines.append(
            f"    extra-context cost {_interval(past, digits_near_margin(past, margin))},"
            f" {compare(past, margin)}"
        )
        if len(shared) > 1:
            lines.append("      per seed: " + ", ".join(f"{v:+.3f}" for v in paired.mean(1)))
        own = runs.extra_context(other).mean(1)  # every seed of `other`
        if len(shared) == 1 and len(own) > 1:
            spread = float(own.max() - own.min())
            relation = "more" if spread > abs(past.mean) else "less"
            hedge = (
                f" On one seed the interval covers the text, not the training: {other}'s"
                f" own extra-context cost moves by {spread:.3f} nats between its {len(own)}"
                f" seeds, {relation} than this difference."
            )
    lines.append(
        f"    loss at the training length {_interval(at_l, digits_near_margin(at_l, margin))},"
        f" {compare(at_l, margin)}"
    )
    price = {
        Comparison.BETTER: "better too",
        Comparison.WORSE: "worse",
        Comparison.EQUAL: "practically equal",
        Comparison.UNDECIDED: "not told apart",
    }[compare(at_l, margin)]
    if past is None or before is None:
        reading = f"{method} runs where {other} cannot; at the training length it is {price}."
    else:
        gain = {
            Comparison.BETTER: f"removes {-past.mean:.3f} of the {before.mean():.3f} nats"
            f" the extra context costs {other} on the same {seeds}",
            Comparison.WORSE: f"adds {past.mean:.3f} nats to the {before.mean():.3f} the extra"
            f" context costs {other} on the same {seeds}",
            Comparison.EQUAL: f"costs what {other} costs",
            Comparison.UNDECIDED: f"is not told apart from {other}",
        }[compare(past, margin)]
        rest = {
            ContextEffect.HURTS: "but is still hurt by it",
            ContextEffect.KEEPS: "and keeps its quality",
            ContextEffect.USES: "and uses it",
            ContextEffect.UNDECIDED: "and whether what is left hurts it is inconclusive",
        }[runs.context_effect(method, margin)]
        reading = (
            f"past the training length {method} {gain}, {rest}; at the training length"
            f" it is {price}."
        )
    lines.append(textwrap.fill("Read together: " + reading + hedge, 80, subsequent_indent="  "))
    return lines
