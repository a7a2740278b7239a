"""Build the HTML book, check it as a reader's browser would see it, take a screenshot.

    python tools/book.py build --execute      # make book: run every chapter, build, check
    python tools/book.py build --no-execute   # make test: build from the stored outputs, check
    python tools/book.py check                # check an existing build
    python tools/book.py screenshot [--page 01_symmetry]   # needs Debian's chromium

The check fails (exit 1) when a built page loads anything from the network (a
script, stylesheet, font or image from a CDN), when MathJax is not served from
the build, when a chapter of the table of contents is missing or lacks its
title, or when a chapter's figures are missing from its page.
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


def toc_chapters() -> list[str]:
    """Notebook stems in table-of-contents order (root first)."""
    toc = yaml.safe_load((NOTEBOOKS / "_toc.yml").read_text())
    stems = [toc["root"]]
    for part in toc.get("parts", []):
        stems += [entry["file"] for entry in part.get("chapters", [])]
    return stems


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


def check(html_dir: Path = HTML) -> list[str]:
    """Every problem found in the built book (empty list: all good)."""
    problems: list[str] = []
    pages = sorted(html_dir.rglob("*.html"))
    if not pages:
        return [f"no HTML pages under {html_dir.relative_to(ROOT)}: build the book first"]
    for page in pages:
        text = page.read_text(encoding="utf-8", errors="replace")
        rel = page.relative_to(html_dir)
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
        if title not in heading_text:
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


def build(execute: bool) -> int:
    config = yaml.safe_load((NOTEBOOKS / "_config.yml").read_text())
    config["execute"]["execute_notebooks"] = "force" if execute else "off"
    shutil.rmtree(NOTEBOOKS / "_build", ignore_errors=True)
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
    return report()


def report() -> int:
    problems = check()
    for problem in problems:
        print("HTML check:", problem, file=sys.stderr)
    pages = len(list(HTML.rglob("*.html")))
    if problems:
        print(f"HTML check: {len(problems)} problems in {pages} pages", file=sys.stderr)
        return 1
    print(
        f"HTML check: {pages} pages, {len(toc_chapters())} chapters with their titles and figures, "
        "MathJax served locally, nothing loaded from the network"
    )
    print(f"The book: {HTML / 'index.html'}")
    return 0


def screenshot(page: str, height: int = 2400) -> int:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print("chromium not found: apt-get install chromium", file=sys.stderr)
        return 1
    out = ROOT / "screenshots" / f"{page}.png"
    out.parent.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                f"--user-data-dir={profile}",
                f"--window-size=1280,{height}",
                "--virtual-time-budget=15000",
                "--hide-scrollbars",
                f"--screenshot={out}",
                (HTML / f"{page}.html").as_uri(),
            ],
            check=True,
            capture_output=True,
        )
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
    sub.add_parser("check", help="check an existing build")
    shot = sub.add_parser("screenshot", help="render one page in headless Chromium")
    shot.add_argument("--page", default="01_symmetry")
    shot.add_argument("--height", type=int, default=2400, help="window height in pixels")
    args = parser.parse_args(argv)
    if args.command == "build":
        return build(args.execute)
    if args.command == "check":
        return report()
    return screenshot(args.page, args.height)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
