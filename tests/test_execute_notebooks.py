"""tools/execute_notebooks.py: re-running a chapter changes only what changed, or nothing."""

from __future__ import annotations

import base64
import io
import shutil
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import execute_notebooks as tool  # noqa: E402


def code(source: str, outputs: list | None = None, cell_id: str | None = None) -> dict:
    cell = nbformat.v4.new_code_cell(source)
    cell.outputs = outputs or []
    cell.execution_count = 1
    if cell_id is not None:
        cell["id"] = cell_id
    return cell


def stream(text: str, name: str = "stdout") -> dict:
    return nbformat.v4.new_output("stream", name=name, text=text)


def test_ids_are_kept_and_only_missing_or_duplicate_ones_are_new():
    nb = nbformat.v4.new_notebook()
    nb.cells = [code("a", cell_id="c001"), code("b", cell_id="c001"), code("c", cell_id="bad id!")]
    assert tool.assign_ids(nb) == 2
    ids = [c.id for c in nb.cells]
    assert ids[0] == "c001" and len(set(ids)) == 3
    assert all(tool.VALID_ID.match(i) for i in ids)
    assert tool.assign_ids(nb) == 0 and [c.id for c in nb.cells] == ids  # assigned once


def test_consecutive_streams_of_one_name_are_merged():
    merged = tool.merge_streams(
        [stream("a\n"), stream("b\n"), stream("e\n", "stderr"), stream("c\n")]
    )
    assert [("".join(o["text"]), o["name"]) for o in merged] == [
        ("a\nb\n", "stdout"),
        ("e\n", "stderr"),
        ("c\n", "stdout"),
    ]


def test_widget_views_are_dropped_and_their_text_kept():
    view = nbformat.v4.new_output(
        "display_data",
        data={tool.WIDGET_VIEW: {"model_id": "f00"}, "text/plain": "interactive(...)"},
    )
    only_view = nbformat.v4.new_output("display_data", data={tool.WIDGET_VIEW: {"model_id": "b"}})
    kept = tool.drop_widgets([view, only_view])
    assert len(kept) == 1 and set(kept[0]["data"]) == {"text/plain"}


def notebook_with(cell: dict) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [cell]
    return nb


def test_an_output_equal_after_sanitizing_keeps_its_stored_bytes():
    stored = code("print(t)", [stream("step took 12.5 ms\n")], "c000")
    nb = notebook_with(code("print(t)", [stream("step took 9 ms\n")], "c000"))
    counts = tool.tidy(nb, tool.stored_outputs(notebook_with(stored)), refresh=False)
    assert counts["kept"] == 1 and nb.cells[0].outputs[0]["text"] == "step took 12.5 ms\n"
    nb = notebook_with(code("print(t)", [stream("step took 9 ms, 3 steps\n")], "c000"))
    counts = tool.tidy(nb, tool.stored_outputs(notebook_with(stored)), refresh=False)
    assert counts["changed"] == 1 and "3 steps" in nb.cells[0].outputs[0]["text"]


def test_an_ignored_cell_keeps_its_output_until_its_source_changes():
    source = "# NBVAL_IGNORE_OUTPUT\nprint(timing())"
    first = notebook_with(code(source, [stream("8.73 ms\n")], "c000"))
    tool.tidy(first, {}, refresh=False)  # records the source hash
    rerun = notebook_with(code(source, [stream("9.10 ms\n")], "c000"))
    tool.tidy(rerun, tool.stored_outputs(first), refresh=False)
    assert rerun.cells[0].outputs[0]["text"] == "8.73 ms\n"
    refreshed = notebook_with(code(source, [stream("9.10 ms\n")], "c000"))
    tool.tidy(refreshed, tool.stored_outputs(first), refresh=True)
    assert refreshed.cells[0].outputs[0]["text"] == "9.10 ms\n"
    edited = notebook_with(code(source + "  # more", [stream("9.2 ms\n")], "c000"))
    tool.tidy(edited, tool.stored_outputs(first), refresh=False)
    assert edited.cells[0].outputs[0]["text"] == "9.2 ms\n"


def test_figures_become_narrow_palette_pngs_once():
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (960, 300), "white").save(buffer, format="PNG")
    once = tool.optimise_png(base64.b64encode(buffer.getvalue()).decode())
    image = Image.open(io.BytesIO(base64.b64decode(once)))
    assert image.mode == "P" and image.width == tool.MAX_FIGURE_WIDTH
    assert tool.optimise_png(once) == once  # idempotent: re-running changes no bytes


def test_re_executing_an_unchanged_chapter_leaves_its_file_byte_identical(tmp_path):
    chapter = ROOT / "notebooks" / "04_trig_identities.ipynb"
    copy = tmp_path / chapter.name
    shutil.copyfile(chapter, copy)
    tool.execute(copy)
    assert copy.read_bytes() == chapter.read_bytes(), (
        f"re-executing {chapter.name} changed it; run `make execute NB=notebooks/{chapter.name}`"
        " and commit, or find the output that is not deterministic"
    )
