"""pe_book.results.Runs: the five-seed study's records, read back into paired intervals."""

import dataclasses

import numpy as np
import pytest

from pe_book import results, study
from pe_book.intervals import crossed_interval
from pe_book.study import StudyConfig

TINY = StudyConfig(
    train_len=8,
    steps=3,
    batch=2,
    warmup=1,
    dim=16,
    n_heads=2,
    eval_multiples=(1, 2, 4),
    eval_segments=4,
    sliding_stride=4,
)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("study")
    for seed in (0, 1):
        config = dataclasses.replace(TINY, seed=seed)
        study.run_study(
            root / "study" / "tiny" / f"seed{seed}",
            config,
            ("learned", "alibi", "rope"),
            progress=False,
        )
    return results.Runs.load("tiny", root)


def test_runs_know_their_methods_seeds_and_lengths(runs):
    assert runs.methods == ("learned", "rope", "alibi")  # the book's order
    assert runs.seeds() == (0, 1) and runs.unit == 8 and runs.lengths == (8, 16, 32)
    assert runs.runs_at("alibi", 32) and not runs.runs_at("learned", 16)


def test_the_stored_segments_give_back_the_stored_perplexity(runs):
    for seed, record in runs.records["alibi"].items():
        losses = runs.segment_losses("alibi", 32, (seed,))
        assert np.exp(losses.mean()) == pytest.approx(record["perplexity"]["32"], rel=1e-5)


def test_extra_context_is_full_minus_capped_on_the_same_targets(runs):
    record = runs.records["rope"][0]
    full = np.asarray(record["full_by_bin"])[:, 1:].mean(1)
    capped = np.asarray(record["capped_by_bin"]).mean(1)
    assert np.allclose(runs.extra_context("rope", (0,))[0], full - capped)
    mean = (
        record["same_targets"]["full_context_loss"] - record["same_targets"]["capped_context_loss"]
    )
    assert runs.extra_context("rope", (0,)).mean() == pytest.approx(mean, abs=1e-5)


def test_a_comparison_is_paired_and_antisymmetric(runs):
    ab, ba = runs.difference("rope", "alibi", 8), runs.difference("alibi", "rope", 8)
    assert ab.mean == pytest.approx(-ba.mean) and ab.half_width == pytest.approx(ba.half_width)
    paired = runs.segment_losses("rope", 8) - runs.segment_losses("alibi", 8)
    assert ab == crossed_interval(paired)


def test_a_method_that_cannot_run_is_an_error_not_a_number(runs):
    with pytest.raises(ValueError, match="cannot run"):
        runs.loss("learned", 32)
    with pytest.raises(KeyError, match="has no runs"):
        runs.loss("t5", 8)
    with pytest.raises(FileNotFoundError):
        results.Runs.load("no-such-design", runs.records and "/nonexistent")


def test_the_report_prints_every_method_and_one_verdict_each(runs):
    from pe_book import report

    table = report.context_table(runs)
    assert "cannot run windows of 32: learned" in table
    for method in ("rope", "alibi"):
        assert method in table and method in report.perplexity_table(runs)
    found = report.effects(runs)
    assert set(found) == {"rope", "alibi"}
    sentence = report.summary_sentence(runs)
    assert sentence.startswith("Past the training length (2 seeds")
    assert all(method in sentence for method in found)
    assert report.method_list(["a", "b", "c"]) == "a, b and c"


def test_a_wider_margin_never_makes_a_verdict_harsher(runs):
    from pe_book import report
    from pe_book.intervals import ContextEffect

    harsh = {ContextEffect.HURTS: 2, ContextEffect.UNDECIDED: 1}
    narrow, wide = report.effects(runs, 0.001), report.effects(runs, 1.0)
    assert all(harsh.get(wide[m], 0) <= harsh.get(narrow[m], 0) for m in narrow)


def test_bins_give_back_the_full_context_loss(runs):
    bins = runs.bin_losses("alibi")
    assert bins.shape[:2] == (2, 4)
    assert np.allclose(bins[:, :, 1:].mean(2), runs.full_context_loss("alibi"))
    assert len(runs.loss_by_bin("alibi")) == bins.shape[2]


def test_task_runs_read_every_problem(tmp_path):
    from pe_book import tasks

    config = tasks.TaskConfig(
        steps=2, batch=4, dim=16, n_heads=2, train_size=2, test_size=3, test_count=4
    )
    tasks.run_tasks(
        ("copy",), (0, 1), ("alibi", "learned"), root=tmp_path, config=config, progress=False
    )
    runs = results.TaskRuns.load(tmp_path)
    assert runs.tasks == ("copy",) and runs.methods("copy") == ("learned", "alibi")
    assert runs.seeds("copy", "alibi") == (0, 1)
    solved = runs.solved("copy", "alibi", 3)
    assert solved.shape == (2, 4) and set(np.unique(solved)) <= {0.0, 1.0}
    assert runs.solved("copy", "learned", 3) is None  # past its table
    assert runs.accuracy("copy", "learned", range(1, 4)) is None
    assert runs.accuracy("copy", "alibi", [1, 2]).mean == pytest.approx(
        np.concatenate([runs.solved("copy", "alibi", n) for n in (1, 2)], 1).mean()
    )


def test_the_summary_names_the_range_of_seeds_when_methods_differ(runs):
    from pe_book import report

    one_seed = {"rope": dict(list(runs.records["rope"].items())[:1])}
    uneven = type(runs)(runs.design, {**runs.records, **one_seed})
    sentence = report.summary_sentence(uneven)
    assert sentence.startswith("Past the training length (1-2 seeds a method")
