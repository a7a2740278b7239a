"""pe_book.study, pe_book.results: complete, validated, atomic records; a stopped study resumes."""

import json

import pytest

from pe_book import data, evaluation, results, study
from pe_book.model import POSITIONS
from pe_book.study import StudyConfig

TINY = StudyConfig(
    train_len=8,
    steps=3,
    batch=2,
    warmup=1,
    dim=16,
    n_heads=2,
    eval_multiples=(1, 2),
    eval_segments=4,
    sliding_stride=4,
)


def test_a_result_records_config_versions_checksum_and_cannot_run(tmp_path):
    made = study.run_study(tmp_path, TINY, ("learned",), progress=False)
    record = json.loads((tmp_path / "learned.json").read_text())
    assert record == json.loads(json.dumps(made["learned"]))
    results.validate_result(record)
    assert record["corpus_checksum"] == data.load_corpus().checksum
    assert record["config"]["steps"] == 3 and record["versions"]["torch"]
    assert record["perplexity"]["8"] > 1 and record["perplexity"]["16"] is None  # no rows past 8


def test_an_interrupted_study_resumes_and_keeps_finished_methods(tmp_path, monkeypatch):
    calls = []
    real = study.run_method

    def interrupted_after_one(position, corpus, config, progress=True):
        if calls:
            raise KeyboardInterrupt  # the second method is stopped midway
        calls.append(position)
        return real(position, corpus, config, progress=progress)

    monkeypatch.setattr(study, "run_method", interrupted_after_one)
    with pytest.raises(KeyboardInterrupt):
        study.run_study(tmp_path, TINY, ("none", "alibi"), progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["none.json"]  # no partial file
    first = (tmp_path / "none.json").read_text()

    monkeypatch.setattr(study, "run_method", real)
    resumed = []
    monkeypatch.setattr(
        study,
        "run_method",
        lambda position, *a, **k: resumed.append(position) or real(position, *a, **k),
    )
    study.run_study(tmp_path, TINY, ("none", "alibi"), progress=False)
    assert resumed == ["alibi"] and (tmp_path / "none.json").read_text() == first


def test_a_result_from_another_config_or_a_corrupt_file_is_redone(tmp_path):
    study.run_study(tmp_path, TINY, ("none",), progress=False)
    corpus = data.load_corpus()
    path = tmp_path / "none.json"
    assert results.load_result(path, TINY, corpus.checksum) is not None
    assert results.load_result(path, TINY, "another corpus") is None
    other = StudyConfig(**{**TINY.__dict__, "steps": 4})
    assert results.load_result(path, other, corpus.checksum) is None
    path.write_text('{"schema": 1, "position": "none"')  # cut off mid-write
    assert results.load_result(path, TINY, corpus.checksum) is None


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"schema": 99}, "schema"),
        ({"position": "not-a-method"}, "position"),
        ({"train_seconds": "fast"}, "train_seconds"),
        ({"perplexity": {"64": 0.5}}, "perplexity"),
        ({"corpus_checksum": None}, "corpus_checksum"),
    ],
)
def test_validate_result_names_the_bad_field(tmp_path, change, field):
    record = study.run_study(tmp_path, TINY, ("none",), progress=False)["none"]
    with pytest.raises(ValueError, match=field):
        results.validate_result(record | change)


def test_write_atomically_leaves_no_file_when_serialising_fails(tmp_path):
    with pytest.raises(TypeError):
        results.write_atomically(tmp_path / "x.json", {"bad": object()})
    assert list(tmp_path.iterdir()) == []


def test_the_rope_result_adds_inference_time_scaling_past_the_training_length(tmp_path):
    record = study.run_study(tmp_path, TINY, ("rope",), progress=False)["rope"]
    scaled = record["rope_scaling"]
    assert set(scaled) == {"position interpolation", "dynamic NTK", "YaRN"}
    assert all(set(table) == {"16"} for table in scaled.values())  # only lengths > 8
    assert all(
        value != record["perplexity"]["16"] for table in scaled.values() for value in table.values()
    )
    with pytest.raises(ValueError, match="rope_scaling"):
        results.validate_result(record | {"rope_scaling": {"YaRN": {"16": 0.0}}})


def test_the_committed_study_validates_and_matches_this_corpus():
    from pathlib import Path

    root = Path(__file__).parents[1] / "results"
    checksum = data.load_corpus().checksum
    for design in ("lm", "long"):
        runs = results.Runs.load(design, root)  # validates every record
        design_config = {k: v for k, v in study.DESIGNS[design].config.__dict__.items()}
        for by_seed in runs.records.values():
            for seed, record in by_seed.items():
                assert record["corpus_checksum"] == checksum
                expected = json.loads(json.dumps({**design_config, "seed": seed}))
                stored = {k: v for k, v in record["config"].items() if k != "threads"}
                assert stored == {k: v for k, v in expected.items() if k != "threads"}
    assert set(results.Runs.load("lm", root).methods) == set(study.DESIGNS["lm"].positions)


def test_every_length_scores_the_same_targets_and_the_capped_context_matches_at_train_len():
    import torch

    from pe_book.model import CharLM
    from pe_book.seed import seed_everything

    seed_everything(0)
    model = CharLM(TINY.model_config("rope"))
    segments = data.eval_segments(data.load_corpus().valid, 32, 3)
    short, long = (
        evaluation.evaluate(model, segments, 8),
        evaluation.evaluate(model, segments, 32),
    )
    assert short.shape == long.shape == (3, 32)
    # targets 0..7 see the same context at both lengths: the first window of each segment
    assert torch.allclose(short[:, :8], long[:, :8], atol=1e-5)
    # a window of 8 moving by 8 is exactly the non-overlapping evaluation at length 8
    capped = evaluation.evaluate_sliding(model, segments, 8, 8)
    assert torch.allclose(capped, short, atol=1e-5)


@pytest.mark.parametrize("train_len", [8, 32, 64, 512])
def test_every_method_builds_for_short_and_long_training_lengths(train_len):
    from pe_book.model import CharLM

    config = StudyConfig(train_len=train_len, dim=16, n_heads=2)
    for position in POSITIONS:
        CharLM(config.model_config(position))


def test_the_old_command_names_still_run_the_study_and_the_cost(monkeypatch):
    from pe_book import cost, experiments

    seen = []
    monkeypatch.setattr(study, "main", lambda argv: seen.append(("study", argv)) or 0)
    monkeypatch.setattr(cost, "main", lambda argv: seen.append(("cost", argv)) or 0)
    assert experiments.main(["extrapolation", "--quick"]) == 0
    assert experiments.main(["cost", "--no-kernels"]) == 0
    assert experiments.main([]) == 2
    assert seen == [("study", ["--quick"]), ("cost", ["--no-kernels"])]


def test_the_share_of_short_contexts_is_the_early_token_curse():
    assert evaluation.short_context_fraction(1000, 100) == 0.1  # the ALiBi paper's Appendix B
    assert evaluation.short_context_fraction(64, 100) == 1.0
    with pytest.raises(ValueError, match="seq_len"):
        evaluation.short_context_fraction(0, 1)

