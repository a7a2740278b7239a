"""Chapter 13's cold read (position in today's open models): the wrong answer that passed
exercise 13.1 now fails, the families table's cross-check counts the cells quoted from
the class it is checked against apart, and the modules the chapter teaches name it."""

import importlib

import pytest
import torch

from pe_book import exercises, open_models


def _cache_no_min_for_chunks(layer_types, window, seq_len, n_kv_heads, d_head, size):
    """The cold reader's answer: a chunked layer caches a whole window even when the text
    is shorter than one chunk (it passed all six cases before the chunked short case)."""

    def tokens(kind):
        if kind == "full_attention":
            return seq_len
        if kind == "chunked_attention":
            return window  # forgot min(seq_len, window)
        return min(seq_len, window)

    return sum(tokens(k) for k in layer_types) * 2 * n_kv_heads * d_head * size


def test_a_chunked_layer_without_min_fails_exercise_13_1():
    with pytest.raises(exercises.ExerciseMismatch) as raised:
        exercises.check_kv_cache_bytes(_cache_no_min_for_chunks)
    assert "a text shorter than a chunk" in str(raised.value)


def test_cells_quoted_from_the_class_are_not_counted_as_independent_agreement():
    checks = open_models.cross_check()
    table = open_models.position_table()
    same = [c for c in checks if not c.independent]
    assert {(c.family, c.column) for c in same} == set(open_models.SAME_SOURCE)
    for c in same:  # the row's sources say the value was read from that class
        assert c.source.split(".")[0] in table.row(c.family)["sources"], c
    independent = [c for c in checks if c.independent]
    assert 0 < sum(bool(c.agrees) for c in independent) < len(independent)


def test_every_cross_checked_class_names_the_checkpoint_its_defaults_describe():
    assert open_models.class_checkpoint("LlamaConfig") == "meta-llama/Llama-2-7b-hf"
    assert all(c.checkpoint for c in open_models.cross_check())
    with pytest.raises(ValueError, match="class_name"):
        open_models.class_checkpoint("NotAConfig")


@pytest.mark.parametrize("module", ["mrope", "irope", "mla", "sinks"])
def test_the_modules_chapter_13_teaches_name_chapter_13(module):
    head = "\n\n".join(importlib.import_module(f"pe_book.{module}").__doc__.split("\n\n")[:2])
    assert "chapter 13" in head.lower() and "chapter 10" not in head.lower()


def _cache_float32(layer_types, window, seq_len, n_kv_heads, d_head, size):
    """The second cold read's answer: the right count, held in a float32 tensor (it
    passed all seven cases, whose counts float32 happens to hold exactly)."""
    tokens = sum(seq_len if k == "full_attention" else min(seq_len, window) for k in layer_types)
    return torch.tensor(float(tokens * 2 * n_kv_heads * d_head * size), dtype=torch.float32)


def test_a_float32_byte_count_fails_exercise_13_1_on_scouts_long_context():
    with pytest.raises(exercises.ExerciseMismatch) as raised:
        exercises.check_kv_cache_bytes(_cache_float32)
    assert "float32 cannot hold" in str(raised.value)


def test_the_llama_neox_claim_fails_without_rotation_and_with_added_positions():
    from pe_book import claims, sinusoidal

    def unrotated(q, k, positions):
        return q, k

    def added(q, k, positions):
        table = sinusoidal.sinusoidal_table(int(positions.max()) + 1, q.shape[-1])[positions]
        return q + table, k + table

    for rotate, reason in ((unrotated, "not above 1e-3"), (added, "not below 1e-4")):
        finding = claims.run("004-llama-neox-rope", rotations={"counterfactual": rotate})
        assert finding.verdict == "does not hold" and reason in finding.shown[0]


def test_the_llama_neox_claim_fails_for_a_relative_scaling_that_does_not_rotate():
    """The third cold read's counterfactual (q z^m, k z^-n, z = 1.05) passed the shift and
    position tests and got "holds"; the norm and apply_rope checks now fail it."""
    from pe_book import claims

    def scaled(q, k, positions):
        z = (1.05 ** positions.double())[:, None].to(q.dtype)
        return q * z, k / z

    finding = claims.run("004-llama-neox-rope", rotations={"scale only": scaled})
    shown = finding.shown[0]
    assert finding.verdict == "does not hold"
    assert "below 1e-4: the scores depend on m - n only" in shown  # relative: passes
    assert "not a rotation of those pairs" in shown and "not this RoPE" in shown


def _temperature_float32(positions, floor_scale, attn_scale):
    """The third cold read's answer, float32 as the statement allows (int64 / float)."""
    return 1 + attn_scale * torch.log1p(torch.floor((positions + 1) / floor_scale))


@pytest.mark.parametrize("seed", [987654, *range(40)])
def test_a_float32_temperature_passes_exercise_13_3_in_graded_mode(seed):
    """It failed the graded draws at seed 987654 (and 5 of seeds 0-199): a up to 0.99 and
    a fractional F put tau near 16, where float32's step reaches 1e-6."""
    from pe_book.exercises import secret

    with secret.active(seed):
        exercises.check_query_temperature(_temperature_float32)
