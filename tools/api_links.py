"""Link each chapter's first mention of a pe_book name to its entry in the API reference.

A *mention* is a code span in a notebook's Markdown prose (headings, fenced code, math
and HTML comments left out) that names something the API reference (appendix A,
``notebooks/api.md``, written by autodoc) documents: a module (``pe_book.rope``), or a
function, class, constant or method of one, written

- in full, ``pe_book.rope.apply_rope``;
- from its module, ``rope.apply_rope`` or ``symbolic.prove(lhs, rhs)``: the first part
  is a module of the package (a call's arguments are ignored);
- bare, ``apply_rope`` or ``sinusoidal_table(seq_len, dim)``: a name the chapter
  imports from pe_book, else a public name of a module the chapter imports, else a hook
  of the position interface (``score_bias``: ``PositionMethod.score_bias``), else a
  public name of exactly one module of the package. Names the prose uses for something
  else are listed in :data:`NOT_THE_PACKAGES`.

A code span that is exactly a registered position method's name (``none``,
``randomized_rope``: ``pe_book.positions.names()``) names that method, whose entry is
in appendix B (``notebooks/api_positions.md``, anchor ``position-randomized-rope``).

The first mention of each name in a chapter becomes a Markdown link to its anchor,
``[`apply_rope`](api.md#pe_book.rope.apply_rope)`` (a module's anchor is
``module-pe_book.rope``): plain Markdown, so JupyterLab shows it as a link, while the
book's build resolves ``api.md#...`` to the entry (tools/book_api.py registers
autodoc's anchors with MyST) and the PDF to a hyperlink inside the book. A mention
already inside a link counts as linked when the link goes to the reference; a later
mention stays as it was.

    python tools/api_links.py report [NOTEBOOK ...]   first mentions, linked or not
    python tools/api_links.py link [NOTEBOOK ...]     link those that are not (writes:
        run it under the notebook lock, flock /tmp/pe_book_nb.lock ...)

Without notebooks it works on every notebook of the book (:data:`NOTEBOOKS`).
tests/test_api_links.py fails when a first mention is not linked or a link's target is
not in the reference.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import re
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import book_api  # noqa: E402  tools/book_api.py, the reference's own list of modules

NOTEBOOKS_DIR = ROOT / "notebooks"
#: The notebooks of the book whose prose is linked: the preface, chapters, appendix C
#: and the instructors' pages (appendices A and B are the reference itself).
NOTEBOOKS = sorted(
    path
    for pattern in ("[0-9][0-9]_*.ipynb", "appendix_*.ipynb", "instructor_*.ipynb")
    for path in NOTEBOOKS_DIR.glob(pattern)
)
REFERENCE = "api.md"
POSITIONS = "api_positions.md"
#: The name under which a registered position method is a mention: ``registered:rope``.
REGISTERED = "registered:"

#: Bare names that the prose of a chapter uses for something other than the package's
#: object of that name: chapter stem -> names (``"*"``: every chapter).
NOT_THE_PACKAGES: dict[str, set[str]] = {}

#: A code span, and a Markdown link (its text may hold code spans).
CODE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
LINK = re.compile(r"\[((?:[^\[\]]|`[^`]*`)*)\]\(([^()\s]*)\)")
#: What prose the mentions are read from leaves out: fenced code, HTML comments,
#: display and inline math.
HIDDEN = re.compile(r"```.*?```|~~~.*?~~~|<!--.*?-->|\$\$.*?\$\$|(?<![\\$])\$[^$\n]+\$", re.S)
#: The position interface's hooks (tools/book_api.py's list).
HOOKS = tuple(book_api.HOOKS)
NAME = re.compile(r"([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*)(?:\(.*\))?")


@dataclass(frozen=True)
class Mention:
    """A code span of the prose that names a documented object."""

    notebook: str  # stem
    cell: int  # index among the notebook's cells
    start: int  # offset of the span's first backtick in the cell's source
    end: int  # offset just past its closing backtick
    span: str  # the span's text, without backticks
    name: str  # the full name it resolves to, pe_book.rope.apply_rope
    link: str | None  # the target of the link it sits in, if any

    @property
    def linked(self) -> bool:
        return self.link == target(self.name)


# --- what the reference documents ---------------------------------------------------


@cache
def reference_modules() -> tuple[str, ...]:
    """Every module appendix A documents, in its order (tools/book_api.py's list)."""
    mapped = [module.name for _, modules in book_api.package_map() for module in modules]
    names = list(mapped) + [m for m in book_api.submodules("pe_book") if m not in mapped]
    found = []
    for name in names:
        found += [name, *book_api.submodules(name)]
    return tuple(dict.fromkeys(found))


def _public(module) -> list[str]:
    names = getattr(module, "__all__", None)
    if names is not None:
        return list(names)
    return [  # no __all__: what autodoc's :members: shows, documented names defined here
        name
        for name, obj in vars(module).items()
        if not name.startswith("_")
        and (inspect.isfunction(obj) or inspect.isclass(obj))
        and obj.__module__ == module.__name__
        and inspect.getdoc(obj)
    ]


@cache
def documented() -> dict[str, str]:
    """Full name -> anchor of every entry of the reference: modules, their public
    functions, classes and constants, and the documented methods and properties of
    those classes (autodoc's ids: ``module-pe_book.rope``, ``pe_book.rope.apply_rope``)."""
    anchors: dict[str, str] = {}
    for module_name in reference_modules():
        module = importlib.import_module(module_name)
        anchors[module_name] = f"module-{module_name}"
        for name in _public(module):
            full = f"{module_name}.{name}"
            anchors[full] = full
            obj = getattr(module, name, None)
            if inspect.isclass(obj) and getattr(obj, "__module__", "").startswith("pe_book"):
                for member, value in vars(obj).items():
                    if member.startswith("_"):
                        continue
                    function = value.fget if isinstance(value, property) else value
                    if isinstance(function, (staticmethod, classmethod)):
                        function = function.__func__
                    if inspect.isfunction(function) and inspect.getdoc(function):
                        anchors[f"{full}.{member}"] = f"{full}.{member}"
    return anchors


@cache
def registered() -> tuple[str, ...]:
    """The registered position methods' names (appendix B lists them)."""
    from pe_book import positions

    return tuple(positions.names())


def position_anchor(method: str) -> str:
    """Appendix B's anchor of a registered method (docutils ids have no ``_``)."""
    return "position-" + method.replace("_", "-")


def target(name: str) -> str:
    """The link target of a documented name: ``api.md#pe_book.rope.apply_rope``, or
    ``api_positions.md#position-rope`` for ``registered:rope``."""
    if name.startswith(REGISTERED):
        return f"{POSITIONS}#{position_anchor(name.removeprefix(REGISTERED))}"
    return f"{REFERENCE}#{documented()[name]}"


def exists(link: str) -> bool:
    """Whether a link's target is an entry of the reference (appendix A or B)."""
    page, _, anchor = link.partition("#")
    if page == REFERENCE:
        return anchor in set(documented().values())
    if page == POSITIONS:
        return anchor in {position_anchor(m) for m in registered()}
    return False


@cache
def _owners() -> dict[str, tuple[str, ...]]:
    """Bare public name -> the modules whose public names include it (re-exports count
    once, under the module that defines the object)."""
    owners: dict[str, list[str]] = {}
    for module_name in reference_modules():
        module = importlib.import_module(module_name)
        for name in _public(module):
            obj = getattr(module, name, None)
            home = getattr(obj, "__module__", None)
            if home != module_name and isinstance(home, str) and f"{home}.{name}" in documented():
                continue  # a re-export: the defining module's entry is the one
            owners.setdefault(name, []).append(module_name)
    return {name: tuple(modules) for name, modules in owners.items()}


# --- what a chapter imports -----------------------------------------------------------


def imports(cells: list[dict]) -> tuple[dict[str, str], dict[str, str]]:
    """(names, modules) a notebook's code imports from pe_book: bare name -> full name,
    and local module name -> module (``attn`` -> ``pe_book.attention``)."""
    names: dict[str, str] = {}
    modules: dict[str, str] = {}
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        source = "\n".join(
            "" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()
        )
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pe_book"):
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    local = alias.asname or alias.name
                    if full in reference_modules():
                        modules[local] = full
                    else:
                        names[local] = full
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("pe_book") and alias.asname:
                        modules[alias.asname] = alias.name
    return names, modules


# --- mentions ---------------------------------------------------------------------------


def resolve(span: str, names: dict[str, str], modules: dict[str, str]) -> str | None:
    """The documented full name a code span names, or None (see the module docstring)."""
    match = NAME.fullmatch(span.strip())
    if not match:
        return None
    written = match.group(1)
    if span.strip() in registered():
        return REGISTERED + written
    parts = written.split(".")
    known = documented()
    if parts[0] == "pe_book":
        return written if written in known else None
    if len(parts) > 1:
        module = modules.get(parts[0]) or f"pe_book.{parts[0]}"
        full = ".".join([module, *parts[1:]])
        if module in reference_modules() and full in known:
            return full
        if full in reference_modules():  # ``claims.rope``: a subpackage's module
            return full
        return None
    if written in names:
        return names[written] if names[written] in known else None
    owners = _owners().get(written, ())
    local = [m for m in owners if m in modules.values()]
    if len(local) == 1:
        return f"{local[0]}.{written}"
    if written in HOOKS:
        return f"pe_book.positions.PositionMethod.{written}"
    if len(owners) == 1:
        return f"{owners[0]}.{written}"
    return None


def _hidden_ranges(text: str) -> list[tuple[int, int]]:
    ranges = [m.span() for m in HIDDEN.finditer(text)]
    offset = 0
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith("#"):
            ranges.append((offset, offset + len(line)))
        offset += len(line)
    return ranges


def mentions(path: Path) -> list[Mention]:
    """Every mention of a documented name in a notebook's Markdown, in reading order."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    names, modules = imports(cells)
    skip = NOT_THE_PACKAGES.get(path.stem, set()) | NOT_THE_PACKAGES.get("*", set())
    found = []
    for index, cell in enumerate(cells):
        if cell["cell_type"] != "markdown":
            continue
        text = "".join(cell["source"])
        hidden = _hidden_ranges(text)
        links = [(m.start(1), m.end(1), m.group(2)) for m in LINK.finditer(text)]
        for match in CODE.finditer(text):
            if any(low <= match.start() < high for low, high in hidden):
                continue
            span = match.group(1)
            if span.strip() in skip:
                continue
            name = resolve(span, names, modules)
            if name is None:
                continue
            link = next((t for low, high, t in links if low <= match.start() < high), None)
            found.append(Mention(path.stem, index, *match.span(), span, name, link))
    return found


def first_mentions(path: Path) -> list[Mention]:
    """The first mention of each documented name in a notebook. A mention inside a link
    to anything but the reference (a paper, another chapter) cannot carry a second link
    and is passed over."""
    first: dict[str, Mention] = {}
    for mention in mentions(path):
        if mention.link is not None and not mention.link.startswith((REFERENCE, POSITIONS)):
            continue
        first.setdefault(mention.name, mention)
    return list(first.values())


def link_notebook(path: Path) -> list[Mention]:
    """Turn every unlinked first mention of a notebook into a link; returns those linked.

    Loads the file, changes only the Markdown cells concerned, and writes it back in
    the notebooks' own JSON layout (one space indent, as nbformat writes it)."""
    todo = [m for m in first_mentions(path) if m.link is None]
    if not todo:
        return []
    raw = path.read_text(encoding="utf-8")
    notebook = json.loads(raw)
    by_cell: dict[int, list[Mention]] = {}
    for mention in todo:
        by_cell.setdefault(mention.cell, []).append(mention)
    for index, found in by_cell.items():
        cell = notebook["cells"][index]
        text = "".join(cell["source"])
        for mention in sorted(found, key=lambda m: m.start, reverse=True):
            code = text[mention.start : mention.end]
            text = f"{text[: mention.start]}[{code}]({target(mention.name)}){text[mention.end :]}"
        cell["source"] = text.splitlines(keepends=True)
    out = json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"
    path.write_text(out, encoding="utf-8")
    return todo


def _paths(args: list[str]) -> list[Path]:
    return [Path(a).resolve() for a in args] or NOTEBOOKS


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("report", "link"):
        print(__doc__.split("\n\n")[-2], file=sys.stderr)
        return 2
    command, paths = argv[0], _paths(argv[1:])
    unlinked = 0
    for path in paths:
        if command == "link":
            done = link_notebook(path)
            print(f"{path.stem}: linked {len(done)}: " + ", ".join(m.span for m in done))
            continue
        first = first_mentions(path)
        missing = [m for m in first if not m.linked]
        unlinked += len(missing)
        print(f"{path.stem}: {len(first)} names, {len(missing)} not linked")
        for m in first:
            mark = "ok " if m.linked else "-- "
            print(f"  {mark}cell {m.cell:3d}  `{m.span}` -> {m.name}")
    return 1 if command == "report" and unlinked else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
