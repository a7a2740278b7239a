"""Hooks for the notebook regression tests (make nbval): placeable failures.

nbval names a cell "Cell 15", counting code cells from 0; Jupyter shows it
as [16] and the file stores it under its id. Here each failure's header and
summary line give all three, and the section the cell belongs to:

    07_rope.ipynb, cell [19], id c035, section "7.6 Speed" (nbval's Cell 18)

Kernels talk to pytest over Unix sockets in a private folder, not TCP ports:
a kernel started while others start (the other xdist worker, a book build)
can otherwise be handed a port another kernel took, and wait forever.

The diff under a failure is pytest's (``assert reference == test``): its
``+`` lines are the stored output, its ``-`` lines what the cell printed
now, the reverse of git's signs; each failure says so. Colours (ANSI
escapes) are off when the output is not a terminal, or under CI=true.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile

import pytest

LEGEND = (
    "In the diff below, '+' lines are the STORED output (the .ipynb file)"
    " and '-' lines what the cell printed NOW (the reverse of git's signs)."
)


_SOCKETS: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("CI") == "true" or not sys.stdout.isatty():
        config.option.color = "no"  # nbval colours unless this is "no"
    import nbval.kernel
    import nbval.plugin
    from jupyter_client.manager import KernelManager

    folder = tempfile.mkdtemp(prefix="pe-book-nbval-")
    _SOCKETS.append(folder)
    atexit.register(shutil.rmtree, folder, ignore_errors=True)  # and workers

    class IpcKernelManager(KernelManager):
        def __init__(self, **kwargs: object) -> None:
            super().__init__(transport="ipc", ip=f"{folder}/kernel", **kwargs)

    nbval.kernel.KernelManager = IpcKernelManager
    nbval.plugin.IPyNbCell.reportinfo = _reportinfo  # headers name the cell


def _reportinfo(item: pytest.Item) -> tuple:
    where = getattr(item, "pe_book_where", None) or f"Cell {item.cell_num}"
    return item.path, 0, where


def pytest_unconfigure(config: pytest.Config) -> None:
    for folder in _SOCKETS:
        shutil.rmtree(folder, ignore_errors=True)


def _section_of(cells: list, target: object) -> str:
    """The last '## ' heading (or the title) before ``target``."""
    section = ""
    for cell in cells:
        if cell is target:
            break
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith(("# ", "## ")):
                    section = line.lstrip("#").strip()
    return section


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        cell = getattr(item, "cell", None)
        cell_num = getattr(item, "cell_num", None)
        if cell is None or cell_num is None:
            continue
        count = cell.get("execution_count")
        cell_id = cell.get("id", "?")
        section = _section_of(item.parent.nb.cells, cell)
        item.pe_book_where = (
            f"{item.parent.path.name}, cell [{count}], id {cell_id},"
            f' section "{section}" (nbval\'s Cell {cell_num})'
        )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo
) -> object:
    outcome = yield
    report = outcome.get_result()
    where = getattr(item, "pe_book_where", None)
    if report.failed and where is not None:
        report.longrepr = f"{where}\n{LEGEND}\n\n{report.longrepr}"
        report.sections.append(("where", where))
