"""Slide metadata for the chapters, so each presents as a deck with RISE in JupyterLab.

    python tools/slides.py annotate [NOTEBOOK ...]   write the metadata (default: every chapter)
    python tools/slides.py check [NOTEBOOK ...]      exit 1 if a chapter's metadata differs

This presents a chapter's own pages, section by section, live in JupyterLab (Alt+R).
The lecture decks, slides designed to be projected, are separate sources built by
tools/decks.py (`make slides`).

The rule (one place, so a lecturer can predict the deck):
- the title and every "## " section start a new slide;
- an exercise ("**Exercise ...") starts a sub-slide, and so does any other text
  cell that follows a code cell (text, then its code and output, form one step);
- collapsed solutions are skipped (reveal them in the notebook, not on a slide);
- everything else continues the current slide.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"


def slide_type(cell: dict, previous: dict | None) -> str:
    """The RISE slide type of ``cell`` given the cell before it."""
    source = "".join(cell["source"])
    if cell["cell_type"] == "markdown":
        if source.startswith(("# ", "## ")):
            return "slide"
        if source.startswith("**Exercise") or (previous and previous["cell_type"] == "code"):
            return "subslide"
        return "-"
    if cell.get("metadata", {}).get("jupyter", {}).get("source_hidden"):
        return "skip"
    return "-"


def expected(notebook: dict) -> list[str]:
    cells = notebook["cells"]
    return [slide_type(c, cells[i - 1] if i else None) for i, c in enumerate(cells)]


def chapters(args: list[str]) -> list[Path]:
    return [Path(a) for a in args] or sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("annotate", "check"):
        print(__doc__)
        return 2
    command, paths = argv[0], chapters(argv[1:])
    stale = []
    for path in paths:
        notebook = nbformat.read(path, as_version=4)
        types = expected(notebook)
        found = [
            c.get("metadata", {}).get("slideshow", {}).get("slide_type") for c in notebook.cells
        ]
        if found == types:
            continue
        if command == "check":
            stale.append(path.name)
            continue
        for cell, kind in zip(notebook.cells, types, strict=True):
            cell.metadata["slideshow"] = {"slide_type": kind}
        nbformat.write(notebook, path)
        print(f"{path.name}: slide metadata written")
    if stale:
        print(
            "slide metadata out of date (rule: tools/slides.py, slide_type); fix with"
            " `make annotate` (= .venv/bin/python tools/slides.py annotate):",
            *stale,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
