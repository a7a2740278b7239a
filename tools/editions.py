"""The student and instructor editions of the book, from the same notebooks: make editions.

    python tools/editions.py build [--out build/editions] [--no-html]
    python tools/editions.py check [--out build/editions]   # the student edition's checks

writes, from notebooks/ as it is (stored outputs, nothing executed):

    build/editions/instructor/notebooks/   every page, every solution and answer
    build/editions/instructor/html/        its HTML book
    build/editions/student/notebooks/      the same pages without what only a lecturer sees
    build/editions/student/html/           its HTML book

The student edition removes (it does not hide) what pe_book.exercises.notebook marks
(and renumbers the execution counts of what is left 1, 2, 3, ...):
the solution cell after each exercise stub (its output goes with it), solution regions
(``### BEGIN SOLUTION`` / ``### END SOLUTION`` in code, ``<!-- BEGIN SOLUTION -->`` /
``<!-- END SOLUTION -->`` in Markdown: chapter 14's interview answers), cells tagged
``instructor``, and pages whose file name starts with ``instructor`` (with their entry in
the table of contents). Statements, stubs and checker calls stay, so every exercise
still runs and says "not attempted yet". While an edition's HTML builds, the
environment variable PE_BOOK_EDITION is "student" or "instructor", for pages that
render content per edition (written problems: pe_book.problems.render(include_answers=...)).

The HTML is built by tools/book.py (Jupyter Book 1, offline, MathJax served locally)
on the edition's copy and checked the same way as the book. ``check`` fails (exit 1)
when any solution cell's source, solution region or instructor page of notebooks/
survives anywhere in the student edition's notebooks or HTML, or a chapter lost a stub.

Each edition records where it came from in ``EDITION.txt`` (``build/editions/student/
EDITION.txt``, and a copy in its ``notebooks/``): the source commit (``git rev-parse
HEAD``) and whether the working tree had changes (``git status --porcelain``), since an
edition is built from notebooks/ as it is, committed or not. ``check`` warns (without
failing) when an edition has no such record, was built from another commit than HEAD,
or from a tree with changes: a folder built earlier and copied to students is otherwise
indistinguishable from a fresh one.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import book  # tools/book.py, next to this file

from pe_book.exercises import notebook

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
OUT = ROOT / "build" / "editions"
EDITIONS = ("instructor", "student")
RECORD = "EDITION.txt"
INSTRUCTOR_PAGE = re.compile(r"^instructor")
IGNORE = shutil.ignore_patterns("_build", ".ipynb_checkpoints", "__pycache__")


def _pages(folder: Path) -> list[Path]:
    return sorted(
        p for p in folder.iterdir() if p.suffix in (".ipynb", ".md") and not p.name.startswith("_")
    )


def _read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _write(path: Path, nb: dict) -> None:
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def _drop_from_toc(folder: Path, stems: set[str], added: list[tuple[str, str]]) -> None:
    """Take ``stems`` out of the copy's table of contents; ``added`` pages (stem, caption)
    go in as parts of their own, where the first removed page was."""
    toc_path = folder / "_toc.yml"
    toc = yaml.safe_load(toc_path.read_text(encoding="utf-8"))
    parts = toc.get("parts", [])
    where = next(
        (
            i
            for i, part in enumerate(parts)
            for e in part.get("chapters", [])
            if e.get("file") in stems
        ),
        len(parts),
    )
    for part in parts:
        part["chapters"] = [e for e in part.get("chapters", []) if e.get("file") not in stems]
    new = [{"caption": caption, "chapters": [{"file": stem}]} for stem, caption in added]
    parts[where:where] = new
    toc["parts"] = [part for part in parts if part["chapters"]]
    toc_path.write_text(yaml.safe_dump(toc, sort_keys=False), encoding="utf-8")


def _configure(folder: Path, edition: str) -> None:
    """The copy's _config.yml: its title names the edition, local extensions stay found."""
    path = folder / "_config.yml"
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    config["title"] = f"{config['title']} ({edition} edition)"
    extensions = config.get("sphinx", {}).get("local_extensions") or {}
    for name, where in extensions.items():
        extensions[name] = str((NOTEBOOKS / where).resolve())
    path.write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True), encoding="utf-8")


def _problems_page() -> str:
    """The students' page of written problems: the questions and their points, no answers."""
    from pe_book import problems

    return (
        "# Written problems\n\n"
        "Pen-and-paper problems for chapters 1 to 14, with the points each earns. The"
        " worked answers and the exam bank are in the instructor edition.\n\n"
        + problems.render(include_answers=False)
    )


#: Instructor pages that have a student counterpart: (its file stem, caption, its text).
STUDENT_COUNTERPARTS = {"instructor_problems": ("problems", "Written problems", _problems_page)}


