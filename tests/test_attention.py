"""pe_book.attention: the fused path equals the explicit softmax, masks align, symmetry holds."""

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from pe_book.attention import (
    MultiHeadSelfAttention,
    attention,
    attention_weights,
    causal_mask,
    merge_heads,
    split_heads,
)

DOUBLE = torch.float64


def random(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=DOUBLE)


shapes = st.tuples(
    st.integers(1, 3),  # batch
    st.integers(1, 6),  # q_len
    st.integers(0, 5),  # extra keys before the queries
    st.integers(1, 8),  # d
    st.integers(1, 5),  # d_v
)


@given(shapes, st.booleans(), st.booleans(), st.integers(0, 2**16))
def test_fused_attention_equals_explicit_softmax(shape, causal, with_bias, seed):
    batch, q_len, extra, d, d_v = shape
    k_len = q_len + extra
    q, k, v = (
        random(batch, q_len, d, seed=seed),
        random(batch, k_len, d, seed=seed + 1),
        random(batch, k_len, d_v, seed=seed + 2),
    )
    bias = random(q_len, k_len, seed=seed + 3) if with_bias else None
    fused = attention(q, k, v, bias=bias, causal=causal)
    explicit = attention_weights(q, k, bias=bias, causal=causal) @ v
    assert fused.shape == (batch, q_len, d_v)
    torch.testing.assert_close(fused, explicit, rtol=1e-10, atol=1e-10)


def test_attention_matches_the_formula_written_out():
    q, k, v = random(3, 4), random(5, 4, seed=1), random(5, 2, seed=2)
    scores = torch.tensor([[float(q[i] @ k[j]) / math.sqrt(4) for j in range(5)] for i in range(3)])
    expected = torch.softmax(scores.to(DOUBLE), dim=-1) @ v
    torch.testing.assert_close(attention(q, k, v), expected)


@given(st.integers(1, 9), st.integers(0, 6))
def test_causal_mask_is_bottom_right_aligned(q_len, extra):
    k_len = q_len + extra
    mask = causal_mask(q_len, k_len)
    for i in range(q_len):
        for j in range(k_len):
            assert bool(mask[i, j]) == (j <= i + extra)


def test_square_causal_mask_is_lower_triangular():
    assert torch.equal(causal_mask(5, 5), torch.ones(5, 5, dtype=torch.bool).tril())


def test_causal_mask_with_explicit_start():
    mask = causal_mask(2, 6, start=1)  # queries at absolute positions 1 and 2
    assert mask.sum(dim=-1).tolist() == [2, 3]


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((3, 2), {}, "q_len must be <= k_len"),
        ((0, 2), {}, "q_len must be an int >= 1"),
        ((2, 4), {"start": 3}, r"start must be in \[0, k_len - q_len\] = \[0, 2\]"),
        ((2, 4), {"start": -1}, "start must be an int >= 0"),
    ],
)
def test_causal_mask_rejects_bad_sizes(args, kwargs, message):
    with pytest.raises(ValueError, match=message):
        causal_mask(*args, **kwargs)


def test_causal_decoding_step_equals_last_row_of_full_attention():
    """One query at the end of a KV cache sees exactly what the last row of full attention sees."""
    q, k, v = random(7, 4), random(7, 4, seed=1), random(7, 3, seed=2)
    full = attention(q, k, v, causal=True)
    step = attention(q[-1:], k, v, causal=True)
    torch.testing.assert_close(step, full[-1:])


@given(st.integers(1, 6), st.integers(1, 6), st.floats(-50, 50), st.integers(0, 2**16))
def test_adding_a_constant_to_each_row_of_scores_changes_nothing(q_len, k_len, shift, seed):
    q, k, v = (
        random(q_len, 4, seed=seed),
        random(k_len, 4, seed=seed + 1),
        random(k_len, 2, seed=seed + 2),
    )
    row_constant = torch.linspace(-shift, shift, q_len, dtype=DOUBLE)[:, None].expand(q_len, k_len)
    torch.testing.assert_close(attention(q, k, v, bias=row_constant), attention(q, k, v))


def test_attention_weights_rows_sum_to_one_and_respect_the_mask():
    w = attention_weights(random(2, 5, 4), random(2, 5, 4, seed=1), causal=True)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 5, dtype=DOUBLE))
    assert float(w.triu(diagonal=1).abs().max()) == 0.0


