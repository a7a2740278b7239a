"""Shared test settings: hypothesis profiles and float64 helpers."""

import os

import pytest
import torch
from hypothesis import settings

# In CI the examples are derandomized so a failure reproduces on the next run;
# locally hypothesis explores new examples every time.
settings.register_profile("ci", deadline=None, max_examples=60, derandomize=True)
settings.register_profile("dev", deadline=None, max_examples=60)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

torch.set_num_threads(1)


def pytest_configure(config):
    # `pytest -m "not slow"` leaves out the tests that start kernels by the dozen
    # (tests/test_grade.py: about a minute a chapter); make test runs them all.
    config.addinivalue_line("markers", "slow: starts many kernels (deselect: -m 'not slow')")


@pytest.fixture(autouse=True)
def _torch_global_state_restored():
    # tests that exec a chapter's set-up cell in this process (the grader's and the
    # editions' tests) may switch gradients off, as chapters 1 and 6 do: the next test
    # must not inherit it
    grad, dtype = torch.is_grad_enabled(), torch.get_default_dtype()
    yield
    torch.set_grad_enabled(grad)
    torch.set_default_dtype(dtype)


@pytest.fixture
def reference_calls_allowed(monkeypatch):
    # tests of the answer policy pass the package's own function (or a wrapper of it) as a
    # reader's right answer; the practice checkers would now fail it ("write it yourself",
    # pe_book.exercises.own_work, tested in tests/test_own_work.py): switch that off here
    from pe_book.exercises import own_work

    monkeypatch.setattr(own_work, "references", lambda name: {})
