"""python -m pe_book grade on whole classes: each kind of submission gets its mark.

For chapters 3, 7 and 9 a batch of submissions is graded in fresh kernels (the
grader's --batch mode, grades.csv and grades.json): a correct one (written here, not
the book's solution), a wrong one, the unchanged student edition, one that calls
pe_book's reference (copying), one that answers from a table of the fixed cases
(hard-coded), one that reads ``expected`` from its caller's frames (stack reading),
and the instructor's notebook (its solution cells still in it). Then three ways around
the kernel's watch (switching it off, a subprocess, a reference's source recompiled),
callable inputs that cross the boundary, and a failure message. Slow: about a minute
per chapter on an idle machine (seven kernels each).
"""

import contextlib
import csv
import io
import json
import re
from pathlib import Path

import nbformat
import pytest
import torch
from grade_helpers import (
    CORRECT,
    STACK_READER,
    book_solutions,
    fixed_answers,
    hard_coded,
    submission,
)

from pe_book import exercises, grade, sinusoidal
from pe_book.exercises import notebook

pytestmark = pytest.mark.slow

SEED = "20261203"

WRONG = {  # the usual slips: the text's formula half-remembered
    "03_sinusoidal": {
        "my_table": "def my_table(seq_len, dim, base):\n    return torch.zeros(seq_len, dim)",
        "my_turning_pairs": "def my_turning_pairs(seq_len, dim, base):\n    return dim // 2",
        "my_base": "def my_base(dim, longest):\n    return longest / (2 * 3.14159)",
        "my_permutation": "def my_permutation(dim):\n    return list(range(dim))",
    },
    "07_rope": {
        "my_rope": "def my_rope(x, positions):\n    return x.clone()",
        "my_convert": "def my_convert(q):\n    return q.clone()",
        "my_bound": "def my_bound(offsets, dim, base):\n    return torch.ones(len(offsets))",
    },
    "09_alibi": {
        "my_slopes": "def my_slopes(n_heads):\n    return [2 ** -(h + 1) for h in range(n_heads)]",
        "my_bias": (
            "def my_bias(q_len, k_len, slopes):\n    return torch.zeros(len(slopes), q_len, k_len)"
        ),
        "my_mean_distance": "def my_mean_distance(slope, m):\n    return m / 2",
    },
}

COPYING = {  # each calls pe_book's reference, or a checker's own code
    "03_sinusoidal": {
        "my_table": (
            "def my_table(seq_len, dim, base):\n    return sinusoidal_table(seq_len, dim, base)"
        ),
        "my_turning_pairs": (
            "from pe_book.exercises import ch03_sinusoidal as cheat\n\n\n"
            "def my_turning_pairs(seq_len, dim, base):\n"
            "    return cheat._turning_pairs(seq_len, dim, base)"
        ),
        "my_permutation": "def my_permutation(dim):\n    return layout_permutation(dim)",
    },
    "07_rope": {
        "my_rope": (  # a copy made before grading: the watch still knows the code
            "copy = rope.apply_rope\n\n\ndef my_rope(x, positions):\n    return copy(x, positions)"
        ),
        "my_bound": (
            "def my_bound(offsets, dim, base):\n"
            "    return decay.rope_decay_bound(offsets, dim, base)"
        ),
    },
    "09_alibi": {
        "my_slopes": "def my_slopes(n_heads):\n    return alibi.alibi_slopes(n_heads)",
        "my_bias": (
            "import threading\n\n\n"  # in another thread: the watch follows it
            "def my_bias(q_len, k_len, slopes):\n"
            "    found = []\n"
            "    worker = threading.Thread(\n"
            "        target=lambda: found.append(alibi.alibi_bias(q_len, k_len, slopes)))\n"
            "    worker.start()\n"
            "    worker.join()\n"
            "    return found[0]"
        ),
        "my_mean_distance": (
            "def my_mean_distance(slope, m):\n"
            "    return float(alibi.mean_distance(torch.tensor([slope]), m)[0])"
        ),
    },
}


def _functions(stem):
    return {
        ex.name: ex.function
        for ex in notebook.exercises(
            nbformat.read(Path(grade.BOOK) / f"{stem}.ipynb", as_version=4)
        )
    }


