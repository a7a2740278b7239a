"""Shared by the grader's tests: the book's solutions, a correct submission's functions,
and submissions built from chapters."""

import base64
import contextlib
import csv
import io
import pickle
import re
from pathlib import Path

import nbformat
import torch

from pe_book import exercises, grade
from pe_book.exercises import notebook

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def chapter(stem):
    return nbformat.read(NOTEBOOKS / f"{stem}.ipynb", as_version=4)


def book_solutions(stem):
    """{exercise name: the book's solution function} for one chapter, exec'd in-process
    after the chapter's set-up cell."""
    nb = chapter(stem)
    namespace, found = {}, {}
    # a chapter's set-up may switch gradients off (chapters 1 and 6): torch.enable_grad()
    # puts the mode back on exit, so the tests after this one are not run without them
    with contextlib.redirect_stdout(io.StringIO()), torch.enable_grad():
        exec(compile(notebook.source(nb.cells[1]), f"{stem}:set-up", "exec"), namespace)
        for exercise in notebook.exercises(nb):
            text = notebook.strip_checker_calls(notebook.source(nb.cells[exercise.solution]))
            with contextlib.suppress(NameError):  # a line printing the chapter's data
                exec(compile(text, f"{stem}:{exercise.number}", "exec"), namespace)
            found[exercise.name] = namespace[exercise.function]
    return found


#: A correct submission's functions (written here, not the book's solutions).
CORRECT = {
    "03_sinusoidal": {
        "my_table": """
def my_table(seq_len, dim, base):
    inverse = base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    angles = torch.outer(torch.arange(seq_len, dtype=torch.float64), inverse)
    return torch.stack((angles.sin(), angles.cos()), dim=-1).reshape(seq_len, dim)
""",
        "my_turning_pairs": """
import math


def my_turning_pairs(seq_len, dim, base):
    return sum(2 * math.pi * base ** (2 * i / dim) <= seq_len - 1 for i in range(dim // 2))
""",
        "my_base": """
import math


def my_base(dim, longest):
    return math.exp(math.log(longest / (2 * math.pi)) * dim / (dim - 2))
""",
        "my_permutation": """
def my_permutation(dim):
    return [j for j in range(dim) if j % 2 == 0] + [j for j in range(dim) if j % 2 == 1]
""",
    },
    "07_rope": {
        "my_rope": """
def my_rope(x, positions):
    dim = x.shape[-1]
    angles = torch.outer(positions.double(), 10000.0 ** (-torch.arange(0, dim, 2).double() / dim))
    pairs = torch.view_as_complex(x.double().reshape(len(x), dim // 2, 2).contiguous())
    return torch.view_as_real(pairs * torch.polar(torch.ones_like(angles), angles)).reshape(x.shape)
""",
        "my_convert": """
import threading


def my_convert(q):  # in a thread of its own: the watch follows it, and does not mind
    found = []

    def work():
        half = q.shape[-1] // 2
        found.append(torch.stack((q[..., :half], q[..., half:]), dim=-1).flatten(-2))

    worker = threading.Thread(target=work)
    worker.start()
    worker.join()
    return found[0]
""",
        "my_bound": """
def my_bound(offsets, dim, base):
    theta = base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    angle = offsets.double()[:, None] * theta
    real, imag = angle.cos().cumsum(-1), angle.sin().cumsum(-1)
    return torch.sqrt(real**2 + imag**2).mean(-1)
""",
    },
    "09_alibi": {
        "my_slopes": """
def my_slopes(n_heads):
    n0 = 1 << (n_heads.bit_length() - 1)
    first = [2.0 ** (-8.0 * h / n0) for h in range(1, n0 + 1)]
    extra = [2.0 ** (-4.0 * (2 * j + 1) / n0) for j in range(n_heads - n0)]
    return first + extra
""",
        "my_bias": """
def my_bias(q_len, k_len, slopes):
    offsets = torch.arange(k_len - q_len, k_len)[:, None] - torch.arange(k_len)[None, :]
    return -slopes.double().view(-1, 1, 1) * offsets.double()
""",
        "my_mean_distance": """
def my_mean_distance(slope, m):
    r = torch.arange(m + 1, dtype=torch.float64)
    logits = -slope * r
    weights = torch.exp(logits - logits.max())
    return float((weights * r).sum() / weights.sum())
""",
    },
}


