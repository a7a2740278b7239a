"""The book as one PDF: Jupyter Book's LaTeX route (XeLaTeX), then a check of the result.

    python tools/pdf.py build [--out DIR]   # make pdf: build/pdf/book.pdf from the stored outputs
    python tools/pdf.py check [PDF]         # check a built PDF and its LaTeX log
    python tools/pdf.py install             # install the TeX packages (apt-get; as root)
    python tools/pdf.py missing             # what the build needs and this machine lacks

The build reuses the outputs stored in the notebooks (like ``make html-check``): it
executes nothing. It runs ``jupyter-book build --builder latex`` (the LaTeX settings
live in notebooks/_config.yml, the table and preface fixes in tools/book_sphinx.py),
then latexmk with XeLaTeX, and copies the PDF to build/pdf/book.pdf.

The check (also tests/test_pdf.py) fails when the log holds a LaTeX error, an
undefined reference or citation, or a character missing from its font; when the
text shows ``??`` (an unresolved cross-reference); when a chapter title of
notebooks/_toc.yml is not in the text; when the page count is outside
:data:`PAGES`; or when a line runs off the page by more than :data:`OVERFULL_PT`.

Needs TeX (Debian's packages in :data:`TEX_PACKAGES`, installed by ``install`` or
``.ci/run``; nothing is downloaded at build time) and poppler-utils (pdfinfo,
pdftotext). This module imports only the standard library at the top, so
``python3 tools/pdf.py install`` runs before the project's environment exists.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
OUT = ROOT / "build" / "pdf"
PDF = OUT / "book.pdf"

#: Debian (bookworm) packages the PDF needs: XeLaTeX and the LaTeX packages Sphinx and
#: Jupyter Book load, latexmk and xindy (Sphinx's Makefile), the fonts named in
#: notebooks/_config.yml (FreeSerif, DejaVu Sans Mono, WenQuanYi Micro Hei), and
#: poppler-utils for the check. About 210 MB to download.
TEX_PACKAGES = (
    "texlive-xetex",
    "texlive-latex-recommended",
    "texlive-latex-extra",
    "texlive-fonts-recommended",
    "texlive-plain-generic",
    "latexmk",
    "xindy",
    "tex-gyre",
    "fonts-freefont-otf",
    "fonts-dejavu-core",
    "fonts-wqy-microhei",
    "poppler-utils",
)
#: Programs the build and the check run, and the package that brings each.
PROGRAMS = {
    "xelatex": "texlive-xetex",
    "latexmk": "latexmk",
    "xindy": "xindy",
    "pdfinfo": "poppler-utils",
    "pdftotext": "poppler-utils",
}
#: The page count the book should have: fewer means chapters went missing, more that
#: something (a table, a figure) blew up. Re-centre when chapters are added.
PAGES = range(150, 400)
#: A box wider than the text column by more than this runs visibly into the margin.
OVERFULL_PT = 12.0


#: Fonts notebooks/_config.yml names, and the package that brings each.
FONTS = {
    "FreeSerif": "fonts-freefont-otf",
    "DejaVu Sans Mono": "fonts-dejavu-core",
    "WenQuanYi Micro Hei": "fonts-wqy-microhei",
}


def missing_programs() -> list[str]:
    """The programs of :data:`PROGRAMS` not on the PATH, and the fonts of :data:`FONTS`
    fontconfig does not know."""
    missing = [name for name in PROGRAMS if shutil.which(name) is None]
    fc_list = shutil.which("fc-list")
    fonts = (
        subprocess.run([fc_list], capture_output=True, text=True, check=False).stdout
        if fc_list
        else ""
    )
    return missing + [name for name in FONTS if name not in fonts]


def _package(name: str) -> str:
    return PROGRAMS.get(name) or FONTS[name]


def install() -> int:
    """apt-get install :data:`TEX_PACKAGES` when a program or font is missing (root only)."""
    missing = missing_programs()
    if not missing:
        print("pdf: TeX, fonts and poppler-utils are installed")
        return 0
    command = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *TEX_PACKAGES]
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        print(
            "pdf: missing " + ", ".join(missing) + "; install them as root with\n"
            "  apt-get update && " + " ".join(command),
            file=sys.stderr,
        )
        return 1
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    started = time.monotonic()
    print(f"pdf: installing {len(TEX_PACKAGES)} Debian packages for the PDF (TeX, fonts)")
    for step in (["apt-get", "update", "-qq"], command):
        result = subprocess.run(step, env=env, stdout=subprocess.DEVNULL, check=False)
        if result.returncode:
            print(f"pdf: {' '.join(step)} failed ({result.returncode})", file=sys.stderr)
            return result.returncode
    print(f"pdf: installed in {time.monotonic() - started:.0f} s")
    return 0


def build(out: Path = OUT) -> int:
    """LaTeX from the stored outputs, then XeLaTeX; the PDF at ``out``/book.pdf, checked."""
    missing = missing_programs()
    if missing:
        print(
            f"pdf: missing {', '.join(missing)}: run `python3 tools/pdf.py install` as root "
            f"(Debian: {' '.join(sorted({_package(m) for m in missing}))})",
            file=sys.stderr,
        )
        return 3
    import yaml

    config = yaml.safe_load((NOTEBOOKS / "_config.yml").read_text())
    config["execute"]["execute_notebooks"] = "off"
    sys.path.insert(0, str(ROOT / "tools"))
    import book

    book.absolute_local_extensions(config)
    out = out.resolve()
    work = out / "work"
    shutil.rmtree(work, ignore_errors=True)
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        config_path = Path(tmp) / "_config.yml"
        config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        jupyter_book = Path(sys.executable).parent / "jupyter-book"
        command = [
            str(jupyter_book) if jupyter_book.exists() else "jupyter-book",
            "build",
            str(NOTEBOOKS),
            "--builder",
            "latex",
            "--config",
            str(config_path),
            "--path-output",
            str(work),
            "--warningiserror",
            "--keep-going",
            "--quiet",
        ]
        result = subprocess.run(command, cwd=ROOT, check=False)
    if result.returncode:
        print("pdf: jupyter-book's LaTeX build failed", file=sys.stderr)
        return result.returncode
    latex_dir = work / "_build" / "latex"
    sphinx_seconds = time.monotonic() - started
    env = {**os.environ, "LATEXMKOPTS": "-interaction=nonstopmode -halt-on-error"}
    with (latex_dir / "latexmk.out").open("w") as log:
        result = subprocess.run(
            ["make", "all-pdf"], cwd=latex_dir, env=env, stdout=log, stderr=subprocess.STDOUT
        )
    tex_seconds = time.monotonic() - started - sphinx_seconds
    built = latex_dir / "book.pdf"
    if result.returncode or not built.is_file():
        print(
            f"pdf: XeLaTeX failed; see {latex_dir / 'book.log'}:\n"
            + "\n".join(latex_errors((latex_dir / "book.log").read_text(errors="replace"))[:10]),
            file=sys.stderr,
        )
        return result.returncode or 1
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(built, out / "book.pdf")
    shutil.copyfile(latex_dir / "book.log", out / "book.log")
    print(
        f"pdf: built in {sphinx_seconds + tex_seconds:.0f} s "
        f"(Sphinx {sphinx_seconds:.0f} s, XeLaTeX {tex_seconds:.0f} s)"
    )
    return report(out / "book.pdf")


# -- the check -------------------------------------------------------------------------


@dataclass
class Findings:
    """What the check found in a PDF and its LaTeX log."""

    pages: int
    problems: list[str] = field(default_factory=list)
    overfull: list[tuple[int, float]] = field(default_factory=list)  # (page, points)


def chapter_titles() -> list[str]:
    """The title (first heading) of every page of notebooks/_toc.yml, in order."""
    sys.path.insert(0, str(ROOT / "tools"))
    import book

    return [book.page_title(stem) for stem in book.toc_pages()]


def latex_errors(log: str) -> list[str]:
    """LaTeX errors, undefined references and missing glyphs in a LaTeX log."""
    found = []
    for number, line in enumerate(log.splitlines(), 1):
        if line.startswith("!") or "LaTeX Error" in line:
            found.append(f"log line {number}: {line.strip()}")
        elif re.search(r"(Reference|Citation) `[^']*' on page \d+ undefined", line):
            found.append(f"log line {number}: {line.strip()}")
        elif line.startswith("Missing character: There is no"):
            found.append(f"log line {number}: {line.strip()}")
    return found


def overfull_boxes(log: str) -> list[tuple[int, float]]:
    """(page, points) of every overfull \\hbox, the page being the one shipped out next."""
    found: list[tuple[int, float]] = []
    pending: list[float] = []
    # "[12" opens page 12's shipout in the log; an overfull box belongs to the next one.
    for token in re.finditer(r"Overfull \\hbox \(([\d.]+)pt too wide\)|\[(\d+)(?=[\s\]<{])", log):
        if token.group(1):
            pending.append(float(token.group(1)))
        else:
            found += [(int(token.group(2)), pt) for pt in pending]
            pending = []
    return found


def pdf_text(pdf: Path) -> str:
    return subprocess.run(
        ["pdftotext", "-enc", "UTF-8", str(pdf), "-"], capture_output=True, text=True, check=True
    ).stdout


def page_count(pdf: Path) -> int:
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True)
    return int(re.search(r"^Pages:\s+(\d+)", info.stdout, re.M).group(1))


def _normal(text: str) -> str:
    text = text.replace("\u00ad", "").replace("‐", "-")
    text = text.translate(str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"'}))  # smartquotes
    return re.sub(r"\s+", " ", text).strip().casefold()


def check(pdf: Path = PDF, log: Path | None = None) -> Findings:
    """Every problem of a built PDF (and of its LaTeX log, ``book.log`` beside it)."""
    log_path = log or pdf.with_suffix(".log")
    findings = Findings(pages=page_count(pdf))
    if findings.pages not in PAGES:
        findings.problems.append(
            f"{findings.pages} pages, expected {PAGES.start} to {PAGES.stop - 1} (PAGES in "
            "tools/pdf.py): chapters missing, or a table or figure blown up"
        )
    text = _normal(pdf_text(pdf))
    for title in chapter_titles():
        if _normal(title) not in text:
            findings.problems.append(f"chapter title {title!r} not found in the PDF's text")
    unresolved = text.count("??")
    if unresolved:
        findings.problems.append(f"{unresolved} unresolved cross-references ('??') in the text")
    if not log_path.is_file():
        findings.problems.append(f"no LaTeX log at {log_path}")
        return findings
    log_text = log_path.read_text(errors="replace")
    findings.problems += latex_errors(log_text)
    findings.overfull = overfull_boxes(log_text)
    for page, points in findings.overfull:
        if points > OVERFULL_PT:
            findings.problems.append(
                f"printed page {page}: a line runs {points:.0f} pt into the margin"
                f" (over {OVERFULL_PT:g} pt)"
            )
    return findings


def report(pdf: Path = PDF) -> int:
    """Print the check's problems (exit code 1) or its summary (0)."""
    if not pdf.is_file():
        print(f"pdf: no PDF at {pdf}: run `make pdf` first", file=sys.stderr)
        return 1
    findings = check(pdf)
    for problem in findings.problems:
        print("PDF check:", problem, file=sys.stderr)
    if findings.problems:
        print(f"PDF check: {len(findings.problems)} problems in {pdf}", file=sys.stderr)
        return 1
    widest = max((points for _, points in findings.overfull), default=0.0)
    print(
        f"PDF check: {findings.pages} pages, {len(chapter_titles())} chapter titles, no '??', "
        f"no LaTeX error or missing glyph; {len(findings.overfull)} lines over the margin, "
        f"the widest by {widest:.1f} pt (limit {OVERFULL_PT:g} pt)"
    )
    print(f"The book as PDF: {pdf}")
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    build_parser = sub.add_parser("build", help="build the PDF from the stored outputs")
    build_parser.add_argument("--out", type=Path, default=OUT, help="folder for book.pdf")
    check_parser = sub.add_parser("check", help="check a built PDF")
    check_parser.add_argument("pdf", type=Path, nargs="?", default=PDF)
    sub.add_parser("install", help="apt-get install the TeX packages (as root)")
    sub.add_parser("missing", help="list the programs and fonts the build lacks (exit 1 if any)")
    args = parser.parse_args(argv)
    if args.command == "build":
        return build(args.out)
    if args.command == "check":
        return report(args.pdf)
    if args.command == "install":
        return install()
    missing = missing_programs()
    for name in missing:
        print(f"{name} (Debian package {_package(name)})")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
