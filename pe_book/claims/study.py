"""Evidence for the extrapolation claims, from the committed study (chapter 11).

Every function takes ``seeds``: the study's results, one {method: StudyResult}
per seed (default: the committed seeds 0 and 1, ``pe_book.results.load_study``).
A verdict needs the evidence to agree in every seed. "Keeps its quality" is
``StudyResult.keeps_quality``: the same characters cost at most
``KEEPS_QUALITY_NATS`` more with the full context than with a training-length one.
"""

from __future__ import annotations

from collections.abc import Sequence

from pe_book.claims import Finding, evidence
from pe_book.results import KEEPS_QUALITY_NATS, StudyResult, load_study

Seeds = Sequence[dict[str, StudyResult]]

#: The four methods the ALiBi paper compares.
PAPER_METHODS = ("alibi", "t5", "rope", "sinusoidal")


def committed_seeds() -> tuple[dict[str, StudyResult], ...]:
    return load_study(0), load_study(1)


def _long(study: dict[str, StudyResult], position: str) -> float:
    """Perplexity in the longest windows (16 L in the book's study)."""
    result = study[position]
    value = result.perplexity[result.longest]
    if value is None:
        raise ValueError(f"{position} cannot run the longest windows")
    return value


def _keeps(seeds: Seeds, position: str) -> bool:
    return all(study[position].keeps_quality() for study in seeds)


def _costs(seeds: Seeds, position: str) -> str:
    return " and ".join(f"{study[position].extra_context_cost:+.3f}" for study in seeds)


def _degradations(seeds: Seeds, position: str) -> str:
    return " and ".join(f"{study[position].degradation:.2f}" for study in seeds)


@evidence("004-sinusoidal-poor")
def sinusoidal_poor(seeds: Seeds | None = None) -> Finding:
    """The sinusoidal model's perplexity rises most of all methods that can run, in every seed."""
    seeds = seeds or committed_seeds()
    worst = [max((p for p in s if s[p].runs_long), key=lambda p: s[p].degradation) for s in seeds]
    large = all(s["sinusoidal"].degradation > 2 for s in seeds)
    rise = f"in every seed: {worst[0]}" if len(set(worst)) == 1 else f"by seed: {worst}"
    return Finding(
        holds=large and set(worst) == {"sinusoidal"},
        shown=(
            f"perplexity 16L / L, sinusoidal: {_degradations(seeds, 'sinusoidal')}"
            f" (seeds 0 and 1); largest rise {rise}",
        ),
    )


@evidence("001-sinusoidal-degrades")
def sinusoidal_degrades(seeds: Seeds | None = None) -> Finding:
    """Trained short, read long: the sinusoidal model's perplexity at 16L over L, every seed."""
    seeds = seeds or committed_seeds()
    return Finding(
        holds=all(s["sinusoidal"].degradation > 2 for s in seeds),
        shown=(f"perplexity 16L / L, sinusoidal: {_degradations(seeds, 'sinusoidal')}",),
    )


@evidence("001-sinusoidal-runs-longer")
def sinusoidal_runs_longer(seeds: Seeds | None = None) -> Finding:
    """Handling longer inputs = keeping its quality on them; running alone is by construction."""
    seeds = seeds or committed_seeds()
    runs = all(s["sinusoidal"].runs_long and not s["learned"].runs_long for s in seeds)
    return Finding(
        holds=_keeps(seeds, "sinusoidal"),
        shown=(
            f"runs past L (the learned table cannot): {runs}; extra context on the same"
            f" characters: {_costs(seeds, 'sinusoidal')} nats (keeps its quality:"
            f" <= {KEEPS_QUALITY_NATS})",
        ),
    )


@evidence("004-rope-better-not-enough")
def rope_better_not_enough(seeds: Seeds | None = None) -> Finding:
    """RoPE beats sinusoidal at 16L in every seed, yet does not keep its quality."""
    seeds = seeds or committed_seeds()
    better = all(_long(s, "rope") < _long(s, "sinusoidal") for s in seeds)
    return Finding(
        holds=better and not _keeps(seeds, "rope"),
        shown=(
            f"perplexity at 16L below sinusoidal's in both seeds: {better}; extra context:"
            f" {_costs(seeds, 'rope')} nats",
        ),
    )


@evidence("004-t5-better-than-rope")
def t5_better_than_rope(seeds: Seeds | None = None) -> Finding:
    """T5's perplexity at 16L below RoPE's and sinusoidal's, every seed."""
    seeds = seeds or committed_seeds()
    better = all(_long(s, "t5") < min(_long(s, "rope"), _long(s, "sinusoidal")) for s in seeds)
    return Finding(
        holds=better,
        shown=(
            "perplexity at 16L, t5 / rope / sinusoidal: "
            + "; ".join(
                f"{_long(s, 't5'):.2f} / {_long(s, 'rope'):.2f} / {_long(s, 'sinusoidal'):.2f}"
                for s in seeds
            ),
        ),
    )


