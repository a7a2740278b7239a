"""Lecture decks: one reveal.js deck per lecture of the preface's plan, built offline.

    python tools/decks.py build [slides/07_rope.md ...] [--out DIR] [--jobs N]   (make slides)
    python tools/decks.py check [slides/07_rope.md ...] [--out DIR]       measure every slide
    python tools/decks.py screenshot [slides/07_rope.md ...] [--out DIR]  one PNG per slide

A deck is its own source, ``slides/NN_name.md`` (NN: the lecture, today the chapter
it teaches), not cells or tags inside the chapter: a chapter is lecture-length prose
that several people edit at once, a slide is a sentence, a short cell or a figure
(Dive into Deep Learning's slide notebooks). The source is a MyST Markdown notebook,
the text form of a notebook that jupyter-book reads and jupytext opens: Markdown
cells, and code cells that run top to bottom in one fresh kernel when the deck is
built, so every number and figure on a slide is computed by pe_book (or read from
its stored results) at build time, never typed.

The source's rules (one place, so an author can predict the deck):

- the ``# Title`` cell is the title slide; every ``## Heading`` starts a slide;
- a line ``Note:`` (reveal.js's own separator) starts the speaker notes of the
  current slide: the rest of that Markdown cell is shown only in the speaker view (S);
- code cell tags: ``remove-cell`` runs and shows nothing (imports, set-up);
  ``remove-input`` shows only what the cell displays (a figure, or a sentence
  with computed numbers through ``IPython.display.Markdown``); ``notes`` puts what
  it displays in the speaker notes; any other code cell shows its code and output.

``build`` writes, per deck, ``build/slides/NN_name.html`` (reveal.js, a 1280x720
canvas, slide numbers, speaker notes) and ``NN_name.ipynb`` (the executed deck with
RISE metadata: open it in JupyterLab and press Alt+R to present it live), then an
``index.html``. reveal.js comes from the npm registry once (``npm pack``, cached in
``build/cache/``), MathJax 3 from the offline copy the book already serves: the decks
open from file:// with no network. ``check`` opens every slide in headless Chromium
at 1280x720 and lists what overflows (tests/test_decks.py fails on the same list).
"""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
DECKS = ROOT / "slides"
OUT = ROOT / "build" / "slides"
CACHE = ROOT / "build" / "cache"
TEMPLATE = Path(__file__).resolve().parent / "slides_template" / "deck.html.j2"
REVEAL = "reveal.js@4.6.1"
#: the canvas reveal.js lays every slide out on (16:9), and the screen the checks use
WIDTH, HEIGHT = 1280, 720
#: a slide holds a sentence, a short cell or a figure: at most this many words of prose
#: (a formula counts as one word; code, outputs and figures are not prose)
WORDS = 40
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
HEADING = re.compile(r"^#{1,2} ")
NOTE = re.compile(r"^Note:\s*")


# -- sources -------------------------------------------------------------------


def decks(args: list[str] | None = None) -> list[Path]:
    """The deck sources named in ``args``, else every ``slides/NN_*.md``."""
    return [Path(a).resolve() for a in args or []] or sorted(DECKS.glob("[0-9][0-9]_*.md"))


def _split_markdown(source: str) -> list[tuple[str, str]]:
    """A Markdown cell as (role, text) parts: "slide" from a heading, "notes" from Note:."""
    parts: list[tuple[str, list[str]]] = [("-", [])]
    fenced = False
    for line in source.splitlines():
        if line.startswith(("```", "~~~")):
            fenced = not fenced
        if not fenced and HEADING.match(line):
            parts.append(("slide", [line]))
        elif not fenced and NOTE.match(line):
            parts.append(("notes", [NOTE.sub("", line)]))
        else:
            parts[-1][1].append(line)
    return [(role, "\n".join(lines).strip()) for role, lines in parts if "\n".join(lines).strip()]


