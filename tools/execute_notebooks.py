"""Re-execute notebooks in place, top to bottom in a fresh kernel, and tidy their metadata.

Used by `make execute` when a chapter changes: the stored outputs are what
`pytest --nbval` later compares against. Prints each notebook's wall time.

    python tools/execute_notebooks.py [notebooks/01_symmetry.ipynb ...]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def tidy(nb: nbformat.NotebookNode) -> None:
    """Drop per-run metadata so that re-running a notebook gives a minimal diff."""
    nb.metadata["kernelspec"] = KERNELSPEC
    nb.metadata["language_info"] = {"name": "python"}
    for index, cell in enumerate(nb.cells):
        cell.metadata.pop("execution", None)
        cell["id"] = f"c{index:03d}"


def execute(path: Path, timeout: int = 600) -> float:
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    NotebookClient(
        nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}
    ).execute()
    elapsed = time.perf_counter() - start
    tidy(nb)
    nbformat.write(nb, path)
    return elapsed


def main(argv: list[str]) -> int:
    paths = [Path(a).resolve() for a in argv] or sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    for path in paths:
        print(f"{path.relative_to(ROOT)}: {execute(path):.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
