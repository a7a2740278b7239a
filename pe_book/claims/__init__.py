"""The registry of checkable claims the sources make, their evidence and their verdicts.

The preface (chapter 0) explains it; every chapter from chapter 1 on decides its own
claims in its *Claims checked* section, and the review chapter counts the verdicts.

One registry, stored as data in ``pe_book/data/claims.toml``: each claim has an
id, the source file it comes from, the claim in the book's own words, the
chapter that decides it, the *kind* of its evidence, a verdict and a reason.

Kinds of evidence (:class:`Kind`), shown in their own column and counted apart:

- **measured**: the verdict comes from a computation whose outcome the code that
  makes it does not fix (a measurement of pe_book's code or of the study's
  results, a counterexample search). Each has an evidence function in this
  package (``pe_book.claims.<topic>``), registered with :func:`evidence`, that
  takes the implementation or data it examines as arguments;
  ``tests/test_claims_mutation.py`` runs it on counterfactuals (a wrong
  implementation, swapped results, a broken mask) and shows that the verdict
  changes.
- **proved**: the verdict rests on a SymPy proof that the evidence function runs
  (an identity simplified to zero, tied to pe_book's code), for symbols rather
  than sample numbers. The proof takes what it proves as an argument, so it can
  fail: it is mutation-tested like a measurement.
- **by definition**: true by construction or by definition (a parameter count of
  a table whose size is its definition). The evidence function shows the
  numbers, but they could not come out otherwise.
- **quoted**: the verdict rests on a fact quoted from a paper (``papers.toml``),
  not re-measured here.
- **unverifiable**: the evidence cannot be obtained (the source refers to a list
  or a figure that our copy of it has lost); the verdict is *cannot be checked*.

Only *measured* and *proved* verdicts are findings (:attr:`Kind.is_finding`);
the other three kinds are counted apart.

A chapter decides a claim with :func:`check`: it runs the registered evidence,
prints what was found, and asserts that the verdict equals the registry's.
Text, registry and evidence therefore cannot drift apart; the review chapter
renders the whole registry and counts the verdicts by kind.

Verdicts (:class:`Verdict`), one vocabulary for every kind: *holds*; *holds with
a caveat* (true in the setting the source has in mind, false or incomplete
outside it, or true for a reason other than the one the source gives); *does
not hold* (also when the claim's own example fails); *cannot be checked* (only
for kind *unverifiable*).
"""

from __future__ import annotations

import enum
import importlib
import textwrap
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache

from pe_book._registry import add, lookup
from pe_book._toml import read_data_toml

__all__ = [
    "SOURCES",
    "Claim",
    "Finding",
    "Kind",
    "Verdict",
    "check",
    "counts",
    "evidence",
    "evidence_ids",
    "for_chapter",
    "get",
    "judge",
    "markdown_table",
    "registry",
    "run",
]

#: The source articles (kept outside the book, cited by file name).
SOURCES = {
    "000_6a7a68e65e9d9c75.txt": "blog post 【初理解】Transformer中的Positional Encoding",
    "001_2bb80ace7c402463.txt": "Yunzenn, 第06章：Positional Encoding (a study-guide chapter)",
    "003_12a40a9c21488c38.txt": "Q&A thread 正弦嵌入 - 您所需要的就是注意力 (translated)",
    "004_87f13edf937f0989.txt": "survey article on position embeddings (untitled copy)",
}

#: The modules holding the evidence functions, one per topic (imported on first use).
EVIDENCE_MODULES = (
    "symmetry",
    "taylor",
    "sinusoidal",
    "rotation",
    "decay",
    "relative",
    "rope",
    "context",
    "alibi",
    "study",
    "cost",
    "models",
)


class Verdict(enum.StrEnum):
    """The one vocabulary of verdicts every chapter uses (chapter 0 defines it)."""

    HOLDS = "holds"
    CAVEAT = "holds with a caveat"
    FAILS = "does not hold"
    UNCHECKABLE = "cannot be checked"


class Kind(enum.StrEnum):
    """The kind of evidence behind a verdict, counted apart (chapter 0 defines them)."""

    MEASURED = "measured"
    PROVED = "proved"
    DEFINITION = "by definition"
    QUOTED = "quoted"
    UNVERIFIABLE = "unverifiable"

    @property
    def is_finding(self) -> bool:
        """Whether a verdict of this kind is a finding of the book (its evidence could fail)."""
        return self in (Kind.MEASURED, Kind.PROVED)

    @property
    def meaning(self) -> str:
        """What a verdict of this kind rests on, in a few words (printed by :func:`check`)."""
        return _KIND_MEANINGS[self]


