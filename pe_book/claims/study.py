"""Evidence for the extrapolation claims, from the five-seed study (chapters 10 and 11).

One standard for every claim the study decides (:mod:`pe_book.intervals`): a claim
that a method *keeps its quality* past the training length holds when the interval of
its extra-context cost (the same characters, the full context against one capped at the
training length) lies at or below the margin (``context_effect`` "keeps its quality" or
"uses it"); a claim that A *is better than* B holds when the interval of A's loss minus
B's, paired on segments and seeds, lies below minus the margin. Every function takes
``runs`` (the base study, :class:`pe_book.results.Runs` of design "lm") and, where it
needs it, ``long`` (the train-long reference, design "long"), so that a test can hand
it a counterfactual.
"""

from __future__ import annotations

from functools import cache

from pe_book.claims import Finding, evidence
from pe_book.intervals import (
    EQUIVALENCE_NATS,
    Comparison,
    ContextEffect,
    Interval,
    compare,
    crossed_interval,
)
from pe_book.paired import digits_near_margin
from pe_book.report import interval
from pe_book.results import Runs

#: The four methods the ALiBi paper compares.
PAPER_METHODS = ("alibi", "t5", "rope", "sinusoidal")
#: Relative methods in the source's sense (chapter 6's and 9's).
RELATIVE = ("shaw", "t5", "rope", "alibi")
KEEPS = (ContextEffect.KEEPS, ContextEffect.USES)


@cache
def base_study() -> Runs:
    return Runs.load("lm")


@cache
def long_study() -> Runs:
    return Runs.load("long")


def _longest(runs: Runs) -> int:
    return max(runs.lengths)


def _cost(runs: Runs, method: str) -> str:
    return f"{method} {runs.extra_context_cost(method)} ({runs.context_effect(method)})"


def _seeds(runs: Runs, *methods: str) -> str:
    seeds = len(runs.seeds(*methods))
    return f"{seeds} seed{'s' if seeds != 1 else ''}, 95% intervals, margin {EQUIVALENCE_NATS} nats"


def _runs_long(runs: Runs) -> list[str]:
    return [m for m in runs.methods if runs.runs_at(m, _longest(runs))]


@evidence("004-sinusoidal-poor")
def sinusoidal_poor(runs: Runs | None = None) -> Finding:
    """Sinusoidal is hurt by the extra context, and its longest-window loss rises more
    than every other method's that can run (paired differences of the rises)."""
    runs = runs or base_study()
    top = _longest(runs)
    others = [m for m in _runs_long(runs) if m != "sinusoidal"]
    worse = {
        m: runs.window_effect("sinusoidal", top).mean - runs.window_effect(m, top).mean
        for m in others
    }
    rises_most = all(value > EQUIVALENCE_NATS for value in worse.values())
    hurt = runs.context_effect("sinusoidal") is ContextEffect.HURTS
    return Finding(
        holds=hurt and rises_most,
        shown=(
            f"extra context: {_cost(runs, 'sinusoidal')}; {_seeds(runs, 'sinusoidal')}",
            f"loss in windows of {top} minus in windows of {runs.unit}, sinusoidal: "
            f"{runs.window_effect('sinusoidal', top)} nats; the next largest rise is "
            f"{min(worse.values()):.3f} nats smaller ({min(worse, key=worse.get)})",
        ),
    )


@evidence("001-sinusoidal-degrades")
def sinusoidal_degrades(runs: Runs | None = None) -> Finding:
    """Trained short, read long: the sinusoidal model's loss rises with the window, and
    on the same characters the extra context hurts it."""
    runs = runs or base_study()
    top = _longest(runs)
    rise = runs.window_effect("sinusoidal", top)
    return Finding(
        holds=rise.low > EQUIVALENCE_NATS
        and runs.context_effect("sinusoidal") is ContextEffect.HURTS,
        shown=(
            f"loss in windows of {top} minus {runs.unit}: {rise} nats (perplexity × "
            f"{2.718281828459045**rise.mean:.1f}); extra context: {_cost(runs, 'sinusoidal')}",
        ),
    )


@evidence("001-sinusoidal-runs-longer")
def sinusoidal_runs_longer(runs: Runs | None = None) -> Finding:
    """'Can handle longer inputs' read as: runs on them *and* keeps its quality there
    (running alone is true by construction of the formula)."""
    runs = runs or base_study()
    top = _longest(runs)
    runs_there = runs.runs_at("sinusoidal", top) and not runs.runs_at("learned", top)
    return Finding(
        holds=runs.context_effect("sinusoidal") in KEEPS,
        shown=(
            f"runs at {top} (the learned table cannot): {runs_there}; extra context: "
            f"{_cost(runs, 'sinusoidal')}",
        ),
    )


