"""Links from the chapters into the API reference (appendix A) name modules that exist."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
LINK = re.compile(r"\]\(api\.md#module-(pe_book[\w.]*)\)")


def _links() -> dict[str, list[str]]:
    found = {}
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        text = "".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
        found[path.stem] = LINK.findall(text)
    return found


def test_every_api_link_names_a_module_of_the_package():
    links = _links()
    assert sum(map(len, links.values())) >= 10
    for modules in links.values():
        for module in modules:
            importlib.import_module(module)  # ModuleNotFoundError names the broken link


def test_the_chapters_that_teach_modules_link_to_them_in_their_references():
    links = _links()
    for stem in ("10_beyond", "11_extrapolation", "13_models", "14_review"):
        assert links[stem], f"{stem}: no link to the API reference"