def student_pages(folder: Path) -> list[str]:
    """Turn the copy in ``folder`` into the student edition; the pages it removed."""
    removed = {p.stem for p in _pages(folder) if INSTRUCTOR_PAGE.match(p.name)}
    for stem in removed:
        for page in folder.glob(f"{stem}.*"):
            page.unlink()
    counterparts = [
        STUDENT_COUNTERPARTS[stem] for stem in sorted(removed & STUDENT_COUNTERPARTS.keys())
    ]
    for stem, _, text in counterparts:
        (folder / f"{stem}.md").write_text(text(), encoding="utf-8")
    _drop_from_toc(folder, removed, [(stem, caption) for stem, caption, _ in counterparts])
    for page in _pages(folder):
        if page.suffix == ".ipynb":
            nb = _read(page)
            nb["cells"] = [
                c for c in nb["cells"] if "instructor" not in c["metadata"].get("tags", [])
            ]
            _write(page, renumber(notebook.student_edition(nb)))
        else:
            text = page.read_text(encoding="utf-8")
            page.write_text(notebook.MARKDOWN_REGION.sub("", text), encoding="utf-8")
    return sorted(removed)


def renumber(nb: dict) -> dict:
    """Execution counts 1, 2, 3, ... over the code cells that were run, in order, with each
    cell's ``execute_result`` numbered like its cell: the student edition drops cells, and a
    notebook whose counts skip numbers reads as run out of order."""
    count = 0
    for cell in nb["cells"]:
        if cell["cell_type"] != "code" or cell.get("execution_count") is None:
            continue
        count += 1
        cell["execution_count"] = count
        for out in cell.get("outputs", []):
            if out.get("output_type") == "execute_result":
                out["execution_count"] = count
    return nb


def _stream(cell: dict) -> str:
    return "".join("".join(out.get("text", "")) for out in cell.get("outputs", []) if "text" in out)


def secrets_of(folder: Path) -> dict[str, list[str]]:
    """What only the instructor edition may hold, page by page: the lines of solution
    cells (their sources and printed outputs), solution regions and instructor cells that
    appear nowhere else on the page (a stub's ``def`` line is the solution's too), and
    whole instructor pages (by name)."""
    found: dict[str, list[str]] = {}
    for page in _pages(folder):
        if INSTRUCTOR_PAGE.match(page.name):
            found[page.name] = [f"the page {page.stem}"]
            continue
        if page.suffix == ".ipynb":
            nb = _read(page)
            cells = nb["cells"]
            hidden = set(notebook.solution_cells(nb))
            hidden |= {
                i for i, c in enumerate(cells) if "instructor" in c["metadata"].get("tags", [])
            }
            texts = [notebook.source(cells[i]) + "\n" + _stream(cells[i]) for i in sorted(hidden)]
            public = [notebook.source(c) for i, c in enumerate(cells) if i not in hidden]
        else:
            texts, public = [], [page.read_text(encoding="utf-8")]
        for text in public:
            texts += notebook.MARKDOWN_REGION.findall(text)
            texts += [m.group(0) for m in notebook.CODE_REGION.finditer(text)]
        visible = "\n".join(
            notebook.CODE_REGION.sub("", notebook.MARKDOWN_REGION.sub("", t)) for t in public
        )
        lines = [line for text in texts for line in _fragments(text) if line not in visible]
        if lines:
            found[page.name] = lines
    return found


def answers() -> list[str]:
    """The lines of every written problem's worked answer and of the exam bank."""
    from pe_book import problems

    bank = problems.exam()  # instructor-only: its questions too
    worked = [p.answer for p in problems.problems()] + [q.answer for q in bank]
    worked += [q.question for q in bank]
    return [line for text in worked for line in _fragments(text)]


def _fragments(text: str) -> list[str]:
    """The lines of a secret worth searching for: long enough to be its own (>= 30 chars)."""
    lines = [line.strip() for line in re.split(r"<!--.*?-->|\n", text)]
    return [line for line in lines if len(line) >= 30]


