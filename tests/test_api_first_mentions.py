"""Each chapter links the first mention of a pe_book name to its entry in the API reference.

tools/api_links.py finds, per notebook, the first code span of the Markdown prose that
names something appendix A (notebooks/api.md) or B (api_positions.md) documents; it must
be a link to that entry, and every link into the reference must name an entry that
exists. ``python tools/api_links.py report`` lists them; ``link`` adds what is missing.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import api_links  # tools/api_links.py
import book_api  # tools/book_api.py

INTO_REFERENCE = re.compile(r"\]\(((?:api|api_positions)\.md#[^)\s]*)\)")


def _markdown(path: Path) -> str:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


@pytest.mark.parametrize("path", api_links.NOTEBOOKS, ids=lambda p: p.stem)
def test_the_first_mention_of_each_pe_book_name_links_to_the_reference(path):
    missing = [m for m in api_links.first_mentions(path) if not m.linked]
    assert not missing, (
        f"{path.name}: first mentions not linked to the API reference "
        "(run: flock /tmp/pe_book_nb.lock .venv/bin/python tools/api_links.py link "
        f"notebooks/{path.name}): "
        + "; ".join(f"cell {m.cell} `{m.span}` -> {api_links.target(m.name)}" for m in missing)
    )


@pytest.mark.parametrize("path", api_links.NOTEBOOKS, ids=lambda p: p.stem)
def test_every_link_into_the_reference_reaches_an_entry(path):
    links = INTO_REFERENCE.findall(_markdown(path))
    broken = [link for link in links if not api_links.exists(link)]
    assert not broken, f"{path.name}: links to no entry of the API reference: {broken}"


def test_the_chapters_link_many_names():
    chapters = [p for p in api_links.NOTEBOOKS if re.match(r"\d\d_", p.name)]
    linked = {p.stem: sum(m.linked for m in api_links.first_mentions(p)) for p in chapters}
    assert sum(linked.values()) >= 100, linked
    assert all(linked[stem] >= 3 for stem in linked), linked


# --- the tool itself, on made-up prose -------------------------------------------------


def _resolve(span: str, names=None, modules=None) -> str | None:
    return api_links.resolve(span, names or {}, modules or {})


def test_spans_resolve_to_what_the_reference_documents():
    assert _resolve("pe_book.rope") == "pe_book.rope"
    assert _resolve("pe_book.rope.apply_rope") == "pe_book.rope.apply_rope"
    assert _resolve("rope.apply_rope") == "pe_book.rope.apply_rope"
    assert _resolve("symbolic.prove(lhs, rhs)") == "pe_book.symbolic.prove"
    assert _resolve("apply_rope") == "pe_book.rope.apply_rope"  # public in one module only
    assert _resolve("alibi_attention(..., causal=False)") == "pe_book.alibi.alibi_attention"
    assert _resolve("attn.attention", modules={"attn": "pe_book.attention"}) == (
        "pe_book.attention.attention"
    )
    assert _resolve("score_bias") == "pe_book.positions.PositionMethod.score_bias"
    assert _resolve("randomized_rope") == "registered:randomized_rope"
    assert api_links.target("registered:randomized_rope") == (
        "api_positions.md#position-randomized-rope"
    )
    assert api_links.target("pe_book.rope") == "api.md#module-pe_book.rope"
    assert _resolve("rope") == "registered:rope"  # a bare module name is the method's
    for not_ours in (
        "torch.arange",
        "my_rope(x, positions)",
        "x",
        "model.py",
        "pe_book.no_such_module",
        "rope.no_such_function",
        "q @ k.T",
    ):
        assert _resolve(not_ours) is None, not_ours


def test_a_bare_name_the_chapter_imports_wins_over_the_package_wide_guess():
    names = {"rotate": "pe_book.rope.rotate"}
    assert _resolve("rotate", names=names) == "pe_book.rope.rotate"
    assert _resolve("rotate") == "pe_book.positions.PositionMethod.rotate"  # the hook
    assert _resolve("rotate", modules={"rope": "pe_book.rope"}) == "pe_book.rope.rotate"


def test_imports_are_read_from_the_code_cells():
    cells = [
        {
            "cell_type": "code",
            "source": [
                "%matplotlib inline\n",
                "from pe_book import rope\n",
                "from pe_book import attention as attn\n",
                "from pe_book.sinusoidal import (frequencies,\n",
                "    sinusoidal_table)\n",
            ],
        },
        {"cell_type": "markdown", "source": ["from pe_book import decay"]},
    ]
    names, modules = api_links.imports(cells)
    assert modules == {"rope": "pe_book.rope", "attn": "pe_book.attention"}
    assert names == {
        "frequencies": "pe_book.sinusoidal.frequencies",
        "sinusoidal_table": "pe_book.sinusoidal.sinusoidal_table",
    }


def _notebook(tmp_path: Path, *markdown: str) -> Path:
    cells = [
        {
            "cell_type": "code",
            "id": "c0",
            "metadata": {},
            "execution_count": None,
            "outputs": [],
            "source": ["from pe_book import rope\n"],
        }
    ]
    cells += [
        {"cell_type": "markdown", "id": f"m{i}", "metadata": {}, "source": text}
        for i, text in enumerate(markdown)
    ]
    path = tmp_path / "07_demo.ipynb"
    path.write_text(
        json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1)
        + "\n"
    )
    return path


def test_first_mentions_skip_headings_code_math_comments_and_other_links(tmp_path):
    path = _notebook(
        tmp_path,
        "## About `apply_rope`\n\n```python\nrope.apply_rope(q)\n```\n"
        "$`apply_rope`$ <!-- `apply_rope` -->\n"
        "[`apply_rope`](https://example.org) is quoted, then `rope.apply_rope(q, cos, sin)`.",
        "Again `apply_rope`, and `pe_book.rope`.",
    )
    first = api_links.first_mentions(path)
    assert [(m.cell, m.span, m.linked) for m in first] == [
        (1, "rope.apply_rope(q, cos, sin)", False),
        (2, "pe_book.rope", False),
    ]


def test_link_links_each_first_mention_once_and_nothing_else(tmp_path):
    path = _notebook(
        tmp_path,
        "Rotate with `apply_rope` (`rope.apply_rope` again), see `my_rope`.",
        "Its module is [`pe_book.rope`](api.md#module-pe_book.rope); `apply_rope` once more.",
    )
    before = json.loads(path.read_text())
    done = api_links.link_notebook(path)
    assert [m.span for m in done] == ["apply_rope"]
    after = json.loads(path.read_text())
    assert after["cells"][1]["source"] == [
        "Rotate with [`apply_rope`](api.md#pe_book.rope.apply_rope) (`rope.apply_rope` "
        "again), see `my_rope`."
    ]
    assert after["cells"][0] == before["cells"][0] and after["cells"][2] == before["cells"][2]
    assert all(m.linked for m in api_links.first_mentions(path))
    text = path.read_text()
    assert api_links.link_notebook(path) == [] and path.read_text() == text  # idempotent


def test_link_targets_are_checked_against_the_reference():
    assert api_links.exists("api.md#pe_book.rope.apply_rope")
    assert api_links.exists("api.md#module-pe_book.claims.rope")
    assert api_links.exists("api.md#pe_book.positions.PositionMethod.embed")
    assert api_links.exists("api_positions.md#position-p-rope")
    assert not api_links.exists("api.md#pe_book.rope.apply_rop")
    assert not api_links.exists("api.md#module-pe_book.nothing")
    assert not api_links.exists("api_positions.md#position-p_rope")  # docutils ids have no _
    assert not api_links.exists("03_sinusoidal.md#pe_book.rope")


def test_appendix_b_labels_every_registered_method_and_the_build_lets_links_reach_them():
    from docutils import nodes

    rst = book_api.positions_rst()
    for method in api_links.registered():
        assert f".. _position-{method}:" in rst
    # MyST resolves api.md#anchor only through the slugs register_module_anchors adds
    document = nodes.section(ids=["module-pe_book.rope"])
    document += nodes.paragraph(ids=["pe_book.rope.apply_rope"])
    document += nodes.bullet_list(ids=["position-p-rope"])
    document += nodes.paragraph(ids=["unrelated"])

    app = SimpleNamespace(env=SimpleNamespace(docname="api", metadata={"api": {}}))
    book_api.register_module_anchors(app, document)
    assert set(app.env.metadata["api"]["myst_slugs"]) == {
        "module-pe_book.rope",
        "pe_book.rope.apply_rope",
        "position-p-rope",
    }