def read_deck(path: Path) -> nbformat.NotebookNode:
    """A deck source as a notebook whose cells carry RISE's slide types by the rules above."""
    from myst_nb.core.read import read_myst_markdown_notebook

    source = read_myst_markdown_notebook(path.read_text(encoding="utf-8"), path=path)
    notebook = nbformat.v4.new_notebook(metadata={"kernelspec": KERNELSPEC})
    for cell in source.cells:
        if cell.cell_type == "markdown":
            for role, text in _split_markdown(cell.source):
                new = nbformat.v4.new_markdown_cell(text)
                new.metadata["slideshow"] = {"slide_type": role}
                notebook.cells.append(new)
            continue
        tags = list(cell.metadata.get("tags", []))
        new = nbformat.v4.new_code_cell(cell.source, metadata={"tags": tags} if tags else {})
        role = "skip" if "remove-cell" in tags else "notes" if "notes" in tags else "-"
        new.metadata["slideshow"] = {"slide_type": role}
        if "remove-input" in tags or role != "-":
            new.metadata["jupyter"] = {"source_hidden": True}  # RISE shows the output only
        notebook.cells.append(new)
    for number, cell in enumerate(notebook.cells):
        cell["id"] = f"{path.stem[:2]}-{number:03d}"  # stable ids: the build diffs cleanly
    first = next((c for c in notebook.cells if c.cell_type == "markdown"), None)
    if first is None or not first.source.startswith("# "):
        raise ValueError(f"{path.name}: a deck starts with its '# Title' cell")
    return notebook


def execute(notebook: nbformat.NotebookNode, cwd: Path = DECKS, timeout: int = 300) -> None:
    """Run a deck top to bottom in a fresh kernel (Unix sockets, as tools/execute_notebooks)."""
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    with tempfile.TemporaryDirectory(prefix="pe-book-deck-") as sockets:
        kernel = KernelManager(kernel_name="python3", transport="ipc", ip=f"{sockets}/kernel")
        try:
            NotebookClient(
                notebook, km=kernel, timeout=timeout, resources={"metadata": {"path": str(cwd)}}
            ).execute()
        finally:
            if kernel.has_kernel:
                kernel.shutdown_kernel(now=True)


# -- rendering -----------------------------------------------------------------


@dataclass
class Slide:
    """One slide: what the screen shows and what the speaker view shows."""

    body: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    title: bool = False


def _markdown(text: str) -> str:
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    # nbconvert adds a pilcrow link to every heading: a slide has no use for it
    return re.sub(r'<a class="anchor-link"[^>]*>[^<]*</a>', "", markdown2html_mistune(text))


def _code(source: str) -> str:
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    code = highlight(source, PythonLexer(), HtmlFormatter(nowrap=True))
    return f'<pre class="code"><code>{code.rstrip()}</code></pre>'


def _outputs(cell: nbformat.NotebookNode) -> list[str]:
    shown: list[str] = []
    previous = None
    for out in cell.get("outputs", []):
        if out.output_type == "stream":
            kind = "stderr" if out.name == "stderr" else "output"
            text = html.escape(out.text.rstrip("\n"))
            if previous == kind:  # the kernel flushes one cell's prints in chunks
                shown[-1] = shown[-1][: -len("</pre>")] + "\n" + text + "</pre>"
            else:
                shown.append(f'<pre class="{kind}">{text}</pre>')
            previous = kind
            continue
        previous = None
        data = out.get("data", {})
        if "image/png" in data:
            shown.append(f'<img class="figure" src="data:image/png;base64,{data["image/png"]}">')
        elif "text/markdown" in data:
            shown.append(f'<div class="said">{_markdown(data["text/markdown"])}</div>')
        elif "text/latex" in data:
            shown.append(f'<div class="math">{html.escape(data["text/latex"])}</div>')
        elif "text/plain" in data:
            shown.append(f'<pre class="output">{html.escape(data["text/plain"])}</pre>')
    return shown


def slides_of(notebook: nbformat.NotebookNode) -> list[Slide]:
    """Group an executed deck's cells into slides."""
    slides: list[Slide] = []
    for cell in notebook.cells:
        role = cell.metadata["slideshow"]["slide_type"]
        if role == "skip":
            continue
        if role == "slide":
            slides.append(Slide(title=cell.source.startswith("# ")))
        current = slides[-1]
        target = current.notes if role == "notes" else current.body
        if cell.cell_type == "markdown":
            target.append(_markdown(cell.source))
            continue
        if role == "-" and "remove-input" not in cell.metadata.get("tags", []):
            target.append(_code(cell.source))
        target.extend(_outputs(cell))
    return slides