def _better(runs: Runs, a: str, b: str, length: int) -> bool:
    return runs.compare(a, b, length) is Comparison.BETTER


@evidence("004-rope-better-not-enough")
def rope_better_not_enough(runs: Runs | None = None) -> Finding:
    """RoPE better than sinusoidal in the longest windows, yet hurt by the extra context."""
    runs = runs or base_study()
    top = _longest(runs)
    return Finding(
        holds=_better(runs, "rope", "sinusoidal", top)
        and runs.context_effect("rope") is ContextEffect.HURTS,
        shown=(
            f"loss at {top}, rope minus sinusoidal: {runs.difference('rope', 'sinusoidal', top)}"
            f" ({runs.compare('rope', 'sinusoidal', top)}); extra context: {_cost(runs, 'rope')}",
        ),
    )


@evidence("004-t5-better-than-rope")
def t5_better_than_rope(runs: Runs | None = None) -> Finding:
    """T5 better than RoPE and than sinusoidal in the longest windows."""
    runs = runs or base_study()
    top = _longest(runs)
    pairs = [("t5", "rope"), ("t5", "sinusoidal")]
    return Finding(
        holds=all(_better(runs, a, b, top) for a, b in pairs),
        shown=tuple(
            f"loss at {top}, {a} minus {b}: {runs.difference(a, b, top)}"
            f" ({runs.compare(a, b, top)})"
            for a, b in pairs
        ),
    )


@evidence("004-alibi-best")
def alibi_best(runs: Runs | None = None) -> Finding:
    """ALiBi better than T5, RoPE and sinusoidal in the longest windows; caveats: worse at
    the training length, or a method outside the paper's four better still."""
    runs = runs or base_study()
    top = _longest(runs)
    rivals = PAPER_METHODS[1:]
    best = all(_better(runs, "alibi", m, top) for m in rivals)
    worse_at_l = [m for m in rivals if runs.compare("alibi", m, runs.unit) is Comparison.WORSE]
    beaten_by = [
        m for m in _runs_long(runs) if m not in PAPER_METHODS and _better(runs, m, "alibi", top)
    ]
    caveats = []
    if worse_at_l:
        caveats.append(f"worse than {', '.join(worse_at_l)} at the training length")
    if beaten_by:
        caveats.append(f"{', '.join(beaten_by)}, not in the paper's comparison, better at {top}")
    return Finding(
        holds=best,
        caveat="; ".join(caveats) or None,
        shown=tuple(
            f"loss at {top}, alibi minus {m}: {runs.difference('alibi', m, top)}"
            f" ({runs.compare('alibi', m, top)})"
            for m in rivals
        ),
    )


@evidence("004-relative-extrapolate")
def relative_extrapolate(runs: Runs | None = None) -> Finding:
    """Do Shaw, T5, RoPE and ALiBi all keep their quality past the training length?"""
    runs = runs or base_study()
    return Finding(
        holds=all(runs.context_effect(m) in KEEPS for m in RELATIVE),
        shown=tuple(f"extra context: {_cost(runs, m)}" for m in RELATIVE),
    )


@evidence("001-rope-extrapolates-better")
def rope_extrapolates_better(runs: Runs | None = None) -> Finding:
    """RoPE better than sinusoidal at every window length past L; caveat if RoPE itself is
    hurt by the extra context."""
    runs = runs or base_study()
    longer = [n for n in runs.lengths if n > runs.unit]
    better = all(_better(runs, "rope", "sinusoidal", n) for n in longer)
    return Finding(
        holds=better,
        caveat=None
        if runs.context_effect("rope") in KEEPS
        else "better, but hurt by the extra context itself",
        shown=(
            f"rope better than sinusoidal at every n in {longer}: {better}; "
            f"extra context: {_cost(runs, 'rope')}",
        ),
    )


@evidence("001-alibi-extrapolates-far")
def alibi_extrapolates_far(runs: Runs | None = None) -> Finding:
    """ALiBi keeps its quality at 16 times the training length."""
    runs = runs or base_study()
    top = _longest(runs)
    return Finding(
        holds=runs.context_effect("alibi") in KEEPS,
        caveat=f"measured at {top // runs.unit}× a {runs.unit}-character training length",
        shown=(f"extra context: {_cost(runs, 'alibi')}; {_seeds(runs, 'alibi')}",),
    )