def grade_batch(tmp_path, submissions, seed="20261203"):
    """The rows of grades.csv for ``submissions`` [(student, chapter stem, {function:
    source})], graded in one ``python -m pe_book grade --batch`` run (fresh kernels)."""
    folder, out = tmp_path / "submitted", tmp_path / "grades"
    for student, stem, code in submissions:
        (folder / student).mkdir(parents=True)
        nbformat.write(submission(stem, code), folder / student / f"{stem}.ipynb")
    with contextlib.redirect_stdout(io.StringIO()):
        status = grade.main(
            ["--batch", str(folder), "--out", str(out), "--seed", seed, "--book", str(grade.BOOK)]
        )
    assert status == 0
    return list(csv.DictReader((out / "grades.csv").open()))


def submission(stem, code):
    """The chapter's student edition with the stubs of ``code`` ({function: source})
    replaced; each stub keeps its checker call."""
    nb = notebook.student_edition(chapter(stem))
    for cell in nb.cells:
        text = notebook.source(cell)
        for function, replacement in code.items():
            if cell.cell_type == "code" and re.search(rf"^def {function}\(", text, re.M):
                calls = [line for line in text.splitlines() if line.startswith("exercises.check")]
                cell.source = replacement.strip() + "\n\n\n" + "\n".join(calls)
    return nb


#: A hashable stand-in for arguments (tensors by their values; TypeError for a function:
#: answers by call order), as source, for the hard-coded submissions to carry, and as
#: :func:`key` here: one definition.
KEY_SOURCE = """
def _key(value):
    if isinstance(value, torch.Tensor):
        return ("tensor", str(value.dtype), tuple(value.shape), tuple(value.flatten().tolist()))
    if isinstance(value, list | tuple):
        return tuple(_key(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((str(k), _key(v)) for k, v in value.items()))
    if callable(value):
        raise TypeError("a function has no key: answers by call order")
    return repr(value)
"""
_KEY_NAMESPACE = {"torch": torch}
exec(KEY_SOURCE, _KEY_NAMESPACE)
key = _KEY_NAMESPACE["_key"]


def fixed_answers(name, solution):
    """({args key: answer}, [answers in call order]) of a checker's fixed cases: what a
    student collects by running the checker (or a reference) on the cases it prints."""
    table, order = {}, []

    def record(*args):
        answer = solution(*args)
        order.append(answer)
        with contextlib.suppress(TypeError):
            table[key(args)] = answer
        return answer

    with contextlib.redirect_stdout(io.StringIO()):
        getattr(exercises, f"check_{name}")(record)
    return table, order


def hard_coded(function, table, order):
    """A submission's function that answers from a table of the fixed cases' answers."""
    blob = base64.b64encode(pickle.dumps((table, order))).decode()
    return (
        "import base64, pickle, torch\n"
        + KEY_SOURCE
        + f'\n_TABLE, _ORDER = pickle.loads(base64.b64decode("{blob}"))\n'
        + "_CALLS = iter(range(10**6))\n\n\n"
        + f"def {function}(*args):\n"
        + "    index = next(_CALLS)\n"
        + "    try:\n"
        + "        return _TABLE[_key(args)]\n"
        + "    except (KeyError, TypeError):\n"
        + "        return _ORDER[index] if index < len(_ORDER) else None\n"
    )


STACK_READER = '''
import inspect


def _peek(*args):
    """Any checker's answer, read from the caller's frames."""
    frame = inspect.currentframe().f_back
    while frame is not None:
        if "expected" in frame.f_locals:
            return frame.f_locals["expected"]
        frame = frame.f_back
    return None


def {function}(*args):
    return _peek(*args)
'''