def render(notebook: nbformat.NotebookNode, name: str) -> str:
    """The deck as one reveal.js page (assets in reveal.js/ and mathjax/ beside it)."""
    import jinja2
    from pygments.formatters import HtmlFormatter

    template = jinja2.Template(TEMPLATE.read_text(encoding="utf-8"))
    slides = slides_of(notebook)
    title = re.sub(r"[$*`]", "", notebook.cells[0].source.splitlines()[0][2:]).strip()
    return template.render(
        title=title,
        kicker=f"Lecture {int(name[:2])} · Positional encoding in Transformers",
        slides=slides,
        pygments_css=HtmlFormatter(style="default").get_style_defs(".reveal pre.code"),
        width=WIDTH,
        height=HEIGHT,
    )


# -- assets --------------------------------------------------------------------


def _fetch_reveal(target: Path) -> None:
    """reveal.js from the npm registry into ``build/cache`` (once), copied to ``target``."""
    cached = CACHE / REVEAL.replace("@", "-")
    if not (cached / "dist" / "reveal.js").is_file():
        if shutil.which("npm") is None:
            raise SystemExit("building the decks needs npm (Debian package npm) to fetch " + REVEAL)
        with tempfile.TemporaryDirectory() as scratch:
            subprocess.run(
                ["npm", "pack", REVEAL, "--silent"], cwd=scratch, check=True, capture_output=True
            )
            (tarball,) = Path(scratch).glob("reveal.js-*.tgz")
            with tarfile.open(tarball) as archive:
                archive.extractall(scratch, filter="data")
            shutil.copytree(Path(scratch) / "package", cached, dirs_exist_ok=True)
    if not (target / "dist" / "reveal.js").is_file():
        for part in ("dist", "plugin"):
            shutil.copytree(cached / part, target / part, dirs_exist_ok=True)


def _copy_mathjax(target: Path) -> None:
    source = (
        Path(sysconfig.get_paths()["purelib"]) / "sphinx-mathjax-offline" / "static" / "mathjax"
    )
    if not (target / "tex-chtml.js").is_file():
        shutil.copytree(source, target, dirs_exist_ok=True)


def _index(built: list[tuple[Path, int]]) -> str:
    rows = "\n".join(
        f'<li><a href="{html.escape(page.name)}">{html.escape(page.stem)}</a>, {count} slides</li>'
        for page, count in built
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        "<title>Lecture decks</title></head>\n<body><h1>Lecture decks</h1>\n"
        "<p>One deck per lecture. Press S in a deck for the speaker view (notes, next "
        "slide, timer), F for full screen; the .ipynb beside each deck presents live "
        "with RISE (JupyterLab, Alt+R).</p>\n"
        f"<ul>\n{rows}\n</ul></body></html>\n"
    )


def _build_one(path: Path, out: Path) -> tuple[Path, int]:
    start = time.perf_counter()
    notebook = read_deck(path)
    execute(notebook)
    nbformat.write(notebook, out / f"{path.stem}.ipynb")
    page = out / f"{path.stem}.html"
    page.write_text(render(notebook, path.stem), encoding="utf-8")
    count = len(slides_of(notebook))
    print(f"{page}: {count} slides, {time.perf_counter() - start:.1f} s", flush=True)
    return page, count


def build(paths: list[Path], out: Path = OUT, jobs: int = 1) -> list[Path]:
    """Execute and render each deck into ``out``, ``jobs`` kernels at a time.

    Returns the HTML pages written, in the order of ``paths``. A deck whose code
    fails stops the build with nbclient's error, which names the cell.
    """
    from concurrent.futures import ThreadPoolExecutor

    out.mkdir(parents=True, exist_ok=True)
    _fetch_reveal(out / "reveal.js")
    _copy_mathjax(out / "mathjax")
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:  # each deck: its own kernel
        built = list(pool.map(lambda path: _build_one(path, out), paths))
    if paths == decks():
        (out / "index.html").write_text(_index(built), encoding="utf-8")
    return [page for page, _ in built]


# -- in the browser ------------------------------------------------------------

