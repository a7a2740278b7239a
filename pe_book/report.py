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
from pathlib import Path

import numpy as np

from pe_book import paired
from pe_book.intervals import (
    EQUIVALENCE_NATS,
    Comparison,
    ContextEffect,
    Interval,
    compare,
    crossed_interval,
)
from pe_book.results import RESULTS, Runs, TaskRuns

__all__ = [
    "context_table",
    "effects",
    "finding",
    "interval",
    "keepers",
    "margin_changes",
    "method_list",
    "perplexity",
    "perplexity_table",
    "reference_sentence",
    "runnable",
    "scale_and_rates",
    "sensitivity_table",
    "summary_sentence",
    "task_ranking",
    "task_sentence",
    "where_it_fails",
]

KEEPING = (ContextEffect.KEEPS, ContextEffect.USES)


def interval(found: Interval, digits: int = 3) -> str:
    """'+0.019 [+0.015, +0.023]': a mean with its 95% interval, signed."""
    return f"{found.mean:+.{digits}f} [{found.low:+.{digits}f}, {found.high:+.{digits}f}]"


def perplexity(loss: Interval) -> str:
    """A loss interval shown as perplexity, '4.45 [4.07, 4.86]': exp of each end."""
    low, high = math.exp(loss.low), math.exp(loss.high)
    return f"{math.exp(loss.mean):.2f} [{low:.2f}, {high:.2f}]"


