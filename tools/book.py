"""Build the HTML book, check it as a reader's browser would see it, take a screenshot.

    python tools/book.py build --execute      # make book: run every chapter, build, check
    python tools/book.py build --no-execute [--out DIR]   # make test: stored outputs, check
    python tools/book.py check [--html DIR]   # check an existing build
    python tools/book.py browse [--html DIR] [--page 05_decay ...]   # every chapter in Chromium
    python tools/book.py screenshot [--page 05_decay ...]   # PNGs in screenshots/

The check fails (exit 1) when a built page loads anything from the network (a
script, stylesheet, font or image from a CDN), when MathJax is not served from
the build, when a chapter of the table of contents is missing or lacks its
title, or when a chapter's figures are missing from its page.

browse opens every chapter page from disk (file://) in headless Chromium
(tools/browser.py says which binary; $PE_BOOK_CHROMIUM overrides) and fails when
MathJax left a formula untypeset or raw TeX in the text, reported a TeX error or
an undefined macro, when an image did not load, when the page logged a console
error or an uncaught exception, or when it requested anything but local files.
tests/test_book_in_browser.py runs the same check on every chapter.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import browser  # tools/browser.py, next to this file

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
HTML = NOTEBOOKS / "_build" / "html"
MATHJAX = "_static/mathjax/tex-chtml.js"

# Anything a page *loads* (not a link the reader may click) must be local.
LOADED = re.compile(
    r"<(?:script|img|iframe|source|audio|video)\b[^>]*\bsrc\s*=\s*[\"']([^\"']+)[\"']"
    r"|<link\b[^>]*\bhref\s*=\s*[\"']([^\"']+)[\"']",
    re.IGNORECASE,
)
CSS_URL = re.compile(r"url\(\s*[\"']?((?:https?:)?//[^\"')]+)", re.IGNORECASE)
REMOTE = re.compile(r"^(?:https?:)?//", re.IGNORECASE)
CDN_WORDS = re.compile(
    r"cdn\.jsdelivr|cdnjs\.|unpkg\.com|fonts\.googleapis|mathjax@", re.IGNORECASE
)


def toc_pages() -> list[str]:
    """Every page of the table of contents in its order (root first): chapters and appendices."""
    toc = yaml.safe_load((NOTEBOOKS / "_toc.yml").read_text())
    stems = [toc["root"]]
    for part in toc.get("parts", []):
        stems += [entry["file"] for entry in part.get("chapters", [])]
    return stems


def toc_chapters() -> list[str]:
    """Notebook stems in table-of-contents order (root first); appendix pages (.md) left out."""
    return [stem for stem in toc_pages() if (NOTEBOOKS / f"{stem}.ipynb").is_file()]


def page_title(stem: str) -> str:
    """A page's title: the first heading of its notebook, or of its Markdown file."""
    if (NOTEBOOKS / f"{stem}.ipynb").is_file():
        return notebook_title_and_figures(stem)[0]
    text = (NOTEBOOKS / f"{stem}.md").read_text(encoding="utf-8")
    return re.search(r"^# (.+)$", text, re.M).group(1).strip()


def markdown_tables(stem: str) -> int:
    """How many Markdown tables a chapter holds, in its text and in its Markdown outputs."""
    nb = json.loads((NOTEBOOKS / f"{stem}.ipynb").read_text(encoding="utf-8"))
    texts = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"]
    texts += [
        "".join(out["data"]["text/markdown"])
        for c in nb["cells"]
        if c["cell_type"] == "code"
        for out in c.get("outputs", [])
        if "text/markdown" in out.get("data", {})
    ]
    separator = re.compile(r"^\|(\s*:?-{3,}:?\s*\|)+\s*$", re.M)
    return sum(len(separator.findall(t)) for t in texts)


def notebook_title_and_figures(stem: str) -> tuple[str, int]:
    nb = json.loads((NOTEBOOKS / f"{stem}.ipynb").read_text(encoding="utf-8"))
    first = "".join(nb["cells"][0]["source"]).splitlines()[0]
    figures = sum(
        "image/png" in out.get("data", {})
        for cell in nb["cells"]
        if cell["cell_type"] == "code"
        for out in cell.get("outputs", [])
    )
    return first.lstrip("# ").strip(), figures