@evidence("004-alibi-best")
def alibi_best(seeds: Seeds | None = None) -> Finding:
    """ALiBi's perplexity at 16L the lowest of the paper's four methods, every seed."""
    seeds = seeds or committed_seeds()
    best = all(_long(s, "alibi") < min(_long(s, p) for p in PAPER_METHODS[1:]) for s in seeds)
    weakest_at_l = all(
        s["alibi"].perplexity[s["alibi"].train_len]
        >= max(s[p].perplexity[s[p].train_len] for p in PAPER_METHODS[1:])
        for s in seeds
    )
    shaw_lower = any(_long(s, "shaw") < _long(s, "alibi") for s in seeds)
    caveats = [
        text
        for text, found in [
            ("weakest of the four at the training length", weakest_at_l),
            ("Shaw's is lower at 16L", shaw_lower),
        ]
        if found
    ]
    return Finding(
        holds=best,
        caveat="; ".join(caveats) or None,
        shown=(f"lowest of alibi, t5, rope, sinusoidal at 16L in both seeds: {best}",),
    )


@evidence("004-relative-extrapolate")
def relative_extrapolate(seeds: Seeds | None = None) -> Finding:
    """Do Shaw, T5, RoPE and ALiBi all keep their quality at 16L, in every seed?"""
    seeds = seeds or committed_seeds()
    family = ("shaw", "t5", "rope", "alibi")
    keeps = {p: _keeps(seeds, p) for p in family}
    return Finding(
        holds=all(keeps.values()),
        shown=(
            "keeps its quality in both seeds: " + ", ".join(f"{p} {k}" for p, k in keeps.items()),
        ),
    )


@evidence("001-rope-extrapolates-better")
def rope_extrapolates_better(seeds: Seeds | None = None) -> Finding:
    """RoPE below sinusoidal at every window length past L, every seed; does it keep quality?"""
    seeds = seeds or committed_seeds()
    better = all(
        s["rope"].perplexity[n] < s["sinusoidal"].perplexity[n]
        for s in seeds
        for n in s["rope"].perplexity
        if n > s["rope"].train_len
    )
    return Finding(
        holds=better,
        caveat=None if _keeps(seeds, "rope") else "better, but far from good",
        shown=(f"RoPE's perplexity below sinusoidal's at every n > L, both seeds: {better}",),
    )


@evidence("001-alibi-extrapolates-far")
def alibi_extrapolates_far(seeds: Seeds | None = None) -> Finding:
    """ALiBi keeps its quality at 16 times the training length, every seed."""
    seeds = seeds or committed_seeds()
    result = seeds[0]["alibi"]
    return Finding(
        holds=_keeps(seeds, "alibi"),
        caveat=f"measured at {result.longest // result.train_len}× a {result.train_len}"
        "-character training length"
        if result.train_len != 512
        else None,
        shown=(f"extra context on the same characters, alibi: {_costs(seeds, 'alibi')} nats",),
    )


@evidence("004-clipping-extrapolates")
def clipping_extrapolates(seeds: Seeds | None = None) -> Finding:
    """Shaw's window perplexity at 16L within 10% of L in every seed; and the same characters?"""
    seeds = seeds or committed_seeds()
    level = all(s["shaw"].degradation < 1.1 for s in seeds)
    return Finding(
        holds=level,
        caveat=None if _keeps(seeds, "shaw") else "the extra context still hurts it",
        shown=(
            f"shaw, perplexity 16L / L: {_degradations(seeds, 'shaw')}; extra context on"
            f" the same characters: {_costs(seeds, 'shaw')} nats",
        ),
    )


@evidence("004-position-bottleneck")
def position_bottleneck(seeds: Seeds | None = None) -> Finding:
    """Swapping only the position method decides whether the model keeps its quality, every
    seed; caveat if NoPE, which has no method to blame, loses it too (chapter 10)."""
    seeds = seeds or committed_seeds()
    keeps = [
        {p: r.keeps_quality() for p, r in s.items() if r.runs_long and p != "none"} for s in seeds
    ]
    decides = all(any(k.values()) and not all(k.values()) for k in keeps)
    kept = " and ".join(", ".join(p for p, ok in k.items() if ok) or "none" for k in keeps)
    return Finding(
        holds=decides,
        caveat=None if _keeps(seeds, "none") else "NoPE, with no position method, degrades too",
        shown=(
            f"of the {len(keeps[0])} methods that run past L, those that keep their quality"
            f" (seeds 0 and 1): {kept}; NoPE's extra context: {_costs(seeds, 'none')} nats",
        ),
    )
