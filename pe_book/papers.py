"""Numbers quoted from papers, kept as data (``pe_book/data/papers.toml``).

Chapters 3, 5, 9, 11 and 12 print the tables they quote from here.

A chapter that quotes a paper's table prints it from here, so every quoted
number appears in an executed cell with the paper and table it comes from.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from pe_book._registry import lookup
from pe_book._toml import read_data_toml

__all__ = ["PaperTable", "get"]


@dataclass(frozen=True)
class PaperTable:
    """A table or figure quoted from a paper: which paper, which table, what it reports."""

    id: str
    paper: str
    table: str
    columns: list[str]
    rows: list[list[object]]
    note: str = ""
    variations: tuple[str, ...] = ()
    varied: tuple[str, ...] = ()  # the hyperparameters the table's rows change

    def row(self, label: str) -> dict[str, object]:
        """The row whose first cell is ``label``, as {column: value}."""
        for row in self.rows:
            if row[0] == label:
                return dict(zip(self.columns, row, strict=True))
        raise KeyError(f"{self.id} has no row {label!r}; rows: {[r[0] for r in self.rows]}")

    def markdown(self) -> str:
        """The quoted rows as a Markdown table, captioned with paper and table."""
        lines = [f"*{self.paper}, {self.table}*", "", "| " + " | ".join(self.columns) + " |"]
        lines.append("|" + " --- |" * len(self.columns))
        lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in self.rows]
        if self.note:
            lines += ["", self.note]
        return "\n".join(lines)


@cache
def _tables() -> dict[str, PaperTable]:
    tables = {}
    for entry in read_data_toml("papers.toml")["table"]:
        entry["variations"] = tuple(entry.get("variations", ()))
        entry["varied"] = tuple(entry.get("varied", ()))
        tables[entry["id"]] = PaperTable(**entry)
    return tables


def get(table_id: str) -> PaperTable:
    """The quoted table with this id; a KeyError lists the known ids otherwise."""
    return lookup(_tables(), table_id, "table")
