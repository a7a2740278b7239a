"""The book's bilingual glossary (chapter 14), kept as data in ``pe_book/data/glossary.toml``."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from pe_book._toml import read_data_toml

__all__ = ["Term", "markdown_table", "terms"]


@dataclass(frozen=True)
class Term:
    """One glossary entry: the English term, the Chinese one, the sources that use it."""

    english: str
    chinese: str
    sources: tuple[str, ...]  # source file numbers where the Chinese term occurs
    chapter: str  # where the book explains the idea


@cache
def terms() -> tuple[Term, ...]:
    """Every glossary entry, sorted by the English term (case-insensitive)."""
    entries = [
        Term(t["english"], t["chinese"], tuple(t["sources"]), t["chapter"])
        for t in read_data_toml("glossary.toml")["term"]
    ]
    return tuple(sorted(entries, key=lambda t: t.english.lower()))


def markdown_table() -> str:
    """The glossary as a Markdown table: English, Chinese, sources, chapter."""
    rows = ["| English | 中文 (in the sources) | sources | chapter |", "| --- | --- | --- | --- |"]
    for t in terms():
        rows.append(f"| {t.english} | {t.chinese} | {', '.join(t.sources)} | {int(t.chapter)} |")
    return "\n".join(rows)
