"""Re-execute notebooks in place, top to bottom in a fresh kernel, with a minimal diff.

Used by `make execute` when a chapter changes: the stored outputs are what
`pytest --nbval` later compares against. Re-running a chapter whose outputs did
not change leaves its file byte-identical; when some change, only those do:

- cell ids are assigned once (a cell without a valid, unique id gets a random
  one) and never renumbered, so two branches that each add cells merge without
  clashing ids;
- consecutive stream outputs of the same name are merged (the kernel flushes
  prints in chunks that differ from run to run);
- no widget state is stored: a slider's live output is dropped, the static
  figure drawn by the same function (the cell after it) stands in for it;
- a cell whose new output equals its stored one once nbval's sanitizer has
  masked what honestly varies (``took 12 ms``, addresses, paths) keeps the stored
  bytes;
- the cells marked ``# NBVAL_IGNORE_OUTPUT`` (timings, sliders) keep their
  stored outputs while their sources are unchanged (a hash of each source is
  kept in the cell's metadata); when one changes, or with ``--refresh``, all of
  a notebook's are re-recorded together;
- figures are stored at most 720 pixels wide (the book's text column is 688) and
  as palette PNGs, about a third of the bytes of matplotlib's.

    python tools/execute_notebooks.py [--refresh] [notebooks/01_symmetry.ipynb ...]

Prints each notebook's wall time and what it kept.
"""

from __future__ import annotations

import argparse
import base64
import configparser
import copy
import hashlib
import io
import re
import sys
import tempfile
import time
import uuid
from pathlib import Path

import nbformat
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
IGNORE = "NBVAL_IGNORE_OUTPUT"
SOURCE_HASH = "pe_book_source_sha1"  # cell metadata of ignored cells: the source that made them
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
VALID_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MAX_FIGURE_WIDTH = 720


def sanitize(text: str) -> str:
    """Apply notebooks/nbval_sanitize.cfg, as nbval does before comparing."""
    config = configparser.ConfigParser()
    config.read(NOTEBOOKS / "nbval_sanitize.cfg", encoding="utf-8")
    for section in config.sections():
        text = re.sub(config[section]["regex"], config[section]["replace"], text)
    return text


def assign_ids(nb: nbformat.NotebookNode) -> int:
    """Give every cell a valid, unique id, keeping the ones it has; returns how many were new."""
    seen: set[str] = set()
    added = 0
    for cell in nb.cells:
        cell_id = cell.get("id")
        if not isinstance(cell_id, str) or not VALID_ID.match(cell_id) or cell_id in seen:
            cell_id = uuid.uuid4().hex[:8]
            while cell_id in seen:
                cell_id = uuid.uuid4().hex[:8]
            cell["id"] = cell_id
            added += 1
        seen.add(cell_id)
    return added


def merge_streams(outputs: list) -> list:
    """Consecutive stream outputs of one name (stdout, stderr) as one output."""
    merged: list = []
    for out in outputs:
        previous = merged[-1] if merged else None
        if (
            out.get("output_type") == "stream"
            and previous is not None
            and previous.get("output_type") == "stream"
            and previous.get("name") == out.get("name")
        ):
            previous["text"] = "".join(previous["text"]) + "".join(out["text"])
        else:
            merged.append(out)
    return merged


def drop_widgets(outputs: list) -> list:
    """Outputs without live widget views (their text/plain stays)."""
    kept = []
    for out in outputs:
        data = out.get("data")
        if data is not None and WIDGET_VIEW in data:
            data.pop(WIDGET_VIEW)
            if not data:
                continue
        kept.append(out)
    return kept


def optimise_png(encoded: str) -> str:
    """A PNG at most MAX_FIGURE_WIDTH wide, with a 256-colour palette (plots have few colours)."""
    from PIL import Image  # matplotlib's dependency

    image = Image.open(io.BytesIO(base64.b64decode(encoded)))
    if image.mode == "P" and image.width <= MAX_FIGURE_WIDTH:
        return encoded  # done already: the same bytes every time
    image = image.convert("RGB")
    if image.width > MAX_FIGURE_WIDTH:
        height = round(image.height * MAX_FIGURE_WIDTH / image.width)
        image = image.resize((MAX_FIGURE_WIDTH, height), Image.Resampling.LANCZOS)
    palette = image.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    buffer = io.BytesIO()
    palette.save(buffer, format="PNG", optimize=True)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def shrink_figures(outputs: list) -> None:
    for out in outputs:
        data = out.get("data", {})
        if "image/png" in data:
            data["image/png"] = optimise_png("".join(data["image/png"]))
            # the PNG was rescaled and re-encoded: the inline backend's size hints no longer hold
            out.get("metadata", {}).pop("image/png", None)