#: Visits every slide of a deck and returns, per slide, what does not fit the canvas.
#: Coordinates are the canvas's (reveal.js scales it to the window): an element is
#: "out" when its box leaves the canvas, a code or output block is "clipped" when its
#: text is wider or taller than its box, a figure is "scaled" when it is shown at a
#: size other than the one it was drawn at (drawn at projection size means shown 1:1).
MEASURE = r"""
(async () => {
  const started = Date.now();
  while (!(document.querySelector(".reveal.ready") && window.MathJax
           && MathJax.startup && MathJax.startup.promise)) {
    if (Date.now() - started > 30000) return {error: "reveal.js or MathJax did not start"};
    await new Promise(r => setTimeout(r, 50));
  }
  await MathJax.startup.promise;
  await document.fonts.ready;
  const frame = () => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  const config = Reveal.getConfig();
  const slides = Reveal.getSlides();
  const report = [];
  const texErrors = [...document.querySelectorAll("mjx-merror")]
    .map(e => e.getAttribute("data-mjx-error"));
  for (let k = 0; k < slides.length; k++) {
    const slide = slides[k];
    const at = Reveal.getIndices(slide);
    Reveal.slide(at.h, at.v);
    await frame();
    const scale = Reveal.getScale();
    const canvas = document.querySelector(".reveal .slides").getBoundingClientRect();
    const problems = [];
    const where = (e) => {
      const text = (e.innerText || e.getAttribute("alt") || e.tagName).trim();
      const start = Array.from(text).slice(0, 40).join("");  // whole characters
      return e.tagName.toLowerCase() + " '" + start.replace(/\s+/g, " ") + "'";
    };
    const inCanvas = (r) => ({
      left: (r.left - canvas.left) / scale, right: (r.right - canvas.left) / scale,
      top: (r.top - canvas.top) / scale, bottom: (r.bottom - canvas.top) / scale,
    });
    // screen-reader copies of formulas are drawn nowhere: leave them out
    const shown = [...slide.querySelectorAll("*")]
      .filter(e => !e.closest("aside.notes, mjx-assistive-mml"));
    const reported = new Set();  // one line for the outermost element that leaves
    for (const e of [slide, ...shown]) {
      if (reported.has(e.parentElement)) { reported.add(e); continue; }
      const r = e.getBoundingClientRect();
      if (r.width === 0 && r.height === 0) continue;
      const c = inCanvas(r);
      const out = [];
      const [below, right] = [c.bottom - config.height, c.right - config.width];
      if (below > 1) out.push(`${Math.round(below)} px below`);
      if (right > 1) out.push(`${Math.round(right)} px right`);
      if (c.top < -1) out.push(`${Math.round(-c.top)} px above`);
      if (c.left < -1) out.push(`${Math.round(-c.left)} px left`);
      if (r.bottom > innerHeight + 1 || r.right > innerWidth + 1) out.push("off screen");
      if (out.length) {
        problems.push(`out: ${where(e)} ${out.join(", ")}`);
        reported.add(e);
      }
    }
    for (const e of slide.querySelectorAll("pre, mjx-container[display], table")) {
      if (e.closest("aside.notes")) continue;
      // a formula's box may be a pixel or two shorter than its glyphs: only its width counts
      const tall = e.tagName === "PRE" && e.scrollHeight > e.clientHeight + 1;
      if (e.scrollWidth > e.clientWidth + 1 || tall)
        problems.push(`clipped: ${where(e)} ${e.scrollWidth}x${e.scrollHeight} in ` +
                      `${e.clientWidth}x${e.clientHeight}`);
    }
    const figures = [];
    for (const img of slide.querySelectorAll("img")) {
      if (img.closest("aside.notes")) continue;
      if (!img.complete || img.naturalWidth === 0) { problems.push("figure not loaded"); continue; }
      const drawn = [img.naturalWidth, img.naturalHeight];
      const shownAt = [img.clientWidth, img.clientHeight];
      figures.push({drawn, shown: shownAt});
      if (Math.abs(shownAt[0] - drawn[0]) > 2 || Math.abs(shownAt[1] - drawn[1]) > 2)
        problems.push(`scaled: figure drawn ${drawn.join("x")} shown ${shownAt.join("x")}`);
    }
    const number = document.querySelector(".reveal .slide-number");
    const numberText = number && getComputedStyle(number).display !== "none"
      ? number.innerText.trim() : "";
    if (!numberText) problems.push("no slide number shown");
    const notes = slide.querySelector("aside.notes");
    // prose: the words a reader reads on the slide, a formula counted as one word
    const prose = slide.cloneNode(true);
    prose.querySelectorAll("aside.notes, pre, img").forEach(e => e.remove());
    prose.querySelectorAll("mjx-container").forEach(e => e.replaceWith(" x "));
    const proseWords = prose.textContent.split(/\s+/).filter(w => /[A-Za-z0-9]/.test(w)).length;
    const code = [...slide.querySelectorAll("pre.code")]
      .filter(e => !e.closest("aside.notes"));
    report.push({
      slide: k + 1,
      title: (slide.querySelector("h1, h2") || {innerText: ""}).innerText.trim(),
      number: numberText,
      proseWords,
      problems,
      figures,
      codeLines: code.map(e => e.innerText.split("\n").length),
      notesWords: notes ? notes.innerText.split(/\s+/).filter(Boolean).length : 0,
    });
  }
  Reveal.slide(0, 0);
  return {
    ready: Boolean(document.querySelector(".reveal.ready")),
    width: config.width, height: config.height,
    viewport: [innerWidth, innerHeight],
    speakerView: Boolean(Reveal.getPlugin && Reveal.getPlugin("notes")),
    mathContainers: document.querySelectorAll("mjx-container").length,
    texErrors,
    slides: report,
  };
})()
"""


