"""Shared by the grader's tests: the book's solutions, and submissions built from chapters."""

import base64
import contextlib
import io
import pickle
import re
from pathlib import Path

import nbformat
import torch

from pe_book import exercises
from pe_book.exercises import notebook

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def chapter(stem):
    return nbformat.read(NOTEBOOKS / f"{stem}.ipynb", as_version=4)


def book_solutions(stem):
    """{exercise name: the book's solution function} for one chapter, exec'd in-process."""
    nb = chapter(stem)
    namespace, found = {}, {}
    # torch.enable_grad() undoes a set-up cell's torch.set_grad_enabled(False) on exit
    with contextlib.redirect_stdout(io.StringIO()), torch.enable_grad():
        exec(compile(notebook.source(nb.cells[1]), f"{stem}:set-up", "exec"), namespace)
        for exercise in notebook.exercises(nb):
            text = notebook.strip_checker_calls(notebook.source(nb.cells[exercise.solution]))
            with contextlib.suppress(NameError):  # a line printing the chapter's data
                exec(compile(text, f"{stem}:{exercise.number}", "exec"), namespace)
            found[exercise.name] = namespace[exercise.function]
    return found


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


def key(value):
    """A hashable stand-in for arguments (tensors by their values); TypeError for a function."""
    if isinstance(value, torch.Tensor):
        return ("tensor", str(value.dtype), tuple(value.shape), tuple(value.flatten().tolist()))
    if isinstance(value, list | tuple):
        return tuple(key(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((str(k), key(v)) for k, v in value.items()))
    if callable(value):
        raise TypeError("a function has no key: answers by call order")
    return repr(value)


KEY_SOURCE = """
def _key(value):
    if isinstance(value, torch.Tensor):
        return ("tensor", str(value.dtype), tuple(value.shape), tuple(value.flatten().tolist()))
    if isinstance(value, list | tuple):
        return tuple(_key(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((str(k), _key(v)) for k, v in value.items()))
    if callable(value):
        raise TypeError("no key")
    return repr(value)
"""


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