@evidence("004-clipping-extrapolates")
def clipping_extrapolates(runs: Runs | None = None) -> Finding:
    """Shaw's clipped offsets keep its quality past the training length (the same standard
    as every other method); its window perplexity is shown beside it."""
    runs = runs or base_study()
    top = _longest(runs)
    return Finding(
        holds=runs.context_effect("shaw") in KEEPS,
        shown=(
            f"extra context: {_cost(runs, 'shaw')}; loss in windows of {top} minus {runs.unit}"
            f" (which the early-token effect flatters): {runs.window_effect('shaw', top)}",
        ),
    )


@evidence("004-position-bottleneck")
def position_bottleneck(runs: Runs | None = None) -> Finding:
    """Two questions, each decided by intervals. *The method matters*: paired on the same
    seeds and characters, ALiBi's extra-context cost minus that of the sinusoidal encoding
    it was made to replace lies below minus the margin (RoPE's and T5's differences are
    shown beside it, the paper's other two methods). *The whole bottleneck*: some method
    keeps its quality past the training length with an interval over seeds as well as text
    (one seed speaks for one trained model). The first decides holds; the second is always
    a caveat, naming what was found: no such method, or the one setting it was shown in."""
    runs = runs or base_study()
    top = _longest(runs)

    def paired(a: str, b: str) -> tuple[Interval, Comparison, int]:
        seeds = tuple(sorted(set(runs.seeds(a)) & set(runs.seeds(b))))
        found = crossed_interval(runs.extra_context(a, seeds) - runs.extra_context(b, seeds))
        return found, compare(found), len(seeds)

    rivals = ("sinusoidal", "rope", "t5")  # the one that decides first, then the paper's others
    differences = {b: paired("alibi", b) for b in rivals}
    matters = differences["sinusoidal"][1] is Comparison.BETTER
    candidates = [m for m in _runs_long(runs) if m != "none"]
    costs = {m: runs.extra_context_cost(m) for m in candidates}
    keep = [m for m in candidates if runs.context_effect(m) in KEEPS]
    shown_keep = [m for m in keep if costs[m].sources == "seeds and text"]
    one_seed = [m for m in keep if m not in shown_keep]
    near = [  # inconclusive: neither kept nor hurt
        m for m in candidates if runs.context_effect(m) is ContextEffect.UNDECIDED
    ]
    if shown_keep:
        caveat = (
            f"{', '.join(shown_keep)} "
            + ("keeps its" if len(shown_keep) == 1 else "keep their")
            + f" quality, but only as measured: one model size, {top // runs.unit}x the"
            " training length"
        )
    else:
        caveat = (
            "no method keeps its quality with an interval over seeds and text, so the study"
            " does not show the method to be the whole bottleneck"
        )
    first, verdict, seeds = differences["sinusoidal"]
    lines = [
        f"the method matters? extra-context cost, alibi minus sinusoidal (paired, {seeds} "
        f"seed{'s' * (seeds != 1)}): {first} ({verdict}); "
        + "; ".join(f"minus {b}: {d} ({c})" for b, (d, c, _) in list(differences.items())[1:]),
        "the whole bottleneck? methods that keep their quality over seeds and text: "
        + (", ".join(shown_keep) or "no method")
        + "".join(
            f"; {label}: " + ", ".join(f"{m} {costs[m]}" for m in group)
            for label, group in (
                ("keeping it with one seed (text only)", one_seed),
                ("inconclusive", near),
            )
            if group
        ),
        f"NoPE, position from the causal mask alone (a choice of how position enters, not a "
        f"control): {_cost(runs, 'none')}",
    ]
    return Finding(holds=matters, caveat=caveat, shown=tuple(lines))


