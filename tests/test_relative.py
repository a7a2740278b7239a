"""pe_book.relative and pe_book.learned: Shaw attention, T5 buckets and bias, learned tables."""

import itertools
import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from pe_book import learned
from pe_book.attention import merge_heads, split_heads
from pe_book.relative import ShawAttention, T5Bias, relative_indices, t5_bucket, t5_bucket_ranges


def shaw_layer(seed=0, dim=8, n_heads=2, max_offset=3, values=True):
    torch.manual_seed(seed)
    layer = ShawAttention(dim, n_heads, max_offset, values=values).double()
    for table in (layer.key_table, layer.value_table):
        if table is not None:
            torch.nn.init.normal_(table.weight)
    return layer


def shaw_by_loops(layer, x, causal=False):
    """Shaw et al. (2018), eq. 3-5, written as loops over (head, m, n): the naive reference."""
    length, dim = x.shape
    heads, d_head = layer.n_heads, dim // layer.n_heads
    q, k, v = (split_heads(t[None], heads)[0] for t in layer.qkv(x).split(dim, -1))
    z = torch.zeros(heads, length, d_head, dtype=x.dtype)
    for h in range(heads):
        for m in range(length):
            scores, rows = [], []
            for n in range(length):
                row = max(-layer.max_offset, min(layer.max_offset, m - n)) + layer.max_offset
                rows.append(row)
                key = k[h, n] + layer.key_table.weight[row]
                scores.append(
                    float(q[h, m] @ key) / math.sqrt(d_head) if not causal or n <= m else -math.inf
                )
            alpha = torch.softmax(torch.tensor(scores, dtype=x.dtype), dim=0)
            for n in range(length):
                value = v[h, n] + (layer.value_table.weight[rows[n]] if layer.value_table else 0)
                z[h, m] += alpha[n] * value
    return layer.out(merge_heads(z[None]))[0]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("values", [False, True])
def test_shaw_attention_equals_the_naive_loops(causal, values):
    layer, x = shaw_layer(values=values), torch.randn(6, 8, dtype=torch.float64)
    with torch.no_grad():
        torch.testing.assert_close(layer(x, causal=causal), shaw_by_loops(layer, x, causal))


@given(st.integers(-1000, 1000), st.integers(1, 9), st.integers(0, 2**16))
def test_shaw_attention_ignores_a_common_shift_of_positions(shift, seq_len, seed):
    layer = shaw_layer(seed % 5)
    x = torch.randn(seq_len, 8, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    with torch.no_grad():
        torch.testing.assert_close(layer(x, positions=torch.arange(seq_len) + shift), layer(x))


def test_relative_indices_clip_into_the_table():
    index = relative_indices(torch.arange(5), torch.arange(5), 2)
    assert index.tolist()[4] == [4, 4, 4, 3, 2]  # m = 4: r = 4, 3, 2, 1, 0 -> clipped to 2
    assert int(index.min()) == 0 and int(index.max()) == 4


def test_shaw_table_size_does_not_depend_on_the_length():
    layer = shaw_layer(max_offset=3)
    assert layer.key_table.weight.shape == (7, 4)
    with torch.no_grad():
        assert layer(torch.randn(50, 8, dtype=torch.float64)).shape == (50, 8)


@given(st.sampled_from([(32, 128), (16, 64), (64, 512)]), st.booleans())
def test_t5_buckets_grow_with_distance_and_are_capped(config, bidirectional):
    num_buckets, max_distance = config
    distance = torch.arange(0, 4 * max_distance)
    buckets = t5_bucket(distance, bidirectional, num_buckets, max_distance)
    assert bool((buckets.diff() >= 0).all())  # monotone in |r|
    assert bool((buckets[max_distance:] == buckets[-1]).all())  # one bucket from max_distance on
    if bidirectional:  # the other direction: same pattern, shifted by num_buckets / 2
        assert torch.equal(
            t5_bucket(-distance[1:], True, num_buckets, max_distance),
            buckets[1:] + num_buckets // 2,
        )
    else:
        assert bool((t5_bucket(-distance, False, num_buckets, max_distance) == 0).all())


def test_t5_bucket_ranges_cover_every_distance_once():
    ranges = t5_bucket_ranges()
    assert ranges[0] == (0, 0, 0) and ranges[-1][2] is None
    for (_, _, last), (_, first, _) in itertools.pairwise(ranges):
        assert first == last + 1


def test_t5_bias_is_one_scalar_per_bucket_and_head():
    bias = T5Bias(n_heads=4)
    assert bias.bias.weight.shape == (32, 4)
    full = bias(6, 6)
    assert full.shape == (4, 6, 6)
    torch.testing.assert_close(bias(2, 6), full[:, 4:])  # decoding: the last queries


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: t5_bucket(torch.arange(3), num_buckets=-2), "num_buckets must be an int >= 2"),
        (lambda: t5_bucket(torch.arange(3), num_buckets=31), "must be even"),
        (lambda: t5_bucket(torch.arange(3), num_buckets=32, max_distance=8), "exceed the exact"),
        (lambda: relative_indices(torch.arange(3), torch.arange(3), -1), "max_offset must be"),
        (lambda: ShawAttention(8, 2, -1), "max_offset must be an int >= 0"),
        (lambda: learned.LearnedPositions(4, 8)(torch.zeros(5, 8)), "max_len=4"),
        (lambda: learned.LearnedPositions(8, 8).positions(2, start=7), "position 8 requested"),
    ],
)
def test_bad_input_names_the_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_t5_bucket_refuses_float_offsets():
    with pytest.raises(TypeError, match="integer tensor"):
        t5_bucket(torch.tensor([1.5]))


def test_learned_positions_add_rows_and_count_parameters():
    table = learned.LearnedPositions(16, 4)
    x = torch.zeros(3, 4)
    torch.testing.assert_close(table(x, start=2), table.table.weight[2:5])
    assert table.num_parameters == 64 == sum(p.numel() for p in table.parameters())


def test_table_measurements_on_a_known_table():
    positions = torch.arange(64, dtype=torch.float64)
    wave = torch.stack(
        (torch.cos(2 * math.pi * positions / 64), torch.sin(2 * math.pi * positions / 64)), 1
    )
    spectrum = learned.power_spectrum(wave)
    assert float(spectrum[1]) == pytest.approx(1.0)  # all power at one cycle per table
    torch.testing.assert_close(
        learned.similarity_by_offset(wave)[:3],
        torch.cos(2 * math.pi * torch.arange(3.0, dtype=torch.float64) / 64),
    )
    assert float(learned.neighbour_similarity(wave).min()) == pytest.approx(
        math.cos(2 * math.pi / 64)
    )


def test_minilm_table_loads_offline():
    table = learned.minilm_position_table()
    assert table.shape == (512, 384) and table.dtype == torch.float32