#: Waits for reveal.js, MathJax and the fonts; returns the number of slides.
READY = MEASURE.split("  const frame")[0] + "  return Reveal.getTotalSlides();\n})()\n"


def measure(pages: list[Path], executable: str | None = None) -> dict[str, dict]:
    """Every slide of every page measured at WIDTH x HEIGHT in headless Chromium."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import browser

    found = {}
    with browser.Chromium(executable, width=WIDTH, height=HEIGHT) as chrome:
        for page in pages:
            visit = chrome.visit(page.as_uri(), MEASURE, viewport=(WIDTH, HEIGHT))
            found[page.stem] = {"visit": visit, **(visit.result or {})}
    return found


def problems(measured: dict[str, dict]) -> list[str]:
    """One line per problem found by :func:`measure`, named by deck and slide number."""
    lines = []
    for deck, seen in measured.items():
        if seen.get("error"):
            lines.append(f"{deck}: {seen['error']}")
            continue
        for slide in seen["slides"]:
            found = list(slide["problems"])
            if slide["proseWords"] > WORDS:
                found.append(
                    f"{slide['proseWords']} words of prose (at most {WORDS}:"
                    " move the rest to the speaker notes)"
                )
            if not slide["notesWords"]:
                found.append("no speaker notes (a 'Note:' line)")
            lines += [f"{deck} slide {slide['slide']}: {p}" for p in found]
    return lines


def screenshot(pages: list[Path], shots: Path) -> list[Path]:
    """One PNG per slide of each page (the page reopened at each slide)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import browser

    shots.mkdir(parents=True, exist_ok=True)
    written = []
    with browser.Chromium(width=WIDTH, height=HEIGHT) as chrome:
        for page in pages:
            count = chrome.visit(page.as_uri(), READY, viewport=(WIDTH, HEIGHT)).result
            for number in range(1, count + 1):
                png = shots / f"{page.stem}-{number:02d}.png"
                chrome.visit(
                    f"{page.as_uri()}#/{number - 1}",
                    READY,
                    viewport=(WIDTH, HEIGHT),
                    screenshot=png,
                )
                written.append(png)
    return written


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("build", "check", "screenshot"):
        print(__doc__)
        return 2
    command, args, out, jobs = argv[0], argv[1:], OUT, 1
    if "--out" in args:
        at = args.index("--out")
        out, args = Path(args[at + 1]).resolve(), args[:at] + args[at + 2 :]
    if "--jobs" in args:
        at = args.index("--jobs")
        jobs, args = int(args[at + 1]), args[:at] + args[at + 2 :]
    paths = decks(args)
    if command == "build":
        build(paths, out, jobs=jobs)
        return 0
    pages = [out / f"{p.stem}.html" for p in paths]
    missing = [p.name for p in pages if not p.is_file()]
    if missing:
        print(f"not built yet (make slides): {missing}")
        return 1
    if command == "screenshot":
        for png in screenshot(pages, out / "screenshots"):
            print(png)
        return 0
    measured = measure(pages)
    for deck, seen in measured.items():
        print(f"{deck}: {len(seen.get('slides', []))} slides")
    found = problems(measured)
    print("\n".join(found) or "every slide fits 1280x720")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
