"""Chapter 13's package functions: the families' table read against transformers' class
defaults, a layer plan's KV cache, the first-token share of an even spread, the gap a
sink needs, grouped-query caches and Llama 4's focused weight."""

import math

import pytest
import torch

from pe_book import irope, mla, open_models, sinks

pytest.importorskip("transformers")


def test_every_cross_check_names_a_row_and_a_column_of_the_table():
    table = open_models.position_table()
    families = {row[0] for row in table.rows}
    for family, column, _, _ in open_models.CROSS_CHECKS:
        assert family in families and column in table.columns


def test_class_defaults_match_what_their_source_files_say():
    gemma = open_models.config_defaults("Gemma3TextConfig")
    assert (gemma.rope_theta, gemma.local_rope_theta) == (1_000_000.0, 10_000.0)
    assert gemma.window_layers == "5 in 6"
    llama4 = open_models.config_defaults("Llama4TextConfig")
    assert (llama4.nope_every, llama4.window, llama4.window_layers) == (4, 8192, "3 in 4")
    neox = open_models.config_defaults("GPTNeoXConfig")
    assert neox.rotated_share == 0.25 and neox.window_layers == "-"
    oss = open_models.config_defaults("GptOssConfig")
    assert (oss.rope_type, oss.factor, oss.window, oss.window_layers) == (
        "yarn",
        32.0,
        128,
        "1 in 2",
    )
    assert open_models.config_defaults("MistralConfig").window_layers == "all"


def test_cross_check_agrees_where_the_class_describes_the_quoted_release():
    found = {(c.family, c.column, c.source): c.agrees for c in open_models.cross_check()}
    assert found["gpt-oss", "κ", "GptOssConfig.factor"] is True
    assert found["Gemma 3 (4B-27B)", "local layers' base", "Gemma3TextConfig.local_rope_theta"]
    # a class whose defaults describe another release disagrees, and is reported
    assert found["Llama 3", "RoPE base", "LlamaConfig.rope_theta"] is False
    assert found["Gemma 3 (4B-27B)", "window", "Gemma3TextConfig.window"] is False


def test_cross_check_fails_a_wrong_quote():
    check = [("Mixtral 8x7B", "RoPE base", "Qwen2Config", "rope_theta")]  # 10,000 vs 1e6
    assert open_models.cross_check(check)[0].agrees is False


@pytest.mark.parametrize(
    ("cell", "share"), [("all", 1.0), ("1/4", 0.25), ("64 of 192 (decoupled)", 1 / 3)]
)
def test_rotated_share_reads_the_table_cells(cell, share):
    assert open_models.rotated_share(cell) == pytest.approx(share)


def test_kv_cache_bytes_counts_each_layer_at_most_its_window():
    plan = ["sliding_attention"] * 5 + ["full_attention"]
    per_token = 2 * 4 * 256 * 2
    assert open_models.kv_cache_bytes(plan, 1024, 32_768, 4, 256) == (5 * 1024 + 32_768) * per_token
    assert open_models.kv_cache_bytes(plan, 1024, 100, 4, 256) == 6 * 100 * per_token
    chunked = open_models.kv_cache_bytes(["chunked_attention"], 8192, 10**6, 8, 128)
    assert chunked == 8192 * 2 * 8 * 128 * 2


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (
            lambda: open_models.kv_cache_bytes("full_attention", 4, 8, 1, 1),
            TypeError,
            "layer_types",
        ),
        (lambda: open_models.kv_cache_bytes(["local"], 4, 8, 1, 1), ValueError, "layer_types"),
        (lambda: open_models.kv_cache_bytes(["full_attention"], 0, 8, 1, 1), ValueError, "window"),
        (lambda: open_models.config_defaults("NoSuchConfig"), ValueError, "class_name"),
        (lambda: open_models.config_defaults(3), TypeError, "class_name"),
        (lambda: sinks.sink_gap(1.0, 8), ValueError, "share"),
        (lambda: sinks.sink_gap(0.5, 1), ValueError, "n_keys"),
        (lambda: sinks.first_token_ratio([1.5]), ValueError, "shares"),
        (lambda: sinks.uniform_share(0), ValueError, "n_queries"),
        (lambda: mla.gqa_cache_floats(0, 128), ValueError, "n_kv_heads"),
        (lambda: irope.focused_weight(float("nan"), 8), TypeError, "gap"),
    ],
)
def test_bad_input_names_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_the_uniform_share_is_one_over_m_plus_one_and_its_bin_means():
    assert torch.equal(
        sinks.uniform_share(3), torch.tensor([1.0, 1 / 2, 1 / 3], dtype=torch.float64)
    )
    binned = sinks.uniform_share(2, bin_size=3)
    assert binned[1].item() == pytest.approx((1 / 4 + 1 / 5 + 1 / 6) / 3)


def test_an_even_head_has_ratio_one_and_a_fixed_share_grows_with_m():
    even = sinks.uniform_share(64)
    assert torch.allclose(sinks.first_token_ratio(even), torch.ones(64, dtype=torch.float64))
    sink = sinks.first_token_ratio(torch.full((64,), 0.5))
    assert sink[63].item() == pytest.approx(32.0)


@pytest.mark.parametrize(("share", "n_keys"), [(0.5, 2), (0.9, 64), (0.05, 10), (0.99, 131_072)])
def test_the_sink_gap_gives_the_share_through_softmax(share, n_keys):
    scores = torch.zeros(n_keys, dtype=torch.float64)
    scores[0] = sinks.sink_gap(share, n_keys)
    assert torch.softmax(scores, 0)[0].item() == pytest.approx(share, rel=1e-12)


def test_grouped_query_cache_spans_multi_query_to_multi_head():
    assert mla.gqa_cache_floats(128, 128) == mla.mha_cache_floats(128, 128)
    assert mla.gqa_cache_floats(1, 128) == 256
    # DeepSeek-V2's Table 1: MLA's cache equals GQA with 2.25 groups
    assert mla.mla_cache_floats(512, 64) / mla.gqa_cache_floats(1, 128) == 2.25


def test_the_focused_weight_is_the_softmax_of_tempered_scores():
    for m in (1, 8191, 70_000):
        tau = irope.temperature_scale(torch.tensor([m]))[0]
        scores = torch.zeros(m + 1, dtype=torch.float64)
        scores[0] = 7.0
        expected = torch.softmax(tau * scores, 0)[0]
        got = irope.focused_weight(7.0, torch.tensor([m]))[0]
        assert got.item() == pytest.approx(expected.item(), rel=1e-12)
    untuned = irope.focused_weight(7.0, torch.tensor([70_000]), tuned=False)[0]
    assert untuned.item() == pytest.approx(math.exp(7) / (math.exp(7) + 70_000), rel=1e-12)
    assert irope.focused_weight(7.0, torch.tensor([0]))[0].item() == 1.0
