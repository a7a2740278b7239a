"""pe_book.exercises.own_work: a practice checker fails an answer that calls the package's
own function for its exercise, names it, and leaves the package's internal calls alone."""

import inspect

import pytest
import torch

from pe_book import exercises, sinusoidal
from pe_book.exercises import graded, own_work

WRITE = "write it yourself"


def _reference(name):
    references = graded.entry(name).references
    obj = own_work._resolve(references[0]) if references else None
    return obj if inspect.isfunction(obj) else None


@pytest.mark.parametrize("name", sorted(graded.EXERCISES))
def test_the_reference_itself_fails_its_own_checker(name):
    checker = getattr(exercises, f"check_{name}", None)
    reference = _reference(name)
    if checker is None or reference is None:
        pytest.skip(f"{name}: no checker or its reference is not a function")
    try:
        checker(reference)
    except AssertionError as failed:
        message = str(failed)
    else:
        message = "passed"
    if WRITE not in message:  # the reader's signature differs from the reference's
        assert "TypeError" in message or "not attempted" in message, (name, message)
        pytest.skip(f"{name}: the reference takes other arguments than the reader")
    assert graded.entry(name).references[0] in message


def test_most_references_are_caught():
    caught = 0
    for name in graded.EXERCISES:
        checker, reference = getattr(exercises, f"check_{name}", None), _reference(name)
        if checker is None or reference is None:
            continue
        try:
            checker(reference)
        except AssertionError as failed:
            caught += WRITE in str(failed)
    assert caught >= 25, caught


def test_a_wrapper_a_clone_and_an_alias_fail_and_a_reader_s_own_code_passes(capsys):
    def wrapper(shift, dim, base):
        return sinusoidal.shift_matrix(shift, dim, base)

    code = sinusoidal.shift_matrix.__code__.replace(co_filename="mine.py")
    clone = type(sinusoidal.shift_matrix)(code, sinusoidal.shift_matrix.__globals__)
    alias = getattr(sinusoidal, "shift_" + "matrix")
    for reader in (wrapper, clone, alias):
        with pytest.raises(exercises.ExerciseMismatch, match=WRITE):
            exercises.check_shift_matrix(reader)

    def mine(shift, dim, base):  # the book's solution, written out
        theta = base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
        matrix = torch.zeros(dim, dim, dtype=torch.float64)
        for i, angle in enumerate(shift * theta):
            c, s = torch.cos(angle), torch.sin(angle)
            matrix[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = torch.stack(
                [torch.stack([c, s]), torch.stack([-s, c])]
            )
        return matrix

    exercises.check_shift_matrix(mine)
    assert "agree" in capsys.readouterr().out


def test_the_hook_before_it_keeps_running_and_is_restored():
    import sys

    seen = []

    def outer(frame, event, arg):
        seen.append(event)

    sys.setprofile(outer)
    try:
        with pytest.raises(exercises.ExerciseMismatch, match=WRITE):
            exercises.check_shift_matrix(sinusoidal.shift_matrix)
        assert sys.getprofile() is outer
    finally:
        sys.setprofile(None)
    assert "call" in seen
