"""The book's own Sphinx extension (notebooks/_config.yml loads it as a local extension).

For the PDF (the LaTeX builder only; the HTML book is untouched):

- every table becomes a ``longtable`` (it breaks across pages instead of running off
  the bottom of one) in a smaller font (smaller still from :data:`WIDE_COLUMNS`
  columns), ragged right, with column widths computed from what its cells hold: each
  column at least its longest word, at most its longest cell, long prose wider than
  short phrases (:func:`column_widths`); long runs of code in cells get break points;
- the preface, which Jupyter Book's LaTeX layout turns into untitled front matter,
  gets its title back as an unnumbered chapter listed in the table of contents;
- Chinese characters (the sources' titles) are set in a CJK font (:class:`LatexCJK`);
- formulas printed by cells (SymPy's) shrink to the text width (:class:`LatexWideMath`).

For every builder it registers the API reference's directives (tools/book_api.py).
"""

from __future__ import annotations

import math
import re
from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform

#: Characters of a table's font that fit one line of the PDF's text column (A4, \small),
#: counted low: code and bold headings are wider than the average serif character.
LINE_CHARS = 90
#: Tables with this many columns or more are set a size smaller (\footnotesize).
WIDE_COLUMNS = 6
#: Narrowest column, in characters (a column of numbers stays readable).
MIN_CHARS = 4
#: Longest run of code characters without a break point in a table cell (hashes, ids).
CODE_PIECE = 10
ZWSP = "\u200b"


def column_widths(
    cells: list[list[str]], line: float = LINE_CHARS, mono: list[list[bool]] | None = None
) -> list[float]:
    """Widths (characters) for columns holding ``cells`` (rows of texts), summing to ``line``.

    A column's minimum is its longest word (one that breaks nowhere), its maximum its
    longest cell; a cell holding code (``mono``) counts its characters 1.3 times. When
    every maximum fits the line, columns get their maximum; when the minima alone
    overflow it, widths are proportional to the minima. Otherwise the line is shared in
    proportion to the square root of each column's maximum (a column of long prose gets
    more than one of short phrases, but not all of the line), each width held between
    the column's minimum and maximum (water-filling: columns that hit a bound keep it,
    the others share the rest).
    """
    count = max(len(row) for row in cells)
    low = [float(MIN_CHARS)] * count
    high = [float(MIN_CHARS)] * count
    for i, row in enumerate(cells):
        for j, text in enumerate(row):
            scale = 1.3 if mono and mono[i][j] else 1.0
            # a line may break at spaces, and in code after - _ / . (notebooks/_config.yml)
            # or every CODE_PIECE characters (:func:`breakable_code`)
            pieces = re.split(r"\s+|(?<=[-_/.])", text.strip()) or [""]
            if scale > 1:
                pieces = [w[:CODE_PIECE] for w in pieces]
            low[j] = max(low[j], min(scale * max(len(w) for w in pieces) + 1, line / 4))
            high[j] = max(high[j], scale * len(" ".join(text.split())) + 1)
    if sum(high) <= line:
        return high
    if sum(low) >= line:
        return [line * w / sum(low) for w in low]
    fixed: dict[int, float] = {}
    while True:
        free = [j for j in range(count) if j not in fixed]
        if not free:
            return [line * fixed[j] / sum(fixed.values()) for j in range(count)]
        weight = sum(math.sqrt(high[j]) for j in free)
        share = {j: (line - sum(fixed.values())) * math.sqrt(high[j]) / weight for j in free}
        bound = {j: low[j] for j in free if share[j] < low[j]}
        bound |= {j: high[j] for j in free if share[j] > high[j]}
        if not bound:
            return [fixed.get(j, share.get(j, 0.0)) for j in range(count)]
        fixed |= bound


def breakable_code(text: str) -> str:
    """Code with a zero-width space (a permitted break, notebooks/_config.yml) every
    :data:`CODE_PIECE` characters of a run that has no other break point."""

    def cut(match: re.Match[str]) -> str:
        run = match.group(0)
        return ZWSP.join(run[i : i + CODE_PIECE] for i in range(0, len(run), CODE_PIECE))

    return re.sub(rf"[^\s\-_/.]{{{CODE_PIECE + 1},}}", cut, text)


def _table_cells(table: nodes.table) -> tuple[list[list[str]], list[list[bool]]]:
    """The text of every cell, row by row, and whether each holds code."""
    rows = [list(row.findall(nodes.entry)) for row in table.findall(nodes.row)]
    rows = [row for row in rows if row]
    texts = [[entry.astext() for entry in row] for row in rows]
    mono = [[any(entry.findall(nodes.literal)) for entry in row] for row in rows]
    return texts, mono


