"""pe_book.cope: gates and counted positions, interpolation, causality, the relative special case.

References transcribed below: the PyTorch listing of Golovneva et al. (2024),
arXiv 2405.18719, section 3 (classes ``CoPE`` and ``SelfAttn``), and the authors'
repository facebookresearch/RAM, projects/cope/src/cope/context_position.py
(``ContextPosSelfAttn.forward`` with its default flags).
"""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pe_book.attention import merge_heads, split_heads
from pe_book.cope import (
    CoPEAttention,
    cope_attention,
    cope_gates,
    cope_logits,
    cope_positions,
    cope_scores,
    interpolate_embeddings,
    positions_from_gates,
)
from pe_book.relative import ShawAttention


def random(*shape, seed=0, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return scale * torch.randn(*shape, generator=g, dtype=torch.float64)


def cope_layer(seed=0, dim=8, n_heads=2, max_positions=5):
    torch.manual_seed(seed)
    layer = CoPEAttention(dim, n_heads, max_positions).double()
    torch.nn.init.normal_(layer.table)  # the listing starts from zeros: make it visible
    return layer


# --- positions ------------------------------------------------------------------------------


def positions_by_loops(q, k):
    """p_mn = Σ_{j=n}^{m} σ(q_m · k_j / √d) for one head, with math.exp: eqs. 3-4."""
    length, dim = q.shape
    p = torch.zeros(length, length, dtype=torch.float64)
    for m in range(length):
        for n in range(m + 1):
            p[m, n] = sum(
                1 / (1 + math.exp(-float(q[m] @ k[j]) / math.sqrt(dim))) for j in range(n, m + 1)
            )
    return p


@given(st.integers(1, 9), st.sampled_from([2, 4, 8]), st.integers(0, 2**16))
def test_positions_equal_the_sum_of_gates_by_loops(seq_len, dim, seed):
    q, k = random(seq_len, dim, seed=seed), random(seq_len, dim, seed=seed + 1)
    torch.testing.assert_close(cope_positions(q, k), positions_by_loops(q, k), rtol=0, atol=1e-12)


@given(st.integers(1, 12), st.floats(0.1, 5.0), st.integers(0, 2**16))
def test_positions_fall_with_n_and_lie_between_0_and_m_minus_n_plus_1(seq_len, scale, seed):
    q, k = random(3, seq_len, 8, seed=seed, scale=scale), random(3, seq_len, 8, seed=seed + 1)
    p = cope_positions(q, k)  # (3, L, L)
    m = torch.arange(seq_len)[:, None]
    n = torch.arange(seq_len)[None, :]
    visible = n <= m
    assert bool((p[..., ~visible] == 0).all())  # keys after the query: nothing counted
    assert bool((p[..., visible] > 0).all())  # g_mm > 0: the key itself counts a little
    assert bool((p <= (m - n + 1).clamp(min=0)).all())
    assert bool((p[..., :, :-1] >= p[..., :, 1:]).all())  # non-increasing in n


@given(st.integers(1, 10), st.integers(1, 12))
def test_unit_gates_count_every_token(seq_len, max_positions):
    mask = torch.ones(seq_len, seq_len).tril().bool()
    p = positions_from_gates(torch.ones(seq_len, seq_len, dtype=torch.float64) * mask)
    offsets = torch.arange(seq_len)[:, None] - torch.arange(seq_len)[None, :]  # r = m - n
    assert torch.equal(p, torch.where(mask, offsets + 1, 0).double())  # p_mn = m - n + 1
    clamped = positions_from_gates(p.new_ones(seq_len, seq_len) * mask, max_positions)
    assert torch.equal(clamped, p.clamp(max=max_positions))


def test_zero_gates_make_every_position_zero():
    assert bool((positions_from_gates(torch.zeros(4, 4)) == 0).all())


# --- interpolation --------------------------------------------------------------------------


def interpolate_by_paper(table, p):
    """Eq. 5 for one fractional position p, with math.floor / math.ceil."""
    low, high = math.floor(p), math.ceil(p)
    return (p - low) * table[high] + (1 - p + low) * table[low]


@settings(max_examples=40)
@given(
    st.integers(1, 8),
    st.lists(st.floats(0.0, 1.0), min_size=1, max_size=12),
    st.integers(0, 2**16),
)
def test_interpolated_scalars_equal_the_interpolated_vectors(max_positions, fractions, seed):
    table, q = random(max_positions + 1, 6, seed=seed), random(1, 6, seed=seed + 1)
    p = torch.tensor(fractions, dtype=torch.float64)[None, :] * max_positions  # (1, n)
    p[0, 0] = float(round(float(p[0, 0])))  # always one integer position
    vectors = torch.stack([interpolate_by_paper(table, float(x)) for x in p[0]])  # (n, d)
    by_vectors = (vectors @ q[0])[None, :]  # q_m · e[p_mn]
    torch.testing.assert_close(cope_logits(q, p, table), by_vectors, rtol=0, atol=1e-12)
    torch.testing.assert_close(interpolate_embeddings(table, p)[0], vectors, rtol=0, atol=1e-14)


def test_interpolation_reads_the_row_itself_at_integer_positions():
    table, q = random(5, 4), random(3, 4, seed=1)
    p = torch.arange(5, dtype=torch.float64).expand(3, 5)
    torch.testing.assert_close(cope_logits(q, p, table), q @ table.T, rtol=0, atol=0)


# --- attention ------------------------------------------------------------------------------


def relative_attention_by_loops(q, k, v, table):
    """softmax_n(q_m·k_n/√d + q_m·e[min(m - n + 1, P)]) v, causal, one head: the unit-gate case."""
    length, dim = q.shape
    top = table.shape[0] - 1
    out = torch.zeros_like(v)
    for m in range(length):
        scores = [
            float(q[m] @ k[n]) / math.sqrt(dim) + float(q[m] @ table[min(m - n + 1, top)])
            for n in range(m + 1)
        ]
        alpha = torch.softmax(torch.tensor(scores, dtype=torch.float64), dim=0)
        out[m] = sum(alpha[n] * v[n] for n in range(m + 1))
    return out


@pytest.mark.parametrize("max_positions", [2, 4, 20])
def test_unit_gates_reduce_cope_to_a_relative_embedding_of_the_offset(max_positions):
    q, k, v = random(7, 4), random(7, 4, seed=1), random(7, 3, seed=2)
    table = random(max_positions + 1, 4, seed=3)
    got = cope_attention(q, k, v, table, gates=torch.ones(()))
    torch.testing.assert_close(got, relative_attention_by_loops(q, k, v, table), atol=1e-12, rtol=0)


def test_unit_gates_make_the_layer_shaw_attention_on_keys_with_a_shifted_table():
    # Gates of 1: q·k/√d + q·e[min(r + 1, P)] = q·(k + a^K_r)/√d with a^K_r = √d e[min(r + 1, P)]
    # for r >= 0, Shaw's table clipped at K = P - 1 (chapter 6), same projections.
    cope = cope_layer(max_positions=4)
    shaw = ShawAttention(8, 2, max_offset=3, values=False).double()
    shaw.qkv.load_state_dict(cope.qkv.state_dict())
    shaw.out.load_state_dict(cope.out.state_dict())
    with torch.no_grad():
        shaw.key_table.weight.zero_()
        shaw.key_table.weight[3:] = math.sqrt(4) * cope.table[1:]  # rows K + r, r = 0..K
    x = random(2, 9, 8, seed=5)
    with torch.no_grad():
        torch.testing.assert_close(cope(x, gates=torch.ones(())), shaw(x, causal=True))


def test_outputs_do_not_depend_on_later_tokens():
    layer, x = cope_layer(), random(2, 8, 8)
    later = x.clone()
    later[:, 5:] += random(2, 3, 8, seed=9)
    with torch.no_grad():
        before, after = layer(x), layer(later)
    torch.testing.assert_close(before[:, :5], after[:, :5], rtol=0, atol=1e-14)
    assert not torch.allclose(before[:, 5:], after[:, 5:])


def test_decoding_one_query_matches_the_last_row_of_the_full_pass():
    q, k, table = random(2, 9, 4), random(2, 9, 4, seed=1), random(6, 4, seed=2)
    full = cope_scores(q, k, table)
    for t in (0, 4, 8):
        step = cope_scores(q[:, t : t + 1], k[:, : t + 1], table)
        torch.testing.assert_close(step[:, 0], full[:, t, : t + 1], rtol=0, atol=1e-14)


def test_gradients_reach_the_table_the_gates_and_every_projection():
    layer = cope_layer()
    layer(random(2, 6, 8)).square().sum().backward()
    assert layer.table.grad is not None and bool(layer.table.grad.abs().sum() > 0)
    assert bool(layer.qkv.weight.grad.abs().sum() > 0)
    q = random(5, 4).requires_grad_()
    cope_positions(q, random(5, 4, seed=1)).sum().backward()  # through the gates
    assert bool(q.grad.abs().sum() > 0)


def test_a_fresh_layer_is_plain_causal_attention():
    # The listing starts e at zero, so CoPE adds nothing until trained.
    layer = CoPEAttention(8, 2, 6).double()
    x = random(5, 8)
    q, k, v = (split_heads(t[None], 2)[0] for t in layer.qkv(x).split(8, -1))
    plain = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    with torch.no_grad():
        torch.testing.assert_close(layer(x), layer.out(merge_heads(plain[None]))[0])


def test_layer_shapes_weights_and_positions():
    layer, x = cope_layer(), random(6, 8)
    with torch.no_grad():
        assert layer(x).shape == (6, 8) and layer(x[None]).shape == (1, 6, 8)
        weights, positions = layer.weights(x), layer.positions(x)
    assert weights.shape == positions.shape == (2, 6, 6)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 6, dtype=torch.float64))
    assert float(positions.max()) <= layer.max_positions


