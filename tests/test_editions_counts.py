"""The student edition's notebooks count their executions 1, 2, 3, ... with no gap where a
solution cell was removed (the hygiene report of issue 27's review flagged 14 chapters)."""

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import editions  # noqa: E402  (tools/editions.py)


def counts(nb):
    return [c.get("execution_count") for c in nb["cells"] if c["cell_type"] == "code"]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("editions")
    assert editions.build(out, html=False) == 0
    return out


@pytest.mark.parametrize("edition", editions.EDITIONS)
def test_every_page_counts_its_executions_without_a_gap(built, edition):
    gaps = {}
    for page in sorted((built / edition / "notebooks").glob("*.ipynb")):
        nb = json.loads(page.read_text(encoding="utf-8"))
        run = [n for n in counts(nb) if n is not None]
        results = [
            (c["execution_count"], out["execution_count"])
            for c in nb["cells"]
            if c["cell_type"] == "code"
            for out in c.get("outputs", [])
            if out.get("output_type") == "execute_result"
        ]
        if run != list(range(1, len(run) + 1)) or any(a != b for a, b in results):
            gaps[page.name] = run
    assert not gaps, f"{edition} edition: counts with gaps or mismatched results: {gaps}"


def test_the_student_edition_drops_cells_so_renumbering_was_needed(built):
    """Without renumber() the student chapters' counts would skip: the test above would fail."""
    skipped = []
    for page in sorted(editions.NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")):
        student = json.loads((built / "student" / "notebooks" / page.name).read_text())
        if len(counts(student)) < len(counts(json.loads(page.read_text()))):
            skipped.append(page.stem)
    assert len(skipped) >= 10, skipped


def test_renumber_numbers_run_cells_and_their_results_and_leaves_unrun_cells():
    nb = {
        "cells": [
            {"cell_type": "code", "execution_count": 3, "outputs": []},
            {"cell_type": "markdown", "source": ""},
            {"cell_type": "code", "execution_count": None, "outputs": []},
            {
                "cell_type": "code",
                "execution_count": 7,
                "outputs": [{"output_type": "execute_result", "execution_count": 7}],
            },
        ]
    }
    editions.renumber(nb)
    assert counts(nb) == [1, None, 2]
    assert nb["cells"][3]["outputs"][0]["execution_count"] == 2