def method_list(methods: Sequence[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    methods = list(methods)
    if not methods:
        return "none"
    return methods[0] if len(methods) == 1 else ", ".join(methods[:-1]) + " and " + methods[-1]


def perplexity_table(runs: Runs, lengths: Sequence[int] | None = None) -> str:
    """Perplexity per character with its 95% interval, per method and window length."""
    lengths = list(runs.lengths if lengths is None else lengths)
    width = 21
    lines = [f"{'method':<16}" + "".join(f"{'n = ' + str(n):>{width}}" for n in lengths)]
    for method in runs.methods:
        cells = [
            perplexity(runs.loss(method, n)) if runs.runs_at(method, n) else "cannot run"
            for n in lengths
        ]
        lines.append(f"{method:<16}" + "".join(f"{c:>{width}}" for c in cells))
    return "\n".join(lines)


def runnable(runs: Runs) -> list[str]:
    """The methods that can run the longest windows (all but a learned table)."""
    return [m for m in runs.methods if runs.runs_at(m, max(runs.lengths))]


def effects(runs: Runs, margin: float = EQUIVALENCE_NATS) -> dict[str, ContextEffect]:
    """What the extra context does to every method that can run the longest windows."""
    return {m: runs.context_effect(m, margin) for m in runnable(runs)}


def keepers(runs: Runs, margin: float = EQUIVALENCE_NATS) -> list[str]:
    """The methods that keep their quality (or use the extra context), in the book's order."""
    return [m for m, e in effects(runs, margin).items() if e in KEEPING]


def context_table(runs: Runs, margin: float = EQUIVALENCE_NATS, seeds: bool = False) -> str:
    """Extra-context cost (nats per character, full minus capped, the same targets) with
    its interval and verdict, per method, smallest cost first; ``seeds`` adds a column
    with each method's number of seeds (what its interval covers)."""
    top = max(runs.lengths)
    rows = [(m, runs.extra_context_cost(m)) for m in runs.methods if runs.runs_at(m, top)]
    rows.sort(key=lambda row: row[1].mean)
    count = f"{'seeds':>6}" if seeds else ""
    lines = [f"{'method':<16}{count}{'extra-context cost [95% interval]':>34}  verdict"]
    for method, cost in rows:
        count = f"{len(runs.seeds(method)):>6}" if seeds else ""
        lines.append(
            f"{method:<16}{count}{interval(cost):>34}  {runs.context_effect(method, margin)}"
        )
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
    are hurt, which are inconclusive (from the intervals, at the declared margin)."""
    found = effects(runs, margin)
    groups: dict[str, list[str]] = {}
    for method, effect in found.items():
        groups.setdefault(str(effect), []).append(method)
    counts = sorted({len(runs.seeds(method)) for method in found})
    seeds = (  # methods may have different numbers of seeds while a study is under way
        f"{counts[0]} seed{'s' if counts[0] != 1 else ''}"
        if len(counts) == 1
        else f"{counts[0]}-{counts[-1]} seeds a method"
    )
    phrases = {  # (one method, several)
        ContextEffect.USES: ("uses the extra context", "use the extra context"),
        ContextEffect.KEEPS: ("keeps its quality", "keep their quality"),
        ContextEffect.UNDECIDED: ("is inconclusive", "are inconclusive"),
        ContextEffect.HURTS: ("is hurt by the extra context", "are hurt by the extra context"),
    }
    parts = [
        f"{method_list(groups[str(e)])} {phrases[e][len(groups[str(e)]) > 1]}"
        for e in phrases
        if str(e) in groups
    ]
    return textwrap.fill(
        f"Past the training length ({seeds}, 95% intervals,"
        f" margin {margin:g} nats): " + "; ".join(parts) + ".",
        80,
    )


def finding(
    runs: Runs,
    method: str,
    against: str | None = None,
    margin: float = EQUIVALENCE_NATS,
    answers: str | None = None,
) -> str:
    """What the study found for one method, wrapped to 80 columns.

    Its extra-context cost with the interval and the verdict (or that it cannot run the
    longest windows); with ``against``, its loss at the training length minus that
    method's, paired, with the comparison's verdict. With ``answers`` (the method whose
    failure it answers; chapter 10), two paired comparisons on the seeds both have
    instead: the extra-context cost minus ``answers``'s (is the failure past the training
    length answered?) and the loss at the training length minus ``answers``'s (at what
    price?), then one sentence reading the two together. A method with no runs yet says
    so.
    """
    if method not in runs.methods:
        return f"{method}: no runs in the study's results yet."
    seeds = len(runs.seeds(method))
    top = max(runs.lengths)
    text = f"{method} ({seeds} seed{'s' if seeds != 1 else ''}): "
    if runs.runs_at(method, top):
        cost = runs.extra_context_cost(method)
        effect = runs.context_effect(method, margin)
        text += f"extra-context cost {interval(cost)} nats, {effect}"
    else:
        text += f"cannot run windows of {top}"
    if answers is not None and answers in runs.methods:
        lines = [textwrap.fill(text + ".", 80, subsequent_indent="  ")]
        return "\n".join(lines + paired.against(runs, method, answers, margin))
    if against is not None and against in runs.methods:
        difference = runs.difference(method, against, runs.unit)
        text += (
            f"; loss at the training length minus {against}'s: {interval(difference)},"
            f" {compare(difference, margin)}"
        )
    return textwrap.fill(text + ".", 80, subsequent_indent="  ")


def margin_changes(runs: Runs, margins: Sequence[float]) -> str:
    """Which verdicts change between the given margins, in one sentence."""
    by_margin = [effects(runs, margin) for margin in margins]
    changed = [m for m in by_margin[0] if len({str(e[m]) for e in by_margin}) > 1]
    span = f"from {min(margins):g} to {max(margins):g} nats"
    if not changed:
        return f"No verdict changes for margins {span}."
    return f"Verdicts that change for margins {span}: {method_list(changed)}."


def reference_sentence(short: Runs, long: Runs, method: str) -> str:
    """What the model trained long shows for one method: does it use the extra context,
    and how far behind it is the same method trained short (section 11.4)."""
    own, gap = long.context_effect(method), short.gap_to(method, long, method)
    verdict = {
        Comparison.WORSE: f"is {gap.mean:.3f} nats behind it",
        Comparison.BETTER: f"is {-gap.mean:.3f} nats ahead of it",
        Comparison.EQUAL: "is practically equal to it",
        Comparison.UNDECIDED: "is not told apart from it",
    }[compare(gap)]
    trained = long.config(method)["train_len"]
    return textwrap.fill(
        f"{method}: trained at {trained:,}, the model {_effect_phrase(own)}; trained at "
        f"{short.unit} it {verdict} past position {short.unit} ({interval(gap)}).",
        80,
        subsequent_indent="  ",
    )


def _effect_phrase(effect: ContextEffect) -> str:
    return {
        ContextEffect.USES: "uses the extra context",
        ContextEffect.KEEPS: "keeps its quality but gains nothing measurable from it",
        ContextEffect.HURTS: "is hurt by the extra context",
        ContextEffect.UNDECIDED: "is undecided about the extra context",
    }[effect]


def where_it_fails(runs: Runs, margin: float = EQUIVALENCE_NATS) -> str:
    """For each method, the first block of ``unit`` positions whose loss is worse than the
    training-length block's by more than the margin, both measured against the best
    method in that block (paired): where in the window the method starts to fail."""
    methods = runnable(runs)
    seeds = runs.seeds(*methods)
    bins = {m: runs.bin_losses(m, seeds) for m in methods}
    best = np.minimum.reduce([b.mean(axis=(0, 1)) for b in bins.values()])
    reference = min(methods, key=lambda m: float(np.abs(bins[m].mean(axis=(0, 1)) - best).sum()))
    lines = [
        f"first block worse than positions 0-{runs.unit - 1} by > {margin:g} nats,"
        f" relative to {reference}:"
    ]
    for method in methods:
        gap = bins[method] - bins[reference]  # (seeds, segments, bins)
        growth = gap - gap[:, :, :1]
        first = next(
            (b for b in range(1, gap.shape[2]) if crossed_interval(growth[:, :, b]).low > margin),
            None,
        )
        where = (
            "never"
            if first is None
            else f"positions {first * runs.unit}-{(first + 1) * runs.unit - 1}"
        )
        lines.append(f"  {method:<16}{where}")
    return "\n".join(lines)


def _out_of_training(taskruns: TaskRuns, task: str, method: str) -> float | None:
    config = taskruns.config(task)
    found = taskruns.accuracy(
        task, method, range(config["train_size"] + 1, config["test_size"] + 1)
    )
    return None if found is None else found.mean


def task_sentence(taskruns: TaskRuns, best: int = 3) -> str:
    """Per task, the methods that solve the most problems past the training sizes, and
    how many of the training sizes NoPE solves (section 11.7)."""
    parts = []
    for task in taskruns.tasks:
        shares = {m: _out_of_training(taskruns, task, m) for m in taskruns.methods(task)}
        ranked = sorted((m for m in shares if shares[m]), key=lambda m: -shares[m])
        top = ", ".join(f"{m} {shares[m]:.2f}" for m in ranked[:best])
        parts.append(f"{task}: {top or 'no method solves a single problem'}")
    config = taskruns.config(taskruns.tasks[0])
    inside = range(1, config["train_size"] + 1)
    nope = ", ".join(
        f"{task} {taskruns.accuracy(task, 'none', inside).mean:.2f}"
        for task in taskruns.tasks
        if "none" in taskruns.methods(task)
    )
    return textwrap.fill(
        f"Solved exactly past the training sizes (share, best {best}): "
        + "; ".join(parts)
        + f". NoPE at the training sizes: {nope}.",
        80,
    )


#: The five methods of Kazemnejad et al. (2023), by this book's names.
KAZEMNEJAD = ("none", "t5", "alibi", "rope", "sinusoidal")


def task_ranking(taskruns: TaskRuns, methods: Sequence[str] = KAZEMNEJAD) -> str:
    """Mean reciprocal rank of ``methods`` over the tasks, ranked by the share solved past
    the training sizes: Kazemnejad et al.'s summary measure, on this book's tasks."""
    reciprocal: dict[str, list[float]] = {m: [] for m in methods}
    complete = [t for t in taskruns.tasks if set(methods) <= set(taskruns.methods(t))]
    for task in complete:
        shares = {m: _out_of_training(taskruns, task, m) or 0.0 for m in methods}
        ranked = sorted(methods, key=lambda m: -shares[m])
        for rank, method in enumerate(ranked, start=1):
            reciprocal[method].append(1 / rank)
    if not complete:
        raise ValueError(f"no task has runs of all of {list(methods)}")
    mrr = {m: sum(r) / len(r) for m, r in reciprocal.items()}
    order = sorted(mrr, key=lambda m: -mrr[m])
    return textwrap.fill(
        f"mean reciprocal rank over {', '.join(complete)}: "
        + ", ".join(f"{m} {mrr[m]:.2f}" for m in order),
        80,
    )


def scale_and_rates(base: Runs, root: str | Path = RESULTS) -> str:
    """Section 11.9: the larger model's verdicts, and the base study's at other rates."""
    lines = []
    try:
        scale = Runs.load("scale", root)
    except FileNotFoundError:
        lines.append("larger model: no runs yet (python -m pe_book.study --design scale)")
    else:
        lines.append(f"larger model (L = {scale.unit}, seeds {list(scale.seeds())}):")
        lines.append(textwrap.indent(context_table(scale), "  "))
    for design in ("lr-low", "lr-high"):
        try:
            other = Runs.load(design, root)
        except FileNotFoundError:
            lines.append(f"{design}: no runs yet (python -m pe_book.study --design {design})")
            continue
        rate = other.config(other.methods[0])["learning_rate"]
        order = sorted(other.methods, key=lambda m: other.loss(m, other.unit).mean)
        base_order = sorted(other.methods, key=lambda m: base.loss(m, base.unit).mean)
        lines.append(
            f"learning rate {rate:g}: order at L {', '.join(order)} (base rate: "
            f"{', '.join(base_order)}); extra context "
            + ", ".join(f"{m} {other.context_effect(m)}" for m in other.methods)
        )
    return "\n".join(
        textwrap.fill(line, 80, subsequent_indent="  ") if "\n" not in line else line
        for line in lines
    )
