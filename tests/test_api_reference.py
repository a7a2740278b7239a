"""Every public name of pe_book is documented with the chapter that teaches it (the API appendix).

The rule (the appendix, notebooks/api.md, is written from these docstrings):

- every public module (no part of its dotted name starts with ``_``) has a docstring,
  and every module of the package map (``pe_book/__init__.py``) declares ``__all__``;
- every name in a module's ``__all__`` has documentation of its own: a function's or
  class's own docstring (not inherited, not the signature a dataclass writes), or for a
  constant a ``#:`` comment or a string after it (what Sphinx's autodoc shows);
- a chapter is named ("chapter 7", "chapters 3-5", "Chapter 11", "ch. 12", or one of its
  sections, "section 12.6") in that documentation or in the module's docstring: a
  module's docstring naming its chapters covers all its names.

tests/test_api_reference.py also checks the appendix's own machinery (tools/book_api.py):
the package map it follows, the chapters it links and the position-method table.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import sys
from pathlib import Path

import pytest
from sphinx.pycode import ModuleAnalyzer

import pe_book

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import book_api  # tools/book_api.py

#: "chapter 7", "chapters 3-5", "Chapter 11", "ch. 12", or a section of one, "section 12.6".
CHAPTER = re.compile(r"\b(?:[Cc]hapters?|[Cc]h\.)\s*\d+|\b[Ss]ections?\s+\d+\.\d+")
MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(pe_book.__path__, "pe_book.")
    if not any(part.startswith("_") for part in info.name.split(".")[1:])
)


def own_doc(module: str, name: str) -> str:
    """The documentation autodoc would show for ``module.name`` ('' when there is none)."""
    obj = getattr(importlib.import_module(module), name)
    if inspect.isclass(obj):
        doc = vars(obj).get("__doc__") or ""
        signature_doc = f"{obj.__name__}("  # what @dataclass writes when there is no docstring
        return "" if doc.startswith(signature_doc) else doc
    if inspect.isroutine(obj) or hasattr(obj, "__wrapped__"):  # functions, @cache wrappers
        return obj.__doc__ or ""
    analyzer = ModuleAnalyzer.for_module(getattr(obj, "__module__", None) or module)
    docs = analyzer.find_attr_docs()
    return "\n".join(docs.get(("", name), []) or analyzer_docs(module).get(("", name), []))


def analyzer_docs(module: str) -> dict:
    return ModuleAnalyzer.for_module(module).find_attr_docs()


def public_names() -> list[tuple[str, str]]:
    return [
        (module, name)
        for module in MODULES
        for name in getattr(importlib.import_module(module), "__all__", ())
    ]


@pytest.mark.parametrize("module", MODULES)
def test_every_public_module_has_a_docstring_naming_a_chapter_or_its_names_do(module):
    mod = importlib.import_module(module)
    assert (mod.__doc__ or "").strip(), f"{module} has no docstring"
    if not CHAPTER.search(mod.__doc__):
        undated = [n for n in getattr(mod, "__all__", ()) if not CHAPTER.search(own_doc(module, n))]
        assert hasattr(mod, "__all__") and not undated, (
            f"{module}'s docstring names no chapter (write 'chapter N' or 'ch. N'), nor do "
            f"the docstrings of {undated or 'its names (it has no __all__)'}"
        )


def test_every_module_of_the_package_map_declares_all():
    mapped = [m.name for _, modules in book_api.package_map() for m in modules]
    missing = [m for m in mapped if not hasattr(importlib.import_module(m), "__all__")]
    assert not missing, f"modules without __all__ (the API reference's list of names): {missing}"


def test_every_public_name_is_documented_with_its_chapter():
    undocumented, no_chapter = [], []
    for module, name in public_names():
        doc = own_doc(module, name)
        if not doc.strip():
            undocumented.append(f"{module}.{name}")
        elif not (CHAPTER.search(doc) or CHAPTER.search(importlib.import_module(module).__doc__)):
            no_chapter.append(f"{module}.{name}")
    assert not undocumented, (
        f"{len(undocumented)} public names without documentation of their own (a docstring, "
        f"or '#:' above a constant): {undocumented}"
    )
    assert not no_chapter, (
        f"{len(no_chapter)} public names whose documentation and module docstring name no "
        f"chapter ('chapter N' or 'ch. N'): {no_chapter}"
    )


def test_the_rule_rejects_an_undocumented_name_and_a_missing_chapter(tmp_path, monkeypatch):
    (tmp_path / "fake_api_module.py").write_text(
        '"""A module of the book."""\n'
        '__all__ = ["bare", "dated", "LIMIT", "Plain"]\n'
        "def bare(): pass\n"
        'def dated():\n    """The formula x + 1 (chapter 4)."""\n'
        "#: The largest L (ch. 12).\nLIMIT = 3\n"
        "from dataclasses import dataclass\n"
        "@dataclass\nclass Plain:\n    x: int\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert own_doc("fake_api_module", "bare") == ""
    assert own_doc("fake_api_module", "Plain") == ""  # the dataclass's signature is no docstring
    assert CHAPTER.search(own_doc("fake_api_module", "dated"))
    assert CHAPTER.search(own_doc("fake_api_module", "LIMIT"))


def test_the_package_map_gives_every_module_its_chapters():
    groups = book_api.package_map()
    rope = next(m for _, modules in groups for m in modules if m.name == "pe_book.rope")
    assert 7 in rope.chapters
    assert book_api.chapters_in("(ch. 01-03, 09)") == (1, 2, 3, 9)
    assert book_api.chapters_in("chapter 11 and ch. 12") == (11, 12)


def test_the_reference_documents_every_public_module_with_autodoc():
    rst = book_api.api_rst()
    documented = re.findall(r"^\.\. automodule:: ([\w.]+)$", rst, re.M)
    assert sorted(documented) == MODULES


def test_position_table_reads_each_method_s_hooks_from_its_class():
    from pe_book import positions

    table = dict(book_api.position_classes())
    assert tuple(table) == positions.names()
    assert book_api.hooks(table["none"]) == []
    assert book_api.hooks(table["sinusoidal"]) == ["embed"]
    assert book_api.hooks(table["alibi"]) == ["score bias"]
    assert "rotate" in book_api.hooks(table["rope"])
    assert "own attention" in book_api.hooks(table["shaw"])
    rst = book_api.positions_rst()
    for name in positions.names():
        assert f"``{name}``" in rst


def test_docstrings_written_as_plain_text_are_made_safe_for_rst():
    lines = ["the bias -s_h |m - n|, shape (*batch, d), ``a|b`` kept, *emphasis* kept"]
    book_api.plain_text_docstring(lines)
    assert lines == [
        r"the bias -s_h \|m - n\|, shape (\*batch, d), ``a|b`` kept, *emphasis* kept"
    ]


def test_no_signature_or_value_shows_the_build_machine_s_path():
    root = str(book_api.ROOT)
    signature = f"(design: str, *, root: Path = PosixPath('{root}/results'))"
    fixed, _ = book_api.process_signature(None, "function", "f", None, {}, signature, None)
    assert fixed == "(design: str, *, root: Path = PosixPath('results'))"
    from docutils import nodes
    from docutils.frontend import get_default_settings
    from docutils.parsers.rst import Parser
    from docutils.utils import new_document

    doc = new_document("test", get_default_settings(Parser))
    doc += nodes.paragraph("", "", nodes.Text(f"RESULTS = PosixPath('{root}/results')"))
    book_api.scrub_paths(None, doc)
    assert doc.astext() == "RESULTS = PosixPath('results')"