def _class(stem, folder):
    """Write the seven submissions of chapter ``stem`` under ``folder``/<student>/."""
    functions = _functions(stem)
    solutions = book_solutions(stem)
    tables = {name: fixed_answers(name, solutions[name]) for name in functions}
    books = {
        "correct": submission(stem, CORRECT[stem]),
        "wrong": submission(stem, WRONG[stem]),
        "empty": submission(stem, {}),
        "copying": submission(stem, COPYING[stem]),
        "hardcoded": submission(
            stem, {f: hard_coded(f, *tables[name]) for name, f in functions.items()}
        ),
        "stackreader": submission(
            stem, {f: STACK_READER.format(function=f) for f in functions.values()}
        ),
        "instructor": nbformat.read(Path(grade.BOOK) / f"{stem}.ipynb", as_version=4),
    }
    for student, nb in books.items():
        (folder / student).mkdir(parents=True)
        nbformat.write(nb, folder / student / f"{stem}.ipynb")
    return functions


@pytest.mark.parametrize("stem", sorted(CORRECT))
def test_a_class_gets_the_right_marks(tmp_path, stem):
    functions = _class(stem, tmp_path / "submitted")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = grade.main(
            [
                "--batch",
                str(tmp_path / "submitted"),
                "--out",
                str(tmp_path / "grades"),
                "--seed",
                SEED,
                "--book",
                str(grade.BOOK),
            ]
        )
    assert code == 0
    rows = list(csv.DictReader((tmp_path / "grades" / "grades.csv").open()))
    report = json.loads((tmp_path / "grades" / "grades.json").read_text())
    assert len(rows) == 7 * len(functions) == len(report["rows"])
    assert report["seed"] == "--seed" and SEED not in json.dumps(report)
    by = {(row["student"], row["name"]): row for row in rows}
    for name in functions:

        def row(student, name=name):
            return by[student, name]

        assert row("correct")["status"] == "pass" and row("correct")["marks"] == "", row("correct")
        assert float(row("correct")["points"]) == float(row("correct")["max_points"]) > 0
        assert row("wrong")["status"] == "fail", row("wrong")
        assert row("empty")["status"] == "not attempted", row("empty")
        assert row("hardcoded")["status"] == "fail", row("hardcoded")
        assert row("stackreader")["status"] == "fail", row("stackreader")
        assert "solution cell" in row("instructor")["marks"], row("instructor")
        copied = functions[name] in COPYING[stem]
        assert ("calls" in row("copying")["marks"]) == copied, row("copying")
        for student in ("wrong", "empty", "copying", "hardcoded", "stackreader", "instructor"):
            assert float(row(student)["points"]) == 0, row(student)
    totals = report["totals"]
    assert totals["correct"]["points"] == totals["correct"]["max_points"]
    assert all(totals[s]["points"] == 0 for s in totals if s != "correct")


def test_messages_say_what_is_wrong_without_the_expected_values(tmp_path):
    """Float32 angles: the message names the input class and float32, and prints no
    value of the table it expected."""
    stem = "03_sinusoidal"
    float32 = """
def my_table(seq_len, dim, base):
    inverse = base ** (-torch.arange(0, dim, 2, dtype=torch.float32) / dim)
    angles = torch.outer(torch.arange(seq_len, dtype=torch.float32), inverse)
    return torch.stack((angles.sin(), angles.cos()), dim=-1).reshape(seq_len, dim)
"""
    path = tmp_path / "alice.ipynb"
    nbformat.write(submission(stem, {"my_table": float32}), path)
    rows = grade.grade_notebook(path, grade.load_book(grade.BOOK), int(SEED))
    table = next(r for r in rows if r.name == "sinusoidal_table")
    assert table.status == "fail" and "positions in the thousands" in table.message
    assert "float32" in table.message, table.message
    expected = sinusoidal.sinusoidal_table(2000, 16, dtype=torch.float64)
    printed = {float(x) for x in re.findall(r"-?\d+\.\d{3,}", table.message)}
    assert not printed & {round(float(v), 6) for v in expected.flatten()}


def test_the_stack_reader_passes_a_readers_checker_and_not_the_grader():
    """The attack the grader closes: in the reader's own process it passes."""
    namespace = {}
    exec(STACK_READER.format(function="peek"), namespace)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exercises.check_sinusoidal_table(namespace["peek"])
    assert "all 6 cases agree" in printed.getvalue()