def test_half_precision_positions_are_summed_in_float32():
    q, k = random(64, 8).bfloat16(), random(64, 8, seed=1).bfloat16()
    p = cope_positions(q, k)
    assert p.dtype == torch.float32
    torch.testing.assert_close(p, cope_positions(q.float(), k.float()))


# --- the paper's listing and the authors' repository ---------------------------------------


class ListingCoPE(torch.nn.Module):
    """Golovneva et al. (2024), section 3 listing, class CoPE (transcribed)."""

    def __init__(self, npos_max, head_dim):
        super().__init__()
        self.npos_max = npos_max
        self.pos_emb = torch.nn.parameter.Parameter(torch.zeros(1, head_dim, npos_max))

    def forward(self, query, attn_logits):
        gates = torch.sigmoid(attn_logits)
        pos = gates.flip(-1).cumsum(dim=-1).flip(-1)
        pos = pos.clamp(max=self.npos_max - 1)
        pos_ceil = pos.ceil().long()
        pos_floor = pos.floor().long()
        logits_int = torch.matmul(query, self.pos_emb)
        logits_ceil = logits_int.gather(-1, pos_ceil)
        logits_floor = logits_int.gather(-1, pos_floor)
        w = pos - pos_floor
        return logits_ceil * w + logits_floor * (1 - w)


