"""The benchmarks' stored record (results/bench.json), which chapter 12 prints."""

from __future__ import annotations

import pytest

from pe_book import bench, cost, measure


def result(met: bool = True) -> dict:
    fields = dict.fromkeys(measure.BENCH_FIELDS, "x")
    return {**fields, "met": met, "tables": []}


def test_recording_one_benchmark_keeps_the_others(tmp_path):
    path = tmp_path / "bench.json"
    measure.record_bench(path, "rope", result())
    measure.record_bench(path, "model t5", result(met=False))
    measure.record_bench(path, "rope", result(met=False))  # a rerun replaces its own entry
    runs = measure.load_bench(path)["runs"]
    assert sorted(runs) == ["model t5", "rope"]
    assert runs["rope"]["met"] is False


def test_a_record_without_its_cpu_is_refused(tmp_path):
    path = tmp_path / "bench.json"
    partial = result()
    del partial["cpu"]
    measure.record_bench(path, "rope", partial)
    with pytest.raises(ValueError, match="cpu"):
        measure.load_bench(path)


def test_the_committed_record_holds_what_chapter_12_prints():
    runs = measure.load_bench()["runs"]
    expected = {"rope", "model alibi", *(f"alibi {isa}" for isa in bench.ISA_ENVIRONMENTS)}
    assert expected <= set(runs), sorted(expected - set(runs))
    for name in (name for name in runs if name.startswith("model ")):  # section 12.8's table
        assert name[6:] in cost.METHOD_TARGETS or "plain" in runs[name]["tables"], name
        for ratios in runs[name]["tables"].values():
            assert sorted(ratios) == ["infer", "train"], name
    for isa in bench.ISA_ENVIRONMENTS:  # each instruction set's run names its dispatch
        assert f"PyTorch dispatches {isa.upper()} kernels" in runs[f"alibi {isa}"]["cpu"]
    for name, run in runs.items():
        assert run["cpu"].startswith("CPU: "), name
