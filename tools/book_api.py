"""The API reference appendix: two directives that write it from the package itself.

``.. pe-book-api::`` (notebooks/api.md) documents every public module of ``pe_book``
with Sphinx's autodoc (signatures and docstrings, whose formulas and chapters are
checked by tests/test_api_reference.py), in the groups and order of the package map in
``pe_book/__init__.py``'s docstring, each module headed by the chapters that teach it
(linked). Subpackage modules (``pe_book.claims.rope``, ``pe_book.exercises.ch03_...``)
follow their package.

``.. pe-book-positions::`` (notebooks/api_positions.md) tables the registered position
methods (``pe_book.positions.names()``) with what each does through the interface, found
by inspecting which hooks its class overrides (:func:`hooks`).

Both build offline: autodoc imports the package, nothing is fetched.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from dataclasses import dataclass
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import Directive
from docutils.statemachine import StringList
from sphinx.util.nodes import nested_parse_with_titles

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"

#: The interface's hooks (pe_book.positions.PositionMethod), as the reference names them.
HOOKS = {
    "embed": "embed",
    "score_bias": "score bias",
    "rotate": "rotate",
    "make_attention": "own attention",
    "layer_inputs": "layer inputs",
    "set_scaling": "scaling",
}
#: What each hook lets a method do, in one sentence.
HOOK_MEANING = {
    "embed": "adds a vector to the token embeddings, x + p_m",
    "score bias": "adds a bias (H, L, L) to every layer's scores",
    "rotate": "turns queries and keys before their dot product",
    "own attention": "brings its own attention layer",
    "layer inputs": "changes what every layer's attention receives on each call",
    "scaling": "changes its angles at inference time (context extension)",
}


@dataclass(frozen=True)
class Module:
    """One entry of the package map: a module, what it is, the chapters that teach it."""

    name: str
    summary: str
    chapters: tuple[int, ...]


def package_map() -> list[tuple[str, list[Module]]]:
    """(group, modules) from ``pe_book/__init__.py``'s docstring, in its order.

    A group is a run of unindented lines (its title the text before any parenthesis);
    a module is a line ``- ``pe_book.x``  summary`` continued on indented lines. The
    chapters are those its summary names (``(ch. 03, 04)``, ``(ch. 01-07)``), else its
    group's (``Beyond RoPE and ALiBi (ch. 10; ...)``).
    """
    import pe_book

    groups: list[tuple[str, list[Module]]] = []
    header: list[str] = []
    entry: list[str] = []

    def close() -> None:
        if entry:
            text = " ".join(entry)
            name, summary = re.match(r"- ``([\w.]+)``\s+(.*)", text).groups()
            own = chapters_in(summary)
            groups[-1][1].append(Module(name, summary.strip(), own or group_chapters[-1]))
            entry.clear()

    group_chapters: list[tuple[int, ...]] = []
    body = pe_book.__doc__.split("\n\n", 2)[2]
    for line in body.splitlines():
        if line.startswith("- ``pe_book."):
            if header:
                text = " ".join(header)
                groups.append((text.split(" (")[0].strip(), []))
                group_chapters.append(chapters_in(text))
                header.clear()
            close()
            entry.append(line.strip())
        elif line.startswith(" ") and entry:
            entry.append(line.strip())
        elif line.strip():
            close()
            if line.startswith("Private helpers"):
                break
            header.append(line.strip())
        else:
            close()
    close()
    return [(group, modules) for group, modules in groups if modules]


def chapters_in(text: str) -> tuple[int, ...]:
    """Chapter numbers a text names as ``ch. 03, 04``, ``ch. 01-07, 09`` or ``chapter 11``."""
    found: list[int] = []
    for match in re.finditer(r"\b(?:ch\.|chapters?)\s+((?:\d+(?:\s*-\s*\d+)?(?:,\s*)?)+)", text):
        for part in re.findall(r"\d+(?:\s*-\s*\d+)?", match.group(1)):
            low, _, high = part.replace(" ", "").partition("-")
            found += range(int(low), int(high or low) + 1)
    return tuple(dict.fromkeys(found))


def chapter_pages() -> dict[int, str]:
    """Chapter number -> notebook stem, from the notebooks' file names (``03_sinusoidal``)."""
    return {
        int(path.name[:2]): path.stem
        for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    }