def listing_self_attn(cope, query, key, val, mask):
    """The listing's SelfAttn.forward (q, k, v: batch x seq_len x head_dim; mask 0/1)."""
    attn_logits = torch.bmm(query, key.transpose(-1, -2))
    attn_logits = attn_logits / math.sqrt(query.shape[-1])
    attn_logits += mask.log()
    attn_logits += cope(query, attn_logits)
    attn = torch.softmax(attn_logits, dim=-1)
    return torch.bmm(attn, val)


def repository_self_attn(pos_emb, npos, query, key, val, mask):
    """ContextPosSelfAttn.forward of facebookresearch/RAM (default flags), transcribed."""
    head_dim = query.shape[-1]
    gate_logits = torch.bmm(query, key.transpose(-1, -2))
    gates = torch.sigmoid(gate_logits / math.sqrt(head_dim)) * mask
    positions = gates.flip(-1).cumsum(dim=-1).flip(-1).clamp(max=npos - 1)
    pos_logits_fixed = torch.matmul(query, pos_emb)
    ceil, floor = positions.ceil().long(), positions.floor().long()
    weight = positions - floor
    pos_logits = pos_logits_fixed.gather(-1, ceil) * weight + pos_logits_fixed.gather(-1, floor) * (
        1 - weight
    )
    attn_logits = (gate_logits + pos_logits) / math.sqrt(head_dim)  # divides the sum
    attn_logits += mask.log()
    return torch.bmm(torch.softmax(attn_logits, dim=-1), val)