def _html_text(path: Path) -> str:
    """A built page's text as a reader sees it: tags dropped, entities decoded."""
    text = re.sub(r"<script\b.*?</script>|<style\b.*?</style>", " ", path.read_text(), flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", "", text))


def check_student(out: Path = OUT) -> list[str]:
    """Problems with the student edition in ``out``: secrets that survive, stubs lost."""
    problems = []
    student = out / "student" / "notebooks"
    built = out / "student" / "html"
    student_text = {p.name: p.read_text(encoding="utf-8") for p in _pages(student)}
    for page, lines in secrets_of(NOTEBOOKS).items():
        stem = Path(page).stem
        if INSTRUCTOR_PAGE.match(page):
            if page in student_text or (built / f"{stem}.html").is_file():
                problems.append(f"{page}: an instructor page is in the student edition")
            continue
        mine = json.loads(student_text[page]) if page.endswith(".ipynb") else None
        where = {
            "notebook": "\n".join(notebook.source(c) + _stream(c) for c in mine["cells"])
            if mine
            else student_text[page]
        }
        if (built / f"{stem}.html").is_file():
            where["HTML page"] = _html_text(built / f"{stem}.html")
        for kind, text in where.items():
            surviving = [line for line in lines if line in text]
            if surviving:
                problems.append(
                    f"{page}: {len(surviving)} solution lines survive in its {kind},"
                    f" e.g. {surviving[0][:70]!r}"
                )
    worked = answers()
    for page, text in student_text.items():
        surviving = [line for line in worked if line in text]
        if surviving:
            problems.append(
                f"{page}: {len(surviving)} lines of worked answers, e.g. {surviving[0][:70]!r}"
            )
    for page in _pages(NOTEBOOKS):
        if page.suffix == ".ipynb" and not INSTRUCTOR_PAGE.match(page.name):
            stubs = len(notebook.exercises(_read(page)))
            kept = len(notebook.exercises(json.loads(student_text[page.name])))
            if kept != stubs:
                problems.append(
                    f"{page.name}: {stubs} exercise stubs, {kept} in the student edition"
                )
    return problems


def _git(*args: str) -> str | None:
    """A git command's output in ROOT, or None outside a repository or without git."""
    try:
        done = subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True, timeout=60
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout


def source() -> dict[str, str]:
    """The commit the editions are built from and the working tree's changes against it:
    {"commit": sha or "unknown", "changes": the paths `git status --porcelain` lists}."""
    head = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain") if head else None
    changed = [line[3:] for line in (status or "").splitlines() if line.strip()]
    return {"commit": head.strip() if head else "unknown", "changes": "\n".join(changed)}


def write_record(folder: Path, edition: str, found: dict[str, str]) -> Path:
    """Write ``folder/EDITION.txt``: the edition, its source commit, and whether the tree
    it was built from had changes (with the first few changed paths)."""
    changed = [c for c in found["changes"].splitlines() if c]
    tree = "clean" if not changed else (
        f"dirty ({len(changed)} changed: {', '.join(changed[:5])}"
        + (", ..." if len(changed) > 5 else "") + ")"
    )
    path = folder / RECORD
    path.write_text(
        f"edition: {edition}\nsource commit: {found['commit']}\nworking tree: {tree}\n",
        encoding="utf-8",
    )
    return path


def read_record(folder: Path) -> dict[str, str]:
    """``EDITION.txt`` of an edition as {"edition", "source commit", "working tree"}; {}
    when there is none."""
    path = folder / RECORD
    if not path.is_file():
        return {}
    pairs = (line.split(": ", 1) for line in path.read_text(encoding="utf-8").splitlines())
    return {key: value for key, value in pairs}


def source_warnings(out: Path = OUT) -> list[str]:
    """Why the editions in ``out`` may not be the book at HEAD: no record of their source
    commit, another commit than HEAD, or a working tree with changes."""
    head = source()["commit"]
    warnings = []
    for edition in EDITIONS:
        folder = out / edition
        if not folder.is_dir():
            continue
        record = read_record(folder)
        commit = record.get("source commit")
        if not commit:
            warnings.append(
                f"{edition} edition: no {RECORD}, so its source commit is unknown (built"
                " before editions recorded it): rebuild it with make editions"
            )
        elif commit != head:
            warnings.append(
                f"{edition} edition: built from commit {commit[:12]}, but HEAD is"
                f" {head[:12]}: rebuild it with make editions before handing it out"
            )
        if record.get("working tree", "clean") != "clean":
            warnings.append(
                f"{edition} edition: built from a working tree with uncommitted changes,"
                f" {record['working tree']}"
            )
    return warnings


def build(out: Path = OUT, html: bool = True) -> int:
    """Write both editions (notebooks, and HTML unless ``html`` is False) and check them."""
    found = source()
    for edition in EDITIONS:
        folder = out / edition / "notebooks"
        shutil.rmtree(out / edition, ignore_errors=True)
        shutil.copytree(NOTEBOOKS, folder, ignore=IGNORE)
        for where in (out / edition, folder):  # beside the HTML, and in the notebooks copied
            write_record(where, edition, found)
        _configure(folder, edition)
        if edition == "student":
            removed = student_pages(folder)
            print(f"student edition: pages left out: {', '.join(removed) or 'none'}")
        if html:
            os.environ["PE_BOOK_EDITION"] = edition
            book.NOTEBOOKS = folder  # tools/book.py builds and checks this copy
            code = book.build(execute=False, out=out / edition)
            book.NOTEBOOKS = NOTEBOOKS
            if code:
                return code
            shutil.move(out / edition / "_build" / "html", out / edition / "html")
            shutil.rmtree(out / edition / "_build", ignore_errors=True)
        print(f"{edition} edition: {folder}")
    for warning in source_warnings(out):
        print("warning:", warning, file=sys.stderr)
    problems = check_student(out)
    for problem in problems:
        print("student edition:", problem, file=sys.stderr)
    return 1 if problems else 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    make = sub.add_parser("build", help="write both editions and check the student one")
    make.add_argument("--out", type=Path, default=OUT)
    make.add_argument("--no-html", dest="html", action="store_false", help="notebooks only")
    verify = sub.add_parser("check", help="check an existing student edition")
    verify.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    if args.command == "build":
        return build(args.out, args.html)
    for warning in source_warnings(args.out):
        print("warning:", warning, file=sys.stderr)
    problems = check_student(args.out)
    for problem in problems:
        print("student edition:", problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