CALLABLES = {
    "02_taylor": {  # f arrives pickled (a partial of a module function): autograd in the kernel
        "my_taylor_terms": """
def my_taylor_terms(f, x_m, x_n, p_m, p_n):
    size = x_m.numel()
    point = torch.cat((x_m, x_n))
    g = torch.autograd.functional.jacobian(lambda v: f(v[:size], v[size:]), point)
    h = torch.autograd.functional.hessian(lambda v: f(v[:size], v[size:]), point)
    top, bottom = slice(0, size), slice(size, 2 * size)
    return torch.stack([f(x_m, x_n), p_m @ g[top], p_n @ g[bottom],
                        0.5 * p_m @ h[top, top] @ p_m, 0.5 * p_n @ h[bottom, bottom] @ p_n,
                        p_m @ h[top, bottom] @ p_n])
""",
    },
    "14_review": {  # score stays in the grader: each call is a round trip over stdin
        "my_offset_only": """
def my_offset_only(score):
    rng = torch.Generator().manual_seed(5)
    for _ in range(6):
        q, k = torch.randn(2, 8, dtype=torch.float64, generator=rng)
        m, n, c = (int(v) for v in torch.randint(0, 1000, (3,), generator=rng))
        if abs(score(q, k, m, n) - score(q, k, m + c, n + c)) > 1e-9:
            return False
    return True
""",
    },
}


@pytest.mark.parametrize("stem", sorted(CALLABLES))
def test_callable_inputs_cross_the_boundary(tmp_path, stem):
    path = tmp_path / f"{stem}.ipynb"
    nbformat.write(submission(stem, CALLABLES[stem]), path)
    rows = grade.grade_notebook(path, grade.load_book(grade.BOOK), int(SEED))
    graded = {row.name: row for row in rows}
    name = {"02_taylor": "taylor_terms", "14_review": "offset_only"}[stem]
    assert graded[name].status == "pass" and not graded[name].marks, graded[name]
    assert all(row.status == "not attempted" for row in rows if row.name != name)


EVASIONS = {  # ways around the watch in the student's kernel: each is seen and marked
    "my_rope": (
        "changed the grader's watch",
        """
import sys


def my_rope(x, positions):
    hook = sys.getprofile()
    sys.setprofile(None)  # the profile hook off while the reference runs, then back
    try:
        return rope.apply_rope(x, positions)
    finally:
        sys.setprofile(hook)
""",
    ),
    "my_convert": (
        "started a process",
        """
import pickle
import subprocess
import sys

CODE = (
    "import pickle, sys, torch; q = pickle.loads(sys.stdin.buffer.read()); "
    "half = q.shape[-1] // 2; out = torch.stack((q[..., :half], q[..., half:]), -1); "
    "sys.stdout.buffer.write(pickle.dumps(out.flatten(-2)))"
)


def my_convert(q):  # the work done in another process, out of the watch's sight
    done = subprocess.run([sys.executable, "-c", CODE], input=pickle.dumps(q), capture_output=True)
    return pickle.loads(done.stdout)
""",
    ),
    "my_bound": (
        "read pe_book's or the book's source",
        """
import inspect

namespace = dict(vars(decay))  # the reference's source, compiled under another name
exec(compile(inspect.getsource(decay.rope_decay_bound), "<mine>", "exec"), namespace)


def my_bound(offsets, dim, base):
    return namespace["rope_decay_bound"](offsets, dim, base)
""",
    ),
}


def test_the_watch_cannot_be_switched_off_or_gone_around(tmp_path):
    """Each evasion is marked: 0 points (one that reaches a reference while graded gets
    no answer either: the reference is blocked then, pe_book.exercises.blocking)."""
    path = tmp_path / "mallory.ipynb"
    nbformat.write(submission("07_rope", {f: code for f, (_, code) in EVASIONS.items()}), path)
    rows = grade.grade_notebook(path, grade.load_book(grade.BOOK), int(SEED))
    by_function = dict(zip(_functions("07_rope").values(), rows, strict=True))
    for function, (mark, _) in EVASIONS.items():
        row = by_function[function]
        assert row.status in ("pass", "error") and row.points == 0, row
        assert any(m.startswith(mark) for m in row.marks), row
