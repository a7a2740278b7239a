"""pe_book.tasks: right problems, exact match = greedy decoding, runs that resume."""

import json

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pe_book import tasks
from pe_book.model import CharLM
from pe_book.tasks import BOS, EOS, SEP, TaskConfig, make_problems

TINY = TaskConfig(steps=3, batch=4, dim=16, n_heads=2, train_size=3, test_size=5, test_count=4)


def as_number(digits):
    """Digits, least significant first -> the integer."""
    return sum(d * 10**j for j, d in enumerate(digits))


@settings(max_examples=30, deadline=None)
@given(size=st.integers(1, 25), seed=st.integers(0, 10**6))
def test_addition_problems_hold_true_sums(size, seed):
    problems, answer = make_problems("addition", size, 3, torch.Generator().manual_seed(seed))
    assert problems.shape == (3, tasks.sequence_length("addition", size))
    for row in problems.tolist():
        assert row[0] == BOS and row[-1] == EOS
        columns = row[1 : 1 + 3 * size]
        a, b, s = columns[0::3], columns[1::3], columns[2::3]
        assert as_number([*s, row[-2]]) == as_number(a) + as_number(b)
    targets = problems[0, 1:]
    assert answer.sum() == size + 2  # s_1 .. s_n, the final carry, EOS
    assert targets[answer][-1] == EOS


@pytest.mark.parametrize("task", ["copy", "reverse"])
def test_copy_and_reverse_answers(task):
    problems, answer = make_problems(task, 7, 5, torch.Generator().manual_seed(1))
    question, reply = problems[:, 1:8], problems[:, 9:16]
    assert (problems[:, 8] == SEP).all()
    assert torch.equal(reply, question if task == "copy" else question.flip(1))
    assert torch.equal(problems[:, 1:][:, answer][:, :-1], reply)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="task must be one of"):
        make_problems("sort", 3, 2, torch.Generator())
    with pytest.raises(ValueError, match="size must be an int >= 1"):
        make_problems("copy", 0, 2, torch.Generator())
    with pytest.raises(TypeError, match=r"generator must be a torch\.Generator"):
        make_problems("copy", 2, 2, 0)


def test_exact_match_is_greedy_decoding():
    """Teacher-forced argmax right everywhere <=> greedy decoding writes the answer."""
    torch.manual_seed(0)
    config = TaskConfig(task="copy", dim=16, n_heads=2, train_size=3, test_size=4)
    model = CharLM(config.model_config("alibi")).eval()
    problems, answer = make_problems("copy", 3, 16, torch.Generator().manual_seed(5))
    forced = tasks.exact_match(model, "copy", 3, 16, seed=0)
    problems, answer = make_problems(
        "copy", 3, 16, torch.Generator().manual_seed(1_000_003 * 1 + 3)
    )
    start = int(answer.nonzero()[0]) + 1  # the first answer token's index in problems
    greedy = problems[:, :start].clone()
    with torch.no_grad():
        while greedy.shape[1] < problems.shape[1]:
            step = model(greedy)[:, -1].argmax(-1, keepdim=True)
            greedy = torch.cat((greedy, step), dim=1)
    assert forced == (greedy == problems).all(1).tolist()


def test_a_trained_model_learns_copy_at_its_training_sizes():
    config = TaskConfig(task="copy", steps=300, dim=32, n_heads=2, train_size=3, test_size=3)
    record = tasks.run_task("alibi", config, progress=False)
    assert record["solved"]["1"].count("1") >= 48  # of 64 problems of size 1


def test_a_learned_table_cannot_run_longer_problems_and_runs_resume(tmp_path):
    made = tasks.run_tasks(
        ("copy",), (0,), ("learned", "none"), root=tmp_path, config=TINY, progress=False
    )
    record = made["copy", 0, "learned"]
    assert record["solved"]["3"] is not None and record["solved"]["4"] is None
    path = tasks.task_path("copy", 0, tmp_path) / "none.json"
    first = path.read_text()
    again = tasks.run_tasks(("copy",), (0,), ("none",), root=tmp_path, config=TINY, progress=False)
    assert path.read_text() == first and again["copy", 0, "none"] == json.loads(first)