class LatexTables(SphinxPostTransform):
    """Every table a page-breaking longtable with content-sized, ragged-right columns."""

    default_priority = 800  # after sphinx-jupyterbook-latex's post-transforms (700)
    builders = ("latex",)

    def run(self, **kwargs: Any) -> None:
        for table in list(self.document.findall(nodes.table)):
            if any(isinstance(p, nodes.table) for p in _ancestors(table)):
                continue  # a nested table stays as Sphinx makes it
            cells, mono = _table_cells(table)
            if not cells:
                continue
            for literal in list(table.findall(nodes.literal)):
                for text in list(literal.findall(nodes.Text)):
                    broken = breakable_code(str(text))
                    if broken != str(text):
                        text.parent.replace(text, nodes.Text(broken))
            wide = max(map(len, cells)) >= WIDE_COLUMNS
            # \footnotesize (8 pt) fits 9/8 as many characters as \small (9 pt)
            widths = column_widths(cells, LINE_CHARS * (9 / 8 if wide else 1), mono=mono)
            total = sum(widths)
            columns = "".join(
                r">{\raggedright\arraybackslash}p{\dimexpr %.3f\linewidth-2\tabcolsep\relax}"
                % (width / total)
                for width in widths
            )
            spec = addnodes.tabular_col_spec()
            spec["spec"] = "{" + columns + "}"
            table["classes"] = [*table.get("classes", []), "longtable"]
            parent = table.parent
            index = parent.index(table)
            parent.insert(index, spec)
            size = r"\footnotesize" if wide else r"\small"
            parent.insert(index, nodes.raw("", r"\begingroup" + size, format="latex"))
            parent.insert(parent.index(table) + 1, nodes.raw("", r"\endgroup", format="latex"))


def _ancestors(node: nodes.Node) -> list[nodes.Node]:
    found = []
    while node.parent is not None:
        node = node.parent
        found.append(node)
    return found


class LatexPrefaceTitle(SphinxPostTransform):
    """The root page's title as an unnumbered chapter in the table of contents."""

    default_priority = 810
    builders = ("latex",)

    def run(self, **kwargs: Any) -> None:
        root = self.config.root_doc
        for section in self.document.findall(nodes.section):
            if section.get("docname") == root and section.children:
                title = section.children[0]
                if not isinstance(title, nodes.title):
                    return
                text = _latex_escape(title.astext())
                latex = (
                    rf"\chapter*{{{text}}}\addcontentsline{{toc}}{{chapter}}{{{text}}}"
                    rf"\markboth{{{text}}}{{{text}}}"
                )
                section.insert(1, nodes.raw("", latex, format="latex"))
                return


#: Unicode ranges set in the CJK font (\pebookcjk, notebooks/_config.yml): the main fonts
#: have no Chinese, and xeCJK would need Debian's 50 MB texlive-lang-chinese.
CJK_RANGES = ((0x3000, 0x303F), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xFF00, 0xFFEF))
#: Opening brackets, after which a line must not break.
OPENING = "（【《「『〔［｛"


def cjk_characters(text: str) -> list[str]:
    """The distinct characters of ``text`` in :data:`CJK_RANGES`, sorted."""
    return sorted({ch for ch in text if any(lo <= ord(ch) <= hi for lo, hi in CJK_RANGES)})


class LatexCJK(SphinxPostTransform):
    r"""Every CJK character of the book typeset in the CJK font, text and code alike.

    Each one becomes an active character (newunicodechar, defined in the preamble,
    which the LaTeX writer copies from the builder's context after this transform)
    that prints its glyph from ``\pebookcjk``; XeTeX has no font fallback.
    """

    default_priority = 820
    builders = ("latex",)

    def run(self, **kwargs: Any) -> None:
        found = cjk_characters(self.document.astext())
        if not found:
            return
        # a line may break after any character but an opening bracket (Chinese has no spaces)
        lines = [
            rf'\newunicodechar{{{ch}}}{{\text{{\pebookcjk\char"{ord(ch):X}}}'
            + ("" if ch in OPENING else r"\allowbreak")
            + "}"
            for ch in found
        ]
        context = self.app.builder.context
        context["preamble"] = context.get("preamble", "") + "\n" + "\n".join(lines) + "\n"


class LatexWideMath(SphinxPostTransform):
    """A formula a cell printed (SymPy's output) shrinks to the text width when wider.

    LaTeX cannot break a display formula, and SymPy's expanded sums run far past
    the margin; the formulas written in the text are left as they are.
    """

    default_priority = 830
    builders = ("latex",)

    def run(self, **kwargs: Any) -> None:
        for formula in list(self.document.findall(nodes.math_block)):
            outputs = [
                p
                for p in _ancestors(formula)
                if isinstance(p, nodes.container) and "cell_output" in p.get("classes", [])
            ]
            latex = formula.astext().strip()
            if not outputs or re.search(r"\\begin\{(align|equation|gather|multline)", latex):
                continue
            formula.replace_self(
                nodes.raw(
                    "",
                    "\\begin{center}\\adjustbox{max width=\\linewidth}"
                    f"{{$\\displaystyle\\begin{{aligned}}{latex}\\end{{aligned}}$}}\\end{{center}}",
                    format="latex",
                )
            )


def _latex_escape(text: str) -> str:
    from sphinx.util.texescape import escape

    return escape(text, latex_engine="xelatex")


def setup(app: Sphinx) -> dict[str, Any]:
    import book_api  # tools/book_api.py, beside this file

    app.add_directive("pe-book-api", book_api.ApiDirective)
    app.add_directive("pe-book-positions", book_api.PositionsDirective)
    app.connect("autodoc-process-docstring", book_api.process_docstring)
    app.connect("autodoc-process-signature", book_api.process_signature)
    app.connect("doctree-read", book_api.register_module_anchors)
    app.connect("doctree-read", book_api.scrub_paths)
    app.add_post_transform(LatexTables)
    app.add_post_transform(LatexPrefaceTitle)
    app.add_post_transform(LatexCJK)
    app.add_post_transform(LatexWideMath)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