def test_bad_inputs_name_the_argument():
    q = random(3, 4)
    with pytest.raises(ValueError, match="q and k must share their last"):
        attention(q, random(3, 5), random(3, 2))
    with pytest.raises(ValueError, match="k and v must have the same length"):
        attention(q, random(3, 4), random(2, 2))
    with pytest.raises(TypeError, match="one dtype"):
        attention(q, random(3, 4).float(), random(3, 2))
    with pytest.raises(ValueError, match="q must have rank >= 2"):
        attention(torch.zeros(4, dtype=DOUBLE), random(3, 4), random(3, 2))
    with pytest.raises(ValueError, match="does not broadcast"):
        attention(q, random(3, 4), random(3, 2), bias=random(2, 2))
    with pytest.raises(ValueError, match="bias contains NaN"):
        attention(q, random(3, 4), random(3, 2), bias=torch.full((3, 3), math.nan, dtype=DOUBLE))
    with pytest.raises(TypeError, match=r"q must be a torch\.Tensor"):
        attention([[1.0]], random(3, 4), random(3, 2))


def test_split_and_merge_heads_are_inverse():
    x = random(2, 5, 12)
    heads = split_heads(x, 3)
    assert heads.shape == (2, 3, 5, 4)
    torch.testing.assert_close(merge_heads(heads), x)


def make_layer(dim=8, n_heads=2, seed=0):
    torch.manual_seed(seed)
    return MultiHeadSelfAttention(dim, n_heads).double()


@given(st.permutations(list(range(6))), st.integers(0, 2**16))
def test_self_attention_is_permutation_equivariant(perm, seed):
    layer, x = make_layer(seed=seed % 7), random(6, 8, seed=seed)
    with torch.no_grad():
        torch.testing.assert_close(layer(x[perm]), layer(x)[perm], rtol=1e-10, atol=1e-12)


def test_causal_self_attention_is_not_permutation_equivariant():
    layer, x = make_layer(), random(6, 8)
    perm = [5, 4, 3, 2, 1, 0]
    with torch.no_grad():
        gap = float((layer(x[perm], causal=True) - layer(x, causal=True)[perm]).abs().max())
    assert gap > 1e-3


def test_multi_head_layer_equals_its_heads_written_out():
    """Each head is attention over its slice of the q/k/v projections, then W_o mixes them."""
    layer, x = make_layer(dim=6, n_heads=3), random(4, 6)
    w_q, w_k, w_v = layer.qkv.weight.detach().split(6)
    heads = [
        attention(
            x @ w_q[h * 2 : h * 2 + 2].T, x @ w_k[h * 2 : h * 2 + 2].T, x @ w_v[h * 2 : h * 2 + 2].T
        )
        for h in range(3)
    ]
    expected = torch.cat(heads, dim=-1) @ layer.out.weight.detach().T
    with torch.no_grad():
        torch.testing.assert_close(layer(x), expected)


def test_layer_batched_and_unbatched_agree_and_weights_have_head_shape():
    layer, x = make_layer(), random(3, 5, 8)
    with torch.no_grad():
        torch.testing.assert_close(layer(x)[1], layer(x[1]))
        assert layer.weights(x).shape == (3, 2, 5, 5)
        assert layer.weights(x[0], causal=True).shape == (2, 5, 5)


def test_layer_rejects_bad_configuration_and_input():
    with pytest.raises(ValueError, match="dim must be divisible by n_heads"):
        MultiHeadSelfAttention(10, 3)
    with pytest.raises(ValueError, match="n_heads must be an int >= 1"):
        MultiHeadSelfAttention(8, 0)
    with pytest.raises(ValueError, match="x must have last dimension dim=8"):
        make_layer()(random(3, 6))
    with pytest.raises(ValueError, match="x must have rank 2 or 3"):
        make_layer()(random(2, 2, 3, 8))


def test_a_per_head_bias_keeps_the_fused_kernel_and_never_builds_the_batch_scores():
    # A 3-D (heads, L, L) mask would send SDPA to its unfused path, which allocates
    # the (batch, heads, L, L) scores; attention() hands it a 4-D mask instead.
    from pe_book.bench import allocations_mib

    batch, heads, length = 4, 4, 256
    q, k, v = torch.randn(3, batch, heads, length, 16).unbind(0)
    bias = torch.randn(heads, length, length)
    largest, _ = allocations_mib(lambda: attention(q, k, v, bias=bias, causal=True))
    scores_mib = batch * heads * length * length * 4 / 2**20  # 4 MiB
    assert largest < scores_mib