def has_math(stem: str) -> bool:
    """Whether a chapter's text (or a Markdown output) holds TeX that MathJax must typeset."""
    nb = json.loads((NOTEBOOKS / f"{stem}.ipynb").read_text(encoding="utf-8"))
    texts = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"]
    texts += [
        "".join(out["data"]["text/markdown"])
        for c in nb["cells"]
        if c["cell_type"] == "code"
        for out in c.get("outputs", [])
        if "text/markdown" in out.get("data", {})
    ]
    code = re.compile(r"```.*?```|`[^`\n]*`", re.S)
    return any(re.search(r"\$|\\begin\{", code.sub("", text)) for text in texts)


def _straight(text: str) -> str:
    """``text`` with typographic quotes made straight (Sphinx's smartquotes curl them)."""
    return text.translate(str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"'}))


def check(html_dir: Path = HTML) -> list[str]:
    """Every problem found in the built book (empty list: all good)."""
    problems: list[str] = []
    pages = sorted(html_dir.rglob("*.html"))
    if not pages:
        return [f"no HTML pages under {html_dir.relative_to(ROOT)}: build the book first"]
    for page in pages:
        text = page.read_text(encoding="utf-8", errors="replace")
        rel = page.relative_to(html_dir)
        if str(ROOT) in text:
            problems.append(f"{rel}: holds this clone's path {ROOT}")
        for match in LOADED.finditer(text):
            url = match.group(1) or match.group(2)
            if REMOTE.match(url):
                problems.append(f"{rel}: loads {url} from the network")
        for script in re.findall(r"<script\b[^>]*>(.*?)</script>", text, re.S | re.I):
            if CDN_WORDS.search(script):
                problems.append(
                    f"{rel}: an inline script mentions a CDN ({CDN_WORDS.search(script)[0]})"
                )
    for asset in list(html_dir.rglob("*.css")):
        for url in CSS_URL.findall(asset.read_text(encoding="utf-8", errors="replace")):
            problems.append(f"{asset.relative_to(html_dir)}: CSS loads {url}")
    if not (html_dir / MATHJAX).is_file():
        problems.append(f"{MATHJAX} is missing: MathJax is not served from the build")
    for stem in sorted(set(toc_pages()) - set(toc_chapters())):  # the appendices (.md)
        page = html_dir / f"{stem}.html"
        title = page_title(stem)
        text = html.unescape(page.read_text(encoding="utf-8")) if page.is_file() else ""
        if not page.is_file() or _straight(title) not in _straight(text):
            problems.append(f"appendix {stem}: no page {page.name} with its title {title!r}")
    for stem in toc_chapters():
        page = html_dir / f"{stem}.html"
        if not page.is_file():
            problems.append(f"chapter {stem}: no page {page.name}")
            continue
        text = page.read_text(encoding="utf-8")
        title, figures = notebook_title_and_figures(stem)
        heading = re.search(r"<h1\b[^>]*>(.*?)</h1>", text, re.S)
        heading_text = (
            html.unescape(re.sub(r"<[^>]+>", "", heading.group(1))).strip() if heading else ""
        )
        if _straight(title) not in _straight(heading_text):  # Sphinx curls the quotes
            problems.append(
                f"chapter {stem}: title {title!r} not in its page's <h1> ({heading_text!r})"
            )
        if MATHJAX not in text:
            problems.append(f"chapter {stem}: page does not load the local MathJax ({MATHJAX})")
        tables = markdown_tables(stem)
        rendered = len(re.findall(r"<table\b", text))
        if rendered < tables:
            problems.append(
                f"chapter {stem}: {tables} Markdown tables in the notebook (text and outputs),"
                f" {rendered} HTML tables on the page"
            )
        images = re.findall(r"<img\b[^>]*src=\"([^\"]+\.png)\"", text)
        missing = [src for src in images if not (page.parent / src).resolve().is_file()]
        if len(images) < figures or missing:
            problems.append(
                f"chapter {stem}: {figures} figures in the notebook, {len(images)} on the page, "
                f"{len(missing)} missing files"
            )
    return problems


def build(execute: bool, out: Path | None = None) -> int:
    """Build the book (into notebooks/_build, or ``out``/_build), then check it."""
    config = yaml.safe_load((NOTEBOOKS / "_config.yml").read_text())
    config["execute"]["execute_notebooks"] = "force" if execute else "off"
    _default_colour_mode(config)
    absolute_local_extensions(config)
    build_root = (out or NOTEBOOKS).resolve()
    shutil.rmtree(build_root / "_build", ignore_errors=True)
    with tempfile.TemporaryDirectory() as tmp:
        config_path = Path(tmp) / "_config.yml"
        config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        command = [
            sys.executable,
            "-m",
            "jupyter_book",
            "build",
            str(NOTEBOOKS),
            "--config",
            str(config_path),
            "--path-output",
            str(build_root),
            "--warningiserror",
            "--keep-going",
            "--quiet",
        ]
        jupyter_book = shutil.which("jupyter-book", path=str(Path(sys.executable).parent))
        if jupyter_book:
            command[:3] = [jupyter_book]
        result = subprocess.run(command, cwd=ROOT)
    if result.returncode:
        print("jupyter-book build failed", file=sys.stderr)
        return result.returncode
    return report(build_root / "_build" / "html")


def absolute_local_extensions(config: dict) -> None:
    """Make ``sphinx.local_extensions`` paths absolute (relative to notebooks/).

    Jupyter Book resolves them against the folder of the config file it is given,
    and the builds here pass a modified copy from a temporary folder.
    """
    extensions = config.get("sphinx", {}).get("local_extensions") or {}
    for name, path in extensions.items():
        extensions[name] = str((NOTEBOOKS / path).resolve())


def _default_colour_mode(config: dict) -> None:
    """Give the theme a default colour mode, so a first visit logs no console error.

    pydata-sphinx-theme (under sphinx-book-theme) logs "Got invalid theme mode" to
    the console on a reader's first visit unless ``html_context["default_mode"]`` is
    set; its own default, "auto", is what the pages fall back to anyway. Set here
    (unless notebooks/_config.yml sets it) because Jupyter Book's ``html:`` section
    has no key for it.
    """
    options = config.setdefault("sphinx", {}).setdefault("config", {})
    options.setdefault("html_context", {}).setdefault("default_mode", "auto")


def report(html_dir: Path = HTML) -> int:
    """Print the HTML check's problems (exit code 1) or its summary (0)."""
    problems = check(html_dir)
    for problem in problems:
        print("HTML check:", problem, file=sys.stderr)
    pages = len(list(html_dir.rglob("*.html")))
    if problems:
        print(f"HTML check: {len(problems)} problems in {pages} pages", file=sys.stderr)
        return 1
    print(
        f"HTML check: {pages} pages, {len(toc_chapters())} chapters with their titles and figures, "
        "MathJax served locally, nothing loaded from the network"
    )
    print(f"The book: {html_dir / 'index.html'}")
    return 0


# Evaluated in each chapter page once it has loaded: waits for MathJax's first
# typesetting and for every image, then reports what a reader would see.
PAGE_PROBE = r"""
(async () => {
  const started = Date.now();
  while (!(window.MathJax && MathJax.startup && MathJax.startup.promise)) {
    if (Date.now() - started > 20000) return {mathjax: false};
    await new Promise(resolve => setTimeout(resolve, 50));
  }
  await MathJax.startup.promise;
  for (const img of document.images) img.loading = "eager";
  await Promise.all([...document.images].map(img => img.decode().catch(() => null)));
  const verbatim = "script, style, noscript, textarea, pre, code, .highlight, mjx-container";
  const rawTex = /\$\$|\\\(|\\\)|\\\[|\\\]|\$[^$\s][^$]*\$|\\begin\{/;
  const raw = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (!node.parentElement.closest(verbatim) && rawTex.test(node.textContent)) {
      raw.push(node.textContent.trim().slice(0, 120));
    }
  }
  const containers = document.querySelectorAll("mjx-container");
  // MathJax's noundefined extension shows an unknown \macro as red text: in the
  // MathML it keeps for screen readers that is an <mtext mathcolor="red">\macro</mtext>.
  const undefinedMacros = [...document.querySelectorAll("mjx-assistive-mml mtext")]
    .map(t => t.textContent).filter(t => /^\\[A-Za-z]+/.test(t));
  // a table wider than the box it sits in is cut off at its edge (readers must scroll it)
  const column = document.querySelector("article.bd-article") || document.body;
  const wideTables = [...column.querySelectorAll("table")]
    .filter(t => t.getBoundingClientRect().width > t.parentElement.clientWidth + 1)
    .map(t => `${Math.round(t.getBoundingClientRect().width)} px > ${t.parentElement.clientWidth}`
              + " px: " + t.innerText.replace(/\s+/g, " ").trim().slice(0, 50));
  return {
    mathjax: true,
    wideTables,
    math: document.querySelectorAll(".math").length,
    containers: containers.length,
    untypeset: [...document.querySelectorAll(".math")]
      .filter(m => !m.querySelector("mjx-container"))
      .map(m => m.textContent.trim().slice(0, 80)),
    texErrors: [...document.querySelectorAll("mjx-merror")]
      .map(e => e.getAttribute("data-mjx-error") || e.textContent.slice(0, 80)),
    undefinedMacros,
    raw,
    images: [...document.images].map(img => ({src: img.getAttribute("src"),
                                               width: img.naturalWidth})),
  };
})()
"""


def page_problems(visit: browser.PageVisit, expect_math: bool) -> list[str]:
    """What is wrong with one chapter page as Chromium rendered it (empty: all good)."""
    seen = visit.result or {}
    problems: list[str] = []
    if not seen.get("mathjax"):
        return ["MathJax never started (window.MathJax.startup missing after 20 s)"]
    if expect_math and seen["containers"] == 0:
        problems.append("the chapter's text has TeX but MathJax typeset no formula")
    problems += [f"formula not typeset: {t!r}" for t in seen["untypeset"]]
    problems += [f"MathJax error: {e!r}" for e in seen["texErrors"]]
    problems += [f"undefined TeX macro shown: {t!r}" for t in seen["undefinedMacros"]]
    problems += [f"raw TeX left in the text: {t!r}" for t in seen["raw"]]
    problems += [f"image did not load: {img['src']}" for img in seen["images"] if not img["width"]]
    problems += [f"table wider than the text column: {t}" for t in seen.get("wideTables", [])]
    problems += [f"console: {e}" for e in visit.console_errors]
    problems += [f"network: requested {url}" for url in visit.remote_requests()]
    problems += [f"load: {f}" for f in visit.failed]
    return problems


def browse(html_dir: Path, pages: list[str], chromium: str | None = None) -> int:
    """Open chapter pages in headless Chromium; print what each shows; 1 if any is wrong."""
    found = chromium or browser.find_chromium()
    if not found:
        print(f"browse: no Chromium: {browser.INSTALL_HINT}", file=sys.stderr)
        return 1
    if not (html_dir / "index.html").is_file():
        print(f"browse: no book under {html_dir}: run make html-check first", file=sys.stderr)
        return 1
    failures = 0
    with browser.Chromium(found) as chrome:
        for stem in pages:
            visit = chrome.visit((html_dir / f"{stem}.html").as_uri(), PAGE_PROBE)
            problems = page_problems(visit, has_math(stem))
            seen = visit.result or {}
            print(
                f"browse {stem}: {seen.get('containers', 0)} formulas typeset, "
                f"{len(seen.get('images', []))} images, {len(visit.requests)} local requests, "
                f"{len(problems)} problems"
            )
            for problem in problems:
                print(f"  {stem}: {problem}", file=sys.stderr)
            failures += bool(problems)
    if failures:
        print(f"browse: {failures} of {len(pages)} pages have problems", file=sys.stderr)
        return 1
    print(f"browse: {len(pages)} pages render in {found} with every formula and image")
    return 0


def screenshot(pages: list[str], height: int = 2400, html_dir: Path = HTML) -> int:
    """Save each page's first ``height`` pixels (after MathJax) to screenshots/<page>.png."""
    found = browser.find_chromium()
    if not found:
        print(f"screenshot: no Chromium: {browser.INSTALL_HINT}", file=sys.stderr)
        return 1
    out_dir = ROOT / "screenshots"
    out_dir.mkdir(exist_ok=True)
    with browser.Chromium(found, height=height) as chrome:
        for page in pages:
            out = out_dir / f"{page}.png"
            chrome.visit((html_dir / f"{page}.html").as_uri(), PAGE_PROBE, screenshot=out)
            print(f"screenshot: {out}")
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    build_parser = sub.add_parser("build", help="build the HTML book and check it")
    build_parser.add_argument(
        "--execute",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="execute every notebook (default) or reuse stored outputs",
    )
    build_parser.add_argument(
        "--out", type=Path, help="build into OUT/_build/html instead of notebooks/_build/html"
    )
    check_parser = sub.add_parser("check", help="check an existing build")
    browse_parser = sub.add_parser("browse", help="open chapter pages in headless Chromium")
    for sub_parser in (check_parser, browse_parser):
        sub_parser.add_argument("--html", type=Path, default=HTML, help="the built book")
    browse_parser.add_argument(
        "--page", action="append", help="a chapter (repeatable; default: every chapter)"
    )
    shot = sub.add_parser("screenshot", help="render pages in headless Chromium")
    shot.add_argument("--page", action="append", help="a chapter (repeatable; 01_symmetry)")
    shot.add_argument("--height", type=int, default=2400, help="window height in pixels")
    args = parser.parse_args(argv)
    if args.command == "build":
        return build(args.execute, args.out)
    if args.command == "check":
        return report(args.html)
    if args.command == "browse":
        return browse(args.html, args.page or toc_chapters())
    return screenshot(args.page or ["01_symmetry"], args.height)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
