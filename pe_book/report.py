"""The study's results as the chapters print them: tables and sentences computed from ``Runs``.

Chapters 10, 11 and 14 (and the study's appendix) print what the study found through
these functions, never typed by hand, so they cannot contradict each other or the data.
Each function takes :class:`pe_book.results.Runs` (and the margin of
:mod:`pe_book.intervals`) and returns text; nothing here trains or evaluates a model.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence

from pe_book.intervals import EQUIVALENCE_NATS, ContextEffect, Interval, compare
from pe_book.results import Runs

__all__ = [
    "context_table",
    "effects",
    "finding",
    "keepers",
    "method_list",
    "perplexity_table",
    "sensitivity_table",
    "summary_sentence",
]

KEEPING = (ContextEffect.KEEPS, ContextEffect.USES)


def _cell(interval: Interval, digits: int = 3) -> str:
    return f"{interval.mean:+.{digits}f} [{interval.low:+.{digits}f}, {interval.high:+.{digits}f}]"


def _ppl(interval: Interval) -> str:
    """A loss interval shown as perplexity: exp of each end (exp is increasing)."""
    low, high = math.exp(interval.low), math.exp(interval.high)
    return f"{math.exp(interval.mean):.2f} [{low:.2f}, {high:.2f}]"


def method_list(methods: Sequence[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    methods = list(methods)
    if not methods:
        return "none"
    return methods[0] if len(methods) == 1 else ", ".join(methods[:-1]) + " and " + methods[-1]


def perplexity_table(runs: Runs, lengths: Sequence[int] | None = None) -> str:
    """Perplexity per character with its 95% interval, per method and window length."""
    lengths = list(runs.lengths if lengths is None else lengths)
    width = 22
    lines = [f"{'method':<16}" + "".join(f"{'n = ' + str(n):>{width}}" for n in lengths)]
    for method in runs.methods:
        cells = [
            _ppl(runs.loss(method, n)) if runs.runs_at(method, n) else "cannot run" for n in lengths
        ]
        lines.append(f"{method:<16}" + "".join(f"{c:>{width}}" for c in cells))
    return "\n".join(lines)


def effects(runs: Runs, margin: float = EQUIVALENCE_NATS) -> dict[str, ContextEffect]:
    """What the extra context does to every method that can run the longest windows."""
    top = max(runs.lengths)
    return {m: runs.context_effect(m, margin) for m in runs.methods if runs.runs_at(m, top)}


def keepers(runs: Runs, margin: float = EQUIVALENCE_NATS) -> list[str]:
    """The methods that keep their quality (or use the extra context), in the book's order."""
    return [m for m, e in effects(runs, margin).items() if e in KEEPING]


def context_table(runs: Runs, margin: float = EQUIVALENCE_NATS) -> str:
    """Extra-context cost (nats per character, full minus capped, the same targets) with
    its interval and verdict, per method, smallest cost first."""
    top = max(runs.lengths)
    rows = [(m, runs.extra_context_cost(m)) for m in runs.methods if runs.runs_at(m, top)]
    rows.sort(key=lambda row: row[1].mean)
    lines = [f"{'method':<16}{'extra-context cost [95% interval]':>34}  verdict"]
    for method, cost in rows:
        lines.append(f"{method:<16}{_cell(cost):>34}  {runs.context_effect(method, margin)}")
    cannot = [m for m in runs.methods if not runs.runs_at(m, top)]
    if cannot:
        lines.append(f"cannot run windows of {top}: {method_list(cannot)}")
    return "\n".join(lines)


def sensitivity_table(runs: Runs, margins: Sequence[float]) -> str:
    """Each method's verdict at several margins: how much the verdicts rest on the choice."""
    lines = [f"{'method':<16}" + "".join(f"{f'margin {m:g}':>20}" for m in margins)]
    by_margin = [effects(runs, margin) for margin in margins]
    for method in by_margin[0]:
        lines.append(f"{method:<16}" + "".join(f"{e[method]!s:>20}" for e in by_margin))
    return "\n".join(lines)


def summary_sentence(runs: Runs, margin: float = EQUIVALENCE_NATS) -> str:
    """One sentence: which methods keep their quality past the training length, which
    are hurt, which are undecided (from the intervals, at the declared margin)."""
    found = effects(runs, margin)
    groups: dict[str, list[str]] = {}
    for method, effect in found.items():
        groups.setdefault(str(effect), []).append(method)
    seeds = len(runs.seeds(*found))
    phrases = {  # (one method, several)
        ContextEffect.USES: ("uses the extra context", "use the extra context"),
        ContextEffect.KEEPS: ("keeps its quality", "keep their quality"),
        ContextEffect.UNDECIDED: ("is undecided", "are undecided"),
        ContextEffect.HURTS: ("is hurt by the extra context", "are hurt by the extra context"),
    }
    parts = [
        f"{method_list(groups[str(e)])} {phrases[e][len(groups[str(e)]) > 1]}"
        for e in phrases
        if str(e) in groups
    ]
    return (
        f"Past the training length ({seeds} seed{'s' if seeds != 1 else ''}, 95% intervals,"
        f" margin {margin:g} nats): " + "; ".join(parts) + "."
    )


def finding(
    runs: Runs, method: str, against: str | None = None, margin: float = EQUIVALENCE_NATS
) -> str:
    """What the study found for one method, as a sentence wrapped to 80 columns.

    Its extra-context cost with the interval and the verdict (or that it cannot run the
    longest windows); with ``against``, its loss at the training length minus that
    method's, paired, with the comparison's verdict. A method with no runs yet says so.
    """
    if method not in runs.methods:
        return f"{method}: no runs in the study's results yet."
    seeds = len(runs.seeds(method))
    top = max(runs.lengths)
    text = f"{method} ({seeds} seed{'s' if seeds != 1 else ''}): "
    if runs.runs_at(method, top):
        cost = runs.extra_context_cost(method)
        effect = runs.context_effect(method, margin)
        text += f"extra-context cost {_cell(cost)} nats, {effect}"
    else:
        text += f"cannot run windows of {top}"
    if against is not None and against in runs.methods:
        difference = runs.difference(method, against, runs.unit)
        text += (
            f"; loss at the training length minus {against}'s: {_cell(difference)},"
            f" {compare(difference, margin)}"
        )
    return textwrap.fill(text + ".", 80, subsequent_indent="  ")