def _comparable(outputs: list) -> list:
    """Outputs as nbval compares them: text sanitized, execution counts dropped."""
    result = []
    for out in outputs:
        item = {k: v for k, v in out.items() if k not in ("execution_count", "metadata")}
        if "text" in item:
            item["text"] = sanitize("".join(item["text"]))
        if "data" in item:
            item["data"] = {
                kind: sanitize("".join(value)) if isinstance(value, str | list) else value
                for kind, value in item["data"].items()
            }
        result.append(item)
    return result


def _source_hash(cell: nbformat.NotebookNode) -> str:
    return hashlib.sha1(cell.source.encode("utf-8")).hexdigest()[:12]


def _ignored(cell: nbformat.NotebookNode) -> bool:
    return cell.cell_type == "code" and IGNORE in cell.source


def _keep(cell: nbformat.NotebookNode, outputs: list) -> None:
    """Put stored outputs back, with the execution count of this run."""
    cell.outputs = outputs
    for out in outputs:
        if out.get("output_type") == "execute_result":
            out["execution_count"] = cell.execution_count


def tidy(nb: nbformat.NotebookNode, stored: dict[str, dict], refresh: bool) -> dict[str, int]:
    """Normalise the executed notebook and keep stored outputs where nothing changed.

    Ignored (timing) cells keep their stored run as a group: if the source of any of
    them changed (or ``refresh``), all of them are re-recorded, since later ones
    usually print what earlier ones measured.
    """
    nb.metadata["kernelspec"] = KERNELSPEC
    nb.metadata["language_info"] = {"name": "python"}
    nb.metadata.pop("widgets", None)
    ignored = [cell for cell in nb.cells if _ignored(cell)]
    refresh = refresh or any(
        stored.get(cell.id, {}).get("hash") != _source_hash(cell) for cell in ignored
    )
    counts = {"kept": 0, "kept timing": 0, "changed": 0, "re-recorded timing": 0}
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type != "code":
            continue
        cell.outputs = merge_streams(drop_widgets(cell.outputs))
        shrink_figures(cell.outputs)
        old = stored.get(cell.id)
        if _ignored(cell):
            if refresh:
                counts["re-recorded timing"] += 1
            else:
                _keep(cell, old["outputs"])
                counts["kept timing"] += 1
            cell.metadata[SOURCE_HASH] = _source_hash(cell)
            continue
        cell.metadata.pop(SOURCE_HASH, None)
        if old is not None and _comparable(old["outputs"]) == _comparable(cell.outputs):
            _keep(cell, old["outputs"])
            counts["kept"] += 1
        else:
            counts["changed"] += 1
    return counts


def stored_outputs(nb: nbformat.NotebookNode) -> dict[str, dict]:
    """Each code cell's outputs as they are on disk, by cell id, with its source hash."""
    return {
        cell.id: {
            "outputs": copy.deepcopy(cell.outputs),
            "hash": cell.metadata.get(SOURCE_HASH),
        }
        for cell in nb.cells
        if cell.cell_type == "code"
    }


def execute(path: Path, *, refresh: bool = False, timeout: int = 600) -> tuple[float, dict]:
    nb = nbformat.read(path, as_version=4)
    new_ids = assign_ids(nb)
    stored = stored_outputs(nb)
    start = time.perf_counter()
    # Unix sockets, not TCP ports: a kernel started while others start (nbval's workers,
    # a book build) can otherwise be handed a port another kernel took, and wait forever.
    with tempfile.TemporaryDirectory(prefix="pe-book-kernel-") as sockets:
        kernel = KernelManager(kernel_name="python3", transport="ipc", ip=f"{sockets}/kernel")
        NotebookClient(
            nb, km=kernel, timeout=timeout, resources={"metadata": {"path": str(NOTEBOOKS)}}
        ).execute()
    elapsed = time.perf_counter() - start
    counts = tidy(nb, stored, refresh)
    counts["new ids"] = new_ids
    text = nbformat.writes(nb)
    text += "" if text.endswith("\n") else "\n"
    if path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")
    return elapsed, counts


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument(
        "--refresh", action="store_true", help="re-record NBVAL_IGNORE_OUTPUT cells (timings) too"
    )
    args = parser.parse_args(argv)
    paths = [p.resolve() for p in args.notebooks] or sorted(
        NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")
    ) + sorted(NOTEBOOKS.glob("appendix_*.ipynb")) + sorted(NOTEBOOKS.glob("instructor_*.ipynb"))
    for path in paths:
        elapsed, counts = execute(path, refresh=args.refresh)
        summary = ", ".join(f"{n} {what}" for what, n in counts.items() if n)
        summary = summary or "no code cells"
        print(f"{path.relative_to(ROOT)}: {elapsed:.1f} s ({summary})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