_KIND_MEANINGS = {
    Kind.MEASURED: "a computation that could have come out the other way",
    Kind.PROVED: "a SymPy proof run here, which fails on a wrong input",
    Kind.DEFINITION: "true by construction, not counted as a finding",
    Kind.QUOTED: "a paper's published numbers, not re-measured; not counted as a finding",
    Kind.UNVERIFIABLE: "the evidence cannot be obtained; not counted as a finding",
}


@dataclass(frozen=True)
class Claim:
    """One claim of the registry: where it comes from, what it says, how it is decided."""

    id: str
    source: str
    claim: str
    chapter: str
    section: str
    kind: Kind
    verdict: Verdict
    reason: str


@dataclass(frozen=True)
class Finding:
    """What one run of a claim's evidence found.

    ``holds``: does the claim hold in the setting the source has in mind? None
    only when the evidence cannot be obtained, and then ``missing`` says what is
    missing (the verdict is *cannot be checked*). ``caveat``: a setting the
    evidence found where it fails, or a condition it needs, in a few words; None
    if there is none. ``shown``: the lines :func:`check` prints, with what was
    measured and the margin (deterministic: no timings, no rounding noise).
    """

    holds: bool | None
    caveat: str | None = None
    shown: tuple[str, ...] = ()
    missing: str | None = None

    def __post_init__(self) -> None:
        if self.holds is None:
            if not isinstance(self.missing, str) or not self.missing:
                raise TypeError(
                    "holds must be a bool computed from the evidence"
                    " (None only with `missing` saying what evidence cannot be obtained)"
                )
            if self.caveat is not None:
                raise TypeError("a claim that cannot be checked has no caveat")
            return
        if not isinstance(self.holds, bool):
            raise TypeError(f"holds must be a bool computed from the evidence, got {self.holds!r}")
        if self.missing is not None:
            raise TypeError("`missing` is only for evidence that cannot be obtained (holds=None)")
        if self.caveat is not None and not isinstance(self.caveat, str):
            raise TypeError(f"caveat must be a str or None, got {self.caveat!r}")

    @property
    def verdict(self) -> Verdict:
        if self.holds is None:
            return Verdict.UNCHECKABLE
        return judge(holds=self.holds, caveat=self.caveat)


@cache
def registry() -> dict[str, Claim]:
    """All claims, by id, loaded once from the package data and validated."""
    claims: dict[str, Claim] = {}
    for entry in read_data_toml("claims.toml")["claim"]:
        try:
            kind = Kind(entry.get("kind", "measured"))
            verdict = Verdict(entry["verdict"])
        except ValueError as error:
            raise ValueError(f"claims.toml: claim {entry.get('id')!r}: {error}") from None
        claim = Claim(**{**entry, "kind": kind, "verdict": verdict})
        if claim.id in claims:
            raise ValueError(f"claims.toml: duplicate claim id {claim.id!r}")
        if claim.source not in SOURCES and not claim.source.startswith("paper:"):
            raise ValueError(
                f"claims.toml: claim {claim.id!r} has source {claim.source!r}; "
                f"accepted: {sorted(SOURCES)} or 'paper:<reference>'"
            )
        if kind is Kind.DEFINITION and verdict is Verdict.FAILS:
            raise ValueError(f"claims.toml: claim {claim.id!r} cannot fail by definition")
        if (kind is Kind.UNVERIFIABLE) != (verdict is Verdict.UNCHECKABLE):
            raise ValueError(
                f"claims.toml: claim {claim.id!r}: the verdict '{Verdict.UNCHECKABLE}' goes"
                f" with the kind '{Kind.UNVERIFIABLE}' and only with it"
                f" (got kind '{kind}', verdict '{verdict}')"
            )
        claims[claim.id] = claim
    return claims


def get(claim_id: str) -> Claim:
    """The claim with this id; a KeyError lists the known ids otherwise."""
    return lookup(registry(), claim_id, "claim id")


def for_chapter(chapter: str) -> list[Claim]:
    """The claims a chapter checks (chapter as a two-digit string, e.g. '01')."""
    return [c for c in registry().values() if c.chapter == chapter]


def judge(*, holds: bool, caveat: str | None = None) -> Verdict:
    """Turn evidence into a verdict.

    ``holds``: does the claim hold in the setting the source has in mind?
    ``caveat``: if the evidence also found a setting where it fails (or an
    important condition it needs), a short description of it; else None.
    """
    if not isinstance(holds, bool):
        raise TypeError(f"holds must be a bool computed from the evidence, got {holds!r}")
    if not holds:
        return Verdict.FAILS
    return Verdict.CAVEAT if caveat else Verdict.HOLDS