def submodules(name: str) -> list[str]:
    """The public modules of a package (``pe_book.claims`` -> ``pe_book.claims.rope`` ...)."""
    module = importlib.import_module(name)
    if not hasattr(module, "__path__"):
        return []
    return [
        info.name
        for info in pkgutil.iter_modules(module.__path__, name + ".")
        if not info.name.rsplit(".", 1)[1].startswith("_")
    ]


def _chapter_links(chapters: tuple[int, ...], pages: dict[int, str]) -> str:
    links = [f":doc:`chapter {n} <{pages[n]}>`" for n in chapters if n in pages]
    return ", ".join(links)


def api_rst() -> str:
    """The reference's RST: a section per group, a subsection per module (autodoc)."""
    pages = chapter_pages()
    groups = package_map()
    mapped = {module.name for _, modules in groups for module in modules}
    unmapped = [
        Module(name, "", chapters_in(_doc(name)))
        for name in submodules("pe_book")
        if name not in mapped
    ]
    if unmapped:  # tests/test_package_layout.py asks for them in the map; shown meanwhile
        groups.append(("Other modules", unmapped))
    lines: list[str] = []
    for group, modules in groups:
        lines += [group, "-" * len(group), ""]
        for module in modules:
            lines += _module_rst(module.name, "~", module.summary, module.chapters, pages)
            for sub in submodules(module.name):
                lines += _module_rst(sub, "^", "", chapters_in(_doc(sub)), pages)
    return "\n".join(lines)


def _doc(name: str) -> str:
    return importlib.import_module(name).__doc__ or ""


def _module_rst(
    name: str, underline: str, summary: str, chapters: tuple[int, ...], pages: dict[int, str]
) -> list[str]:
    title = f"``{name}``"
    lines = [title, underline * len(title), ""]
    taught = _chapter_links(chapters, pages)
    if summary or taught:
        summary = re.sub(r"\s*\(ch\.[^)]*\)", "", summary).rstrip(";, ")
        summary = f"*{summary[0].upper()}{summary[1:]}.* " if summary else ""
        lines += [summary + (f"Taught in {taught}." if taught else ""), ""]
    lines += [
        f".. automodule:: {name}",
        "   :members:",
        "   :show-inheritance:",
        "",
    ]
    return lines


def hooks(cls: type) -> list[str]:
    """What a position method's class does through the interface: the hooks it overrides."""
    from pe_book.positions import PositionMethod

    done = []
    for hook, label in HOOKS.items():
        if getattr(cls, hook) is not getattr(PositionMethod, hook):
            done.append(label)
    if "own attention" in done and "layer inputs" in done:
        done.remove("layer inputs")  # an own attention layer always says what it receives
    return done


def position_classes() -> list[tuple[str, type]]:
    """(name, class) of every registered method, in ``names()``'s order, built for a tiny model."""
    from pe_book import positions

    config = dict(vocab_size=8, dim=16, n_layers=1, n_heads=2, train_len=8, max_len=16)
    return [
        (name, type(positions.build(positions.ModelConfig(name, **config))))
        for name in positions.names()
    ]


def positions_rst() -> str:
    """The table of registered position methods and what each does."""
    pages = chapter_pages()
    columns = ["embed", "score bias", "rotate", "own attention", "layer inputs", "scaling"]
    lines = [
        ".. list-table::",
        "   :header-rows: 1",
        "",
        "   * - name",
        *[f"     - {column}" for column in columns],
        "     - taught in",
    ]
    for name, cls in position_classes():
        done = hooks(cls)
        module = cls.__module__
        chapters = _method_chapters(module)
        lines += [
            f"   * - ``{name}``",
            *[f"     - {'✓' if column in done else ''}" for column in columns],
            f"     - {_chapter_links(chapters, pages) or '—'}",
        ]
    lines += ["", "What each method does, read from the hooks it overrides:", ""]
    for name, cls in position_classes():
        done = hooks(cls)
        what = "; ".join(HOOK_MEANING[d] for d in done) or "nothing: only the causal mask"
        first = inspect.getdoc(cls).splitlines()[0]
        lines += [  # the label is the anchor chapters link to (tools/api_links.py)
            f".. _position-{name}:",
            "",
            f"- ``{name}``, :class:`~{cls.__module__}.{cls.__name__}`: {what}. {first}",
            "",
        ]
    return "\n".join(lines)


