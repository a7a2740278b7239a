"""The registry of checkable claims the sources make, and their verdicts.

One registry, stored as data in ``pe_book/data/claims.toml``: each claim has an
id, the source file it comes from, the claim in the book's own words, the
chapter that checks it, a verdict and a one-line reason. A chapter checks a
claim by running the evidence in a cell and then calling :func:`confirm`, which
turns the evidence into a verdict and asserts that the registry says the same.
Text, registry and evidence therefore cannot drift apart; chapter 11 renders
the whole registry.

Verdicts: *holds*; *holds with a caveat* (true in the setting the source has in
mind, false or incomplete outside it); *does not hold*.
"""

from __future__ import annotations

import enum
import textwrap
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources

__all__ = [
    "SOURCES",
    "Claim",
    "Verdict",
    "confirm",
    "for_chapter",
    "get",
    "judge",
    "markdown_table",
    "registry",
]

#: The source articles (kept outside the book, cited by file name).
SOURCES = {
    "000_6a7a68e65e9d9c75.txt": "blog post 【初理解】Transformer中的Positional Encoding",
    "001_2bb80ace7c402463.txt": "Yunzenn, 第06章：Positional Encoding (a study-guide chapter)",
    "003_12a40a9c21488c38.txt": "Q&A thread 正弦嵌入 - 您所需要的就是注意力 (translated)",
    "004_87f13edf937f0989.txt": "survey article on position embeddings (untitled copy)",
}


class Verdict(enum.StrEnum):
    HOLDS = "holds"
    CAVEAT = "holds with a caveat"
    FAILS = "does not hold"


@dataclass(frozen=True)
class Claim:
    id: str
    source: str
    claim: str
    chapter: str
    section: str
    verdict: Verdict
    reason: str


@cache
def registry() -> dict[str, Claim]:
    """All claims, by id, loaded once from the package data and validated."""
    text = resources.files("pe_book").joinpath("data/claims.toml").read_text(encoding="utf-8")
    claims: dict[str, Claim] = {}
    for entry in tomllib.loads(text)["claim"]:
        claim = Claim(**{**entry, "verdict": Verdict(entry["verdict"])})
        if claim.id in claims:
            raise ValueError(f"claims.toml: duplicate claim id {claim.id!r}")
        if claim.source not in SOURCES and not claim.source.startswith("paper:"):
            raise ValueError(
                f"claims.toml: claim {claim.id!r} has source {claim.source!r}; "
                f"accepted: {sorted(SOURCES)} or 'paper:<reference>'"
            )
        claims[claim.id] = claim
    return claims


def get(claim_id: str) -> Claim:
    """The claim with this id; a KeyError lists the known ids otherwise."""
    try:
        return registry()[claim_id]
    except KeyError:
        raise KeyError(f"unknown claim id {claim_id!r}; known: {sorted(registry())}") from None


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


def confirm(claim_id: str, *, holds: bool, caveat: str | None = None) -> None:
    """Assert that the evidence's verdict equals the registry's; print one line.

    Raises AssertionError if they differ: either the evidence changed or the
    registry is wrong, and the book must not say something its cells do not show.
    """
    claim = get(claim_id)
    observed = judge(holds=holds, caveat=caveat)
    if observed != claim.verdict:
        raise AssertionError(
            f"claim {claim_id}: the evidence says '{observed}', the registry says '{claim.verdict}'"
        )
    print(f"[{claim_id}] {claim.verdict}: evidence and registry agree")
    if caveat:
        print(
            textwrap.fill(
                caveat, 78, initial_indent="    caveat found: ", subsequent_indent="      "
            )
        )


def markdown_table(selected: list[Claim], *, where: bool = False) -> str:
    """The claims as a Markdown table (id, source, claim, verdict, reason) for a chapter.

    ``where=True`` adds a column naming the chapter and section whose cells decide
    each claim (chapter 11 collects claims from every chapter).
    """
    header = "| claim | source | what it says | verdict | why |"
    if where:
        header += " decided in |"
    rows = [header, "|" + " --- |" * header.count(" |")]
    for c in selected:
        cells = [f"`{c.id}`", f"`{c.source}`", c.claim, f"**{c.verdict}**", c.reason]
        if where:
            cells.append(f"chapter {int(c.chapter)}, {c.section}")
        rows.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(rows)