# ---- evidence functions ------------------------------------------------------------

_EVIDENCE: dict[str, Callable[..., Finding]] = {}


def evidence(claim_id: str) -> Callable[[Callable[..., Finding]], Callable[..., Finding]]:
    """Register the decorated function as the evidence of ``claim_id``.

    The function takes what it examines as keyword arguments with the book's
    defaults (pe_book's implementation, the committed results), so that a test
    can hand it a counterfactual; it returns a :class:`Finding`.
    """
    get(claim_id)  # an unknown id is an error at import time

    def register(function: Callable[..., Finding]) -> Callable[..., Finding]:
        return add(_EVIDENCE, claim_id, function, "evidence for claim")

    return register


@cache
def _load_evidence() -> None:
    for module in EVIDENCE_MODULES:
        importlib.import_module(f"pe_book.claims.{module}")


def evidence_ids() -> set[str]:
    """The ids of all claims that have a registered evidence function."""
    _load_evidence()
    return set(_EVIDENCE)


def run(claim_id: str, **inputs: object) -> Finding:
    """Run the evidence of ``claim_id``; ``inputs`` replace its defaults (counterfactuals)."""
    get(claim_id)
    _load_evidence()
    if claim_id not in _EVIDENCE:
        raise KeyError(f"claim {claim_id!r} has no evidence function in pe_book.claims")
    finding = _EVIDENCE[claim_id](**inputs)
    if not isinstance(finding, Finding):
        raise TypeError(f"the evidence of {claim_id!r} returned {type(finding).__name__}")
    return finding


def _report(claim: Claim, finding: Finding) -> None:
    print(
        textwrap.fill(
            f"[{claim.id}] {claim.verdict}: evidence and registry agree",
            78,
            subsequent_indent="    ",
        )
    )
    if claim.kind is not Kind.MEASURED:  # measured is the default; the others say so
        print(
            textwrap.fill(
                f"kind: {claim.kind} ({claim.kind.meaning})",
                78,
                initial_indent="    ",
                subsequent_indent="      ",
            )
        )
    for line in finding.shown:
        print(textwrap.fill(line, 78, initial_indent="    ", subsequent_indent="      "))
    if finding.missing:
        print(
            textwrap.fill(
                finding.missing,
                78,
                initial_indent="    not available: ",
                subsequent_indent="      ",
            )
        )
    if finding.caveat:
        print(
            textwrap.fill(
                finding.caveat, 78, initial_indent="    caveat found: ", subsequent_indent="      "
            )
        )


def check(claim_id: str, **inputs: object) -> Finding:
    """Run a claim's evidence, print what it found, and assert the registry's verdict.

    Raises AssertionError if they differ: either the evidence changed or the
    registry is wrong, and the book must not say something its cells do not show.
    """
    claim = get(claim_id)
    finding = run(claim_id, **inputs)
    if finding.verdict != claim.verdict:
        raise AssertionError(
            f"claim {claim_id}: the evidence says '{finding.verdict}',"
            f" the registry says '{claim.verdict}'"
        )
    _report(claim, finding)
    return finding


# ---- rendering -----------------------------------------------------------------------


def counts(selected: Iterable[Claim] | None = None) -> Counter[tuple[Kind, Verdict]]:
    """How many claims have each (kind, verdict), so that each kind is counted apart."""
    chosen = registry().values() if selected is None else selected
    return Counter((c.kind, c.verdict) for c in chosen)


def _source_label(source: str) -> str:
    """How a table cites a claim's source: "source 004" (the preface lists the sources by
    number and title; their file names stay out of the book), or the paper named."""
    if source in SOURCES:
        return f"source {source[:3]}"
    return source.removeprefix("paper:").strip()


def markdown_table(selected: list[Claim], *, where: bool = False) -> str:
    """The claims as a Markdown table (id, source, claim, verdict, evidence, reason).

    The verdict column holds one of the four verdicts only; the kind of evidence
    has its own column. ``where=True`` adds a column naming the chapter and section
    whose cells decide each claim (the review chapter collects claims from every
    chapter).
    """
    header = "| claim | source | what it says | verdict | evidence | why |"
    if where:
        header += " decided in |"
    rows = [header, "|" + " --- |" * header.count(" |")]
    for c in selected:
        source = _source_label(c.source)
        cells = [f"`{c.id}`", source, c.claim, f"**{c.verdict}**", str(c.kind), c.reason]
        if where:
            cells.append(f"chapter {int(c.chapter)}, {c.section}")
        rows.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(rows)
