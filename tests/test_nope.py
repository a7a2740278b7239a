"""pe_book.nope: Theorem 1 of Kazemnejad et al. (2023), built and run; its float32 limit;
the causal mask it needs (chapter 1's bos_share); bad input."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pe_book.nope import (
    FLOAT32_MAX_LEN,
    POSITION_COORD,
    nope_embeddings,
    nope_position_layer,
    nope_position_weights,
    recover_positions,
)
from pe_book.symmetry import bos_share


def run(layer, x, causal=True):
    with torch.no_grad():
        return layer(x, causal=causal)  # (L, dim)


def reciprocals(seq_len, dtype=torch.float64):
    """1 / (m + 1) for m = 0 .. L-1, computed in float64 and rounded once to dtype."""
    return (1.0 / torch.arange(1, seq_len + 1, dtype=torch.float64)).to(dtype)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("seq_len", [1, 2, 3, 17, 1000, 4096])
def test_the_position_coordinate_is_exactly_one_over_m_plus_one(seq_len, dtype):
    layer = nope_position_layer(8, dtype=dtype)
    x = nope_embeddings(seq_len, 8, generator=torch.Generator().manual_seed(0), dtype=dtype)
    out = run(layer, x)
    assert torch.equal(out[:, POSITION_COORD], reciprocals(seq_len, dtype))
    assert torch.equal(recover_positions(out[:, POSITION_COORD]), torch.arange(seq_len))
    assert not out[:, :POSITION_COORD].any()  # coordinates 0 and 1 are left alone


@settings(max_examples=15)
@given(
    st.integers(1, 200),
    st.sampled_from([(6, 1), (6, 2), (12, 3), (16, 4)]),
    st.integers(0, 2**16),
)
def test_positions_are_recovered_whatever_the_query_weights_and_the_other_heads(
    seq_len, shape, seed
):
    # W_Q is "any arbitrary matrix" (eq. 21) and the other heads are arbitrary: random here
    dim, n_heads = shape
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    query = torch.randn(dim // n_heads, dim, generator=g, dtype=torch.float64)
    layer = nope_position_layer(dim, n_heads, query=query)
    out = run(layer, nope_embeddings(seq_len, dim, generator=g))
    torch.testing.assert_close(out[:, POSITION_COORD], reciprocals(seq_len), rtol=1e-13, atol=0)
    assert torch.equal(recover_positions(out[:, POSITION_COORD]), torch.arange(seq_len))


def test_the_weights_are_the_papers_matrices():
    w_q, w_k, w_v, w_o = nope_position_weights(5, 3)
    assert w_k.tolist() == [[1.0, 0, 0, 0, 0]] * 3  # eq. (18): every row reads dimension 1
    assert w_v.tolist() == [[0, 1.0, 0, 0, 0], [0.0] * 5, [0.0] * 5]  # reads BOS
    assert w_o.tolist() == [[0.0] * 3, [0.0] * 3, [1.0, 0, 0], [0.0] * 3, [0.0] * 3]  # eq. (19)
    assert not w_q.any()


def test_the_embeddings_follow_eq_17():
    x = nope_embeddings(6, 5, generator=torch.Generator().manual_seed(3))
    assert x[:, 0].tolist() == [1.0] * 6
    assert x[:, 1].tolist() == [1.0, 0, 0, 0, 0, 0]
    assert x[:, 2].tolist() == [0.0] * 6
    assert x[:, 3:].std() > 0.3  # the arbitrary rest


def test_bidirectional_attention_gives_every_position_one_over_l():
    # Without the causal mask every query sees all L keys: the construction needs the mask.
    for seq_len in (1, 5, 4096):
        out = run(nope_position_layer(8), nope_embeddings(seq_len, 8), causal=False)
        assert torch.equal(
            out[:, POSITION_COORD], torch.full((seq_len,), 1.0 / seq_len, dtype=torch.float64)
        )
        assert set(recover_positions(out[:, POSITION_COORD]).tolist()) == {seq_len - 1}


def test_the_layer_reproduces_chapter_1s_bos_share():
    for causal in (True, False):
        out = run(nope_position_layer(4), nope_embeddings(50, 4), causal=causal)
        assert torch.equal(out[:, POSITION_COORD], bos_share(50, causal=causal))


def test_without_a_bos_token_nothing_anchors_the_count():
    x = nope_embeddings(10, 6)
    x[0, 1] = 0.0  # the first token is an ordinary one
    out = run(nope_position_layer(6), x)
    assert not out[:, POSITION_COORD].any()
    with pytest.raises(ValueError, match="values must lie in"):
        recover_positions(out[:, POSITION_COORD])


def test_float32_values_recover_every_position_up_to_float32_max_len_and_no_further():
    # The layer returns 1/(m+1) correctly rounded (checked above for L <= 4096 in float32);
    # here every such value for m < 12 * 2^20, read back by recover_positions.
    first_failure, chunk = None, 1 << 22
    for begin in range(0, 12 << 20, chunk):
        m = torch.arange(begin, begin + chunk)
        values = (1.0 / (m + 1).to(torch.float64)).to(torch.float32)
        wrong = (recover_positions(values) != m).nonzero()
        if wrong.numel():
            first_failure = begin + int(wrong[0])
            break
    assert first_failure == FLOAT32_MAX_LEN == 11_864_338
    m = torch.tensor([FLOAT32_MAX_LEN - 1, FLOAT32_MAX_LEN])
    values = reciprocals(FLOAT32_MAX_LEN + 1, torch.float32)[m]
    assert values[0] == values[1]  # the first two positions float32 cannot tell apart


def test_float64_is_exact_far_beyond_any_context():
    m = torch.arange(0, 1 << 24, 4099) + (1 << 24)
    values = 1.0 / (m + 1).to(torch.float64)
    assert torch.equal(recover_positions(values), m)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: nope_embeddings(4, 2), ValueError, "dim"),
        (lambda: nope_embeddings(0, 4), ValueError, "seq_len"),
        (lambda: nope_embeddings(2.5, 4), TypeError, "seq_len"),
        (lambda: nope_position_weights(4, 0), ValueError, "d_head"),
        (lambda: nope_position_weights(4, 2, query=torch.ones(3, 4)), ValueError, "query"),
        (lambda: nope_position_weights(4, 2, query=torch.ones(2, 5)), ValueError, "query"),
        (lambda: nope_position_layer(2), ValueError, "dim"),
        (lambda: nope_position_layer(6, 4), ValueError, "divisible by n_heads"),
        (lambda: nope_position_layer(6, 0), ValueError, "n_heads"),
        (lambda: recover_positions(torch.tensor([0.5, 0.0])), ValueError, "values"),
        (lambda: recover_positions(torch.tensor([1.5])), ValueError, "values"),
        (lambda: recover_positions(torch.tensor([float("nan")])), ValueError, "values"),
        (lambda: recover_positions(torch.tensor([1, 2])), TypeError, "values"),
        (lambda: recover_positions([0.5]), TypeError, "values"),
    ],
)
def test_bad_input_names_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()