def _method_chapters(module: str) -> tuple[int, ...]:
    for _, modules in package_map():
        for entry in modules:
            if entry.name == module:
                return entry.chapters
    return ()


#: Inline literals and roles, left as they are by :func:`plain_text_docstring`.
_MARKUP = re.compile(r"``.+?``|:[\w:]+:`[^`]+`|`[^`]+`_?")


def plain_text_docstring(lines: list[str]) -> None:
    """Make a docstring written as plain text with formulas safe to read as RST, in place.

    The package's docstrings write ``|m - n|`` and ``(*shape, d)``, which RST would read
    as a substitution and the start of emphasis: outside inline literals and roles,
    every ``|`` is escaped, and so is every ``*`` that could open emphasis but is not
    part of a ``*word*`` pair. Literal blocks (after ``::``) are left alone.
    """
    literal_indent: int | None = None
    for i, line in enumerate(lines):
        indent = len(line) - len(line.lstrip())
        if literal_indent is not None:
            if line.strip() and indent <= literal_indent:
                literal_indent = None
            else:
                continue
        if line.rstrip().endswith("::"):
            literal_indent = indent
        pieces, last = [], 0
        for match in _MARKUP.finditer(line):
            pieces += [_escape(line[last : match.start()]), match.group(0)]
            last = match.end()
        pieces.append(_escape(line[last:]))
        lines[i] = "".join(pieces)


def _escape(text: str) -> str:
    text = text.replace("|", "\\|")
    # keep *emphasis* and **strong** pairs; escape any other * that could open one
    pieces = re.split(r"(\*\*?[^\s*](?:[^*]*[^\s*])?\*\*?)", text)
    return "".join(
        piece if i % 2 else re.sub(r"\*(?=\S)", r"\\*", piece) for i, piece in enumerate(pieces)
    )


def process_docstring(app, what, name, obj, options, lines: list[str]) -> None:
    """autodoc-process-docstring: :func:`plain_text_docstring` on every pe_book docstring."""
    if name.startswith("pe_book"):
        plain_text_docstring(lines)


def process_signature(app, what, name, obj, options, signature, annotation):
    """autodoc-process-signature: defaults that hold this clone's path (``RESULTS``) are
    shown relative to the repository, ``PosixPath('results')``, not as the build machine's."""
    root = f"'{ROOT}/"
    if signature and root in signature:
        return signature.replace(root, "'"), annotation
    return None


def scrub_paths(app, doctree: nodes.document) -> None:
    """doctree-read: no text of the book holds this clone's path (a constant's value,
    ``RESULTS = PosixPath('/home/.../results')``, shows as ``PosixPath('results')``)."""
    root = f"{ROOT}/"
    for text in list(doctree.findall(nodes.Text)):
        if root in text:
            text.parent.replace(text, nodes.Text(str(text).replace(root, "")))


def register_module_anchors(app, doctree: nodes.document) -> None:
    """doctree-read: let Markdown links reach the reference's entries: a module,
    ``[x](api.md#module-pe_book.rope)``, a function, class, constant or method,
    ``[x](api.md#pe_book.rope.apply_rope)``, a registered position method,
    ``[x](api_positions.md#position-rope)`` (tools/api_links.py writes these links).

    MyST resolves ``page.md#anchor`` only against the headings it parsed itself; the
    targets autodoc (and :func:`positions_rst`'s labels) made inside the generated
    reference are added to them.
    """
    env = app.env
    slugs = env.metadata[env.docname].setdefault("myst_slugs", {})
    for node in doctree.findall(nodes.Element):
        for target in node.get("ids", []):
            if target.startswith(("module-pe_book", "pe_book.", "position-")):
                slugs.setdefault(target, (2, target, target.removeprefix("module-")))


class _Generated(Directive):
    """A directive whose content is RST made by a function, parsed with its titles."""

    has_content = False
    make = staticmethod(lambda: "")

    def run(self) -> list[nodes.Node]:
        node = nodes.container()
        node.document = self.state.document
        nested_parse_with_titles(self.state, StringList(self.make().splitlines(), "pe_book"), node)
        return node.children


class ApiDirective(_Generated):
    make = staticmethod(api_rst)


class PositionsDirective(_Generated):
    make = staticmethod(positions_rst)