@pytest.mark.parametrize("npos_max", [3, 8, 13])
def test_attention_equals_the_papers_listing(npos_max):
    q, k, v = random(4, 12, 8), random(4, 12, 8, seed=1), random(4, 12, 8, seed=2)
    table = random(npos_max, 8, seed=3)
    listing = ListingCoPE(npos_max, 8).double()
    with torch.no_grad():
        listing.pos_emb.copy_(table.T[None])
        expected = listing_self_attn(listing, q, k, v, torch.ones(12, 12).tril().double())
    got = cope_attention(q, k, v, table)
    assert float((got - expected).abs().max()) < 1e-13


def test_the_repository_is_the_listing_with_the_table_divided_by_root_d():
    q, k, v = random(4, 12, 8), random(4, 12, 8, seed=1), random(4, 12, 8, seed=2)
    table, mask = random(9, 8, seed=3), torch.ones(12, 12).tril().double()
    expected = repository_self_attn(table.T[None], 9, q, k, v, mask)
    torch.testing.assert_close(cope_attention(q, k, v, table / math.sqrt(8)), expected)
    assert not torch.allclose(cope_attention(q, k, v, table), expected)


# --- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: CoPEAttention(8, 3, 4), ValueError, "n_heads"),
        (lambda: CoPEAttention(8, 2, 0), ValueError, "max_positions"),
        (lambda: CoPEAttention(8, 2, 2.5), TypeError, "max_positions"),
        (lambda: cope_layer()(random(2, 3, 4, 8)), ValueError, "x"),
        (lambda: cope_layer()(random(4, 6)), ValueError, "x"),
        (lambda: cope_positions(random(3, 4), random(3, 6)), ValueError, "q and k"),
        (lambda: cope_positions(random(3, 4), random(3, 4).float()), TypeError, "q and k"),
        (lambda: cope_positions(random(3, 4), torch.ones(3, 4, dtype=torch.long)), TypeError, "k"),
        (lambda: cope_gates(random(3, 4), random(3, 4), torch.ones(3, 3)), TypeError, "mask"),
        (
            lambda: cope_gates(random(3, 4), random(3, 4), torch.ones(3, 2).bool()),
            ValueError,
            "mask",
        ),
        (
            lambda: cope_gates(random(3, 4), random(3, 4), torch.zeros(3, 3).bool()),
            ValueError,
            "mask",
        ),
        (lambda: positions_from_gates(torch.full((3, 3), 1.5)), ValueError, "gates"),
        (lambda: positions_from_gates(torch.full((3, 3), float("nan"))), ValueError, "gates"),
        (lambda: positions_from_gates(torch.ones(3, 3), max_positions=0), ValueError, "max_pos"),
        (lambda: cope_logits(random(3, 4), torch.full((3, 3), 5.5), random(5, 4)), ValueError, "P"),
        (
            lambda: cope_logits(random(3, 4), -torch.ones(3, 3), random(5, 4)),
            ValueError,
            "positions",
        ),
        (lambda: cope_logits(random(3, 4), torch.ones(3, 3), random(5, 6)), ValueError, "table"),
        (
            lambda: cope_attention(random(3, 4), random(3, 4), random(2, 4), random(5, 4)),
            ValueError,
            "v",
        ),
        (
            lambda: cope_scores(random(3, 4), random(3, 4), random(5, 4), gates=torch.tensor(2.0)),
            ValueError,
            "gates",
        ),
    ],
)
def test_bad_input_is_refused(call, error, message):
    with pytest.raises(error, match=message):
        call()