@evidence("press-alibi-short-matches-long")
def alibi_short_matches_long(runs: Runs | None = None, long: Runs | None = None) -> Finding:
    """ALiBi trained at L reads the longest windows at least as well as a sinusoidal model
    trained at that length (the same characters past the first L, full context); caveat
    if the model trained long is itself worse at L than its short counterpart (a weak
    reference at this budget)."""
    runs, long = runs or base_study(), long or long_study()
    gap = runs.gap_to("alibi", long, "sinusoidal")
    at_l = runs.difference("sinusoidal", "sinusoidal", runs.unit, other=long)
    weak = compare(at_l) is Comparison.BETTER  # the short model beats the long one at L
    return Finding(
        holds=gap.high <= EQUIVALENCE_NATS,
        caveat="the sinusoidal model trained long is worse at the training length than the "
        "one trained short, so it is a weak reference at this budget"
        if weak
        else None,
        shown=(
            f"full-context loss, alibi trained at {runs.unit} minus sinusoidal trained at "
            f"{_longest(runs)}: {gap} nats (at most {EQUIVALENCE_NATS} counts as no worse)",
            f"loss in windows of {runs.unit}, sinusoidal trained at {runs.unit} minus trained "
            f"at {_longest(runs)}: {at_l}",
        ),
    )


def _against_each(runs: Runs, method: str, rivals: tuple[str, ...]) -> tuple[bool, list[str]]:
    """Is ``method`` better than every rival in the longest windows (loss paired on seeds
    and segments)? With, per rival, that difference and the paired extra-context cost."""
    top, lines = _longest(runs), []
    for rival in rivals:
        seeds = tuple(sorted(set(runs.seeds(method)) & set(runs.seeds(rival))))
        extra = runs.extra_context(method, seeds) - runs.extra_context(rival, seeds)
        past = crossed_interval(extra)
        far = runs.difference(method, rival, top)
        lines.append(
            f"{method} minus {rival} ({len(seeds)} seed{'s' * (len(seeds) != 1)}): loss at"
            f" {top} {interval(far, digits_near_margin(far))} ({compare(far)}); extra-context"
            f" cost {interval(past, digits_near_margin(past))} ({compare(past)})"
        )
    return all(_better(runs, method, rival, top) for rival in rivals), lines


#: Half the last of the three decimals the book prints: an interval end that clears minus
#: the margin by less than this prints as the margin itself.
ROUNDING = 5e-4


@evidence("chi2022-kerple-beats-alibi")
def kerple_beats_alibi(runs: Runs | None = None) -> Finding:
    """KERPLE (logarithmic) better than ALiBi in the longest windows, paired. The claim's
    reason is extrapolation, so a caveat when that part is thin (chapter 10's second cold
    read): KERPLE's lead at the training length already makes more than half the gap in
    the longest windows, or the paired extra-context cost clears minus the margin by less
    than ``ROUNDING`` (or not at all)."""
    runs = runs or base_study()
    better, lines = _against_each(runs, "kerple", ("alibi",))
    top = _longest(runs)
    seeds = tuple(sorted(set(runs.seeds("kerple")) & set(runs.seeds("alibi"))))
    far, at_l = (runs.difference("kerple", "alibi", n) for n in (top, runs.unit))
    past = crossed_interval(
        runs.extra_context("kerple", seeds) - runs.extra_context("alibi", seeds)
    )
    share = at_l.mean / far.mean if far.mean < 0 else 0.0
    clears = -EQUIVALENCE_NATS - past.high  # > 0: the whole interval below -margin
    lines.append(
        f"loss at the training length {at_l} ({compare(at_l)}): {share:.0%} of the gap"
        f" at {top}; the extra-context cost clears minus the margin by {clears:+.4f} nats"
        f" (under {ROUNDING} it prints as the margin at three decimals)"
    )
    thin = []
    if share > 0.5:
        thin.append(
            f"{share:.0%} of KERPLE's lead at {top} is already there at the training"
            f" length ({at_l.mean:+.3f} nats): mostly a better model at L"
        )
    if clears < ROUNDING:
        thin.append(
            "the extrapolation part, the paired extra-context cost, "
            + (
                f"clears the margin by {clears:.4f} nats, less than its rounding,"
                if clears > 0
                else f"misses the margin by {-clears:.4f} nats,"
            )
            + f" on {len(seeds)} seed{'s' * (len(seeds) != 1)}"
        )
    caveat = "; ".join(thin) if thin else None
    return Finding(holds=better, caveat=caveat, shown=tuple(lines))


@evidence("li2024-fire-beats-its-special-cases")
def fire_beats_its_special_cases(runs: Runs | None = None) -> Finding:
    """FIRE better in the longest windows than each encoding it can represent (T5's
    bias, ALiBi, KERPLE), paired."""
    runs = runs or base_study()
    better, lines = _against_each(runs, "fire", ("t5", "alibi", "kerple"))
    return Finding(holds=better, shown=tuple(lines))
